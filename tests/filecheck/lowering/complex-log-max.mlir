// RUN: shardc-opt %s -p lower-to-tpu --split-input-file | filecheck %s
// RUN: shardc-opt %s -p lower-to-tpu --split-input-file | shardc-opt - --split-input-file > /dev/null

// Complex log on the parts (lowering/complex_pairs.py `_log`): the parts split by two
// strided DMAs, ONE loop computing in f64 log|z| (Kahan's log1p near |z| = 1, the log of
// the squares elsewhere) and atan2(b, a) (lowering/atan2.py), each part rounded once to
// f32, and the parts joined by two strided DMAs.

func.func @log(%z: tensor<8x128xcomplex<f32>>) -> tensor<8x128xcomplex<f32>> {
  %r = hlo.log %z : tensor<8x128xcomplex<f32>>
  func.return %r : tensor<8x128xcomplex<f32>>
}

// CHECK-LABEL: func.func @log(
// CHECK:         tpu.dma_start %part, %part_dst, %part_sem : memref<8x128x1xf32
// CHECK:         tpu.dma_start %part_1, %part_dst_1, %part_sem_1 : memref<8x128x1xf32
// CHECK:         %[[A:.*]] = arith.extf %{{.*}} : vector<8x128xf32> to vector<8x128xf64>
// CHECK:         %[[B:.*]] = arith.extf %{{.*}} : vector<8x128xf32> to vector<8x128xf64>
// CHECK:         math.log %{{.*}} : vector<8x128xf64>
// CHECK:         math.log %{{.*}} : vector<8x128xf64>
// CHECK:         arith.truncf %{{.*}} : vector<8x128xf64> to vector<8x128xf32>
// CHECK:         arith.constant -0.87506086000319039 : f64
// CHECK:         math.copysign %{{.*}}, %[[A]] : vector<8x128xf64>
// CHECK:         math.copysign %{{.*}}, %[[B]] : vector<8x128xf64>
// CHECK-NEXT:    arith.truncf %{{.*}} : vector<8x128xf64> to vector<8x128xf32>
// CHECK:         tpu.dma_start %part_src, %part_2, %complex_sem
// CHECK:         tpu.dma_start %part_src_1, %part_3, %complex_sem_1

// -----

// Complex max on the parts (`_lexicographic`): numpy's order as compares and selects in
// one loop, the first operand kept where it has a NaN part, is greater, or ties.

func.func @max(%a: tensor<8x128xcomplex<f32>>, %b: tensor<8x128xcomplex<f32>>) -> tensor<8x128xcomplex<f32>> {
  %r = hlo.max %a, %b : tensor<8x128xcomplex<f32>>
  func.return %r : tensor<8x128xcomplex<f32>>
}

// CHECK-LABEL: func.func @max(
// CHECK:         %[[AR:.*]] = tpu.load
// CHECK-NEXT:    %[[NR:.*]] = tpu.cmp une, %[[AR]], %[[AR]]
// CHECK-NEXT:    %[[AI:.*]] = tpu.load
// CHECK-NEXT:    %[[NI:.*]] = tpu.cmp une, %[[AI]], %[[AI]]
// CHECK-NEXT:    %[[NAN:.*]] = arith.ori %[[NR]], %[[NI]]
// CHECK-NEXT:    %[[BR:.*]] = tpu.load
// CHECK-NEXT:    %[[GT:.*]] = tpu.cmp ogt, %[[AR]], %[[BR]]
// CHECK:         %[[BI:.*]] = tpu.load
// CHECK:         tpu.cmp oeq, %[[AR]], %[[BR]]
// CHECK-NEXT:    tpu.cmp oge, %[[AI]], %[[BI]]
// CHECK:         %[[PICK:.*]] = arith.ori %[[NAN]], %{{.*}}
// CHECK-NEXT:    tpu.select %[[PICK]], %[[AR]], %[[BR]]
// CHECK:         tpu.select %[[PICK]], %[[AI]], %[[BI]]
