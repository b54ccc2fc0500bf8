"""
`lower-to-tpu` of complex<f32> / complex<f64> all_reduce and reduce_scatter of kind mul, max
and min (issue 15 item 3, lowering/pair_combine.py: the rings combine each (re, im) pair of
the parts' view as one complex number), sync and as a `_start` and its `done`, over one
axis (a line, a ring both ways), two and three axes (a 2-D torus's parts, phases through
VMEM), explicit groups, and chunks cut into pieces. Level T (the simulator) and level S
(the interpreter) are each compared with an independent numpy reference: the product of a
group's values in a wider type (complex128 for complex<f32>, clongdouble for
complex<f64>), the lexicographic max / min on (real, imaginary) computed here. The ring
multiplies in another order than level S's rank order: products agree to a few ulps of
the product of the moduli per factor; max / min exactly (no equal values with signed
zeros, whose pick depends on the order); a NaN part propagates at both levels.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from shardc.dialects import make_context
from shardc.interpreter.level_t import run_level_t
from shardc.interpreter.testing import parse, run_per_device
from shardc.lowering.lower_to_tpu import LowerToTpuPass
from shardc.tests.unit.test_lower_to_tpu import one_op, start_done

TYPES = {"complex<f32>": np.complex64, "complex<f64>": np.complex128}
WIDE = {"complex<f32>": np.complex128, "complex<f64>": np.clongdouble}


def run_levels(text: str, rows: list[list[np.ndarray]], chip: str, **options) -> tuple[list, list]:
    """(level S's first output, level T's first output) per device."""
    want = run_per_device(text, rows)
    module = parse(text)
    LowerToTpuPass(chip=chip, **options).apply(make_context(), module)
    module.verify()
    (kernel,) = [o for o in module.body.block.ops if o.name == "func.func"]
    k, m, s = (a.value.data for a in kernel.attributes["tpu.io"].data)
    outs, _ = run_level_t(module, [list(r) + [None] * (m + s) for r in rows], chip=chip)
    return [np.asarray(w[0]) for w in want], [o[k] for o in outs]


def draw(rng: np.random.Generator, kind: str, shape: tuple[int, ...], ctype: str) -> np.ndarray:
    """Factors of modulus in [0.5, 2] (a product of 8 stays in range) for mul; for max /
    min real parts from {-1, 0, 1} (so the imaginary parts often decide) and normal
    imaginary parts."""
    if kind == "mul":
        z = rng.uniform(0.5, 2.0, shape) * np.exp(1j * rng.uniform(-np.pi, np.pi, shape))
    else:
        z = rng.integers(-1, 2, shape) + 1j * rng.standard_normal(shape)
    return z.astype(TYPES[ctype])


def lexicographic(values: list[np.ndarray], larger: bool) -> np.ndarray:
    """The max (`larger`) or min of `values` elementwise in the order of (real part,
    imaginary part); no NaN among them."""
    best = values[0].copy()
    for v in values[1:]:
        if larger:
            better = (v.real > best.real) | ((v.real == best.real) & (v.imag > best.imag))
        else:
            better = (v.real < best.real) | ((v.real == best.real) & (v.imag < best.imag))
        best = np.where(better, v, best)
    return best


def reference(kind: str, values: list[np.ndarray], ctype: str) -> np.ndarray:
    """The group's reduction, independent of the code under test (wide for products)."""
    if kind == "mul":
        out = np.ones(values[0].shape, WIDE[ctype])
        for v in values:
            out = out * v.astype(WIDE[ctype])
        return out
    return lexicographic(values, kind == "max")


def assert_matches(got: np.ndarray, ref: np.ndarray, kind: str, values, ctype: str) -> None:
    """`got` against the reference: a product within 4 ulps of the product of the moduli
    per factor (normwise), max / min exactly."""
    assert got.dtype == TYPES[ctype] and got.shape == ref.shape
    if kind != "mul":
        assert np.array_equal(got, ref.astype(got.dtype)), (got, ref)
        return
    eps = float(np.finfo(got.real.dtype).eps)
    scale = np.prod([np.abs(v.astype(np.complex128)) for v in values], axis=0)
    err = np.abs(got.astype(WIDE[ctype]) - ref).astype(np.float64)
    assert np.all(err <= 4 * len(values) * eps * scale), np.max(err / scale) / eps


