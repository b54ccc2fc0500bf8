"""The N-device executor: rendezvous, deadlocks, mismatches, futures, control flow."""

from __future__ import annotations

import time

import numpy as np
import pytest
from shardc.diagnostics import DiagnosticError, InterpreterError
from shardc.interpreter.testing import run_per_device

T = "tensor<4xf32>"


def branchy(then_body: str, else_body: str, mesh: str = '<["x"=4]>', axis: str = "x") -> str:
    """Device with coordinate 0 on `axis` runs `then_body`, the others `else_body`."""
    return f"""
spmd.mesh @m = {mesh}
func.func @main(%x: {T}) -> {T} attributes {{spmd.partitioned}} {{
  %i = spmd.axis_index @m["{axis}"] : tensor<i32>
  %c = tensor.extract %i[] : tensor<i32>
  %zero = arith.constant 0 : i32
  %p = arith.cmpi eq, %c, %zero : i32
  %r = scf.if %p -> ({T}) {{
    {then_body}
  }} else {{
    {else_body}
  }}
  func.return %r : {T}
}}"""


def ar(kind: str = "add", axes: str = '"x"') -> str:
    return f"%s = collective.all_reduce {kind} %x on @m[{axes}] : {T}\n    scf.yield %s : {T}"


SKIP = f"scf.yield %x : {T}"


def run_error(text: str, n: int = 4) -> str:
    start = time.perf_counter()
    with pytest.raises(InterpreterError) as info:
        run_per_device(text, [[np.ones(4, np.float32)]] * n)
    assert time.perf_counter() - start < 5  # reported, never a hang
    return str(info.value)


def test_branches_that_both_reach_the_same_collective_run() -> None:
    text = branchy(ar(), ar())
    outs = run_per_device(text, [[np.full(4, d, np.float32)] for d in range(4)])
    for (r,) in outs:
        assert r.tolist() == [6.0] * 4


def test_deadlock_when_a_device_finishes_without_the_collective() -> None:
    msg = run_error(branchy(SKIP, ar()))
    assert "deadlock" in msg
    assert "devices 1, 2, 3 wait at all_reduce add" in msg
    assert "device 0 finished" in msg
    assert "<test>:11:5" in msg  # the op's location


def test_mismatch_of_collective_kind() -> None:
    then = (
        f'%s = collective.all_gather %x on @m["x"], dim = 0 : ({T}) -> tensor<16xf32>\n'
        f"    %t = hlo.slice %s [0:4] : (tensor<16xf32>) -> {T}\n    scf.yield %t : {T}"
    )
    msg = run_error(branchy(then, ar()))
    assert "collective mismatch in group [0, 1, 2, 3]" in msg
    assert "device 0 at all_gather" in msg
    assert "devices 1, 2, 3 at all_reduce add" in msg


def test_mismatch_of_reduction_kind() -> None:
    msg = run_error(branchy(ar("max"), ar("add")))
    assert "collective mismatch" in msg
    assert "device 0 at all_reduce max" in msg and "devices 1, 2, 3 at all_reduce add" in msg


def test_deadlock_when_groups_disagree() -> None:
    # device 0 pairs {0, 1}, {2, 3}; the others pair {0, 2}, {1, 3}: {1, 3} meets and
    # finishes, then 0 waits for 1 (finished) and 2 waits for 0 (at another collective)
    def pairs(groups: str) -> str:
        return f"%s = collective.all_reduce add %x on groups {groups} : {T}\n    scf.yield %s : {T}"

    msg = run_error(branchy(pairs("[[0, 1], [2, 3]]"), pairs("[[0, 2], [1, 3]]")))
    assert "deadlock" in msg
    assert (
        "device 0 waits at all_reduce add (tensor<4xf32>) (<test>:9:5) over group [0, 1]; device 1 finished"
        in msg
    )
    assert (
        "device 2 waits at all_reduce add (tensor<4xf32>) (<test>:12:5) over group [0, 2]; device 0 waits at all_reduce add (tensor<4xf32>) (<test>:9:5) over group [0, 1]"
        in msg
    )


def test_deadlock_when_partners_finished() -> None:
    # on a 2x2 mesh, devices with b == 0 (0 and 2) reduce over "a" and finish; devices
    # 1 and 3 reduce over "b" and wait for them forever
    msg = run_error(branchy(ar(axes='"a"'), ar(axes='"b"'), mesh='<["a"=2, "b"=2]>', axis="b"))
    assert (
        "device 1 waits at all_reduce add (tensor<4xf32>) (<test>:12:5) over group [0, 1]; device 0 finished"
        in msg
    )
    assert (
        "device 3 waits at all_reduce add (tensor<4xf32>) (<test>:12:5) over group [2, 3]; device 2 finished"
        in msg
    )


def test_devices_doing_collectives_in_different_orders_over_disjoint_groups_complete() -> None:
    # legal: a device's group may meet while one of its other groups is still pending
    text = """
spmd.mesh @m = <["a"=2, "b"=2]>
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> attributes {spmd.partitioned} {
  %s = collective.all_reduce add %x on @m["b"] : tensor<4xf32>
  %t = collective.all_reduce add %s on @m["a"] : tensor<4xf32>
  func.return %t : tensor<4xf32>
}"""
    outs = run_per_device(text, [[np.full(4, d, np.float32)] for d in range(4)])
    assert all(o[0].tolist() == [6.0] * 4 for o in outs)


