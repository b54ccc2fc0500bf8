"""
`lower-to-tpu` (passes/lower_to_tpu.py): level-S programs of one-axis collectives (and
elementwise hlo between them) lowered to tpu kernels and run on the level-T simulator
give the level-S interpreter's results (exactly for integers, to rounding for floats),
with none of the simulator's diagnostics (deadlock, race, semaphore left non-zero, DMA
never waited, VMEM over capacity, out of bounds: any of them raises).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from shardc.diagnostics import InterpreterError
from shardc.dialects import make_context
from shardc.driver.registry import all_passes
from shardc.hardware.chips import get_chip
from shardc.hardware.cost import CostModel
from shardc.interpreter.level_t import run_level_t
from shardc.interpreter.testing import parse, run_per_device
from shardc.interpreter.values import dtype_of
from shardc.lowering.lower_to_tpu import LowerToTpuPass
from xdsl.utils.exceptions import PassFailedException

NAMES = {"f32": np.float32, "i32": np.int32}


def _kernel(module):
    (f,) = [o for o in module.body.block.ops if o.name == "func.func"]
    return f


def random_inputs(text: str, n: int, seed: int = 0) -> list[list[np.ndarray]]:
    module = parse(text)
    f = _kernel(module)
    rng = np.random.default_rng(seed)
    rows = []
    for _ in range(n):
        row = []
        for t in f.function_type.inputs.data:
            dt = dtype_of(t.element_type)
            shape = tuple(t.get_shape())
            if np.issubdtype(dt, np.integer):
                row.append(rng.integers(-1000, 1000, size=shape).astype(dt))
            else:
                row.append(rng.standard_normal(shape).astype(dt))
        rows.append(row)
    return rows


def lower(text: str, chip: str = "v5e", **options):
    module = parse(text)
    LowerToTpuPass(chip=chip, **options).apply(make_context(), module)
    module.verify()
    return module


def check(text: str, n: int, chip: str = "v5e", seed: int = 0, exact: bool = False, **options):
    """Lower (with the pass's `options`), run at level T and compare with level S
    (`exact`: floats bit for bit too, else to rounding); returns (module, report)."""
    ins = random_inputs(text, n, seed)
    want = run_per_device(text, ins)
    module = lower(text, chip, **options)
    k, m, s = (a.value.data for a in _kernel(module).attributes["tpu.io"].data)
    assert k == len(ins[0])
    outs, report = run_level_t(module, [row + [None] * (m + s) for row in ins], chip=chip)
    assert report["devices"] == n
    for d in range(n):
        for i in range(m):
            got, exp = outs[d][k + i], np.asarray(want[d][i])
            assert got.dtype == exp.dtype and got.shape == exp.shape
            if exact or np.issubdtype(exp.dtype, np.integer):
                np.testing.assert_array_equal(got, exp, err_msg=f"device {d} result {i}")
            else:
                np.testing.assert_allclose(
                    got, exp, rtol=1e-5, atol=1e-5, err_msg=f"device {d} result {i}"
                )
    return module, report


def one_op(n: int, dtype: str, arg: str, res: str, op: str, mesh: str | None = None) -> str:
    mesh = mesh or f'"x"={n}'
    return f"""
spmd.mesh @m = <[{mesh}]>
func.func @main(%a: tensor<{arg}x{dtype}>) -> tensor<{res}x{dtype}> attributes {{spmd.per_device_io}} {{
  {op.format(t=dtype)}
  func.return %r : tensor<{res}x{dtype}>
}}
"""


def start_done(op: str, res: str) -> str:
    """The `_start` + `done` form of a one-line sync collective `%r = collective.X ...`."""
    head, types = op.rsplit(" : ", 1)
    name = head.split()[2]
    head = head.replace(name, name + "_start", 1).replace("%r =", "%f =", 1)
    future = f"!collective.future<tensor<{res}x{{t}}>>"
    if types.startswith("("):
        types = types.rsplit("->", 1)[0] + f"-> {future}"
    else:
        types = f"{types} -> {future}"
    return f"{head} : {types}\n  %r = collective.done %f : {future} -> tensor<{res}x{{t}}>"


def cases(n: int) -> dict[str, tuple[str, str, str]]:
    """name -> (operand shape, result shape, op text with {t} for the element type)."""
    # A swap, a self-pair, and ranks that receive nothing (zeros).
    pairs = "[[0, 1]]" if n == 2 else f"[[0, {n - 1}], [{n - 1}, 0], [1, 1]]"
    return {
        "all_gather_dim0": (
            "2x128",
            f"{2 * n}x128",
            f'%r = collective.all_gather %a on @m["x"], dim = 0 : (tensor<2x128x{{t}}>) -> tensor<{2 * n}x128x{{t}}>',
        ),
        "all_gather_dim1": (
            "8x4",
            f"8x{4 * n}",
            f'%r = collective.all_gather %a on @m["x"], dim = 1 : (tensor<8x4x{{t}}>) -> tensor<8x{4 * n}x{{t}}>',
        ),
        "reduce_scatter_dim0": (
            f"{8 * n}x16",
            "8x16",
            f'%r = collective.reduce_scatter add %a on @m["x"], dim = 0 : (tensor<{8 * n}x16x{{t}}>) -> tensor<8x16x{{t}}>',
        ),
        "reduce_scatter_dim1": (
            f"4x{2 * n}",
            "4x2",
            f'%r = collective.reduce_scatter add %a on @m["x"], dim = 1 : (tensor<4x{2 * n}x{{t}}>) -> tensor<4x2x{{t}}>',
        ),
        "all_reduce": (
            "8x24",
            "8x24",
            '%r = collective.all_reduce add %a on @m["x"] : tensor<8x24x{t}>',
        ),
        "all_to_all_split1_concat0": (
            f"8x{2 * n}",
            f"{8 * n}x2",
            f'%r = collective.all_to_all %a on @m["x"], split_dim = 1, concat_dim = 0 : (tensor<8x{2 * n}x{{t}}>) -> tensor<{8 * n}x2x{{t}}>',
        ),
        "all_to_all_same_dim": (
            f"{4 * n}x8",
            f"{4 * n}x8",
            f'%r = collective.all_to_all %a on @m["x"], split_dim = 0, concat_dim = 0 : (tensor<{4 * n}x8x{{t}}>) -> tensor<{4 * n}x8x{{t}}>',
        ),
        "permute_shift_1": (
            "8x16",
            "8x16",
            '%r = collective.permute %a on @m["x"], shift = 1 : tensor<8x16x{t}>',
        ),
        "permute_shift_-1": (
            "8x16",
            "8x16",
            '%r = collective.permute %a on @m["x"], shift = -1 : tensor<8x16x{t}>',
        ),
        "permute_shift_n": (
            "8x16",
            "8x16",
            f'%r = collective.permute %a on @m["x"], shift = {n} : tensor<8x16x{{t}}>',
        ),
        "permute_pairs": (
            "8x16",
            "8x16",
            f'%r = collective.permute %a on @m["x"], pairs = {pairs} : tensor<8x16x{{t}}>',
        ),
    }


KINDS = list(cases(2))


@pytest.mark.parametrize("n", [2, 4, 8])
@pytest.mark.parametrize("dtype", ["f32", "i32"])
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("form", ["sync", "async"])
def test_collective_matches_level_s(n, dtype, kind, form):
    arg, res, op = cases(n)[kind]
    if form == "async":
        op = start_done(op, res)
    text = one_op(n, dtype, arg, res, op)
    _, report = check(text, n)
    if kind != "permute_shift_n":
        assert report["ici_bytes"] > 0


@pytest.mark.parametrize("chip, n", [("v5p", 4), ("v5p", 8), ("v5e", 16)])
@pytest.mark.parametrize("dtype", ["f32", "i32"])
@pytest.mark.parametrize(
    "kind",
    [
        "all_gather_dim0",
        "all_gather_dim1",
        "all_reduce",
        "reduce_scatter_dim0",
        "reduce_scatter_dim1",
    ],
)
@pytest.mark.parametrize("form", ["sync", "async"])
def test_bidirectional_rings_with_wraparound(chip, n, dtype, kind, form):
    arg, res, op = cases(n)[kind]
    if form == "async":
        op = start_done(op, res)
    module, _ = check(one_op(n, dtype, arg, res, op), n, chip=chip)
    text = str(module)
    tag = "ag" if "gather" in kind else "rs"
    assert f"%{tag}_r_recv_sems" in text and f"%{tag}_l_recv_sems" in text, text
    assert "device = %left_x" in text
    if kind == "all_reduce":
        assert "%rs_l_credits" in text and "%ag_l_recv_sems" in text


def test_one_way_on_a_line():
    """4 devices on v5e: no wraparound, so both directions would share the links: one ring."""
    arg, res, op = cases(4)["all_gather_dim0"]
    module, _ = check(one_op(4, "f32", arg, res, op), 4)
    assert "%ag_l_" not in str(module)


OVERLAP = """
spmd.mesh @m = <["x"=N]>
func.func @main(%x: tensor<1024x128xf32>, %y: tensor<2048x128xf32>) -> (tensor<NROWSx128xf32>, tensor<2048x128xf32>) attributes {spmd.per_device_io} {
  %f = collective.all_gather_start %x on @m["x"], dim = 0 : (tensor<1024x128xf32>) -> !collective.future<tensor<NROWSx128xf32>>
  %e = hlo.exp %y : tensor<2048x128xf32>
  %t = hlo.tanh %e : tensor<2048x128xf32>
  %g = collective.done %f : !collective.future<tensor<NROWSx128xf32>> -> tensor<NROWSx128xf32>
  func.return %g, %t : tensor<NROWSx128xf32>, tensor<2048x128xf32>
}
"""


RS_OVERLAP = """
spmd.mesh @m = <["x"=N]>
func.func @main(%x: tensor<NROWSx128xf32>, %y: tensor<2048x128xf32>) -> (tensor<1024x128xf32>, tensor<2048x128xf32>) attributes {spmd.per_device_io} {
  %f = collective.reduce_scatter_start add %x on @m["x"], dim = 0 : (tensor<NROWSx128xf32>) -> !collective.future<tensor<1024x128xf32>>
  %e = hlo.exp %y : tensor<2048x128xf32>
  %t = hlo.tanh %e : tensor<2048x128xf32>
  %g = collective.done %f : !collective.future<tensor<1024x128xf32>> -> tensor<1024x128xf32>
  func.return %g, %t : tensor<1024x128xf32>, tensor<2048x128xf32>
}
"""


@pytest.mark.parametrize("n", [2, 4])
@pytest.mark.parametrize("program", [OVERLAP, RS_OVERLAP], ids=["all_gather", "reduce_scatter"])
def test_start_overlaps_the_compute_before_its_done(n, program):
    """Step 0's messages travel while the exp/tanh run (for N = 2 that is all of them)."""
    overlapped = program.replace("NROWS", str(1024 * n)).replace("N]", f"{n}]")
    # The same program with the done right after the start: nothing to overlap.
    lines = overlapped.splitlines(True)
    done = next(line for line in lines if "collective.done" in line)
    lines.remove(done)
    lines.insert(next(i for i, line in enumerate(lines) if "_start" in line) + 1, done)
    serial = "".join(lines)
    _, fast = check(overlapped, n)
    _, slow = check(serial, n)
    assert fast["step_time_s"] < 0.95 * slow["step_time_s"], (
        fast["step_time_s"],
        slow["step_time_s"],
    )


def test_start_done_helper():
    op = start_done(cases(4)["all_gather_dim0"][2], "8x128")
    assert (
        "collective.all_gather_start %a" in op and "-> !collective.future<tensor<8x128x{t}>>" in op
    )


@pytest.mark.parametrize("axis", ["data", "model"])
@pytest.mark.parametrize(
    "kind",
    [
        "all_gather_dim1",
        "reduce_scatter_dim0",
        "all_reduce",
        "permute_shift_1",
        "permute_pairs",
        "all_to_all_split1_concat0",
    ],
)
def test_one_axis_of_a_2d_mesh(axis, kind):
    n = {"data": 2, "model": 4}[axis]
    arg, res, op = cases(n)[kind]
    op = op.replace('@m["x"]', f'@m["{axis}"]')
    text = one_op(n, "i32", arg, res, op, mesh='"data"=2, "model"=4')
    check(text, 8)


CHAIN = """
spmd.mesh @m = <["data"=2, "model"=4]>
func.func @main(%x: tensor<2x8xf32>, %y: tensor<8x4xi32>) -> (tensor<2x8xf32>, tensor<8x4xi32>, tensor<2x8xf32>, tensor<2x16xf32>, tensor<2x8xf32>, tensor<4x4xi32>, tensor<8x4xi32>) attributes {spmd.per_device_io} {
  %f = collective.permute_start %x on @m["model"], pairs = [[0, 1], [1, 3], [2, 2]] : tensor<2x8xf32> -> !collective.future<tensor<2x8xf32>>
  %e = hlo.exp %x : tensor<2x8xf32>
  %p = collective.done %f : !collective.future<tensor<2x8xf32>> -> tensor<2x8xf32>
  %s = hlo.add %p, %e : tensor<2x8xf32>
  %g = collective.all_gather_start %s on @m["data"], dim = 1 : (tensor<2x8xf32>) -> !collective.future<tensor<2x16xf32>>
  %a = collective.all_reduce add %y on @m["model"] : tensor<8x4xi32>
  %gg = collective.done %g : !collective.future<tensor<2x16xf32>> -> tensor<2x16xf32>
  %r = collective.reduce_scatter add %a on @m["data"], dim = 0 : (tensor<8x4xi32>) -> tensor<4x4xi32>
  %q = collective.permute %x on @m["model"], shift = -1 : tensor<2x8xf32>
  %m = hlo.max %a, %y : tensor<8x4xi32>
  func.return %p, %a, %x, %gg, %q, %r, %m : tensor<2x8xf32>, tensor<8x4xi32>, tensor<2x8xf32>, tensor<2x16xf32>, tensor<2x8xf32>, tensor<4x4xi32>, tensor<8x4xi32>
}
"""


def test_chain_of_collectives_and_elementwise():
    """Intermediates in HBM scratch, a returned argument copied, async permute overlapping exp."""
    module, _ = check(CHAIN, 8)
    k, m, s = (a.value.data for a in _kernel(module).attributes["tpu.io"].data)
    assert (k, m, s) == (2, 7, 2)  # scratch: %e and %s
    kernel = _kernel(module)
    text = str(kernel)
    # permute_start's DMAs start before the exp and are waited for after it.
    assert (
        text.index("device = ") < text.index("math.exp") < text.index("tpu.dma_wait %pm_recv_sem")
    )
    assert "tpu.kernel" in kernel.attributes
    assert kernel.function_type.outputs.data == ()


VARIADIC = """
spmd.mesh @m = <["x"=4]>
func.func @main(%x: tensor<8x8xf32>, %y: tensor<4xi32>) -> (tensor<8x8xf32>, tensor<4xi32>, tensor<32x8xf32>, tensor<16xi32>) attributes {spmd.per_device_io} {
  %a, %b = collective.all_reduce add %x, %y on @m["x"] : tensor<8x8xf32>, tensor<4xi32>
  %c, %d = collective.all_gather %x, %y on @m["x"], dim = 0 : (tensor<8x8xf32>, tensor<4xi32>) -> (tensor<32x8xf32>, tensor<16xi32>)
  func.return %a, %b, %c, %d : tensor<8x8xf32>, tensor<4xi32>, tensor<32x8xf32>, tensor<16xi32>
}
"""


def test_variadic_collectives():
    check(VARIADIC, 4)


def test_reduce_scatter_sums_integers_exactly_on_8():
    text = one_op(
        8,
        "i32",
        "64x8",
        "8x8",
        '%r = collective.reduce_scatter add %a on @m["x"], dim = 0 : (tensor<64x8x{t}>) -> tensor<8x8x{t}>',
    )
    for seed in range(3):
        check(text, 8, seed=seed)


def test_registered():
    assert all_passes()["lower-to-tpu"]() is LowerToTpuPass


# The handshake is what keeps a sender from overrunning its receiver ---------------------


def test_removing_the_credit_wait_is_caught():
    text = one_op(
        4,
        "f32",
        "32x128",
        "8x128",
        '%r = collective.reduce_scatter add %a on @m["x"], dim = 0 : (tensor<32x128x{t}>) -> tensor<8x128x{t}>',
    )
    module = lower(text)
    kernel = _kernel(module)
    (loop,) = [
        o
        for o in kernel.walk()
        if o.name == "scf.for" and any(p.name == "tpu.sem_wait" for p in o.body.block.ops)
    ]
    (wait,) = [o for o in loop.body.block.ops if o.name == "tpu.sem_wait"]
    wait.detach()
    wait.erase()
    ins = random_inputs(text, 4)
    with pytest.raises(InterpreterError) as info:
        run_level_t(module, [row + [None] for row in ins])
    msg = str(info.value)
    # The left neighbour's next message lands in the slot this device is still reading.
    assert "data race on buffer 'rs_recv_buf'" in msg, msg
    assert "'tpu.load' op" in msg or "tpu.load at" in msg, msg


# Several mesh axes, errors -----------------------------------------------------------------


MULTI_MESHES = {
    "2x4": ('"a"=2, "b"=4', 8),
    "2x2x2": ('"a"=2, "b"=2, "c"=2', 8),
    "2x1x4": ('"a"=2, "b"=1, "c"=4', 8),
}


@pytest.mark.parametrize(
    "mesh, axes",
    [
        ("2x4", ["a", "b"]),
        ("2x4", ["b", "a"]),
        ("2x2x2", ["a", "b", "c"]),
        ("2x2x2", ["c", "a"]),
        ("2x2x2", ["b", "c", "a"]),
        ("2x1x4", ["a", "b", "c"]),
        ("2x1x4", ["c", "a"]),
    ],
)
@pytest.mark.parametrize("kind", ["all_gather", "reduce_scatter", "all_reduce"])
@pytest.mark.parametrize("dtype", ["f32", "i32"])
@pytest.mark.parametrize("form", ["sync", "async"])
def test_multi_axis_collectives_one_ring_phase_per_axis(mesh, axes, kind, dtype, form):
    spec, devices = MULTI_MESHES[mesh]
    sizes = dict(item.replace('"', "").split("=") for item in spec.split(", "))
    g = 1
    for a in axes:
        g *= int(sizes[a])
    on = "@m[" + ", ".join(f'"{a}"' for a in axes) + "]"
    if kind == "all_gather":
        arg, res = "4x6", f"4x{6 * g}"
        op = f"%r = collective.all_gather %a on {on}, dim = 1 : (tensor<4x6x{{t}}>) -> tensor<4x{6 * g}x{{t}}>"
    elif kind == "reduce_scatter":
        arg, res = f"{4 * g}x6", "4x6"
        op = f"%r = collective.reduce_scatter add %a on {on}, dim = 0 : (tensor<{4 * g}x6x{{t}}>) -> tensor<4x6x{{t}}>"
    else:
        arg = res = "8x6"
        op = f"%r = collective.all_reduce add %a on {on} : tensor<8x6x{{t}}>"
    if form == "async":
        op = start_done(op, res)
    check(one_op(devices, dtype, arg, res, op, mesh=spec), devices)


@pytest.mark.slow
def test_two_axes_on_a_16x16_v5e_torus_are_bidirectional_in_the_last_phase():
    """4x4 on v5e has no wraparound; a 16-device axis does: its phase runs both ways."""
    text = one_op(
        32,
        "i32",
        "64x8",
        "2x8",
        '%r = collective.reduce_scatter add %a on @m["a", "b"], dim = 0 : (tensor<64x8x{t}>) -> tensor<2x8x{t}>',
        mesh='"a"=2, "b"=16',
    )
    module, _ = check(text, 32)
    text = str(module)
    assert "%rs_r_credits" in text and "%rs_credits" in text


def test_block_over_vmem_is_an_error():
    # v4 has 16 MiB of VMEM; 4 blocks of 8 MiB do not fit, and no dimension of the
    # 2047x1025 chunk can be cut into pieces.
    text = one_op(
        2,
        "f32",
        "4094x1025",
        "2047x1025",
        '%r = collective.reduce_scatter add %a on @m["x"], dim = 0 : (tensor<4094x1025x{t}>) -> tensor<2047x1025x{t}>',
    )
    with pytest.raises(PassFailedException, match="16777216 bytes available on v4"):
        lower(text, chip="v4")


@pytest.mark.parametrize("chip, n", [("v5e", 4), ("v5p", 4), ("v5e", 16)])
@pytest.mark.parametrize("kind", ["reduce_scatter_dim0", "reduce_scatter_dim1", "all_reduce"])
@pytest.mark.parametrize("form", ["sync", "async"])
def test_chunks_over_vmem_are_reduced_in_pieces(chip, n, kind, form):
    """With 1 KiB of VMEM each chunk is reduced in several pieces, one after the other."""
    arg, res, op = cases(n)[kind]
    if form == "async":
        op = start_done(op, res)
    module, _ = check(one_op(n, "f32", arg, res, op), n, chip=chip, vmem_limit=1024)
    assert str(module).count("%rs_recv_buf") + str(module).count("%rs_r_recv_buf") > 1


def test_bad_chip():
    with pytest.raises(PassFailedException, match="unknown chip"):
        lower(one_op(2, "f32", "8", "8", "%r = hlo.neg %a : tensor<8x{t}>"), chip="v99")


# Timing -----------------------------------------------------------------------------------


def test_large_ring_all_gather_time_against_the_cost_model():
    rows, n = 8192, 4  # 4 MiB shards, 16 MiB gathered
    text = one_op(
        n,
        "f32",
        f"{rows}x128",
        f"{n * rows}x128",
        f'%r = collective.all_gather %a on @m["x"], dim = 0 : (tensor<{rows}x128x{{t}}>) -> tensor<{n * rows}x128x{{t}}>',
    )
    _, report = check(text, n)
    level_s = parse(text)
    op = next(o for o in level_s.walk() if o.name == "collective.all_gather")
    from shardc.interpreter.devices import module_mesh

    mesh = module_mesh(level_s)
    assert mesh is not None
    want = CostModel(get_chip("v5e"), mesh[1]).collective_time(op)  # pyright: ignore
    ratio = report["step_time_s"] / want
    print(f"level-T / cost model = {report['step_time_s']:.6e} / {want:.6e} = {ratio:.4f}")
    assert ratio == pytest.approx(1.0, abs=0.10)


@pytest.mark.slow
@pytest.mark.parametrize("chip, n", [("v5p", 4), ("v5e", 16)])
def test_large_bidirectional_all_gather_time_against_the_cost_model(chip, n):
    """With wraparound the cost model counts both directions of the ring: so does the kernel."""
    rows = 16384 if n == 4 else 4096  # 32 MiB gathered per device: latency is a few per cent
    text = one_op(
        n,
        "f32",
        f"{rows}x128",
        f"{n * rows}x128",
        f'%r = collective.all_gather %a on @m["x"], dim = 0 : (tensor<{rows}x128x{{t}}>) -> tensor<{n * rows}x128x{{t}}>',
    )
    _, report = check(text, n, chip=chip)
    level_s = parse(text)
    op = next(o for o in level_s.walk() if o.name == "collective.all_gather")
    from shardc.interpreter.devices import module_mesh

    mesh = module_mesh(level_s)
    assert mesh is not None
    want = CostModel(get_chip(chip), mesh[1]).collective_time(op)  # pyright: ignore
    ratio = report["step_time_s"] / want
    print(
        f"{chip} x{n}: level-T / cost model = {report['step_time_s']:.6e} / {want:.6e} = {ratio:.4f}"
    )
    assert ratio == pytest.approx(1.0, abs=0.10)


@pytest.mark.slow
@pytest.mark.parametrize(
    "chip, n, kind",
    [("v5e", 8, "all_reduce"), ("v5p", 4, "reduce_scatter"), ("v5e", 16, "all_reduce")],
)
def test_large_reducing_collectives_time_against_the_cost_model(chip, n, kind):
    """32 MiB per device: the ring's per-step latency and local copies cost a few per cent."""
    rows = 65536
    if kind == "all_reduce":
        text = one_op(
            n,
            "f32",
            f"{rows}x128",
            f"{rows}x128",
            f'%r = collective.all_reduce add %a on @m["x"] : tensor<{rows}x128x{{t}}>',
        )
    else:
        text = one_op(
            n,
            "f32",
            f"{rows}x128",
            f"{rows // n}x128",
            f'%r = collective.reduce_scatter add %a on @m["x"], dim = 0 : (tensor<{rows}x128x{{t}}>) -> tensor<{rows // n}x128x{{t}}>',
        )
    _, report = check(text, n, chip=chip)
    level_s = parse(text)
    op = next(o for o in level_s.walk() if o.name.startswith("collective."))
    from shardc.interpreter.devices import module_mesh

    mesh = module_mesh(level_s)
    assert mesh is not None
    want = CostModel(get_chip(chip), mesh[1]).collective_time(op)  # pyright: ignore
    ratio = report["step_time_s"] / want
    print(f"{chip} x{n} {kind}: level-T / cost model = {ratio:.4f}")
    assert ratio == pytest.approx(1.0, abs=0.10)


@pytest.mark.parametrize(
    "chip, mesh, axes, parts",
    [
        ("v5p", '"a"=4, "b"=4', '"a", "b"', 2),
        ("v5e", '"a"=4, "b"=4', '"b", "a"', 2),
        ("v5p", '"a"=2, "b"=2, "c"=2', '"a", "b", "c"', 3),
    ],
)
@pytest.mark.parametrize("dtype", ["f32", "i32"])
@pytest.mark.parametrize("form", ["sync", "async"])
def test_torus_all_reduce_reduces_one_part_per_axis_order(chip, mesh, axes, parts, dtype, form):
    """Axes of one size: part i of the buffer over the axes rotated by i, all parts at once."""
    devices = 16 if "4" in mesh else 8
    op = f"%r = collective.all_reduce add %a on @m[{axes}] : tensor<12x16x{{t}}>"
    if form == "async":
        op = start_done(op, "12x16")
    module, _ = check(one_op(devices, dtype, "12x16", "12x16", op, mesh=mesh), devices, chip=chip)
    text = str(module)
    assert f"%ar_in{parts - 1} = " in text and f"%ar_in{parts} = " not in text
    assert f"%rs{parts - 1}_" in text and f"%ag{parts - 1}_" in text


@pytest.mark.slow
def test_torus_all_reduce_is_faster_than_a_ring_over_the_same_chips():
    """v5p 4x4 (wraparound on both axes), 8 MiB: the two halves keep both axes' links busy."""
    size = 2 * 2**20  # f32 elements
    ring = one_op(
        16,
        "f32",
        str(size),
        str(size),
        f'%r = collective.all_reduce add %a on @m["x"] : tensor<{size}x{{t}}>',
    )
    torus = one_op(
        16,
        "f32",
        str(size),
        str(size),
        f'%r = collective.all_reduce add %a on @m["a", "b"] : tensor<{size}x{{t}}>',
        mesh='"a"=4, "b"=4',
    )
    times = []
    for text, shape in ((ring, (4, 4)), (torus, None)):
        module = lower(text, "v5p")
        _, report = run_level_t(module, [[None, None]] * 16, chip="v5p", values=False, torus=shape)
        times.append(report["step_time_s"])
    assert times[1] < 0.6 * times[0], times


# Reduction kinds and low precision ----------------------------------------------------------


REDUCING = ["all_reduce", "reduce_scatter_dim0", "reduce_scatter_dim1"]


@pytest.mark.parametrize("chip, n", [("v5e", 4), ("v5p", 4), ("v5e", 8)])
@pytest.mark.parametrize("reduction", ["mul", "max", "min"])
@pytest.mark.parametrize("dtype", ["f32", "i32"])
@pytest.mark.parametrize("kind", REDUCING)
def test_reduction_kinds_match_level_s(chip, n, reduction, dtype, kind):
    arg, res, op = cases(n)[kind]
    check(one_op(n, dtype, arg, res, op.replace(" add ", f" {reduction} ")), n, chip=chip)


@pytest.mark.parametrize("chip, n", [("v5e", 4), ("v5p", 4), ("v5e", 16)])
@pytest.mark.parametrize("dtype", ["bf16", "f16"])
@pytest.mark.parametrize("reduction", ["add", "max"])
@pytest.mark.parametrize("kind", REDUCING)
@pytest.mark.parametrize("form", ["sync", "async"])
def test_low_precision_accumulates_in_f32_and_rounds_once(chip, n, dtype, reduction, kind, form):
    """bf16/f16 partial sums travel in f32; the result is rounded once, as level S's."""
    arg, res, op = cases(n)[kind]
    op = op.replace(" add ", f" {reduction} ")
    if form == "async":
        op = start_done(op, res)
    module, _ = check(one_op(n, dtype, arg, res, op), n, chip=chip, exact=True)
    assert (
        "vector<" in str(module) and "arith.extf" in str(module) and "arith.truncf" in str(module)
    )


@pytest.mark.parametrize(
    "mesh, axes, g",
    [
        ('"a"=2, "b"=4', '"a", "b"', 8),
        ('"a"=2, "b"=2, "c"=2', '"c", "a"', 4),
        ('"a"=2, "b"=2, "c"=2', '"a", "b", "c"', 8),
    ],
)
@pytest.mark.parametrize("kind", ["all_reduce", "reduce_scatter"])
def test_low_precision_over_several_axes_rounds_once(mesh, axes, g, kind):
    if kind == "all_reduce":
        arg = res = "8x6"
        op = f"%r = collective.all_reduce add %a on @m[{axes}] : tensor<8x6x{{t}}>"
    else:
        arg, res = f"{4 * g}x6", "4x6"
        op = f"%r = collective.reduce_scatter add %a on @m[{axes}], dim = 0 : (tensor<{4 * g}x6x{{t}}>) -> tensor<4x6x{{t}}>"
    check(one_op(8, "bf16", arg, res, op, mesh=mesh), 8, exact=True)


# Device groups and several axes --------------------------------------------------------------


GROUPS = {
    "pairs": "[[0, 1], [2, 3], [4, 5], [6, 7]]",
    "strided": "[[0, 2, 4, 6], [1, 3, 5, 7]]",
    "shuffled": "[[3, 0, 6, 5], [1, 7, 2, 4]]",
}


@pytest.mark.parametrize("groups", list(GROUPS))
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("dtype", ["f32", "i32"])
@pytest.mark.parametrize("form", ["sync", "async"])
def test_explicit_groups_match_level_s(groups, kind, dtype, form):
    g = GROUPS[groups].count("[") - 1
    size = 8 // g
    arg, res, op = cases(size)[kind]
    op = op.replace('@m["x"]', f"groups {GROUPS[groups]}")
    if form == "async":
        op = start_done(op, res)
    module, _ = check(one_op(8, dtype, arg, res, op, mesh='"x"=8'), 8)
    assert "%me_g0" in str(module)


@pytest.mark.parametrize("axes", ['"a", "b"', '"b", "a"', '"c", "a"', '"a", "b", "c"'])
@pytest.mark.parametrize(
    "kind",
    [
        "permute_shift_1",
        "permute_shift_-1",
        "permute_pairs",
        "all_to_all_split1_concat0",
        "all_to_all_same_dim",
    ],
)
@pytest.mark.parametrize("form", ["sync", "async"])
def test_permute_and_all_to_all_over_several_axes(axes, kind, form):
    size = {'"a", "b"': 4, '"b", "a"': 4, '"c", "a"': 4, '"a", "b", "c"': 8}[axes]
    arg, res, op = cases(size)[kind]
    op = op.replace('@m["x"]', f"@m[{axes}]")
    if form == "async":
        op = start_done(op, res)
    check(one_op(8, "i32", arg, res, op, mesh='"a"=2, "b"=2, "c"=2'), 8)


# all_reduce of an element count the group does not divide ------------------------------------


@pytest.mark.parametrize(
    "chip, mesh, axes, devices",
    [
        ("v5e", '"x"=4', '"x"', 4),
        ("v5p", '"x"=8', '"x"', 8),
        ("v5e", '"a"=2, "b"=4', '"a", "b"', 8),
        ("v5p", '"a"=2, "b"=4', '"b"', 8),
    ],
)
@pytest.mark.parametrize("shape", ["3", "5x7", "2x9x3"])
@pytest.mark.parametrize("dtype", ["f32", "i32", "bf16"])
@pytest.mark.parametrize("form", ["sync", "async"])
def test_all_reduce_of_an_indivisible_count(chip, mesh, axes, devices, shape, dtype, form):
    """The tail (numel mod G elements) is exchanged directly and reduced in rank order."""
    op = f"%r = collective.all_reduce add %a on @m[{axes}] : tensor<{shape}x{{t}}>"
    if form == "async":
        op = start_done(op, shape)
    module, _ = check(one_op(devices, dtype, shape, shape, op, mesh=mesh), devices, chip=chip)
    assert "%tail_rows" in str(module)


# Random reducing collectives (hypothesis) -------------------------------------------------------


@st.composite
def reducing_programs(draw) -> tuple[str, int, str]:
    """A random all_reduce / reduce_scatter: mesh, axes or groups, kind, element type, shape."""
    mesh = draw(st.sampled_from(['"x"=2', '"x"=4', '"a"=2, "b"=2', '"a"=2, "b"=4']))
    sizes = [int(part.split("=")[1]) for part in mesh.split(", ")]
    names = [part.split("=")[0].strip('"') for part in mesh.split(", ")]
    devices = math.prod(sizes)
    if draw(st.booleans()) and devices > 2:
        perm = draw(st.permutations(range(devices)))
        g = draw(
            st.sampled_from([d for d in (2, 4) if devices % d == 0 and d < devices] or [devices])
        )
        groups = [list(perm[i : i + g]) for i in range(0, devices, g)]
        on, group = f"groups {groups}", g
    else:
        axes = draw(st.lists(st.sampled_from(names), min_size=1, max_size=len(names), unique=True))
        on = "@m[" + ", ".join(f'"{a}"' for a in axes) + "]"
        group = math.prod(sizes[names.index(a)] for a in axes)
    kind = draw(st.sampled_from(["add", "mul", "max", "min"]))
    dtype = draw(
        st.sampled_from(["f32", "i32", "bf16", "f16"] if kind != "mul" else ["i32", "f32"])
    )
    rows = draw(st.integers(1, 3)) * group
    cols = draw(st.integers(1, 5))
    if draw(st.booleans()):
        op = f"%r = collective.all_reduce {kind} %a on {on} : tensor<{rows}x{cols}x{{t}}>"
        res = f"{rows}x{cols}"
    else:
        res = f"{rows // group}x{cols}"
        op = (
            f"%r = collective.reduce_scatter {kind} %a on {on}, dim = 0 : "
            f"(tensor<{rows}x{cols}x{{t}}>) -> tensor<{res}x{{t}}>"
        )
    if draw(st.booleans()):
        op = start_done(op, res)
    return (
        one_op(devices, dtype, f"{rows}x{cols}", res, op, mesh=mesh),
        devices,
        draw(st.sampled_from(["v5e", "v5p"])),
    )


@settings(deadline=None, max_examples=25, suppress_health_check=[HealthCheck.too_slow])
@given(reducing_programs())
def test_random_reducing_collectives_match_level_s(program):
    text, devices, chip = program
    check(text, devices, chip=chip)


@pytest.mark.parametrize("chip, bidirectional", [("v5e", True), ("v5p", False)])
@pytest.mark.parametrize("kind", ["all_gather_dim0", "reduce_scatter_dim0", "all_reduce"])
def test_bidirectional_option_overrides_the_wraparound_rule(chip, bidirectional, kind):
    """4 devices: a line on v5e (one way by default), a ring on v5p (both ways by default)."""
    arg, res, op = cases(4)[kind]
    module, _ = check(one_op(4, "f32", arg, res, op), 4, chip=chip, bidirectional=bidirectional)
    assert ("_l_recv_sems" in str(module)) == bidirectional


@pytest.mark.parametrize("reduction", ["add", "mul", "max", "min"])
@pytest.mark.parametrize("kind", ["all_reduce", "reduce_scatter"])
def test_i1_reductions_are_or_and(reduction, kind):
    """Level S reduces i1 with or (add, max) and and (mul, min): so do the rings."""
    if kind == "all_reduce":
        res, op = (
            "8x16",
            f'%r = collective.all_reduce {reduction} %a on @m["x"] : tensor<8x16x{{t}}>',
        )
    else:
        res = "2x16"
        op = f'%r = collective.reduce_scatter {reduction} %a on @m["x"], dim = 0 : (tensor<8x16x{{t}}>) -> tensor<2x16x{{t}}>'
    text = one_op(4, "i1", "8x16", res, op)
    rng = np.random.default_rng(1)
    ins = [[rng.random((8, 16)) < 0.7] for _ in range(4)]
    want = run_per_device(text, ins)
    outs, _ = run_level_t(lower(text, "v5p"), [row + [None] for row in ins], chip="v5p")
    for d in range(4):
        np.testing.assert_array_equal(outs[d][1], np.asarray(want[d][0]))


@st.composite
def moving_programs(draw) -> tuple[str, int]:
    """A random permute / all_to_all / all_gather over explicit groups or several axes."""
    devices = 8
    if draw(st.booleans()):
        perm = draw(st.permutations(range(devices)))
        g = draw(st.sampled_from([2, 4]))
        on = f"groups {[list(perm[i : i + g]) for i in range(0, devices, g)]}"
    else:
        axes = draw(st.lists(st.sampled_from(["a", "b", "c"]), min_size=2, max_size=3, unique=True))
        on, g = "@m[" + ", ".join(f'"{a}"' for a in axes) + "]", 2 ** len(axes)
    kind = draw(st.sampled_from(["permute_shift", "permute_pairs", "all_to_all", "all_gather"]))
    cols = draw(st.integers(1, 3)) * g
    if kind == "permute_shift":
        op = f"%r = collective.permute %a on {on}, shift = {draw(st.integers(-g, g))} : tensor<4x{cols}x{{t}}>"
        res = f"4x{cols}"
    elif kind == "permute_pairs":
        targets = draw(st.permutations(range(g)))
        pairs = [[s, t] for s, t in enumerate(targets) if draw(st.booleans())] or [[0, targets[0]]]
        op = f"%r = collective.permute %a on {on}, pairs = {pairs} : tensor<4x{cols}x{{t}}>"
        res = f"4x{cols}"
    elif kind == "all_to_all":
        res = f"{4 * g}x{cols // g}"
        op = (
            f"%r = collective.all_to_all %a on {on}, split_dim = 1, concat_dim = 0 : "
            f"(tensor<4x{cols}x{{t}}>) -> tensor<{res}x{{t}}>"
        )
    else:
        res = f"4x{cols * g}"
        op = f"%r = collective.all_gather %a on {on}, dim = 1 : (tensor<4x{cols}x{{t}}>) -> tensor<{res}x{{t}}>"
    if draw(st.booleans()):
        op = start_done(op, res)
    dtype = draw(st.sampled_from(["f32", "i32", "bf16"]))
    return one_op(devices, dtype, f"4x{cols}", res, op, mesh='"a"=2, "b"=2, "c"=2'), devices


@settings(deadline=None, max_examples=25, suppress_health_check=[HealthCheck.too_slow])
@given(moving_programs())
def test_random_data_movement_over_groups_matches_level_s(program):
    text, devices = program
    check(text, devices, exact=True)


@pytest.mark.slow
@pytest.mark.parametrize("chip", ["v5e", "v5p"])
def test_large_torus_all_reduce_time_against_the_cost_model(chip):
    """The cost model divides a k-axis collective's bandwidth term by k: the 2-D algorithm
    earns it (timing mode, 64 MiB over a 4x4 torus)."""
    size = 16 * 2**20
    text = one_op(
        16,
        "f32",
        str(size),
        str(size),
        f'%r = collective.all_reduce add %a on @m["a", "b"] : tensor<{size}x{{t}}>',
        mesh='"a"=4, "b"=4',
    )
    _, report = run_level_t(lower(text, chip), [[None, None]] * 16, chip=chip, values=False)
    level_s = parse(text)
    op = next(o for o in level_s.walk() if o.name == "collective.all_reduce")
    from shardc.interpreter.devices import module_mesh

    mesh = module_mesh(level_s)
    assert mesh is not None
    want = CostModel(get_chip(chip), mesh[1]).collective_time(op)  # pyright: ignore
    assert report["step_time_s"] / want == pytest.approx(1.0, abs=0.10)


@pytest.mark.slow
@pytest.mark.parametrize("chip", ["v5e", "v5p"])
@pytest.mark.parametrize("dtype", ["f32", "i32"])
def test_torus_all_reduce_in_pieces(chip, dtype):
    """Both halves' rings at once, each phase's chunks in pieces (1 KiB of VMEM)."""
    text = one_op(
        16,
        dtype,
        "16x64",
        "16x64",
        '%r = collective.all_reduce add %a on @m["a", "b"] : tensor<16x64x{t}>',
        mesh='"a"=4, "b"=4',
    )
    module, _ = check(text, 16, chip=chip, vmem_limit=1024)
    assert "%rs1_" in str(module) and "_piece_sem" in str(module)
