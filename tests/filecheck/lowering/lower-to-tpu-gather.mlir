// RUN: shardc-opt %s -p lower-to-tpu --split-input-file | filecheck %s
// RUN: shardc-opt %s -p lower-to-tpu --split-input-file | shardc-opt - --split-input-file > /dev/null

// gather: the indices DMA'd to SMEM, each start read with memref.load and clamped to
// [0, dim - slice size], one HBM-to-HBM DMA per gathered slice (all in flight, then one
// wait each); both buffers seen with one list of slots so the two blocks have one shape.
// The loop body holds no constant (hoisted: the simulator runs the body per slice).

func.func @embedding(%t: tensor<16x128xf32>, %i: tensor<4xi32>) -> tensor<4x128xf32> {
  %r = hlo.gather %t, %i, offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1, slice_sizes = [1, 128] : (tensor<16x128xf32>, tensor<4xi32>) -> tensor<4x128xf32>
  func.return %r : tensor<4x128xf32>
}

// CHECK-LABEL: func.func @embedding(
// CHECK-NEXT:    %gather_operand = tpu.memref_reshape %t : memref<16x128xf32, #tpu.memory_space<hbm>> -> memref<1x16x128xf32, #tpu.memory_space<hbm>>
// CHECK-NEXT:    %gather_result = tpu.memref_reshape %out0 : memref<4x128xf32, #tpu.memory_space<hbm>> -> memref<4x1x128xf32, #tpu.memory_space<hbm>>
// CHECK-NEXT:    %gather_sem = tpu.alloc : !tpu.dma_semaphore
// CHECK-NEXT:    %indices_smem = tpu.alloc : memref<4xi32, #tpu.memory_space<smem>>
// CHECK-NEXT:    %indices_sem = tpu.alloc : !tpu.dma_semaphore
// CHECK-NEXT:    tpu.dma_start %i, %indices_smem, %indices_sem
// CHECK-NEXT:    tpu.dma_wait %indices_sem, %indices_smem
// CHECK:         %[[HI:.*]] = arith.constant 15 : i64
// CHECK-NEXT:    %[[LO:.*]] = arith.constant 0 : i64
// CHECK-NEXT:    %[[Z:.*]] = arith.constant 0 : index
// CHECK-NEXT:    scf.for %b =
// CHECK-NEXT:      %start = memref.load %indices_smem[%b] : memref<4xi32, #tpu.memory_space<smem>>
// CHECK-NEXT:      %[[WIDE:.*]] = arith.extsi %start : i32 to i64
// CHECK-NEXT:      %[[MAX:.*]] = arith.maxsi %[[WIDE]], %[[LO]] : i64
// CHECK-NEXT:      %start_clamped = arith.minsi %[[MAX]], %[[HI]] : i64
// CHECK-NEXT:      %start_index = arith.index_cast %start_clamped : i64 to index
// CHECK-NEXT:      %slice_block = tpu.memref_slice %gather_operand[%[[Z]], %start_index, %[[Z]]] : memref<1x16x128xf32, #tpu.memory_space<hbm>> -> memref<1x1x128xf32, #tpu.memory_space<hbm>>
// CHECK-NEXT:      %slice_place = tpu.memref_slice %gather_result[%b, %[[Z]], %[[Z]]] : memref<4x1x128xf32, #tpu.memory_space<hbm>> -> memref<1x1x128xf32, #tpu.memory_space<hbm>>
// CHECK-NEXT:      tpu.dma_start %slice_block, %slice_place, %gather_sem
// CHECK-NEXT:    }
// CHECK:         scf.for %w =
// CHECK:           tpu.dma_wait %gather_sem, %waited
// CHECK:         tpu.dealloc %indices_smem
// CHECK-NOT:     vmem

// -----

// Operand batching dimensions take the batch coordinate, not an index; index_vector_dim
// 0 puts the start components first.

func.func @batched(%a: tensor<3x5x8xi32>, %i: tensor<1x3x2xi32>) -> tensor<3x2x4xi32> {
  %r = hlo.gather %a, %i, offset_dims = [2], collapsed_slice_dims = [1], operand_batching_dims = [0], start_indices_batching_dims = [1], start_index_map = [1], index_vector_dim = 0, slice_sizes = [1, 1, 4] : (tensor<3x5x8xi32>, tensor<1x3x2xi32>) -> tensor<3x2x4xi32>
  func.return %r : tensor<3x2x4xi32>
}

// CHECK-LABEL: func.func @batched(
// CHECK:         %gather_operand = tpu.memref_reshape %a : memref<3x5x8xi32, #tpu.memory_space<hbm>> -> memref<1x1x3x5x8xi32, #tpu.memory_space<hbm>>
// CHECK-NEXT:    %gather_result = tpu.memref_reshape %out0 : memref<3x2x4xi32, #tpu.memory_space<hbm>> -> memref<3x2x1x1x4xi32, #tpu.memory_space<hbm>>
// CHECK:         scf.for %[[B0:.*]] =
// CHECK:           scf.for %[[B1:.*]] =
// CHECK:             %start = memref.load %indices_smem[%{{.*}}, %[[B0]], %[[B1]]] : memref<1x3x2xi32, #tpu.memory_space<smem>>
// CHECK:             %slice_block = tpu.memref_slice %gather_operand[%[[Z:.*]], %[[Z]], %[[B0]], %start_index, %[[Z]]] : memref<1x1x3x5x8xi32, #tpu.memory_space<hbm>> -> memref<1x1x1x1x4xi32, #tpu.memory_space<hbm>>
// CHECK-NEXT:        %slice_place = tpu.memref_slice %gather_result[%[[B0]], %[[B1]], %[[Z]], %[[Z]], %[[Z]]]
