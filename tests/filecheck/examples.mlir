// Every example of the shared contract (copied into examples/) parses, verifies and
// round-trips: custom -> custom and custom -> generic -> custom print identically, and
// its generic form is valid MLIR where mlir-opt-19 is installed (examples-mlir.mlir).

// RUN: shardc-opt %S/../../examples/collectives.mlir > %t.custom
// RUN: shardc-opt %t.custom > %t.again
// RUN: diff %t.custom %t.again
// RUN: shardc-opt %S/../../examples/collectives.mlir --print-op-generic | shardc-opt > %t.generic
// RUN: diff %t.custom %t.generic
// RUN: filecheck %s --check-prefix=COLL --input-file=%t.custom

// RUN: shardc-opt %S/../../examples/dp_grads.mlir > %t.custom
// RUN: shardc-opt %t.custom > %t.again
// RUN: diff %t.custom %t.again
// RUN: shardc-opt %S/../../examples/dp_grads.mlir --print-op-generic | shardc-opt > %t.generic
// RUN: diff %t.custom %t.generic
// RUN: filecheck %s --check-prefix=DP --input-file=%t.custom

// RUN: shardc-opt %S/../../examples/megatron_mlp.mlir > %t.custom
// RUN: shardc-opt %t.custom > %t.again
// RUN: diff %t.custom %t.again
// RUN: shardc-opt %S/../../examples/megatron_mlp.mlir --print-op-generic | shardc-opt > %t.generic
// RUN: diff %t.custom %t.generic
// RUN: filecheck %s --check-prefix=MLP --input-file=%t.custom

// COLL: spmd.mesh @ring = <["x"=4]>
// COLL: collective.permute_start %a on @ring["x"], shift = 1 : tensor<2x8xf32> -> !collective.future<tensor<2x8xf32>>
// DP: spmd.mesh @dp = <["data"=8]>
// DP: attributes {spmd.partitioned} {
// DP: %ar0 = collective.all_reduce add %dw0 on @dp["data"] : tensor<256x256xf32>
// MLP: spmd.mesh @mesh = <["data"=2, "model"=4]>
// MLP: %b1: tensor<128xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"model"}]>}
// MLP: %y = hlo.dot %a, %w2, contracting_dims = [1] x [0] : (tensor<16x128xf32>, tensor<128x32xf32>) -> tensor<16x32xf32>
