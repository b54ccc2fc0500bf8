// RUN: shardc-opt %s -p lower-to-tpu --split-input-file | filecheck %s
// RUN: shardc-opt %s -p lower-to-tpu --split-input-file | shardc-opt - --split-input-file > /dev/null

// Data movement lowers to DMAs between HBM buffers and their views, never through VMEM.

// reshape: one DMA into the result viewed with the operand's (row-major) shape.

func.func @reshape(%a: tensor<4x6xf32>) -> tensor<24xf32> {
  %r = hlo.reshape %a : (tensor<4x6xf32>) -> tensor<24xf32>
  func.return %r : tensor<24xf32>
}

// CHECK-LABEL: func.func @reshape(%a: memref<4x6xf32, #tpu.memory_space<hbm>>, %out0: memref<24xf32, #tpu.memory_space<hbm>>)
// CHECK-NEXT:    %reshape_view = tpu.memref_reshape %out0 : memref<24xf32, #tpu.memory_space<hbm>> -> memref<4x6xf32, #tpu.memory_space<hbm>>
// CHECK-NEXT:    %reshape_sem = tpu.alloc : !tpu.dma_semaphore
// CHECK-NEXT:    tpu.dma_start %a, %reshape_view, %reshape_sem : memref<4x6xf32, #tpu.memory_space<hbm>> to memref<4x6xf32, #tpu.memory_space<hbm>>
// CHECK-NEXT:    tpu.dma_wait %reshape_sem, %reshape_view
// CHECK-NEXT:    func.return
// CHECK-NOT:     vmem

// -----

// slice with unit strides: one DMA of a block.

func.func @slice(%a: tensor<8x6xf32>) -> tensor<2x4xf32> {
  %r = hlo.slice %a [1:3, 2:6] : (tensor<8x6xf32>) -> tensor<2x4xf32>
  func.return %r : tensor<2x4xf32>
}

// CHECK-LABEL: func.func @slice(
// CHECK:         %[[ROW:.*]] = arith.constant 1 : index
// CHECK-NEXT:    %[[COL:.*]] = arith.constant 2 : index
// CHECK-NEXT:    %slice_block = tpu.memref_slice %a[%[[ROW]], %[[COL]]] : memref<8x6xf32, #tpu.memory_space<hbm>> -> memref<2x4xf32, #tpu.memory_space<hbm>>
// CHECK-NEXT:    %slice_sem = tpu.alloc : !tpu.dma_semaphore
// CHECK-NEXT:    tpu.dma_start %slice_block, %out0, %slice_sem
// CHECK-NEXT:    tpu.dma_wait %slice_sem, %out0
// CHECK-NEXT:    func.return

// -----

// A stride dividing its dimension: the dimension viewed as [n / s, s], still one DMA.

func.func @strided(%a: tensor<8x6xf32>) -> tensor<4x2xf32> {
  %r = hlo.slice %a [1:8:2, 0:5:3] : (tensor<8x6xf32>) -> tensor<4x2xf32>
  func.return %r : tensor<4x2xf32>
}

// CHECK-LABEL: func.func @strided(
// CHECK-NEXT:    %slice_src = tpu.memref_reshape %a : memref<8x6xf32, #tpu.memory_space<hbm>> -> memref<4x2x2x3xf32, #tpu.memory_space<hbm>>
// CHECK-NEXT:    %slice_dst = tpu.memref_reshape %out0 : memref<4x2xf32, #tpu.memory_space<hbm>> -> memref<4x1x2x1xf32, #tpu.memory_space<hbm>>
// CHECK:         %slice_block = tpu.memref_slice %slice_src[{{.*}}] : memref<4x2x2x3xf32, #tpu.memory_space<hbm>> -> memref<4x1x2x1xf32, #tpu.memory_space<hbm>>
// CHECK:         tpu.dma_start %slice_block, %slice_dst, %slice_sem
// CHECK-NEXT:    tpu.dma_wait %slice_sem, %slice_dst
// CHECK-NOT:     tpu.dma_start

// -----

// A stride that does not divide its dimension: a DMA per index, all started, then waited.

func.func @loop(%a: tensor<7xi32>) -> tensor<2xi32> {
  %r = hlo.slice %a [1:7:3] : (tensor<7xi32>) -> tensor<2xi32>
  func.return %r : tensor<2xi32>
}

// CHECK-LABEL: func.func @loop(
// CHECK:         scf.for %[[I:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK:           %slice_block = tpu.memref_slice %a[%{{.*}}] : memref<7xi32, #tpu.memory_space<hbm>> -> memref<1xi32, #tpu.memory_space<hbm>>
// CHECK-NEXT:      %slice_out = tpu.memref_slice %out0[%[[I]]] : memref<2xi32, #tpu.memory_space<hbm>> -> memref<1xi32, #tpu.memory_space<hbm>>
// CHECK-NEXT:      tpu.dma_start %slice_block, %slice_out, %slice_sem
// CHECK-NEXT:    }
// CHECK:         scf.for
// CHECK:           tpu.dma_wait %slice_sem, %slice_out_1
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return

// -----

// concatenate: one DMA per operand into its part of the output, all in flight at once.

