"""
The `tpu` dialect: one kernel per device at level T, modelled on Mosaic TPU
(`jaxlib/mosaic/dialect/tpu`) and Pallas TPU.

Data lives in memrefs whose memory space is a `#tpu.memory_space<hbm|vmem|smem>`; compute
reads and writes only VMEM and SMEM (`tpu.load`/`tpu.store` of `vector<...>` blocks), so
HBM is reached by DMA only. DMAs are asynchronous: `tpu.dma_start` issues a copy, local or
pushed into the same buffer of another device (remote DMA is push-only, as on a TPU);
completion is counted in bytes on DMA semaphores and awaited with `tpu.dma_wait`. Regular
semaphores are counters that any device may signal and the owner waits on. Elementwise
compute uses `arith`/`math` on vectors, loops `scf.for`; xDSL 0.74 has no
`vector.multi_reduction`, so reductions are `tpu.reduce`.

Semaphores differ from Mosaic in one respect: Mosaic keeps them in memrefs
(`memref<!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>`), but MLIR only accepts
memref element types that implement its MemRefElementTypeInterface, so such a memref is
not valid MLIR when the `tpu` dialect is not registered (our generic form must be). Here
a semaphore is a value of type `!tpu.semaphore` or `!tpu.dma_semaphore`, an array of them
`!tpu.dma_semaphore<7>` (Pallas's `SemaphoreType.DMA((7,))`); arrays are indexed with
`tpu.memref_slice` as in Mosaic. Semaphore operands of every op are single semaphores
(rank 0), so their types are implied and not written in the custom syntax.

Remote references: in an SPMD kernel every device runs the same program, so a remote
DMA's target and receive semaphore, and a remote `sem_signal`'s semaphore, are named by
the local SSA value: they denote the same allocation (function argument or `tpu.alloc`,
and the same slice offsets) in the kernel instance running on device `device`.

A ring all_gather over `@ring["x"]` (4 devices, one 8x128 shard each, N-1 = 3 steps):

```mlir
spmd.mesh @ring = <["x"=4]>

func.func @ring_all_gather(%in: memref<8x128xf32, #tpu.memory_space<hbm>>, %out: memref<4x8x128xf32, #tpu.memory_space<hbm>>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %steps = arith.constant 3 : index
  %n = arith.constant 4 : i32
  %one = arith.constant 1 : i32
  %copy_sem = tpu.alloc : !tpu.dma_semaphore
  %send_sem = tpu.alloc : !tpu.dma_semaphore
  %recv_sems = tpu.alloc : !tpu.dma_semaphore<3>
  %me = tpu.axis_index @ring["x"] : i32
  %dev = tpu.device_id : i32
  %right_unwrapped = arith.addi %dev, %one : i32
  %right = arith.remsi %right_unwrapped, %n : i32
  // Own shard into its slot of the output (a local DMA: one semaphore).
  %me_index = arith.index_cast %me : i32 to index
  %own = tpu.memref_slice %out[%me_index, %c0, %c0] : memref<4x8x128xf32, #tpu.memory_space<hbm>> -> memref<8x128xf32, #tpu.memory_space<hbm>>
  tpu.dma_start %in, %own, %copy_sem : memref<8x128xf32, #tpu.memory_space<hbm>> to memref<8x128xf32, #tpu.memory_space<hbm>>
  tpu.dma_wait %copy_sem, %own : memref<8x128xf32, #tpu.memory_space<hbm>>
  // Every device has entered the kernel before anyone pushes into its buffers.
  tpu.barrier on @ring["x"]
  scf.for %s = %c0 to %steps step %c1 {
    // Step s forwards slot (me - s) mod N to the right neighbour, which keeps it in the
    // same slot, and receives slot (me - s - 1) mod N from the left on recv_sems[s].
    %s_i32 = arith.index_cast %s : index to i32
    %back = arith.subi %me, %s_i32 : i32
    %back_wrapped = arith.addi %back, %n : i32
    %send_slot_i32 = arith.remsi %back_wrapped, %n : i32
    %send_slot = arith.index_cast %send_slot_i32 : i32 to index
    %prev_unwrapped = arith.addi %back_wrapped, %n : i32
    %prev = arith.subi %prev_unwrapped, %one : i32
    %recv_slot_i32 = arith.remsi %prev, %n : i32
    %recv_slot = arith.index_cast %recv_slot_i32 : i32 to index
    %block = tpu.memref_slice %out[%send_slot, %c0, %c0] : memref<4x8x128xf32, #tpu.memory_space<hbm>> -> memref<8x128xf32, #tpu.memory_space<hbm>>
    %incoming = tpu.memref_slice %out[%recv_slot, %c0, %c0] : memref<4x8x128xf32, #tpu.memory_space<hbm>> -> memref<8x128xf32, #tpu.memory_space<hbm>>
    %recv_sem = tpu.memref_slice %recv_sems[%s] : !tpu.dma_semaphore<3> -> !tpu.dma_semaphore
    tpu.dma_start %block, %block, %send_sem, %recv_sem, device = %right : memref<8x128xf32, #tpu.memory_space<hbm>> to memref<8x128xf32, #tpu.memory_space<hbm>>
    tpu.dma_wait %send_sem, %block : memref<8x128xf32, #tpu.memory_space<hbm>>
    tpu.dma_wait %recv_sem, %incoming : memref<8x128xf32, #tpu.memory_space<hbm>>
  }
  func.return
}
```

Semantics the level-T simulator implements (and the verifiers here check statically
where they can):
- `tpu.dma_start` adds, as the bytes move, the byte count to the send semaphore (on this
  device, as the bytes leave the source) and to the receive semaphore (on the target
  device, as they land). `tpu.dma_wait %sem, %ref` blocks until `%sem` holds at least the
  byte size of `%ref`, then subtracts it. Waiting for bytes that never come is a deadlock;
  bytes never waited for leave a semaphore non-zero at exit; both are reported.
- `tpu.sem_signal %sem, %n` adds `%n` to `%sem` (on device `device` if given);
  `tpu.sem_wait %sem, %n` blocks until the local `%sem` is at least `%n`, then subtracts.
  Every semaphore must be zero when the kernel ends (or is deallocated).
- `tpu.barrier` blocks until every device of its group (all devices if none is named) has
  reached it; it does not wait for DMAs in flight.
- A `tpu.alloc` buffer lives until its `tpu.dealloc` or the end of the kernel; VMEM and
  SMEM allocations count against the chip's capacity; semaphores start at zero.
"""

from __future__ import annotations

import math
from abc import ABC
from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from typing import ClassVar

from shardc.dialects.hlo import accumulation_type as hlo_accumulation_type
from shardc.dialects.hlo import element_kind as hlo_element_kind
from shardc.dialects.sizes import element_bytes
from shardc.dialects.spmd import (
    GroupSpecOp,
    find_mesh,
    group_spec_str,
    lookup_mesh,
    parse_group_spec_after_on,
    verify_explicit_groups,
    verify_group_axes,
)
from shardc.dialects.syntax import i64_array, i64_attr, int_list_str, parse_int_list
from shardc.xdsl_patches import patch_memref_memory_spaces
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    FlatSymbolRefAttr,
    IndexType,
    IntAttr,
    IntegerAttr,
    IntegerType,
    MemRefType,
    NoneAttr,
    StringAttr,
    SymbolRefAttr,
    VectorType,
    i1,
    i32,
    i64,
)
from xdsl.dialects.utils import EnumAttribute
from xdsl.ir import (
    Attribute,
    BuiltinAttribute,
    Dialect,
    Operation,
    ParametrizedAttribute,
    SSAValue,
    TypeAttribute,
)
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    VarConstraint,
    base,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.parser import AttrParser, Parser, UnresolvedOperand
