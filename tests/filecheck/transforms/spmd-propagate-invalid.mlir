// RUN: shardc-opt %s -p spmd-pipeline --split-input-file --verify-diagnostics | filecheck %s
// RUN: not shardc-opt %s -p spmd-pipeline --split-input-file 2>&1 | filecheck %s --check-prefix=EXIT

// An op with no sharding rule is an error at that op, never a silently wrong program.
spmd.mesh @mesh = <["x"=2]>
func.func @norule(%a: tensor<8xf32>) -> tensor<8xf32> {
  %r = collective.all_reduce add %a on @mesh["x"] : tensor<8xf32>
  func.return %r : tensor<8xf32>
}
// CHECK: spmd-propagate-invalid.mlir:7:3: error: 'collective.all_reduce' op spmd-propagate has no sharding rule for collective.all_reduce
// CHECK-NEXT: %r = collective.all_reduce add %a on @mesh["x"] : tensor<8xf32>
// CHECK-NEXT: ^
// EXIT: spmd-propagate-invalid.mlir:7:3: error:
// EXIT-NOT: Traceback

// -----

// An annotation naming an unknown axis is a verifier error at the function.
spmd.mesh @mesh = <["x"=2]>
func.func @badaxis(%a: tensor<8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"y"}]>}) -> tensor<8xf32> {
  func.return %a : tensor<8xf32>
}
// CHECK: spmd-propagate-invalid.mlir:20:1: error: 'func.func' op argument 0 of @badaxis: sharding names axis "y", which mesh @mesh does not have (its axes: x)
