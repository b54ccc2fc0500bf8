module @jit_moe_top2 attributes {mhlo.num_partitions = 8 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["x"=8]> {stablehlo.mesh = {axes = [{name = "x", size = 8 : i64}]}}
  func.func public @main(%arg0: tensor<32x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}, %arg1: tensor<16x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {}]>}, %arg2: tensor<8x16x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}, {}]>}) -> (tensor<32x16xf32> {jax.result_info = "result", sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}) {
    %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<32x16xf32>, tensor<16x8xf32>) -> tensor<32x8xf32>
    %values, %indices = chlo.top_k(%0, k = 2) : tensor<32x8xf32> -> (tensor<32x2xf32>, tensor<32x2xi32>)
    %cst = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %1 = stablehlo.reduce(%values init: %cst) applies stablehlo.maximum across dimensions = [1] : (tensor<32x2xf32>, tensor<f32>) -> tensor<32xf32>
    %cst_0 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %2 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<32xf32>
    %3 = stablehlo.maximum %2, %1 : tensor<32xf32>
    %4 = stablehlo.broadcast_in_dim %3, dims = [0] : (tensor<32xf32>) -> tensor<32x1xf32>
    %5 = stablehlo.broadcast_in_dim %4, dims = [0, 1] : (tensor<32x1xf32>) -> tensor<32x2xf32>
    %6 = stablehlo.subtract %values, %5 : tensor<32x2xf32>
    %7 = stablehlo.exponential %6 : tensor<32x2xf32>
    %cst_1 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %8 = stablehlo.reduce(%7 init: %cst_1) applies stablehlo.add across dimensions = [1] : (tensor<32x2xf32>, tensor<f32>) -> tensor<32xf32>
    %9 = stablehlo.broadcast_in_dim %8, dims = [0] : (tensor<32xf32>) -> tensor<32x1xf32>
    %10 = stablehlo.broadcast_in_dim %9, dims = [0, 1] : (tensor<32x1xf32>) -> tensor<32x2xf32>
    %11 = stablehlo.divide %7, %10 : tensor<32x2xf32>
    %12 = call @_one_hot(%indices) : (tensor<32x2xi32>) -> tensor<32x2x8xf32>
    %13 = stablehlo.dot_general %12, %11, batching_dims = [0] x [0], contracting_dims = [1] x [1], precision = [DEFAULT, DEFAULT] : (tensor<32x2x8xf32>, tensor<32x2xf32>) -> tensor<32x8xf32>
    %14 = sdy.manual_computation(%arg0, %13, %arg2) in_shardings=[<@mesh, [{"x"}, {}]>, <@mesh, [{"x"}, {}]>, <@mesh, [{"x"}, {}, {}]>] out_shardings=[<@mesh, [{"x"}, {}]>] manual_axes={"x"} (%arg3: tensor<4x16xf32>, %arg4: tensor<4x8xf32>, %arg5: tensor<1x16x16xf32>) {
      %15 = stablehlo.dot_general %arg4, %arg3, batching_dims = [0] x [0], contracting_dims = [] x [], precision = [DEFAULT, DEFAULT] : (tensor<4x8xf32>, tensor<4x16xf32>) -> tensor<4x8x16xf32>
      %16 = stablehlo.transpose %15, dims = [1, 0, 2] : (tensor<4x8x16xf32>) -> tensor<8x4x16xf32>
      %17 = "stablehlo.all_to_all"(%16) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, concat_dimension = 1 : i64, replica_groups = dense<[[0, 1, 2, 3, 4, 5, 6, 7]]> : tensor<1x8xi64>, split_count = 8 : i64, split_dimension = 0 : i64}> : (tensor<8x4x16xf32>) -> tensor<1x32x16xf32>
      %18 = stablehlo.dot_general %17, %arg5, batching_dims = [0] x [0], contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<1x32x16xf32>, tensor<1x16x16xf32>) -> tensor<1x32x16xf32>
      %19 = "stablehlo.all_to_all"(%18) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, concat_dimension = 0 : i64, replica_groups = dense<[[0, 1, 2, 3, 4, 5, 6, 7]]> : tensor<1x8xi64>, split_count = 8 : i64, split_dimension = 1 : i64}> : (tensor<1x32x16xf32>) -> tensor<8x4x16xf32>
      %cst_2 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
      %20 = stablehlo.reduce(%19 init: %cst_2) applies stablehlo.add across dimensions = [0] : (tensor<8x4x16xf32>, tensor<f32>) -> tensor<4x16xf32>
      sdy.return %20 : tensor<4x16xf32>
    } : (tensor<32x16xf32>, tensor<32x8xf32>, tensor<8x16x16xf32>) -> tensor<32x16xf32>
    return %14 : tensor<32x16xf32>
  }
  func.func private @_one_hot(%arg0: tensor<32x2xi32>) -> tensor<32x2x8xf32> {
    %0 = stablehlo.broadcast_in_dim %arg0, dims = [0, 1] : (tensor<32x2xi32>) -> tensor<32x2x1xi32>
    %1 = stablehlo.iota dim = 2 : tensor<1x1x8xi32>
    %2 = stablehlo.broadcast_in_dim %0, dims = [0, 1, 2] : (tensor<32x2x1xi32>) -> tensor<32x2x8xi32>
    %3 = stablehlo.broadcast_in_dim %1, dims = [0, 1, 2] : (tensor<1x1x8xi32>) -> tensor<32x2x8xi32>
    %4 = stablehlo.compare EQ, %2, %3, SIGNED : (tensor<32x2x8xi32>, tensor<32x2x8xi32>) -> tensor<32x2x8xi1>
    %5 = stablehlo.convert %4 : (tensor<32x2x8xi1>) -> tensor<32x2x8xf32>
    return %5 : tensor<32x2x8xf32>
  }
}
