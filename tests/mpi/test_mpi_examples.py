"""
Issue 17: `mpirun -n K shardc-run` gives bit-identical outputs and the same timing report
and trace as the in-process run (timing is a property of the program), for every example
and every JAX corpus program (imported from its StableHLO, and from XLA's per-device HLO
text), at K = 2 and 4 ranks.

One MPI job per K runs every program (`jobs.py`); the in-process runs are the reference.
A program whose device count K does not divide is left out at that K.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
from pathlib import Path

import numpy as np
from shardc.tests.mpi.launch import mpirun, requires_mpi
from shardc.tools.shardc_import import main as shardc_import
from shardc.tools.shardc_run import main as shardc_run

pytestmark = requires_mpi

REPO = Path(__file__).resolve().parents[2]
CORPUS = REPO / "tests" / "frontends" / "corpus"
EXAMPLES = sorted((REPO / "examples").glob("*.mlir"))  # overlap/, real_size/: bench
# the whole JAX corpus: each program from JAX's StableHLO (partitioned by shardc) and from
# XLA's per-device HLO (partitioned by XLA)
CORPUS_STABLEHLO = sorted(
    p.name.removesuffix(".stablehlo.mlir") for p in CORPUS.glob("*.stablehlo.mlir")
)
CORPUS_HLO = sorted(p.name.removesuffix(".hlo.txt") for p in CORPUS.glob("*.hlo.txt"))
RANKS = (2, 4)


def _quiet(tool, args: list[str]) -> int:
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        return tool(args)


def _is_level_g(path: Path) -> bool:
    text = path.read_text()
    return "spmd.partitioned" not in text and "spmd.per_device_io" not in text


def _programs(tmp: Path) -> dict[str, list[str]]:
    """name -> shardc-run arguments (the file and -p, without outputs)."""
    programs: dict[str, list[str]] = {}
    for path in EXAMPLES:
        extra = ["-p", "spmd-pipeline"] if _is_level_g(path) else []
        programs[f"examples/{path.name}"] = [str(path), *extra]
    for name in CORPUS_STABLEHLO:
        out = tmp / f"{name}.stablehlo.mlir"
        assert _quiet(shardc_import, [str(CORPUS / f"{name}.stablehlo.mlir"), "-o", str(out)]) == 0
        programs[f"corpus/{name}.stablehlo"] = [str(out), "-p", "spmd-pipeline"]
    for name in CORPUS_HLO:
        out = tmp / f"{name}.hlo.mlir"
        assert _quiet(shardc_import, [str(CORPUS / f"{name}.hlo.txt"), "-o", str(out)]) == 0
        programs[f"corpus/{name}.hlo"] = [str(out)]
    return programs


def test_examples_and_corpus_are_identical_under_mpirun(tmp_path: Path) -> None:
    """One test (not a module fixture shared by several): pytest-xdist would run a shared
    fixture once per worker, launching every MPI job twice."""
    programs = _programs(tmp_path)
    devices = _reference_runs(programs, tmp_path)
    names = list(programs)
    assert sum(n.startswith("examples/") for n in names) >= 10
    assert sum(n.startswith("corpus/") for n in names) >= 2 * 25
    # the programs that K = 4 cannot split are few
    assert sum(devices[n] % 4 == 0 for n in names) >= len(names) - 2
    for k in RANKS:
        _run_under_mpirun(programs, devices, tmp_path, k)
        _compare(names, devices, tmp_path, k)


def _reference_runs(programs: dict[str, list[str]], tmp: Path) -> dict[str, int]:
    """Each program run in process; its device count."""
    devices: dict[str, int] = {}
    for i, (name, args) in enumerate(programs.items()):
        outs = [f"--outputs={tmp / f'{i}.ref.npz'}", f"--report-json={tmp / f'{i}.ref.json'}"]
        outs.append(f"--trace={tmp / f'{i}.ref.trace'}")
        assert _quiet(shardc_run, [*args, *outs, "-q"]) == 0, name
        devices[name] = json.loads((tmp / f"{i}.ref.json").read_text())["devices"]
    return devices


def _run_under_mpirun(
    programs: dict[str, list[str]], devices: dict[str, int], tmp: Path, k: int
) -> None:
    """Every program K divides, in one MPI job of K ranks."""
    jobs = [
        [*args, f"--outputs={tmp / f'{i}.{k}.npz'}", f"--report-json={tmp / f'{i}.{k}.json'}"]
        + [f"--trace={tmp / f'{i}.{k}.trace'}", "-q"]
        for i, (name, args) in enumerate(programs.items())
        if devices[name] % k == 0
    ]
    (tmp / f"jobs{k}.json").write_text(json.dumps(jobs))
    done = mpirun(k, [sys.executable, "-m", "shardc.tests.mpi.jobs", str(tmp / f"jobs{k}.json")])
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]


def _compare(names: list[str], devices: dict[str, int], tmp: Path, k: int) -> None:
    compared = 0
    for i, name in enumerate(names):
        if devices[name] % k:
            continue
        ref, got = np.load(tmp / f"{i}.ref.npz"), np.load(tmp / f"{i}.{k}.npz")
        assert sorted(ref) == sorted(got), name
        for key in ref:
            a, b = ref[key], got[key]
            assert a.dtype == b.dtype and a.shape == b.shape, (name, key)
            assert a.tobytes() == b.tobytes(), f"{name}: {key} differs under mpirun -n {k}"
        ref_report = json.loads((tmp / f"{i}.ref.json").read_text())
        got_report = json.loads((tmp / f"{i}.{k}.json").read_text())
        assert got_report == ref_report, f"{name}: the report differs under mpirun -n {k}"
        trace = (tmp / f"{i}.{k}.trace").read_bytes()
        assert trace == (tmp / f"{i}.ref.trace").read_bytes(), f"{name}: the trace differs"
        compared += 1
    assert compared >= 10
