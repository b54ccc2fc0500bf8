"""
Chained in-order reduction of a cross-rank group (issue 17): all_reduce and
reduce_scatter over ranks without sending every member's operand to every rank.

The in-process result is `values.combine_in_order`: the members' operands added in group
order into an accumulator of the accumulation type (f32 for bf16/f16), rounded once. The
chain computes exactly that, in pieces: the rank owning the group's first member starts
the accumulator, adds its members while the next member is its own, and sends the
accumulator to the owner of the next member, which goes on; the owner of the last member
rounds and sends the result back (for reduce_scatter, each rank only its members' blocks).
The elementwise operations and their order are those of `combine_in_order`, so results are
bit-identical; each rank holds and sends O(operand) bytes (the last rank: one result per
other rank of the group), not O(group).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from shardc.dialects import collective as coll
from shardc.interpreter.values import accumulation_dtype, frozen, reduce_ufunc

PARTIAL, RESULT = 1, 2
"""Message channels of a group besides its arrivals (channel 0)."""


def chained(op: Any) -> bool:
    """Ops whose values travel along the chain (their arrivals still go to every rank)."""
    return isinstance(op, coll.AllReduceBase | coll.ReduceScatterBase)


@dataclass
class Chain:
    """This rank's view of one meeting's chain."""

    group: tuple[int, ...]
    owners: list[int]
    """The rank of each member, in group order."""
    seq: int
    """The meeting's number among its group's meetings (the same on every rank)."""
    kind: str
    dtypes: list[np.dtype[Any]]
    """The operands' (and results') element types."""
    acc: list[np.ndarray] | None = None
    pos: int = -1
    """The next member to add when this rank holds the accumulator, else -1."""
    outputs: dict[int, tuple[Any, ...]] | None = None
    """Each local member's results, once known."""
    started: bool = False


def advance(chain: Chain, me: int, values: dict[int, tuple[Any, ...]], op: Any) -> list[Any]:
    """
    Add this rank's members while it holds the accumulator; messages to send as
    (channel, rank or None for every other rank of the group, payload).
    """
    if not chain.started and chain.owners[0] == me:
        chain.started, chain.pos = True, 0
    if chain.pos == -1:
        return []
    with np.errstate(all="ignore"):
        while chain.pos < len(chain.group) and chain.owners[chain.pos] == me:
            member = values[chain.group[chain.pos]]
            chain.acc = _add(chain.kind, chain.acc, member)
            chain.pos += 1
    if chain.pos < len(chain.group):
        message = (PARTIAL, chain.owners[chain.pos], (chain.seq, chain.pos, chain.acc))
        chain.acc, chain.pos = None, -1
        return [message]
    assert chain.acc is not None
    full = tuple(
        frozen(a.astype(d, copy=False)) for a, d in zip(chain.acc, chain.dtypes, strict=True)
    )
    chain.acc, chain.pos = None, -1
    return _results(chain, me, full, op)


def _add(kind: str, acc: list[np.ndarray] | None, member: Sequence[Any]) -> list[np.ndarray]:
    """`combine_in_order`'s step: the first operand copied in the accumulation type, the
    next ones reduced into it."""
    if acc is None:
        return [
            np.array(v, dtype=accumulation_dtype(np.asarray(v).dtype), copy=True) for v in member
        ]
    for a, v in zip(acc, member, strict=True):
        v = np.asarray(v)
        reduce_ufunc(kind, v.dtype)(a, v.astype(a.dtype, copy=False), out=a)
    return acc


def _results(chain: Chain, me: int, full: tuple[np.ndarray, ...], op: Any) -> list[Any]:
    """The last owner: the results of every member (its own kept, the others' sent)."""
    if isinstance(op, coll.ReduceScatterBase):
        g, dim = len(chain.group), op.dim.value.data
        blocks = [[frozen(b) for b in np.split(x, g, axis=dim)] for x in full]
        per_member = {d: tuple(b[r] for b in blocks) for r, d in enumerate(chain.group)}
        chain.outputs = {
            d: out for (d, out), o in zip(per_member.items(), chain.owners, strict=True) if o == me
        }
        sends = []
        for rank in sorted(set(chain.owners) - {me}):
            mine = {
                d: out
                for (d, out), o in zip(per_member.items(), chain.owners, strict=True)
                if o == rank
            }
            sends.append((RESULT, rank, (chain.seq, mine)))
        return sends
    chain.outputs = {d: full for d, o in zip(chain.group, chain.owners, strict=True) if o == me}
    return [(RESULT, None, (chain.seq, full))]


def take(chain: Chain, channel: int, payload: Any, me: int) -> None:
    """A partial sum or a result for this meeting arrived."""
    if channel == PARTIAL:
        _, chain.pos, chain.acc = payload
        return
    _, out = payload
    if isinstance(out, dict):
        chain.outputs = out
    else:
        chain.outputs = {d: out for d, o in zip(chain.group, chain.owners, strict=True) if o == me}


__all__ = ["PARTIAL", "RESULT", "Chain", "advance", "chained", "take"]
