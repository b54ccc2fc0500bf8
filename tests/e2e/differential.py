"""
Shared by the differential tests of the collective passes: run a level-S program on the
simulated devices before and after a pass, on the same inputs, and compare.

Integers must match exactly; floats exactly when `exact`, else within a tight tolerance
relative to the output's scale (bf16/f16 at their own precision).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from shardc.dialects import make_context
from shardc.driver.checking import compare
from shardc.interpreter import io
from shardc.interpreter.values import BF16, F8E4M3FN, F8E5M2
from shardc.parsing import parse_and_verify
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

NARROW_FLOATS = (BF16, F8E4M3FN, F8E5M2)

CTX = make_context()


def partition(text: str) -> str:
    """
    The per-device program the partitioner makes from a level-G `text`: propagate,
    partition, canonicalize, cse (not the whole `spmd-pipeline`, which runs the passes
    under test).
    """
    from shardc.passes.spmd_partition import SpmdPartitionPass
    from shardc.passes.spmd_propagate import SpmdPropagatePass
    from xdsl.transforms.canonicalize import CanonicalizePass
    from xdsl.transforms.common_subexpression_elimination import CommonSubexpressionElimination

    module = parse_and_verify(CTX, text, "<level G>")
    for p in (
        SpmdPropagatePass(),
        SpmdPartitionPass(),
        CanonicalizePass(),
        CommonSubexpressionElimination(),
    ):
        p.apply(CTX, module)
    return str(module)


def count_ops(module: ModuleOp, name: str) -> int:
    return sum(1 for op in module.walk() if op.name == name)


def assert_close(
    before: dict[str, np.ndarray],
    after: dict[str, np.ndarray],
    exact: bool,
    rtol: float | None = None,
) -> None:
    assert before.keys() == after.keys()
    for name, want in before.items():
        have = after[name]
        assert have.shape == want.shape and have.dtype == want.dtype, name
        if exact or not np.issubdtype(want.dtype, np.floating) and want.dtype.kind != "V":
            np.testing.assert_array_equal(have, want, err_msg=name)
            continue
        w = want.astype(np.float64)
        h = have.astype(np.float64)
        low = want.dtype.itemsize <= 2
        tol = rtol if rtol is not None else 2e-2 if low else 1e-5
        scale = max(1.0, float(np.max(np.abs(w))) if w.size else 1.0)
        np.testing.assert_allclose(h, w, rtol=tol, atol=tol * scale, err_msg=name)


def check_pass(
    text: str,
    passes: ModulePass | Sequence[ModulePass],
    *,
    exact: bool = True,
    seed: int = 0,
    rtol: float | None = None,
) -> ModuleOp:
    """Apply `passes` to `text`; outputs before and after must agree. The module after."""
    module = parse_and_verify(CTX, text, "<test>")
    function = io.find_entry(module, None, "<test>")
    inputs = io.random_inputs(io.signature(module, function, "<test>"), seed)
    before = io.run_module(module.clone(), inputs)
    for p in [passes] if isinstance(passes, ModulePass) else passes:
        p.apply(CTX, module)
        module.verify()
    after = io.run_module(module, inputs)
    assert_close(before, after, exact, rtol)
    return module


def partition_and_compare(
    text: str,
    seed: int = 0,
    *,
    exact: bool = False,
    inputs: dict[str, np.ndarray] | None = None,
    note: str = "",
) -> None:
    """
    Run a level-G `text` globally and after `spmd-pipeline` on the same inputs (`inputs`,
    else drawn from `seed`); the outputs must agree: integers exactly, floats exactly when
    `exact`, else within 1e-4 of the output's scale (a partitioned sum adds in another
    order). `note` is added to a failure's message (the program, say).
    """
    from shardc.passes.spmd_pipeline import SpmdPipelinePass

    module = parse_and_verify(CTX, text, "<generated>")
    if inputs is None:
        function = io.find_entry(module, None, "<generated>")
        inputs = io.random_inputs(io.signature(module, function, "<generated>"), seed)
    with np.errstate(all="ignore"):
        expected = io.run_module(module.clone(), inputs)
        SpmdPipelinePass().apply(CTX, module)
        module.verify()
        got = io.run_module(module, inputs)
    assert expected.keys() == got.keys()
    for name in expected:
        want, have = expected[name], got[name]
        message = f"{name}\n{note}" if note else name
        assert want.shape == have.shape and want.dtype == have.dtype, message
        if want.dtype in NARROW_FLOATS and not exact:
            # bf16 / f8: numpy has no tolerance for them; use `--check`'s per-dtype one.
            result = compare(name, have, want)
            assert result.passed, f"{message}: |diff| {result.max_abs_diff} > {result.tolerance}"
        elif np.issubdtype(want.dtype, np.floating) and not exact:
            scale = max(1.0, float(np.max(np.abs(want.astype(np.float64)), initial=0.0)))
            np.testing.assert_allclose(have, want, rtol=1e-4, atol=1e-4 * scale, err_msg=message)
        else:
            np.testing.assert_array_equal(have, want, err_msg=message)


def compile_and_compare(text: str, spec: str, inputs: dict[str, np.ndarray]) -> str:
    """Run `text` before and after the pipeline `spec` (`shardc-opt -p` syntax) on `inputs`;
    the outputs must be equal to the bit. Returns the compiled module as text."""
    from shardc.driver.compiling import compile_module

    module = parse_and_verify(CTX, text, "<test>")
    expected = io.run_module(module.clone(), inputs)
    compile_module(module, spec, "<test>")
    got = io.run_module(module, inputs)
    for name in expected:
        np.testing.assert_array_equal(got[name], expected[name], err_msg=name)
    return str(module)
