"""
The documentation in docs/ stays true:

* every ```mlir block of docs/*.md parses and verifies, unless the line right before its
  fence is a marker: `<!-- docs-test: invalid "MESSAGE" -->` (must fail to verify with a
  diagnostic containing MESSAGE) or `<!-- docs-test: skip ... -->`;
* docs/dialects.md documents every op of hlo, spmd, collective and tpu, and each example
  in its tables is copied from a verified block;
* every ```sh block of docs/tutorial-jax.md runs, in order, in a scratch directory that
  sees the repository's `.venv`, `tests` and `examples` (skip marker as above), exits 0,
  and prints what the tutorial's `<!-- docs-output: ... -->` blocks show;
* docs/passes.md is what scripts/make_docs.py generates.
A changed pass or tool output fails this until the docs are regenerated:
`.venv/bin/python scripts/make_docs.py`;
* relative links in docs/*.md and README.md point to files that exist;
* README.md's code blocks run: each ```sh block in a scratch directory as the tutorial's
  (skip marker as above), each ```python block with this Python, and the command the quick
  start's `scripts/main.sh` runs.
"""

from __future__ import annotations

import difflib
import importlib.util
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from shardc.diagnostics import DiagnosticError
from shardc.dialects import make_context
from shardc.parsing import parse_and_verify

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
MARKER = re.compile(r"<!--\s*docs-test:\s*(\w+)\s*(.*?)\s*-->")


@dataclass
class Block:
    file: Path
    line: int
    lang: str
    text: str
    marker: str | None
    marker_arg: str

    @property
    def id(self) -> str:
        return f"{self.file.name}:{self.line}"


def blocks(path: Path) -> list[Block]:
    """The fenced code blocks of a markdown file, with the docs-test marker before each."""
    out: list[Block] = []
    lines = path.read_text().splitlines()
    i = 0
    while i < len(lines):
        m = re.match(r"^```(\w[\w-]*)\s*$", lines[i])
        if not m:
            i += 1
            continue
        start = i
        j = i + 1
        while j < len(lines) and lines[j].rstrip() != "```":
            j += 1
        marker = MARKER.search(lines[start - 1]) if start > 0 else None
        out.append(
            Block(
                path,
                start + 1,
                m.group(1),
                "\n".join(lines[start + 1 : j]) + "\n",
                marker.group(1) if marker else None,
                marker.group(2) if marker else "",
            )
        )
        i = j + 1
    return out


DOC_FILES = sorted(DOCS.glob("*.md"))
MLIR_BLOCKS = [b for f in DOC_FILES for b in blocks(f) if b.lang == "mlir"]


def test_docs_exist() -> None:
    names = {f.name for f in DOC_FILES}
    assert {"architecture.md", "dialects.md", "passes.md", "tutorial-jax.md"} <= names


@pytest.mark.parametrize("block", MLIR_BLOCKS, ids=[b.id for b in MLIR_BLOCKS])
def test_mlir_block_verifies(block: Block) -> None:
    if block.marker == "skip":
        pytest.skip(block.marker_arg or "marked skip")
    if block.marker == "invalid":
        expected = block.marker_arg.strip('"')
        with pytest.raises(DiagnosticError) as e:
            parse_and_verify(make_context(), block.text, block.id)
        assert expected in str(e.value), str(e.value)
        return
    assert block.marker is None, f"unknown docs-test marker '{block.marker}' at {block.id}"
    try:
        parse_and_verify(make_context(), block.text, block.id)
    except DiagnosticError as e:
        pytest.fail(f"{block.id}: ```mlir block does not verify:\n{e}")


def _dialect_ops() -> list[str]:
    from shardc.dialects.collective import Collective
    from shardc.dialects.hlo import Hlo
    from shardc.dialects.spmd import Spmd
    from shardc.dialects.tpu import Tpu

    return [op.name for d in (Hlo, Spmd, Collective, Tpu) for op in d.operations]


def test_dialects_md_documents_every_op() -> None:
    text = (DOCS / "dialects.md").read_text()
    missing = [name for name in _dialect_ops() if f"`{name}`" not in text]
    assert not missing, f"docs/dialects.md has no entry for {missing}"


def _normalize(text: str) -> str:
    return " ".join(text.split())


def test_dialects_md_table_examples_are_from_verified_blocks() -> None:
    path = DOCS / "dialects.md"
    verified = _normalize(
        " ".join(b.text for b in blocks(path) if b.lang == "mlir" and b.marker is None)
    )
    unmatched = []
    for line in path.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 3 or not cells[0].startswith(("`", "(")):
            continue
        m = re.fullmatch(r"`(.+)`", cells[1])
        if m and _normalize(m.group(1)) not in verified:
            unmatched.append(m.group(1))
    assert not unmatched, f"table examples not found in any verified block: {unmatched}"


def test_tpu_kernel_of_dialects_md_runs_clean_on_the_simulator(tmp_path: Path) -> None:
    from shardc.tools import shardc_run

    kernel = [
        b for b in blocks(DOCS / "dialects.md") if b.lang == "mlir" and "tpu.kernel" in b.text
    ]
    assert len(kernel) == 1
    path = tmp_path / "kernel.mlir"
    path.write_text(kernel[0].text)
    assert shardc_run.main([str(path), "--quiet"]) == 0


