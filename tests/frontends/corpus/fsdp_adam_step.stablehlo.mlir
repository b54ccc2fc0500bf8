module @jit_fsdp_adam_step attributes {mhlo.num_partitions = 8 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["data"=2, "model"=4]> {stablehlo.mesh = {axes = [{name = "data", size = 2 : i64}, {name = "model", size = 4 : i64}]}}
  func.func public @main(%arg0: tensor<32x64xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"data", "model"}, {}]>}, %arg1: tensor<64x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"data", "model"}, {}]>}, %arg2: tensor<32x64xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"data", "model"}, {}]>}, %arg3: tensor<64x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"data", "model"}, {}]>}, %arg4: tensor<32x64xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"data", "model"}, {}]>}, %arg5: tensor<64x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"data", "model"}, {}]>}, %arg6: tensor<64x32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"data", "model"}, {}]>}, %arg7: tensor<64x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"data", "model"}, {}]>}) -> (tensor<f32> {jax.result_info = "result[0]", sdy.sharding = #sdy.sharding<@mesh, []>}, tensor<32x64xf32> {jax.result_info = "result[1]", sdy.sharding = #sdy.sharding<@mesh, [{"data", "model"}, {}]>}, tensor<64x16xf32> {jax.result_info = "result[2]", sdy.sharding = #sdy.sharding<@mesh, [{"data", "model"}, {}]>}, tensor<32x64xf32> {jax.result_info = "result[3]", sdy.sharding = #sdy.sharding<@mesh, [{"data", "model"}, {}]>}, tensor<64x16xf32> {jax.result_info = "result[4]", sdy.sharding = #sdy.sharding<@mesh, [{"data", "model"}, {}]>}, tensor<32x64xf32> {jax.result_info = "result[5]", sdy.sharding = #sdy.sharding<@mesh, [{"data", "model"}, {}]>}, tensor<64x16xf32> {jax.result_info = "result[6]", sdy.sharding = #sdy.sharding<@mesh, [{"data", "model"}, {}]>}) {
    %0 = stablehlo.dot_general %arg6, %arg0, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<64x32xf32>, tensor<32x64xf32>) -> tensor<64x64xf32>
    %1 = stablehlo.tanh %0 : tensor<64x64xf32>
    %cst = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %2 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<64x64xf32>
    %3 = stablehlo.subtract %2, %1 : tensor<64x64xf32>
    %4 = stablehlo.dot_general %1, %arg1, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<64x64xf32>, tensor<64x16xf32>) -> tensor<64x16xf32>
    %5 = stablehlo.subtract %4, %arg7 : tensor<64x16xf32>
    %6 = stablehlo.multiply %5, %5 : tensor<64x16xf32>
    %cst_0 = stablehlo.constant dense<2.000000e+00> : tensor<f32>
    %7 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<64x16xf32>
    %8 = stablehlo.multiply %7, %5 : tensor<64x16xf32>
    %cst_1 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %9 = stablehlo.reduce(%6 init: %cst_1) applies stablehlo.add across dimensions = [0, 1] : (tensor<64x16xf32>, tensor<f32>) -> tensor<f32>
    %cst_2 = stablehlo.constant dense<1.024000e+03> : tensor<f32>
    %10 = stablehlo.divide %9, %cst_2 : tensor<f32>
    %cst_3 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %cst_4 = stablehlo.constant dense<1.024000e+03> : tensor<f32>
    %11 = stablehlo.divide %cst_3, %cst_4 : tensor<f32>
    %12 = stablehlo.broadcast_in_dim %11, dims = [] : (tensor<f32>) -> tensor<64x16xf32>
    %13 = stablehlo.multiply %12, %8 : tensor<64x16xf32>
    %14 = stablehlo.dot_general %13, %1, contracting_dims = [0] x [0], precision = [DEFAULT, DEFAULT] : (tensor<64x16xf32>, tensor<64x64xf32>) -> tensor<16x64xf32>
    %15 = stablehlo.transpose %14, dims = [1, 0] : (tensor<16x64xf32>) -> tensor<64x16xf32>
    %16 = stablehlo.dot_general %13, %arg1, contracting_dims = [1] x [1], precision = [DEFAULT, DEFAULT] : (tensor<64x16xf32>, tensor<64x16xf32>) -> tensor<64x64xf32>
    %17 = stablehlo.multiply %16, %3 : tensor<64x64xf32>
    %18 = stablehlo.multiply %17, %1 : tensor<64x64xf32>
    %19 = stablehlo.add %17, %18 : tensor<64x64xf32>
    %20 = stablehlo.dot_general %19, %arg6, contracting_dims = [0] x [0], precision = [DEFAULT, DEFAULT] : (tensor<64x64xf32>, tensor<64x32xf32>) -> tensor<64x32xf32>
    %21 = stablehlo.transpose %20, dims = [1, 0] : (tensor<64x32xf32>) -> tensor<32x64xf32>
    %cst_5 = stablehlo.constant dense<0.899999976> : tensor<f32>
    %22 = stablehlo.broadcast_in_dim %cst_5, dims = [] : (tensor<f32>) -> tensor<32x64xf32>
    %23 = stablehlo.multiply %22, %arg2 : tensor<32x64xf32>
    %cst_6 = stablehlo.constant dense<1.000000e-01> : tensor<f32>
    %24 = stablehlo.broadcast_in_dim %cst_6, dims = [] : (tensor<f32>) -> tensor<32x64xf32>
    %25 = stablehlo.multiply %24, %21 : tensor<32x64xf32>
    %26 = stablehlo.add %23, %25 : tensor<32x64xf32>
    %27 = stablehlo.abs %arg4 : tensor<32x64xf32>
    %cst_7 = stablehlo.constant dense<9.990000e-01> : tensor<f32>
    %28 = stablehlo.broadcast_in_dim %cst_7, dims = [] : (tensor<f32>) -> tensor<32x64xf32>
    %29 = stablehlo.multiply %28, %27 : tensor<32x64xf32>
    %cst_8 = stablehlo.constant dense<1.000000e-03> : tensor<f32>
    %30 = stablehlo.broadcast_in_dim %cst_8, dims = [] : (tensor<f32>) -> tensor<32x64xf32>
    %31 = stablehlo.multiply %30, %21 : tensor<32x64xf32>
    %32 = stablehlo.multiply %31, %21 : tensor<32x64xf32>
    %33 = stablehlo.add %29, %32 : tensor<32x64xf32>
    %cst_9 = stablehlo.constant dense<1.000000e-03> : tensor<f32>
    %34 = stablehlo.broadcast_in_dim %cst_9, dims = [] : (tensor<f32>) -> tensor<32x64xf32>
    %35 = stablehlo.multiply %34, %26 : tensor<32x64xf32>
    %36 = stablehlo.sqrt %33 : tensor<32x64xf32>
    %cst_10 = stablehlo.constant dense<9.99999993E-9> : tensor<f32>
    %37 = stablehlo.broadcast_in_dim %cst_10, dims = [] : (tensor<f32>) -> tensor<32x64xf32>
    %38 = stablehlo.add %36, %37 : tensor<32x64xf32>
    %39 = stablehlo.divide %35, %38 : tensor<32x64xf32>
    %40 = stablehlo.subtract %arg0, %39 : tensor<32x64xf32>
    %cst_11 = stablehlo.constant dense<0.899999976> : tensor<f32>
    %41 = stablehlo.broadcast_in_dim %cst_11, dims = [] : (tensor<f32>) -> tensor<64x16xf32>
    %42 = stablehlo.multiply %41, %arg3 : tensor<64x16xf32>
    %cst_12 = stablehlo.constant dense<1.000000e-01> : tensor<f32>
    %43 = stablehlo.broadcast_in_dim %cst_12, dims = [] : (tensor<f32>) -> tensor<64x16xf32>
    %44 = stablehlo.multiply %43, %15 : tensor<64x16xf32>
    %45 = stablehlo.add %42, %44 : tensor<64x16xf32>
    %46 = stablehlo.abs %arg5 : tensor<64x16xf32>
    %cst_13 = stablehlo.constant dense<9.990000e-01> : tensor<f32>
    %47 = stablehlo.broadcast_in_dim %cst_13, dims = [] : (tensor<f32>) -> tensor<64x16xf32>
    %48 = stablehlo.multiply %47, %46 : tensor<64x16xf32>
    %cst_14 = stablehlo.constant dense<1.000000e-03> : tensor<f32>
    %49 = stablehlo.broadcast_in_dim %cst_14, dims = [] : (tensor<f32>) -> tensor<64x16xf32>
    %50 = stablehlo.multiply %49, %15 : tensor<64x16xf32>
    %51 = stablehlo.multiply %50, %15 : tensor<64x16xf32>
    %52 = stablehlo.add %48, %51 : tensor<64x16xf32>
    %cst_15 = stablehlo.constant dense<1.000000e-03> : tensor<f32>
    %53 = stablehlo.broadcast_in_dim %cst_15, dims = [] : (tensor<f32>) -> tensor<64x16xf32>
    %54 = stablehlo.multiply %53, %45 : tensor<64x16xf32>
    %55 = stablehlo.sqrt %52 : tensor<64x16xf32>
    %cst_16 = stablehlo.constant dense<9.99999993E-9> : tensor<f32>
    %56 = stablehlo.broadcast_in_dim %cst_16, dims = [] : (tensor<f32>) -> tensor<64x16xf32>
    %57 = stablehlo.add %55, %56 : tensor<64x16xf32>
    %58 = stablehlo.divide %54, %57 : tensor<64x16xf32>
    %59 = stablehlo.subtract %arg1, %58 : tensor<64x16xf32>
    return %10, %40, %59, %26, %45, %33, %52 : tensor<f32>, tensor<32x64xf32>, tensor<64x16xf32>, tensor<32x64xf32>, tensor<64x16xf32>, tensor<32x64xf32>, tensor<64x16xf32>
  }
}
