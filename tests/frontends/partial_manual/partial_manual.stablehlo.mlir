module @jit_program attributes {mhlo.num_partitions = 8 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["x"=2, "y"=4]> {stablehlo.mesh = {axes = [{name = "x", size = 2 : i64}, {name = "y", size = 4 : i64}]}}
  func.func public @main(%arg0: tensor<8x6xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}, %arg1: tensor<6x6xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {}]>}, %arg2: tensor<6x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"y"}]>}) -> (tensor<8x8xf32> {jax.result_info = "result"}) {
    %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<8x6xf32>, tensor<6x6xf32>) -> tensor<8x6xf32>
    %1 = stablehlo.tanh %0 : tensor<8x6xf32>
    %2 = sdy.manual_computation(%1, %arg2) in_shardings=[<@mesh, [{"x", ?}, {?}]>, <@mesh, [{?}, {?}]>] out_shardings=[<@mesh, [{"x", ?}, {?}]>] manual_axes={"x"} (%arg3: tensor<4x6xf32>, %arg4: tensor<6x8xf32>) {
      %7 = stablehlo.dot_general %arg3, %arg4, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<4x6xf32>, tensor<6x8xf32>) -> tensor<4x8xf32>
      %8 = sdy.sharding_constraint %7 <@mesh, [{?}, {?}]> : tensor<4x8xf32>
      %9 = stablehlo.tanh %8 : tensor<4x8xf32>
      %10 = sdy.sharding_constraint %9 <@mesh, [{?}, {?}]> : tensor<4x8xf32>
      %11 = sdy.sharding_constraint %10 <@mesh, [{}, {"y"}]> : tensor<4x8xf32>
      %cst_0 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
      %12 = stablehlo.reduce(%11 init: %cst_0) applies stablehlo.add across dimensions = [0] : (tensor<4x8xf32>, tensor<f32>) -> tensor<8xf32>
      %13 = sdy.sharding_constraint %12 <@mesh, [{?}]> : tensor<8xf32>
      %14 = stablehlo.broadcast_in_dim %13, dims = [1] : (tensor<8xf32>) -> tensor<1x8xf32>
      %15 = sdy.sharding_constraint %14 <@mesh, [{?}, {?}]> : tensor<1x8xf32>
      %16 = "stablehlo.all_reduce"(%15) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<[[0, 4], [1, 5], [2, 6], [3, 7]]> : tensor<4x2xi64>, use_global_device_ids}> ({
      ^bb0(%arg5: tensor<f32>, %arg6: tensor<f32>):
        %21 = stablehlo.add %arg5, %arg6 : tensor<f32>
        %22 = sdy.sharding_constraint %21 <@mesh, []> : tensor<f32>
        stablehlo.return %22 : tensor<f32>
      }) : (tensor<1x8xf32>) -> tensor<1x8xf32>
      %17 = stablehlo.broadcast_in_dim %16, dims = [0, 1] : (tensor<1x8xf32>) -> tensor<4x8xf32>
      %18 = sdy.sharding_constraint %17 <@mesh, [{?}, {?}]> : tensor<4x8xf32>
      %19 = stablehlo.multiply %11, %18 : tensor<4x8xf32>
      %20 = sdy.sharding_constraint %19 <@mesh, [{?}, {?}]> : tensor<4x8xf32>
      sdy.return %20 : tensor<4x8xf32>
    } : (tensor<8x6xf32>, tensor<6x8xf32>) -> tensor<8x8xf32>
    %cst = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %3 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<8x8xf32>
    %4 = stablehlo.add %2, %3 : tensor<8x8xf32>
    %5 = stablehlo.transpose %4, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %6 = stablehlo.dot_general %5, %2, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
    return %6 : tensor<8x8xf32>
  }
}
