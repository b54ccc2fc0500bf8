"""
Level S's cost of a fusion `lower-to-tpu` does not make one loop of (issue 15 item 5):
lowering/fusion.py inlines it, every inner op its own tiled loop with its intermediates
through HBM, so level S charges its ops one after another, not the one kernel's roofline
(corpus `dropout_rbg` from XLA's HLO: Philox expanded into one 240-op fusion with
reshapes inside; level S 6 ns as one kernel, level T 418 ns). Here two reduces of
different shapes stop the loop (a reshape would too, but lowering/movement.py copies a
reshape that level S takes for a bitcast: a gap of its own). Expected values from the
sizes and the chip's HBM bandwidth, and from the level-T simulation of the lowered kernel.
"""

from __future__ import annotations

import pytest
import shardc
from shardc.dialects import hlo, make_context
from shardc.hardware import kernel
from shardc.hardware.chips import CHIPS
from shardc.hardware.cost import CostModel
from shardc.lowering.lower_to_tpu import LowerToTpuPass
from shardc.parsing import parse_and_verify
from xdsl.dialects.builtin import ModuleOp

T = "tensor<512x1024xf32>"
PROGRAM = f"""func.func @main(%x: {T}, %y: {T}) -> (tensor<512xf32>, tensor<1024xf32>) {{
  %r:2 = hlo.fusion(%p0 = %x, %p1 = %y) kind = loop, name = "add_reduce_fusion"
      : ({T}, {T}) -> (tensor<512xf32>, tensor<1024xf32>) {{
    %s = hlo.add %p0, %p1 : {T}
    %a = hlo.reduce add %s, dims = [1] : ({T}) -> tensor<512xf32>
    %b = hlo.reduce max %s, dims = [0] : ({T}) -> tensor<1024xf32>
    hlo.return %a, %b : tensor<512xf32>, tensor<1024xf32>
  }}
  func.return %r#0, %r#1 : tensor<512xf32>, tensor<1024xf32>
}}
"""
MIB = 1 << 20
OUT = (512 + 1024) * 4


def module() -> ModuleOp:
    return parse_and_verify(make_context(), PROGRAM, "fusion.mlir")


def the_fusion(m: ModuleOp) -> hlo.FusionOp:
    return next(op for op in m.walk() if isinstance(op, hlo.FusionOp))


@pytest.mark.parametrize("chip", ["v5e", "v5p"])
def test_inlined_fusion_moves_its_intermediates_through_hbm(chip: str) -> None:
    """Two reduces of different shapes inside: not one loop; the add reads 2 and writes
    1 block of 2 MiB, each reduce reads it again: 10 MiB and the results through HBM,
    not the one kernel's 4 MiB."""
    c = CHIPS[chip]
    op = the_fusion(module())
    assert kernel.fusion_kernels(c, op) is None
    cost = CostModel(c).op_cost(op)
    assert cost.bytes == 10 * MIB + OUT
    assert cost.time >= (10 * MIB + OUT) / c.hbm_bw
    assert cost.time <= 1.2 * (10 * MIB + OUT) / c.hbm_bw


@pytest.mark.parametrize("chip", ["v5e", "v5p"])
def test_inlined_fusion_level_s_is_level_t(chip: str) -> None:
    """Level S's step is within 5% of the simulated kernel lower-to-tpu makes."""
    s = shardc.run(module(), timing_only=True, chip=chip).report["step_time_s"]
    m = module()
    LowerToTpuPass(chip=chip).apply(make_context(), m)
    t = shardc.run(m, timing_only=True, chip=chip).report["step_time_s"]
    assert 0.95 <= t / s <= 1.05, (s, t)
