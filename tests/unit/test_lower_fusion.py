"""
`lower-to-tpu` of `hlo.fusion` (lowering/fusion.py): a fusion is one tiled loop (a
concatenate root one per operand) whose results equal level S's bit for bit (the fused
ops keep level S's per-op rounding), with none of the simulator's diagnostics (race,
deadlock, semaphore left non-zero, DMA never waited, out of bounds: any raises), on
hand-written fusions of every kind and on hypothesis-generated fused programs, with small
`vmem-limit`s forcing many blocks. A fusion that cannot be one loop is lowered op by op
and says so (kernel attribute, report). Seeded bugs in a fused loop (a dropped wait, a
result slot reused while its write-back is in flight, a wait on the wrong semaphore) are
caught by the simulator's checks.
"""

from __future__ import annotations

import numpy as np
import pytest
import shardc
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from shardc.diagnostics import InterpreterError
from shardc.dialects import tpu
from shardc.interpreter.values import FLOAT_DTYPES
from shardc.lowering.fusion import UNFUSED_ATTR
from xdsl.dialects import scf
from xdsl.ir import Operation

LOOP_3D = """
func.func @main(%x: tensor<4x16x256xf32>, %m: tensor<4x16xf32>, %b: tensor<256xf32>) -> tensor<4x16x256xf32> {
  %r = hlo.fusion(%p0 = %x, %p1 = %m, %p2 = %b) kind = loop, name = "norm_fusion" : (tensor<4x16x256xf32>, tensor<4x16xf32>, tensor<256xf32>) -> tensor<4x16x256xf32> {
    %mb = hlo.broadcast %p1, dims = [0, 1] : (tensor<4x16xf32>) -> tensor<4x16x256xf32>
    %bb = hlo.broadcast %p2, dims = [2] : (tensor<256xf32>) -> tensor<4x16x256xf32>
    %s = hlo.sub %p0, %mb : tensor<4x16x256xf32>
    %h = hlo.convert %s : (tensor<4x16x256xf32>) -> tensor<4x16x256xbf16>
    %e = hlo.exp %h : tensor<4x16x256xbf16>
    %f = hlo.convert %e : (tensor<4x16x256xbf16>) -> tensor<4x16x256xf32>
    %i = hlo.iota dim = 2 : tensor<4x16x256xf32>
    %c = hlo.constant dense<0.5> : tensor<4x16x256xf32>
    %ic = hlo.mul %i, %c : tensor<4x16x256xf32>
    %g = hlo.add %f, %ic : tensor<4x16x256xf32>
    %o = hlo.mul %g, %bb : tensor<4x16x256xf32>
    hlo.return %o : tensor<4x16x256xf32>
  }
  func.return %r : tensor<4x16x256xf32>
}
"""

TRANSPOSE = """
func.func @main(%x: tensor<256x512xbf16>, %y: tensor<512x256xbf16>) -> tensor<512x256xbf16> {
  %r = hlo.fusion(%p0 = %x, %p1 = %y) kind = loop, name = "transpose_add_fusion" : (tensor<256x512xbf16>, tensor<512x256xbf16>) -> tensor<512x256xbf16> {
    %t = hlo.transpose %p0, dims = [1, 0] : (tensor<256x512xbf16>) -> tensor<512x256xbf16>
    %a = hlo.add %t, %p1 : tensor<512x256xbf16>
    %n = hlo.tanh %a : tensor<512x256xbf16>
    hlo.return %n : tensor<512x256xbf16>
  }
  func.return %r : tensor<512x256xbf16>
}
"""

REDUCE = """
func.func @main(%x: tensor<64x512xbf16>) -> tensor<64xf32> {
  %r = hlo.fusion(%p0 = %x) kind = input, name = "reduce_fusion" : (tensor<64x512xbf16>) -> tensor<64xf32> {
    %c = hlo.convert %p0 : (tensor<64x512xbf16>) -> tensor<64x512xf32>
    %e = hlo.exp %c : tensor<64x512xf32>
    %s = hlo.reduce max %e, dims = [1] : (tensor<64x512xf32>) -> tensor<64xf32>
    hlo.return %s : tensor<64xf32>
  }
  func.return %r : tensor<64xf32>
}
"""