from xdsl.printer import Printer
from xdsl.traits import (
    EffectInstance,
    MemoryEffect,
    MemoryEffectKind,
    MemoryFreeEffect,
    MemoryReadEffect,
    MemoryWriteEffect,
    Pure,
)
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.str_enum import StrEnum


def element_kind(ty: Attribute) -> str | None:
    """
    The kind (`hlo.element_kind`) of the element types level T holds: every type level S
    runs (f64 f32 bf16 f16 f8E4M3FN f8E5M2, signless and unsigned integers of 2 to 64
    bits, i1, complex<f32> and complex<f64>); None for the others. Which ops `lower-to-tpu`
    lowers in which of them: lowering/element_types.py.
    """
    return hlo_element_kind(ty)


REDUCTION_KINDS = ("add", "mul", "max", "min")

################################################################################
# Memory spaces                                                                #
################################################################################


class MemorySpace(StrEnum):
    """Where a buffer lives (Mosaic's `TPU_MemorySpace`, the kinds shardc models)."""

    HBM = "hbm"
    VMEM = "vmem"
    SMEM = "smem"
    SEMAPHORE = "semaphore"


DATA_SPACES = (MemorySpace.HBM, MemorySpace.VMEM, MemorySpace.SMEM)
"""The memory spaces a data memref may live in (semaphore memory holds semaphores)."""
COMPUTE_SPACES = (MemorySpace.VMEM, MemorySpace.SMEM)
"""What `tpu.load`/`tpu.store` and `tpu.alloc` may touch: HBM is reached by DMA only."""


@irdl_attr_definition
class MemorySpaceAttr(EnumAttribute[MemorySpace], BuiltinAttribute):
    """
    A memref's memory space: `#tpu.memory_space<vmem>`.

    `semaphore` names the memory holding semaphores; those are `!tpu.semaphore` and
    `!tpu.dma_semaphore` values, never memrefs (see the module docstring).

    In the generic form it is the builtin string `"vmem"`: MLIR accepts as a memref's
    memory space only integer, string and dictionary attributes or attributes of a
    registered dialect, so `#tpu.memory_space<vmem>` is not valid MLIR where `tpu` is
    unregistered. Marking the class builtin is how xDSL lets an attribute print itself
    (`print_builtin`); `xdsl_patches.patch_memref_memory_spaces` reads `"vmem"` back as this
    attribute.
    """

    name = "tpu.memory_space"

    def print_builtin(self, printer: Printer) -> None:
        if printer.print_generic_format:
            printer.print_string_literal(self.data.value)
            return
        printer.print_string(f"#{self.name}")
        self.print_parameter(printer)

    def print_parameter(self, printer: Printer) -> None:
        with printer.in_angle_brackets():
            printer.print_string(self.data.value)

    @classmethod
    def parse_parameter(cls, parser: AttrParser) -> MemorySpace:
        with parser.in_angle_brackets():
            pos = parser.pos
            name = parser.parse_optional_identifier()
            if name not in {s.value for s in MemorySpace}:
                parser.raise_error(
                    "expected a memory space: " + ", ".join(s.value for s in MemorySpace),
                    pos,
                )
            return MemorySpace(name)


patch_memref_memory_spaces(
    {s.value for s in MemorySpace}, lambda name: MemorySpaceAttr(MemorySpace(name))
)


def memref_type(shape: Sequence[int], element_type: Attribute, space: MemorySpace) -> MemRefType:
    """`memref<shape x element_type, #tpu.memory_space<space>>`."""
    return MemRefType(element_type, shape, memory_space=MemorySpaceAttr(space))


def memory_space_of(ty: Attribute) -> MemorySpace | None:
    """The `#tpu.memory_space` of a memref type (None if it has none or is no memref)."""
    if isinstance(ty, MemRefType) and isinstance(ty.memory_space, MemorySpaceAttr):
        return ty.memory_space.data
    return None


def ref_bytes(ty: Attribute) -> int:
    """The byte size of a memref (what a DMA of it moves, what a `dma_wait` on it counts)."""
    assert isinstance(ty, MemRefType)
    return math.prod(ty.get_shape()) * element_bytes(ty.element_type)


def accumulation_type(element_type: Attribute) -> Attribute | None:
    """
    The element type `tpu.matmul` accumulates in for operands of `element_type`: level S's
    (`hlo.accumulation_type`: f32 for bf16/f16) for the types the MXU multiplies (floats
    and integers), None for the others (i1). Integers of 8 bits or fewer accumulate in 32
    (i32, ui32 for unsigned ones), as the MXU's int8 path does: wrapped to a narrower
    result at the end, the sum is level S's (which accumulates in the result type).
    """
    kind = element_kind(element_type)
    if isinstance(element_type, IntegerType) and 1 < element_type.width.data <= 8:
        return IntegerType(32, element_type.signedness.data)
    return hlo_accumulation_type(element_type) if kind in ("float", "int") else None


################################################################################
# Semaphore types                                                              #
################################################################################


MAX_SEMAPHORES = 65536
"""The most semaphores one array may hold: one per step of a ring over the largest mesh
(`spmd.MAX_DEVICES`); a real chip has far fewer, so the bound only keeps the simulator
from allocating without limit."""


class SemaphoreTypeBase(ParametrizedAttribute, TypeAttribute, ABC):
    """
    A semaphore (rank 0, written without parameters) or an array of them
    (`<7>`, `<2x3>`), living in semaphore memory.
    """

    shape: ArrayAttr[IntAttr]

    def __init__(self, shape: Sequence[int] = ()):
        super().__init__(ArrayAttr(IntAttr(s) for s in shape))

    def get_shape(self) -> tuple[int, ...]:
        return tuple(d.data for d in self.shape.data)

    def get_num_dims(self) -> int:
        return len(self.shape.data)

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        if parser.parse_optional_punctuation("<") is None:
            return (ArrayAttr(()),)
        pos = parser.pos
        dims = parser.parse_dimension_list()
        for d in dims:
            if d < 1:
                parser.raise_error(
                    "a semaphore array has static, positive dimensions", pos, parser.pos
                )
        if math.prod(dims) > MAX_SEMAPHORES:
            parser.raise_error(
                f"a semaphore array holds at most {MAX_SEMAPHORES} semaphores, got "
                f"{math.prod(dims)}",
                pos,
                parser.pos,
            )
        parser.parse_punctuation(">")
        return (ArrayAttr(IntAttr(d) for d in dims),)

    def print_parameters(self, printer: Printer) -> None:
        if self.shape.data:
            with printer.in_angle_brackets():
                printer.print_dimension_list(self.get_shape())

    def verify(self) -> None:
        if any(d < 1 for d in self.get_shape()):
            raise VerifyException(
                f"a semaphore array has positive dimensions, got {list(self.get_shape())}"
            )
        if math.prod(self.get_shape()) > MAX_SEMAPHORES:
            raise VerifyException(
                f"a semaphore array holds at most {MAX_SEMAPHORES} semaphores, got "
                f"{math.prod(self.get_shape())}"
            )


@irdl_attr_definition
class SemaphoreType(SemaphoreTypeBase):
    """
    `!tpu.semaphore`: a regular semaphore, an i32 counter any device may signal
    (`tpu.sem_signal`) and its owner waits on (`tpu.sem_wait`).
    """

    name = "tpu.semaphore"


@irdl_attr_definition
class DMASemaphoreType(SemaphoreTypeBase):
    """
    `!tpu.dma_semaphore`: counts the bytes of DMAs as they leave (send side) or land
    (receive side); awaited with `tpu.dma_wait`.
    """

    name = "tpu.dma_semaphore"


