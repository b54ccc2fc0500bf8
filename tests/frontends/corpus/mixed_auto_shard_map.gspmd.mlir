module @jit_mixed_auto_shard_map attributes {mhlo.num_partitions = 8 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<16x32xf32> {mhlo.sharding = "{devices=[8,1]<=[8]}"}, %arg1: tensor<32x32xf32> {mhlo.sharding = "{replicated}"}) -> (tensor<32xf32> {jax.result_info = "result", mhlo.sharding = "{replicated}"}) {
    %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<16x32xf32>, tensor<32x32xf32>) -> tensor<16x32xf32>
    %1 = stablehlo.tanh %0 : tensor<16x32xf32>
    %2 = stablehlo.custom_call @Sharding(%1) {backend_config = "", mhlo.sharding = "{devices=[8,1]<=[8]}"} : (tensor<16x32xf32>) -> tensor<16x32xf32>
    %3 = stablehlo.custom_call @SPMDFullToShardShape(%2) {backend_config = "", mhlo.sharding = "{manual}"} : (tensor<16x32xf32>) -> tensor<2x32xf32>
    %4 = call @shmap_body(%3) : (tensor<2x32xf32>) -> tensor<2x32xf32>
    %5 = stablehlo.custom_call @Sharding(%4) {backend_config = "", mhlo.sharding = "{manual}"} : (tensor<2x32xf32>) -> tensor<2x32xf32>
    %6 = stablehlo.custom_call @SPMDShardToFullShape(%5) {backend_config = "", mhlo.sharding = "{devices=[8,1]<=[8]}"} : (tensor<2x32xf32>) -> tensor<16x32xf32>
    %7 = stablehlo.multiply %6, %6 : tensor<16x32xf32>
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %8 = stablehlo.reduce(%7 init: %cst) applies stablehlo.add across dimensions = [0] : (tensor<16x32xf32>, tensor<f32>) -> tensor<32xf32>
    return %8 : tensor<32xf32>
  }
  func.func private @shmap_body(%arg0: tensor<2x32xf32>) -> (tensor<2x32xf32> {jax.result_info = "[('x',), None]"}) {
    %0 = "stablehlo.collective_permute"(%arg0) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, source_target_pairs = dense<[[0, 1], [1, 2], [2, 3], [3, 4], [4, 5], [5, 6], [6, 7], [7, 0]]> : tensor<8x2xi64>}> : (tensor<2x32xf32>) -> tensor<2x32xf32>
    %c = stablehlo.constant dense<1> : tensor<ui32>
    %c_0 = stablehlo.constant dense<8> : tensor<ui32>
    %1 = stablehlo.partition_id : tensor<ui32>
    %2 = stablehlo.divide %1, %c : tensor<ui32>
    %3 = stablehlo.remainder %2, %c_0 : tensor<ui32>
    %4 = stablehlo.convert %3 : (tensor<ui32>) -> tensor<i32>
    %5 = stablehlo.convert %4 : (tensor<i32>) -> tensor<f32>
    %6 = stablehlo.broadcast_in_dim %5, dims = [] : (tensor<f32>) -> tensor<2x32xf32>
    %7 = stablehlo.multiply %0, %6 : tensor<2x32xf32>
    %8 = stablehlo.add %arg0, %7 : tensor<2x32xf32>
    return %8 : tensor<2x32xf32>
  }
}
