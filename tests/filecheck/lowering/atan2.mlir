// RUN: shardc-opt %s -p lower-to-tpu --split-input-file | filecheck %s
// RUN: shardc-opt %s -p lower-to-tpu --split-input-file | shardc-opt - --split-input-file > /dev/null

// hlo.atan2 (lowering/atan2.py): no arctangent instruction, so f32 is widened to f64,
// reduced to t = min / max in [0, 1] (0 / 0 and inf / inf as selects), t > 0.66 reduced
// again, Cephes' P(z) / Q(z) by Horner, the quadrant n pi/4 +- atan(r) by selects on
// |y| > |x| and x's sign bit, y's sign, and one rounding back to f32.

func.func @atan2(%y: tensor<8x128xf32>, %x: tensor<8x128xf32>) -> tensor<8x128xf32> {
  %r = hlo.atan2 %y, %x : tensor<8x128xf32>
  func.return %r : tensor<8x128xf32>
}

// CHECK-LABEL: func.func @atan2(
// CHECK:         %[[Y:.*]] = arith.extf %{{.*}} : vector<8x128xf32> to vector<8x128xf64>
// CHECK-NEXT:    %[[X:.*]] = arith.extf %{{.*}} : vector<8x128xf32> to vector<8x128xf64>
// CHECK-NEXT:    %[[AY:.*]] = math.absf %[[Y]] : vector<8x128xf64>
// CHECK-NEXT:    %[[AX:.*]] = math.absf %[[X]] : vector<8x128xf64>
// CHECK-NEXT:    %[[HI:.*]] = arith.maximumf %[[AY]], %[[AX]]
// CHECK-NEXT:    %[[LO:.*]] = arith.minimumf %[[AY]], %[[AX]]
// CHECK-NEXT:    %{{.*}} = arith.divf %[[LO]], %[[HI]]
// CHECK:         tpu.cmp oeq, %[[HI]]
// CHECK:         arith.constant 0x7ff0000000000000 : f64
// CHECK:         tpu.cmp oeq, %[[LO]]
// CHECK:         arith.constant 6.600000e-01 : f64
// CHECK:         arith.constant -0.87506086000319039 : f64
// CHECK:         arith.constant 194.55065714826139 : f64
// CHECK:         tpu.cmp ogt, %[[AY]], %[[AX]]
// CHECK:         math.copysign %{{.*}}, %[[X]]
// CHECK:         arith.constant 3.061616997868383e-17 : f64
// CHECK:         arith.constant 0.78539816339744828 : f64
// CHECK:         %[[A:.*]] = math.copysign %{{.*}}, %[[Y]] : vector<8x128xf64>
// CHECK-NEXT:    arith.truncf %[[A]] : vector<8x128xf64> to vector<8x128xf32>

// -----

// f64: no conversions around the same code.

func.func @atan2_f64(%y: tensor<8x128xf64>, %x: tensor<8x128xf64>) -> tensor<8x128xf64> {
  %r = hlo.atan2 %y, %x : tensor<8x128xf64>
  func.return %r : tensor<8x128xf64>
}

// CHECK-LABEL: func.func @atan2_f64(
// CHECK-NOT:     arith.extf
// CHECK:         math.absf %{{.*}} : vector<8x128xf64>
// CHECK:         math.copysign
// CHECK:         %[[A:.*]] = math.copysign %{{.*}} : vector<8x128xf64>
// CHECK-NEXT:    tpu.store %[[A]]

// -----

// hlo.atan: atan2(x, 1), the 1 a splat in the operand's type.

func.func @atan(%x: tensor<8x128xf32>) -> tensor<8x128xf32> {
  %r = hlo.atan %x : tensor<8x128xf32>
  func.return %r : tensor<8x128xf32>
}

// CHECK-LABEL: func.func @atan(
// CHECK:         %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT:    %[[ONES:.*]] = vector.broadcast %[[ONE]] : f32 to vector<8x128xf32>
// CHECK-NEXT:    arith.extf %{{.*}} : vector<8x128xf32> to vector<8x128xf64>
// CHECK-NEXT:    arith.extf %[[ONES]] : vector<8x128xf32> to vector<8x128xf64>
// CHECK:         arith.truncf %{{.*}} : vector<8x128xf64> to vector<8x128xf32>
