// RUN: shardc-opt %s -p lower-to-tpu --split-input-file | filecheck %s
// RUN: shardc-opt %s -p lower-to-tpu --split-input-file | shardc-opt - --split-input-file > /dev/null

// sort: a rank sort in VMEM. A block of rows [R, n, inner] is DMA'd in; every key is
// compared with every other ([R, n, n, inner]), the rank counts the keys before it and
// the earlier ties (stable); each output position selects the element of its rank by
// a one-hot mask and an integer add of its bits (exact: NaN payloads, -0).

func.func @sort(%a: tensor<4x8xf32>, %b: tensor<4x8xi32>) -> (tensor<4x8xf32>, tensor<4x8xi32>) {
  %r:2 = hlo.sort %a, %b, dim = 1, comparator = LT, stable : (tensor<4x8xf32>, tensor<4x8xi32>) -> (tensor<4x8xf32>, tensor<4x8xi32>)
  func.return %r#0, %r#1 : tensor<4x8xf32>, tensor<4x8xi32>
}

// CHECK-LABEL: func.func @sort(
// CHECK:         %sort_in = tpu.memref_reshape %a : memref<4x8xf32, #tpu.memory_space<hbm>> -> memref<4x8x1xf32, #tpu.memory_space<hbm>>
// CHECK:         %sort_vin = tpu.alloc : memref<4x8x1xf32, #tpu.memory_space<vmem>>
// CHECK:         %rank_vmem = tpu.alloc : memref<4x8x1xi32, #tpu.memory_space<vmem>>
// CHECK:         scf.for %rows =
// CHECK:           tpu.dma_start %sort_block, %sort_vin, %sort_sem
// CHECK:           %[[KI:.*]] = vector.broadcast %{{.*}} : vector<4x8x1x1xf32> to vector<4x8x8x1xf32>
// CHECK:           %[[KJ:.*]] = vector.broadcast %{{.*}} : vector<4x1x8x1xf32> to vector<4x8x8x1xf32>
// CHECK-NEXT:      tpu.cmp olt, %[[KJ]], %[[KI]] : vector<4x8x8x1xf32>
// CHECK-NEXT:      tpu.cmp uno, %[[KJ]], %[[KJ]]
// CHECK:           tpu.iota dim = 2 : vector<4x8x8x1xi32>
// CHECK-NEXT:      tpu.iota dim = 1 : vector<4x8x8x1xi32>
// CHECK-NEXT:      tpu.cmp slt
// CHECK:           %rank = tpu.reduce add %{{.*}}, %{{.*}}, dims = [2] : vector<4x8x8x1xi32> -> vector<4x8x1xi32>
// CHECK-NEXT:      %[[Z:.*]] = arith.constant 0 : index
// CHECK-NEXT:      tpu.store %rank, %rank_vmem
// CHECK:           arith.bitcast %{{.*}} : vector<4x8x8x1xf32> to vector<4x8x8x1xi32>
// CHECK:           tpu.reduce add
// CHECK:           arith.bitcast %{{.*}} : vector<4x8x1xi32> to vector<4x8x1xf32>
// CHECK:           tpu.dma_start %sort_vout, %{{.*}}, %{{.*}} : memref<4x8x1xf32, #tpu.memory_space<vmem>> to memref<4x8x1xf32, #tpu.memory_space<hbm>>

// -----

// top_k: descending in StableHLO's total order (the float's bits as a sign-magnitude
// integer), the first k ranks; the indices selected like a value.

func.func @top_k(%x: tensor<2x8xf32>) -> (tensor<2x3xf32>, tensor<2x3xi32>) {
  %v, %i = hlo.top_k %x, k = 3 : tensor<2x8xf32> -> (tensor<2x3xf32>, tensor<2x3xi32>)
  func.return %v, %i : tensor<2x3xf32>, tensor<2x3xi32>
}

// CHECK-LABEL: func.func @top_k(
// CHECK:         %[[BITS:.*]] = arith.bitcast %{{.*}} : vector<2x8x8x1xf32> to vector<2x8x8x1xi32>
// CHECK:         %[[FLIP:.*]] = arith.xori %[[BITS]], %{{.*}} : vector<2x8x8x1xi32>
// CHECK-NEXT:    tpu.select %{{.*}}, %[[FLIP]], %[[BITS]]
// CHECK:         tpu.cmp sgt
// CHECK:         tpu.iota dim = 1 : vector<2x3x8x1xi32>
// CHECK:         tpu.store %{{.*}}, %sort_vout[
// CHECK:         %[[I:.*]] = tpu.iota dim = 2 : vector<2x3x8x1xi32>
// CHECK:         tpu.select %{{.*}}, %[[I]], %{{.*}} : vector<2x3x8x1xi1>, vector<2x3x8x1xi32>