DOT = """
func.func @main(%x: tensor<64x512xbf16>, %g: tensor<512xbf16>, %w: tensor<512x256xbf16>, %b: tensor<256xf32>) -> (tensor<64x256xf32>, tensor<64x256xbf16>) {
  %r:2 = hlo.fusion(%p0 = %x, %p1 = %g, %p2 = %w, %p3 = %b) kind = output, name = "dot_tanh_fusion" : (tensor<64x512xbf16>, tensor<512xbf16>, tensor<512x256xbf16>, tensor<256xf32>) -> (tensor<64x256xf32>, tensor<64x256xbf16>) {
    %gb = hlo.broadcast %p1, dims = [1] : (tensor<512xbf16>) -> tensor<64x512xbf16>
    %xg = hlo.mul %p0, %gb : tensor<64x512xbf16>
    %d = hlo.dot %xg, %p2, contracting_dims = [1] x [0] : (tensor<64x512xbf16>, tensor<512x256xbf16>) -> tensor<64x256xbf16>
    %d32 = hlo.convert %d : (tensor<64x256xbf16>) -> tensor<64x256xf32>
    %bb = hlo.broadcast %p3, dims = [1] : (tensor<256xf32>) -> tensor<64x256xf32>
    %y = hlo.add %d32, %bb : tensor<64x256xf32>
    %t = hlo.tanh %y : tensor<64x256xf32>
    hlo.return %t, %d : tensor<64x256xf32>, tensor<64x256xbf16>
  }
  func.return %r#0, %r#1 : tensor<64x256xf32>, tensor<64x256xbf16>
}
"""

DOT_TRANSPOSED = """
func.func @main(%x: tensor<512x128xbf16>, %w: tensor<128x512xbf16>) -> tensor<128x128xbf16> {
  %r = hlo.fusion(%p0 = %x, %p1 = %w) kind = output, name = "dot_fusion" : (tensor<512x128xbf16>, tensor<128x512xbf16>) -> tensor<128x128xbf16> {
    %n = hlo.neg %p0 : tensor<512x128xbf16>
    %d = hlo.dot %n, %p1, contracting_dims = [0] x [1] : (tensor<512x128xbf16>, tensor<128x512xbf16>) -> tensor<128x128xbf16>
    %m = hlo.max %d, %d : tensor<128x128xbf16>
    hlo.return %m : tensor<128x128xbf16>
  }
  func.return %r : tensor<128x128xbf16>
}
"""

MULTI = """
func.func @main(%x: tensor<32x256xi32>, %y: tensor<32x256xi32>) -> (tensor<32x256xi32>, tensor<32x256xi1>) {
  %r:2 = hlo.fusion(%p0 = %x, %p1 = %y) kind = loop, name = "add_compare_fusion" : (tensor<32x256xi32>, tensor<32x256xi32>) -> (tensor<32x256xi32>, tensor<32x256xi1>) {
    %a = hlo.add %p0, %p1 : tensor<32x256xi32>
    %i = hlo.iota dim = 0 : tensor<32x256xi32>
    %c = hlo.compare GT, %a, %i : (tensor<32x256xi32>, tensor<32x256xi32>) -> tensor<32x256xi1>
    %s = hlo.select %c, %a, %p1 : tensor<32x256xi1>, tensor<32x256xi32>
    hlo.return %s, %c : tensor<32x256xi32>, tensor<32x256xi1>
  }
  func.return %r#0, %r#1 : tensor<32x256xi32>, tensor<32x256xi1>
}
"""