AnyRefConstr = base(MemRefType) | base(SemaphoreType) | base(DMASemaphoreType)
"""What `tpu.alloc` makes and `tpu.memref_slice` slices: memrefs and semaphore arrays."""
AnySemaphoreConstr = base(SemaphoreType) | base(DMASemaphoreType)


################################################################################
# Verification helpers                                                         #
################################################################################


def _spaces_str(spaces: Sequence[MemorySpace]) -> str:
    names = [s.value for s in spaces]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]


def check_data_ref(ty: Attribute, what: str, spaces: Sequence[MemorySpace]) -> MemRefType:
    """
    Check that `ty` is a memref shardc's level T can hold: static shape, identity layout
    (a slice's strides are its source's, known to the simulator, not to the type), a
    supported element type, and a `#tpu.memory_space` among `spaces`.
    """
    if not isinstance(ty, MemRefType):
        raise VerifyException(f"{what} must be a memref, got {ty}")
    space = memory_space_of(ty)
    if space is None:
        raise VerifyException(
            f"{what} must be in a #tpu.memory_space ({_spaces_str(spaces)}), got {ty}"
        )
    if space is MemorySpace.SEMAPHORE:
        raise VerifyException(
            f"{what} is a memref in semaphore memory, which holds only semaphores: "
            f"use !tpu.semaphore or !tpu.dma_semaphore values, got {ty}"
        )
    if space not in spaces:
        raise VerifyException(f"{what} must be in {_spaces_str(spaces)}, got {ty}")
    if any(d < 0 for d in ty.get_shape()):
        raise VerifyException(f"{what} must have a static shape, got {ty}")
    if not isinstance(ty.layout, NoneAttr):
        raise VerifyException(f"{what} must have the identity layout, got {ty}")
    if element_kind(ty.element_type) is None:
        raise VerifyException(
            f"{what} has unsupported element type {ty.element_type} (expected an hlo element type)"
        )
    return ty


def check_single_semaphore(ty: Attribute, what: str, kind: type[SemaphoreTypeBase]) -> None:
    """A semaphore operand: the right kind, rank 0 (an array is indexed first)."""
    want = "a DMA semaphore" if kind is DMASemaphoreType else "a regular semaphore"
    if not isinstance(ty, kind):
        hint = (
            "; regular semaphores are waited with tpu.sem_wait"
            if kind is DMASemaphoreType
            else "; DMA semaphores are waited with tpu.dma_wait"
        )
        raise VerifyException(f"{what} must be {want} ({kind.name}), got {ty}{hint}")
    if ty.get_num_dims():
        raise VerifyException(
            f"{what} must be a single semaphore (rank 0), got {ty}: pick one with tpu.memref_slice"
        )


def _check_vector(ty: Attribute, what: str) -> VectorType:
    if not isinstance(ty, VectorType):
        raise VerifyException(f"{what} must be a vector, got {ty}")
    if element_kind(ty.element_type) is None:
        raise VerifyException(
            f"{what} has unsupported element type {ty.element_type} (expected an hlo element type)"
        )
    if any(ty.get_scalable_dims()):
        raise VerifyException(f"{what} must not have scalable dimensions, got {ty}")
    return ty  # pyright: ignore[reportUnknownVariableType]


def _shape_str(shape: Sequence[int]) -> str:
    return "x".join(str(d) for d in shape) if shape else "scalar"


def _check_block_fits(
    block: Sequence[int], ref: Sequence[int], n_indices: int, what: str, ref_ty: Attribute
) -> None:
    """
    A block of shape `block` indexed at `n_indices` offsets into a ref of shape `ref`:
    one index per ref dimension; the block covers the ref's trailing dimensions (the
    leading ones are indexed and dropped), each at most the ref's size there.
    """
    if n_indices != len(ref):
        raise VerifyException(
            f"expected {len(ref)} indices (one per dimension of {ref_ty}), got {n_indices}"
        )
    if len(block) > len(ref):
        raise VerifyException(
            f"{what} has rank {len(block)}, more than the rank {len(ref)} of {ref_ty}"
        )
    trailing = ref[len(ref) - len(block) :]
    for i, (b, r) in enumerate(zip(block, trailing, strict=False)):
        if b > r:
            raise VerifyException(
                f"{what} {_shape_str(block)} does not fit in {ref_ty}: dimension {i} is "
                f"{b}, more than {r}"
            )


def _int_list(attr: DenseArrayBase) -> list[int]:
    return list(attr.get_values())  # pyright: ignore[reportArgumentType]


def _print_with_type(printer: Printer, ty: Attribute) -> None:
    printer.print_string(" : ")
    printer.print_attribute(ty)


################################################################################
# Allocation                                                                   #
################################################################################


class AllocatesResult(MemoryEffect):
    """
    The op allocates its result and has no other effect, so an unused allocation is dead
    (xDSL's `MemoryAllocEffect` names no value, which keeps every allocation alive).
    """

    @classmethod
    def get_effects(cls, op: Operation) -> AbstractSet[EffectInstance]:
        return {EffectInstance(MemoryEffectKind.ALLOC, op.results[0])}


BRANCH_ON_VALUE = "tpu.branch_on_value"
"""A unit attribute on an `scf.if` whose condition comes from a tensor's value (a dynamic
`hlo.case` index read from SMEM, lowering/control_flow.py): the level-T simulator's timing
mode reads no values, so it refuses such a branch instead of guessing it. (A scatter's
in-bounds test is not marked: timing takes every window in bounds.)"""


@irdl_op_definition
class AllocOp(IRDLOperation):
    """
    Scratch for the kernel: a VMEM or SMEM buffer, or semaphores (zero-initialized).

    ```mlir
    %buf = tpu.alloc : memref<2x8x128xf32, #tpu.memory_space<vmem>>
    %sems = tpu.alloc : !tpu.dma_semaphore<7>
    ```

    HBM is not scratch: HBM buffers are the kernel's arguments (or `memref.alloc` in
    `#tpu.memory_space<hbm>`, the runtime's allocation, as XLA's buffer assignment).
    """

    name = "tpu.alloc"

    result = result_def(AnyRefConstr)

    traits = traits_def(AllocatesResult())

    assembly_format = "attr-dict `:` type($result)"

    def __init__(self, result_type: Attribute):
        super().__init__(result_types=[result_type])

    def verify_(self) -> None:
        _check_scratch(self.result.type, "the allocated buffer")


def _check_scratch(ty: Attribute, what: str) -> None:
    if isinstance(ty, SemaphoreTypeBase):
        return
    if memory_space_of(ty) is MemorySpace.HBM:
        raise VerifyException(
            "tpu.alloc allocates VMEM, SMEM and semaphores; HBM buffers are kernel "
            f"arguments or memref.alloc, got {ty}"
        )
    check_data_ref(ty, what, COMPUTE_SPACES)


@irdl_op_definition
class DeallocOp(IRDLOperation):
    """
    Ends the life of a `tpu.alloc` buffer (its VMEM/SMEM is free again): `tpu.dealloc
    %buf : memref<...>`. A deallocated semaphore must be zero.
    """

    name = "tpu.dealloc"

    ref = operand_def(AnyRefConstr)

    traits = traits_def(MemoryFreeEffect())

    assembly_format = "$ref attr-dict `:` type($ref)"

    def __init__(self, ref: SSAValue | Operation):
        super().__init__(operands=[ref])

    def verify_(self) -> None:
        _check_scratch(self.ref.type, "the deallocated buffer")


################################################################################
# DMA                                                                          #
################################################################################


def _parse_keyword_operand(parser: Parser, keyword: str) -> UnresolvedOperand | None:
    """`, keyword = %x` if the next tokens are `, keyword` (the comma already parsed)."""
    if parser.parse_optional_keyword(keyword) is None:
        return None
    parser.parse_punctuation("=")
    return parser.parse_unresolved_operand()


