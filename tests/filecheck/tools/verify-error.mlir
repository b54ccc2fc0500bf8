// A verifier failure: one diagnostic at the failing op (file:line:col, line, caret),
// exit status 1, nothing on stdout, no output file, no traceback.

// RUN: not shardc-opt %s 2>&1 | filecheck %s
// RUN: not shardc-opt %s 2>/dev/null | filecheck %s --check-prefix=EMPTY --allow-empty
// RUN: rm -f %t.out && not shardc-opt %s -o %t.out
// RUN: not test -e %t.out
// RUN: not shardc-opt %s -p canonicalize 2>&1 | filecheck %s

spmd.mesh @mesh = <["data"=2, "model"=4]>

func.func @f(%x: tensor<16x32xf32>) -> tensor<16x32xf32> {
  %0 = hlo.exp %x : tensor<16x32xf32>
  %1 = spmd.constraint %0 <@mesh, [{}, {"data", "model"}]> : tensor<16x32xf32>
  %2 = spmd.constraint %1 <@mesh, [{"model"}, {}]> : tensor<16x32xf32>
  %3 = hlo.reduce add %2, dims = [1] : (tensor<16x32xf32>) -> tensor<32xf32>
  %4 = hlo.broadcast %3, dims = [0] : (tensor<32xf32>) -> tensor<32x16xf32>
  %5 = hlo.transpose %4, dims = [1, 0] : (tensor<32x16xf32>) -> tensor<16x32xf32>
  func.return %5 : tensor<16x32xf32>
}

// CHECK-NOT: Traceback
// CHECK:      verify-error.mlir:16:3: error: 'hlo.reduce' op result must be tensor<16xf32>, got tensor<32xf32>
// CHECK-NEXT: {{^  }}%3 = hlo.reduce add %2, dims = [1] : (tensor<16x32xf32>) -> tensor<32xf32>{{$}}
// CHECK-NEXT: {{^  \^$}}
// CHECK-NOT: {{.}}

// EMPTY-NOT: {{.}}