SLICE_CONCAT = """
func.func @main(%x: tensor<64x256xf16>, %y: tensor<64x256xf16>) -> tensor<64x256xf16> {
  %r = hlo.fusion(%p0 = %x, %p1 = %y) kind = loop, name = "add_concatenate_fusion" : (tensor<64x256xf16>, tensor<64x256xf16>) -> tensor<64x256xf16> {
    %a = hlo.slice %p0 [0:32, 0:256] : (tensor<64x256xf16>) -> tensor<32x256xf16>
    %b = hlo.slice %p1 [32:64, 0:256] : (tensor<64x256xf16>) -> tensor<32x256xf16>
    %s = hlo.add %a, %b : tensor<32x256xf16>
    %c = hlo.slice %p0 [32:64, 0:256] : (tensor<64x256xf16>) -> tensor<32x256xf16>
    %e = hlo.exp %c : tensor<32x256xf16>
    %o = hlo.concatenate %s, %e, dim = 0 : (tensor<32x256xf16>, tensor<32x256xf16>) -> tensor<64x256xf16>
    hlo.return %o : tensor<64x256xf16>
  }
  func.return %r : tensor<64x256xf16>
}
"""

RESHAPE = """
func.func @main(%x: tensor<16x256xf32>) -> tensor<4x4x256xf32> {
  %r = hlo.fusion(%p0 = %x) kind = loop, name = "exp_reshape_fusion" : (tensor<16x256xf32>) -> tensor<4x4x256xf32> {
    %e = hlo.exp %p0 : tensor<16x256xf32>
    %o = hlo.reshape %e : (tensor<16x256xf32>) -> tensor<4x4x256xf32>
    hlo.return %o : tensor<4x4x256xf32>
  }
  func.return %r : tensor<4x4x256xf32>
}
"""

FUSED = {
    "loop_3d": LOOP_3D,
    "transpose": TRANSPOSE,
    "reduce": REDUCE,
    "dot_epilogue_multi_output": DOT,
    "dot_transposed_operand": DOT_TRANSPOSED,
    "multi_output_int": MULTI,
    "slice_concatenate": SLICE_CONCAT,
}


def _kernel(module) -> Operation:
    (f,) = [o for o in module.body.block.ops if o.name == "func.func"]
    return f


def _same(want: dict[str, np.ndarray], got: dict[str, np.ndarray], eps: float | None) -> None:
    """Bit for bit; where a dot or an add-reduce is split over several contracting blocks
    (`eps`: see `_sums_in_blocks`), to `eps` times the largest value (at least 1), as
    unfused level T: its partial sums add in another order than level S's, a rounding to
    bf16 then may differ by a unit, and an epilogue (tanh, exp) carries that on. A wrong
    block would be off by the values themselves."""
    assert list(want) == list(got)
    for name, a in want.items():
        b = got[name]
        assert a.dtype == b.dtype and a.shape == b.shape, name
        if a.dtype in FLOAT_DTYPES and eps is not None:
            x, y = a.astype(np.float64), b.astype(np.float64)
            same = (x == y) | (np.isnan(x) & np.isnan(y))
            finite = np.isfinite(x)
            scale = float(np.max(np.abs(x[finite]), initial=1e-30))
            assert np.all(same | (finite & np.isfinite(y))), name
            diff = np.abs(np.where(same, 0.0, x - y))
            assert float(np.max(diff, initial=0.0)) <= eps * max(scale, 1.0), name
        elif a.dtype in FLOAT_DTYPES:
            bits = f"u{a.itemsize}"
            np.testing.assert_array_equal(a.view(bits), b.view(bits), err_msg=name)
        else:
            np.testing.assert_array_equal(a, b, err_msg=name)


def _sums_in_blocks(text: str, vmem: int | None) -> float | None:
    """None if level T adds no float dot's or reduce's terms in another order than level
    S, else the tolerance relative to the largest value: the partial sums' rounding
    (magnitudes of the terms, not of the result) in the narrowest float type."""
    if vmem is None or not ("hlo.dot" in text or "hlo.reduce add" in text):
        return None
    return 2.0**-4 if "f16" in text else 2.0**-12