@irdl_op_definition
class DMAStartOp(IRDLOperation):
    """
    Starts an asynchronous copy of `%src` into `%dst` (same shape and element type, any
    memory spaces but semaphore memory):

    ```mlir
    tpu.dma_start %src, %dst, %recv_sem : memref<8x128xf32, #tpu.memory_space<hbm>> to memref<8x128xf32, #tpu.memory_space<vmem>>
    tpu.dma_start %src, %dst, %send_sem, %recv_sem, device = %right : memref<8x128xf32, #tpu.memory_space<vmem>> to memref<8x128xf32, #tpu.memory_space<vmem>>
    ```

    Three operands are Pallas's `make_async_copy(src, dst, sem)`, four its
    `make_async_remote_copy(src, dst, send_sem, recv_sem, device_id)`. With `device`
    (a logical device id, i32) the DMA pushes into `%dst` and `%recv_sem` of that
    device; the send semaphore, which tells the sender when `%src` may be reused, is
    then required (Mosaic's rule). Semaphores are single `!tpu.dma_semaphore`s, so their
    types are not written; the types are `%src`'s `to` `%dst`'s (as `memref.copy`).
    """

    name = "tpu.dma_start"

    src = operand_def(MemRefType)
    dst = operand_def(MemRefType)
    send_sem = opt_operand_def(AnySemaphoreConstr)
    recv_sem = operand_def(AnySemaphoreConstr)
    device = opt_operand_def(i32)

    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    def __init__(
        self,
        src: SSAValue | Operation,
        dst: SSAValue | Operation,
        *,
        recv_sem: SSAValue | Operation,
        send_sem: SSAValue | Operation | None = None,
        device: SSAValue | Operation | None = None,
    ):
        super().__init__(
            operands=[
                [src],
                [dst],
                [send_sem] if send_sem is not None else [],
                [recv_sem],
                [device] if device is not None else [],
            ]
        )

    @property
    def is_remote(self) -> bool:
        return self.device is not None

    def verify_(self) -> None:
        src = check_data_ref(self.src.type, "DMA source", DATA_SPACES)
        dst = check_data_ref(self.dst.type, "DMA target", DATA_SPACES)
        if src.get_shape() != dst.get_shape():
            raise VerifyException(
                f"DMA source shape {_shape_str(src.get_shape())} and target shape "
                f"{_shape_str(dst.get_shape())} differ"
            )
        if src.element_type != dst.element_type:
            raise VerifyException(
                f"DMA source element type {src.element_type} and target element type "
                f"{dst.element_type} differ"
            )
        if self.send_sem is not None:
            check_single_semaphore(self.send_sem.type, "send semaphore", DMASemaphoreType)
        check_single_semaphore(self.recv_sem.type, "receive semaphore", DMASemaphoreType)
        if self.device is not None and self.send_sem is None:
            raise VerifyException(
                "a remote DMA (with `device`) needs a send semaphore: "
                "tpu.dma_start %src, %dst, %send_sem, %recv_sem, device = %id"
            )

    @classmethod
    def parse(cls, parser: Parser) -> DMAStartOp:
        pos = parser.pos
        operands = [parser.parse_unresolved_operand()]
        device: UnresolvedOperand | None = None
        while parser.parse_optional_punctuation(","):
            device = _parse_keyword_operand(parser, "device")
            if device is not None:
                break
            operands.append(parser.parse_unresolved_operand())
        if len(operands) not in (3, 4):
            parser.raise_error(
                "tpu.dma_start takes %src, %dst, %recv_sem (local) or %src, %dst, "
                f"%send_sem, %recv_sem; got {len(operands)} operands",
                pos,
                parser.pos,
            )
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        src_type = parser.parse_type()
        parser.parse_keyword("to")
        dst_type = parser.parse_type()
        sem = DMASemaphoreType()
        src, dst, *sems = parser.resolve_operands(
            operands, [src_type, dst_type] + [sem] * (len(operands) - 2), pos
        )
        op = cls(
            src,
            dst,
            recv_sem=sems[-1],
            send_sem=sems[0] if len(sems) == 2 else None,
            device=parser.resolve_operand(device, i32) if device is not None else None,
        )
        op.attributes |= attrs
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        operands = [self.src, self.dst]
        if self.send_sem is not None:
            operands.append(self.send_sem)
        operands.append(self.recv_sem)
        printer.print_list(operands, printer.print_operand)
        if self.device is not None:
            printer.print_string(", device = ")
            printer.print_operand(self.device)
        printer.print_op_attributes(self.attributes, reserved_attr_names=("operandSegmentSizes",))
        printer.print_string(" : ")
        printer.print_attribute(self.src.type)
        printer.print_string(" to ")
        printer.print_attribute(self.dst.type)


@irdl_op_definition
class DMAWaitOp(IRDLOperation):
    """
    Waits until the DMA semaphore `%sem` counts the bytes of `%ref`, then subtracts them:
    on a receive semaphore the bytes of `%ref` have arrived, on a send semaphore they
    have left (Pallas's `wait_recv` / `wait_send`; Mosaic's `tpu.wait_dma2`).

    ```mlir
    tpu.dma_wait %recv_sem, %dst : memref<8x128xf32, #tpu.memory_space<vmem>>
    ```
    """

    name = "tpu.dma_wait"

    sem = operand_def(AnySemaphoreConstr)
    ref = operand_def(MemRefType)

    def __init__(self, sem: SSAValue | Operation, ref: SSAValue | Operation):
        super().__init__(operands=[sem, ref])

    def verify_(self) -> None:
        check_single_semaphore(self.sem.type, "the waited semaphore", DMASemaphoreType)
        check_data_ref(self.ref.type, "the waited buffer", DATA_SPACES)

    @classmethod
    def parse(cls, parser: Parser) -> DMAWaitOp:
        pos = parser.pos
        sem = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        ref = parser.parse_unresolved_operand()
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        ref_type = parser.parse_type()
        values = parser.resolve_operands([sem, ref], [DMASemaphoreType(), ref_type], pos)
        op = cls(*values)
        op.attributes |= attrs
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_list([self.sem, self.ref], printer.print_operand)
        printer.print_op_attributes(self.attributes)
        _print_with_type(printer, self.ref.type)


################################################################################
# Semaphores and synchronization                                               #
################################################################################


@irdl_op_definition
class SemSignalOp(IRDLOperation):
    """
    Adds `%n` (i32) to a regular semaphore, on this device or on device `device`:

    ```mlir
    tpu.sem_signal %sem, %c1
    tpu.sem_signal %capacity, %c1, device = %left
    ```
    """

    name = "tpu.sem_signal"

    sem = operand_def(AnySemaphoreConstr)
    amount = operand_def(i32)
    device = opt_operand_def(i32)

    def __init__(
        self,
        sem: SSAValue | Operation,
        amount: SSAValue | Operation,
        device: SSAValue | Operation | None = None,
    ):
        super().__init__(operands=[sem, amount, [device] if device is not None else []])

    @property
    def is_remote(self) -> bool:
        return self.device is not None

    def verify_(self) -> None:
        check_single_semaphore(self.sem.type, "the signalled semaphore", SemaphoreType)

    @classmethod
    def parse(cls, parser: Parser) -> SemSignalOp:
        pos = parser.pos
        sem = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        amount = parser.parse_unresolved_operand()
        device = None
        if parser.parse_optional_punctuation(","):
            parser.parse_keyword("device")
            parser.parse_punctuation("=")
            device = parser.parse_unresolved_operand()
        attrs = parser.parse_optional_attr_dict()
        sem_v, amount_v = parser.resolve_operands([sem, amount], [SemaphoreType(), i32], pos)
        op = cls(
            sem_v,
            amount_v,
            parser.resolve_operand(device, i32) if device is not None else None,
        )
        op.attributes |= attrs
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_list([self.sem, self.amount], printer.print_operand)
        if self.device is not None:
            printer.print_string(", device = ")
            printer.print_operand(self.device)
        printer.print_op_attributes(self.attributes)


