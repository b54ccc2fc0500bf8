"""Level S: every collective against hand-computed numpy, on 1-, 2-, 4-, 8-device, 2-D and 3-D meshes."""

from __future__ import annotations

import itertools
import os

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from shardc.interpreter.testing import run_global, run_per_device

BF16 = np.dtype(ml_dtypes.bfloat16)
NAMES = {
    np.dtype(np.float32): "f32",
    np.dtype(np.float64): "f64",
    np.dtype(np.float16): "f16",
    BF16: "bf16",
    np.dtype(np.int32): "i32",
    np.dtype(np.int64): "i64",
    np.dtype(np.bool_): "i1",
}


def ty(shape, dtype) -> str:
    return "tensor<" + "".join(f"{d}x" for d in shape) + NAMES[np.dtype(dtype)] + ">"


def program(
    mesh: list[tuple[str, int]], args: list[str], body: str, results: list[tuple[str, str]]
) -> str:
    axes = ", ".join(f'"{n}"={s}' for n, s in mesh)
    params = ", ".join(f"%x{i}: {t}" for i, t in enumerate(args))
    outs = ", ".join(t for _, t in results)
    names = ", ".join(n for n, _ in results)
    return f"""
spmd.mesh @m = <[{axes}]>
func.func @main({params}) -> ({outs}) attributes {{spmd.partitioned}} {{
{body}
  func.return {names} : {outs}
}}"""


def ref_groups(mesh: list[tuple[str, int]], axes: list[str]) -> list[list[int]]:
    """Devices sharing every coordinate but `axes`; rank row-major over `axes` as listed."""
    names = [n for n, _ in mesh]
    shape = [s for _, s in mesh]
    groups: dict[tuple[int, ...], dict[int, int]] = {}
    for d in range(int(np.prod(shape))):
        coords = np.unravel_index(d, shape)
        other = tuple(int(c) for n, c in zip(names, coords, strict=False) if n not in axes)
        rank = 0
        for a in axes:
            i = names.index(a)
            rank = rank * shape[i] + int(coords[i])
        groups.setdefault(other, {})[rank] = d
    return [[g[r] for r in range(len(g))] for g in groups.values()]


def rand(shape, dtype, rng) -> np.ndarray:
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.integers(0, 2, size=shape).astype(bool)
    if dtype.kind == "i":
        return rng.integers(-9, 9, size=shape).astype(dtype)
    return rng.standard_normal(size=shape).astype(np.float32).astype(dtype)


def combine(kind: str, xs: list[np.ndarray]) -> np.ndarray:
    """Hand reference: rank order, accumulating bf16/f16 in f32, one rounding."""
    dtype = xs[0].dtype
    if dtype == np.bool_:
        fn = {
            "add": np.logical_or,
            "mul": np.logical_and,
            "max": np.logical_or,
            "min": np.logical_and,
        }[kind]
        acc = xs[0]
        for x in xs[1:]:
            acc = fn(acc, x)
        return acc
    acc_t = np.float32 if dtype in (BF16, np.float16) else dtype
    fn = {"add": np.add, "mul": np.multiply, "max": np.maximum, "min": np.minimum}[kind]
    acc = xs[0].astype(acc_t)
    for x in xs[1:]:
        acc = fn(acc, x.astype(acc_t))
    return acc.astype(dtype)


def assert_bits(got, want) -> None:
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (
        got.dtype,
        got.shape,
        want.dtype,
        want.shape,
    )
    assert got.tobytes() == np.ascontiguousarray(want).tobytes(), (got, want)


MESHES = {
    "1": [("x", 1)],
    "2": [("x", 2)],
    "4": [("x", 4)],
    "8": [("x", 8)],
    "2x4": [("a", 2), ("b", 4)],
    "2x2x2": [("x", 2), ("y", 2), ("z", 2)],
}
CASES = [
    ("1", ["x"]),
    ("2", ["x"]),
    ("4", ["x"]),
    ("8", ["x"]),
    ("2x4", ["a"]),
    ("2x4", ["b"]),
    ("2x4", ["a", "b"]),
    ("2x4", ["b", "a"]),
    ("2x2x2", ["y"]),
    ("2x2x2", ["z", "x"]),
    ("2x2x2", ["x", "y", "z"]),
    ("2x2x2", ["z", "y", "x"]),
]


