// RUN: shardc-opt %s -p lower-to-tpu --split-input-file | filecheck %s
// RUN: shardc-opt %s -p lower-to-tpu --split-input-file | shardc-opt - --split-input-file > /dev/null

// CHLO's special functions (lowering/special_functions.py): level T has no instruction
// for them, so each is f64 vector code over the ones it has, rounded once to the type.
// asin: sqrt((1 - x)(1 + x)), then atan2's code (lowering/atan2.py) sharing its splat 1.

func.func @asin(%x: tensor<8x128xf32>) -> tensor<8x128xf32> {
  %r = hlo.asin %x : tensor<8x128xf32>
  func.return %r : tensor<8x128xf32>
}

// CHECK-LABEL: func.func @asin(
// CHECK:         %[[X:.*]] = arith.extf %{{.*}} : vector<8x128xf32> to vector<8x128xf64>
// CHECK-NEXT:    %[[C1:.*]] = arith.constant 1.000000e+00 : f64
// CHECK-NEXT:    %[[ONE:.*]] = vector.broadcast %[[C1]] : f64 to vector<8x128xf64>
// CHECK-NEXT:    %[[A:.*]] = arith.subf %[[ONE]], %[[X]] : vector<8x128xf64>
// CHECK-NEXT:    %[[B:.*]] = arith.addf %[[ONE]], %[[X]] : vector<8x128xf64>
// CHECK-NEXT:    %[[AB:.*]] = arith.mulf %[[A]], %[[B]] : vector<8x128xf64>
// CHECK-NEXT:    %[[S:.*]] = math.sqrt %[[AB]] : vector<8x128xf64>
// CHECK-NEXT:    math.absf %[[X]] : vector<8x128xf64>
// CHECK-NEXT:    math.absf %[[S]] : vector<8x128xf64>
// CHECK-NOT:     arith.constant 1.000000e+00 : f64
// CHECK:         %[[R:.*]] = math.copysign %{{.*}}, %[[X]] : vector<8x128xf64>
// CHECK-NEXT:    arith.truncf %[[R]] : vector<8x128xf64> to vector<8x128xf32>

// -----

// erf_inv of bf16: Giles' polynomials, six Newton steps (each an erf, the log-erfc
// residual with Cody's erfc: two exps of exp(-x^2)'s exact parts), +-inf at +-1 or NaN
// outside, y's sign, one rounding to bf16.

func.func @erf_inv(%y: tensor<8x128xbf16>) -> tensor<8x128xbf16> {
  %r = hlo.erf_inv %y : tensor<8x128xbf16>
  func.return %r : tensor<8x128xbf16>
}

// CHECK-LABEL: func.func @erf_inv(
// CHECK:         %[[Y:.*]] = arith.extf %{{.*}} : vector<8x128xbf16> to vector<8x128xf64>
// CHECK:         math.log
// CHECK:         arith.constant 2.81022636e-08 : f64
// CHECK:         arith.constant -0.00020021425699999999 : f64
// CHECK-COUNT-6: math.erf
// CHECK-NOT:     math.erf
// CHECK:         arith.constant 0x7ff8000000000000 : f64
// CHECK:         %[[R:.*]] = math.copysign %{{.*}}, %[[Y]] : vector<8x128xf64>
// CHECK-NEXT:    arith.truncf %[[R]] : vector<8x128xf64> to vector<8x128xbf16>

// -----

// lgamma of f64 (no conversions): Lanczos' sum, |sin(pi x)| by cos or sin of the
// reduced argument for the reflection, the integers up to 2 by a trunc: +inf at the
// poles, 0 at 1 and 2.

func.func @lgamma(%x: tensor<8x128xf64>) -> tensor<8x128xf64> {
  %r = hlo.lgamma %x : tensor<8x128xf64>
  func.return %r : tensor<8x128xf64>
}

// CHECK-LABEL: func.func @lgamma(
// CHECK:         %[[X:.*]] = tpu.load
// CHECK-NOT:     arith.extf
// CHECK:         arith.constant 2.5066282746310002 : f64
// CHECK:         arith.constant 23531376880.410759 : f64
// CHECK:         arith.constant 6.0246800407767296 : f64
// CHECK:         math.cos
// CHECK:         math.sin
// CHECK:         arith.constant 1.1447298858494002 : f64
// CHECK:         %[[T:.*]] = math.trunc %[[X]] : vector<8x128xf64>
// CHECK-NEXT:    %[[INT:.*]] = tpu.cmp oeq, %[[X]], %[[T]] : vector<8x128xf64>
// CHECK-NEXT:    %[[LE2:.*]] = tpu.cmp ole, %[[X]], %{{.*}} : vector<8x128xf64>
// CHECK-NEXT:    %[[CASE:.*]] = arith.andi %[[INT]], %[[LE2]] : vector<8x128xi1>
// CHECK:         arith.constant 0x7ff0000000000000 : f64
// CHECK:         %[[POLE:.*]] = tpu.select
// CHECK-NEXT:    %[[R:.*]] = tpu.select %[[CASE]], %[[POLE]], %{{.*}}
// CHECK-NEXT:    tpu.store %[[R]]