@irdl_op_definition
class SemWaitOp(IRDLOperation):
    """
    Blocks until the local regular semaphore is at least `%n` (i32), then subtracts
    `%n`: `tpu.sem_wait %sem, %c1`.
    """

    name = "tpu.sem_wait"

    sem = operand_def(AnySemaphoreConstr)
    amount = operand_def(i32)

    def __init__(self, sem: SSAValue | Operation, amount: SSAValue | Operation):
        super().__init__(operands=[sem, amount])

    def verify_(self) -> None:
        check_single_semaphore(self.sem.type, "the waited semaphore", SemaphoreType)

    @classmethod
    def parse(cls, parser: Parser) -> SemWaitOp:
        pos = parser.pos
        sem = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        amount = parser.parse_unresolved_operand()
        attrs = parser.parse_optional_attr_dict()
        values = parser.resolve_operands([sem, amount], [SemaphoreType(), i32], pos)
        op = cls(*values)
        op.attributes |= attrs
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_list([self.sem, self.amount], printer.print_operand)
        printer.print_op_attributes(self.attributes)


@irdl_op_definition
class BarrierOp(GroupSpecOp):
    """
    Blocks until every device of its group has reached it (all devices if no group is
    named); groups are written as a collective's (DESIGN.md, level S):

    ```mlir
    tpu.barrier
    tpu.barrier on @mesh["model"]
    tpu.barrier on groups [[0, 1], [2, 3]]
    ```

    What Pallas builds from the barrier semaphore: a kernel that pushes into another
    device's buffers first makes sure that device has entered the kernel.
    """

    name = "tpu.barrier"

    def __init__(
        self,
        mesh: str | None = None,
        axes: Sequence[str] = (),
        groups: Sequence[Sequence[int]] | None = None,
    ):
        props: dict[str, Attribute | None] = {}
        if mesh is not None:
            props["mesh"] = SymbolRefAttr(mesh)
            props["mesh_axes"] = ArrayAttr(StringAttr(a) for a in axes)
        if groups is not None:
            props["groups"] = ArrayAttr(i64_array(g) for g in groups)
        super().__init__(properties=props)

    def device_groups(self, device_count: int | None = None) -> list[list[int]]:
        """The groups that synchronize (one group of every device without a spec)."""
        groups = self.spec_groups()
        if groups is not None:
            return groups
        if device_count is None:
            mesh = find_mesh(self)
            assert mesh is not None, "a barrier over all devices needs the program's mesh"
            device_count = mesh.device_count
        return [list(range(device_count))]

    def verify_(self) -> None:
        if self.mesh_axes is not None and self.mesh is None:
            raise VerifyException("mesh_axes without a mesh")
        if self.mesh is not None and self.groups is not None:
            raise VerifyException(
                "a barrier names either `on @mesh[...]`, `on groups` or nothing (all devices)"
            )
        if self.mesh is not None:
            verify_group_axes(self, self.mesh.root_reference.data, self.axes)
        explicit = self.explicit_groups
        if explicit is not None:
            verify_explicit_groups(self, explicit)

    @classmethod
    def parse(cls, parser: Parser) -> BarrierOp:
        props: dict[str, Attribute] = {}
        if parser.parse_optional_keyword("on") is not None:
            props = parse_group_spec_after_on(parser)
        else:
            pos = parser.pos
            if parser.parse_optional_symbol_name() is not None:
                parser.raise_error("a barrier's group follows `on`: tpu.barrier on @mesh[...]", pos)
        attrs = parser.parse_optional_attr_dict()
        op = cls.create(properties=props)
        op.attributes |= attrs
        return op

    def print(self, printer: Printer) -> None:
        explicit = self.explicit_groups
        if explicit is not None or self.mesh is not None:
            mesh = self.mesh.root_reference.data if self.mesh is not None else None
            printer.print_string(" on " + group_spec_str(mesh, self.axes, explicit))
        printer.print_op_attributes(self.attributes)


################################################################################
# Device identity                                                              #
################################################################################


@irdl_op_definition
class DeviceIdOp(IRDLOperation):
    """
    This device's logical id (row-major over the mesh axes, as `spmd.mesh` numbers
    devices): `%d = tpu.device_id : i32`. Remote DMAs and signals name devices by it.
    """

    name = "tpu.device_id"

    result = result_def(i32)

    traits = traits_def(Pure())

    assembly_format = "attr-dict `:` type($result)"

    def __init__(self):
        super().__init__(result_types=[i32])


@irdl_op_definition
class AxisIndexOp(IRDLOperation):
    """
    This device's coordinate on a mesh axis (`spmd.axis_index` at level T):
    `%i = tpu.axis_index @mesh["model"] : i32`.
    """

    name = "tpu.axis_index"

    mesh = prop_def(FlatSymbolRefAttr)
    axis = prop_def(StringAttr)
    result = result_def(i32)

    traits = traits_def(Pure())

    def __init__(self, mesh: str, axis: str):
        super().__init__(
            result_types=[i32],
            properties={"mesh": SymbolRefAttr(mesh), "axis": StringAttr(axis)},
        )

    def verify_(self) -> None:
        name = self.mesh.root_reference.data
        mesh = lookup_mesh(self, name)
        if self.axis.data not in mesh.names:
            raise VerifyException(f'mesh @{name} has no axis "{self.axis.data}"')

    @classmethod
    def parse(cls, parser: Parser) -> AxisIndexOp:
        mesh = parser.parse_symbol_name()
        with parser.in_square_brackets():
            axis = parser.parse_str_literal(" (a mesh axis name)")
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        pos = parser.pos
        if parser.parse_type() != i32:
            parser.raise_error("tpu.axis_index produces an i32", pos, parser.pos)
        op = cls(mesh.data, axis)
        op.attributes |= attrs
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(f' @{self.mesh.root_reference.data}["{self.axis.data}"]')
        printer.print_op_attributes(self.attributes)
        _print_with_type(printer, self.result.type)


################################################################################
# References: slices and reshapes                                              #
################################################################################


@irdl_op_definition
class MemRefSliceOp(IRDLOperation):
    """
    A view of a block of a memref, or of part of a semaphore array, at dynamic offsets
    (one `index` per source dimension). The result's shape is the block's: leading
    source dimensions beyond the result's rank are indexed and dropped, so
    `%sems[%i]` picks one semaphore and `%buf[%slot, %c0, %c0]` one block of a double
    buffer. Offsets + sizes must lie inside the source (checked by the simulator).

    ```mlir
    %blk = tpu.memref_slice %out[%i, %c0] : memref<32x128xf32, #tpu.memory_space<hbm>> -> memref<8x128xf32, #tpu.memory_space<hbm>>
    %sem = tpu.memref_slice %sems[%s] : !tpu.dma_semaphore<7> -> !tpu.dma_semaphore
    ```
    """

    name = "tpu.memref_slice"

    source = operand_def(AnyRefConstr)
    indices = var_operand_def(IndexType)
    result = result_def(AnyRefConstr)

    traits = traits_def(Pure())

    assembly_format = "$source `[` $indices `]` attr-dict `:` type($source) `->` type($result)"

    def __init__(
        self,
        source: SSAValue | Operation,
        indices: Sequence[SSAValue | Operation],
        result_type: Attribute,
    ):
        super().__init__(operands=[source, indices], result_types=[result_type])

    def verify_(self) -> None:
        src, res = self.source.type, self.result.type
        if isinstance(src, SemaphoreTypeBase) or isinstance(res, SemaphoreTypeBase):
            if type(src) is not type(res):
                raise VerifyException(
                    f"a slice keeps the kind of its source: {src} cannot give {res}"
                )
            assert isinstance(src, SemaphoreTypeBase) and isinstance(res, SemaphoreTypeBase)
            src_shape, res_shape = src.get_shape(), res.get_shape()
        else:
            s = check_data_ref(src, "the sliced memref", DATA_SPACES)
            r = check_data_ref(res, "the slice", DATA_SPACES)
            if s.memory_space != r.memory_space:
                raise VerifyException(
                    f"a slice stays in its source's memory space: {s} cannot give {r}"
                )
            if s.element_type != r.element_type:
                raise VerifyException(
                    f"a slice keeps the element type {s.element_type}, got {r.element_type}"
                )
            src_shape, res_shape = s.get_shape(), r.get_shape()
        _check_block_fits(res_shape, src_shape, len(self.indices), "the slice", src)