def check(text: str, vmem: int | None = None, pipeline: str = "", fused: bool = True):
    """Level S (the fused program) and level T agree (bit for bit but for `_same`'s
    exception); the kernel module."""
    level_s = shardc.compile(text, pipeline) if pipeline else shardc.compile(text, "")
    want = shardc.run(level_s, seed=5).outputs
    option = f"{{vmem-limit={vmem}}}" if vmem else ""
    kernel = shardc.compile(level_s, f"lower-to-tpu{option}")
    _same(want, shardc.run(kernel, seed=5).outputs, _sums_in_blocks(text, vmem))
    if fused:
        why = _kernel(kernel).attributes.get(UNFUSED_ATTR)
        reasons = [] if why is None else [r.data for r in why.data]  # pyright: ignore
        # Under a small VMEM limit a fusion whose operands force large blocks (a column
        # broadcast's operand: its one dimension is its lanes) may only fit op by op.
        assert all(vmem and r.endswith("do not fit VMEM") for r in reasons), reasons
    return kernel


SMALL = {"dot_transposed_operand": 300000, "loop_3d": 200000, "transpose": 250000}
"""A VMEM limit that splits the fusion into several blocks (default 120 kB)."""


@pytest.mark.parametrize("small", [False, True])
@pytest.mark.parametrize("name", sorted(FUSED))
def test_fusion_is_one_loop_equal_to_level_s(name: str, small: bool):
    kernel = check(FUSED[name], SMALL.get(name, 120000) if small else None)
    loops = [o for o in _kernel(kernel).walk() if isinstance(o, scf.ForOp)]
    pieces = 2 if name == "slice_concatenate" else 1
    batch = [o for o in loops if o.body.block.args[0].name_hint == "bi"]
    assert len(loops) - len(batch) <= pieces


def test_small_vmem_makes_many_blocks_and_one_write_back_per_block():
    """The dot fusion at 120 kB: several result blocks and contracting blocks; per result
    block one DMA per result to HBM (issued in one place), no HBM intermediates."""
    kernel = check(DOT, 120000)
    f = _kernel(kernel)
    (loop,) = [
        o for o in f.walk() if isinstance(o, scf.ForOp) and o.body.block.args[0].name_hint == "t"
    ]
    to_hbm = [
        o
        for o in loop.walk()
        if isinstance(o, tpu.DMAStartOp)
        and tpu.memory_space_of(o.dst.type) is not tpu.memory_space_of(o.src.type)
        and "out" in (o.src.name_hint or "")
    ]
    assert len(to_hbm) == 2  # the two results, once each per block
    assert f.attributes["tpu.io"].data[2].value.data == 0  # no HBM scratch: nothing unfused


def test_a_fusion_that_cannot_be_one_loop_is_lowered_op_by_op_and_says_so():
    kernel = check(RESHAPE, fused=False)
    (why,) = _kernel(kernel).attributes[UNFUSED_ATTR].data
    assert "exp_reshape_fusion: a reshape" in why.data
    out = shardc.run(kernel)
    line = (
        [s for s in out.summary().splitlines() if "level-S model" in s]
        if hasattr(out, "summary")
        else []
    )
    assert all("op by op" in s for s in line)


RESHAPE_SHARDED = """
spmd.mesh @mesh = <["x"=2]>

func.func @main(%x: tensor<16x256xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"x"}, {}]>})
    -> (tensor<4x4x256xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"x"}, {}, {}]>}) {
  %e = hlo.exp %x : tensor<16x256xf32>
  %o = hlo.reshape %e : (tensor<16x256xf32>) -> tensor<4x4x256xf32>
  func.return %o : tensor<4x4x256xf32>
}
"""