CONFIGS = {
    # name: (mesh, `on`, chip, options, groups (device ids in rank order))
    "line": ('"x"=4', '@m["x"]', "v5e", {}, [[0, 1, 2, 3]]),
    "ring_both_ways": ('"x"=4', '@m["x"]', "v5p", {}, [[0, 1, 2, 3]]),
    "pieces_both_ways": (
        '"x"=4',
        '@m["x"]',
        "v5e",
        {"bidirectional": True, "vmem_limit": 512},
        [[0, 1, 2, 3]],
    ),
    "torus_parts": ('"a"=2, "b"=2', '@m["a", "b"]', "v5e", {}, [[0, 1, 2, 3]]),
    "two_axes": ('"a"=2, "b"=4', '@m["a", "b"]', "v5p", {}, [list(range(8))]),
    "minor_axis": ('"a"=2, "b"=4', '@m["b"]', "v5e", {}, [[0, 1, 2, 3], [4, 5, 6, 7]]),
    "major_axis": ('"a"=2, "b"=2, "c"=2', '@m["c", "a"]', "v5e", {}, None),
    "groups": ('"x"=4', "groups [[0, 2], [3, 1]]", "v5e", {}, [[0, 2], [3, 1]]),
}
FORMS = {
    # name: (operand shape, result shape for a group of g, op text)
    "all_reduce": lambda g: ("8x24", "8x24", "all_reduce {k} %a on {on} : tensor<8x24x{{t}}>"),
    "all_reduce_tail": lambda g: ("5x3", "5x3", "all_reduce {k} %a on {on} : tensor<5x3x{{t}}>"),
    "reduce_scatter_dim0": lambda g: (
        f"{4 * g}x16",
        "4x16",
        f"reduce_scatter {{k}} %a on {{on}}, dim = 0 : (tensor<{4 * g}x16x{{{{t}}}}>) -> tensor<4x16x{{{{t}}}}>",
    ),
    "reduce_scatter_dim1": lambda g: (
        f"6x{2 * g}",
        "6x2",
        f"reduce_scatter {{k}} %a on {{on}}, dim = 1 : (tensor<6x{2 * g}x{{{{t}}}}>) -> tensor<6x2x{{{{t}}}}>",
    ),
}


def mesh_groups(mesh: str, on: str) -> list[list[int]]:
    """The groups (device ids in rank order) of a collective over mesh axes `on`: the
    devices agreeing on the other axes, ranked row-major over the listed axes in order."""
    names = [p.split("=")[0].strip().strip('"') for p in mesh.split(",")]
    sizes = [int(p.split("=")[1]) for p in mesh.split(",")]
    axes = [a.strip().strip('"') for a in on.removeprefix("@m[").removesuffix("]").split(",")]
    groups: dict[tuple, list[tuple[tuple, int]]] = {}
    for dev in range(math.prod(sizes)):
        coords = np.unravel_index(dev, sizes)
        rest = tuple(int(c) for n, c in zip(names, coords, strict=True) if n not in axes)
        rank = tuple(int(coords[names.index(a)]) for a in axes)
        groups.setdefault(rest, []).append((rank, dev))
    return [[d for _, d in sorted(g)] for g in groups.values()]


def program(config: str, form: str, kind: str, ctype: str, asynchronous: bool) -> tuple:
    """(text, devices, chip, options, groups, operand shape, scattered dim or None)."""
    mesh, on, chip, options, groups = CONFIGS[config]
    groups = groups or mesh_groups(mesh, on)
    g = len(groups[0])
    arg, res, op = FORMS[form](g)
    op = "%r = collective." + op.format(k=kind, on=on)
    if asynchronous:
        op = start_done(op, res)
    devices = math.prod(int(p.split("=")[1]) for p in mesh.split(","))
    dim = None if form.startswith("all_reduce") else int(form[-1])
    shape = tuple(int(s) for s in arg.split("x"))
    return (
        one_op(devices, ctype, arg, res, op, mesh=mesh),
        devices,
        chip,
        options,
        groups,
        shape,
        dim,
    )


@pytest.mark.parametrize("ctype", sorted(TYPES))
@pytest.mark.parametrize("kind", ["mul", "max", "min"])
@pytest.mark.parametrize(
    "config, form, asynchronous",
    [
        ("line", "all_reduce", False),
        ("line", "all_reduce_tail", True),
        ("ring_both_ways", "reduce_scatter_dim0", False),
        ("ring_both_ways", "all_reduce", True),
        ("pieces_both_ways", "reduce_scatter_dim0", True),
        ("pieces_both_ways", "all_reduce", False),
        ("torus_parts", "all_reduce", False),
        ("two_axes", "reduce_scatter_dim0", False),
        ("two_axes", "all_reduce_tail", False),
        ("minor_axis", "all_reduce", True),
        ("major_axis", "reduce_scatter_dim1", False),
        ("groups", "reduce_scatter_dim0", True),
    ],
)
def test_complex_reductions_match_level_s_and_numpy(
    config: str, form: str, asynchronous: bool, kind: str, ctype: str
) -> None:
    text, devices, chip, options, groups, shape, dim = program(
        config, form, kind, ctype, asynchronous
    )
    rng = np.random.default_rng(sum(map(ord, config + form + kind + ctype)))
    rows = [[draw(rng, kind, shape, ctype)] for _ in range(devices)]
    level_s, level_t = run_levels(text, rows, chip, **options)
    for group in groups:
        values = [rows[d][0] for d in group]
        full = reference(kind, values, ctype)
        for rank, d in enumerate(group):
            want, k = full, 0 if dim is None else shape[dim] // len(group)
            if dim is not None:
                want = np.take(full, range(rank * k, (rank + 1) * k), axis=dim)
            mine = values
            if dim is not None:
                mine = [np.take(v, range(rank * k, (rank + 1) * k), axis=dim) for v in values]
            assert_matches(level_s[d], want, kind, mine, ctype)
            assert_matches(level_t[d], want, kind, mine, ctype)


