"""
Splat constants stay one element, whatever their shape: importing an exact-gelu MLP at
8192x16384 (its full-shaped splat constants; `chlo.erfc` is one `hlo.erfc`), reading and
printing `dense<v> : tensor<8192x16384xbf16>`, canonicalizing and costing it.

Each of these once repeated the element prod(shape) times (xDSL's `from_list` and
`dense<...>` reader) and printed it by unpacking every element into a Python tuple:
past 8 GB of memory for this MLP. The bounds below are structural (one stored element,
a traced peak of a few MB), not wall-clock.
"""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable
from typing import Any

import ml_dtypes
import numpy as np
import shardc
from shardc.dialects import hlo
from shardc.dialects.syntax import splat_element, splat_elements
from shardc.tools.shardc_import import import_text, render
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr

BIG = "8192x16384"
PEAK_LIMIT = 16 * 2**20  # one full-size bf16 splat would be 256 MiB


def traced_peak(work: Callable[[], Any]) -> tuple[Any, int]:
    tracemalloc.start()
    try:
        result = work()
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def constants(module: Any) -> list[DenseIntOrFPElementsAttr]:
    return [op.value for op in module.walk() if isinstance(op, hlo.ConstantOp)]


def stored_elements(attr: DenseIntOrFPElementsAttr) -> int:
    return len(attr.data.data) // attr.get_element_type().compile_time_size


# The shape of `jax.jit(mlp).lower(...).as_text()` for `jax.nn.gelu(h, approximate=False)`.
EXACT_GELU_MLP = f"""module @jit_mlp attributes {{mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32}} {{
  func.func public @main(%arg0: tensor<8192x4096xbf16>, %arg1: tensor<4096x16384xbf16>, %arg2: tensor<16384x4096xbf16>) -> (tensor<8192x4096xbf16> {{jax.result_info = "result"}}) {{
    %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<8192x4096xbf16>, tensor<4096x16384xbf16>) -> tensor<{BIG}xbf16>
    %cst = stablehlo.constant dense<5.000000e-01> : tensor<bf16>
    %1 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<bf16>) -> tensor<{BIG}xbf16>
    %2 = stablehlo.multiply %1, %0 : tensor<{BIG}xbf16>
    %3 = stablehlo.negate %0 : tensor<{BIG}xbf16>
    %cst_0 = stablehlo.constant dense<7.070310e-01> : tensor<{BIG}xbf16>
    %5 = stablehlo.multiply %3, %cst_0 : tensor<{BIG}xbf16>
    %6 = chlo.erfc %5 : tensor<{BIG}xbf16> -> tensor<{BIG}xbf16>
    %7 = stablehlo.multiply %2, %6 : tensor<{BIG}xbf16>
    %8 = stablehlo.dot_general %7, %arg2, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<{BIG}xbf16>, tensor<16384x4096xbf16>) -> tensor<8192x4096xbf16>
    return %8 : tensor<8192x4096xbf16>
  }}
}}
"""


def test_exact_gelu_mlp_imports_with_one_element_splats() -> None:
    def work() -> str:
        return render(import_text(EXACT_GELU_MLP, "mlp.mlir"))

    text, peak = traced_peak(work)
    assert peak < PEAK_LIMIT, f"import + print peaked at {peak / 2**20:.0f} MiB"
    module = import_text(EXACT_GELU_MLP, "mlp.mlir").module
    attrs = constants(module)
    big = [a for a in attrs if a.get_shape() == (8192, 16384)]
    assert len(big) >= 1  # the program's own full-shaped splat (erfc is one hlo op)
    assert all(stored_elements(a) == 1 for a in attrs)
    assert "hlo.erfc" in text


def test_hlo_text_splat_constant_is_one_element() -> None:
    text = """HloModule m, entry_computation_layout={(bf16[8192,16384]{1,0})->bf16[8192,16384]{1,0}}

ENTRY %main (p: bf16[8192,16384]) -> bf16[8192,16384] {
  %p = bf16[8192,16384]{1,0} parameter(0)
  %c = bf16[8192,16384]{1,0} constant(2)
  ROOT %r = bf16[8192,16384]{1,0} multiply(%p, %c)
}
"""
    result, peak = traced_peak(lambda: import_text(text, "m.hlo"))
    assert peak < PEAK_LIMIT
    attrs = constants(result.module)
    assert attrs and all(stored_elements(a) == 1 for a in attrs)
    assert f"dense<2.000000e+00> : tensor<{BIG}xbf16>" in render(result)


BIG_SPLAT_PROGRAM = f"""func.func @main(%x: tensor<{BIG}xbf16>) -> tensor<{BIG}xbf16> {{
  %s = hlo.constant dense<3.0> : tensor<bf16>
  %b = hlo.broadcast %s, dims = [] : (tensor<bf16>) -> tensor<{BIG}xbf16>
  %c = hlo.constant dense<1.0> : tensor<{BIG}xbf16>
  %h = hlo.constant dense<"0x803F"> : tensor<{BIG}xbf16>
  %y = hlo.add %x, %c : tensor<{BIG}xbf16>
  %z = hlo.mul %y, %b : tensor<{BIG}xbf16>
  %w = hlo.sub %z, %h : tensor<{BIG}xbf16>
  func.return %w : tensor<{BIG}xbf16>
}}
"""


def test_big_splat_reads_prints_canonicalizes_and_costs_small() -> None:
    def work() -> tuple[str, Any]:
        compiled = shardc.compile(BIG_SPLAT_PROGRAM, "canonicalize")
        return str(compiled), shardc.run(BIG_SPLAT_PROGRAM, timing_only=True)

    (text, result), peak = traced_peak(work)
    assert peak < PEAK_LIMIT, f"peaked at {peak / 2**20:.0f} MiB"
    assert f"dense<1.000000e+00> : tensor<{BIG}xbf16>" in text
    assert f"dense<3.000000e+00> : tensor<{BIG}xbf16>" in text  # the folded broadcast
    assert result.outputs == {}


def test_splat_helpers() -> None:
    from xdsl.dialects.builtin import TensorType, bf16, i1, i32

    attr = splat_elements(TensorType(i32, [4, 1 << 20]), -3)
    assert stored_elements(attr) == 1 and splat_element(attr) == -3 and attr.is_splat()
    assert splat_element(splat_elements(TensorType(i1, [8]), 1)) in (1, -1)
    repeated = DenseIntOrFPElementsAttr.from_list(TensorType(bf16, [3]), [2.0, 2.0, 2.0])
    assert splat_element(repeated) == 2.0 and repeated.is_splat()
    mixed = DenseIntOrFPElementsAttr.from_list(TensorType(bf16, [3]), [2.0, 2.0, 1.0])
    assert splat_element(mixed) is None and not mixed.is_splat()
    # -0.0 and 0.0 differ in bits: not a splat (the value -0.0 is not dropped)
    signed = DenseIntOrFPElementsAttr.from_list(TensorType(bf16, [2]), [0.0, -0.0])
    assert splat_element(signed) is None
    empty = splat_elements(TensorType(bf16, [0, 4]), 1.0)
    assert stored_elements(empty) == 0


def test_one_element_splats_compute_like_full_ones() -> None:
    program = BIG_SPLAT_PROGRAM.replace(BIG, "4x8")
    x = np.arange(32, dtype=np.float32).reshape(4, 8)
    out = shardc.run(program, [x.astype(ml_dtypes.bfloat16)]).outputs["out_0"]
    np.testing.assert_array_equal(np.asarray(out, dtype=np.float32), (x + 1) * 3 - 1)
