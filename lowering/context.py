"""
What the op lowerings of `lower-to-tpu` see of the kernel being built: the `Target`
(chip and VMEM budget) and, while a kernel is emitted, a `LoweringContext` (the emitter
appending to the kernel body and the HBM buffer of every level-S value).

`compute` and `movement` take these instead of the whole `KernelLowering`, so they do
not depend on `lower_to_tpu` (which imports them) and cannot reach its collective state.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from shardc.diagnostics import OpPassError
from shardc.hardware.chips import Chip
from shardc.lowering.emit import Emitter
from shardc.lowering.ring_steps import Overlap
from xdsl.dialects.builtin import MemRefType
from xdsl.ir import Operation, SSAValue


@dataclass(frozen=True)
class Target:
    """The chip a kernel is lowered for and the VMEM bytes the kernel may use."""

    chip: Chip
    vmem_bytes: int
    """The chip's VMEM, or the pass's `vmem-limit`."""
    pipeline_pieces: bool = True
    """The pass's `pipeline-pieces`: a sync reduce-scatter's pieces software-pipelined
    (lowering/reduce_ring.py)."""

    def check_vmem(self, op: Operation, what: str, size: int) -> None:
        """Raise an `OpPassError` at `op` if `what` (of `size` bytes) does not fit VMEM."""
        if size > self.vmem_bytes:
            raise OpPassError(
                op,
                f"lower-to-tpu: {what} needs {size} bytes of VMEM, more than the "
                f"{self.vmem_bytes} bytes available on {self.chip.name}",
            )


class LoweringContext(Protocol):
    """The kernel under construction, as an op lowering sees it."""

    @property
    def target(self) -> Target:
        """The chip and the VMEM budget."""
        ...

    @property
    def emitter(self) -> Emitter:
        """Appends to the kernel body, after everything lowered so far."""
        ...

    @property
    def buffers(self) -> Mapping[SSAValue, SSAValue]:
        """The HBM buffer (a kernel argument) of every level-S value."""
        ...

    @property
    def overlap(self) -> Overlap | None:
        """The `_start`s whose ring steps a tiled loop may take (None: none)."""
        ...

    def hbm_scratch(self, ty: MemRefType, hint: str) -> SSAValue:
        """A new HBM scratch buffer of the kernel (an argument the caller allocates)."""
        ...
