// RUN: shardc-opt %s --split-input-file --verify-diagnostics | filecheck %s
// RUN: shardc-opt %s --split-input-file --verify-diagnostics | filecheck %s --check-prefix=NOIR

// One chunk per verifier rule of the tpu dialect (and its syntax errors). No chunk may
// verify:
// NOIR-NOT: builtin.module

// Memrefs: a #tpu.memory_space, static shape, identity layout, supported element type.
func.func @no_memory_space(%a: memref<8x128xf32>, %b: memref<8x128xf32, #tpu.memory_space<hbm>>, %sem: !tpu.dma_semaphore) {
  tpu.dma_start %a, %b, %sem : memref<8x128xf32> to memref<8x128xf32, #tpu.memory_space<hbm>>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'tpu.dma_start' op DMA source must be in a #tpu.memory_space (hbm, vmem or smem), got memref<8x128xf32>
  func.return
}

// -----

func.func @semaphore_memory(%a: memref<8xi32, #tpu.memory_space<semaphore>>, %b: memref<8xi32, #tpu.memory_space<hbm>>, %sem: !tpu.dma_semaphore) {
  tpu.dma_start %b, %a, %sem : memref<8xi32, #tpu.memory_space<hbm>> to memref<8xi32, #tpu.memory_space<semaphore>>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'tpu.dma_start' op DMA target is a memref in semaphore memory, which holds only semaphores: use !tpu.semaphore or !tpu.dma_semaphore values, got memref<8xi32, #tpu.memory_space<semaphore>>
  func.return
}

// -----

func.func @dynamic_shape(%a: memref<?x128xf32, #tpu.memory_space<vmem>>, %i: index) {
  %v = tpu.load %a[%i, %i] : memref<?x128xf32, #tpu.memory_space<vmem>>, vector<8x128xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'tpu.load' op the load memref must have a static shape, got memref<?x128xf32, #tpu.memory_space<vmem>>
  func.return
}

// -----

func.func @layout(%a: memref<8x128xf32, strided<[256, 1]>, #tpu.memory_space<vmem>>, %i: index) {
  %v = tpu.load %a[%i, %i] : memref<8x128xf32, strided<[256, 1]>, #tpu.memory_space<vmem>>, vector<8x128xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'tpu.load' op the load memref must have the identity layout, got memref<8x128xf32, strided<[256, 1]>, #tpu.memory_space<vmem>>
  func.return
}

// -----

func.func @element_type(%a: memref<8x128xi7, #tpu.memory_space<hbm>>, %b: memref<8x128xi7, #tpu.memory_space<vmem>>, %sem: !tpu.dma_semaphore) {
  tpu.dma_start %a, %b, %sem : memref<8x128xi7, #tpu.memory_space<hbm>> to memref<8x128xi7, #tpu.memory_space<vmem>>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'tpu.dma_start' op DMA source has unsupported element type i7 (expected an hlo element type)
  func.return
}

// -----

// Memory spaces and semaphore types: syntax.
func.func @unknown_space(%a: memref<8xf32, #tpu.memory_space<cmem>>) {
  // CHECK: invalid.mlir:[[# @LINE - 1]]:62: error: expected a memory space: hbm, vmem, smem, semaphore
  func.return
}

// -----

func.func @empty_semaphore_array(%s: !tpu.dma_semaphore<0>) {
  // CHECK: invalid.mlir:[[# @LINE - 1]]:57: error: a semaphore array has static, positive dimensions
  func.return
}

// -----

func.func @dynamic_semaphore_array(%s: !tpu.semaphore<?x2>) {
  // CHECK: invalid.mlir:[[# @LINE - 1]]:55: error: a semaphore array has static, positive dimensions
  func.return
}

// -----

// Allocation: VMEM, SMEM or semaphores.
func.func @alloc_hbm() {
  %a = tpu.alloc : memref<8x128xf32, #tpu.memory_space<hbm>>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'tpu.alloc' op tpu.alloc allocates VMEM, SMEM and semaphores; HBM buffers are kernel arguments or memref.alloc, got memref<8x128xf32, #tpu.memory_space<hbm>>
  func.return
}

// -----

func.func @alloc_no_space() {
  %a = tpu.alloc : memref<8x128xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'tpu.alloc' op the allocated buffer must be in a #tpu.memory_space (vmem or smem), got memref<8x128xf32>
  func.return
}

// -----

