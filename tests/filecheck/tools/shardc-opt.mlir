// The driver on good input: a file, stdin (`-`, or no file at all), `-o`, a pipeline.

// RUN: shardc-opt %s | filecheck %s
// RUN: shardc-opt - < %s | filecheck %s
// RUN: shardc-opt < %s | filecheck %s
// RUN: rm -f %t.out && shardc-opt %s -o %t.out > %t.stdout && filecheck %s --input-file=%t.out
// RUN: filecheck %s --check-prefix=EMPTY --input-file=%t.stdout --allow-empty
// RUN: shardc-opt %s -p canonicalize,cse | filecheck %s --check-prefix=CANON
// RUN: shardc-opt %s -p canonicalize -o %t.out && filecheck %s --check-prefix=CANON --input-file=%t.out

spmd.mesh @mesh = <["data"=2, "model"=4]>

func.func @main(%x: tensor<16x32xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"data"}, {}]>}) -> tensor<32x16xf32> {
  %t = hlo.transpose %x, dims = [1, 0] : (tensor<16x32xf32>) -> tensor<32x16xf32>
  %u = hlo.transpose %t, dims = [1, 0] : (tensor<32x16xf32>) -> tensor<16x32xf32>
  %v = hlo.transpose %u, dims = [1, 0] : (tensor<16x32xf32>) -> tensor<32x16xf32>
  func.return %v : tensor<32x16xf32>
}

// CHECK:      builtin.module {
// CHECK-NEXT:   spmd.mesh @mesh = <["data"=2, "model"=4]>
// CHECK-NEXT:   func.func @main(%x: tensor<16x32xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"data"}, {}]>}) -> tensor<32x16xf32> {
// CHECK-NEXT:     %t = hlo.transpose %x, dims = [1, 0] : (tensor<16x32xf32>) -> tensor<32x16xf32>
// CHECK-NEXT:     %u = hlo.transpose %t, dims = [1, 0] : (tensor<32x16xf32>) -> tensor<16x32xf32>
// CHECK-NEXT:     %v = hlo.transpose %u, dims = [1, 0] : (tensor<16x32xf32>) -> tensor<32x16xf32>
// CHECK-NEXT:     func.return %v : tensor<32x16xf32>
// CHECK-NEXT:   }
// CHECK-NEXT: }

// With -o, nothing goes to stdout.
// EMPTY-NOT: {{.}}

// CANON:      func.func @main(
// CANON-NEXT:   %v = hlo.transpose %x, dims = [1, 0] : (tensor<16x32xf32>) -> tensor<32x16xf32>
// CANON-NEXT:   func.return %v : tensor<32x16xf32>