def test_level_s_line_names_the_unfused_fusions():
    """Through tpu-pipeline (fusion on): the report's level-S entry and its summary line
    name the fusion lowered op by op; a program whose fusions are loops says so."""
    from shardc.interpreter.level_t_timeline import summary_lines

    report = shardc.run(shardc.compile(RESHAPE_SHARDED, "tpu-pipeline"), timing_only=True).report
    (why,) = report["level_s"]["unfused"]
    assert why.startswith("exponential_reshape_fusion: a reshape")
    (line,) = [s for s in summary_lines(report) if "level-S model" in s]
    assert "fusions lowered op by op: exponential_reshape_fusion: a reshape" in line
    loop = (
        RESHAPE_SHARDED.replace("tensor<4x4x256xf32>", "tensor<16x256xf32>")
        .replace(
            "%o = hlo.reshape %e : (tensor<16x256xf32>) -> tensor<16x256xf32>",
            "%o = hlo.neg %e : tensor<16x256xf32>",
        )
        .replace('{"x"}, {}, {}]', '{"x"}, {}]')
    )
    fused = shardc.run(shardc.compile(loop, "tpu-pipeline"), timing_only=True).report
    assert fused["level_s"]["unfused"] == []
    (line,) = [s for s in summary_lines(fused) if "level-S model" in s]
    assert "each fusion one loop at level T" in line


# Hypothesis-generated fused programs --------------------------------------------------------

DTYPES = ["f32", "bf16", "f16", "i32"]


@st.composite
def fused_programs(draw) -> str:
    """Unfused hlo (the `fusion` pass groups it): an elementwise chain on x with
    broadcasts (leading and inner dimensions), transposes, converts, compares, iota and
    constants, then a root: the chain itself (with a second output), a reduce, a dot
    with an epilogue, or a concatenate of two slices' chains."""
    dt = draw(st.sampled_from(DTYPES))
    floaty = dt != "i32"
    m, n = draw(st.sampled_from([8, 16, 64])), draw(st.sampled_from([128, 256]))
    ty = f"tensor<{m}x{n}x{dt}>"
    lines, k = [], 0

    def new(expr: str) -> str:
        nonlocal k
        k += 1
        lines.append(f"  %v{k} = {expr}")
        return f"%v{k}"

    v = "%x"
    for _ in range(draw(st.integers(1, 6))):
        kind = draw(
            st.sampled_from(
                ["unary", "y", "row", "col", "transpose", "convert", "cmp", "iota", "const"]
            )
        )
        if kind == "unary":
            op = draw(st.sampled_from(["exp", "tanh", "neg", "abs"] if floaty else ["neg", "abs"]))
            v = new(f"hlo.{op} {v} : {ty}")
        elif kind == "y":
            op = draw(st.sampled_from(["add", "mul", "sub", "max"]))
            v = new(f"hlo.{op} {v}, %y : {ty}")
        elif kind == "row":
            bb = new(f"hlo.broadcast %b, dims = [1] : (tensor<{n}x{dt}>) -> {ty}")
            v = new(f"hlo.add {v}, {bb} : {ty}")
        elif kind == "col":
            bb = new(f"hlo.broadcast %c, dims = [0] : (tensor<{m}x{dt}>) -> {ty}")
            v = new(f"hlo.mul {v}, {bb} : {ty}")
        elif kind == "transpose":
            tt = f"tensor<{n}x{m}x{dt}>"
            t = new(f"hlo.transpose {v}, dims = [1, 0] : ({ty}) -> {tt}")
            t = new(f"hlo.add {t}, {t} : {tt}")
            v = new(f"hlo.transpose {t}, dims = [1, 0] : ({tt}) -> {ty}")
        elif kind == "convert":
            other = draw(st.sampled_from(["f32", "bf16", "i32", "f16"]))
            c = new(f"hlo.convert {v} : ({ty}) -> tensor<{m}x{n}x{other}>")
            v = new(f"hlo.convert {c} : (tensor<{m}x{n}x{other}>) -> {ty}")
        elif kind == "cmp":
            p = new(f"hlo.compare LT, {v}, %y : ({ty}, {ty}) -> tensor<{m}x{n}xi1>")
            v = new(f"hlo.select {p}, {v}, %y : tensor<{m}x{n}xi1>, {ty}")
        elif kind == "iota":
            i = new(f"hlo.iota dim = {draw(st.integers(0, 1))} : {ty}")
            v = new(f"hlo.add {v}, {i} : {ty}")
        else:
            c = new(f"hlo.constant dense<{'1.5' if floaty else '3'}> : {ty}")
            v = new(f"hlo.mul {v}, {c} : {ty}")
    root = draw(st.sampled_from(["loop", "multi", "reduce", "dot", "concat"]))
    if root == "reduce":
        dim = draw(st.integers(0, 1))
        kind = draw(st.sampled_from(["add", "max"]))
        rt = f"tensor<{[n, m][dim]}x{dt}>"
        outs = [(new(f"hlo.reduce {kind} {v}, dims = [{dim}] : ({ty}) -> {rt}"), rt)]
    elif root == "dot" and floaty:
        wt, rt = f"tensor<{n}x128x{dt}>", f"tensor<{m}x128x{dt}>"
        d = new(f"hlo.dot {v}, %w, contracting_dims = [1] x [0] : ({ty}, {wt}) -> {rt}")
        outs = [(new(f"hlo.tanh {d} : {rt}"), rt)]
        if draw(st.booleans()):
            outs.append((new(f"hlo.exp {d} : {rt}"), rt))
    elif root == "concat":
        h = m // 2
        ht, ct = f"tensor<{h}x{n}x{dt}>", f"tensor<{m}x{n}x{dt}>"
        a = new(f"hlo.slice %y [0:{h}, 0:{n}] : ({ty}) -> {ht}")
        a = new(f"hlo.neg {a} : {ht}")
        s = new(f"hlo.slice %x [{h}:{m}, 0:{n}] : ({ty}) -> {ht}")
        s = new(f"hlo.add {s}, {s} : {ht}")
        c = new(f"hlo.concatenate {a}, {s}, dim = 0 : ({ht}, {ht}) -> {ct}")
        outs = [(new(f"hlo.add {c}, {v} : {ty}"), ty)]
    else:
        outs = [(v, ty)]
        if root == "multi":
            outs.append((new(f"hlo.add {v}, %y : {ty}"), ty))
    args = (
        f"%x: {ty}, %y: {ty}, %b: tensor<{n}x{dt}>, %c: tensor<{m}x{dt}>, %w: tensor<{n}x128x{dt}>"
    )
    types = ", ".join(t for _, t in outs)
    body = "\n".join(lines)
    ret = ", ".join(v for v, _ in outs)
    return f"func.func @main({args}) -> ({types}) {{\n{body}\n  func.return {ret} : {types}\n}}\n"


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fused_programs(), st.sampled_from([None, 150000]))
def test_generated_fused_programs_equal_level_s(text: str, vmem: int | None):
    """The `fusion` pass groups them; every fusion lowers as one loop (a concatenate
    feeding an add is not a root: those fusions are lowered op by op, and say so)."""
    fused = "hlo.concatenate" not in text
    kernel = check(text, vmem, pipeline="fusion", fused=fused)
    assert kernel is not None


