"""
micro-batch's `SplitFloor` is a lower bound: no split it skips could have been chosen.
On generated partitioned programs and batch programs, every candidate class and chunk
count: the floor is at most the estimate of either block order (the fused estimate, as
`spmd-pipeline` runs it, and the unfused one). `ordered_collectives` finds exactly the
collectives every other one precedes or follows.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from shardc.dialects import collective, make_context
from shardc.dialects.spmd import find_mesh
from shardc.hardware.chips import get_chip
from shardc.hardware.cost import CostModel, cached
from shardc.parsing import parse_and_verify
from shardc.passes.micro_batch import (
    MicroBatchPass,
    Plan,
    SplitFloor,
    _function_blocks,
    _LazyView,
    candidates,
    ordered_collectives,
)
from shardc.passes.step_estimate import per_op
from shardc.tests.e2e.differential import partition
from shardc.tests.e2e.test_micro_batch import batch_programs
from shardc.tests.e2e.test_partition_differential import partitionable_programs
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation

CTX = make_context()


def _floor_holds(text: str, fused: bool) -> None:
    module = parse_and_verify(CTX, text, "<generated>")
    model = cached(CostModel(get_chip("v5e"), find_mesh(module)))
    owner = MicroBatchPass(fused=fused)
    for index, block in enumerate(_function_blocks(module)):
        view_block = _function_blocks(_LazyView(module, model).get())[index] if fused else block
        floor = SplitFloor.of(view_block, per_op(model), block)
        for cand in candidates(block):
            for k in owner.counts(cand.size):
                bound = floor.bound(cand, k)
                for chunk_major in (True, False):
                    t = owner.estimate(module, index, Plan(cand.key, k, chunk_major), model, cand)
                    assert bound <= t * (1 + 1e-9), (k, chunk_major, bound, t, text)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(partitionable_programs(), st.booleans())
def test_floor_below_every_estimate_partitioned(text: str, fused: bool) -> None:
    _floor_holds(partition(text), fused)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batch_programs(), st.booleans())
def test_floor_below_every_estimate_batch(case: tuple[str, int], fused: bool) -> None:
    _floor_holds(case[0], fused)


def _reaches(graph: dict[Operation, set[Operation]], a: Operation, b: Operation) -> bool:
    """Whether `b` depends on `a` (a path of uses from `a` to `b`)."""
    seen, todo = set(), [b]
    while todo:
        op = todo.pop()
        if op is a:
            return True
        for dep in graph.get(op, ()):
            if dep not in seen:
                seen.add(dep)
                todo.append(dep)
    return False


def _ordered_by_definition(block: Block) -> set[Operation]:
    graph = {op: {v.owner for v in op.operands if v.owner.parent is block} for op in block.ops}
    colls = [op for op in block.ops if isinstance(op, collective.CollectiveOp)]
    return {
        c
        for c in colls
        if all(d is c or _reaches(graph, d, c) or _reaches(graph, c, d) for d in colls)
    }


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(partitionable_programs())
def test_ordered_collectives_as_defined(text: str) -> None:
    module = parse_and_verify(CTX, partition(text), "<generated>")
    for block in _function_blocks(module):
        assert ordered_collectives(block) == _ordered_by_definition(block)


@pytest.mark.parametrize(
    ("body", "ordered"),
    [
        # a chain: each collective reads the last one's result
        (
            '%a = collective.all_reduce add %x on @mesh["x"] : tensor<4xf32>\n'
            '%b = collective.all_reduce add %a on @mesh["x"] : tensor<4xf32>\n'
            "func.return %b : tensor<4xf32>",
            {0, 1},
        ),
        # two independent collectives, then one that reads both
        (
            '%a = collective.all_reduce add %x on @mesh["x"] : tensor<4xf32>\n'
            '%b = collective.all_reduce add %x on @mesh["x"] : tensor<4xf32>\n'
            "%c = hlo.add %a, %b : tensor<4xf32>\n"
            '%d = collective.all_reduce add %c on @mesh["x"] : tensor<4xf32>\n'
            "func.return %d : tensor<4xf32>",
            {2},
        ),
    ],
)
def test_ordered_collectives_small(body: str, ordered: set[int]) -> None:
    text = (
        'spmd.mesh @mesh = <["x"=2]>\n'
        "func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> "
        "attributes {spmd.partitioned, spmd.per_device_io} {\n" + body + "\n}"
    )
    block = _function_blocks(parse_and_verify(CTX, text, "<t>"))[0]
    colls = [op for op in block.ops if isinstance(op, collective.CollectiveOp)]
    assert ordered_collectives(block) == {colls[i] for i in ordered}


def _chunks_alone(text: str) -> int:
    """
    `SplitFloor.alone_in_flight` as defined: where it holds for a split collective, after
    the split each of its chunks has every other collective of the block (but its sibling
    chunks) among its ancestors or its descendants, so nothing else can be in flight with
    it. Returns how many split collectives it held for (the test must see some).
    """
    from shardc.passes.micro_batch import Splitter

    module = parse_and_verify(CTX, text, "<generated>")
    model = cached(CostModel(get_chip("v5e"), find_mesh(module)))
    held = 0
    for index, block in enumerate(_function_blocks(module)):
        floor = SplitFloor.of(block, model, block)
        for cand in candidates(block):
            alone = [
                op
                for op in cand.split_ops
                if isinstance(op, collective.CollectiveOp) and floor.alone_in_flight(op, cand)
            ]
            if not alone:
                continue
            held += len(alone)
            copy = module.clone()
            split_block = _function_blocks(copy)[index]
            twin = {
                a: b for a, b in zip(block.walk(), split_block.walk(), strict=True) if a is not b
            }
            copied = candidates(split_block)
            found = next(c for c in copied if c.key == cand.key)
            splitter = Splitter(split_block, found, 2, chunk_major=True)
            k = next(k for k in MicroBatchPass().counts(cand.size))
            splitter.k = k
            splitter.run()
            graph = {
                op: {v.owner for v in op.operands if v.owner.parent is split_block}
                for op in split_block.ops
            }
            colls = [op for op in split_block.ops if isinstance(op, collective.CollectiveOp)]
            for op in alone:
                chunks = {v.owner for v in splitter.chunks[twin[op].results[0]]}
                for c in chunks:
                    for d in colls:
                        if d in chunks:
                            continue
                        assert _reaches(graph, d, c) or _reaches(graph, c, d), text
    return held


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batch_programs())
def test_alone_in_flight_as_defined(case: tuple[str, int]) -> None:
    _chunks_alone(case[0])


def test_alone_in_flight_holds_on_some_programs() -> None:
    """The property above is not vacuous: a collective between two whole, ordered ones."""
    text = (
        'spmd.mesh @mesh = <["x"=2]>\n'
        "func.func @main(%x: tensor<4x8xf32>) -> tensor<4x8xf32> "
        "attributes {spmd.partitioned, spmd.per_device_io} {\n"
        '  %a = collective.all_reduce add %x on @mesh["x"] : tensor<4x8xf32>\n'
        "  %t = hlo.transpose %a, dims = [1, 0] : (tensor<4x8xf32>) -> tensor<8x4xf32>\n"
        '  %b = collective.all_reduce add %t on @mesh["x"] : tensor<8x4xf32>\n'
        "  %u = hlo.transpose %b, dims = [1, 0] : (tensor<8x4xf32>) -> tensor<4x8xf32>\n"
        "  %s = hlo.reduce add %u, dims = [0] : (tensor<4x8xf32>) -> tensor<8xf32>\n"
        "  %v = hlo.broadcast %s, dims = [1] : (tensor<8xf32>) -> tensor<4x8xf32>\n"
        '  %c = collective.all_reduce add %v on @mesh["x"] : tensor<4x8xf32>\n'
        "  func.return %c : tensor<4x8xf32>\n}"
    )
    assert _chunks_alone(text) >= 1


def _bench_module(n_ops: int) -> ModuleOp:
    from shardc.bench.partition_speed import program
    from shardc.passes.spmd_pipeline import SpmdPipelinePass

    module = parse_and_verify(CTX, program(n_ops), "<bench>")
    # collective-matmul off: on v5e's lines it now turns the chain's 4-device gathers into
    # rings of permutes that pay (a permute ends per device, `collective_landings`), and
    # this is about the 2-device class between whole collectives
    SpmdPipelinePass(
        micro_batch=False, fusion=False, schedule=False, collective_matmul=False
    ).apply(CTX, module)
    return module


def test_the_bench_chain_is_planned_without_an_estimate(monkeypatch: pytest.MonkeyPatch) -> None:
    """
    bench/partition_speed.py's chain at 1k ops (issue 14 item 7): its 2-device all_gather /
    reduce_scatter class sits between whole, ordered collectives, so its chunks pay their
    latency once as the unsplit ones do and the floor misses `min-gain`: no split is
    estimated (four whole estimates before, about 0.25 s each).
    """
    plans, made = _plans_and_estimates(_bench_module(1000), monkeypatch)
    assert plans == [] and made == []


def test_floor_below_every_estimate_on_the_bench_chain() -> None:
    """At 200 ops the chain's fixed costs keep the floor within `min-gain` of the base: the
    class is estimated, and the floor is below every estimate."""
    _floor_holds(str(_bench_module(200)), fused=True)


def _pipeline_prefix(text: str) -> str:
    """`text` as `spmd-pipeline` hands it to micro-batch (collective-matmul included: on
    v5e's lines its rings of permutes end apart per device, `collective_landings`)."""
    from shardc.passes.spmd_pipeline import SpmdPipelinePass

    module = parse_and_verify(CTX, text, "<generated>")
    SpmdPipelinePass(micro_batch=False, fusion=False, schedule=False).apply(CTX, module)
    return str(module)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(partitionable_programs(), st.booleans())
def test_floor_below_every_estimate_after_the_pipeline_prefix(text: str, fused: bool) -> None:
    """The chains' bound (`ChainFloor`) too, on what micro-batch sees in the pipeline."""
    _floor_holds(_pipeline_prefix(partition(text)), fused)


def _chain_module(n_ops: int) -> ModuleOp:
    from shardc.bench.partition_speed import program

    return parse_and_verify(CTX, _pipeline_prefix(program(n_ops)), "<bench>")


def test_floor_below_every_estimate_on_the_chain_with_permute_rings() -> None:
    """bench/partition_speed.py's chain with collective-matmul's rings of permutes (which
    end apart per device on v5e's line): the floor, chains included, is below every
    estimate of every class and count, fused or not."""
    module = _chain_module(200)
    assert any(op.name == "collective.permute" for op in module.walk())
    for fused in (True, False):
        _floor_holds(str(module), fused)


def test_the_chain_with_permute_rings_is_planned_without_a_split_estimate(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """
    At 1k ops (issue 14 item 7): the totals' floor charges each permute of collective-
    matmul's rings almost nothing (its soonest member less its overlap), so every plan was
    estimated (13 estimates, micro-batch 16x slower); the chains' floor (each ring between
    two ordered collectives waits for its longest landing, and its permutes pass the engine
    one after the other) misses `min-gain` for every plan: none is estimated and none
    chosen, as when they were (the best estimate was 0.3% slower than the base).
    """
    plans, made = _plans_and_estimates(_chain_module(1000), monkeypatch)
    assert plans == [] and [p for p in made if p is not None] == []


def test_chain_floor_is_tighter_than_the_totals_on_permute_rings() -> None:
    """The chains' bound of the unsplit chain is above the totals' (which it must be to
    prune) and below its scheduled and written estimates."""
    from shardc.passes.step_estimate import program_order_time, scheduled_time

    module = _chain_module(200)
    model = cached(CostModel(get_chip("v5e"), find_mesh(module)))
    block = _function_blocks(module)[0]
    floor = SplitFloor.of(block, per_op(model), block)
    assert floor.chain is not None
    whole = floor.chain.whole()
    assert whole > max(floor.compute, floor.engine)
    assert whole <= scheduled_time(block, model) * (1 + 1e-9)
    assert whole <= program_order_time(block.ops, model) * (1 + 1e-9)


def test_chain_floor_reused_across_classes_and_counts_as_fresh() -> None:
    """`ChainFloor` numbers the block's ops once and walks that list for every (class,
    count): each walk must start afresh, giving what a floor built for that one call gives
    (on the chain with permute rings, whose ready times are per device arrays)."""
    from shardc.passes.chain_floor import ChainFloor
    from shardc.passes.micro_batch import _devices

    module = _chain_module(200)
    model = per_op(cached(CostModel(get_chip("v5e"), find_mesh(module))))
    block = _function_blocks(module)[0]
    floor = SplitFloor.of(block, model, block)
    assert floor.chain is not None
    owner = MicroBatchPass()
    seen: list[float] = []
    for cand in candidates(block):
        for k in owner.counts(cand.size):
            chunk = lambda op, cand=cand, k=k: floor.chunk(op, cand, k)  # noqa: E731
            reused = floor.chain.split(cand.split_ops, k, chunk)
            fresh = ChainFloor(block, model, _devices(model), floor.chain.ordered)
            assert reused == fresh.split(cand.split_ops, k, chunk)
            assert floor.chain.whole() == fresh.whole()
            seen.append(reused)
    assert len(seen) > 2 and len(set(seen)) > 1


def _plans_and_estimates(module, monkeypatch):  # type: ignore[no-untyped-def]
    """micro-batch's chosen plans on `module` (v5e, fused) and every plan it estimated."""
    made: list[Plan | None] = []
    original = MicroBatchPass.estimate

    def estimate(self, module, index, plan, model, *rest):  # type: ignore[no-untyped-def]
        made.append(plan)
        return original(self, module, index, plan, model, *rest)

    model = cached(CostModel(get_chip("v5e"), find_mesh(module)))
    with monkeypatch.context() as m:
        m.setattr(MicroBatchPass, "estimate", estimate)
        plans, _ = MicroBatchPass(fused=True).plans_and_view(module, model)
    return plans, made
