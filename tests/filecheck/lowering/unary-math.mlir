// RUN: shardc-opt %s -p lower-to-tpu --split-input-file | filecheck %s
// RUN: shardc-opt %s -p lower-to-tpu --split-input-file | shardc-opt - --split-input-file > /dev/null

// hlo.expm1 (lowering/unary_math.py): no instruction, so bf16 is widened to f64, u =
// exp(x), Kahan's (u - 1) * (x / log(u)) with the overflow (u = inf) and -1 cases as
// selects, Taylor's x + x (x P(x)) by Horner (1/17! first) where |x| < 0.5, u == 1 keeping
// x itself, and one rounding back to bf16.

func.func @expm1(%x: tensor<8x128xbf16>) -> tensor<8x128xbf16> {
  %r = hlo.expm1 %x : tensor<8x128xbf16>
  func.return %r : tensor<8x128xbf16>
}

// CHECK-LABEL: func.func @expm1(
// CHECK:         %[[X:.*]] = arith.extf %{{.*}} : vector<8x128xbf16> to vector<8x128xf64>
// CHECK-NEXT:    %[[U:.*]] = math.exp %[[X]] : vector<8x128xf64>
// CHECK:         %[[ONE:.*]] = vector.broadcast %{{.*}} : f64 to vector<8x128xf64>
// CHECK-NEXT:    %[[UM:.*]] = arith.subf %[[U]], %[[ONE]] : vector<8x128xf64>
// CHECK-NEXT:    %[[L:.*]] = math.log %[[U]] : vector<8x128xf64>
// CHECK-NEXT:    %[[Q:.*]] = arith.divf %[[X]], %[[L]] : vector<8x128xf64>
// CHECK-NEXT:    %[[R:.*]] = arith.mulf %[[UM]], %[[Q]] : vector<8x128xf64>
// CHECK:         arith.constant 0x7ff0000000000000 : f64
// CHECK:         tpu.cmp oeq, %[[U]], %{{.*}} : vector<8x128xf64>
// CHECK:         arith.constant -1.000000e+00 : f64
// CHECK:         %[[K:.*]] = tpu.cmp oeq, %[[UM]], %{{.*}} : vector<8x128xf64>
// CHECK-NEXT:    %[[KAHAN:.*]] = tpu.select %[[K]], %[[UM]], %{{.*}}
// CHECK-NEXT:    arith.constant 2.8114572543455206e-15 : f64
// CHECK:         arith.constant 5.000000e-01 : f64
// CHECK-NEXT:    %[[HALF:.*]] = vector.broadcast %{{.*}} : f64 to vector<8x128xf64>
// CHECK-NEXT:    %[[P:.*]] = arith.addf %{{.*}}, %[[HALF]] : vector<8x128xf64>
// CHECK-NEXT:    %[[XP:.*]] = arith.mulf %[[X]], %[[P]] : vector<8x128xf64>
// CHECK-NEXT:    %[[XXP:.*]] = arith.mulf %[[X]], %[[XP]] : vector<8x128xf64>
// CHECK-NEXT:    %[[T:.*]] = arith.addf %[[X]], %[[XXP]] : vector<8x128xf64>
// CHECK-NEXT:    %[[AX:.*]] = math.absf %[[X]] : vector<8x128xf64>
// CHECK-NEXT:    %[[NEAR:.*]] = tpu.cmp olt, %[[AX]], %[[HALF]] : vector<8x128xf64>
// CHECK-NEXT:    %[[S:.*]] = tpu.select %[[NEAR]], %[[T]], %[[KAHAN]]
// CHECK-NEXT:    %[[EQ:.*]] = tpu.cmp oeq, %[[U]], %[[ONE]] : vector<8x128xf64>
// CHECK-NEXT:    %[[E:.*]] = tpu.select %[[EQ]], %[[X]], %[[S]] : vector<8x128xi1>, vector<8x128xf64>
// CHECK-NEXT:    arith.truncf %[[E]] : vector<8x128xf64> to vector<8x128xbf16>

// -----

// hlo.floor of f16: the VPU's rounding instruction in f32, exact both ways.

func.func @floor(%x: tensor<8x128xf16>) -> tensor<8x128xf16> {
  %r = hlo.floor %x : tensor<8x128xf16>
  func.return %r : tensor<8x128xf16>
}

// CHECK-LABEL: func.func @floor(
// CHECK:         %[[W:.*]] = arith.extf %{{.*}} : vector<8x128xf16> to vector<8x128xf32>
// CHECK-NEXT:    %[[F:.*]] = math.floor %[[W]] : vector<8x128xf32>
// CHECK-NEXT:    arith.truncf %[[F]] : vector<8x128xf32> to vector<8x128xf16>

// -----

// hlo.sign of i4: unpacked to i32 lanes (lowering/narrow_ints.py), min(max(x, -1), 1)
// there, packed back.

func.func @sign(%x: tensor<8x128xi4>) -> tensor<8x128xi4> {
  %r = hlo.sign %x : tensor<8x128xi4>
  func.return %r : tensor<8x128xi4>
}

// CHECK-LABEL: func.func @sign(
// CHECK:         %[[W:.*]] = tpu.convert %{{.*}} : vector<8x128xi4> -> vector<8x128xi32>
// CHECK:         %[[MIN:.*]] = arith.minsi %[[W]], %{{.*}} : vector<8x128xi32>
// CHECK:         %[[S:.*]] = arith.maxsi %[[MIN]], %{{.*}} : vector<8x128xi32>
// CHECK-NEXT:    tpu.convert %[[S]] : vector<8x128xi32> -> vector<8x128xi4>
