"""
The race detector's per-buffer index (interpreter/level_t_races.py `AccessIndex`):
accesses are compared only with those whose rows may overlap, with the same verdicts as
comparing all: distinct rows never race, an unordered write to a row read earlier
races whatever the other rows, a wide access (more rows than a few buckets) is
compared with everything, and superseded accesses leave the index.
"""

from __future__ import annotations

import numpy as np
from shardc.dialects.tpu import MemorySpace
from shardc.interpreter.level_t_machine import Buffer
from shardc.interpreter.level_t_races import AccessIndex, record_access


def _buffer(rows: int = 32000, cols: int = 8) -> Buffer:
    return Buffer(0, "table", MemorySpace.HBM, np.zeros((rows, cols), np.float32), None)


def test_distinct_rows_by_unordered_threads_do_not_race_and_stay_indexed() -> None:
    buf = _buffer()
    for i in range(0, 32000, 7):
        dma = ("dma", i)
        assert record_access(buf, buf.array[i : i + 1], True, dma, {dma: 1}, "w") is None
    index = buf.accesses
    assert isinstance(index, AccessIndex) and len(index) == len(range(0, 32000, 7))
    assert len(index.candidates(((700, 701), (0, 8)))) <= 2 * index.width


def test_an_unordered_write_to_a_row_read_earlier_races() -> None:
    buf = _buffer()
    for i in range(100):
        dma = ("dma", i)
        record_access(buf, buf.array[i * 300 : i * 300 + 1], False, dma, {dma: 1}, f"read {i}")
    clash = record_access(buf, buf.array[1500:1502], True, "core", {}, "store")
    assert clash is not None and clash.what == "read 5"


def test_a_wide_access_is_compared_with_every_row_and_supersedes_what_it_has_seen() -> None:
    buf = _buffer()
    for i in range(50):
        assert (
            record_access(buf, buf.array[i * 600 : i * 600 + 1], True, "core", {"core": 1}, "w")
            is None
        )
    # The core's later write of the whole buffer has seen its own earlier writes: it
    # supersedes them all (one access left), and an unordered DMA read of any row races.
    assert record_access(buf, buf.array, True, "core", {"core": 2}, "all") is None
    assert len(buf.accesses) == 1
    clash = record_access(buf, buf.array[29999:30000], False, ("dma", 0), {}, "read")
    assert clash is not None and clash.what == "all"
