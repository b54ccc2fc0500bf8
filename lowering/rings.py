"""
The unit the ring collectives of `lower-to-tpu` are built from: a `Ring` is the steps of
one collective phase over one axis in one direction, on one part of every chunk. The
all-gather and reduce-scatter algorithms (`all_gather`, `reduce_scatter`) make rings and
run the steps of several at once (both directions of a link, the parts of a torus
all-reduce), interleaved in one loop.
"""

from __future__ import annotations

from dataclasses import dataclass

from shardc.lowering.emit import Emitter, chunk
from shardc.lowering.topology import Axis
from xdsl.dialects.builtin import MemRefType
from xdsl.ir import Attribute, SSAValue


@dataclass
class Ring:
    """
    One ring of a collective phase: the steps over `ax` in `direction` (+1: to the
    right), moving part `part` (None: all; else (split dim, size, index), see `chunk`) of
    every chunk c = block c of `k` along `dim` of `ref`.
    """

    ax: Axis
    ref: SSAValue
    dim: int
    k: int
    direction: int
    part: tuple[int, int, int] | None
    tag: str
    dst: SSAValue | None = None
    """reduce_scatter: the HBM buffer (of chunk shape) the reduced part goes to."""

    def block_type(self) -> tuple[list[int], Attribute]:
        """The shape and element type of the part of one chunk the ring moves per step."""
        t = self.ref.type
        assert isinstance(t, MemRefType)
        shape = list(t.get_shape())
        shape[self.dim] = self.k
        if self.part is not None:
            shape[self.part[0]] = self.part[1]
        return shape, t.element_type

    def block(self, e: Emitter, c: SSAValue, hint: str) -> SSAValue:
        """The ring's part of chunk `c` (an index) of `ref`."""
        return chunk(e, self.ref, self.dim, self.k, c, hint, self.part)

    def target(self, e: Emitter) -> SSAValue:
        """Where a reduce-scatter ring's reduced part goes: its part of `dst`."""
        assert self.dst is not None
        if self.part is None:
            return self.dst
        return chunk(e, self.dst, self.dim, self.k, e.index(0), "rs_part", self.part)