# Seeded bugs in a fused loop ----------------------------------------------------------------


def _loop_ops(kernel, kind: type[Operation]) -> list[Operation]:
    (loop,) = [
        o
        for o in _kernel(kernel).walk()
        if isinstance(o, scf.ForOp) and o.body.block.args[0].name_hint == "t"
    ]
    return [o for o in loop.walk() if isinstance(o, kind)]


def _fails(kernel) -> str:
    with pytest.raises(InterpreterError) as info:
        shardc.run(kernel, seed=5)
    return str(info.value)


def _lowered(text: str = DOT, vmem: int = 120000):
    return shardc.compile(shardc.compile(text, ""), f"lower-to-tpu{{vmem-limit={vmem}}}")


@pytest.mark.parametrize("which", [0, 1, 2])
def test_dropping_a_wait_in_a_fused_loop_is_caught(which: int):
    kernel = _lowered()
    waits = _loop_ops(kernel, tpu.DMAWaitOp)
    assert len(waits) > which
    waits[which].detach()
    waits[which].erase()
    msg = _fails(kernel)
    assert any(k in msg for k in ("never waited", "data race", "not zero", "non-zero")), msg


def test_reusing_a_result_slot_still_in_flight_is_caught():
    """The wait for a result slot's previous write-back dropped: the epilogue stores into
    the slot while its DMA to HBM may still read it: a data race."""
    kernel = _lowered()
    reuse = [w for w in _loop_ops(kernel, tpu.DMAWaitOp) if "out" in (w.ref.name_hint or "")]
    assert reuse
    for w in reuse:
        w.detach()
        w.erase()
    msg = _fails(kernel)
    assert any(k in msg for k in ("data race", "never waited", "not zero", "non-zero")), msg