func.func @alloc_semaphore_memref() {
  %a = tpu.alloc : memref<4xi32, #tpu.memory_space<semaphore>>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'tpu.alloc' op the allocated buffer is a memref in semaphore memory, which holds only semaphores: use !tpu.semaphore or !tpu.dma_semaphore values, got memref<4xi32, #tpu.memory_space<semaphore>>
  func.return
}

// -----

func.func @dealloc_hbm(%a: memref<8x128xf32, #tpu.memory_space<hbm>>) {
  tpu.dealloc %a : memref<8x128xf32, #tpu.memory_space<hbm>>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'tpu.dealloc' op tpu.alloc allocates VMEM, SMEM and semaphores; HBM buffers are kernel arguments or memref.alloc, got memref<8x128xf32, #tpu.memory_space<hbm>>
  func.return
}

// -----

// DMA: source and target agree in shape and element type.
func.func @dma_shape(%a: memref<8x128xf32, #tpu.memory_space<hbm>>, %b: memref<16x128xf32, #tpu.memory_space<vmem>>, %sem: !tpu.dma_semaphore) {
  tpu.dma_start %a, %b, %sem : memref<8x128xf32, #tpu.memory_space<hbm>> to memref<16x128xf32, #tpu.memory_space<vmem>>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'tpu.dma_start' op DMA source shape 8x128 and target shape 16x128 differ
  func.return
}

// -----

func.func @dma_element_type(%a: memref<8x128xf32, #tpu.memory_space<hbm>>, %b: memref<8x128xbf16, #tpu.memory_space<vmem>>, %sem: !tpu.dma_semaphore) {
  tpu.dma_start %a, %b, %sem : memref<8x128xf32, #tpu.memory_space<hbm>> to memref<8x128xbf16, #tpu.memory_space<vmem>>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'tpu.dma_start' op DMA source element type f32 and target element type bf16 differ
  func.return
}

// -----

// A remote DMA has a send semaphore.
func.func @remote_without_send(%a: memref<8x128xf32, #tpu.memory_space<vmem>>, %b: memref<8x128xf32, #tpu.memory_space<vmem>>, %sem: !tpu.dma_semaphore, %dev: i32) {
  tpu.dma_start %a, %b, %sem, device = %dev : memref<8x128xf32, #tpu.memory_space<vmem>> to memref<8x128xf32, #tpu.memory_space<vmem>>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'tpu.dma_start' op a remote DMA (with `device`) needs a send semaphore: tpu.dma_start %src, %dst, %send_sem, %recv_sem, device = %id
  func.return
}

// -----

