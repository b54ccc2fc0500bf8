// Source positions live in Operation.location (issue 12): every parsed op gets the
// file:line:col it was written at, printed once by --print-debuginfo; an op a pass
// creates gets the location of the op it came from, not its function's; explicit
// locations (JAX's, for instance) are kept as written.

// RUN: shardc-opt %s --print-debuginfo | filecheck %s
// RUN: shardc-opt %s -p async-split --print-debuginfo | filecheck %s --check-prefix=SPLIT
// RUN: shardc-opt %s --print-debuginfo | shardc-opt --print-debuginfo | filecheck %s --check-prefix=ROUND

spmd.mesh @ring = <["x"=4]>

func.func @main(%a: tensor<2x8xf32>) -> tensor<2x8xf32> attributes {spmd.partitioned} {
  %sum = collective.all_reduce add %a on @ring["x"] : tensor<2x8xf32>
  %t = hlo.transpose %sum, dims = [0, 1] : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %e = hlo.exp %t : tensor<2x8xf32> loc("jit(f)/exp"("model.py":12:3))
  func.return %e : tensor<2x8xf32>
}

// CHECK:      spmd.mesh @ring = <["x"=4]> loc("{{.*}}debuginfo.mlir":10:1)
// CHECK:      collective.all_reduce add %a on @ring["x"] : tensor<2x8xf32> loc("{{.*}}debuginfo.mlir":13:3)
// CHECK-NEXT: hlo.transpose %sum, dims = [0, 1] : (tensor<2x8xf32>) -> tensor<2x8xf32> loc("{{.*}}debuginfo.mlir":14:3){{$}}
// CHECK-NEXT: hlo.exp %t : tensor<2x8xf32> loc("jit(f)/exp"("model.py":12:3)){{$}}
// CHECK-NEXT: func.return %e : tensor<2x8xf32> loc("{{.*}}debuginfo.mlir":16:3)
// CHECK-NEXT: } loc("{{.*}}debuginfo.mlir":12:1)

// SPLIT:      %{{.*}} = collective.all_reduce_start add %a on @ring["x"] {{.*}} loc("{{.*}}debuginfo.mlir":13:3)
// SPLIT-NEXT: %sum = collective.done %{{.*}} loc("{{.*}}debuginfo.mlir":13:3)

// The positions of the first print are kept when it is read back (explicit locations win).
// ROUND:      collective.all_reduce add %a on @ring["x"] : tensor<2x8xf32> loc("{{.*}}debuginfo.mlir":13:3)
// ROUND:      hlo.exp %t : tensor<2x8xf32> loc("jit(f)/exp"("model.py":12:3)){{$}}
