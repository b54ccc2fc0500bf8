"""Inputs and outputs: signatures, splitting by sharding, assembling, per-device IO, bad input."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from shardc.diagnostics import InterpreterError
from shardc.interpreter import io
from shardc.interpreter.testing import parse, run_global

BF16 = np.dtype(ml_dtypes.bfloat16)

IDENTITY_2x4 = """
spmd.mesh @mesh = <["a"=2, "b"=4]>
func.func @main(%x: tensor<{local}xf32> {{spmd.sharding = #spmd.sharding<@mesh, {dims}>}})
    -> (tensor<{local}xf32> {{spmd.sharding = #spmd.sharding<@mesh, {dims}>}}) attributes {{spmd.partitioned}} {{
  func.return %x : tensor<{local}xf32>
}}"""


def sig_of(text: str) -> io.Signature:
    module = parse(text)
    return io.signature(module, io.find_entry(module, None, "<test>"), "<test>")


@pytest.mark.parametrize(
    "dims,local,global_shape",
    [
        ('[{"a"}, {}]', "4x6", (8, 6)),
        ('[{}, {"b"}]', "8x2", (8, 8)),
        ('[{"a", "b"}, {}]', "1x6", (8, 6)),
        ('[{"b", "a"}, {}]', "1x6", (8, 6)),
        ('[{"b"}, {"a"}]', "2x3", (8, 6)),
        ("[{}, {}]", "8x6", (8, 6)),
    ],
)
def test_split_then_assemble_round_trips(dims: str, local: str, global_shape) -> None:
    text = IDENTITY_2x4.format(local=local, dims=dims)
    sig = sig_of(text)
    assert sig.level == "S" and sig.devices == 8
    assert sig.args[0].global_shape == global_shape
    x = np.arange(np.prod(global_shape), dtype=np.float32).reshape(global_shape)
    out = run_global(text, {"in_0": x})
    assert np.array_equal(out["out_0"], x)


def test_split_order_of_axes_in_a_dimension() -> None:
    # {"b", "a"}: the shard index is coord_b * size_a + coord_a (DESIGN.md)
    sig = sig_of(IDENTITY_2x4.format(local="1x6", dims='[{"b", "a"}, {}]'))
    x = np.arange(48, dtype=np.float32).reshape(8, 6)
    per_device = io.split_inputs(sig, io.check_inputs(sig, {"in_0": x}, "<test>"))
    for d in range(8):
        a, b = divmod(d, 4)
        block = b * 2 + a
        assert np.array_equal(per_device[d][0], x[block : block + 1])
    sig = sig_of(IDENTITY_2x4.format(local="1x6", dims='[{"a", "b"}, {}]'))
    per_device = io.split_inputs(sig, io.check_inputs(sig, {"in_0": x}, "<test>"))
    for d in range(8):
        assert np.array_equal(per_device[d][0], x[d : d + 1])


def test_replicated_inputs_share_one_read_only_array() -> None:
    sig = sig_of(IDENTITY_2x4.format(local="8x6", dims="[{}, {}]"))
    x = np.ones((8, 6), np.float32)
    per_device = io.split_inputs(sig, io.check_inputs(sig, {"in_0": x}, "<test>"))
    assert all(not p[0].flags.writeable for p in per_device)
    assert x.flags.writeable  # the caller's array is untouched


def test_unreduced_output_is_summed_and_unreduced_input_is_split_as_partial_sums() -> None:
    text = """
spmd.mesh @mesh = <["a"=2, "b"=4]>
func.func @main(%x: tensor<3xf32> {spmd.sharding = #spmd.sharding<@mesh, [{}], unreduced={"b"}>},
                %y: tensor<3xf32>)
    -> (tensor<3xf32> {spmd.sharding = #spmd.sharding<@mesh, [{}], unreduced={"b"}>},
        tensor<3xf32> {spmd.sharding = #spmd.sharding<@mesh, [{}]>},
        tensor<3xf32> {spmd.sharding = #spmd.sharding<@mesh, [{}], unreduced={"a", "b"}>})
    attributes {spmd.partitioned} {
  %r = collective.all_reduce add %x on @mesh["b"] : tensor<3xf32>
  func.return %y, %r, %y : tensor<3xf32>, tensor<3xf32>, tensor<3xf32>
}"""
    x = np.array([1.0, 2.0, 3.0], np.float32)
    y = np.array([0.5, -1.0, 2.0], np.float32)
    out = run_global(text, {"in_0": x, "in_1": y})
    assert out["out_0"].tolist() == (4 * y).tolist()  # 4 partial sums over "b"
    assert out["out_1"].tolist() == x.tolist()  # only b == 0 held x, the rest zeros
    assert out["out_2"].tolist() == (8 * y).tolist()


def test_unreduced_sum_of_bf16_accumulates_in_f32() -> None:
    text = """
spmd.mesh @mesh = <["x"=8]>
func.func @main(%x: tensor<1xbf16> {spmd.sharding = #spmd.sharding<@mesh, [{"x"}]>})
    -> (tensor<1xbf16> {spmd.sharding = #spmd.sharding<@mesh, [{}], unreduced={"x"}>})
    attributes {spmd.partitioned} {
  func.return %x : tensor<1xbf16>
}"""
    x = np.array([256.0] + [1.0] * 7, BF16)
    assert float(run_global(text, {"in_0": x})["out_0"][0]) == 264.0


def test_replicated_output_that_differs_names_the_device() -> None:
    text = """
spmd.mesh @mesh = <["a"=2, "b"=4]>
func.func @main(%x: tensor<2xf32>) -> (tensor<2xf32> {spmd.sharding = #spmd.sharding<@mesh, [{}]>})
    attributes {spmd.partitioned} {
  %i = spmd.axis_index @mesh["b"] : tensor<i32>
  %c = hlo.convert %i : (tensor<i32>) -> tensor<f32>
  %b = hlo.broadcast %c, dims = [] : (tensor<f32>) -> tensor<2xf32>
  %r = hlo.add %x, %b : tensor<2xf32>
  func.return %r : tensor<2xf32>
}"""
    with pytest.raises(InterpreterError) as info:
        run_global(text, {"in_0": np.zeros(2, np.float32)})
    msg = str(info.value)
    assert "output 'out_0': device 1 holds a copy that differs from device 0's" in msg
    assert 'replicated over mesh axes {"a", "b"}' in msg
    assert "first at index [0]: 0.0 vs 1.0" in msg


def test_replicated_copies_that_differ_only_in_a_split_axis_are_fine() -> None:
    text = """
spmd.mesh @mesh = <["a"=2, "b"=4]>
func.func @main(%x: tensor<1xi32>) -> (tensor<1xi32> {spmd.sharding = #spmd.sharding<@mesh, [{"b"}]>})
    attributes {spmd.partitioned} {
  %i = spmd.axis_index @mesh["b"] : tensor<i32>
  %r = hlo.reshape %i : (tensor<i32>) -> tensor<1xi32>
  func.return %r : tensor<1xi32>
}"""
    out = run_global(text, {"in_0": np.zeros(1, np.int32)})
    assert out["out_0"].tolist() == [0, 1, 2, 3]


def test_per_device_io() -> None:
    text = """
spmd.mesh @mesh = <["x"=4]>
func.func @main(%x: tensor<2xf32>, %y: tensor<i32>) -> (tensor<2xf32>, tensor<i32>) attributes {spmd.per_device_io} {
  %r = collective.permute %x on @mesh["x"], shift = 1 : tensor<2xf32>
  func.return %r, %y : tensor<2xf32>, tensor<i32>
}"""
    sig = sig_of(text)
    assert sig.input_names() == [f"in_{k}.{d}" for k in range(2) for d in range(4)]
    assert sig.output_names() == [f"out_{k}.{d}" for k in range(2) for d in range(4)]
    inputs = {f"in_0.{d}": np.full(2, d, np.float32) for d in range(4)}
    inputs |= {f"in_1.{d}": np.array(10 * d, np.int32) for d in range(4)}
    out = run_global(text, inputs)
    assert sorted(out) == sorted(sig.output_names())
    for d in range(4):
        assert out[f"out_0.{d}"].tolist() == [(d - 1) % 4] * 2
        assert int(out[f"out_1.{d}"]) == 10 * d
    rnd = io.random_inputs(sig, 0)
    assert sorted(rnd) == sorted(sig.input_names())


def test_random_inputs_are_seeded_and_typed() -> None:
    text = """
func.func @main(%a: tensor<3x4xf32>, %b: tensor<5xbf16>, %c: tensor<2xi32>, %d: tensor<6xi1>, %e: tensor<2xf64>) -> tensor<3x4xf32> {
  func.return %a : tensor<3x4xf32>
}"""
    sig = sig_of(text)
    a, b = io.random_inputs(sig, 3), io.random_inputs(sig, 3)
    assert all(np.array_equal(a[k], b[k]) for k in a)
    assert not np.array_equal(a["in_0"], io.random_inputs(sig, 4)["in_0"])
    assert [a[f"in_{i}"].dtype for i in range(5)] == [
        np.float32,
        BF16,
        np.int32,
        np.bool_,
        np.float64,
    ]
    assert a["in_1"].shape == (5,)


# Bad input ------------------------------------------------------------------------------

MLP = """
spmd.mesh @mesh = <["data"=2, "model"=4]>
func.func @main(%x: tensor<16x32xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"data"}, {}]>},
                %w: tensor<32x8xbf16>) -> tensor<16x32xf32> {
  func.return %x : tensor<16x32xf32>
}"""


def good_inputs():
    return {"in_0": np.zeros((16, 32), np.float32), "in_1": np.zeros((32, 8), BF16)}


def check(text: str, inputs) -> str:
    sig = sig_of(text)
    with pytest.raises(InterpreterError) as info:
        io.check_inputs(sig, inputs, "IN.npz")
    return str(info.value)


def test_bad_inputs_each_name_the_array() -> None:
    inputs = good_inputs()
    del inputs["in_1"]
    assert check(MLP, inputs) == (
        "IN.npz: error: input array 'in_1' is missing: expected tensor<32x8xbf16> for "
        "argument 1 of @main"
    )
    inputs = good_inputs() | {"in_2": np.zeros(3)}
    assert check(MLP, inputs) == (
        "IN.npz: error: unexpected input array 'in_2': @main expects 'in_0', 'in_1'"
    )
    inputs = good_inputs() | {"in_0": np.zeros((16, 32), np.float64)}
    msg = check(MLP, inputs)
    assert "input 'in_0'" in msg and "has dtype f64, expected f32" in msg
    inputs = good_inputs() | {"in_0": np.zeros((16, 31), np.float32)}
    msg = check(MLP, inputs)
    assert "input 'in_0'" in msg and "has shape [16, 31], expected [16, 32]" in msg
    inputs = good_inputs() | {"in_1": np.zeros((32, 8), np.float32)}
    assert "has dtype f32, expected bf16" in check(MLP, inputs)


def test_bf16_inputs_may_come_as_raw_two_byte_values() -> None:
    sig = sig_of(MLP)
    raw = good_inputs()
    raw["in_1"] = np.ones((32, 8), BF16).view("V2")
    checked = io.check_inputs(sig, raw, "IN.npz")
    assert checked["in_1"].dtype == BF16 and float(checked["in_1"][0, 0]) == 1.0


def test_global_input_not_divisible_by_its_sharding() -> None:
    text = IDENTITY_2x4.format(local="4x6", dims='[{"a"}, {}]')
    msg = check(text, {"in_0": np.zeros((7, 6), np.float32)})
    assert "input 'in_0'" in msg and "has shape [7, 6], expected [8, 6]" in msg
    assert (
        'dimension 0 of size 7 is not divisible by 2, the product of the mesh axes {"a"} splitting it'
        " (an uneven split needs spmd.global_shape on the argument)" in msg
    )


def test_entry_function() -> None:
    module = parse(MLP)
    with pytest.raises(
        InterpreterError, match=r"entry function @nope does not exist \(functions: @main\)"
    ):
        io.find_entry(module, "nope", "f.mlir")
    two = """
func.func @f(%a: tensor<2xf32>) -> tensor<2xf32> { func.return %a : tensor<2xf32> }
func.func @g(%a: tensor<2xf32>) -> tensor<2xf32> { func.return %a : tensor<2xf32> }
func.func private @h(%a: tensor<2xf32>) -> tensor<2xf32> { func.return %a : tensor<2xf32> }"""
    module = parse(two)
    with pytest.raises(InterpreterError, match="no @main and several public functions"):
        io.find_entry(module, None, "f.mlir")
    assert io.find_entry(module, "g", "f.mlir").sym_name.data == "g"
    one = """
func.func @only(%a: tensor<2xf32>) -> tensor<2xf32> { func.return %a : tensor<2xf32> }
func.func private @h(%a: tensor<2xf32>) -> tensor<2xf32> { func.return %a : tensor<2xf32> }"""
    module = parse(one)
    assert io.find_entry(module, None, "f.mlir").sym_name.data == "only"
