module @jit_shard_map_psum attributes {mhlo.num_partitions = 8 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<16x4xf32> {mhlo.sharding = "{devices=[8,1]<=[8]}"}) -> (tensor<2x4xf32> {jax.result_info = "result", mhlo.sharding = "{replicated}"}) {
    %0 = stablehlo.tanh %arg0 : tensor<16x4xf32>
    %1 = stablehlo.custom_call @Sharding(%0) {backend_config = "", mhlo.sharding = "{devices=[8,1]<=[8]}"} : (tensor<16x4xf32>) -> tensor<16x4xf32>
    %2 = stablehlo.custom_call @SPMDFullToShardShape(%1) {backend_config = "", mhlo.sharding = "{manual}"} : (tensor<16x4xf32>) -> tensor<2x4xf32>
    %3 = call @shmap_body(%2) : (tensor<2x4xf32>) -> tensor<2x4xf32>
    %4 = stablehlo.custom_call @Sharding(%3) {backend_config = "", mhlo.sharding = "{manual}"} : (tensor<2x4xf32>) -> tensor<2x4xf32>
    %5 = stablehlo.custom_call @SPMDShardToFullShape(%4) {backend_config = "", mhlo.sharding = "{replicated}"} : (tensor<2x4xf32>) -> tensor<2x4xf32>
    %cst = stablehlo.constant dense<3.000000e+00> : tensor<f32>
    %6 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<2x4xf32>
    %7 = stablehlo.multiply %6, %5 : tensor<2x4xf32>
    return %7 : tensor<2x4xf32>
  }
  func.func private @shmap_body(%arg0: tensor<2x4xf32>) -> (tensor<2x4xf32> {jax.result_info = "[None, None]"}) {
    %cst = stablehlo.constant dense<2.000000e+00> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<2x4xf32>
    %1 = stablehlo.multiply %arg0, %0 : tensor<2x4xf32>
    %2 = "stablehlo.all_reduce"(%1) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<[[0, 1, 2, 3, 4, 5, 6, 7]]> : tensor<1x8xi64>, use_global_device_ids}> ({
    ^bb0(%arg1: tensor<f32>, %arg2: tensor<f32>):
      %3 = stablehlo.add %arg1, %arg2 : tensor<f32>
      stablehlo.return %3 : tensor<f32>
    }) : (tensor<2x4xf32>) -> tensor<2x4xf32>
    return %2 : tensor<2x4xf32>
  }
}
