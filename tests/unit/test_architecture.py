"""
The shape of the code base (issue 12), checked so that it stays that way:

* Layering: each top-level part of `shardc` may import only from its own layer or lower
  ones (docs/architecture.md draws the picture). Imports inside functions count too: a lazy
  import is still a dependency. The one sanctioned upward edge is xDSL's own idiom: an op's
  `HasCanonicalizationPatternsTrait` names its patterns in `passes/canonicalization_patterns/`
  with a lazy import (xDSL's dialects do the same with `xdsl.transforms`).
* Size: no class over 400 lines and no function over 60 lines in the folders the issue names
  (lowering, interpreter, frontends, tools, and the driver).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

LAYERS: list[set[str]] = [
    {"diagnostics", "xdsl_patches"},
    {"dialects"},
    {"parsing"},
    {"hardware"},
    {"interpreter"},
    {"passes"},
    {"lowering"},
    {"frontends"},
    {"driver"},
    {"shardc_api", "__init__"},
    {"tools"},
    {"bench", "scripts", "tests", "examples"},
]
"""Bottom to top. A module of layer i may import layers 0..i."""

ALLOWED_UPWARD = {("dialects", "passes.canonicalization_patterns")}
"""(importer part, imported module prefix) pairs allowed against the order (see above)."""

SIZE_CHECKED = ("lowering", "interpreter", "frontends", "tools", "driver")
MAX_CLASS_LINES = 400
MAX_FUNCTION_LINES = 60


def _layer_of(part: str) -> int:
    for i, names in enumerate(LAYERS):
        if part in names:
            return i
    raise AssertionError(f"{part} is in no layer: add it to LAYERS in {__file__}")


def _part(path: Path) -> str:
    rel = path.relative_to(ROOT)
    return rel.parts[0] if len(rel.parts) > 1 else rel.stem


def _sources() -> list[Path]:
    skip = {".venv", "build", ".git"}
    return sorted(p for p in ROOT.rglob("*.py") if not skip & set(p.relative_to(ROOT).parts))


def _shardc_imports(tree: ast.AST) -> list[tuple[int, str]]:
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if a.name.startswith("shardc.")]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "shardc":
                found += [(node.lineno, f"shardc.{a.name}") for a in node.names]
            elif node.module.startswith("shardc."):
                found.append((node.lineno, node.module))
    return found


def test_imports_follow_the_layers() -> None:
    wrong: list[str] = []
    for path in _sources():
        part = _part(path)
        layer = _layer_of(part)
        for line, module in _shardc_imports(ast.parse(path.read_text())):
            target = module.removeprefix("shardc.")
            target_part = target.split(".")[0]
            if target_part == part or _layer_of(target_part) <= layer:
                continue
            if any(part == a and target.startswith(b) for a, b in ALLOWED_UPWARD):
                continue
            wrong.append(f"{path.relative_to(ROOT)}:{line}: {part} imports {module}")
    assert not wrong, "imports against the layering:\n" + "\n".join(wrong)


def test_a_wrong_import_would_be_caught(tmp_path: Path) -> None:
    """The checker itself: a dialect importing the interpreter is reported."""
    tree = ast.parse("def f():\n    from shardc.interpreter import devices\n")
    ((line, module),) = _shardc_imports(tree)
    assert module == "shardc.interpreter" and line == 2
    assert _layer_of("interpreter") > _layer_of("dialects")


def _too_long(path: Path) -> list[str]:
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            lines = (node.end_lineno or node.lineno) - node.lineno + 1
            limit = MAX_CLASS_LINES if isinstance(node, ast.ClassDef) else MAX_FUNCTION_LINES
            if lines > limit:
                out.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name}: {lines} lines")
    return out


@pytest.mark.parametrize("folder", SIZE_CHECKED)
def test_no_god_classes_or_long_functions(folder: str) -> None:
    paths = sorted((ROOT / folder).rglob("*.py")) if (ROOT / folder).is_dir() else []
    too_long = [entry for path in paths for entry in _too_long(path)]
    assert not too_long, (
        f"over {MAX_CLASS_LINES} lines per class / {MAX_FUNCTION_LINES} per function:\n"
        + "\n".join(too_long)
    )
