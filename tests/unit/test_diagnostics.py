"""Locations on `Operation.location`: parsing, clones, passes, origins, the verify hook."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from shardc.diagnostics import (
    DiagnosticError,
    error_at,
    module_checks,
    op_origin,
    op_position,
    register_module_check,
)
from shardc.dialects import collective, hlo, make_context, spmd
from shardc.interpreter.testing import parse
from shardc.parsing import parse_and_verify, verify_module
from shardc.passes.spmd_partition import SpmdPartitionPass
from shardc.passes.spmd_propagate import SpmdPropagatePass
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    FileLineColLoc,
    FusedLoc,
    IntAttr,
    NameLoc,
    NoneAttr,
    StringAttr,
    UnitAttr,
    UnknownLoc,
)
from xdsl.utils.exceptions import VerifyException

MLP = """\
spmd.mesh @mesh = <["data"=2, "model"=4]>

func.func @main(%x: tensor<16x32xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"data"}, {}]>},
                %w: tensor<32x128xf32> {spmd.sharding = #spmd.sharding<@mesh, [{}, {"model"}]>},
                %v: tensor<128x32xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"model"}, {}]>})
    -> (tensor<16x32xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"data"}, {}]>}) {
  %h = hlo.dot %x, %w, contracting_dims = [1] x [0] : (tensor<16x32xf32>, tensor<32x128xf32>) -> tensor<16x128xf32>
  %y = hlo.dot %h, %v, contracting_dims = [1] x [0] : (tensor<16x128xf32>, tensor<128x32xf32>) -> tensor<16x32xf32>
  func.return %y : tensor<16x32xf32>
}
"""


def _loc(name: str, line: int, col: int) -> FileLineColLoc:
    return FileLineColLoc(StringAttr(name), IntAttr(line), IntAttr(col))


def test_parsed_ops_carry_their_first_token_and_the_chunk_offset() -> None:
    module = parse_and_verify(make_context(), MLP, "mlp.mlir", line_offset=10)
    dots = [op for op in module.walk() if isinstance(op, hlo.DotOp)]
    assert [op_position(d) for d in dots] == ["mlp.mlir:17:3", "mlp.mlir:18:3"]
    assert module.location == _loc("mlp.mlir", 11, 1)  # the implicit module: the text's start


def test_a_location_survives_clone() -> None:
    module = parse(MLP, "mlp.mlir")
    copy = module.clone()
    assert [op.location for op in copy.walk()] == [op.location for op in module.walk()]
    dot = next(op for op in copy.walk() if isinstance(op, hlo.DotOp))
    assert str(error_at(dot, "boom")).startswith("mlp.mlir:7:3: error: 'hlo.dot' op boom\n")


def test_a_pass_created_op_reports_the_op_it_came_from() -> None:
    """spmd-partition's all_reduce for the row-parallel dot names the dot's line."""
    module = parse(MLP, "mlp.mlir")
    SpmdPropagatePass().apply(make_context(), module)
    SpmdPartitionPass().apply(make_context(), module)
    (reduce,) = [op for op in module.walk() if isinstance(op, collective.AllReduceOp)]
    assert op_position(reduce) == "mlp.mlir:8:3"
    text = str(error_at(reduce, "cannot run"))
    assert text.splitlines()[0] == "mlp.mlir:8:3: error: 'collective.all_reduce' op cannot run"
    assert text.splitlines()[1].startswith("  %y = hlo.dot")
    # and a verifier failure after the pass is reported there too
    reduce.properties["kind"] = StringAttr("bogus")
    with pytest.raises(DiagnosticError) as e:
        verify_module(module, note="after pass 'spmd-partition'")
    assert str(e.value).startswith("mlp.mlir:8:3: error: 'collective.all_reduce' op")


def test_an_op_made_from_scratch_reports_its_function() -> None:
    module = parse(MLP, "mlp.mlir")
    f = next(op for op in module.walk() if isinstance(op, func.FuncOp))
    made = f.body.block.first_op.clone()  # pyright: ignore[reportOptionalMemberAccess]
    made.location = UnknownLoc()  # as if built from scratch: its ancestors say where
    f.body.block.insert_op_before(made, f.body.block.first_op)  # pyright: ignore
    assert op_position(made) == "mlp.mlir:3:1"


def _jax_module(index: int = 0) -> tuple[object, hlo.DotOp]:
    """MLP with JAX's location fused into the location of its dot number `index`."""
    module = parse(MLP, "mlp.mlir")
    dot = [op for op in module.walk() if isinstance(op, hlo.DotOp)][index]
    jax = NameLoc(StringAttr("jit(f)/dot_general"), _loc("model.py", 12, 3))
    dot.location = FusedLoc([dot.location, jax], NoneAttr())
    return module, dot


def test_jax_origin_is_a_note_in_diagnostics() -> None:
    _, dot = _jax_module()
    assert op_origin(dot) == "model.py:12:3 (jit(f)/dot_general)"
    lines = str(error_at(dot, "boom")).splitlines()
    assert lines[0] == "mlp.mlir:7:3: error: 'hlo.dot' op boom"
    assert lines[2] == "  ^"
    assert lines[3] == "note: from model.py:12:3 (jit(f)/dot_general)"