def on(axes: list[str]) -> str:
    return "on @m[" + ", ".join(f'"{a}"' for a in axes) + "]"


def devices_of(mesh) -> int:
    return int(np.prod([s for _, s in mesh]))


def test_ref_groups_match_design_example() -> None:
    # DESIGN.md: device (a, b) has id a*4 + b; on ["model"] groups share "data"
    assert ref_groups([("data", 2), ("model", 4)], ["model"]) == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert ref_groups([("data", 2), ("model", 4)], ["data"]) == [[0, 4], [1, 5], [2, 6], [3, 7]]
    assert ref_groups([("a", 2), ("b", 4)], ["b", "a"]) == [[0, 4, 1, 5, 2, 6, 3, 7]]


@pytest.mark.parametrize("start", [False, True])
@pytest.mark.parametrize("kind", ["add", "mul", "max", "min"])
@pytest.mark.parametrize("mesh_name,axes", CASES)
def test_all_reduce(mesh_name, axes, kind, start) -> None:
    mesh = MESHES[mesh_name]
    n = devices_of(mesh)
    rng = np.random.default_rng(n + len(axes))
    t = ty((3, 4), np.float32)
    if start:
        body = (
            f"  %f = collective.all_reduce_start {kind} %x0 {on(axes)} : {t} -> !collective.future<{t}>\n"
            f"  %r = collective.done %f : !collective.future<{t}> -> {t}"
        )
    else:
        body = f"  %r = collective.all_reduce {kind} %x0 {on(axes)} : {t}"
    xs = [rand((3, 4), np.float32, rng) for _ in range(n)]
    outs = run_per_device(program(mesh, [t], body, [("%r", t)]), [[x] for x in xs])
    for g in ref_groups(mesh, axes):
        want = combine(kind, [xs[d] for d in g])
        for d in g:
            assert_bits(outs[d][0], want)


@pytest.mark.parametrize(
    "dtype", [np.float32, np.float64, np.float16, BF16, np.int32, np.int64, np.bool_]
)
@pytest.mark.parametrize("kind", ["add", "mul", "max", "min"])
def test_all_reduce_dtypes(dtype, kind) -> None:
    mesh = MESHES["2x4"]
    rng = np.random.default_rng(7)
    t = ty((5,), dtype)
    xs = [rand((5,), dtype, rng) for _ in range(8)]
    body = f'  %r = collective.all_reduce {kind} %x0 on @m["b"] : {t}'
    outs = run_per_device(program(mesh, [t], body, [("%r", t)]), [[x] for x in xs])
    for g in ref_groups(mesh, ["b"]):
        want = combine(kind, [xs[d] for d in g])
        for d in g:
            assert_bits(outs[d][0], want)


def test_all_reduce_bf16_accumulates_in_f32() -> None:
    # device 0 holds 256, the 7 others 1: in bf16 each partial sum would round back to 256
    t = "tensor<2xbf16>"
    xs = [np.array([256.0, 1.0], BF16)] + [np.array([1.0, 1.0], BF16)] * 7
    outs = run_per_device(
        program(
            MESHES["8"], [t], f'  %r = collective.all_reduce add %x0 on @m["x"] : {t}', [("%r", t)]
        ),
        [[x] for x in xs],
    )
    sequential_bf16 = np.array(256.0, BF16)
    for _ in range(7):
        sequential_bf16 = np.array(sequential_bf16 + np.array(1.0, BF16), BF16)
    assert float(sequential_bf16) == 256.0
    assert outs[0][0].astype(np.float32).tolist() == [264.0, 8.0]  # 263 rounds to even 264


