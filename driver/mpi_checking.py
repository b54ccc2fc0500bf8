"""
`--check` under `mpirun -n K` (issue 17), computed distributed: each rank evaluates the
level-G reference only on the boxes its own devices' output blocks cover
(`interpreter.level_g_boxes`: a backward demand pass, then the level-G kernels on boxes,
inputs drawn or read for their boxes only), compares its devices' blocks with it locally
(the same tolerances as in process: `driver.tolerance`'s rounding bounds, observed on the
boxes), and sends rank 0 only its verdicts and worst differences. No communication beyond
that, and no rank holds a global array that none of its outputs needs.

What the check line says: how many ranks, and the ops run on whole operands (no box rule:
reshape, gather, sort, while, ...) where their results were needed only in part.
"""

from __future__ import annotations

import re
import tracemalloc
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from shardc.dialects.spmd import module_mesh
from shardc.driver.checking import Comparison, Reference, compare
from shardc.driver.tolerance import RoundingBounds, Sigma, reordered_sums
from shardc.interpreter import io
from shardc.interpreter.devices import Executor
from shardc.interpreter.level_g_boxes import Box, BoxedRun, BoxPlan, cut, plan_boxes
from shardc.interpreter.mpi import World
from shardc.interpreter.mpi_run import add_stats
from shardc.interpreter.shard_inputs import SeededInputs, random_boxes
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation

WHAT = "the level-G program before -p"


def supported(sig: io.Signature, original_sig: io.Signature) -> bool:
    """Outputs whose blocks are parts of the level-G outputs (not partial sums): the same
    answer on every rank, so every rank takes the same path."""
    if sig.level != "S" or sig.per_device_io or original_sig.level != "G":
        return False
    for spec, ref in zip(sig.results, original_sig.results, strict=False):
        if spec.global_shape != ref.global_shape or len(sig.results) != len(original_sig.results):
            return False
        if spec.sharding is not None and spec.sharding.unreduced_axes:
            return False
    return True


class BoxedBounds(RoundingBounds):
    """The rounding bounds observed on boxes: a box op sees its operands (and their
    sigma) cut to the boxes it needs, and re-runs its kernel without cutting again."""

    def __init__(self, plan: BoxPlan, *args: Any):
        super().__init__(*args)
        self.plan = plan
        self.inner: dict[Operation, Any] = {}
        self.largest = 0
        """Bytes of the largest value computed (SHARDC_MPI_STATS: tests, bench)."""

    def __call__(
        self, op: Operation, vals: tuple[Any, ...], out: tuple[Any, ...], fn: Any, ft: Any, dev: Any
    ) -> None:
        for x in out:
            self.largest = max(self.largest, getattr(x, "nbytes", 0))
        if op not in self.plan.needs:
            return super().__call__(op, vals, out, fn, ft, dev)
        cuts = self.plan.cuts(op)
        saved: dict[Any, Sigma] = {}
        for v, c in zip(op.operands, cuts, strict=True):
            s = self.sigma.get(v)
            if c is not None and isinstance(s, np.ndarray) and s.ndim:
                saved[v] = s
                self.sigma[v] = s[c]
        vals = tuple(x if c is None or x is None else x[c] for x, c in zip(vals, cuts, strict=True))
        super().__call__(op, vals, out, self.inner[op], ft, dev)
        for v, s in saved.items():
            if v in self.sigma:
                self.sigma[v] = s


def distributed_check(
    world: World,
    filename: str,
    original: ModuleOp,
    original_sig: io.Signature,
    sig: io.Signature,
    inputs: Any,
    compiled_module: ModuleOp,
) -> tuple[Reference, list[Comparison]] | None:
    """Every rank: its part of the check; rank 0: the reference and comparisons (None
    elsewhere). An error on any rank aborts the job (the others wait in the gather)."""
    baseline = tracemalloc.get_traced_memory()[0] if tracemalloc.is_tracing() else 0
    if tracemalloc.is_tracing():
        tracemalloc.reset_peak()
    try:
        local = world.devices_of(world.rank)
        boxes = _output_boxes(sig, local)
        plan = plan_boxes(original_sig.function, boxes)
        refs, sigmas, largest = _reference_boxes(
            filename, original, original_sig, inputs, compiled_module, plan
        )
        mine = _compare_local(sig, local, world.local_results, boxes, refs, sigmas)
        peak = tracemalloc.get_traced_memory()[1] - baseline if tracemalloc.is_tracing() else None
        add_stats(world, {"check_largest_array_bytes": largest, "check_traced_peak_bytes": peak})
    except Exception as e:
        world.abort(f"shardc-run: rank {world.rank}: --check: {type(e).__name__}: {e}")
        raise
    gathered = world.gather((mine, plan.full_ops))
    if gathered is None:
        return None
    return _merge(gathered, world.size)