func.func @concat(%a: tensor<2x4xbf16>, %b: tensor<3x4xbf16>) -> tensor<5x4xbf16> {
  %r = hlo.concatenate %a, %b, dim = 0 : (tensor<2x4xbf16>, tensor<3x4xbf16>) -> tensor<5x4xbf16>
  func.return %r : tensor<5x4xbf16>
}

// CHECK-LABEL: func.func @concat(
// CHECK:         %concat_part = tpu.memref_slice %out0[%{{.*}}, %{{.*}}] : memref<5x4xbf16, #tpu.memory_space<hbm>> -> memref<2x4xbf16, #tpu.memory_space<hbm>>
// CHECK:         %concat_part_1 = tpu.memref_slice %out0[%{{.*}}, %{{.*}}] : memref<5x4xbf16, #tpu.memory_space<hbm>> -> memref<3x4xbf16, #tpu.memory_space<hbm>>
// CHECK:         tpu.dma_start %a, %concat_part, %concat_sem
// CHECK-NEXT:    tpu.dma_start %b, %concat_part_1, %concat_sem_1
// CHECK-NEXT:    tpu.dma_wait %concat_sem, %concat_part
// CHECK-NEXT:    tpu.dma_wait %concat_sem_1, %concat_part_1

// -----

// dynamic_slice: the offset (a rank-0 HBM tensor) goes to SMEM by DMA, is loaded,
// clamped to [0, dim - size], and the block at it is one DMA.

func.func @dynamic_slice(%a: tensor<16x128xf32>, %i: tensor<i32>, %j: tensor<i32>) -> tensor<2x128xf32> {
  %r = hlo.dynamic_slice %a [%i, %j] sizes = [2, 128] : (tensor<16x128xf32>, tensor<i32>, tensor<i32>) -> tensor<2x128xf32>
  func.return %r : tensor<2x128xf32>
}

// CHECK-LABEL: func.func @dynamic_slice(
// CHECK-NEXT:    %offset_smem = tpu.alloc : memref<i32, #tpu.memory_space<smem>>
// CHECK-NEXT:    %offset_sem = tpu.alloc : !tpu.dma_semaphore
// CHECK-NEXT:    tpu.dma_start %i, %offset_smem, %offset_sem : memref<i32, #tpu.memory_space<hbm>> to memref<i32, #tpu.memory_space<smem>>
// CHECK:         tpu.dma_wait %offset_sem, %offset_smem
// CHECK-NEXT:    %offset = memref.load %offset_smem[] : memref<i32, #tpu.memory_space<smem>>
// CHECK-NEXT:    %[[ZERO:.*]] = arith.constant 0 : i32
// CHECK-NEXT:    %[[HI:.*]] = arith.constant 14 : i32
// CHECK-NEXT:    %[[LO:.*]] = arith.maxsi %offset, %[[ZERO]] : i32
// CHECK-NEXT:    %offset_clamped = arith.minsi %[[LO]], %[[HI]] : i32
// CHECK-NEXT:    %offset_index = arith.index_cast %offset_clamped : i32 to index
// CHECK-NEXT:    tpu.dealloc %offset_smem
// CHECK:         %dynamic_block = tpu.memref_slice %a[%offset_index, %offset_index_1] : memref<16x128xf32, #tpu.memory_space<hbm>> -> memref<2x128xf32, #tpu.memory_space<hbm>>
// CHECK-NEXT:    %dynamic_slice_sem = tpu.alloc : !tpu.dma_semaphore
// CHECK-NEXT:    tpu.dma_start %dynamic_block, %out0, %dynamic_slice_sem
// CHECK-NEXT:    tpu.dma_wait %dynamic_slice_sem, %out0

// -----

// dynamic_update_slice: copy the operand (while the offsets arrive), wait for it, then
// DMA the update into its clamped place.

func.func @dynamic_update_slice(%a: tensor<16x128xf32>, %u: tensor<2x128xf32>, %i: tensor<i32>, %j: tensor<i32>) -> tensor<16x128xf32> {
  %r = hlo.dynamic_update_slice %a, %u [%i, %j] : (tensor<16x128xf32>, tensor<2x128xf32>, tensor<i32>, tensor<i32>) -> tensor<16x128xf32>
  func.return %r : tensor<16x128xf32>
}

// CHECK-LABEL: func.func @dynamic_update_slice(
// CHECK-NEXT:    %dus_copy_sem = tpu.alloc : !tpu.dma_semaphore
// CHECK-NEXT:    tpu.dma_start %a, %out0, %dus_copy_sem
// CHECK:         tpu.dma_start %i, %offset_smem
// CHECK:         tpu.dma_start %j, %offset_smem_1
// CHECK:         tpu.dma_wait %dus_copy_sem, %out0
// CHECK-NEXT:    %dus_place = tpu.memref_slice %out0[%offset_index, %offset_index_1] : memref<16x128xf32, #tpu.memory_space<hbm>> -> memref<2x128xf32, #tpu.memory_space<hbm>>
// CHECK-NEXT:    %dus_sem = tpu.alloc : !tpu.dma_semaphore
// CHECK-NEXT:    tpu.dma_start %u, %dus_place, %dus_sem
// CHECK-NEXT:    tpu.dma_wait %dus_sem, %dus_place
// CHECK-NEXT:    func.return
