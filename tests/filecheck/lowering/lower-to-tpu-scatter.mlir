// RUN: shardc-opt %s -p lower-to-tpu --split-input-file | filecheck %s
// RUN: shardc-opt %s -p lower-to-tpu --split-input-file | shardc-opt - --split-input-file > /dev/null

// scatter add: the operand copied into the result, then update by update in index order:
// a window wholly in bounds (scf.if) is read into VMEM with its update, added, written
// back, each step waited before the next (duplicates combine as at level S).

func.func @grad(%t: tensor<16x128xf32>, %i: tensor<4x1xi32>, %u: tensor<4x128xf32>) -> tensor<16x128xf32> {
  %r = hlo.scatter add %t, %i, %u, update_window_dims = [1], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1 : (tensor<16x128xf32>, tensor<4x1xi32>, tensor<4x128xf32>) -> tensor<16x128xf32>
  func.return %r : tensor<16x128xf32>
}

// CHECK-LABEL: func.func @grad(
// CHECK-NEXT:    %scatter_copy_sem = tpu.alloc : !tpu.dma_semaphore
// CHECK-NEXT:    tpu.dma_start %t, %out0, %scatter_copy_sem
// CHECK-NEXT:    tpu.dma_wait %scatter_copy_sem, %out0
// CHECK:         %scatter_window = tpu.alloc : memref<1x1x128xf32, #tpu.memory_space<vmem>>
// CHECK-NEXT:    %scatter_update = tpu.alloc : memref<1x1x128xf32, #tpu.memory_space<vmem>>
// CHECK:         scf.for %b =
// CHECK:           %start = memref.load %indices_smem[%b, %{{.*}}] : memref<4x1xi32, #tpu.memory_space<smem>>
// CHECK:           %[[GE:.*]] = arith.cmpi sge
// CHECK-NEXT:      %[[LE:.*]] = arith.cmpi sle
// CHECK-NEXT:      %[[FITS:.*]] = arith.andi %[[GE]], %[[LE]] : i1
// CHECK:           scf.if %[[FITS]] {
// CHECK:             tpu.dma_start %slice_block, %scatter_window, %scatter_sem
// CHECK-NEXT:        tpu.dma_start %slice_place, %scatter_update, %scatter_sem
// CHECK:             %[[SUM:.*]] = arith.addf
// CHECK-NEXT:        tpu.store %[[SUM]], %scatter_window
// CHECK-NEXT:        tpu.dma_start %scatter_window, %slice_block, %scatter_sem
// CHECK-NEXT:        tpu.dma_wait %scatter_sem, %slice_block

// -----

// replace: one DMA of the update window into its place, no VMEM.

func.func @replace(%t: tensor<16x128xf32>, %i: tensor<4x1xi32>, %u: tensor<4x128xf32>) -> tensor<16x128xf32> {
  %r = hlo.scatter replace %t, %i, %u, update_window_dims = [1], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1 : (tensor<16x128xf32>, tensor<4x1xi32>, tensor<4x128xf32>) -> tensor<16x128xf32>
  func.return %r : tensor<16x128xf32>
}

// CHECK-LABEL: func.func @replace(
// CHECK:         scf.if
// CHECK:           tpu.dma_start %slice_place, %slice_block, %scatter_sem
// CHECK-NEXT:      tpu.dma_wait %scatter_sem, %slice_block
// CHECK-NOT:     vmem