def test_waiting_on_the_wrong_semaphore_in_a_fused_loop_is_caught():
    """An operand block's wait on another operand's semaphore (both defined at the top of
    the loop body): one semaphore is never decremented, the other too often."""
    kernel = _lowered()
    (loop,) = [
        o
        for o in _kernel(kernel).walk()
        if isinstance(o, scf.ForOp) and o.body.block.args[0].name_hint == "t"
    ]
    body = loop.body.block
    waits = [
        w
        for w in _loop_ops(kernel, tpu.DMAWaitOp)
        if "_in" in (w.sem.name_hint or "") and w.sem.owner.parent_block() is body
    ]
    last, other = waits[-1], waits[0].sem  # `other` is defined before `last` waits
    assert last.sem is not other
    last.operands[0] = other
    msg = _fails(kernel)
    assert any(k in msg for k in ("deadlock", "not zero", "non-zero", "data race")), msg


# Every example ---------------------------------------------------------------------------


def _examples() -> list:
    from shardc.tests.e2e.test_examples import EXAMPLES

    real = EXAMPLES[0].parent / "real_size" / "transformer_layer.mlir"
    return [*EXAMPLES, real]


@pytest.mark.parametrize("path", _examples(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_example_through_tpu_pipeline_fuses_every_fusion_into_one_loop(path):
    """With fusion on (tpu-pipeline's default), no example has a fusion lowered op by op
    (tests/e2e/test_level_t_examples.py runs them against level S)."""
    kernel = shardc.compile(path.read_text(), "tpu-pipeline", filename=str(path))
    for f in kernel.body.block.ops:
        assert UNFUSED_ATTR not in f.attributes, f.attributes.get(UNFUSED_ATTR)


TWO_LOOPS = """
func.func @main(%x: tensor<64x512xf32>, %y: tensor<64x512xf32>) -> (tensor<64x512xf32>, tensor<64x512xf32>) {
  %a = hlo.fusion(%p0 = %x) kind = loop, name = "exp_fusion" : (tensor<64x512xf32>) -> tensor<64x512xf32> {
    %e = hlo.exp %p0 : tensor<64x512xf32>
    hlo.return %e : tensor<64x512xf32>
  }
  %b = hlo.fusion(%p0 = %a, %p1 = %y) kind = loop, name = "add_fusion" : (tensor<64x512xf32>, tensor<64x512xf32>) -> tensor<64x512xf32> {
    %s = hlo.add %p0, %p1 : tensor<64x512xf32>
    hlo.return %s : tensor<64x512xf32>
  }
  func.return %a, %b : tensor<64x512xf32>, tensor<64x512xf32>
}
"""


def test_a_loops_ready_operands_are_fetched_during_the_previous_loop():
    """The second loop's first block of %y (an argument) is fetched before the first loop
    starts (before its fetch of %x), so it arrives under that loop; its block of %a (the
    first loop's result) only after the first loop's last write-back."""
    kernel = check(TWO_LOOPS)
    ops = list(_kernel(kernel).body.block.ops)

    def source(o: Operation) -> str:
        src = o.src.owner.operands[0] if isinstance(o.src.owner, tpu.MemRefSliceOp) else o.src
        return src.name_hint or ""

    starts = {source(o): i for i, o in enumerate(ops) if isinstance(o, tpu.DMAStartOp)}
    writes_a = [
        i
        for i, o in enumerate(ops)
        if isinstance(o, tpu.DMAStartOp) and "out0" in (o.dst.name_hint or "")
    ]
    assert starts["y"] < starts["x"] < writes_a[0] < starts["out0"], starts