def _output_boxes(sig: io.Signature, local: range) -> list[Box | None]:
    """Each output's bounding box of this rank's devices' blocks."""
    boxes: list[Box | None] = []
    for spec in sig.results:
        box: Box | None = None
        for d in local:
            index = io.input_block(sig, spec, d)
            assert index is not None  # no unreduced outputs (`supported`)
            b = tuple((s.start, s.stop) for s in index)
            box = b if box is None else tuple(
                (min(x0, y0), max(x1, y1)) for (x0, x1), (y0, y1) in zip(box, b, strict=True)
            )  # fmt: skip
        boxes.append(box)
    return boxes


def _reference_boxes(
    filename: str,
    original: ModuleOp,
    original_sig: io.Signature,
    inputs: Any,
    compiled_module: ModuleOp,
    plan: BoxPlan,
) -> tuple[tuple[Any, ...], list[Sigma], int]:
    """Level G on `plan`'s boxes, each output box's tolerance (as `reference_outputs`) and
    the bytes of the largest array held (an input box or a value)."""
    function = original_sig.function
    wanted = [plan.box.get(a) for a in function.body.block.args]
    index = [None if b is None else tuple(slice(lo, hi) for lo, hi in b) for b in wanted]
    if isinstance(inputs, SeededInputs):
        args: list[Any] = random_boxes(original_sig, inputs.seed, index)
    else:
        args = [
            None if ix is None else np.ascontiguousarray(_input(inputs, spec.index)[ix])
            for spec, ix in zip(original_sig.args, index, strict=True)
        ]
    executor = Executor(original, filename)
    mesh = module_mesh(compiled_module)
    reordered = reordered_sums(compiled_module, original)
    bounds = BoxedBounds(plan, reordered, mesh[1].device_count if mesh else 1)
    executor.observe = bounds
    run = BoxedRun(executor, function, plan)
    bounds.inner = run.inner
    values = run.run(args)
    largest = max([bounds.largest, *(getattr(a, "nbytes", 0) for a in args)])
    return values, bounds.output_tolerances(function), largest


def _input(inputs: Mapping[str, np.ndarray], index: int) -> np.ndarray:
    return inputs[f"in_{index}"]


def _compare_local(
    sig: io.Signature,
    local: range,
    results: Mapping[int, tuple[Any, ...]],
    boxes: Sequence[Box | None],
    refs: tuple[Any, ...],
    sigmas: list[Sigma],
) -> list[Comparison]:
    """Each output: this rank's devices' blocks against the level-G box (worst of them)."""
    out: list[Comparison] = []
    for spec, box, ref, sigma in zip(sig.results, boxes, refs, sigmas, strict=True):
        assert box is not None
        name = f"out_{spec.index}"
        worst: Comparison | None = None
        for d in local:
            region = io.input_block(sig, spec, d)
            assert region is not None
            got = np.asarray(results[d][spec.index])
            got = got[tuple(slice(0, s.stop - s.start) for s in region)]  # no padding
            c = cut(box, tuple((s.start, s.stop) for s in region)) or ()
            s = sigma[c] if isinstance(sigma, np.ndarray) and sigma.ndim else sigma
            one = compare(name, got, np.asarray(ref)[c], s)
            if not one.passed:
                one.note = _global_note(one.note, [r.start for r in region])
            worst = one if worst is None else _worse(worst, one)
        assert worst is not None
        out.append(worst)
    return out


def _global_note(note: str, offset: list[int]) -> str:
    """A failing element's index in the block -> in the global output."""
    m = re.match(r"element \[([0-9, ]*)\]", note)
    if m is None or not m.group(1):
        return note
    at = [int(x) + o for x, o in zip(m.group(1).split(","), offset, strict=False)]
    return f"element {at}" + note[m.end() :]


def _worse(a: Comparison, b: Comparison) -> Comparison:
    """The comparison to report of two: the first failure, else the larger difference."""
    if a.passed != b.passed:
        return b if a.passed else a
    return b if b.max_abs_diff > a.max_abs_diff else a


def _merge(gathered: list[Any], ranks: int) -> tuple[Reference, list[Comparison]]:
    """Rank 0: every rank's verdicts as one comparison per output; the check line."""
    comparisons: list[Comparison] = []
    for per_rank in zip(*(mine for mine, _ in gathered), strict=True):
        worst = per_rank[0]
        for c in per_rank[1:]:
            worst = _worse(worst, c)
        comparisons.append(worst)
    whole: dict[str, int] = {}
    for _, full_ops in gathered:
        for name, n in full_ops.items():
            whole[name] = max(whole.get(name, 0), n)
    said = ", ".join(f"{name} x{n}" for name, n in sorted(whole.items()))
    what = f"{WHAT}, distributed over {ranks} ranks (each on its outputs' boxes"
    what += f"; whole operands for {said})" if said else ")"
    return Reference(None, what), comparisons


__all__ = ["distributed_check", "supported"]
