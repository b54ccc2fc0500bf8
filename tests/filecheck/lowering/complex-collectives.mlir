// RUN: shardc-opt %s -p 'lower-to-tpu{chip=v5e}' --split-input-file | filecheck %s
// RUN: shardc-opt %s -p lower-to-tpu --split-input-file | shardc-opt - --split-input-file > /dev/null

// A complex all_reduce mul (lowering/pair_combine.py): the ring runs on the operand's
// parts' view (a last dimension of 2, [G, numel / G, 2] so no chunk cuts a pair); its
// combine loads the arriving partial's and the own chunk's real and imaginary parts
// (index 0 and 1 of the last dimension), multiplies them as numpy does (the products
// fused into the sums in f64, each part rounded once to f32) and stores both parts.

spmd.mesh @ring = <["x"=2]>
func.func @all_reduce_mul(%a: tensor<4x6xcomplex<f32>>) -> tensor<4x6xcomplex<f32>> attributes {spmd.per_device_io} {
  %r = collective.all_reduce mul %a on @ring["x"] : tensor<4x6xcomplex<f32>>
  func.return %r : tensor<4x6xcomplex<f32>>
}

// CHECK-LABEL: func.func @all_reduce_mul(
// CHECK:         %bitcast_view = tpu.memref_bitcast %a : memref<4x6xcomplex<f32>, #tpu.memory_space<hbm>> -> memref<4x6x2xf32, #tpu.memory_space<hbm>>
// CHECK-NEXT:    %ar_in = tpu.memref_reshape %bitcast_view : memref<4x6x2xf32, #tpu.memory_space<hbm>> -> memref<2x12x2xf32, #tpu.memory_space<hbm>>
// CHECK:         %rs_recv_buf = tpu.alloc : memref<2x1x12x2xf32, #tpu.memory_space<vmem>>
// CHECK:         %[[ONE:.*]] = arith.constant 1 : index
// CHECK:         tpu.dma_wait %rs_recv_sem, %rs_slot
// CHECK-NEXT:    %partial_re = tpu.load %rs_recv_buf[%slot, %[[I:.*]], %[[J:.*]], %[[K:.*]]] : memref<2x1x12x2xf32, #tpu.memory_space<vmem>>, vector<1x12x1xf32>
// CHECK-NEXT:    %partial_im = tpu.load %rs_recv_buf[%slot, %[[I]], %[[J]], %[[ONE]]] : memref<2x1x12x2xf32, #tpu.memory_space<vmem>>, vector<1x12x1xf32>
// CHECK-NEXT:    %own_re = tpu.load %rs_mine[%[[I]], %[[J]], %[[K]]]
// CHECK-NEXT:    %own_im = tpu.load %rs_mine[%[[I]], %[[J]], %{{.*}}]
// CHECK-NEXT:    %[[P:.*]] = arith.mulf %partial_im, %own_im : vector<1x12x1xf32>
// CHECK-NEXT:    %[[Q:.*]] = arith.mulf %partial_im, %own_re : vector<1x12x1xf32>
// CHECK-NEXT:    %[[AR:.*]] = arith.extf %partial_re : vector<1x12x1xf32> to vector<1x12x1xf64>
// CHECK-NEXT:    %[[BR:.*]] = arith.extf %own_re : vector<1x12x1xf32> to vector<1x12x1xf64>
// CHECK-NEXT:    %[[BI:.*]] = arith.extf %own_im : vector<1x12x1xf32> to vector<1x12x1xf64>
// CHECK-NEXT:    %[[WP:.*]] = arith.extf %[[P]] : vector<1x12x1xf32> to vector<1x12x1xf64>
// CHECK-NEXT:    %[[WQ:.*]] = arith.extf %[[Q]] : vector<1x12x1xf32> to vector<1x12x1xf64>
// CHECK-NEXT:    %[[RR:.*]] = arith.mulf %[[AR]], %[[BR]] : vector<1x12x1xf64>
// CHECK-NEXT:    %[[RE:.*]] = arith.subf %[[RR]], %[[WP]] : vector<1x12x1xf64>
// CHECK-NEXT:    %[[RI:.*]] = arith.mulf %[[AR]], %[[BI]] : vector<1x12x1xf64>
// CHECK-NEXT:    %[[IM:.*]] = arith.addf %[[RI]], %[[WQ]] : vector<1x12x1xf64>
// CHECK-NEXT:    %mul_re = arith.truncf %[[RE]] : vector<1x12x1xf64> to vector<1x12x1xf32>
// CHECK-NEXT:    %mul_im = arith.truncf %[[IM]] : vector<1x12x1xf64> to vector<1x12x1xf32>
// CHECK-NEXT:    tpu.dma_wait %rs_send_sem, %rs_acc
// CHECK-NEXT:    tpu.store %mul_re, %rs_acc[%[[I]], %[[J]], %[[K]]] : memref<1x12x2xf32, #tpu.memory_space<vmem>>, vector<1x12x1xf32>
// CHECK-NEXT:    tpu.store %mul_im, %rs_acc[%[[I]], %[[J]], %{{.*}}] : memref<1x12x2xf32, #tpu.memory_space<vmem>>, vector<1x12x1xf32>
// CHECK-NEXT:    tpu.sem_signal %rs_credits, %one, device = %left_x

// -----

// A complex reduce_scatter max: numpy's lexicographic order on (real, imaginary) as
// compares and selects on the parts, the partial (numpy's first operand) kept where it
// has a NaN part or is at least the own value, both parts selected together.

spmd.mesh @ring = <["x"=4]>
func.func @reduce_scatter_max(%a: tensor<16x8xcomplex<f64>>) -> tensor<4x8xcomplex<f64>> attributes {spmd.per_device_io} {
  %r = collective.reduce_scatter max %a on @ring["x"], dim = 0 : (tensor<16x8xcomplex<f64>>) -> tensor<4x8xcomplex<f64>>
  func.return %r : tensor<4x8xcomplex<f64>>
}

// CHECK-LABEL: func.func @reduce_scatter_max(
// CHECK:         scf.for %s
// CHECK:           %partial_re_1 = tpu.load %rs_recv_buf[{{.*}}] : memref<2x4x8x2xf64, #tpu.memory_space<vmem>>, vector<4x8x1xf64>
// CHECK:           tpu.cmp ogt, %partial_re_1, %own_re_1 : vector<4x8x1xf64>
// CHECK:           tpu.cmp oeq, %partial_re_1, %own_re_1 : vector<4x8x1xf64>
// CHECK-NEXT:      tpu.cmp oge, %partial_im_1, %own_im_1 : vector<4x8x1xf64>
// CHECK:           %[[NAN:.*]] = arith.ori
// CHECK-NEXT:      %[[ORDER:.*]] = arith.ori
// CHECK-NEXT:      %[[PICK:.*]] = arith.ori %[[NAN]], %[[ORDER]]
// CHECK-NEXT:      %max_re_1 = tpu.select %[[PICK]], %partial_re_1, %own_re_1 : vector<4x8x1xi1>, vector<4x8x1xf64>
// CHECK-NEXT:      %max_im_1 = tpu.select %[[PICK]], %partial_im_1, %own_im_1 : vector<4x8x1xi1>, vector<4x8x1xf64>
// CHECK:           tpu.store %max_re_1, %rs_acc
// CHECK-NEXT:      tpu.store %max_im_1, %rs_acc
// CHECK:         }