@irdl_op_definition
class MemRefReshapeOp(IRDLOperation):
    """
    The same bytes with another row-major shape (XLA's bitcast reshape):
    `%r = tpu.memref_reshape %buf : memref<16x128xf32, #tpu.memory_space<hbm>> ->
    memref<2048xf32, #tpu.memory_space<hbm>>`. The source must be contiguous (a whole
    buffer, or a slice of whole trailing rows), which the simulator checks.
    """

    name = "tpu.memref_reshape"

    source = operand_def(MemRefType)
    result = result_def(MemRefType)

    traits = traits_def(Pure())

    assembly_format = "$source attr-dict `:` type($source) `->` type($result)"

    def __init__(self, source: SSAValue | Operation, result_type: MemRefType):
        super().__init__(operands=[source], result_types=[result_type])

    def verify_(self) -> None:
        s = check_data_ref(self.source.type, "the reshaped memref", DATA_SPACES)
        r = check_data_ref(self.result.type, "the reshape", DATA_SPACES)
        if s.memory_space != r.memory_space:
            raise VerifyException(
                f"a reshape stays in its source's memory space: {s} cannot give {r}"
            )
        if s.element_type != r.element_type:
            raise VerifyException(
                f"a reshape keeps the element type {s.element_type}, got {r.element_type}"
            )
        if math.prod(s.get_shape()) != math.prod(r.get_shape()):
            raise VerifyException(
                f"a reshape keeps the element count: {s} has {math.prod(s.get_shape())}, "
                f"{r} has {math.prod(r.get_shape())}"
            )


@irdl_op_definition
class MemRefBitcastOp(IRDLOperation):
    """
    The same bytes read as another element type (hlo.bitcast_convert of a whole buffer):
    `%r = tpu.memref_bitcast %buf : memref<2x2xui32, #tpu.memory_space<hbm>> ->
    memref<2xui64, #tpu.memory_space<hbm>>`. As hlo.bitcast_convert's shapes: one width
    keeps the shape, a narrower type adds a last dimension of the ratio, a wider one drops
    the source's last dimension (of the ratio). The source must be contiguous.
    """

    name = "tpu.memref_bitcast"

    source = operand_def(MemRefType)
    result = result_def(MemRefType)

    traits = traits_def(Pure())

    assembly_format = "$source attr-dict `:` type($source) `->` type($result)"

    def __init__(self, source: SSAValue | Operation, result_type: MemRefType):
        super().__init__(operands=[source], result_types=[result_type])

    def verify_(self) -> None:
        s = check_data_ref(self.source.type, "the bitcast memref", DATA_SPACES)
        r = check_data_ref(self.result.type, "the bitcast", DATA_SPACES)
        if s.memory_space != r.memory_space:
            raise VerifyException(f"a bitcast stays in its source's memory space: {s}, {r}")
        a, b = element_bytes(s.element_type), element_bytes(r.element_type)
        shape = list(s.get_shape())
        if a > b:
            shape = [*shape, a // b]
        elif a < b and shape and shape[-1] * a == b:
            shape = shape[:-1]
        if shape != list(r.get_shape()):
            raise VerifyException(f"bitcast_convert's shapes: {s} cannot be read as {r}")


################################################################################
# Vector loads and stores                                                      #
################################################################################


def _check_load_store(ref: Attribute, vec: Attribute, n_indices: int, verb: str) -> None:
    if memory_space_of(ref) is MemorySpace.HBM:
        raise VerifyException(
            f"tpu.{verb} accesses VMEM or SMEM only (HBM is reached by DMA), got {ref}"
        )
    m = check_data_ref(ref, f"the {verb} memref", COMPUTE_SPACES)
    v = _check_vector(vec, "the vector")
    if v.element_type != m.element_type:
        raise VerifyException(
            f"vector element type {v.element_type} differs from the memref's {m.element_type}"
        )
    _check_block_fits(v.get_shape(), m.get_shape(), n_indices, "vector", m)


@irdl_op_definition
class LoadOp(IRDLOperation):
    """
    Reads a block of a VMEM/SMEM memref into a vector (one `index` per memref
    dimension; the vector covers the trailing dimensions, as `tpu.memref_slice`):

    ```mlir
    %v = tpu.load %buf[%slot, %c0, %c0] : memref<2x8x128xf32, #tpu.memory_space<vmem>>, vector<8x128xf32>
    ```
    Scalars (e.g. from SMEM) are `memref.load`.
    """

    name = "tpu.load"

    ref = operand_def(MemRefType)
    indices = var_operand_def(IndexType)
    result = result_def(VectorType)

    traits = traits_def(MemoryReadEffect())

    assembly_format = "$ref `[` $indices `]` attr-dict `:` type($ref) `,` type($result)"

    def __init__(
        self,
        ref: SSAValue | Operation,
        indices: Sequence[SSAValue | Operation],
        result_type: VectorType,
    ):
        super().__init__(operands=[ref, indices], result_types=[result_type])

    def verify_(self) -> None:
        _check_load_store(self.ref.type, self.result.type, len(self.indices), "load")


@irdl_op_definition
class StoreOp(IRDLOperation):
    """
    Writes a vector into a block of a VMEM/SMEM memref (types as `vector.store`):

    ```mlir
    tpu.store %v, %buf[%c0, %c0] : memref<8x128xf32, #tpu.memory_space<vmem>>, vector<8x128xf32>
    ```
    """

    name = "tpu.store"

    value = operand_def(VectorType)
    ref = operand_def(MemRefType)
    indices = var_operand_def(IndexType)

    traits = traits_def(MemoryWriteEffect())

    assembly_format = "$value `,` $ref `[` $indices `]` attr-dict `:` type($ref) `,` type($value)"

    def __init__(
        self,
        value: SSAValue | Operation,
        ref: SSAValue | Operation,
        indices: Sequence[SSAValue | Operation],
    ):
        super().__init__(operands=[value, ref, indices])

    def verify_(self) -> None:
        _check_load_store(self.ref.type, self.value.type, len(self.indices), "store")


################################################################################
# Vector compute                                                               #
################################################################################


@irdl_op_definition
class MatmulOp(IRDLOperation):
    """
    The MXU: `%r = %acc + %lhs x %rhs` on 2-D vectors, [m, k] x [k, n] -> [m, n], with
    products summed in the accumulator's type (f32 for bf16/f16/f32 operands; see
    `accumulation_type`). Types: lhs, rhs `->` accumulator and result.

    ```mlir
    %r = tpu.matmul %a, %b, %acc : vector<8x128xbf16>, vector<128x256xbf16> -> vector<8x256xf32>
    ```
    """

    name = "tpu.matmul"

    ACC: ClassVar = VarConstraint("ACC", base(VectorType))

    lhs = operand_def(VectorType)
    rhs = operand_def(VectorType)
    acc = operand_def(ACC)
    result = result_def(ACC)

    traits = traits_def(Pure())

    assembly_format = (
        "$lhs `,` $rhs `,` $acc attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)"
    )

    def __init__(
        self,
        lhs: SSAValue | Operation,
        rhs: SSAValue | Operation,
        acc: SSAValue | Operation,
    ):
        acc = SSAValue.get(acc)
        super().__init__(operands=[lhs, rhs, acc], result_types=[acc.type])

    def verify_(self) -> None:
        lhs = _check_vector(self.lhs.type, "lhs")
        rhs = _check_vector(self.rhs.type, "rhs")
        acc = _check_vector(self.acc.type, "the accumulator")
        for what, v in (("lhs", lhs), ("rhs", rhs), ("the accumulator", acc)):
            if v.get_num_dims() != 2:
                raise VerifyException(f"{what} must be a 2-D vector, got {v}")
        if lhs.element_type != rhs.element_type:
            raise VerifyException(
                f"lhs and rhs element types differ: {lhs.element_type} vs {rhs.element_type}"
            )
        want = accumulation_type(lhs.element_type)
        if want is None:
            raise VerifyException(f"the MXU does not multiply {lhs.element_type}")
        if acc.element_type != want:
            raise VerifyException(
                f"{lhs.element_type} operands accumulate in {want}, got an accumulator "
                f"of {acc.element_type}"
            )
        (m, k), (k2, n) = lhs.get_shape(), rhs.get_shape()
        if k != k2:
            raise VerifyException(f"contracting sizes differ: lhs is {m}x{k}, rhs is {k2}x{n}")
        if acc.get_shape() != (m, n):
            raise VerifyException(
                f"the accumulator must be {m}x{n} (lhs {m}x{k} x rhs {k2}x{n}), got "
                f"{_shape_str(acc.get_shape())}"
            )


@irdl_op_definition
class ReduceOp(IRDLOperation):
    """
    `%r = %acc (+) reduce(%v over dims)`, as `vector.multi_reduction` (which xDSL 0.74
    lacks); kinds `add mul max min` as `hlo.reduce`. The result has the source's
    shape without `dims` and its element type (extend bf16 to f32 first to accumulate
    in f32); reducing every dimension gives a 0-d vector.

    ```mlir
    %r = tpu.reduce add %v, %acc, dims = [1] : vector<8x128xf32> -> vector<8xf32>
    ```
    """

    name = "tpu.reduce"

    T: ClassVar = VarConstraint("T", base(VectorType))

    source = operand_def(VectorType)
    acc = operand_def(T)
    kind = prop_def(StringAttr)
    dims = prop_def(DenseArrayBase)
    result = result_def(T)

    traits = traits_def(Pure())

    def __init__(
        self,
        kind: str,
        source: SSAValue | Operation,
        acc: SSAValue | Operation,
        dims: Sequence[int],
    ):
        acc = SSAValue.get(acc)
        super().__init__(
            operands=[source, acc],
            result_types=[acc.type],
            properties={"kind": StringAttr(kind), "dims": i64_array(dims)},
        )

    @property
    def reduced_dims(self) -> list[int]:
        return _int_list(self.dims)

    def verify_(self) -> None:
        if self.kind.data not in REDUCTION_KINDS:
            raise VerifyException(
                f'unknown reduction kind "{self.kind.data}" (expected {", ".join(REDUCTION_KINDS)})'
            )
        src = _check_vector(self.source.type, "the source")
        res = _check_vector(self.result.type, "the result")
        dims = self.reduced_dims
        for d in dims:
            if not 0 <= d < src.get_num_dims():
                raise VerifyException(f"dim {d} is out of range for {src}")
            if dims.count(d) > 1:
                raise VerifyException(f"dim {d} is reduced twice")
        want = VectorType(
            src.element_type,
            [s for i, s in enumerate(src.get_shape()) if i not in dims],
        )
        if res != want:
            raise VerifyException(
                f"reducing dims {int_list_str(dims)} of {src} gives {want}, got {res}"
            )

    @classmethod
    def parse(cls, parser: Parser) -> ReduceOp:
        kpos = parser.pos
        kind = parser.parse_optional_identifier()
        if kind not in REDUCTION_KINDS:
            parser.raise_error("expected a reduction kind: " + ", ".join(REDUCTION_KINDS), kpos)
        pos = parser.pos
        source = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        acc = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        parser.parse_keyword("dims")
        parser.parse_punctuation("=")
        dims = parse_int_list(parser)
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        source_type = parser.parse_type()
        parser.parse_punctuation("->")
        result_type = parser.parse_type()
        values = parser.resolve_operands([source, acc], [source_type, result_type], pos)
        op = cls(kind, values[0], values[1], dims)
        op.attributes |= attrs
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(f" {self.kind.data} ")
        printer.print_list([self.source, self.acc], printer.print_operand)
        printer.print_string(f", dims = {int_list_str(self.reduced_dims)}")
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.source.type)
        printer.print_string(" -> ")
        printer.print_attribute(self.result.type)