def _load_make_docs():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("make_docs", ROOT / "scripts" / "make_docs.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_passes_md_is_generated_from_the_passes() -> None:
    make_docs = _load_make_docs()
    current = (DOCS / "passes.md").read_text()
    if current != make_docs.render():
        pytest.fail("docs/passes.md is stale: run .venv/bin/python scripts/make_docs.py")


def test_passes_md_covers_every_registered_pass() -> None:
    from shardc.driver import registry

    text = (DOCS / "passes.md").read_text()
    for name in registry.all_passes():
        assert f"## `{name}`" in text


def _machine_independent(text: str) -> str:
    """`text` without the check's float error and tolerance, whose last digits depend on
    the machine's BLAS (its f32 dot summation order differs between CPUs): the check's
    verdict (`pass`, `ok`) stays compared."""
    return re.sub(r"max \|diff\| \S+ \(tolerance [^)]*\)", "max |diff| _ (tolerance _)", text)


def test_tutorial_commands_run_and_print_what_it_shows(tmp_path: Path) -> None:
    make_docs = _load_make_docs()
    current = (DOCS / "tutorial-jax.md").read_text()
    sh = [b for b in blocks(DOCS / "tutorial-jax.md") if b.lang == "sh" and b.marker != "skip"]
    assert len(sh) >= 4, "the tutorial's commands are no longer found"
    cwd = make_docs.sandbox(tmp_path)
    try:
        rendered = make_docs.render_tutorial(current, cwd)
    except make_docs.CommandFailed as e:
        pytest.fail(f"docs/tutorial-jax.md: a command failed: {e}")
    assert (cwd / "timeline.png").stat().st_size > 0 and (cwd / "report.json").exists()
    if _machine_independent(rendered) != _machine_independent(current):
        diff = "".join(
            difflib.unified_diff(
                current.splitlines(keepends=True),
                rendered.splitlines(keepends=True),
                "docs",
                "now",
                n=1,
            )
        )
        pytest.fail(
            f"docs/tutorial-jax.md outputs are stale: run .venv/bin/python scripts/make_docs.py\n{diff}"
        )


def _jax_python() -> str | None:
    env = os.environ.get("SHARDC_JAX_PYTHON")
    if env:
        return env
    if importlib.util.find_spec("jax") is not None:
        return sys.executable
    return None


def test_tutorial_export_snippet_gives_the_corpus_file(tmp_path: Path) -> None:
    """Runs step 1 when JAX is available (`SHARDC_JAX_PYTHON=/path/to/python` or in this env)."""
    python = _jax_python()
    if python is None or shutil.which(python) is None and not Path(python).exists():
        pytest.skip("no python with jax (set SHARDC_JAX_PYTHON)")
    snippet = next(b for b in blocks(DOCS / "tutorial-jax.md") if b.lang == "python")
    (tmp_path / "export.py").write_text(snippet.text)
    proc = subprocess.run(
        [python, "export.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    corpus = ROOT / "tests" / "frontends" / "corpus" / "megatron_mlp.stablehlo.mlir"
    exported = (tmp_path / "mlp.stablehlo.mlir").read_text()
    if exported != corpus.read_text():
        pytest.skip("this JAX prints different StableHLO than the corpus's JAX 0.10.2")


@pytest.mark.parametrize("path", [*DOC_FILES, ROOT / "README.md"], ids=lambda p: p.name)
def test_relative_links_resolve(path: Path) -> None:
    text = path.read_text()
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"^[a-z]+:", target) or target.startswith("#"):
            continue
        file = target.split("#", 1)[0]
        if not (path.parent / file).exists():
            broken.append(target)
    assert not broken, f"{path.name}: broken links {broken}"


README = ROOT / "README.md"
README_BLOCKS = [b for b in blocks(README) if b.lang in ("sh", "python")]


@pytest.mark.parametrize("block", README_BLOCKS, ids=[b.id for b in README_BLOCKS])
def test_readme_code_block_runs(block: Block, tmp_path: Path) -> None:
    if block.marker == "skip":
        pytest.skip(block.marker_arg or "marked skip")
    assert block.marker is None, f"unknown docs-test marker '{block.marker}' at {block.id}"
    make_docs = _load_make_docs()
    cwd = make_docs.sandbox(tmp_path)
    if block.lang == "python":
        (cwd / "readme_block.py").write_text(block.text)
        command = f"{sys.executable} readme_block.py"
    else:
        command = block.text
    try:
        make_docs.run_block(command, cwd)
    except make_docs.CommandFailed as e:
        pytest.fail(f"{block.id}: a README command failed: {e}")


def test_readme_main_job_command_runs(tmp_path: Path) -> None:
    """The three shardc-run lines `scripts/main.sh` runs (after its setup step), in a
    sandbox: the small transformer layer checked at level T, the real-size one costed at
    level S, and lowered and simulated at level T."""
    script = (ROOT / "scripts" / "main.sh").read_text()
    found = re.findall(r"^(?:exec )?(\.venv/bin/shardc-run .*?[^\\])$", script, re.M | re.S)
    assert len(found) == 3, "scripts/main.sh no longer runs .venv/bin/shardc-run three times"
    cwd = _load_make_docs().sandbox(tmp_path)
    (cwd / "build").mkdir()
    small, real, lowered = (c.replace("\\\n", " ").replace('"$@"', "") for c in found)
    stdout, _ = _load_make_docs().run_block(small, cwd)
    assert "check against the level-G program before -p: pass" in stdout, stdout
    assert (cwd / "build" / "transformer_layer.trace.json").stat().st_size > 0
    assert (cwd / "build" / "transformer_layer.timeline.png").stat().st_size > 0
    stdout, _ = _load_make_docs().run_block(real, cwd)
    assert "out_0  tensor<8x2048x4096xbf16>" in stdout and "top ops" in stdout, stdout
    assert (cwd / "build" / "transformer_layer_real_size.trace.json").stat().st_size > 0
    stdout, _ = _load_make_docs().run_block(lowered, cwd)
    assert "level T" in stdout and "ICI" in stdout, stdout
    assert (cwd / "build" / "transformer_layer_real_size.level_t.png").stat().st_size > 0
