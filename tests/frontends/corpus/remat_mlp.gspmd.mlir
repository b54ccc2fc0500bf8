module @jit_remat_mlp attributes {mhlo.num_partitions = 8 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<16x32xf32> {mhlo.sharding = "{devices=[2,1,4]<=[8] last_tile_dim_replicate}"}, %arg1: tensor<32x64xf32> {mhlo.sharding = "{devices=[1,4,2]<=[2,4]T(1,0) last_tile_dim_replicate}"}, %arg2: tensor<64x32xf32> {mhlo.sharding = "{devices=[4,1,2]<=[2,4]T(1,0) last_tile_dim_replicate}"}) -> (tensor<16x32xf32> {jax.result_info = "result", mhlo.sharding = "{devices=[2,1,4]<=[8] last_tile_dim_replicate}"}) {
    %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<16x32xf32>, tensor<32x64xf32>) -> tensor<16x64xf32>
    %1 = stablehlo.tanh %0 : tensor<16x64xf32>
    %2 = stablehlo.dot_general %1, %arg2, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<16x64xf32>, tensor<64x32xf32>) -> tensor<16x32xf32>
    %cst = stablehlo.constant dense<2.000000e+00> : tensor<f32>
    %3 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<16x32xf32>
    %4 = stablehlo.multiply %3, %2 : tensor<16x32xf32>
    %cst_0 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %5 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<16x32xf32>
    %6 = stablehlo.multiply %5, %4 : tensor<16x32xf32>
    %7:4 = stablehlo.optimization_barrier %arg1, %arg2, %arg0, %6 : tensor<32x64xf32>, tensor<64x32xf32>, tensor<16x32xf32>, tensor<16x32xf32>
    %8 = stablehlo.dot_general %7#2, %7#0, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<16x32xf32>, tensor<32x64xf32>) -> tensor<16x64xf32>
    %9 = stablehlo.tanh %8 : tensor<16x64xf32>
    %cst_1 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %10 = stablehlo.broadcast_in_dim %cst_1, dims = [] : (tensor<f32>) -> tensor<16x64xf32>
    %11 = stablehlo.subtract %10, %9 : tensor<16x64xf32>
    %12 = stablehlo.dot_general %7#3, %7#1, contracting_dims = [1] x [1], precision = [DEFAULT, DEFAULT] : (tensor<16x32xf32>, tensor<64x32xf32>) -> tensor<16x64xf32>
    %13 = stablehlo.multiply %12, %11 : tensor<16x64xf32>
    %14 = stablehlo.multiply %13, %9 : tensor<16x64xf32>
    %15 = stablehlo.add %13, %14 : tensor<16x64xf32>
    %16 = stablehlo.dot_general %15, %7#0, contracting_dims = [1] x [1], precision = [DEFAULT, DEFAULT] : (tensor<16x64xf32>, tensor<32x64xf32>) -> tensor<16x32xf32>
    return %16 : tensor<16x32xf32>
  }
}