@irdl_op_definition
class TransposeOp(IRDLOperation):
    """
    Permutes a vector's dimensions (result dimension i is source dimension dims[i]),
    as `hlo.transpose`; on a TPU the XLU does it. Blocks of `hlo.transpose`, and dot
    operands whose contracting dimension is not [1] x [0], go through it:

    ```mlir
    %t = tpu.transpose %v, dims = [1, 0] : vector<8x128xf32> -> vector<128x8xf32>
    ```
    """

    name = "tpu.transpose"

    source = operand_def(VectorType)
    permutation = prop_def(DenseArrayBase)
    result = result_def(VectorType)

    traits = traits_def(Pure())

    def __init__(self, source: SSAValue | Operation, permutation: Sequence[int]):
        source = SSAValue.get(source)
        assert isinstance(source.type, VectorType)
        shape = source.type.get_shape()
        result = VectorType(source.type.element_type, [shape[p] for p in permutation])
        super().__init__(
            operands=[source],
            result_types=[result],
            properties={"permutation": i64_array(permutation)},
        )

    @property
    def dims(self) -> list[int]:
        return _int_list(self.permutation)

    def verify_(self) -> None:
        src = _check_vector(self.source.type, "the source")
        res = _check_vector(self.result.type, "the result")
        dims = self.dims
        if sorted(dims) != list(range(src.get_num_dims())):
            raise VerifyException(
                f"dims {int_list_str(dims)} is not a permutation of the "
                f"{src.get_num_dims()} dimensions of {src}"
            )
        want = VectorType(src.element_type, [src.get_shape()[d] for d in dims])
        if res != want:
            raise VerifyException(
                f"transposing {src} by {int_list_str(dims)} gives {want}, got {res}"
            )

    @classmethod
    def parse(cls, parser: Parser) -> TransposeOp:
        pos = parser.pos
        source = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        parser.parse_keyword("dims")
        parser.parse_punctuation("=")
        dims = parse_int_list(parser)
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        source_type = parser.parse_type()
        parser.parse_punctuation("->")
        result_type = parser.parse_type()
        (value,) = parser.resolve_operands([source], [source_type], pos)
        op = cls.create(
            operands=[value],
            result_types=[result_type],
            properties={"permutation": i64_array(dims)},
        )
        op.attributes |= attrs
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.source)
        printer.print_string(f", dims = {int_list_str(self.dims)}")
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.source.type)
        printer.print_string(" -> ")
        printer.print_attribute(self.result.type)