def test_all_reduce_variadic() -> None:
    mesh = MESHES["2x4"]
    rng = np.random.default_rng(3)
    t1, t2 = ty((2, 3), np.float32), ty((4,), np.int32)
    body = f'  %a, %b = collective.all_reduce add %x0, %x1 on @m["a"] : {t1}, {t2}'
    args = [[rand((2, 3), np.float32, rng), rand((4,), np.int32, rng)] for _ in range(8)]
    outs = run_per_device(program(mesh, [t1, t2], body, [("%a", t1), ("%b", t2)]), args)
    for g in ref_groups(mesh, ["a"]):
        for d in g:
            assert_bits(outs[d][0], combine("add", [args[m][0] for m in g]))
            assert_bits(outs[d][1], combine("add", [args[m][1] for m in g]))
    # start form of the variadic all_reduce
    fut = f"!collective.future<{t1}, {t2}>"
    body = (
        f'  %f = collective.all_reduce_start max %x0, %x1 on @m["a"] : {t1}, {t2} -> {fut}\n'
        f"  %a, %b = collective.done %f : {fut} -> {t1}, {t2}"
    )
    outs = run_per_device(program(mesh, [t1, t2], body, [("%a", t1), ("%b", t2)]), args)
    for g in ref_groups(mesh, ["a"]):
        for d in g:
            assert_bits(outs[d][1], combine("max", [args[m][1] for m in g]))


@pytest.mark.parametrize("start", [False, True])
@pytest.mark.parametrize("dim", [0, 1])
@pytest.mark.parametrize("mesh_name,axes", CASES)
def test_all_gather(mesh_name, axes, dim, start) -> None:
    mesh = MESHES[mesh_name]
    n = devices_of(mesh)
    g_size = len(ref_groups(mesh, axes)[0])
    rng = np.random.default_rng(11)
    shape = (2, 3)
    out_shape = list(shape)
    out_shape[dim] *= g_size
    t, r = ty(shape, np.float32), ty(out_shape, np.float32)
    if start:
        body = (
            f"  %f = collective.all_gather_start %x0 {on(axes)}, dim = {dim} : ({t}) -> !collective.future<{r}>\n"
            f"  %r = collective.done %f : !collective.future<{r}> -> {r}"
        )
    else:
        body = f"  %r = collective.all_gather %x0 {on(axes)}, dim = {dim} : ({t}) -> {r}"
    xs = [rand(shape, np.float32, rng) for _ in range(n)]
    outs = run_per_device(program(mesh, [t], body, [("%r", r)]), [[x] for x in xs])
    for g in ref_groups(mesh, axes):
        want = np.concatenate([xs[d] for d in g], axis=dim)
        for d in g:
            assert_bits(outs[d][0], want)


def test_all_gather_variadic_dtypes() -> None:
    mesh = MESHES["4"]
    rng = np.random.default_rng(5)
    t1, t2 = ty((2, 2), BF16), ty((1,), np.bool_)
    r1, r2 = ty((8, 2), BF16), ty((4,), np.bool_)
    body = f'  %a, %b = collective.all_gather %x0, %x1 on @m["x"], dim = 0 : ({t1}, {t2}) -> ({r1}, {r2})'
    args = [[rand((2, 2), BF16, rng), rand((1,), np.bool_, rng)] for _ in range(4)]
    outs = run_per_device(program(mesh, [t1, t2], body, [("%a", r1), ("%b", r2)]), args)
    for d in range(4):
        assert_bits(outs[d][0], np.concatenate([a[0] for a in args]))
        assert_bits(outs[d][1], np.concatenate([a[1] for a in args]))


