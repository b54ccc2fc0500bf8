"""
The level-T op semantics are xDSL interpreter functions (interpreter/level_t_ops.py): an
xDSL `Interpreter` runs them by op type, and the one trace writer keeps both key orders.
"""

from __future__ import annotations

import json

from shardc.interpreter.level_t_effects import EffectFunctions, effect_table
from shardc.interpreter.level_t_ops import (
    DEVICE_KEY,
    MemoryFunctions,
    ValueFunctions,
    impl_table,
)
from shardc.interpreter.level_t_sim import Simulator
from shardc.interpreter.testing import parse
from shardc.interpreter.trace_events import TraceWriter, trace_json
from xdsl.dialects import arith, func
from xdsl.interpreter import Interpreter

KERNEL = """spmd.mesh @m = <["x"=2]>
func.func @k() {
  %a = arith.constant 40 : i32
  %b = arith.constant 2 : i32
  %c = arith.addi %a, %b : i32
  %d = tpu.device_id : i32
  tpu.barrier
  func.return
}
"""


def test_an_xdsl_interpreter_runs_the_level_t_functions():
    module = parse(KERNEL)
    sim = Simulator(module, "v5e")
    interp = Interpreter(module)
    interp.register_implementations(MemoryFunctions(sim))
    interp.register_implementations(ValueFunctions(sim))
    interp.set_data(MemoryFunctions, DEVICE_KEY, sim.devs[1])
    kernel = next(op for op in module.body.block.ops if isinstance(op, func.FuncOp))
    ops = list(kernel.body.block.ops)
    add = next(op for op in ops if isinstance(op, arith.AddiOp))
    assert interp.run_op(add, (40, 2)) == (42,)
    device_id = ops[3]
    assert interp.run_op(device_id, ()) == (1,)


def test_every_op_is_looked_up_by_type():
    module = parse(KERNEL)
    sim = Simulator(module, "v5e")
    table = impl_table(sim)
    assert arith.AddiOp in table and table[arith.AddiOp].value
    kernel = next(op for op in module.body.block.ops if isinstance(op, func.FuncOp))
    barrier = list(kernel.body.block.ops)[4]
    assert type(barrier) in effect_table(sim.effects)
    assert isinstance(sim.effects, EffectFunctions)


def test_trace_writer_key_orders():
    for phase_first, first_keys in ((False, ["name", "cat", "ph"]), (True, ["ph", "name", "cat"])):
        writer = TraceWriter(phase_first=phase_first)
        writer.process(0, "device 0")
        writer.complete("op", "compute", 0, 0, 1e-6, 3e-6, {})
        doc = json.loads(trace_json(writer.document({"level": "T"})))
        assert list(doc) == ["traceEvents", "displayTimeUnit", "otherData"]
        meta, event = doc["traceEvents"]
        assert meta["args"] == {"name": "device 0"} and meta["ph"] == "M"
        assert list(event)[:3] == first_keys
        assert event["ts"] == 1.0 and abs(event["dur"] - 2.0) < 1e-9
