// RUN: shardc-opt %s -p lower-to-tpu --split-input-file | filecheck %s
// RUN: shardc-opt %s -p lower-to-tpu --split-input-file | shardc-opt - --split-input-file > /dev/null

// sort: a bitonic network in VMEM. A block of rows [R, n, inner] is DMA'd into the head
// of a [R, P, inner] buffer (P = 8: n = 6 rounded up to a power of two) per operand; an
// f32 key packs into one i64 per position: its bits in the comparator's order (-0 as +0,
// the sign folded, NaN the largest, biased to unsigned) above the position (an iota),
// the padding all ones (sorted last). A stage views each buffer as
// [R, P / 2j, 2, j, inner], loads both halves, swaps where the second key is the smaller
// (one unsigned compare, flipped in the descending blocks of the merge), selects and
// stores both halves of the key and of every operand back; the first n positions are
// DMA'd out.

func.func @sort(%a: tensor<4x6xf32>, %b: tensor<4x6xi32>) -> (tensor<4x6xf32>, tensor<4x6xi32>) {
  %r:2 = hlo.sort %a, %b, dim = 1, comparator = LT, stable : (tensor<4x6xf32>, tensor<4x6xi32>) -> (tensor<4x6xf32>, tensor<4x6xi32>)
  func.return %r#0, %r#1 : tensor<4x6xf32>, tensor<4x6xi32>
}

// CHECK-LABEL: func.func @sort(
// CHECK:         %sort_vin = tpu.alloc : memref<4x8x1xf32, #tpu.memory_space<vmem>>
// CHECK:         %sort_key = tpu.alloc : memref<4x8x1xi64, #tpu.memory_space<vmem>>
// CHECK-NOT:     sort_index
// CHECK:         scf.for %rows =
// CHECK:           %sort_head = tpu.memref_slice %sort_vin[{{.*}}] : memref<4x8x1xf32, #tpu.memory_space<vmem>> -> memref<4x6x1xf32, #tpu.memory_space<vmem>>
// CHECK:           tpu.dma_start %sort_block, %sort_head, %sort_sem
// CHECK:           %[[X:.*]] = tpu.load %sort_vin
// CHECK:           arith.bitcast %[[X]] : vector<4x8x1xf32> to vector<4x8x1xi32>
// CHECK:           tpu.cmp oeq, %[[X]]
// CHECK:           arith.shrsi
// CHECK:           tpu.cmp uno, %[[X]], %[[X]]
// CHECK:           tpu.convert %{{.*}} : vector<4x8x1xi32> -> vector<4x8x1xi64>
// CHECK:           %sort_iota = tpu.iota dim = 1 : vector<4x8x1xi64>
// CHECK:           %[[HIGH:.*]] = arith.shli
// CHECK-NEXT:      arith.ori %[[HIGH]], %sort_iota
// CHECK:           tpu.cmp sge, %sort_iota
// CHECK:           tpu.store %{{.*}}, %sort_key
// CHECK:           %[[PAIRS:.*]] = tpu.memref_reshape %sort_key : memref<4x8x1xi64, #tpu.memory_space<vmem>> -> memref<4x4x2x1x1xi64, #tpu.memory_space<vmem>>
// CHECK:           %[[LO:.*]] = tpu.load %[[PAIRS]][%[[Z:.*]], %[[Z]], %[[Z]], %[[Z]], %[[Z]]] : memref<4x4x2x1x1xi64, #tpu.memory_space<vmem>>, vector<4x4x1x1x1xi64>
// CHECK:           %[[HI:.*]] = tpu.load %[[PAIRS]][%[[Z]], %[[Z]], %[[ONE:.*]], %[[Z]], %[[Z]]]
// CHECK:           tpu.cmp ult, %[[HI]], %[[LO]] : vector<4x4x1x1x1xi64>
// CHECK:           tpu.iota dim = 1 : vector<4x4x1x1x1xi32>
// CHECK:           %[[SWAP:.*]] = arith.xori
// CHECK-NEXT:      %[[NEWLO:.*]] = tpu.select %[[SWAP]], %[[HI]], %[[LO]]
// CHECK-NEXT:      tpu.store %[[NEWLO]], %[[PAIRS]][%[[Z]], %[[Z]], %[[Z]], %[[Z]], %[[Z]]]
// CHECK-NEXT:      %[[NEWHI:.*]] = tpu.select %[[SWAP]], %[[LO]], %[[HI]]
// CHECK-NEXT:      tpu.store %[[NEWHI]], %[[PAIRS]][%[[Z]], %[[Z]], %[[ONE]], %[[Z]], %[[Z]]]
// CHECK:           tpu.memref_reshape %sort_key : memref<4x8x1xi64, #tpu.memory_space<vmem>> -> memref<4x2x2x2x1xi64, #tpu.memory_space<vmem>>
// CHECK:           tpu.memref_reshape %sort_key : memref<4x8x1xi64, #tpu.memory_space<vmem>> -> memref<4x1x2x4x1xi64, #tpu.memory_space<vmem>>
// CHECK:           tpu.dma_start %sort_head_{{.*}}, %sort_block_{{.*}} : memref<4x6x1xf32, #tpu.memory_space<vmem>> to memref<4x6x1xf32, #tpu.memory_space<hbm>>

// -----

// top_k of a small k: k selection passes over the row transposed to [n, R]: the keys in
// StableHLO's total order (the float's bits as a sign-magnitude integer); per pass the
// largest key not taken, its lowest position, the value there by a one-hot sum of bits.

func.func @top_k(%x: tensor<2x8xf32>) -> (tensor<2x3xf32>, tensor<2x3xi32>) {
  %v, %i = hlo.top_k %x, k = 3 : tensor<2x8xf32> -> (tensor<2x3xf32>, tensor<2x3xi32>)
  func.return %v, %i : tensor<2x3xf32>, tensor<2x3xi32>
}

// CHECK-LABEL: func.func @top_k(
// CHECK:         tpu.transpose %{{.*}}, dims = [1, 0] : vector<2x8xf32> -> vector<8x2xf32>
// CHECK:         %[[BITS:.*]] = arith.bitcast %{{.*}} : vector<8x2xf32> to vector<8x2xi32>
// CHECK:         %[[FLIP:.*]] = arith.xori %[[BITS]], %{{.*}} : vector<8x2xi32>
// CHECK-NEXT:    tpu.select %{{.*}}, %[[FLIP]], %[[BITS]]
// CHECK:         tpu.iota dim = 0 : vector<8x2xi32>
// CHECK:         tpu.reduce max %{{.*}}, dims = [0] : vector<8x2xi32> -> vector<2xi32>
// CHECK:         tpu.reduce min %{{.*}}, dims = [0] : vector<8x2xi32> -> vector<2xi32>
// CHECK:         tpu.reduce add %{{.*}}, dims = [0] : vector<8x2xi32> -> vector<2xi32>
// CHECK-COUNT-2: tpu.reduce max
// CHECK-NOT:     tpu.reduce max
// CHECK:         tpu.transpose %{{.*}}, dims = [1, 0] : vector<3x2xf32> -> vector<2x3xf32>
// CHECK:         tpu.transpose %{{.*}}, dims = [1, 0] : vector<3x2xi32> -> vector<2x3xi32>