@pytest.mark.parametrize("start", [False, True])
@pytest.mark.parametrize("kind", ["add", "max"])
@pytest.mark.parametrize("mesh_name,axes", CASES)
def test_reduce_scatter(mesh_name, axes, kind, start) -> None:
    mesh = MESHES[mesh_name]
    n = devices_of(mesh)
    g_size = len(ref_groups(mesh, axes)[0])
    rng = np.random.default_rng(13)
    shape, out_shape = (3, 2 * g_size), (3, 2)
    t, r = ty(shape, np.float32), ty(out_shape, np.float32)
    if start:
        body = (
            f"  %f = collective.reduce_scatter_start {kind} %x0 {on(axes)}, dim = 1 : ({t}) -> !collective.future<{r}>\n"
            f"  %r = collective.done %f : !collective.future<{r}> -> {r}"
        )
    else:
        body = f"  %r = collective.reduce_scatter {kind} %x0 {on(axes)}, dim = 1 : ({t}) -> {r}"
    xs = [rand(shape, np.float32, rng) for _ in range(n)]
    outs = run_per_device(program(mesh, [t], body, [("%r", r)]), [[x] for x in xs])
    for g in ref_groups(mesh, axes):
        full = combine(kind, [xs[d] for d in g])
        for rank, d in enumerate(g):
            assert_bits(outs[d][0], full[:, 2 * rank : 2 * rank + 2])


def test_reduce_scatter_variadic_bf16() -> None:
    mesh = MESHES["2x2x2"]
    rng = np.random.default_rng(17)
    axes = ["y", "x"]
    t1, r1 = ty((8, 1), BF16), ty((2, 1), BF16)
    t2, r2 = ty((4,), np.int64), ty((1,), np.int64)
    body = f"  %a, %b = collective.reduce_scatter add %x0, %x1 {on(axes)}, dim = 0 : ({t1}, {t2}) -> ({r1}, {r2})"
    args = [[rand((8, 1), BF16, rng), rand((4,), np.int64, rng)] for _ in range(8)]
    outs = run_per_device(program(mesh, [t1, t2], body, [("%a", r1), ("%b", r2)]), args)
    for g in ref_groups(mesh, axes):
        f1 = combine("add", [args[d][0] for d in g])
        f2 = combine("add", [args[d][1] for d in g])
        for rank, d in enumerate(g):
            assert_bits(outs[d][0], f1[2 * rank : 2 * rank + 2])
            assert_bits(outs[d][1], f2[rank : rank + 1])


def ref_all_to_all(xs, g, split, concat):
    n = len(g)
    blocks = {s: np.split(xs[s], n, axis=split) for s in g}
    return {d: np.concatenate([blocks[s][r] for s in g], axis=concat) for r, d in enumerate(g)}


@pytest.mark.parametrize("start", [False, True])
@pytest.mark.parametrize("split,concat", [(1, 0), (0, 1), (1, 1)])
@pytest.mark.parametrize("mesh_name,axes", CASES)
def test_all_to_all(mesh_name, axes, split, concat, start) -> None:
    mesh = MESHES[mesh_name]
    n = devices_of(mesh)
    g_size = len(ref_groups(mesh, axes)[0])
    rng = np.random.default_rng(19)
    shape = [2 * g_size, 2 * g_size]
    out_shape = list(shape)
    out_shape[split] //= g_size
    out_shape[concat] *= g_size
    t, r = ty(shape, np.float32), ty(out_shape, np.float32)
    spec = f"{on(axes)}, split_dim = {split}, concat_dim = {concat}"
    if start:
        body = (
            f"  %f = collective.all_to_all_start %x0 {spec} : ({t}) -> !collective.future<{r}>\n"
            f"  %r = collective.done %f : !collective.future<{r}> -> {r}"
        )
    else:
        body = f"  %r = collective.all_to_all %x0 {spec} : ({t}) -> {r}"
    xs = [rand(tuple(shape), np.float32, rng) for _ in range(n)]
    outs = run_per_device(program(mesh, [t], body, [("%r", r)]), [[x] for x in xs])
    for g in ref_groups(mesh, axes):
        want = ref_all_to_all(xs, g, split, concat)
        for d in g:
            assert_bits(outs[d][0], want[d])


