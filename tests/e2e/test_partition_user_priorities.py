"""
Shardy's user priorities (`{"a"}p1`) through `spmd-propagate` and `spmd-partition`: level
S against level G on hypothesis-generated programs whose argument, result and constraint
shardings carry priorities (and open dimensions); none is left after propagation, a
priority-0 or unprioritized closed dimension is kept as written, and `spmd-partition`
refuses a sharding that still has one.
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
from shardc.tests.e2e.differential import partition_and_compare
from shardc.tests.e2e.test_partition_differential import partitionable_programs
from shardc.tests.e2e.test_partition_open_dims import DIM, propagated

CTX = make_context()
"""One dimension of a sharding: `{}` or `{"a", "b"}` followed by `,` or `]`."""


@st.composite
def programs_with_priorities(draw: st.DrawFn) -> str:
    """A generated program with priorities (p0..p2) and open dimensions on some dimensions."""
    text = draw(partitionable_programs())

    def rewrite(m: re.Match[str]) -> str:
        axes = m.group(1)
        dim = "{" + (axes + ", ?" if axes else "?") + "}" if draw(st.booleans()) else m.group(0)
        priority = draw(st.sampled_from(["", "", "p0", "p1", "p2"]))
        return dim + priority

    return DIM.sub(rewrite, text)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs_with_priorities(), st.integers(0, 3))
def test_programs_with_priorities_partition_to_the_same_numbers(text: str, seed: int) -> None:
    partition_and_compare(text, seed, note=text)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs_with_priorities())
def test_propagation_leaves_no_priority_and_keeps_annotations(text: str) -> None:
    before = parse_and_verify(CTX, text, "<generated>")
    (function,) = [f for f in before.ops if f.name == "func.func"]
    args_before, _ = spmd.function_shardings(function)  # pyright: ignore[reportArgumentType]
    module = propagated(text)
    assert not re.search(r"\}p[0-9]", str(module)) and "?}" not in str(module)
    (after,) = [f for f in module.ops if f.name == "func.func"]
    args_after, _ = spmd.function_shardings(after)  # pyright: ignore[reportArgumentType]
    for b, a in zip(args_before, args_after, strict=True):
        assert b is not None and a is not None
        for d, (want, got) in enumerate(zip(b.dim_axes, a.dim_axes, strict=True)):
            # an argument's annotation is the user's: kept (an open one extended)
            assert got[: len(want)] == want if d in b.open_dims else got == want


SKIPPED = """spmd.mesh @mesh = <["a"=2, "b"=2, "c"=2]>
func.func @main(%x: tensor<8x8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"a"}, {"b"}p4]>},
                %y: tensor<8x8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{?}, {?}]>})
    -> (tensor<8x8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{?}, {?}]>}) {
  %s = hlo.add %x, %y : tensor<8x8xf32>
  %c = spmd.constraint %s <@mesh, [{?}, {"c", ?}p1]> : tensor<8x8xf32>
  func.return %c : tensor<8x8xf32>
}
"""


def test_lower_priority_number_decides_first() -> None:
    module = propagated(SKIPPED)
    (function,) = [f for f in module.ops if f.name == "func.func"]
    args, results = spmd.function_shardings(function)  # pyright: ignore[reportArgumentType]
    assert args[0] is not None and args[0].dim_axes == (("a",), ("b",))
    assert args[1] is not None and args[1].dim_axes == (("a",), ("c",))
    assert results[0] is not None and results[0].dim_axes == (("a",), ("c",))
    partition_and_compare(SKIPPED, 1)


def test_partition_refuses_a_priority() -> None:
    module = parse_and_verify(CTX, SKIPPED.replace("{?}, {?}", "{}, {}"), "<generated>")
    with pytest.raises(OpPassError, match=r"user priority \(`p<N>`\)"):
        SpmdPartitionPass().apply(CTX, module)


def test_without_priorities_propagation_is_unchanged() -> None:
    """The same program with `p0` everywhere propagates as with no priority at all."""
    plain = SKIPPED.replace("p4", "").replace("p1", "")
    zero = SKIPPED.replace("p4", "p0").replace("p1", "p0")
    assert str(propagated(plain)) == str(propagated(zero))
