"""
What makes `micro-batch`'s estimates cheaper (issue 14 item 7) changes nothing they give
or the pipeline outputs: against the straightforward versions kept here as references
(`fusion` cloning each group's ops into its fusion and erasing them, fusions and returns
and the splits' slices and concatenates made by their constructors, `_role` by
`isinstance`), the pipeline's output is the same text on every example, the bench chain
and generated programs, and every estimate of a forced, fused `micro-batch` is the same
number (not approximately).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from shardc.bench.partition_speed import program as bench_program
from shardc.dialects import hlo, make_context
from shardc.parsing import parse_and_verify
from shardc.passes import fusion
from shardc.passes.fusion import LOOP, _BlockFuser, _Group, _is_splat
from shardc.passes.micro_batch import MicroBatchPass, Splitter, _origin
from shardc.passes.spmd_pipeline import SpmdPipelinePass
from shardc.tests.e2e.test_micro_batch import batch_programs
from shardc.tests.e2e.test_partition_differential import partitionable_programs
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

ROOT = Path(__file__).parents[2]
EXAMPLES = sorted((ROOT / "examples").rglob("*.mlir"))
CTX = make_context()


def _materialize(self: _BlockFuser, group: _Group, name: str) -> None:
    """The reference: every member cloned into the body, the owned ones erased after."""
    members = sorted(group.members(), key=self.pos.__getitem__)
    inside = set(members)
    inputs: list[SSAValue] = []
    for m in members:
        for value in m.operands:
            if value.owner not in inside and value not in inputs:
                inputs.append(value)
    body = Block(arg_types=[v.type for v in inputs])
    mapping: dict[SSAValue, SSAValue] = dict(zip(inputs, body.args, strict=True))
    for m in members:
        clone = m.clone(value_mapper=mapping)
        body.add_op(clone)
        for old, new in zip(m.results, clone.results, strict=True):
            mapping[old] = new
            new.name_hint = old.name_hint
    root = group.root
    ret = hlo.ReturnOp([mapping[r] for r in root.results])
    ret.location = root.location
    body.add_op(ret)
    made = hlo.FusionOp(inputs, root.result_types, Region(body), group.kind, name)
    made.location = root.location
    self.block.insert_op_before(made, root)
    for old, new in zip(root.results, made.results, strict=True):
        new.name_hint = old.name_hint
        old.replace_all_uses_with(new)
    for m in reversed(sorted(group.owned, key=self.pos.__getitem__)):
        self.block.erase_op(m)


def _role(op: Operation) -> str | None:
    if len(op.results) != 1:
        return None
    if isinstance(op, LOOP) or _is_splat(op):
        return "loop"
    if isinstance(op, hlo.ReduceOp) and op.body is None and not op.others:
        return "reduce"
    if isinstance(op, hlo.DotOp | hlo.ConvolutionOp):
        return "dot"
    return None


def _chunks_of(self: Splitter, value: SSAValue, before: Operation) -> list[SSAValue]:
    if value not in self.chunks:
        d = self.cand.dim_of[value]
        shape = list(value.type.get_shape())  # pyright: ignore[reportAttributeAccessIssue]
        slices: list[Operation] = []
        for j in range(self.k):
            lo = [0] * len(shape)
            hi = list(shape)
            lo[d], hi[d] = j * self.chunk, (j + 1) * self.chunk
            slices.append(hlo.SliceOp(value, lo, hi))
            slices[-1].location = _origin(value, before).location
        self._name(slices, value)
        self.chunk_index.update((s, j) for j, s in enumerate(slices))
        Rewriter.insert_op(slices, InsertPoint.before(before))
        self.chunks[value] = [s.results[0] for s in slices]
    return self.chunks[value]


def _whole(self: Splitter, value: SSAValue, before: Operation) -> SSAValue:
    if value not in self.replaced:
        return value
    if value not in self.wholes:
        cat = hlo.ConcatenateOp(self.chunks[value], self.cand.dim_of[value])
        cat.location = _origin(value, before).location
        cat.result.name_hint = value.name_hint
        Rewriter.insert_op(cat, InsertPoint.before(before))
        self.wholes[value] = cat.result
    return self.wholes[value]


def _references(m: pytest.MonkeyPatch) -> None:
    m.setattr(_BlockFuser, "_materialize", _materialize)
    m.setattr(fusion, "_role", _role)
    m.setattr(Splitter, "chunks_of", _chunks_of)
    m.setattr(Splitter, "whole", _whole)


def _run(text: str, reference: bool, mode: str) -> tuple[str, list[float]]:
    """(the output, every micro-batch estimate) of the pipeline (`mode` "pipeline"), of the
    partitioning passes and a forced, fused micro-batch ("forced"), or of the latter alone
    on a per-device program ("split")."""
    estimates: list[float] = []
    original = MicroBatchPass.estimate

    def estimate(self, *args):  # type: ignore[no-untyped-def]
        estimates.append(original(self, *args))
        return estimates[-1]

    with pytest.MonkeyPatch.context() as m:
        m.setattr(MicroBatchPass, "estimate", estimate)
        if reference:
            _references(m)
        module = parse_and_verify(CTX, text, "<test>")
        if mode == "pipeline":
            SpmdPipelinePass().apply(CTX, module)
        else:
            if mode == "forced":
                SpmdPipelinePass(micro_batch=False, fusion=False, schedule=False).apply(CTX, module)
            MicroBatchPass(force=True, fused=True).apply(CTX, module)
    return str(module), estimates


def _same(text: str, mode: str) -> list[float]:
    """The estimates, after checking they and the output are the references'."""
    found = _run(text, False, mode)
    assert found == _run(text, True, mode)
    return found[1]


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
@pytest.mark.parametrize("mode", ["pipeline", "forced"])
def test_same_output_and_estimates_on_examples(path: Path, mode: str) -> None:
    _same(path.read_text(), mode)


@pytest.mark.parametrize("mode", ["pipeline", "forced"])
def test_same_output_and_estimates_on_the_bench_chain(mode: str) -> None:
    _same(bench_program(200), mode)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=partitionable_programs())
def test_same_output_and_estimates_on_generated(text: str) -> None:
    _same(text, "pipeline")
    _same(text, "forced")


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=batch_programs())
def test_same_output_and_estimates_on_batch_programs(case: tuple[str, int]) -> None:
    assert _same(case[0], "split")  # some estimates compared
