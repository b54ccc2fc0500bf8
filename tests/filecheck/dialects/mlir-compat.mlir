// REQUIRES: mlir-opt-19

// The generic form we print is valid MLIR: real MLIR parses every ops.mlir module
// (unregistered dialects allowed), and what it prints back is read by shardc-opt again.

// RUN: shardc-opt %S/hlo/ops.mlir --print-op-generic --split-input-file | mlir-opt-19 --allow-unregistered-dialect --split-input-file | shardc-opt --split-input-file | filecheck %s --check-prefix=HLO
// RUN: shardc-opt %S/spmd/ops.mlir --print-op-generic --split-input-file | mlir-opt-19 --allow-unregistered-dialect --split-input-file | shardc-opt --split-input-file | filecheck %s --check-prefix=SPMD
// RUN: shardc-opt %S/collective/ops.mlir --print-op-generic --split-input-file | mlir-opt-19 --allow-unregistered-dialect --split-input-file | shardc-opt --split-input-file | filecheck %s --check-prefix=COLL

// HLO: func.func @binary(
// HLO: hlo.or %{{.*}}, %{{.*}} : tensor<4xi1>
// HLO: func.func @compare_select_convert(
// HLO: hlo.compare GT, %{{.*}}, %{{.*}} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
// HLO: hlo.select %{{.*}}, %{{.*}}, %{{.*}} : tensor<i1>, tensor<2x2xi32>
// HLO: func.func @constants(
// HLO: hlo.constant dense<[1.500000e+00, -2.000000e+00]> : tensor<2xbf16>
// HLO: hlo.constant dense<[true, false]> : tensor<2xi1>
// HLO: func.func @shapes(
// HLO: hlo.iota dim = 0 : tensor<8x4xi32>
// HLO: hlo.broadcast %{{.*}}, dims = [1] : (tensor<128xf32>) -> tensor<16x128xf32>
// HLO: hlo.slice %{{.*}} [0:8, 0:128:2] : (tensor<16x128xf32>) -> tensor<8x64xf32>
// HLO: hlo.dynamic_slice %{{.*}} [%{{.*}}, %{{.*}}] sizes = [2, 128]
// HLO: hlo.concatenate %{{.*}}, %{{.*}}, %{{.*}}, dim = 0 : (tensor<8x4xf32>, tensor<2x4xf32>, tensor<8x4xf32>) -> tensor<18x4xf32>
// HLO: func.func @dot_reduce(
// HLO: hlo.dot %{{.*}}, %{{.*}}, batching_dims = [0] x [0], contracting_dims = [2] x [1] : (tensor<4x16x32xf32>, tensor<4x32x8xf32>) -> tensor<4x16x8xf32>
// HLO: hlo.reduce max %{{.*}}, dims = [0, 2] : (tensor<2x3x4xi32>) -> tensor<3xi32>
// HLO: spmd.mesh @mesh = <["data"=2, "model"=4]>
// HLO: func.func @main(

// SPMD: spmd.mesh @ring = <["x"=8]>
// SPMD: spmd.axis_index @ring["x"] : tensor<i32>
// SPMD: spmd.mesh @mesh = <["data"=2, "model"=4]>
// SPMD: {spmd.sharding = #spmd.sharding<@mesh, [{"model", "data"}, {}]>}
// SPMD: unreduced={"model", "data"}
// SPMD: spmd.mesh @cube = <["a"=2, "b"=2, "c"=3]>
// SPMD: attributes {spmd.partitioned}
// SPMD: attributes {spmd.per_device_io}

// COLL: collective.all_reduce add %{{.*}}, %{{.*}} on @mesh["data"] : tensor<8x32xf32>, tensor<32xf32>
// COLL: collective.all_reduce add %{{.*}} on groups {{\[\[}}0, 1], [2, 3], [4, 5], [6, 7]] : tensor<8x32xf32>
// COLL: collective.permute %{{.*}} on @mesh["model"], shift = -1 : tensor<8x32xf32>
// COLL: collective.permute %{{.*}} on @mesh["model"], pairs = {{\[\[}}0, 1], [1, 0]] : tensor<8x32xf32>
// COLL: collective.all_gather_start %{{.*}}, %{{.*}} on @mesh["model"], dim = 0 : (tensor<2x8xf32>, tensor<2xf32>) -> !collective.future<tensor<8x8xf32>, tensor<8xf32>>
// COLL: collective.done %{{.*}} : !collective.future<tensor<8x8xf32>, tensor<8xf32>> -> tensor<8x8xf32>, tensor<8xf32>
// COLL: collective.permute %{{.*}} on @ring["x"], pairs = [] : tensor<8x16xf32>
