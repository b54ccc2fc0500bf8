// REQUIRES: mlir-opt-19
// The generic form of every shared example is valid MLIR, and MLIR's output reads back.

// RUN: shardc-opt %S/../../examples/collectives.mlir --print-op-generic | mlir-opt-19 --allow-unregistered-dialect | shardc-opt | filecheck %s --check-prefix=COLL
// RUN: shardc-opt %S/../../examples/dp_grads.mlir --print-op-generic | mlir-opt-19 --allow-unregistered-dialect | shardc-opt | filecheck %s --check-prefix=DP
// RUN: shardc-opt %S/../../examples/megatron_mlp.mlir --print-op-generic | mlir-opt-19 --allow-unregistered-dialect | shardc-opt | filecheck %s --check-prefix=MLP

// COLL: collective.permute_start %{{.*}} on @ring["x"], shift = 1 : tensor<2x8xf32> -> !collective.future<tensor<2x8xf32>>
// DP: attributes {spmd.partitioned}
// MLP: hlo.dot %{{.*}}, %{{.*}}, contracting_dims = [1] x [0] : (tensor<16x128xf32>, tensor<128x32xf32>) -> tensor<16x32xf32>