def test_future_used_twice() -> None:
    text = f"""
spmd.mesh @m = <["x"=2]>
func.func @main(%x: {T}) -> ({T}, {T}) attributes {{spmd.partitioned}} {{
  %f = collective.all_reduce_start add %x on @m["x"] : {T} -> !collective.future<{T}>
  %a = collective.done %f : !collective.future<{T}> -> {T}
  %b = collective.done %f : !collective.future<{T}> -> {T}
  func.return %a, %b : {T}, {T}
}}"""
    msg = run_error(text, 2)
    assert "<test>:6:3" in msg
    assert "a second time on device 0" in msg and "collective.all_reduce_start" in msg
    assert "first consumed at <test>:5:3" in msg


def test_future_never_consumed() -> None:
    text = f"""
spmd.mesh @m = <["x"=2]>
func.func @main(%x: {T}) -> {T} attributes {{spmd.partitioned}} {{
  %f = collective.permute_start %x on @m["x"], shift = 1 : {T} -> !collective.future<{T}>
  func.return %x : {T}
}}"""
    msg = run_error(text, 2)
    assert "<test>:4:3" in msg
    assert "never consumed by a collective.done on devices 0, 1" in msg


def test_collective_in_a_level_g_program_is_an_error() -> None:
    text = f"""
spmd.mesh @m = <["x"=2]>
func.func @main(%x: {T}) -> {T} {{
  %s = collective.all_reduce add %x on @m["x"] : {T}
  func.return %s : {T}
}}"""
    with pytest.raises(DiagnosticError, match="needs a level-S program"):
        run_per_device(text, [[np.ones(4, np.float32)]])


def test_axis_index_in_level_g_is_an_error() -> None:
    text = """
spmd.mesh @m = <["x"=2]>
func.func @main() -> tensor<i32> {
  %i = spmd.axis_index @m["x"] : tensor<i32>
  func.return %i : tensor<i32>
}"""
    with pytest.raises(DiagnosticError, match="spmd.axis_index needs a level-S program"):
        run_per_device(text, [[]])


def test_wrong_number_of_devices() -> None:
    text = f"""
spmd.mesh @m = <["x"=4]>
func.func @main(%x: {T}) -> {T} attributes {{spmd.partitioned}} {{
  func.return %x : {T}
}}"""
    with pytest.raises(InterpreterError, match="has 4 devices but 2 sets of arguments"):
        run_per_device(text, [[np.ones(4, np.float32)]] * 2)


def test_ring_all_reduce_in_an_scf_for_loop_with_a_call() -> None:
    # a ring all-reduce written with permutes in a loop, the step in a called function
    text = f"""
spmd.mesh @m = <["x"=4]>
func.func private @step(%acc: {T}, %buf: {T}) -> ({T}, {T}) {{
  %n = collective.permute %buf on @m["x"], shift = 1 : {T}
  %a = hlo.add %acc, %n : {T}
  func.return %a, %n : {T}, {T}
}}
func.func @main(%x: {T}) -> {T} attributes {{spmd.partitioned}} {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %r:2 = scf.for %i = %c0 to %c3 step %c1 iter_args(%acc = %x, %buf = %x) -> ({T}, {T}) {{
    %a, %n = func.call @step(%acc, %buf) : ({T}, {T}) -> ({T}, {T})
    scf.yield %a, %n : {T}, {T}
  }}
  func.return %r#0 : {T}
}}"""
    xs = [np.full(4, 10.0**d, np.float32) for d in range(4)]
    outs = run_per_device(text, [[x] for x in xs])
    for (r,) in outs:
        assert r.tolist() == [1111.0] * 4


def test_many_devices_many_collectives_quickly() -> None:
    # 64 devices, 50 collectives each: the scheduler is linear in the work
    body = "\n".join(
        f'  %v{i + 1} = collective.permute %v{i} on @m["x"], shift = 1 : {T}' for i in range(50)
    )
    text = f"""
spmd.mesh @m = <["x"=64]>
func.func @main(%v0: {T}) -> {T} attributes {{spmd.partitioned}} {{
{body}
  func.return %v50 : {T}
}}"""
    start = time.perf_counter()
    outs = run_per_device(text, [[np.full(4, d, np.float32)] for d in range(64)])
    assert time.perf_counter() - start < 10
    for d, (r,) in enumerate(outs):
        assert r[0] == (d - 50) % 64


def test_results_are_shared_read_only_arrays() -> None:
    text = f"""
spmd.mesh @m = <["x"=4]>
func.func @main(%x: {T}) -> {T} attributes {{spmd.partitioned}} {{
  %s = collective.all_reduce add %x on @m["x"] : {T}
  func.return %s : {T}
}}"""
    outs = run_per_device(text, [[np.ones(4, np.float32)]] * 4)
    assert all(o[0] is outs[0][0] for o in outs)  # one array, bit-identical by construction
    assert not outs[0][0].flags.writeable