@pytest.mark.parametrize("ctype", sorted(TYPES))
@pytest.mark.parametrize("kind", ["max", "min"])
def test_a_nan_part_propagates_as_at_level_s(kind: str, ctype: str) -> None:
    """numpy's complex maximum / minimum keep a value with a NaN part: wherever one device
    has one, the result has a NaN part at both levels; elsewhere they are equal."""
    text, devices, chip, options, _, shape, _ = program("line", "all_reduce", kind, ctype, False)
    rng = np.random.default_rng(7)
    rows = [[draw(rng, kind, shape, ctype)] for _ in range(devices)]
    for d, (row,) in enumerate(rows):
        hit = rng.random(shape) < 0.1
        part = row.imag if d % 2 else row.real
        part[hit] = np.nan
    level_s, level_t = run_levels(text, rows, chip, **options)
    some_nan = np.any([np.isnan(r[0].real) | np.isnan(r[0].imag) for r in rows], axis=0)
    assert some_nan.any() and not some_nan.all()
    for s, t in zip(level_s, level_t, strict=True):
        for got in (s, t):
            assert np.array_equal(np.isnan(got.real) | np.isnan(got.imag), some_nan)
        assert np.array_equal(s[~some_nan], t[~some_nan])


@pytest.mark.parametrize("form", ["all_reduce", "reduce_scatter_dim0"])
def test_pieces_and_directions_cut_no_pair(form: str) -> None:
    """With 512 bytes of VMEM both ways round, the rings run in pieces (more combines
    than one piece's two rings, each peeled step 0 and a loop), their blocks whole pairs:
    every combine loads [..., 1] parts out of [..., 2] blocks."""
    from shardc.tests.unit.test_lower_to_tpu import lower

    text, _, chip, options, *_ = program("pieces_both_ways", form, "mul", "complex<f32>", False)
    module = str(lower(text, chip, **options))
    assert "_l_recv_sems" in module
    stores = [line for line in module.splitlines() if "tpu.store %mul_" in line]
    assert len(stores) > 2 * 2 * 2  # re and im, two rings, step 0 and the loop: one piece
    pair = re.compile(r"x2xf32, #tpu.memory_space<vmem>>, vector<(\d+x)*1xf32>$")
    assert all(pair.search(line) for line in stores)


@pytest.mark.parametrize("kind", ["mul", "max"])
def test_a_start_interleaved_into_compute_combines_pairs(kind: str) -> None:
    """An all_reduce_start over complex pairs with a tiled loop before its `done`: its
    ring steps (each step's loads, combine and stores of the parts) placed into the loop
    (lowering/ring_steps.py) give the sync collective's values."""
    c, r = "tensor<64x128xcomplex<f32>>", "tensor<64x128xf32>"
    future = f"!collective.future<{c}>"
    text = f"""spmd.mesh @m = <["x"=4]>
func.func @main(%a: {c}, %b: {r}) -> ({c}, {r}) attributes {{spmd.per_device_io}} {{
  %f = collective.all_reduce_start {kind} %a on @m["x"] : {c} -> {future}
  %e = hlo.exp %b : {r}
  %x = collective.done %f : {future} -> {c}
  func.return %x, %e : {c}, {r}
}}"""
    rng = np.random.default_rng(11)
    rows = [
        [draw(rng, kind, (64, 128), "complex<f32>"), rng.standard_normal((64, 128), np.float32)]
        for _ in range(4)
    ]
    want = run_per_device(text, rows)
    module = parse(text)
    LowerToTpuPass(chip="v5e", vmem_limit=64 * 1024).apply(make_context(), module)
    assert "scf.if" in str(module)  # steps placed into the exp's loop
    (kernel,) = [o for o in module.body.block.ops if o.name == "func.func"]
    k, m, s = (a.value.data for a in kernel.attributes["tpu.io"].data)
    outs, _ = run_level_t(module, [list(row) + [None] * (m + s) for row in rows], chip="v5e")
    full = reference(kind, [row[0] for row in rows], "complex<f32>")
    for d in range(4):
        assert_matches(outs[d][k], full, kind, [row[0] for row in rows], "complex<f32>")
        assert_matches(np.asarray(want[d][0]), full, kind, [row[0] for row in rows], "complex<f32>")
