// RUN: shardc-opt %s -p lower-to-tpu --split-input-file --verify-diagnostics | filecheck %s
// RUN: not shardc-opt %s -p lower-to-tpu --split-input-file 2>&1 | filecheck %s --check-prefix=EXIT

// A level-G program (global shapes with shardings) is not lowered as if it were one
// device's: lower-to-tpu takes level S (partition first, or use tpu-pipeline).

spmd.mesh @mesh = <["x"=2]>
func.func @main(%a: tensor<8x128xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"x"}, {}]>}) -> tensor<8x128xf32> {
  %r = hlo.exp %a : tensor<8x128xf32>
  func.return %r : tensor<8x128xf32>
}

// CHECK: lower-to-tpu-invalid.mlir:[[# @LINE - 5]]:1: error: 'func.func' op lower-to-tpu: @main is a level-G program (global shapes with shardings): partition it first (spmd-pipeline), or use tpu-pipeline
// EXIT: lower-to-tpu-invalid.mlir:[[# @LINE - 6]]:1: error: 'func.func' op lower-to-tpu: @main is a level-G program
// EXIT-NOT: Traceback