def ref_permute(xs, g, pairs):
    out = {d: np.zeros_like(xs[d]) for d in g}
    for s, t in pairs:
        out[g[t]] = xs[g[s]]
    return out


@pytest.mark.parametrize("start", [False, True])
@pytest.mark.parametrize("shift", [1, -1, 2, 5])
@pytest.mark.parametrize("mesh_name,axes", CASES)
def test_permute_shift(mesh_name, axes, shift, start) -> None:
    mesh = MESHES[mesh_name]
    n = devices_of(mesh)
    g_size = len(ref_groups(mesh, axes)[0])
    rng = np.random.default_rng(23)
    t = ty((2, 3), np.float32)
    if start:
        body = (
            f"  %f = collective.permute_start %x0 {on(axes)}, shift = {shift} : {t} -> !collective.future<{t}>\n"
            f"  %r = collective.done %f : !collective.future<{t}> -> {t}"
        )
    else:
        body = f"  %r = collective.permute %x0 {on(axes)}, shift = {shift} : {t}"
    xs = [rand((2, 3), np.float32, rng) for _ in range(n)]
    outs = run_per_device(program(mesh, [t], body, [("%r", t)]), [[x] for x in xs])
    pairs = [(r, (r + shift) % g_size) for r in range(g_size)]
    for g in ref_groups(mesh, axes):
        want = ref_permute(xs, g, pairs)
        for d in g:
            assert_bits(outs[d][0], want[d])


@pytest.mark.parametrize("dtype", [np.float32, BF16, np.int32, np.bool_])
def test_permute_pairs_zero_fill(dtype) -> None:
    mesh = MESHES["2x4"]
    rng = np.random.default_rng(29)
    t = ty((3,), dtype)
    pairs = [(0, 2), (2, 3), (3, 0)]  # rank 1 receives nothing
    body = f'  %r = collective.permute %x0 on @m["b"], pairs = [[0, 2], [2, 3], [3, 0]] : {t}'
    xs = [rand((3,), dtype, rng) for _ in range(8)]
    outs = run_per_device(program(mesh, [t], body, [("%r", t)]), [[x] for x in xs])
    for g in ref_groups(mesh, ["b"]):
        want = ref_permute(xs, g, pairs)
        for d in g:
            assert_bits(outs[d][0], want[d])
    assert not np.any(outs[1][0]) and not np.any(outs[5][0])


def test_explicit_groups() -> None:
    mesh = [("all", 8)]
    groups = [[3, 1, 7, 5], [0, 6, 2, 4]]  # rank = position in the list
    spec = "on groups [[3, 1, 7, 5], [0, 6, 2, 4]]"
    rng = np.random.default_rng(31)
    t, r, s = ty((2, 4), np.float32), ty((8, 4), np.float32), ty((2, 1), np.float32)
    body = "\n".join(
        [
            f"  %ar = collective.all_reduce add %x0 {spec} : {t}",
            f"  %ag = collective.all_gather %x0 {spec}, dim = 0 : ({t}) -> {r}",
            f"  %rs = collective.reduce_scatter add %x0 {spec}, dim = 1 : ({t}) -> {s}",
            f"  %pm = collective.permute %x0 {spec}, shift = 1 : {t}",
            f"  %pp = collective.permute %x0 {spec}, pairs = [[1, 0]] : {t}",
        ]
    )
    xs = [rand((2, 4), np.float32, rng) for _ in range(8)]
    outs = run_per_device(
        program(mesh, [t], body, [("%ar", t), ("%ag", r), ("%rs", s), ("%pm", t), ("%pp", t)]),
        [[x] for x in xs],
    )
    for g in groups:
        full = combine("add", [xs[d] for d in g])
        perm = ref_permute(xs, g, [(i, (i + 1) % 4) for i in range(4)])
        pp = ref_permute(xs, g, [(1, 0)])
        for rank, d in enumerate(g):
            assert_bits(outs[d][0], full)
            assert_bits(outs[d][1], np.concatenate([xs[m] for m in g]))
            assert_bits(outs[d][2], full[:, rank : rank + 1])
            assert_bits(outs[d][3], perm[d])
            assert_bits(outs[d][4], pp[d])


