"""
Open dimensions (Shardy's `{"a", ?}` / `{?}`) through `spmd-propagate` and
`spmd-partition`: level S against level G on hypothesis-generated programs whose
argument, result and constraint shardings have open dimensions; none is left open after
propagation; `spmd-partition` refuses a sharding still open.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from shardc.diagnostics import OpPassError
from shardc.dialects import make_context, spmd
from shardc.parsing import parse_and_verify
from shardc.passes.spmd_partition import SpmdPartitionPass
from shardc.passes.spmd_propagate import SpmdPropagatePass
from shardc.tests.e2e.differential import partition_and_compare
from shardc.tests.e2e.test_partition_differential import partitionable_programs

CTX = make_context()
DIM = re.compile(r"\{((?:\"[a-z]+\"(?:, )?)*)\}(?=[,\]])")
"""One dimension of a sharding: `{}` or `{"a", "b"}` followed by `,` or `]`."""


@st.composite
def programs_with_open_dims(draw: st.DrawFn) -> str:
    """A generated program with some of its sharding dimensions made open (`?` added)."""
    text = draw(partitionable_programs())

    def maybe_open(m: re.Match[str]) -> str:
        if not draw(st.booleans()):
            return m.group(0)
        axes = m.group(1)
        return "{" + (axes + ", ?" if axes else "?") + "}"

    return DIM.sub(maybe_open, text)


def propagated(text: str):
    module = parse_and_verify(CTX, text, "<generated>")
    SpmdPropagatePass().apply(CTX, module)
    return module


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs_with_open_dims(), st.integers(0, 3))
def test_programs_with_open_dims_partition_to_the_same_numbers(text: str, seed: int) -> None:
    partition_and_compare(text, seed, note=text)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs_with_open_dims())
def test_propagation_leaves_no_open_dimension_and_keeps_closed_parts(text: str) -> None:
    before = parse_and_verify(CTX, text, "<generated>")
    (function,) = [f for f in before.ops if f.name == "func.func"]
    args_before, _ = spmd.function_shardings(function)  # pyright: ignore[reportArgumentType]
    module = propagated(text)
    assert "?}" not in str(module)
    (after,) = [f for f in module.ops if f.name == "func.func"]
    args_after, _ = spmd.function_shardings(after)  # pyright: ignore[reportArgumentType]
    for b, a in zip(args_before, args_after, strict=True):
        assert b is not None and a is not None
        for d, (want, got) in enumerate(zip(b.dim_axes, a.dim_axes, strict=True)):
            # a closed dimension is kept; an open one keeps its axes as the major ones
            assert got[: len(want)] == want if d in b.open_dims else got == want


def test_open_argument_is_extended_and_closed_is_not() -> None:
    text = """spmd.mesh @mesh = <["a"=2, "b"=2]>
func.func @main(%x: tensor<8x8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"a", ?}, {?}]>},
                %z: tensor<8x8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"a"}, {}]>},
                %y: tensor<8x8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"a", "b"}, {}]>})
    -> (tensor<8x8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{?}, {?}]>}) {
  %s = hlo.add %x, %y : tensor<8x8xf32>
  %t = hlo.add %s, %z : tensor<8x8xf32>
  func.return %t : tensor<8x8xf32>
}
"""
    module = propagated(text)
    (function,) = [f for f in module.ops if f.name == "func.func"]
    args, _ = spmd.function_shardings(function)  # pyright: ignore[reportArgumentType]
    assert [a.dim_axes if a else None for a in args] == [
        (("a", "b"), ()),
        (("a",), ()),
        (("a", "b"), ()),
    ]
    partition_and_compare(text)


@pytest.mark.parametrize(
    ("text", "where"),
    [
        (
            """spmd.mesh @mesh = <["x"=2]>
func.func @main(%x: tensor<8xf32>) -> (tensor<8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{?}]>}) {
  func.return %x : tensor<8xf32>
}""",
            "result 0",
        ),
        (
            """spmd.mesh @mesh = <["x"=2]>
func.func @main(%x: tensor<8xf32>) -> tensor<8xf32> {
  %c = spmd.constraint %x <@mesh, [{"x", ?}]> : tensor<8xf32>
  func.return %c : tensor<8xf32>
}""",
            "spmd.constraint",
        ),
    ],
)
def test_partition_refuses_open_shardings(text: str, where: str) -> None:
    module = parse_and_verify(CTX, text, "<t>")
    with pytest.raises(OpPassError, match=f"{where} has an open dimension"):
        SpmdPartitionPass().apply(CTX, module)


CONSTANT = re.compile(r"^  (%v\d+) = hlo\.constant dense<0\.5> : (\S+)\n", re.MULTILINE)


@st.composite
def programs_sharing_constants(draw: st.DrawFn) -> str:
    """A generated program whose equal constants are one value with several uses."""
    text = draw(programs_with_open_dims())
    first: dict[str, str] = {}
    renames: dict[str, str] = {}

    def share(m: re.Match[str]) -> str:
        name, ty = m.group(1), m.group(2)
        if ty in first:
            renames[name] = first[ty]
            return ""
        first[ty] = name
        return m.group(0)

    text = CONSTANT.sub(share, text)
    for old, new in renames.items():
        text = re.sub(rf"{old}\b", new, text)
    return text


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs_sharing_constants(), st.integers(0, 3))
def test_shared_constants_are_split_and_partition_to_the_same_numbers(text: str, seed: int) -> None:
    """Constant splitting (one copy per use) never changes what the program computes."""
    module = propagated(text)
    for op in module.walk():
        if op.name in ("hlo.constant", "hlo.iota"):
            users = {u.operation for u in op.results[0].uses}
            assert len(users) <= 1, str(op)
    partition_and_compare(text, seed, note=text)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(partitionable_programs(), st.integers(0, 3))
def test_op_priorities_on_partition_to_the_same_numbers(text: str, seed: int) -> None:
    """`op-priorities=on` on closed programs: another order of decisions, the same numbers."""
    import numpy as np
    from shardc.interpreter import io
    from shardc.tests.e2e.differential import assert_close

    module = parse_and_verify(CTX, text, "<generated>")
    function = io.find_entry(module, None, "<generated>")
    inputs = io.random_inputs(io.signature(module, function, "<generated>"), seed)
    with np.errstate(all="ignore"):
        expected = io.run_module(module.clone(), inputs)
        SpmdPropagatePass(op_priorities="on").apply(CTX, module)
        SpmdPartitionPass().apply(CTX, module)
        module.verify()
        got = io.run_module(module, inputs)
    assert_close(expected, got, exact=False)


def test_op_priorities_option_is_checked() -> None:
    from xdsl.utils.exceptions import PassFailedException

    module = parse_and_verify(CTX, 'spmd.mesh @mesh = <["x"=2]>', "<t>")
    with pytest.raises(PassFailedException, match="op-priorities must be auto, on or off"):
        SpmdPropagatePass(op_priorities="maybe").apply(CTX, module)
