"""
`lower-to-tpu` of the hlo data-movement ops (lowering/movement.py): reshape, slice (unit,
divisible and non-divisible strides), concatenate, dynamic_slice and dynamic_update_slice
become HBM-to-HBM DMAs whose level-T results are bit-identical to level S's, on every
device (each device with its own inputs and offsets, clamping included), with none of the
simulator's diagnostics (a race, an unwaited DMA or a non-zero semaphore raises).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from shardc.diagnostics import OpPassError
from shardc.dialects import make_context
from shardc.interpreter.level_t import run_level_t
from shardc.interpreter.testing import parse, run_per_device
from shardc.interpreter.values import dtype_of, random_array
from shardc.lowering.lower_to_tpu import LowerToTpuPass

DEVICES = 2
DTYPES = ["f32", "bf16", "i32", "i64", "f16", "i1"]
SETTINGS = settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def program(args: list[str], results: list[str], body: str) -> str:
    """A per-device function of `args` (`%a0`, ..) returning `%r0`, ..: tensor types."""
    params = ", ".join(f"%a{i}: {t}" for i, t in enumerate(args))
    rets = ", ".join(f"%r{i}" for i in range(len(results)))
    return f"""
spmd.mesh @m = <["x"={DEVICES}]>
func.func @main({params}) -> ({", ".join(results)}) attributes {{spmd.per_device_io}} {{
  {body}
  func.return {rets} : {", ".join(results)}
}}
"""


def tensor(shape: list[int], dtype: str) -> str:
    return f"tensor<{''.join(f'{d}x' for d in shape)}{dtype}>"


def check(
    text: str,
    inputs: list[list[np.ndarray]],
    vmem_limit: int | None = None,
    same: Callable[[np.ndarray, np.ndarray], bool] | None = None,
) -> str:
    """Lower, run at level T, compare bit for bit with level S (or by `same`); the lowered
    text. With a `vmem_limit` too small for even the smallest blocks, lowered at the
    default instead."""
    want = run_per_device(text, inputs)
    module = parse(text)
    try:
        LowerToTpuPass(vmem_limit=vmem_limit).apply(make_context(), module)
    except OpPassError as err:
        assert vmem_limit is not None and "bytes of VMEM" in str(err), err
        module = parse(text)
        LowerToTpuPass().apply(make_context(), module)
    module.verify()
    (kernel,) = [o for o in module.body.block.ops if o.name == "func.func"]
    k, m, s = (a.value.data for a in kernel.attributes["tpu.io"].data)
    outs, _ = run_level_t(module, [list(row) + [None] * (m + s) for row in inputs])
    for d in range(DEVICES):
        for i in range(m):
            got, exp = outs[d][k + i], np.asarray(want[d][i])
            assert got.dtype == exp.dtype and got.shape == exp.shape, (d, i)
            equal = got.tobytes() == exp.tobytes() if same is None else same(got, exp)
            assert equal, f"device {d} result {i}: {got} != {exp}"
    return str(module)


def randoms(shape: list[int], dtype: str, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [random_array(rng, tuple(shape), dtype_of(parse_type(dtype))) for _ in range(DEVICES)]


def parse_type(dtype: str):
    from xdsl.dialects.builtin import TensorType

    module = parse(f"func.func @f(%x: tensor<{dtype}>) {{\n  func.return\n}}")
    (f,) = module.body.block.ops
    ty = f.function_type.inputs.data[0]
    assert isinstance(ty, TensorType)
    return ty.element_type


def scalars(values: list[int], dtype: str = "i32") -> list[np.ndarray]:
    """One rank-0 offset per device."""
    return [np.array(v, dtype=dtype_of(parse_type(dtype))) for v in values]


def rows(*per_arg: list[np.ndarray]) -> list[list[np.ndarray]]:
    """Per-argument lists (one array per device) as per-device rows."""
    return [[a[d] for a in per_arg] for d in range(DEVICES)]


# reshape ------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "src, dst", [([4, 6], [24]), ([2, 3, 4], [6, 4]), ([8], [2, 1, 4]), ([5], [5])]
)
def test_reshape(dtype, src, dst):
    text = program(
        [tensor(src, dtype)],
        [tensor(dst, dtype)],
        f"%r0 = hlo.reshape %a0 : ({tensor(src, dtype)}) -> {tensor(dst, dtype)}",
    )
    lowered = check(text, rows(randoms(src, dtype)))
    assert "tpu.load" not in lowered and "vmem" not in lowered
    if src != dst:
        assert "tpu.memref_reshape" in lowered


# slice --------------------------------------------------------------------------------


def slice_text(shape: list[int], bounds: list[tuple[int, int, int]], dtype: str) -> str:
    out = [-(-(hi - lo) // s) for lo, hi, s in bounds]
    ranges = ", ".join(f"{lo}:{hi}:{s}" for lo, hi, s in bounds)
    return program(
        [tensor(shape, dtype)],
        [tensor(out, dtype)],
        f"%r0 = hlo.slice %a0 [{ranges}] : ({tensor(shape, dtype)}) -> {tensor(out, dtype)}",
    )


SLICES = {
    "unit": ([8, 6], [(1, 3, 1), (2, 6, 1)]),
    "rows": ([8, 6], [(2, 7, 1), (0, 6, 1)]),
    "divisible_strides": ([8, 6], [(1, 8, 2), (0, 5, 3)]),
    "non_divisible_stride": ([7, 5], [(1, 7, 3), (0, 5, 2)]),
    "mixed_3d": ([4, 6, 5], [(1, 4, 1), (1, 6, 2), (0, 5, 3)]),
    "one_element_strided": ([5, 4], [(3, 5, 4), (1, 2, 3)]),
    "empty": ([5, 4], [(2, 2, 1), (0, 4, 1)]),
    "rank_1": ([9], [(0, 9, 4)]),
}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", list(SLICES))
def test_slice(dtype, case):
    shape, bounds = SLICES[case]
    lowered = check(slice_text(shape, bounds, dtype), rows(randoms(shape, dtype)))
    assert "vmem" not in lowered
    if case == "non_divisible_stride":
        assert "scf.for" in lowered  # a DMA per index of the dimension the stride misses
    elif case != "empty":
        assert lowered.count("tpu.dma_start") == 1


@st.composite
def slice_cases(draw):
    rank = draw(st.integers(1, 3))
    shape = [draw(st.integers(1, 7)) for _ in range(rank)]
    bounds = []
    for n in shape:
        lo = draw(st.integers(0, n))
        hi = draw(st.integers(lo, n))
        bounds.append((lo, hi, draw(st.integers(1, 4))))
    return shape, bounds, draw(st.sampled_from(["f32", "i32", "bf16"]))


@SETTINGS
@given(slice_cases())
def test_slice_hypothesis(case):
    shape, bounds, dtype = case
    check(slice_text(shape, bounds, dtype), rows(randoms(shape, dtype)))


# concatenate --------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "dim, shapes",
    [
        (0, [[2, 4], [3, 4]]),
        (1, [[3, 1], [3, 5], [3, 2]]),
        (1, [[2, 3, 2], [2, 0, 2], [2, 1, 2]]),
    ],
)
def test_concatenate(dtype, dim, shapes):
    out = list(shapes[0])
    out[dim] = sum(s[dim] for s in shapes)
    types = [tensor(s, dtype) for s in shapes]
    names = ", ".join(f"%a{i}" for i in range(len(shapes)))
    text = program(
        types,
        [tensor(out, dtype)],
        f"%r0 = hlo.concatenate {names}, dim = {dim} : ({', '.join(types)}) -> {tensor(out, dtype)}",
    )
    lowered = check(text, rows(*(randoms(s, dtype, seed=i) for i, s in enumerate(shapes))))
    assert lowered.count("tpu.dma_start") == sum(1 for s in shapes if s[dim])


def test_concatenate_same_operand_twice():
    t = tensor([2, 3], "f32")
    text = program(
        [t],
        [tensor([4, 3], "f32")],
        f"%r0 = hlo.concatenate %a0, %a0, dim = 0 : ({t}, {t}) -> {tensor([4, 3], 'f32')}",
    )
    check(text, rows(randoms([2, 3], "f32")))


# dynamic_slice, dynamic_update_slice --------------------------------------------------


def dynamic_slice_text(shape: list[int], sizes: list[int], dtype: str, index: str = "i32") -> str:
    idx = tensor([], index)
    args = [tensor(shape, dtype)] + [idx] * len(shape)
    names = ", ".join(f"%a{i + 1}" for i in range(len(shape)))
    return program(
        args,
        [tensor(sizes, dtype)],
        f"%r0 = hlo.dynamic_slice %a0 [{names}] sizes = {sizes} : "
        f"({', '.join(args)}) -> {tensor(sizes, dtype)}",
    )


def dynamic_update_slice_text(
    shape: list[int], upd: list[int], dtype: str, index: str = "i32"
) -> str:
    idx = tensor([], index)
    args = [tensor(shape, dtype), tensor(upd, dtype)] + [idx] * len(shape)
    names = ", ".join(f"%a{i + 2}" for i in range(len(shape)))
    return program(
        args,
        [tensor(shape, dtype)],
        f"%r0 = hlo.dynamic_update_slice %a0, %a1 [{names}] : "
        f"({', '.join(args)}) -> {tensor(shape, dtype)}",
    )


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("index", ["i32", "i64"])
def test_dynamic_slice_clamps_like_level_s(dtype, index):
    shape, sizes = [6, 5], [2, 3]
    text = dynamic_slice_text(shape, sizes, dtype, index)
    # device 0 in bounds; device 1 negative row, column past the end (both clamped)
    lowered = check(
        text, rows(randoms(shape, dtype), scalars([3, -4], index), scalars([1, 9], index))
    )
    assert "#tpu.memory_space<smem>" in lowered and "arith.maxsi" in lowered


@pytest.mark.parametrize("dtype", DTYPES)
def test_dynamic_update_slice_clamps_like_level_s(dtype):
    shape, upd = [6, 5], [2, 3]
    text = dynamic_update_slice_text(shape, upd, dtype)
    check(
        text,
        rows(
            randoms(shape, dtype), randoms(upd, dtype, seed=1), scalars([4, 100]), scalars([-1, 2])
        ),
    )


@st.composite
def dynamic_cases(draw):
    rank = draw(st.integers(1, 3))
    shape = [draw(st.integers(1, 6)) for _ in range(rank)]
    sizes = [draw(st.integers(0, n)) for n in shape]
    offsets = [[draw(st.integers(-3, n + 3)) for n in shape] for _ in range(DEVICES)]
    return shape, sizes, offsets, draw(st.sampled_from(["f32", "i32", "bf16"]))


@SETTINGS
@given(dynamic_cases())
def test_dynamic_slice_hypothesis(case):
    shape, sizes, offsets, dtype = case
    per_dim = [scalars([offsets[d][i] for d in range(DEVICES)]) for i in range(len(shape))]
    check(dynamic_slice_text(shape, sizes, dtype), rows(randoms(shape, dtype), *per_dim))


@SETTINGS
@given(dynamic_cases())
def test_dynamic_update_slice_hypothesis(case):
    shape, sizes, offsets, dtype = case
    per_dim = [scalars([offsets[d][i] for d in range(DEVICES)]) for i in range(len(shape))]
    check(
        dynamic_update_slice_text(shape, sizes, dtype),
        rows(randoms(shape, dtype), randoms(sizes, dtype, seed=1), *per_dim),
    )


def test_chain_of_movement_ops():
    """Results of one movement op feed the next (scratch HBM buffers between them)."""
    t, i = tensor([4, 6], "f32"), tensor([], "i32")
    text = program(
        [t, i],
        [tensor([3, 4], "f32"), tensor([24], "f32")],
        f"""
  %s = hlo.slice %a0 [0:4, 0:6:2] : ({t}) -> {tensor([4, 3], "f32")}
  %c = hlo.concatenate %s, %s, dim = 1 : ({tensor([4, 3], "f32")}, {tensor([4, 3], "f32")}) -> {tensor([4, 6], "f32")}
  %r0 = hlo.dynamic_slice %c [%a1, %a1] sizes = [3, 4] : ({tensor([4, 6], "f32")}, {i}, {i}) -> {tensor([3, 4], "f32")}
  %r1 = hlo.reshape %c : ({tensor([4, 6], "f32")}) -> {tensor([24], "f32")}""",
    )
    check(text, rows(randoms([4, 6], "f32"), scalars([1, 7])))


def test_axis_index_feeds_a_dynamic_slice():
    """spmd.axis_index (how partitioning picks a device's block) via SMEM into HBM."""
    t, i = tensor([4, 3], "f32"), tensor([], "i32")
    text = program(
        [t],
        [i, tensor([2, 3], "f32")],
        f"""
  %r0 = spmd.axis_index @m["x"] : {i}
  %z = spmd.axis_index @m["x"] : {i}
  %r1 = hlo.dynamic_slice %a0 [%r0, %z] sizes = [2, 3] : ({t}, {i}, {i}) -> {tensor([2, 3], "f32")}""",
    )
    lowered = check(text, rows(randoms([4, 3], "f32")))
    assert "tpu.axis_index" in lowered and "memref.store" in lowered
