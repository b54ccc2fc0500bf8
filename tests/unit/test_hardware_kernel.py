"""
hardware/kernel.py: level S's time of a compute op or fusion is the time of the tiled loop
`lower-to-tpu` makes of it (issue 15 item 5: fill, per step max(compute, DMA), drain).
Differential: for every op and fusion of hypothesis-generated programs (and of the
examples), the kernel `hardware.kernel` describes from types alone has the time of the
loop lowering/compute.py and lowering/fusion.py build, at the blocks tile_plan chooses.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from shardc.dialects import hlo
from shardc.hardware import kernel
from shardc.hardware.chips import CHIPS, Chip
from shardc.hardware.cost import CachedCostModel, CostModel
from shardc.lowering import complex_pairs, compute, fusion, random, reduce_body, tile_plan
from shardc.lowering.context import Target
from shardc.passes.fusion import FusionPass
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Operation

from tests.unit.strategies import context, hlo_programs, parse

ROOT = Path(__file__).resolve().parents[2]


def lowered_loops(chip: Chip, op: Operation) -> list[tile_plan.Tiled] | None:
    """The loops lowering builds for `op` (None: none: not a compute op, or a fusion it
    inlines)."""
    target = Target(chip, chip.vmem_bytes)
    if isinstance(op, hlo.FusionOp):
        if fusion.why_unfused(target, op) is not None:
            return None
        loops = fusion.fused_loops(chip, op)
    elif random.handles(op):
        assert isinstance(op, hlo.RngBitGeneratorOp)
        loops = [random._bits(chip, op), random._next_state(chip, op)]  # pyright: ignore[reportPrivateUsage]
    elif compute.handles(op) or reduce_body.handles(op):
        shapes = [v.type.get_shape() for v in op.operands if isinstance(v.type, TensorType)]
        if any(0 in s for s in shapes) or not op.results:
            return None
        if reduce_body.handles(op):
            assert isinstance(op, hlo.ReduceOp)
            if reduce_body._refusal(op) is not None:  # pyright: ignore[reportPrivateUsage]
                return None
            loops = [reduce_body.tiled(chip, op)]
        else:
            loops = [compute._builder(op)(chip, op)]  # pyright: ignore[reportOptionalCall]
    else:
        return None
    return [t for t in loops if math.prod(tile_plan.tensor_type(t.result.type).get_shape())]


def lowered_time(chip: Chip, op: Operation) -> float | None:
    """The time of the loops lowering builds for `op` at the blocks it plans, as lowering
    estimates it (`tile_plan.plan_time`: the clock by which it places pending ring steps
    at block boundaries, so it must be the time level S charges; with `STEP_OVERHEAD` in
    it, corpus `everyday`'s rings ran back to back, tests/e2e/test_timing_agreement.py)."""
    loops = lowered_loops(chip, op)
    if loops is None:
        return None
    total = 0.0
    for t in loops:
        plan = tile_plan.plan_blocks(Target(chip, chip.vmem_bytes), t, 0)
        total += tile_plan.plan_time(chip, t, plan)
    return total


def level_s_kernels(chip: Chip, op: Operation) -> list[kernel.Kernel] | None:
    if isinstance(op, hlo.FusionOp):
        return kernel.fusion_kernels(chip, op)
    if isinstance(op, hlo.RngBitGeneratorOp):
        ks = kernel.rng_kernels(chip, op)
        return [k for k in ks if math.prod(k.sizes[: k.n_out])]
    k = kernel.op_kernel(chip, op)
    return None if k is None else [k]


def same_plans(chip: Chip, op: Operation) -> None:
    """Level S's loops have lowering's blocks, grid and VMEM bytes, for the whole VMEM
    and for a quarter of what lowering's plan needs (where the staging buffers count)."""
    loops, ks = lowered_loops(chip, op) or [], level_s_kernels(chip, op) or []
    assert len(loops) == len(ks), str(op)[:200]
    for t, k in zip(loops, ks, strict=True):
        full = tile_plan.plan_blocks(Target(chip, chip.vmem_bytes), t, 0)
        for budget in (chip.vmem_bytes, full.vmem // 4):
            found = kernel.plan(chip, k, budget)
            try:
                want = tile_plan.plan_blocks(Target(chip, budget), t, 0)
            except Exception:  # noqa: BLE001 - nothing fits: neither may find blocks
                assert found is None, str(op)[:200]
                continue
            assert found is not None, str(op)[:200]
            assert (found.blocks, found.grid, found.vmem) == (want.blocks, want.grid, want.vmem)


def not_lowered_yet(chip: Chip, op: Operation) -> bool:
    """An elementwise op `lower-to-tpu` does not compute yet (or a fusion of one)."""
    if isinstance(op, hlo.FusionOp):
        why = fusion.why_unfused(Target(chip, chip.vmem_bytes), op) or ""
        return "not lowered yet" in why
    return isinstance(op, kernel.ELEMENTWISE) and not compute.handles(op)


def compare(module: ModuleOp, chips: tuple[str, ...] = ("v5e", "v5p")) -> int:
    """Assert level S's kernel time is lowering's on every top-level hlo op; how many."""
    n = 0
    for name in chips:
        chip = CHIPS[name]
        for op in module.walk():
            parent = op.parent_op()
            if not op.name.startswith("hlo.") or isinstance(parent, hlo.FusionOp):
                continue
            if isinstance(parent, hlo.WhileOp | hlo.CaseOp):
                continue
            if any(complex_pairs.is_complex(v) for v in (*op.operands, *op.results)):
                continue  # rewritten on its parts first: tests/unit/test_complex_cost.py
            want = lowered_time(chip, op)
            got = kernel.op_kernel_time(chip, op)
            if want is None and (got is None or not_lowered_yet(chip, op)):
                continue  # no loop; or one level S still times as a loop (no level T yet)
            assert got == pytest.approx(want, rel=1e-9, abs=1e-15), (name, str(op)[:200])
            same_plans(chip, op)
            n += 1
    return n


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(hlo_programs(max_ops=12))
def test_level_s_kernel_is_lowerings(text: str) -> None:
    module = parse(text)
    compare(module)
    FusionPass().apply(context(), module)
    compare(module)


def test_is_finite_kernel_is_lowerings() -> None:
    """is_finite lowers to a loop (5 vector ops per element, low precision widened
    first), so level S times it as that loop too (it was left at its roofline: hypothesis
    found `None == 6.9e-12`)."""
    text = """
func.func @main(%a: tensor<f32>, %b: tensor<64x256xbf16>) -> (tensor<i1>, tensor<64x256xi1>) {
  %q = hlo.div %a, %a : tensor<f32>
  %f = hlo.is_finite %q : (tensor<f32>) -> tensor<i1>
  %g = hlo.is_finite %b : (tensor<64x256xbf16>) -> tensor<64x256xi1>
  func.return %f, %g : tensor<i1>, tensor<64x256xi1>
}
"""
    module = parse(text)
    ops = [o for o in module.walk() if isinstance(o, hlo.IsFiniteOp)]
    assert all(kernel.op_kernel(CHIPS["v5e"], o) is not None for o in ops)
    assert compare(module) == 6


def test_examples_kernels_are_lowerings() -> None:
    from shardc.lowering.tpu_pipeline import TpuPipelinePass

    n = 0
    for path in sorted((ROOT / "examples").glob("*.mlir")):
        module = parse(path.read_text(), str(path))
        for p in TpuPipelinePass(chip="v5e").passes()[:-1]:
            p.apply(context(), module)
        n += compare(module, ("v5e",))
    assert n >= 10


_ELEMENTWISE = """
func.func @main(%a: tensor<512x1024xf32>, %b: tensor<512x1024xf32>) -> tensor<512x1024xf32> {
  %c = hlo.add %a, %b : tensor<512x1024xf32>
  func.return %c : tensor<512x1024xf32>
}
"""


def test_one_block_elementwise_is_fill_compute_drain() -> None:
    """2 MiB operands fit VMEM whole: one step, nothing overlaps: both reads, the body's
    VMEM loads and store and its VPU op, then the write-back, one after the other (the
    roofline charged only the larger of the bytes and the FLOPs)."""
    chip = CHIPS["v5e"]
    op = next(o for o in parse(_ELEMENTWISE).walk() if isinstance(o, hlo.AddOp))
    nbytes = 512 * 1024 * 4
    want = (
        2 * nbytes / chip.hbm_bw
        + kernel.vmem_time(chip, 4 * nbytes)
        + kernel.vpu_time(chip, 512 * 1024)
        + nbytes / chip.hbm_bw
    )
    cost = CostModel(chip).op_cost(op)
    assert cost.time == pytest.approx(want)
    assert cost.time > 3 * nbytes / chip.hbm_bw  # more than its roofline


_DOT = """
func.func @main(%a: tensor<2048x4096xbf16>, %w: tensor<4096x4096xbf16>) -> tensor<2048x4096xbf16> {
  %o = hlo.dot %a, %w, contracting_dims = [1] x [0] : (tensor<2048x4096xbf16>, tensor<4096x4096xbf16>) -> tensor<2048x4096xbf16>
  func.return %o : tensor<2048x4096xbf16>
}
"""


@pytest.mark.parametrize("chip", ["v5e", "v5p"])
def test_big_dot_pays_its_first_fetch_and_last_write_back(chip: str) -> None:
    """A real-size dot: level S's time is at least its MXU time plus the first blocks'
    fetch and the last block's write-back of the plan lowering would choose."""
    c = CHIPS[chip]
    op = next(o for o in parse(_DOT).walk() if isinstance(o, hlo.DotOp))
    k = kernel.op_kernel(c, op)
    assert k is not None
    plan = kernel.plan(c, k, c.vmem_bytes)
    assert plan is not None
    fill = sum(kernel.block_bytes(s.block(plan.blocks), s.elem) for s in k.streams) / c.hbm_bw
    drain = k.out_bytes(plan.blocks) / c.hbm_bw
    mxu = 2 * 2048 * 4096 * 4096 / c.flops_bf16
    time = CostModel(c).op_cost(op).time
    assert time >= mxu + fill + drain
    assert time == pytest.approx(lowered_time(c, op))


_RNG = """
func.func @main(%s: tensor<2xui64>) -> tensor<SHAPExT> {
  %n, %b = hlo.rng_bit_generator %s, algorithm = ALG : (tensor<2xui64>) -> (tensor<2xui64>, tensor<SHAPExT>)
  func.return %b : tensor<SHAPExT>
}
"""


@pytest.mark.parametrize("alg", ["THREE_FRY", "PHILOX", "DEFAULT"])
@pytest.mark.parametrize("shape", ["16x32", "8x8", "7x5", "1024x512", "3"])
@pytest.mark.parametrize("elem", ["ui32", "ui64"])
def test_rng_bit_generator_costs_its_loops(alg: str, shape: str, elem: str) -> None:
    """
    Level S charges `hlo.rng_bit_generator` the time of the two loops lowering/random.py
    makes of it (the bits, then the next state), not its roofline: on corpus dropout_rbg
    (8x8 per device) the roofline was 60% of the loops' fill, compute and drain, level T
    1.22x level S (issue 15 item 5).
    """
    text = _RNG.replace("SHAPE", shape).replace("ALG", alg).replace("xT", "x" + elem)
    module = parse(text)
    assert compare(module) == 2
    op = next(o for o in module.walk() if isinstance(o, hlo.RngBitGeneratorOp))
    chip = CHIPS["v5e"]
    model = CostModel(chip)
    flops, rate = model.flops(op)
    roofline = max(flops / rate, model.hbm_bytes(op) / chip.hbm_bw)
    assert model.op_cost(op).time > roofline


_SAME_OPERAND = """
spmd.mesh @mesh = <["y"=1]>
func.func @main(%a: tensor<bf16>, %b: tensor<bf16>) -> tensor<bf16> {
  %c = hlo.add %a, %b : tensor<bf16>
  %d = hlo.add %a, %a : tensor<bf16>
  func.return %d : tensor<bf16>
}
"""


def test_kernel_time_tells_x_plus_x_from_x_plus_y(monkeypatch: pytest.MonkeyPatch) -> None:
    """
    `x + x` widens its bf16 operand once, `x + y` each of two (`compute_widen_ops`), so
    their loops' times differ although their types are the same: level S's remembered
    kernel times (`kernel._TIMES`) and `CachedCostModel` must not give one the other's.
    Hypothesis replaying its database ran `x + y` before `x + x` and found level S's
    time of `x + x` to be `x + y`'s; this is that order, with nothing remembered before.
    """
    monkeypatch.setattr(kernel, "_TIMES", {})
    module = parse(_SAME_OPERAND)
    xy, xx = [o for o in module.walk() if isinstance(o, hlo.AddOp)]
    for chip in (CHIPS["v5e"], CHIPS["v5p"]):
        for op in (xy, xx):
            assert kernel.op_kernel_time(chip, op) == pytest.approx(
                lowered_time(chip, op), rel=1e-9, abs=1e-15
            ), (chip.name, str(op))
        cached = CachedCostModel(chip)
        for op in (xy, xx):
            assert cached.op_cost(op) == CostModel(chip).op_cost(op), (chip.name, str(op))
    assert CostModel(CHIPS["v5e"]).op_cost(xx).time < CostModel(CHIPS["v5e"]).op_cost(xy).time
