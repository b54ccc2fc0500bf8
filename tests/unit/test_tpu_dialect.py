"""
Unit tests of the `tpu` dialect through its Python API: constructors and the types they
infer, the custom and generic syntax they print, the helpers the lowering and the
level-T simulator share (memory spaces, byte sizes, accumulation types, barrier groups),
one test per verifier rule with the message it gives, the effects that keep DMAs alive
through DCE, and the module docstring's ring kernel (identical to the lit test's).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from shardc.diagnostics import DiagnosticError
from shardc.dialects import spmd, tpu
from shardc.dialects.tpu import MemorySpace
from shardc.tests.unit.strategies import parse, print_module
from xdsl.dialects import arith
from xdsl.dialects.builtin import (
    IndexType,
    IntegerType,
    MemRefType,
    ModuleOp,
    NoneAttr,
    Signedness,
    StringAttr,
    VectorType,
    bf16,
    f16,
    f32,
    f64,
    i1,
    i32,
    i64,
)
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.transforms.common_subexpression_elimination import cse
from xdsl.transforms.dead_code_elimination import region_dce
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.test_value import create_ssa_value

HBM, VMEM, SMEM, SEM = (
    MemorySpace.HBM,
    MemorySpace.VMEM,
    MemorySpace.SMEM,
    MemorySpace.SEMAPHORE,
)
TESTS = Path(__file__).resolve().parent.parent


def ref(space: MemorySpace, *shape: int, dtype: Attribute = f32) -> MemRefType:
    return tpu.memref_type(shape, dtype, space)


def vec(*shape: int, dtype: Attribute = f32) -> VectorType:
    return VectorType(dtype, shape)


def val(ty: Attribute) -> SSAValue:
    return create_ssa_value(ty)


def index() -> SSAValue:
    return val(IndexType())


MESH_2X4 = spmd.MeshAttr([("data", 2), ("model", 4)])


def kernel(
    arg_types: Sequence[Attribute],
    body: Callable[[list[SSAValue]], list[Operation]],
    mesh: spmd.MeshAttr | None = MESH_2X4,
) -> tuple[ModuleOp, list[Operation]]:
    """`[spmd.mesh @mesh] func.func @main(args) { body; return }`."""
    block = Block(arg_types=arg_types)
    ops = body(list(block.args))
    block.add_ops([*ops, ReturnOp()])
    func = FuncOp("main", (list(arg_types), []), Region(block))
    top: list[Operation] = [spmd.MeshOp("mesh", mesh)] if mesh is not None else []
    return ModuleOp([*top, func]), ops


def verify_op(op: Operation) -> None:
    """Verify one detached op (no mesh needed)."""
    op.verify()


################################################################################
# Memory spaces and semaphore types                                            #
################################################################################


def test_memory_space_attr_prints_custom_and_generic():
    ty = ref(VMEM, 8, 128)
    assert str(ty) == "memref<8x128xf32, #tpu.memory_space<vmem>>"
    assert tpu.memory_space_of(ty) is VMEM
    assert tpu.memory_space_of(MemRefType(f32, [8])) is None
    assert tpu.memory_space_of(vec(8)) is None
    module, _ = kernel([ty], lambda args: [])
    generic = print_module(module, generic=True)
    assert 'memref<8x128xf32, "vmem">' in generic
    assert "#tpu.memory_space" not in generic


@pytest.mark.parametrize("space", list(MemorySpace))
def test_string_memory_space_reads_as_tpu_memory_space(space: MemorySpace):
    module = parse(f'func.func @f(%a: memref<4xf32, "{space.value}">) {{\n  func.return\n}}')
    (func,) = module.ops
    assert isinstance(func, FuncOp)
    (arg_type,) = func.function_type.inputs.data
    assert arg_type == ref(space, 4)


def test_other_string_memory_space_stays_a_string():
    module = parse('func.func @f(%a: memref<4xf32, "pinned">) {\n  func.return\n}')
    (func,) = module.ops
    assert isinstance(func, FuncOp)
    (arg_type,) = func.function_type.inputs.data
    assert isinstance(arg_type, MemRefType)
    assert arg_type.memory_space == StringAttr("pinned")


def test_semaphore_types():
    assert str(tpu.DMASemaphoreType()) == "!tpu.dma_semaphore"
    assert str(tpu.SemaphoreType([7])) == "!tpu.semaphore<7>"
    assert str(tpu.DMASemaphoreType([2, 3])) == "!tpu.dma_semaphore<2x3>"
    assert tpu.DMASemaphoreType([2, 3]).get_shape() == (2, 3)
    assert tpu.SemaphoreType().get_num_dims() == 0
    assert tpu.SemaphoreType() != tpu.DMASemaphoreType()
    with pytest.raises(VerifyException, match="positive dimensions"):
        tpu.SemaphoreType([0])


@pytest.mark.parametrize(
    ("dtype", "size"), [(f32, 4), (bf16, 2), (f16, 2), (f64, 8), (i32, 4), (i64, 8), (i1, 1)]
)
def test_byte_sizes(dtype: Attribute, size: int):
    assert tpu.element_bytes(dtype) == size
    assert tpu.ref_bytes(ref(HBM, 8, 128, dtype=dtype)) == 8 * 128 * size


@pytest.mark.parametrize(
    ("dtype", "acc"),
    [(bf16, f32), (f16, f32), (f32, f32), (f64, f64), (i32, i32), (i64, i64), (i1, None)]
    + [
        (IntegerType(8), i32),
        (IntegerType(4), i32),
        (IntegerType(8, Signedness.UNSIGNED), IntegerType(32, Signedness.UNSIGNED)),
    ],
)
def test_accumulation_type(dtype: Attribute, acc: Attribute | None):
    assert tpu.accumulation_type(dtype) == acc


################################################################################
# Constructors, inferred types, custom syntax                                  #
################################################################################


def test_alloc_and_dealloc():
    buf = tpu.AllocOp(ref(VMEM, 2, 8, 128))
    sems = tpu.AllocOp(tpu.DMASemaphoreType([7]))
    free = tpu.DeallocOp(buf)
    for op in (buf, sems, free):
        verify_op(op)
    assert str(buf) == "%0 = tpu.alloc : memref<2x8x128xf32, #tpu.memory_space<vmem>>"
    assert str(sems) == "%0 = tpu.alloc : !tpu.dma_semaphore<7>"


def test_dma_start_local_and_remote():
    src, dst = val(ref(HBM, 8, 128)), val(ref(VMEM, 8, 128))
    send, recv = val(tpu.DMASemaphoreType()), val(tpu.DMASemaphoreType())
    local = tpu.DMAStartOp(src, dst, recv_sem=recv)
    remote = tpu.DMAStartOp(src, dst, recv_sem=recv, send_sem=send, device=val(i32))
    for op in (local, remote):
        verify_op(op)
    assert not local.is_remote and local.send_sem is None and local.recv_sem is recv
    assert remote.is_remote and remote.send_sem is send
    module, _ = kernel(
        [ref(HBM, 8, 128), ref(VMEM, 8, 128), tpu.DMASemaphoreType(), tpu.DMASemaphoreType(), i32],
        lambda a: [
            tpu.DMAStartOp(a[0], a[1], recv_sem=a[3]),
            tpu.DMAStartOp(a[1], a[0], recv_sem=a[3], send_sem=a[2], device=a[4]),
            tpu.DMAWaitOp(a[3], a[1]),
        ],
    )
    module.verify()
    text = print_module(module)
    hbm, vmem = str(ref(HBM, 8, 128)), str(ref(VMEM, 8, 128))
    assert f"tpu.dma_start %0, %1, %3 : {hbm} to {vmem}" in text
    assert f"tpu.dma_start %1, %0, %2, %3, device = %4 : {vmem} to {hbm}" in text
    assert f"tpu.dma_wait %3, %1 : {vmem}" in text
    assert print_module(parse(text)) == text


def test_semaphore_ops():
    sem, n, dev = val(tpu.SemaphoreType()), val(i32), val(i32)
    local, remote, wait = (
        tpu.SemSignalOp(sem, n),
        tpu.SemSignalOp(sem, n, dev),
        tpu.SemWaitOp(sem, n),
    )
    for op in (local, remote, wait):
        verify_op(op)
    assert not local.is_remote and remote.is_remote and remote.device is dev


def test_identity_ops():
    module, (dev, axis) = kernel([], lambda a: [tpu.DeviceIdOp(), tpu.AxisIndexOp("mesh", "model")])
    module.verify()
    assert dev.results[0].type == i32 and axis.results[0].type == i32
    text = print_module(module)
    assert "= tpu.device_id : i32" in text
    assert '= tpu.axis_index @mesh["model"] : i32' in text


def test_barrier_groups():
    module, ops = kernel(
        [],
        lambda a: [
            tpu.BarrierOp(),
            tpu.BarrierOp("mesh", ["model"]),
            tpu.BarrierOp("mesh", ["data", "model"]),
            tpu.BarrierOp(groups=[[0, 2, 4, 6], [1, 3, 5, 7]]),
        ],
    )
    module.verify()
    everyone, model, both, explicit = ops
    assert isinstance(everyone, tpu.BarrierOp) and isinstance(model, tpu.BarrierOp)
    assert isinstance(both, tpu.BarrierOp) and isinstance(explicit, tpu.BarrierOp)
    assert everyone.device_groups() == [list(range(8))]
    assert everyone.device_groups(device_count=4) == [[0, 1, 2, 3]]
    assert model.device_groups() == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert both.device_groups() == [list(range(8))]
    assert explicit.device_groups() == [[0, 2, 4, 6], [1, 3, 5, 7]]
    text = print_module(module)
    assert "    tpu.barrier\n" in text
    assert 'tpu.barrier on @mesh["data", "model"]' in text
    assert "tpu.barrier on groups [[0, 2, 4, 6], [1, 3, 5, 7]]" in text


def test_slices_and_reshape():
    hbm = val(ref(HBM, 4, 16, 128))
    sems = val(tpu.DMASemaphoreType([7]))
    block = tpu.MemRefSliceOp(hbm, [index(), index(), index()], ref(HBM, 8, 128))
    one = tpu.MemRefSliceOp(sems, [index()], tpu.DMASemaphoreType())
    flat = tpu.MemRefReshapeOp(hbm, ref(HBM, 8192))
    for op in (block, one, flat):
        verify_op(op)
    assert one.result.type == tpu.DMASemaphoreType()


def test_load_store():
    buf = val(ref(VMEM, 2, 8, 128))
    load = tpu.LoadOp(buf, [index(), index(), index()], vec(8, 128))
    store = tpu.StoreOp(load.result, buf, [index(), index(), index()])
    smem = tpu.LoadOp(val(ref(SMEM, 16, dtype=i32)), [index()], vec(8, dtype=i32))
    for op in (load, store, smem):
        verify_op(op)


def test_compute_ops_infer_types():
    lhs, rhs, acc = val(vec(8, 128, dtype=bf16)), val(vec(128, 256, dtype=bf16)), val(vec(8, 256))
    mm = tpu.MatmulOp(lhs, rhs, acc)
    red = tpu.ReduceOp("max", val(vec(8, 128)), val(vec(128)), [0])
    scalar = tpu.ReduceOp("add", val(vec(8, 128)), val(vec()), [0, 1])
    tr = tpu.TransposeOp(val(vec(8, 128)), [1, 0])
    iota = tpu.IotaOp(vec(8, 128, dtype=i32), 1)
    for op in (mm, red, scalar, tr, iota):
        verify_op(op)
    assert mm.result.type == vec(8, 256)
    assert red.result.type == vec(128) and red.reduced_dims == [0]
    assert scalar.result.type == vec()
    assert tr.result.type == vec(128, 8) and tr.dims == [1, 0]
    module, _ = kernel(
        [vec(8, 128), vec(8)],
        lambda a: [tpu.ReduceOp("add", a[0], a[1], [1]), tpu.TransposeOp(a[0], [1, 0])],
        mesh=None,
    )
    text = print_module(module)
    assert "tpu.reduce add %0, %1, dims = [1] : vector<8x128xf32> -> vector<8xf32>" in text
    assert "tpu.transpose %0, dims = [1, 0] : vector<8x128xf32> -> vector<128x8xf32>" in text
    assert print_module(parse(text)) == text


################################################################################
# Verifier rules (Python API)                                                  #
################################################################################


def _sem() -> SSAValue:
    return val(tpu.DMASemaphoreType())


VERIFIER_CASES: list[tuple[str, Callable[[], Operation], str]] = [
    (
        "no memory space",
        lambda: tpu.DMAStartOp(val(MemRefType(f32, [8])), val(ref(VMEM, 8)), recv_sem=_sem()),
        r"DMA source must be in a #tpu.memory_space \(hbm, vmem or smem\)",
    ),
    (
        "semaphore memory",
        lambda: tpu.DMAStartOp(val(ref(HBM, 8)), val(ref(SEM, 8)), recv_sem=_sem()),
        "DMA target is a memref in semaphore memory, which holds only semaphores",
    ),
    (
        "dynamic shape",
        lambda: tpu.DMAWaitOp(_sem(), val(ref(VMEM, -1))),
        "the waited buffer must have a static shape",
    ),
    (
        "element type",
        lambda: tpu.DMAWaitOp(_sem(), val(ref(VMEM, 8, dtype=IntegerType(7)))),
        "unsupported element type i7",
    ),
    (
        "dma shapes",
        lambda: tpu.DMAStartOp(val(ref(HBM, 8, 128)), val(ref(VMEM, 16, 128)), recv_sem=_sem()),
        "DMA source shape 8x128 and target shape 16x128 differ",
    ),
    (
        "dma element types",
        lambda: tpu.DMAStartOp(val(ref(HBM, 8)), val(ref(VMEM, 8, dtype=bf16)), recv_sem=_sem()),
        "DMA source element type f32 and target element type bf16 differ",
    ),
    (
        "remote without send",
        lambda: tpu.DMAStartOp(
            val(ref(VMEM, 8)), val(ref(VMEM, 8)), recv_sem=_sem(), device=val(i32)
        ),
        r"a remote DMA \(with `device`\) needs a send semaphore",
    ),
    (
        "dma with regular semaphore",
        lambda: tpu.DMAStartOp(
            val(ref(HBM, 8)), val(ref(VMEM, 8)), recv_sem=val(tpu.SemaphoreType())
        ),
        r"receive semaphore must be a DMA semaphore \(tpu.dma_semaphore\), got !tpu.semaphore",
    ),
    (
        "dma with semaphore array",
        lambda: tpu.DMAStartOp(
            val(ref(HBM, 8)),
            val(ref(VMEM, 8)),
            recv_sem=_sem(),
            send_sem=val(tpu.DMASemaphoreType([2])),
        ),
        r"send semaphore must be a single semaphore \(rank 0\)",
    ),
    (
        "wait on regular semaphore",
        lambda: tpu.DMAWaitOp(val(tpu.SemaphoreType()), val(ref(VMEM, 8))),
        "the waited semaphore must be a DMA semaphore",
    ),
    (
        "signal a DMA semaphore",
        lambda: tpu.SemSignalOp(_sem(), val(i32)),
        r"the signalled semaphore must be a regular semaphore \(tpu.semaphore\)",
    ),
    (
        "sem_wait on an array",
        lambda: tpu.SemWaitOp(val(tpu.SemaphoreType([3])), val(i32)),
        r"the waited semaphore must be a single semaphore \(rank 0\)",
    ),
    (
        "alloc in hbm",
        lambda: tpu.AllocOp(ref(HBM, 8)),
        "tpu.alloc allocates VMEM, SMEM and semaphores",
    ),
    (
        "dealloc hbm",
        lambda: tpu.DeallocOp(val(ref(HBM, 8))),
        "HBM buffers are kernel arguments or memref.alloc",
    ),
    (
        "load from hbm",
        lambda: tpu.LoadOp(val(ref(HBM, 8, 128)), [index(), index()], vec(8, 128)),
        r"tpu.load accesses VMEM or SMEM only \(HBM is reached by DMA\)",
    ),
    (
        "store to hbm",
        lambda: tpu.StoreOp(val(vec(8)), val(ref(HBM, 8)), [index()]),
        r"tpu.store accesses VMEM or SMEM only",
    ),
    (
        "load element type",
        lambda: tpu.LoadOp(val(ref(VMEM, 8)), [index()], vec(8, dtype=i32)),
        "vector element type i32 differs from the memref's f32",
    ),
    (
        "load too big",
        lambda: tpu.LoadOp(val(ref(VMEM, 8, 128)), [index(), index()], vec(8, 256)),
        "vector 8x256 does not fit in .*: dimension 1 is 256, more than 128",
    ),
    (
        "load index count",
        lambda: tpu.LoadOp(val(ref(VMEM, 2, 8)), [index()], vec(8)),
        r"expected 2 indices \(one per dimension of .*\), got 1",
    ),
    (
        "load rank",
        lambda: tpu.LoadOp(val(ref(VMEM, 8)), [index()], vec(1, 8)),
        "vector has rank 2, more than the rank 1",
    ),
    (
        "slice too big",
        lambda: tpu.MemRefSliceOp(val(ref(HBM, 16, 128)), [index(), index()], ref(HBM, 32, 128)),
        "the slice 32x128 does not fit",
    ),
    (
        "slice memory space",
        lambda: tpu.MemRefSliceOp(val(ref(HBM, 16)), [index()], ref(VMEM, 8)),
        "a slice stays in its source's memory space",
    ),
    (
        "slice element type",
        lambda: tpu.MemRefSliceOp(val(ref(HBM, 16)), [index()], ref(HBM, 8, dtype=i32)),
        "a slice keeps the element type f32, got i32",
    ),
    (
        "slice semaphore kind",
        lambda: tpu.MemRefSliceOp(val(tpu.SemaphoreType([4])), [index()], tpu.DMASemaphoreType()),
        "a slice keeps the kind of its source",
    ),
    (
        "slice memref to semaphore",
        lambda: tpu.MemRefSliceOp(val(ref(SMEM, 4, dtype=i32)), [index()], tpu.SemaphoreType()),
        "a slice keeps the kind of its source",
    ),
    (
        "reshape count",
        lambda: tpu.MemRefReshapeOp(val(ref(HBM, 16, 128)), ref(HBM, 1024)),
        "a reshape keeps the element count",
    ),
    (
        "reshape element type",
        lambda: tpu.MemRefReshapeOp(val(ref(HBM, 16)), ref(HBM, 16, dtype=i32)),
        "a reshape keeps the element type",
    ),
    (
        "reshape memory space",
        lambda: tpu.MemRefReshapeOp(val(ref(HBM, 16)), ref(VMEM, 16)),
        "a reshape stays in its source's memory space",
    ),
    (
        "matmul rank",
        lambda: tpu.MatmulOp(val(vec(8, 128)), val(vec(128)), val(vec(8, 128))),
        "rhs must be a 2-D vector",
    ),
    (
        "matmul contracting",
        lambda: tpu.MatmulOp(val(vec(8, 128)), val(vec(64, 128)), val(vec(8, 128))),
        "contracting sizes differ: lhs is 8x128, rhs is 64x128",
    ),
    (
        "matmul accumulator shape",
        lambda: tpu.MatmulOp(val(vec(8, 128)), val(vec(128, 256)), val(vec(8, 128))),
        r"the accumulator must be 8x256 \(lhs 8x128 x rhs 128x256\), got 8x128",
    ),
    (
        "matmul operand types",
        lambda: tpu.MatmulOp(val(vec(8, 128, dtype=bf16)), val(vec(128, 128)), val(vec(8, 128))),
        "lhs and rhs element types differ: bf16 vs f32",
    ),
    (
        "matmul accumulator type",
        lambda: tpu.MatmulOp(
            val(vec(8, 128, dtype=f16)), val(vec(128, 128, dtype=f16)), val(vec(8, 128, dtype=f16))
        ),
        "f16 operands accumulate in f32, got an accumulator of f16",
    ),
    (
        "matmul bool",
        lambda: tpu.MatmulOp(
            val(vec(8, 8, dtype=i1)), val(vec(8, 8, dtype=i1)), val(vec(8, 8, dtype=i1))
        ),
        "the MXU does not multiply i1",
    ),
    (
        "reduce kind",
        lambda: tpu.ReduceOp("sum", val(vec(8, 128)), val(vec(8)), [1]),
        'unknown reduction kind "sum"',
    ),
    (
        "reduce dim range",
        lambda: tpu.ReduceOp("add", val(vec(8, 128)), val(vec(8)), [2]),
        "dim 2 is out of range",
    ),
    (
        "reduce dim twice",
        lambda: tpu.ReduceOp("add", val(vec(8, 128)), val(vec(8)), [1, 1]),
        "dim 1 is reduced twice",
    ),
    (
        "reduce result",
        lambda: tpu.ReduceOp("add", val(vec(8, 128)), val(vec(128)), [1]),
        r"reducing dims \[1\] of vector<8x128xf32> gives vector<8xf32>, got vector<128xf32>",
    ),
    (
        "transpose permutation",
        lambda: tpu.TransposeOp.create(
            operands=[val(vec(8, 128))],
            result_types=[vec(128, 8)],
            properties={"permutation": tpu.i64_array([0, 0])},
        ),
        r"dims \[0, 0\] is not a permutation",
    ),
    (
        "transpose result",
        lambda: tpu.TransposeOp.create(
            operands=[val(vec(8, 128))],
            result_types=[vec(8, 128)],
            properties={"permutation": tpu.i64_array([1, 0])},
        ),
        "gives vector<128x8xf32>, got vector<8x128xf32>",
    ),
    (
        "iota dim",
        lambda: tpu.IotaOp(vec(8, 128, dtype=i32), 2),
        "dim 2 is out of range for vector<8x128xi32>",
    ),
    (
        "iota bool",
        lambda: tpu.IotaOp(vec(8, dtype=i1), 0),
        "iota counts in integers or floats",
    ),
]


@pytest.mark.parametrize(
    ("build", "message"),
    [(b, m) for _, b, m in VERIFIER_CASES],
    ids=[name for name, _, _ in VERIFIER_CASES],
)
def test_verifier_rule(build: Callable[[], Operation], message: str):
    with pytest.raises(VerifyException, match=message):
        verify_op(build())


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: tpu.AxisIndexOp("mesh", "tensor"), 'mesh @mesh has no axis "tensor"'),
        (lambda: tpu.AxisIndexOp("ring", "x"), "@ring does not name an spmd.mesh"),
        (lambda: tpu.BarrierOp("mesh", ["pipe"]), 'mesh @mesh has no axis "pipe"'),
        (lambda: tpu.BarrierOp("mesh", ["data", "data"]), 'mesh axis "data" is named twice'),
        (lambda: tpu.BarrierOp("mesh", []), "must name at least one axis"),
        (lambda: tpu.BarrierOp(groups=[[0, 1], [2, 3]]), "must partition the 8 devices"),
        (lambda: tpu.BarrierOp(groups=[[0, 1, 2, 3, 4], [5, 6, 7]]), "must all have the same size"),
        (
            lambda: tpu.BarrierOp("mesh", ["data"], groups=[list(range(8))]),
            "a barrier names either",
        ),
    ],
)
def test_mesh_rules(make: Callable[[], Operation], message: str):
    module, _ = kernel([], lambda a: [make()])
    with pytest.raises(VerifyException, match=message):
        module.verify()


def test_diagnostics_are_located():
    text = (
        "func.func @f(%a: memref<8xf32, #tpu.memory_space<hbm>>) {\n"
        "  %v = tpu.load %a[] : memref<8xf32, #tpu.memory_space<hbm>>, vector<8xf32>\n"
        "  func.return\n"
        "}\n"
    )
    with pytest.raises(
        DiagnosticError, match=r"<test>:2:3: error: 'tpu.load' op tpu.load accesses VMEM"
    ):
        parse(text)


################################################################################
# Effects: DMAs and waits survive DCE and CSE; pure ops do not                 #
################################################################################


def test_effects_keep_communication_alive():
    src_t, dst_t = ref(HBM, 8, 128), ref(VMEM, 8, 128)

    def body(a: list[SSAValue]) -> list[Operation]:
        sem = tpu.AllocOp(tpu.DMASemaphoreType())
        unused = tpu.AllocOp(ref(VMEM, 8))
        c0 = arith.ConstantOp.from_int_and_width(0, IndexType())
        dead_load = tpu.LoadOp(a[1], [c0.result, c0.result], vec(8, 128))
        dev1, dev2 = tpu.DeviceIdOp(), tpu.DeviceIdOp()
        start = tpu.DMAStartOp(a[0], a[1], recv_sem=sem.result)
        wait = tpu.DMAWaitOp(sem.result, a[1])
        return [sem, unused, c0, dead_load, dev1, dev2, start, wait, tpu.BarrierOp()]

    module, _ = kernel([src_t, dst_t], body)
    func = module.ops.last
    assert isinstance(func, FuncOp)
    region_dce(func.body)
    names = [op.name for op in func.body.ops]
    assert names == ["tpu.alloc", "tpu.dma_start", "tpu.dma_wait", "tpu.barrier", "func.return"]

    def two_of_each(a: list[SSAValue]) -> list[Operation]:
        s1, s2 = tpu.AllocOp(tpu.SemaphoreType()), tpu.AllocOp(tpu.SemaphoreType())
        d1, d2 = tpu.DeviceIdOp(), tpu.DeviceIdOp()
        return [s1, s2, d1, d2, tpu.SemSignalOp(s1, d1, d1), tpu.SemSignalOp(s2, d2, d2)]

    module, _ = kernel([], two_of_each)
    cse(module)
    names = [op.name for op in module.walk() if op.name.startswith("tpu.")]
    # Two allocations are two semaphores; the device id is computed once.
    assert names == ["tpu.alloc", "tpu.alloc", "tpu.device_id", "tpu.sem_signal", "tpu.sem_signal"]


################################################################################
# The module docstring's ring all_gather                                       #
################################################################################


def _docstring_kernel() -> str:
    found = re.search(r"```mlir\n(.*?)```", tpu.__doc__ or "", re.S)
    assert found is not None
    return found.group(1)


def test_docstring_ring_all_gather_parses_and_round_trips():
    kernel_text = _docstring_kernel()
    module = parse(kernel_text)
    ops = [op.name for op in module.walk()]
    assert ops.count("tpu.dma_start") == 2 and ops.count("tpu.dma_wait") == 3
    assert "tpu.barrier" in ops
    remote = [op for op in module.walk() if isinstance(op, tpu.DMAStartOp) and op.is_remote]
    assert len(remote) == 1 and remote[0].send_sem is not None
    printed = print_module(module)
    assert print_module(parse(printed)) == printed
    generic = print_module(module, generic=True)
    assert print_module(parse(generic)) == printed


def test_docstring_kernel_is_the_lit_test():
    lit_test = (TESTS / "filecheck" / "dialects" / "tpu" / "ring_all_gather.mlir").read_text()
    assert _docstring_kernel() in lit_test


def test_layout_and_none_memory_space_helpers():
    assert isinstance(ref(VMEM, 8).layout, NoneAttr)
    assert tpu.memref_type([8], f32, VMEM) == ref(VMEM, 8)