def test_jax_origin_in_the_trace_and_the_peak_memory_location() -> None:
    from shardc.hardware.chips import get_chip
    from shardc.interpreter import io
    from shardc.interpreter.devices import Executor

    module, _ = _jax_module(1)  # the second dot: where peak memory is reached
    module.body.block.ops.first.detach()  # pyright: ignore  (no mesh: one device, level G)
    f = next(op for op in module.walk() if isinstance(op, func.FuncOp))
    f.arg_attrs = None
    f.res_attrs = None
    ex = Executor(module, "mlp.mlir", chip=get_chip("v5e"))
    sig = io.signature(module, f, "mlp.mlir")
    io.run(ex, sig, io.random_inputs(sig, 0))
    assert ex.timeline is not None
    events = [e for e in json.loads(ex.timeline.trace_json())["traceEvents"] if e["ph"] == "X"]
    sources = {e["args"].get("loc"): e["args"].get("source") for e in events}
    assert sources["mlp.mlir:8:3"] == "model.py:12:3 (jit(f)/dot_general)"
    assert sources["mlp.mlir:7:3"] is None  # a plain position adds nothing to the trace
    peak = ex.timeline.report()["peak_memory_at"]
    assert peak == "hlo.dot on device 0 at mlp.mlir:8:3 (from model.py:12:3 (jit(f)/dot_general))"


def test_verify_hook_runs_the_checks_dialects_register() -> None:
    module = parse(MLP, "mlp.mlir")
    f = next(op for op in module.walk() if isinstance(op, func.FuncOp))
    assert spmd.verify_function_shardings in module_checks(f)

    def reject_marked(op: object) -> None:
        assert isinstance(op, hlo.DotOp)
        if "test.reject" in op.attributes:
            raise VerifyException("is marked for rejection")

    register_module_check(hlo.DotOp, reject_marked)
    register_module_check(hlo.DotOp, reject_marked)  # once is enough
    assert (
        module_checks(next(op for op in module.walk() if isinstance(op, hlo.DotOp))).count(
            reject_marked
        )
        == 1
    )
    verify_module(module)
    dot = [op for op in module.walk() if isinstance(op, hlo.DotOp)][1]
    dot.attributes["test.reject"] = UnitAttr()
    with pytest.raises(DiagnosticError) as e:
        verify_module(module)
    assert str(e.value).startswith("mlp.mlir:8:3: error: 'hlo.dot' op is marked for rejection")


def _lines(ops: list) -> set[int]:
    return {op.location.line.data for op in ops if isinstance(op.location, FileLineColLoc)}


def test_every_op_of_a_compiled_kernel_reports_a_source_line() -> None:
    """tpu-pipeline from text: no op of the level-T kernel is left without a location; the
    MXU matmuls of each dot report that dot's line, the DMAs of its all_reduce the line of
    the dot whose partial sums it adds (the op the partitioner made it for)."""
    import shardc
    from shardc.dialects import tpu

    kernel = shardc.compile(MLP, "tpu-pipeline", filename="mlp.mlir")
    body = [op for op in kernel.walk() if op.parent_op() is not kernel and op is not kernel]
    unlocated = [op.name for op in body if not isinstance(op.location, FileLineColLoc)]
    assert unlocated == [], unlocated
    matmuls = [op for op in kernel.walk() if isinstance(op, tpu.MatmulOp)]
    assert _lines(matmuls) == {7, 8}
    remote = [op for op in kernel.walk() if isinstance(op, tpu.DMAStartOp) and op.device]
    assert remote and _lines(remote) <= {7, 8}


def test_a_combined_collective_reports_the_first_collective_it_merges() -> None:
    from shardc.passes.collective_combine import CollectiveCombinePass

    text = """\
spmd.mesh @ring = <["x"=4]>
func.func @main(%a: tensor<8xf32>, %b: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>)
    attributes {spmd.partitioned} {
  %s = collective.all_reduce add %a on @ring["x"] : tensor<8xf32>
  %t = collective.all_reduce add %b on @ring["x"] : tensor<8xf32>
  func.return %s, %t : tensor<8xf32>, tensor<8xf32>
}
"""
    module = parse_and_verify(make_context(), text, "two.mlir")
    CollectiveCombinePass(overlap_aware=False).apply(make_context(), module)
    (combined,) = [op for op in module.walk() if isinstance(op, collective.AllReduceOp)]
    assert len(combined.operands) == 2
    assert op_position(combined) == "two.mlir:4:3"


EXAMPLES = sorted((Path(__file__).parents[2] / "examples").glob("*.mlir"))


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
@pytest.mark.parametrize(
    "pipeline", ["spmd-pipeline", "spmd-propagate,spmd-partition,micro-batch{force=true}"]
)
def test_no_pass_leaves_an_op_without_a_source_line(path: Path, pipeline: str) -> None:
    """Every op the passes make reports the op it came from (not UnknownLoc, which would
    send a diagnostic to the function)."""
    import shardc

    module = shardc.compile(path.read_text(), pipeline, filename=path.name)
    unlocated = [
        op.name
        for op in module.walk()
        if op is not module and not isinstance(op.location, FileLineColLoc)
    ]
    assert unlocated == [], unlocated
