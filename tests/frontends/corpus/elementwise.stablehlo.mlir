module @jit_elementwise attributes {mhlo.num_partitions = 8 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["data"=2, "model"=4]> {stablehlo.mesh = {axes = [{name = "data", size = 2 : i64}, {name = "model", size = 4 : i64}]}}
  func.func public @main(%arg0: tensor<16x32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"data"}, {"model"}]>}, %arg1: tensor<16x32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"data"}, {"model"}]>}) -> (tensor<16x32xf32> {jax.result_info = "result", sdy.sharding = #sdy.sharding<@mesh, [{"data"}, {"model"}]>}) {
    %0 = stablehlo.tanh %arg0 : tensor<16x32xf32>
    %1 = stablehlo.multiply %0, %arg1 : tensor<16x32xf32>
    %2 = stablehlo.abs %arg0 : tensor<16x32xf32>
    %3 = stablehlo.negate %2 : tensor<16x32xf32>
    %4 = stablehlo.exponential %3 : tensor<16x32xf32>
    %5 = stablehlo.add %1, %4 : tensor<16x32xf32>
    %6 = chlo.square %arg1 : tensor<16x32xf32> -> tensor<16x32xf32>
    %7 = stablehlo.multiply %arg1, %arg1 : tensor<16x32xf32>
    %cst = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %8 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<16x32xf32>
    %9 = stablehlo.add %8, %7 : tensor<16x32xf32>
    %10 = stablehlo.divide %6, %9 : tensor<16x32xf32>
    %11 = stablehlo.subtract %5, %10 : tensor<16x32xf32>
    %cst_0 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %12 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<16x32xf32>
    %13 = stablehlo.compare GT, %arg0, %12, FLOAT : (tensor<16x32xf32>, tensor<16x32xf32>) -> tensor<16x32xi1>
    %cst_1 = stablehlo.constant dense<1.000000e-01> : tensor<f32>
    %14 = stablehlo.broadcast_in_dim %cst_1, dims = [] : (tensor<f32>) -> tensor<16x32xf32>
    %15 = stablehlo.multiply %14, %arg0 : tensor<16x32xf32>
    %16 = call @_where(%13, %arg0, %15) : (tensor<16x32xi1>, tensor<16x32xf32>, tensor<16x32xf32>) -> tensor<16x32xf32>
    %cst_2 = stablehlo.constant dense<5.000000e-01> : tensor<f32>
    %17 = stablehlo.broadcast_in_dim %cst_2, dims = [] : (tensor<f32>) -> tensor<16x32xf32>
    %18 = stablehlo.compare GT, %arg1, %17, FLOAT : (tensor<16x32xf32>, tensor<16x32xf32>) -> tensor<16x32xi1>
    %19 = stablehlo.convert %18 : (tensor<16x32xi1>) -> tensor<16x32xf32>
    %20 = stablehlo.add %16, %19 : tensor<16x32xf32>
    %21 = stablehlo.maximum %11, %20 : tensor<16x32xf32>
    %22 = stablehlo.abs %arg1 : tensor<16x32xf32>
    %cst_3 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %23 = stablehlo.broadcast_in_dim %cst_3, dims = [] : (tensor<f32>) -> tensor<16x32xf32>
    %24 = stablehlo.add %22, %23 : tensor<16x32xf32>
    %25 = stablehlo.sqrt %24 : tensor<16x32xf32>
    %26 = stablehlo.negate %arg0 : tensor<16x32xf32>
    %27 = stablehlo.exponential %26 : tensor<16x32xf32>
    %cst_4 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %28 = stablehlo.broadcast_in_dim %cst_4, dims = [] : (tensor<f32>) -> tensor<16x32xf32>
    %29 = stablehlo.add %28, %27 : tensor<16x32xf32>
    %cst_5 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %30 = stablehlo.broadcast_in_dim %cst_5, dims = [] : (tensor<f32>) -> tensor<16x32xf32>
    %31 = stablehlo.divide %30, %29 : tensor<16x32xf32>
    %32 = stablehlo.multiply %25, %31 : tensor<16x32xf32>
    %33 = stablehlo.add %21, %32 : tensor<16x32xf32>
    return %33 : tensor<16x32xf32>
  }
  func.func private @_where(%arg0: tensor<16x32xi1>, %arg1: tensor<16x32xf32>, %arg2: tensor<16x32xf32>) -> tensor<16x32xf32> {
    %0 = stablehlo.select %arg0, %arg1, %arg2 : tensor<16x32xi1>, tensor<16x32xf32>
    return %0 : tensor<16x32xf32>
  }
}
