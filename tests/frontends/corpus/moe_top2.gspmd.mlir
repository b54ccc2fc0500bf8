module @jit_moe_top2 attributes {mhlo.num_partitions = 8 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<32x16xf32> {mhlo.sharding = "{devices=[8,1]<=[8]}"}, %arg1: tensor<16x8xf32> {mhlo.sharding = "{replicated}"}, %arg2: tensor<8x16x16xf32> {mhlo.sharding = "{devices=[8,1,1]<=[8]}"}) -> (tensor<32x16xf32> {jax.result_info = "result", mhlo.sharding = "{devices=[8,1]<=[8]}"}) {
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
    %14 = stablehlo.custom_call @Sharding(%arg0) {backend_config = "", mhlo.sharding = "{devices=[8,1]<=[8]}"} : (tensor<32x16xf32>) -> tensor<32x16xf32>
    %15 = stablehlo.custom_call @SPMDFullToShardShape(%14) {backend_config = "", mhlo.sharding = "{manual}"} : (tensor<32x16xf32>) -> tensor<4x16xf32>
    %16 = stablehlo.custom_call @Sharding(%13) {backend_config = "", mhlo.sharding = "{devices=[8,1]<=[8]}"} : (tensor<32x8xf32>) -> tensor<32x8xf32>
    %17 = stablehlo.custom_call @SPMDFullToShardShape(%16) {backend_config = "", mhlo.sharding = "{manual}"} : (tensor<32x8xf32>) -> tensor<4x8xf32>
    %18 = stablehlo.custom_call @Sharding(%arg2) {backend_config = "", mhlo.sharding = "{devices=[8,1,1]<=[8]}"} : (tensor<8x16x16xf32>) -> tensor<8x16x16xf32>
    %19 = stablehlo.custom_call @SPMDFullToShardShape(%18) {backend_config = "", mhlo.sharding = "{manual}"} : (tensor<8x16x16xf32>) -> tensor<1x16x16xf32>
    %20 = call @shmap_body(%15, %17, %19) : (tensor<4x16xf32>, tensor<4x8xf32>, tensor<1x16x16xf32>) -> tensor<4x16xf32>
    %21 = stablehlo.custom_call @Sharding(%20) {backend_config = "", mhlo.sharding = "{manual}"} : (tensor<4x16xf32>) -> tensor<4x16xf32>
    %22 = stablehlo.custom_call @SPMDShardToFullShape(%21) {backend_config = "", mhlo.sharding = "{devices=[8,1]<=[8]}"} : (tensor<4x16xf32>) -> tensor<32x16xf32>
    return %22 : tensor<32x16xf32>
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
  func.func private @shmap_body(%arg0: tensor<4x16xf32>, %arg1: tensor<4x8xf32>, %arg2: tensor<1x16x16xf32>) -> (tensor<4x16xf32> {jax.result_info = "[('x',), None]"}) {
    %0 = stablehlo.dot_general %arg1, %arg0, batching_dims = [0] x [0], contracting_dims = [] x [], precision = [DEFAULT, DEFAULT] : (tensor<4x8xf32>, tensor<4x16xf32>) -> tensor<4x8x16xf32>
    %1 = stablehlo.transpose %0, dims = [1, 0, 2] : (tensor<4x8x16xf32>) -> tensor<8x4x16xf32>
    %2 = "stablehlo.all_to_all"(%1) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, concat_dimension = 1 : i64, replica_groups = dense<[[0, 1, 2, 3, 4, 5, 6, 7]]> : tensor<1x8xi64>, split_count = 8 : i64, split_dimension = 0 : i64}> : (tensor<8x4x16xf32>) -> tensor<1x32x16xf32>
    %3 = stablehlo.dot_general %2, %arg2, batching_dims = [0] x [0], contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<1x32x16xf32>, tensor<1x16x16xf32>) -> tensor<1x32x16xf32>
    %4 = "stablehlo.all_to_all"(%3) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, concat_dimension = 0 : i64, replica_groups = dense<[[0, 1, 2, 3, 4, 5, 6, 7]]> : tensor<1x8xi64>, split_count = 8 : i64, split_dimension = 1 : i64}> : (tensor<1x32x16xf32>) -> tensor<8x4x16xf32>
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %5 = stablehlo.reduce(%4 init: %cst) applies stablehlo.add across dimensions = [0] : (tensor<8x4x16xf32>, tensor<f32>) -> tensor<4x16xf32>
    return %5 : tensor<4x16xf32>
  }
}