def test_axis_index_and_dynamic_slice_by_coordinate() -> None:
    # each device takes its own block of a replicated input: x[b*2 : b*2+2, a*3 : a*3+3]
    text = """
spmd.mesh @m = <["a"=2, "b"=4]>
func.func @main(%x: tensor<8x6xf32>) -> (tensor<2x3xf32>, tensor<i32>, tensor<i64>) attributes {spmd.partitioned} {
  %a = spmd.axis_index @m["a"] : tensor<i32>
  %b = spmd.axis_index @m["b"] : tensor<i64>
  %two = hlo.constant dense<2> : tensor<i64>
  %three = hlo.constant dense<3> : tensor<i32>
  %i = hlo.mul %b, %two : tensor<i64>
  %j = hlo.mul %a, %three : tensor<i32>
  %r = hlo.dynamic_slice %x [%i, %j] sizes = [2, 3] : (tensor<8x6xf32>, tensor<i64>, tensor<i32>) -> tensor<2x3xf32>
  func.return %r, %a, %b : tensor<2x3xf32>, tensor<i32>, tensor<i64>
}"""
    x = np.arange(48, dtype=np.float32).reshape(8, 6)
    outs = run_per_device(text, [[x]] * 8)
    for d in range(8):
        a, b = divmod(d, 4)
        assert_bits(outs[d][0], x[b * 2 : b * 2 + 2, a * 3 : a * 3 + 3])
        assert outs[d][1].dtype == np.int32 and int(outs[d][1]) == a
        assert outs[d][2].dtype == np.int64 and int(outs[d][2]) == b


# The shared example ---------------------------------------------------------------------


def _collectives_example() -> str:
    root = os.path.join(os.path.dirname(__file__), "..", "..")
    for path in (
        # the shared copy beside the repository (as CI lays it out), then the packaged one
        os.path.join(root, "..", "shared", "examples", "collectives.mlir"),
        os.path.join(root, "examples", "collectives.mlir"),
    ):
        if os.path.exists(path):
            return open(path).read()
    pytest.skip("collectives.mlir not found")


def test_collectives_example_against_numpy() -> None:
    rng = np.random.default_rng(0)
    a = rng.standard_normal((8, 8)).astype(np.float32)
    out = run_global(_collectives_example(), {"in_0": a})
    blocks = [a[2 * r : 2 * r + 2] for r in range(4)]  # device r holds rows 2r..2r+1
    total = combine("add", blocks)
    assert_bits(out["out_0"], total)  # all_reduce, replicated
    assert_bits(out["out_1"], a)  # all_gather along rows, replicated
    assert_bits(out["out_2"], total)  # reduce_scatter along columns, assembled by column block
    assert_bits(out["out_3"], a)  # all_to_all: device r gets column block r of every row block
    assert_bits(out["out_4"], np.roll(a, 2, axis=0))  # permute shift 1: device r holds block r-1


# Algebraic identities (hypothesis) ------------------------------------------------------

MESH_AXES = [
    ([("x", 1)], ["x"]),
    ([("x", 2)], ["x"]),
    ([("x", 4)], ["x"]),
    ([("x", 8)], ["x"]),
    ([("a", 2), ("b", 4)], ["b"]),
    ([("a", 2), ("b", 4)], ["a"]),
    ([("a", 2), ("b", 4)], ["b", "a"]),
    ([("x", 2), ("y", 2), ("z", 2)], ["z", "x"]),
]