@irdl_op_definition
class IotaOp(IRDLOperation):
    """
    A vector counting along one dimension (0, 1, 2, ... along `dim`, constant along the
    others), as `hlo.iota`; a block of a larger iota adds its offset with `arith`:

    ```mlir
    %i = tpu.iota dim = 1 : vector<8x128xi32>
    ```
    """

    name = "tpu.iota"

    dim = prop_def(IntegerAttr[type(i64)])  # pyright: ignore
    result = result_def(VectorType)

    traits = traits_def(Pure())

    def __init__(self, result_type: VectorType, dim: int):
        super().__init__(result_types=[result_type], properties={"dim": i64_attr(dim)})

    def verify_(self) -> None:
        res = _check_vector(self.result.type, "the result")
        if element_kind(res.element_type) == "bool":
            raise VerifyException(f"iota counts in integers or floats, got {res}")
        dim = self.dim.value.data
        if not 0 <= dim < res.get_num_dims():
            raise VerifyException(f"dim {dim} is out of range for {res}")

    @classmethod
    def parse(cls, parser: Parser) -> IotaOp:
        parser.parse_keyword("dim")
        parser.parse_punctuation("=")
        dim = parser.parse_integer(allow_boolean=False)
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        result_type = parser.parse_type()
        op = cls.create(result_types=[result_type], properties={"dim": i64_attr(dim)})
        op.attributes |= attrs
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(f" dim = {self.dim.value.data}")
        printer.print_op_attributes(self.attributes)
        _print_with_type(printer, self.result.type)


@irdl_op_definition
class ConvertOp(IRDLOperation):
    """
    Converts a vector's elements to another type of the same shape, as `hlo.convert`
    (StableHLO: float to integer truncates toward zero and saturates, NaN gives 0;
    to a float rounds to nearest even; to i1 is `!= 0`; i1 is 0 or 1; integers wrap).
    Mosaic has `tpu.fptosi` / `tpu.sitofp` and uses `arith.extsi`/`trunci`/`extui`/
    `uitofp` on vectors; xDSL 0.74's arith casts take scalars only (except `extf` /
    `truncf`, which stay arith), hence this op:

    ```mlir
    %i = tpu.convert %v : vector<8x128xf32> -> vector<8x128xi32>
    ```
    """

    name = "tpu.convert"

    source = operand_def(VectorType)
    result = result_def(VectorType)

    traits = traits_def(Pure())

    assembly_format = "$source attr-dict `:` type($source) `->` type($result)"

    def __init__(self, source: SSAValue | Operation, result_type: VectorType):
        super().__init__(operands=[source], result_types=[result_type])

    def verify_(self) -> None:
        src = _check_vector(self.source.type, "the source")
        res = _check_vector(self.result.type, "the result")
        for v in (src, res):
            if element_kind(v.element_type) is None:
                raise VerifyException(f"cannot convert {v.element_type}")
        if src.get_shape() != res.get_shape():
            raise VerifyException(f"a conversion keeps the shape: {src} -> {res}")


FLOAT_PREDICATES = (
    "oeq",
    "one",
    "olt",
    "ole",
    "ogt",
    "oge",
    "ueq",
    "une",
    "ult",
    "ule",
    "ugt",
    "uge",
    "ord",
    "uno",
)
INT_PREDICATES = ("eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge")


@irdl_op_definition
class CmpOp(IRDLOperation):
    """
    Elementwise comparison of two vectors into a mask, with `arith.cmpf`'s predicates for
    floats and `arith.cmpi`'s for integers and i1. Mosaic uses `arith.cmpf`/`cmpi` on
    vectors; xDSL 0.74's arith comparisons only give a scalar i1, hence this op:

    ```mlir
    %m = tpu.cmp olt, %a, %b : vector<8x128xf32>
    ```
    """

    name = "tpu.cmp"

    T: ClassVar = VarConstraint("T", base(VectorType))

    predicate = prop_def(StringAttr)
    lhs = operand_def(T)
    rhs = operand_def(T)
    result = result_def(VectorType)

    traits = traits_def(Pure())

    def __init__(self, predicate: str, lhs: SSAValue | Operation, rhs: SSAValue | Operation):
        lhs = SSAValue.get(lhs)
        assert isinstance(lhs.type, VectorType)
        super().__init__(
            operands=[lhs, rhs],
            result_types=[VectorType(i1, lhs.type.get_shape())],
            properties={"predicate": StringAttr(predicate)},
        )

    def verify_(self) -> None:
        src = _check_vector(self.lhs.type, "the operands")
        res = _check_vector(self.result.type, "the result")
        kind = element_kind(src.element_type)
        allowed = FLOAT_PREDICATES if kind == "float" else INT_PREDICATES
        if self.predicate.data not in allowed:
            raise VerifyException(
                f'predicate "{self.predicate.data}" does not compare {src.element_type} '
                f"(expected one of {', '.join(allowed)})"
            )
        if res != VectorType(i1, src.get_shape()):
            raise VerifyException(
                f"comparing {src} gives {VectorType(i1, src.get_shape())}, got {res}"
            )

    @classmethod
    def parse(cls, parser: Parser) -> CmpOp:
        ppos = parser.pos
        pred = parser.parse_optional_identifier()
        if pred not in (*FLOAT_PREDICATES, *INT_PREDICATES):
            parser.raise_error("expected a comparison predicate", ppos)
        parser.parse_punctuation(",")
        pos = parser.pos
        lhs = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        rhs = parser.parse_unresolved_operand()
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        ty = parser.parse_type()
        values = parser.resolve_operands([lhs, rhs], [ty, ty], pos)
        if not isinstance(ty, VectorType):
            parser.raise_error(f"expected a vector type, got {ty}", pos)
        op = cls(pred, *values)
        op.attributes |= attrs
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(f" {self.predicate.data}, ")
        printer.print_list([self.lhs, self.rhs], printer.print_operand)
        printer.print_op_attributes(self.attributes)
        _print_with_type(printer, self.lhs.type)


@irdl_op_definition
class SelectOp(IRDLOperation):
    """
    Elementwise choice between two vectors by a mask of their shape (`arith.select` on
    vectors, which xDSL 0.74's arith only allows with a scalar condition):

    ```mlir
    %r = tpu.select %m, %a, %b : vector<8x128xi1>, vector<8x128xf32>
    ```
    """

    name = "tpu.select"

    T: ClassVar = VarConstraint("T", base(VectorType))

    mask = operand_def(VectorType)
    on_true = operand_def(T)
    on_false = operand_def(T)
    result = result_def(T)

    traits = traits_def(Pure())

    assembly_format = "$mask `,` $on_true `,` $on_false attr-dict `:` type($mask) `,` type($result)"

    def __init__(
        self,
        mask: SSAValue | Operation,
        on_true: SSAValue | Operation,
        on_false: SSAValue | Operation,
    ):
        on_true = SSAValue.get(on_true)
        super().__init__(operands=[mask, on_true, on_false], result_types=[on_true.type])

    def verify_(self) -> None:
        mask = _check_vector(self.mask.type, "the mask")
        res = _check_vector(self.result.type, "the result")
        if mask != VectorType(i1, res.get_shape()):
            raise VerifyException(
                f"the mask must be {VectorType(i1, res.get_shape())} for {res}, got {mask}"
            )


Tpu = Dialect(
    "tpu",
    [
        AllocOp,
        DeallocOp,
        DMAStartOp,
        DMAWaitOp,
        SemSignalOp,
        SemWaitOp,
        BarrierOp,
        DeviceIdOp,
        AxisIndexOp,
        MemRefSliceOp,
        MemRefReshapeOp,
        MemRefBitcastOp,
        LoadOp,
        StoreOp,
        MatmulOp,
        ReduceOp,
        TransposeOp,
        IotaOp,
        CmpOp,
        SelectOp,
        ConvertOp,
    ],
    [MemorySpaceAttr, SemaphoreType, DMASemaphoreType],
)
