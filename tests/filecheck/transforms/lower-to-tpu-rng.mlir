// RUN: shardc-opt %s -p 'lower-to-tpu' --split-input-file --verify-diagnostics | filecheck %s
// RUN: shardc-opt %s -p 'lower-to-tpu' --split-input-file --verify-diagnostics | shardc-opt - --split-input-file --verify-diagnostics > /dev/null

// hlo.rng_bit_generator (lowering/random.py): a tiled loop writing the bits, then one
// block writing the next state. The state's 64-bit words are split into 32-bit halves
// (`vector.extract` of the loaded state, broadcast to the block), the counters come from
// positions (`tpu.iota`), a 64-bit counter add carries by an unsigned compare, and the
// cipher is 32-bit vector ops: Threefry's rotations are shli / shrui / ori (its key
// schedule on one-element vectors: the scalar core's work). A 32-bit
// Threefry output's pairs along its (even) split dimension share a counter: the cipher
// runs on a block of half the rows, and the two words are interleaved through a VMEM
// scratch of signless words, a `tpu.transpose` and a view of the result block (its bits
// as i32: no conversion).

spmd.mesh @m = <["x"=1]>
func.func @threefry(%s: tensor<2xui64>) -> (tensor<2xui64>, tensor<8x256xui32>) attributes {spmd.per_device_io} {
  %ns, %b = hlo.rng_bit_generator %s, algorithm = THREE_FRY : (tensor<2xui64>) -> (tensor<2xui64>, tensor<8x256xui32>)
  func.return %ns, %b : tensor<2xui64>, tensor<8x256xui32>
}

// CHECK-LABEL: func.func @threefry(
// CHECK:         %[[ST:.*]] = tpu.load %{{.*}} : memref<2xui64, #tpu.memory_space<vmem>>, vector<2xui64>
// CHECK-NEXT:    %[[S64:.*]] = arith.bitcast %[[ST]] : vector<2xui64> to vector<2xi64>
// CHECK:         %[[HI:.*]] = arith.shrui %[[S64]], %{{.*}} : vector<2xi64>
// CHECK-NEXT:    %[[LO32:.*]] = tpu.convert %[[S64]] : vector<2xi64> -> vector<2xi32>
// CHECK-NEXT:    %[[HI32:.*]] = tpu.convert %[[HI]] : vector<2xi64> -> vector<2xi32>
// CHECK-NEXT:    %[[K0:.*]] = vector.extract %[[LO32]][0] : i32 from vector<2xi32>
// CHECK-NEXT:    %{{.*}} = vector.broadcast %[[K0]] : i32 to vector<4x256xi32>
// CHECK:         tpu.iota dim = 0 : vector<4x256xi32>
// CHECK:         tpu.iota dim = 1 : vector<4x256xi32>
// CHECK:         %{{.*}} = tpu.cmp ult, %{{.*}}, %{{.*}} : vector<4x256xi32>
// CHECK:         arith.constant 466688986 : i32
// CHECK-NEXT:    vector.broadcast %{{.*}} : i32 to vector<1xi32>
// CHECK-NEXT:    arith.xori %{{.*}}, %{{.*}} : vector<1xi32>
// CHECK:         arith.constant 13 : i32
// CHECK:         arith.shli
// CHECK:         arith.constant 19 : i32
// CHECK:         arith.shrui
// CHECK-NEXT:    arith.ori
// CHECK-NEXT:    arith.xori
// CHECK-NOT:     arith.mului_extended
// CHECK:         %[[S0:.*]] = tpu.memref_slice %[[TMP:.*]][%{{.*}}, %{{.*}}, %{{.*}}] : memref<2x4x256xi32, #tpu.memory_space<vmem>> -> memref<1x4x256xi32, #tpu.memory_space<vmem>>
// CHECK-NEXT:    %[[W0:.*]] = tpu.memref_reshape %[[S0]] : memref<1x4x256xi32, #tpu.memory_space<vmem>> -> memref<4x256xi32, #tpu.memory_space<vmem>>
// CHECK-NEXT:    tpu.store %{{.*}}, %[[W0]]
// CHECK-NEXT:    tpu.memref_slice %[[TMP]][%c1, %{{.*}}, %{{.*}}]
// CHECK:         %[[BOTH:.*]] = tpu.load %[[TMP]]
// CHECK-NEXT:    %[[T:.*]] = tpu.transpose %[[BOTH]], dims = [1, 0, 2] : vector<2x4x256xi32> -> vector<4x2x256xi32>
// CHECK-NEXT:    %[[B:.*]] = tpu.memref_bitcast %{{.*}} : memref<8x256xui32, #tpu.memory_space<vmem>> -> memref<8x256xi32, #tpu.memory_space<vmem>>
// CHECK-NEXT:    %[[V:.*]] = tpu.memref_reshape %[[B]] : memref<8x256xi32, #tpu.memory_space<vmem>> -> memref<4x2x256xi32, #tpu.memory_space<vmem>>
// CHECK-NEXT:    tpu.store %[[T]], %[[V]]
// The next state: the counter advances by the 4 * 256 counters used.
// CHECK:         %{{.*}} = tpu.load %{{.*}} : memref<2xui64, #tpu.memory_space<vmem>>, vector<2xui64>
// CHECK:         arith.constant 1024 : i64
// CHECK:         %[[NEW:.*]] = arith.addi %{{.*}} : vector<2xi64>
// CHECK-NEXT:    %[[OUT:.*]] = arith.bitcast %[[NEW]] : vector<2xi64> to vector<2xui64>
// CHECK-NEXT:    tpu.store %[[OUT]], %{{.*}} : memref<2xui64, #tpu.memory_space<vmem>>, vector<2xui64>