// DMA semaphores are single DMA semaphores.
func.func @dma_regular_semaphore(%a: memref<8x128xf32, #tpu.memory_space<hbm>>, %b: memref<8x128xf32, #tpu.memory_space<vmem>>, %sem: !tpu.semaphore) {
  "tpu.dma_start"(%a, %b, %sem) <{operandSegmentSizes = array<i32: 1, 1, 0, 1, 0>}> : (memref<8x128xf32, #tpu.memory_space<hbm>>, memref<8x128xf32, #tpu.memory_space<vmem>>, !tpu.semaphore) -> ()
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'tpu.dma_start' op receive semaphore must be a DMA semaphore (tpu.dma_semaphore), got !tpu.semaphore; regular semaphores are waited with tpu.sem_wait
  func.return
}

// -----

func.func @dma_semaphore_array(%a: memref<8x128xf32, #tpu.memory_space<hbm>>, %b: memref<8x128xf32, #tpu.memory_space<vmem>>, %sems: !tpu.dma_semaphore<4>, %send: !tpu.dma_semaphore) {
  "tpu.dma_start"(%a, %b, %send, %sems) <{operandSegmentSizes = array<i32: 1, 1, 1, 1, 0>}> : (memref<8x128xf32, #tpu.memory_space<hbm>>, memref<8x128xf32, #tpu.memory_space<vmem>>, !tpu.dma_semaphore, !tpu.dma_semaphore<4>) -> ()
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'tpu.dma_start' op receive semaphore must be a single semaphore (rank 0), got !tpu.dma_semaphore<4>: pick one with tpu.memref_slice
  func.return
}

// -----

func.func @dma_send_regular(%a: memref<8x128xf32, #tpu.memory_space<hbm>>, %b: memref<8x128xf32, #tpu.memory_space<vmem>>, %send: !tpu.semaphore, %recv: !tpu.dma_semaphore) {
  "tpu.dma_start"(%a, %b, %send, %recv) <{operandSegmentSizes = array<i32: 1, 1, 1, 1, 0>}> : (memref<8x128xf32, #tpu.memory_space<hbm>>, memref<8x128xf32, #tpu.memory_space<vmem>>, !tpu.semaphore, !tpu.dma_semaphore) -> ()
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'tpu.dma_start' op send semaphore must be a DMA semaphore (tpu.dma_semaphore), got !tpu.semaphore; regular semaphores are waited with tpu.sem_wait
  func.return
}

// -----

// In the custom syntax semaphore types are implied: a wrong one is a parse error.
func.func @dma_custom_regular(%a: memref<8x128xf32, #tpu.memory_space<hbm>>, %b: memref<8x128xf32, #tpu.memory_space<vmem>>, %sem: !tpu.semaphore) {
  tpu.dma_start %a, %b, %sem : memref<8x128xf32, #tpu.memory_space<hbm>> to memref<8x128xf32, #tpu.memory_space<vmem>>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:25: error: operand is used with type !tpu.dma_semaphore, but has been previously used or defined with type !tpu.semaphore
  func.return
}

// -----

func.func @dma_two_operands(%a: memref<8x128xf32, #tpu.memory_space<hbm>>, %b: memref<8x128xf32, #tpu.memory_space<vmem>>) {
  tpu.dma_start %a, %b : memref<8x128xf32, #tpu.memory_space<hbm>> to memref<8x128xf32, #tpu.memory_space<vmem>>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:17: error: tpu.dma_start takes %src, %dst, %recv_sem (local) or %src, %dst, %send_sem, %recv_sem; got 2 operands
  func.return
}

// -----

// A wait names a DMA semaphore (one of them) and a data buffer.
func.func @wait_regular(%a: memref<8x128xf32, #tpu.memory_space<vmem>>, %sem: !tpu.semaphore) {
  "tpu.dma_wait"(%sem, %a) : (!tpu.semaphore, memref<8x128xf32, #tpu.memory_space<vmem>>) -> ()
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'tpu.dma_wait' op the waited semaphore must be a DMA semaphore (tpu.dma_semaphore), got !tpu.semaphore; regular semaphores are waited with tpu.sem_wait
  func.return
}

// -----

func.func @wait_array(%a: memref<8x128xf32, #tpu.memory_space<vmem>>, %sems: !tpu.dma_semaphore<2>) {
  "tpu.dma_wait"(%sems, %a) : (!tpu.dma_semaphore<2>, memref<8x128xf32, #tpu.memory_space<vmem>>) -> ()
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'tpu.dma_wait' op the waited semaphore must be a single semaphore (rank 0), got !tpu.dma_semaphore<2>: pick one with tpu.memref_slice
  func.return
}

// -----

func.func @wait_no_space(%a: memref<8x128xf32>, %sem: !tpu.dma_semaphore) {
  tpu.dma_wait %sem, %a : memref<8x128xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'tpu.dma_wait' op the waited buffer must be in a #tpu.memory_space (hbm, vmem or smem), got memref<8x128xf32>
  func.return
}

// -----

// Regular semaphores: signal and wait name one regular semaphore.
func.func @signal_dma_semaphore(%sem: !tpu.dma_semaphore, %n: i32) {
  "tpu.sem_signal"(%sem, %n) : (!tpu.dma_semaphore, i32) -> ()
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'tpu.sem_signal' op the signalled semaphore must be a regular semaphore (tpu.semaphore), got !tpu.dma_semaphore; DMA semaphores are waited with tpu.dma_wait
  func.return
}

// -----

func.func @signal_array(%sems: !tpu.semaphore<2>, %n: i32, %dev: i32) {
  "tpu.sem_signal"(%sems, %n, %dev) : (!tpu.semaphore<2>, i32, i32) -> ()
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'tpu.sem_signal' op the signalled semaphore must be a single semaphore (rank 0), got !tpu.semaphore<2>: pick one with tpu.memref_slice
  func.return
}

// -----

func.func @sem_wait_dma_semaphore(%sem: !tpu.dma_semaphore, %n: i32) {
  "tpu.sem_wait"(%sem, %n) : (!tpu.dma_semaphore, i32) -> ()
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'tpu.sem_wait' op the waited semaphore must be a regular semaphore (tpu.semaphore), got !tpu.dma_semaphore; DMA semaphores are waited with tpu.dma_wait
  func.return
}

// -----

func.func @sem_wait_custom_dma(%sem: !tpu.dma_semaphore, %n: i32) {
  tpu.sem_wait %sem, %n
  // CHECK: invalid.mlir:[[# @LINE - 1]]:16: error: operand is used with type !tpu.semaphore, but has been previously used or defined with type !tpu.dma_semaphore
  func.return
}

// -----

func.func @signal_amount_index(%sem: !tpu.semaphore, %n: index) {
  tpu.sem_signal %sem, %n
  // CHECK: invalid.mlir:[[# @LINE - 1]]:24: error: operand is used with type i32, but has been previously used or defined with type index
  func.return
}

// -----

// Barrier groups name existing mesh axes, each once, or partition the devices.
spmd.mesh @mesh = <["data"=2, "model"=4]>
func.func @barrier_unknown_axis() {
  tpu.barrier on @mesh["tensor"]
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'tpu.barrier' op mesh @mesh has no axis "tensor"
  func.return
}

// -----

spmd.mesh @mesh = <["data"=2, "model"=4]>
func.func @barrier_axis_twice() {
  tpu.barrier on @mesh["model", "model"]
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'tpu.barrier' op mesh axis "model" is named twice
  func.return
}

// -----

spmd.mesh @mesh = <["data"=2, "model"=4]>
func.func @barrier_no_axis() {
  tpu.barrier on @mesh[]
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'tpu.barrier' op a group over a mesh must name at least one axis
  func.return
}

// -----

spmd.mesh @mesh = <["data"=2, "model"=4]>
func.func @barrier_unknown_mesh() {
  tpu.barrier on @ring["x"]
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'tpu.barrier' op @ring does not name an spmd.mesh
  func.return
}

// -----

spmd.mesh @ring = <["x"=8]>
func.func @barrier_groups_unequal() {
  tpu.barrier on groups [[0, 1, 2], [3, 4, 5, 6, 7]]
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'tpu.barrier' op explicit groups must all have the same size
  func.return
}

// -----

spmd.mesh @ring = <["x"=8]>
func.func @barrier_groups_overlap() {
  tpu.barrier on groups [[0, 1, 2, 3], [3, 4, 5, 6]]
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'tpu.barrier' op explicit groups must partition the 8 devices 0..7, each device in exactly one group
  func.return
}

// -----

spmd.mesh @ring = <["x"=8]>
func.func @barrier_empty_groups() {
  tpu.barrier on groups []
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'tpu.barrier' op explicit groups must be non-empty
  func.return
}

// -----

spmd.mesh @ring = <["x"=8]>
func.func @barrier_mesh_and_groups() {
  "tpu.barrier"() <{mesh = @ring, mesh_axes = ["x"], groups = [array<i64: 0, 1, 2, 3, 4, 5, 6, 7>]}> : () -> ()
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'tpu.barrier' op a barrier names either `on @mesh[...]`, `on groups` or nothing (all devices)
  func.return
}

// -----

spmd.mesh @ring = <["x"=8]>
func.func @barrier_axes_without_mesh() {
  "tpu.barrier"() <{mesh_axes = ["x"]}> : () -> ()
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'tpu.barrier' op mesh_axes without a mesh
  func.return
}

// -----

spmd.mesh @ring = <["x"=8]>
func.func @barrier_missing_on() {
  tpu.barrier @ring["x"]
  // CHECK: invalid.mlir:[[# @LINE - 1]]:15: error: a barrier's group follows `on`: tpu.barrier on @mesh[...]
  func.return
}

// -----

// Device identity: axis_index names an existing mesh axis; both give an i32.
spmd.mesh @mesh = <["data"=2, "model"=4]>
func.func @axis_index_unknown_axis() {
  %i = tpu.axis_index @mesh["tensor"] : i32
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'tpu.axis_index' op mesh @mesh has no axis "tensor"
  func.return
}

// -----

spmd.mesh @mesh = <["data"=2, "model"=4]>
func.func @axis_index_unknown_mesh() {
  %i = tpu.axis_index @ring["x"] : i32
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'tpu.axis_index' op @ring does not name an spmd.mesh
  func.return
}

// -----

spmd.mesh @mesh = <["data"=2, "model"=4]>
func.func @axis_index_index() {
  %i = tpu.axis_index @mesh["data"] : index
  // CHECK: invalid.mlir:[[# @LINE - 1]]:39: error: tpu.axis_index produces an i32
  func.return
}

// -----

func.func @device_id_i64() {
  %d = tpu.device_id : i64
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: Expected attribute i32 but got i64
  func.return
}

// -----

// Slices: one index per source dimension, the block fits, kind/space/element kept.
func.func @slice_index_count(%a: memref<4x16x128xf32, #tpu.memory_space<hbm>>, %i: index) {
  %s = tpu.memref_slice %a[%i, %i] : memref<4x16x128xf32, #tpu.memory_space<hbm>> -> memref<8x128xf32, #tpu.memory_space<hbm>>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'tpu.memref_slice' op expected 3 indices (one per dimension of memref<4x16x128xf32, #tpu.memory_space<hbm>>), got 2
  func.return
}

// -----

func.func @slice_rank(%a: memref<16x128xf32, #tpu.memory_space<hbm>>, %i: index) {
  %s = tpu.memref_slice %a[%i, %i] : memref<16x128xf32, #tpu.memory_space<hbm>> -> memref<1x16x128xf32, #tpu.memory_space<hbm>>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'tpu.memref_slice' op the slice has rank 3, more than the rank 2 of memref<16x128xf32, #tpu.memory_space<hbm>>
  func.return
}

// -----

func.func @slice_too_big(%a: memref<4x16x128xf32, #tpu.memory_space<hbm>>, %i: index) {
  %s = tpu.memref_slice %a[%i, %i, %i] : memref<4x16x128xf32, #tpu.memory_space<hbm>> -> memref<32x128xf32, #tpu.memory_space<hbm>>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'tpu.memref_slice' op the slice 32x128 does not fit in memref<4x16x128xf32, #tpu.memory_space<hbm>>: dimension 0 is 32, more than 16
  func.return
}

// -----

func.func @slice_space(%a: memref<16x128xf32, #tpu.memory_space<hbm>>, %i: index) {
  %s = tpu.memref_slice %a[%i, %i] : memref<16x128xf32, #tpu.memory_space<hbm>> -> memref<8x128xf32, #tpu.memory_space<vmem>>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'tpu.memref_slice' op a slice stays in its source's memory space: memref<16x128xf32, #tpu.memory_space<hbm>> cannot give memref<8x128xf32, #tpu.memory_space<vmem>>
  func.return
}

// -----

func.func @slice_element_type(%a: memref<16x128xf32, #tpu.memory_space<hbm>>, %i: index) {
  %s = tpu.memref_slice %a[%i, %i] : memref<16x128xf32, #tpu.memory_space<hbm>> -> memref<8x128xbf16, #tpu.memory_space<hbm>>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'tpu.memref_slice' op a slice keeps the element type f32, got bf16
  func.return
}

// -----

func.func @slice_semaphore_kind(%sems: !tpu.dma_semaphore<4>, %i: index) {
  %s = tpu.memref_slice %sems[%i] : !tpu.dma_semaphore<4> -> !tpu.semaphore
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'tpu.memref_slice' op a slice keeps the kind of its source: !tpu.dma_semaphore<4> cannot give !tpu.semaphore
  func.return
}

// -----

func.func @slice_semaphore_index_count(%sems: !tpu.dma_semaphore<4x2>, %i: index) {
  %s = tpu.memref_slice %sems[%i] : !tpu.dma_semaphore<4x2> -> !tpu.dma_semaphore
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'tpu.memref_slice' op expected 2 indices (one per dimension of !tpu.dma_semaphore<4x2>), got 1
  func.return
}

// -----

// Reshapes keep the bytes: element count, element type, memory space.
func.func @reshape_count(%a: memref<16x128xf32, #tpu.memory_space<hbm>>) {
  %r = tpu.memref_reshape %a : memref<16x128xf32, #tpu.memory_space<hbm>> -> memref<1024xf32, #tpu.memory_space<hbm>>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'tpu.memref_reshape' op a reshape keeps the element count: memref<16x128xf32, #tpu.memory_space<hbm>> has 2048, memref<1024xf32, #tpu.memory_space<hbm>> has 1024
  func.return
}

// -----

func.func @reshape_element_type(%a: memref<16x128xf32, #tpu.memory_space<hbm>>) {
  %r = tpu.memref_reshape %a : memref<16x128xf32, #tpu.memory_space<hbm>> -> memref<2048xi32, #tpu.memory_space<hbm>>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'tpu.memref_reshape' op a reshape keeps the element type f32, got i32
  func.return
}

// -----

func.func @reshape_space(%a: memref<16x128xf32, #tpu.memory_space<hbm>>) {
  %r = tpu.memref_reshape %a : memref<16x128xf32, #tpu.memory_space<hbm>> -> memref<2048xf32, #tpu.memory_space<vmem>>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'tpu.memref_reshape' op a reshape stays in its source's memory space: memref<16x128xf32, #tpu.memory_space<hbm>> cannot give memref<2048xf32, #tpu.memory_space<vmem>>
  func.return
}

// -----

// Loads and stores: VMEM or SMEM only; the vector fits the memref's trailing dimensions.
func.func @load_hbm(%a: memref<8x128xf32, #tpu.memory_space<hbm>>, %i: index) {
  %v = tpu.load %a[%i, %i] : memref<8x128xf32, #tpu.memory_space<hbm>>, vector<8x128xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'tpu.load' op tpu.load accesses VMEM or SMEM only (HBM is reached by DMA), got memref<8x128xf32, #tpu.memory_space<hbm>>
  func.return
}

// -----

func.func @store_hbm(%a: memref<8x128xf32, #tpu.memory_space<hbm>>, %v: vector<8x128xf32>, %i: index) {
  tpu.store %v, %a[%i, %i] : memref<8x128xf32, #tpu.memory_space<hbm>>, vector<8x128xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'tpu.store' op tpu.store accesses VMEM or SMEM only (HBM is reached by DMA), got memref<8x128xf32, #tpu.memory_space<hbm>>
  func.return
}

// -----

func.func @load_element_type(%a: memref<8x128xf32, #tpu.memory_space<vmem>>, %i: index) {
  %v = tpu.load %a[%i, %i] : memref<8x128xf32, #tpu.memory_space<vmem>>, vector<8x128xbf16>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'tpu.load' op vector element type bf16 differs from the memref's f32
  func.return
}

// -----

func.func @load_too_big(%a: memref<2x8x128xf32, #tpu.memory_space<vmem>>, %i: index) {
  %v = tpu.load %a[%i, %i, %i] : memref<2x8x128xf32, #tpu.memory_space<vmem>>, vector<16x128xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'tpu.load' op vector 16x128 does not fit in memref<2x8x128xf32, #tpu.memory_space<vmem>>: dimension 0 is 16, more than 8
  func.return
}

// -----

func.func @load_rank(%a: memref<128xf32, #tpu.memory_space<vmem>>, %i: index) {
  %v = tpu.load %a[%i] : memref<128xf32, #tpu.memory_space<vmem>>, vector<1x128xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'tpu.load' op vector has rank 2, more than the rank 1 of memref<128xf32, #tpu.memory_space<vmem>>
  func.return
}

// -----

func.func @store_index_count(%a: memref<2x8x128xf32, #tpu.memory_space<vmem>>, %v: vector<8x128xf32>, %i: index) {
  tpu.store %v, %a[%i, %i] : memref<2x8x128xf32, #tpu.memory_space<vmem>>, vector<8x128xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'tpu.store' op expected 3 indices (one per dimension of memref<2x8x128xf32, #tpu.memory_space<vmem>>), got 2
  func.return
}

// -----

func.func @store_element_type(%a: memref<8x128xi7, #tpu.memory_space<vmem>>, %v: vector<8x128xi7>, %i: index) {
  tpu.store %v, %a[%i, %i] : memref<8x128xi7, #tpu.memory_space<vmem>>, vector<8x128xi7>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'tpu.store' op the store memref has unsupported element type i7 (expected an hlo element type)
  func.return
}

// -----

// Matmul: 2-D [m, k] x [k, n] -> [m, n], accumulating in f32 (bf16/f16/f32) or the type.
func.func @matmul_rank(%a: vector<8x128xf32>, %b: vector<128xf32>, %c: vector<8x128xf32>) {
  %r = tpu.matmul %a, %b, %c : vector<8x128xf32>, vector<128xf32> -> vector<8x128xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'tpu.matmul' op rhs must be a 2-D vector, got vector<128xf32>
  func.return
}

// -----

func.func @matmul_contracting(%a: vector<8x128xf32>, %b: vector<256x128xf32>, %c: vector<8x128xf32>) {
  %r = tpu.matmul %a, %b, %c : vector<8x128xf32>, vector<256x128xf32> -> vector<8x128xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'tpu.matmul' op contracting sizes differ: lhs is 8x128, rhs is 256x128
  func.return
}

// -----

func.func @matmul_acc_shape(%a: vector<8x128xf32>, %b: vector<128x256xf32>, %c: vector<8x128xf32>) {
  %r = tpu.matmul %a, %b, %c : vector<8x128xf32>, vector<128x256xf32> -> vector<8x128xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'tpu.matmul' op the accumulator must be 8x256 (lhs 8x128 x rhs 128x256), got 8x128
  func.return
}

// -----

func.func @matmul_operand_types(%a: vector<8x128xbf16>, %b: vector<128x128xf32>, %c: vector<8x128xf32>) {
  %r = tpu.matmul %a, %b, %c : vector<8x128xbf16>, vector<128x128xf32> -> vector<8x128xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'tpu.matmul' op lhs and rhs element types differ: bf16 vs f32
  func.return
}

// -----

func.func @matmul_bf16_accumulator(%a: vector<8x128xbf16>, %b: vector<128x128xbf16>, %c: vector<8x128xbf16>) {
  %r = tpu.matmul %a, %b, %c : vector<8x128xbf16>, vector<128x128xbf16> -> vector<8x128xbf16>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'tpu.matmul' op bf16 operands accumulate in f32, got an accumulator of bf16
  func.return
}

// -----

func.func @matmul_bool(%a: vector<8x128xi1>, %b: vector<128x128xi1>, %c: vector<8x128xi1>) {
  %r = tpu.matmul %a, %b, %c : vector<8x128xi1>, vector<128x128xi1> -> vector<8x128xi1>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'tpu.matmul' op the MXU does not multiply i1
  func.return
}

// -----

func.func @matmul_acc_result(%a: vector<8x128xf32>, %b: vector<128x128xf32>, %c: vector<8x128xf32>) {
  %r = "tpu.matmul"(%a, %b, %c) : (vector<8x128xf32>, vector<128x128xf32>, vector<8x128xf32>) -> vector<8x128xf16>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'tpu.matmul' op result 'result' at position 0 does not verify:
  // CHECK-NEXT: attribute vector<8x128xf32> expected from variable 'ACC', but got vector<8x128xf16>
  func.return
}

// -----

// Reduce: a known kind; dims distinct and in range; the result drops them.
func.func @reduce_kind(%v: vector<8x128xf32>, %acc: vector<8xf32>) {
  %r = tpu.reduce sum %v, %acc, dims = [1] : vector<8x128xf32> -> vector<8xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:19: error: expected a reduction kind: add, mul, max, min
  func.return
}

// -----

func.func @reduce_kind_generic(%v: vector<8x128xf32>, %acc: vector<8xf32>) {
  %r = "tpu.reduce"(%v, %acc) <{kind = "sum", dims = array<i64: 1>}> : (vector<8x128xf32>, vector<8xf32>) -> vector<8xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'tpu.reduce' op unknown reduction kind "sum" (expected add, mul, max, min)
  func.return
}

// -----

func.func @reduce_dim_range(%v: vector<8x128xf32>, %acc: vector<8xf32>) {
  %r = tpu.reduce add %v, %acc, dims = [2] : vector<8x128xf32> -> vector<8xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'tpu.reduce' op dim 2 is out of range for vector<8x128xf32>
  func.return
}

// -----

func.func @reduce_dim_twice(%v: vector<8x128xf32>, %acc: vector<8xf32>) {
  %r = tpu.reduce add %v, %acc, dims = [1, 1] : vector<8x128xf32> -> vector<8xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'tpu.reduce' op dim 1 is reduced twice
  func.return
}

// -----

func.func @reduce_result(%v: vector<8x128xf32>, %acc: vector<128xf32>) {
  %r = tpu.reduce max %v, %acc, dims = [1] : vector<8x128xf32> -> vector<128xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'tpu.reduce' op reducing dims [1] of vector<8x128xf32> gives vector<8xf32>, got vector<128xf32>
  func.return
}

// -----

func.func @reduce_element_type(%v: vector<8x128xbf16>, %acc: vector<8xf32>) {
  %r = tpu.reduce add %v, %acc, dims = [1] : vector<8x128xbf16> -> vector<8xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'tpu.reduce' op reducing dims [1] of vector<8x128xbf16> gives vector<8xbf16>, got vector<8xf32>
  func.return
}

// -----

// Transpose: a permutation, and the result is permuted accordingly.
func.func @transpose_not_permutation(%v: vector<8x128xf32>) {
  %t = tpu.transpose %v, dims = [1, 1] : vector<8x128xf32> -> vector<128x128xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'tpu.transpose' op dims [1, 1] is not a permutation of the 2 dimensions of vector<8x128xf32>
  func.return
}

// -----

func.func @transpose_result(%v: vector<8x128xf32>) {
  %t = tpu.transpose %v, dims = [1, 0] : vector<8x128xf32> -> vector<8x128xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'tpu.transpose' op transposing vector<8x128xf32> by [1, 0] gives vector<128x8xf32>, got vector<8x128xf32>
  func.return
}

// -----

// Iota: dim in range; integer or float elements.
func.func @iota_dim() {
  %i = tpu.iota dim = 2 : vector<8x128xi32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'tpu.iota' op dim 2 is out of range for vector<8x128xi32>
  func.return
}

// -----

func.func @iota_bool() {
  %i = tpu.iota dim = 0 : vector<8x128xi1>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'tpu.iota' op iota counts in integers or floats, got vector<8x128xi1>
  func.return
}

// -----

// Compare: a predicate of the operands' kind, a mask of their shape.
func.func @cmp_int_predicate_on_floats(%a: vector<8x128xf32>) {
  %m = tpu.cmp slt, %a, %a : vector<8x128xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'tpu.cmp' op predicate "slt" does not compare f32 (expected one of oeq, one, olt, ole, ogt, oge, ueq, une, ult, ule, ugt, uge, ord, uno)
  func.return
}

// -----

func.func @cmp_float_predicate_on_ints(%a: vector<8x128xi32>) {
  %m = tpu.cmp olt, %a, %a : vector<8x128xi32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'tpu.cmp' op predicate "olt" does not compare i32 (expected one of eq, ne, slt, sle, sgt, sge, ult, ule, ugt, uge)
  func.return
}

// -----

func.func @cmp_unknown_predicate(%a: vector<8x128xi32>) {
  %m = tpu.cmp less, %a, %a : vector<8x128xi32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:{{[0-9]+}}: error: expected a comparison predicate
  func.return
}

// -----

func.func @select_mask_shape(%m: vector<8xi1>, %a: vector<8x128xf32>) {
  %r = tpu.select %m, %a, %a : vector<8xi1>, vector<8x128xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'tpu.select' op the mask must be vector<8x128xi1> for vector<8x128xf32>, got vector<8xi1>
  func.return
}

// -----

func.func @convert_shape(%a: vector<8x128xf32>) {
  %r = tpu.convert %a : vector<8x128xf32> -> vector<128x8xi32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'tpu.convert' op a conversion keeps the shape: vector<8x128xf32> -> vector<128x8xi32>
  func.return
}

// -----

func.func @unknown_op(%a: memref<8xf32, #tpu.memory_space<hbm>>) {
  tpu.enqueue_dma %a
  // CHECK: invalid.mlir:[[# @LINE - 1]]:{{[0-9]+}}: error: Operation tpu.enqueue_dma is not registered
  func.return
}

// -----

// Sizes nobody can run (issue 16): a semaphore array or a buffer no machine could hold.
func.func @huge_semaphore_array() attributes {tpu.kernel} {
  %s = tpu.alloc : !tpu.dma_semaphore<1000000000000000000000000000000>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:39: error: a semaphore array holds at most 65536 semaphores, got 1000000000000000000000000000000
  func.return
}

// -----

func.func @huge_buffer(%a: memref<100000000x100000000xf32, #tpu.memory_space<hbm>>) attributes {tpu.kernel} {
  // CHECK: invalid.mlir:[[# @LINE - 1]]:28: error: memref<100000000x100000000xf32, #tpu.memory_space<hbm>> has 10000000000000000 elements; a shaped type has at most 2^48 (281474976710656)
  func.return
}

// -----

func.func @bitcast_shape(%a: memref<16x128xf32, #tpu.memory_space<hbm>>) {
  %r = tpu.memref_bitcast %a : memref<16x128xf32, #tpu.memory_space<hbm>> -> memref<16x128xui8, #tpu.memory_space<hbm>>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'tpu.memref_bitcast' op bitcast_convert's shapes: memref<16x128xf32, #tpu.memory_space<hbm>> cannot be read as memref<16x128xui8, #tpu.memory_space<hbm>>
  func.return
}

// -----

func.func @bitcast_space(%a: memref<16x128xf32, #tpu.memory_space<hbm>>) {
  %r = tpu.memref_bitcast %a : memref<16x128xf32, #tpu.memory_space<hbm>> -> memref<16x128xi32, #tpu.memory_space<vmem>>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'tpu.memref_bitcast' op a bitcast stays in its source's memory space: memref<16x128xf32, #tpu.memory_space<hbm>>, memref<16x128xi32, #tpu.memory_space<vmem>>
  func.return
}