settings.register_profile(
    "interpreter", max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


@st.composite
def setups(draw, rank_min: int = 1):
    mesh, axes = draw(st.sampled_from(MESH_AXES))
    g = len(ref_groups(mesh, axes)[0])
    rank = draw(st.integers(rank_min, 3))
    dims = draw(st.lists(st.integers(1, 3), min_size=rank, max_size=rank))
    dtype = draw(st.sampled_from([np.float32, BF16, np.int32, np.float16]))
    seed = draw(st.integers(0, 2**16))
    return mesh, axes, g, dims, np.dtype(dtype), seed


@settings(settings.get_profile("interpreter"))
@given(setups(), st.data())
def test_property_all_gather_after_reduce_scatter_is_all_reduce(setup, data) -> None:
    mesh, axes, g, dims, dtype, seed = setup
    dim = data.draw(st.integers(0, len(dims) - 1))
    kind = data.draw(st.sampled_from(["add", "max", "min", "mul"]))
    shape = list(dims)
    shape[dim] *= g
    local = list(shape)
    local[dim] //= g
    t, s = ty(shape, dtype), ty(local, dtype)
    body = (
        f"  %rs = collective.reduce_scatter {kind} %x0 {on(axes)}, dim = {dim} : ({t}) -> {s}\n"
        f"  %ag = collective.all_gather %rs {on(axes)}, dim = {dim} : ({s}) -> {t}\n"
        f"  %ar = collective.all_reduce {kind} %x0 {on(axes)} : {t}"
    )
    rng = np.random.default_rng(seed)
    xs = [rand(tuple(shape), dtype, rng) for _ in range(devices_of(mesh))]
    outs = run_per_device(program(mesh, [t], body, [("%ag", t), ("%ar", t)]), [[x] for x in xs])
    for ag, ar in outs:
        assert_bits(ag, ar)


@settings(settings.get_profile("interpreter"))
@given(setups(rank_min=2), st.data())
def test_property_all_to_all_twice_with_swapped_dims_is_identity(setup, data) -> None:
    mesh, axes, g, dims, dtype, seed = setup
    split = data.draw(st.integers(0, len(dims) - 1))
    concat = data.draw(st.integers(0, len(dims) - 1))
    shape = list(dims)
    shape[split] *= g
    mid = list(shape)
    mid[split] //= g
    mid[concat] *= g
    t, m = ty(shape, dtype), ty(mid, dtype)
    body = (
        f"  %y = collective.all_to_all %x0 {on(axes)}, split_dim = {split}, concat_dim = {concat} : ({t}) -> {m}\n"
        f"  %z = collective.all_to_all %y {on(axes)}, split_dim = {concat}, concat_dim = {split} : ({m}) -> {t}"
    )
    rng = np.random.default_rng(seed)
    xs = [rand(tuple(shape), dtype, rng) for _ in range(devices_of(mesh))]
    outs = run_per_device(program(mesh, [t], body, [("%z", t)]), [[x] for x in xs])
    for x, (z,) in zip(xs, outs, strict=False):
        assert_bits(z, x)


@settings(settings.get_profile("interpreter"))
@given(setups(), st.integers(-9, 9))
def test_property_permute_k_then_minus_k_is_identity(setup, k) -> None:
    mesh, axes, g, dims, dtype, seed = setup
    t = ty(dims, dtype)
    body = (
        f"  %y = collective.permute %x0 {on(axes)}, shift = {k} : {t}\n"
        f"  %z = collective.permute_start %y {on(axes)}, shift = {-k} : {t} -> !collective.future<{t}>\n"
        f"  %w = collective.done %z : !collective.future<{t}> -> {t}"
    )
    rng = np.random.default_rng(seed)
    xs = [rand(tuple(dims), dtype, rng) for _ in range(devices_of(mesh))]
    outs = run_per_device(program(mesh, [t], body, [("%w", t)]), [[x] for x in xs])
    for x, (w,) in zip(xs, outs, strict=False):
        assert_bits(w, x)


def test_groups_partition_devices_for_every_case() -> None:
    for mesh_name, axes in CASES:
        mesh = MESHES[mesh_name]
        groups = ref_groups(mesh, axes)
        assert sorted(itertools.chain(*groups)) == list(range(devices_of(mesh)))