// -----

// Philox with a state of 3: the 128-bit counter add carries through four words, the
// rounds multiply with arith.mului_extended (both halves), a 64-bit output joins two
// words (zero-extended low, shifted high): two per counter along the last dimension,
// interleaved as above; the next state carries the low counter word's overflow into the
// high one.

spmd.mesh @m = <["x"=1]>
func.func @philox(%s: tensor<3xui64>) -> (tensor<3xui64>, tensor<8x128xui64>) attributes {spmd.per_device_io} {
  %ns, %b = hlo.rng_bit_generator %s, algorithm = PHILOX : (tensor<3xui64>) -> (tensor<3xui64>, tensor<8x128xui64>)
  func.return %ns, %b : tensor<3xui64>, tensor<8x128xui64>
}

// CHECK-LABEL: func.func @philox(
// CHECK:         tpu.load %{{.*}} : memref<3xui64, #tpu.memory_space<vmem>>, vector<3xui64>
// CHECK-COUNT-3: tpu.cmp ult
// CHECK:         arith.constant -766435501 : i32
// CHECK:         %{{.*}}, %{{.*}} = arith.mului_extended %{{.*}}, %{{.*}} : vector<8x64xi32>
// CHECK:         arith.constant -845247145 : i32
// CHECK:         %{{.*}}, %{{.*}} = arith.mului_extended %{{.*}}, %{{.*}} : vector<8x64xi32>
// CHECK:         %[[LO:.*]] = tpu.convert %{{.*}} : vector<8x64xi32> -> vector<8x64xi64>
// CHECK:         arith.andi %[[LO]], %{{.*}} : vector<8x64xi64>
// CHECK:         %[[HI:.*]] = tpu.convert %{{.*}} : vector<8x64xi32> -> vector<8x64xi64>
// CHECK:         arith.shli %[[HI]], %{{.*}} : vector<8x64xi64>
// CHECK:         arith.ori
// CHECK:         tpu.transpose %{{.*}}, dims = [1, 2, 0] : vector<2x8x64xi64> -> vector<8x64x2xi64>
// CHECK-NEXT:    tpu.memref_bitcast %{{.*}} : memref<8x128xui64, #tpu.memory_space<vmem>> -> memref<8x128xi64, #tpu.memory_space<vmem>>
// CHECK-NEXT:    tpu.memref_reshape %{{.*}} : memref<8x128xi64, #tpu.memory_space<vmem>> -> memref<8x64x2xi64, #tpu.memory_space<vmem>>
// CHECK:         tpu.load %{{.*}} : memref<3xui64, #tpu.memory_space<vmem>>, vector<3xui64>
// CHECK:         arith.constant 512 : i64
// CHECK:         %[[SUM:.*]] = arith.addi %{{.*}} : vector<3xi64>
// CHECK-NEXT:    %{{.*}} = tpu.cmp ult, %[[SUM]], %{{.*}} : vector<3xi64>
// CHECK:         vector.extract %{{.*}}[1] : i64 from vector<3xi64>
// CHECK:         arith.bitcast %{{.*}} : vector<3xi64> to vector<3xui64>

// -----

// No even dimension (3x5): a Threefry pair straddles the rows, so every element runs its
// own counter's cipher and keeps word `i % 2` along the split dimension (a select).

spmd.mesh @m = <["x"=1]>
func.func @odd(%s: tensor<2xui64>) -> (tensor<2xui64>, tensor<3x5xui32>) attributes {spmd.per_device_io} {
  %ns, %b = hlo.rng_bit_generator %s, algorithm = THREE_FRY : (tensor<2xui64>) -> (tensor<2xui64>, tensor<3x5xui32>)
  func.return %ns, %b : tensor<2xui64>, tensor<3x5xui32>
}

// CHECK-LABEL: func.func @odd(
// CHECK:         %[[COL:.*]] = tpu.iota dim = 1 : vector<3x5xi32>
// CHECK:         arith.shrui %[[COL]], %{{.*}} : vector<3x5xi32>
// CHECK:         %[[WORD:.*]] = arith.andi %[[COL]], %{{.*}} : vector<3x5xi32>
// CHECK-NOT:     tpu.transpose
// CHECK:         tpu.cmp eq, %[[WORD]], %{{.*}} : vector<3x5xi32>
// CHECK-NEXT:    %[[PICK:.*]] = tpu.select
// CHECK-NEXT:    tpu.convert %[[PICK]] : vector<3x5xi32> -> vector<3x5xui32>
// CHECK:         arith.constant 9 : i64
