"""
Property tests: random well-typed programs (see `strategies.py`) parse and verify, and
their printed forms are fixed points:

* custom -> parse -> custom prints identically;
* custom -> generic -> parse -> custom prints identically (the generic form loses nothing);
* generic -> parse -> generic prints identically.
"""

from __future__ import annotations

import re

from hypothesis import HealthCheck, given, settings
from shardc.tests.unit.strategies import (
    RandomChooser,
    build_collective_program,
    build_hlo_program,
    collective_programs,
    hlo_programs,
    parse,
    print_module,
)

SETTINGS = settings(
    deadline=None,
    max_examples=60,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def check_round_trip(text: str) -> None:
    module = parse(text)
    custom = print_module(module)
    assert print_module(parse(custom)) == custom, "custom form is not stable"
    generic = print_module(module, generic=True)
    from_generic = parse(generic)
    assert print_module(from_generic) == custom, "custom -> generic -> custom differs"
    assert print_module(from_generic, generic=True) == generic, "generic form is not stable"


@SETTINGS
@given(hlo_programs())
def test_hlo_programs_round_trip(text: str):
    check_round_trip(text)


@SETTINGS
@given(collective_programs())
def test_collective_programs_round_trip(text: str):
    check_round_trip(text)


def test_seeded_programs_round_trip():
    """A fixed set (no shrinking, but the same every run): 20 programs of each level."""
    for seed in range(20):
        check_round_trip(build_hlo_program(RandomChooser(seed)))
        check_round_trip(build_collective_program(RandomChooser(seed)))


def test_generator_covers_every_op():
    """The generators reach every op of the three dialects (so the properties cover them)."""
    from shardc.dialects.collective import Collective
    from shardc.dialects.hlo import Hlo
    from shardc.dialects.spmd import Spmd

    text = "".join(
        build(RandomChooser(seed))
        for seed in range(800)
        for build in (build_hlo_program, build_collective_program)
    )
    seen = set(re.findall(r"\b(?:hlo|spmd|collective)\.[a-z_0-9]+\b", text))
    wanted = {op.name for d in (Hlo, Spmd, Collective) for op in d.operations}
    assert wanted - seen == set()
