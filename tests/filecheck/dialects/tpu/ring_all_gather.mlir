// RUN: SHARDC_ROUNDTRIP
// RUN: shardc-opt %s | filecheck %s

// The ring all_gather of the tpu module docstring (kept identical to it; a unit test
// checks that): N - 1 remote DMAs to the right neighbour, one receive semaphore per step.

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

// CHECK:      func.func @ring_all_gather(%in: memref<8x128xf32, #tpu.memory_space<hbm>>, %out: memref<4x8x128xf32, #tpu.memory_space<hbm>>) {
// CHECK:        %recv_sems = tpu.alloc : !tpu.dma_semaphore<3>
// CHECK:        tpu.dma_start %in, %own, %copy_sem : memref<8x128xf32, #tpu.memory_space<hbm>> to memref<8x128xf32, #tpu.memory_space<hbm>>
// CHECK-NEXT:   tpu.dma_wait %copy_sem, %own : memref<8x128xf32, #tpu.memory_space<hbm>>
// CHECK-NEXT:   tpu.barrier on @ring["x"]
// CHECK-NEXT:   scf.for %s = %c0 to %steps step %c1 {
// CHECK:          %recv_sem = tpu.memref_slice %recv_sems[%s] : !tpu.dma_semaphore<3> -> !tpu.dma_semaphore
// CHECK-NEXT:     tpu.dma_start %block, %block, %send_sem, %recv_sem, device = %right : memref<8x128xf32, #tpu.memory_space<hbm>> to memref<8x128xf32, #tpu.memory_space<hbm>>
// CHECK-NEXT:     tpu.dma_wait %send_sem, %block : memref<8x128xf32, #tpu.memory_space<hbm>>
// CHECK-NEXT:     tpu.dma_wait %recv_sem, %incoming : memref<8x128xf32, #tpu.memory_space<hbm>>
// CHECK-NEXT:   }
// CHECK-NEXT:   func.return
