"""
`collective-stats`: what communication a per-device program does, per collective kind.

Counts follow DESIGN.md's report: a `_start` counts under its kind, a variadic collective
counts once, and bytes are the operand bytes one device contributes (independent of the
algorithm that later moves them). So a permute contributes only data it has not sent
already: a permute of what a permute delivered forwards it (a ring's later steps), and the
same value permuted twice (a bidirectional ring's first steps) counts once; a
collective-matmul ring then counts the all_gather's block, the bytes it replaced.
"""

from __future__ import annotations

import sys
from collections import Counter
from dataclasses import dataclass, field

from shardc.dialects import collective
from shardc.dialects.collective import collective_kind
from shardc.dialects.sizes import tensor_bytes
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import SSAValue
from xdsl.passes import ModulePass


def _forwarded(value: SSAValue) -> bool:
    """Whether `value` is what a permute delivered (directly or through its `done`)."""
    owner = value.owner
    if isinstance(owner, collective.DoneOp):
        owner = owner.future.owner
    return isinstance(owner, collective.PermuteOp | collective.PermuteStartOp)


KINDS = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "permute")


@dataclass
class CollectiveStats:
    counts: Counter[str] = field(default_factory=Counter[str])
    bytes: Counter[str] = field(default_factory=Counter[str])
    reshard_steps: int | None = None

    @staticmethod
    def of(module: ModuleOp) -> CollectiveStats:
        stats = CollectiveStats()
        sent: set[SSAValue] = set()
        for op in module.walk():
            if isinstance(op, collective.CollectiveOp):
                kind = collective_kind(op)
                stats.counts[kind] += 1
                if isinstance(op, collective.PermuteOp | collective.PermuteStartOp):
                    if _forwarded(op.operands[0]) or op.operands[0] in sent:
                        continue
                    sent.add(op.operands[0])
                stats.bytes[kind] += sum(tensor_bytes(t) for t in op.input_types())
        return stats

    def format(self) -> str:
        lines = ["collective      count  bytes/device"]
        for kind in KINDS:
            lines.append(f"{kind:<15} {self.counts[kind]:>5}  {self.bytes[kind]:>12}")
        lines.append(
            f"{'total':<15} {sum(self.counts.values()):>5}  {sum(self.bytes.values()):>12}"
        )
        if self.reshard_steps is not None:
            lines.append(f"resharding steps: {self.reshard_steps}")
        return "\n".join(lines)


@dataclass(frozen=True)
class CollectiveStatsPass(ModulePass):
    """Print collectives per kind and their bytes per device to stderr; the IR is unchanged."""

    name = "collective-stats"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        print(CollectiveStats.of(op).format(), file=sys.stderr)
