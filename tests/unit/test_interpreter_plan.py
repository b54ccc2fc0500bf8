"""The level-G/S executor's registries: every collective op has semantics and a plan."""

from __future__ import annotations

import pytest
from shardc.dialects import collective as coll
from shardc.interpreter import collectives, plan
from shardc.interpreter.devices import SMALL_ELEMENTS, Executor, Future, is_level_s, module_mesh

COLLECTIVE_OPS = [t for t in coll.Collective.operations if issubclass(t, coll.CollectiveOp)]


@pytest.mark.parametrize("op_type", COLLECTIVE_OPS, ids=lambda t: t.name)
def test_every_collective_op_has_semantics(op_type: type[coll.CollectiveOp]) -> None:
    assert op_type in collectives._SEMANTICS  # pyright: ignore[reportPrivateUsage]


@pytest.mark.parametrize("op_type", [*COLLECTIVE_OPS, coll.DoneOp], ids=lambda t: t.name)
def test_every_collective_op_has_a_planner(op_type: type) -> None:
    assert op_type in plan._PLANNERS  # pyright: ignore[reportPrivateUsage]


def test_public_names_stay_importable_from_devices() -> None:
    assert SMALL_ELEMENTS == plan.SMALL_ELEMENTS
    assert callable(is_level_s) and callable(module_mesh)
    assert Executor.__module__ == "shardc.interpreter.devices"
    assert Future.__name__ == "Future"
