module @jit_embed_xent_step attributes {mhlo.num_partitions = 8 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<64x16xf32> {mhlo.sharding = "{devices=[4,1,2]<=[2,4]T(1,0) last_tile_dim_replicate}"}, %arg1: tensor<16x64xf32> {mhlo.sharding = "{devices=[1,4,2]<=[2,4]T(1,0) last_tile_dim_replicate}"}, %arg2: tensor<8x4xi32> {mhlo.sharding = "{devices=[2,1,4]<=[8] last_tile_dim_replicate}"}, %arg3: tensor<8x4xi32> {mhlo.sharding = "{devices=[2,1,4]<=[8] last_tile_dim_replicate}"}) -> (tensor<f32> {jax.result_info = "result[0]", mhlo.sharding = "{replicated}"}, tensor<64x16xf32> {jax.result_info = "result[1]", mhlo.sharding = "{devices=[4,1,2]<=[2,4]T(1,0) last_tile_dim_replicate}"}, tensor<16x64xf32> {jax.result_info = "result[2]", mhlo.sharding = "{devices=[1,4,2]<=[2,4]T(1,0) last_tile_dim_replicate}"}) {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %0 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<i32>) -> tensor<8x4xi32>
    %1 = stablehlo.compare LT, %arg2, %0, SIGNED : (tensor<8x4xi32>, tensor<8x4xi32>) -> tensor<8x4xi1>
    %c_0 = stablehlo.constant dense<64> : tensor<i32>
    %2 = stablehlo.broadcast_in_dim %c_0, dims = [] : (tensor<i32>) -> tensor<8x4xi32>
    %3 = stablehlo.add %arg2, %2 : tensor<8x4xi32>
    %4 = stablehlo.select %1, %3, %arg2 : tensor<8x4xi1>, tensor<8x4xi32>
    %5 = stablehlo.broadcast_in_dim %4, dims = [0, 1] : (tensor<8x4xi32>) -> tensor<8x4x1xi32>
    %6 = "stablehlo.gather"(%arg0, %5) <{dimension_numbers = #stablehlo.gather<offset_dims = [2], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 2>, indices_are_sorted = false, slice_sizes = array<i64: 1, 16>}> : (tensor<64x16xf32>, tensor<8x4x1xi32>) -> tensor<8x4x16xf32>
    %7 = stablehlo.dot_general %6, %arg1, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<8x4x16xf32>, tensor<16x64xf32>) -> tensor<8x4x64xf32>
    %8:3 = call @log_softmax(%7) : (tensor<8x4x64xf32>) -> (tensor<8x4x64xf32>, tensor<8x4x64xf32>, tensor<8x4x1xf32>)
    %9 = stablehlo.broadcast_in_dim %arg3, dims = [0, 1] : (tensor<8x4xi32>) -> tensor<8x4x1xi32>
    %10:2 = call @take_along_axis(%8#0, %9) : (tensor<8x4x64xf32>, tensor<8x4x1xi32>) -> (tensor<8x4x1xf32>, tensor<8x4x1x1xi32>)
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %11 = stablehlo.reduce(%10#0 init: %cst) applies stablehlo.add across dimensions = [0, 1, 2] : (tensor<8x4x1xf32>, tensor<f32>) -> tensor<f32>
    %cst_1 = stablehlo.constant dense<3.200000e+01> : tensor<f32>
    %12 = stablehlo.divide %11, %cst_1 : tensor<f32>
    %13 = stablehlo.negate %12 : tensor<f32>
    %cst_2 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %14 = stablehlo.negate %cst_2 : tensor<f32>
    %cst_3 = stablehlo.constant dense<3.200000e+01> : tensor<f32>
    %15 = stablehlo.divide %14, %cst_3 : tensor<f32>
    %16 = stablehlo.broadcast_in_dim %15, dims = [] : (tensor<f32>) -> tensor<8x4x1xf32>
    %17 = call @take_along_axis_0(%10#1, %16) : (tensor<8x4x1x1xi32>, tensor<8x4x1xf32>) -> tensor<8x4x64xf32>
    %18 = call @log_softmax_1(%8#1, %8#2, %17) : (tensor<8x4x64xf32>, tensor<8x4x1xf32>, tensor<8x4x64xf32>) -> tensor<8x4x64xf32>
    %19 = stablehlo.dot_general %18, %6, contracting_dims = [0, 1] x [0, 1], precision = [DEFAULT, DEFAULT] : (tensor<8x4x64xf32>, tensor<8x4x16xf32>) -> tensor<64x16xf32>
    %20 = stablehlo.transpose %19, dims = [1, 0] : (tensor<64x16xf32>) -> tensor<16x64xf32>
    %21 = stablehlo.dot_general %18, %arg1, contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<8x4x64xf32>, tensor<16x64xf32>) -> tensor<8x4x16xf32>
    %cst_4 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %22 = stablehlo.broadcast_in_dim %cst_4, dims = [] : (tensor<f32>) -> tensor<64x16xf32>
    %23 = "stablehlo.scatter"(%22, %5, %21) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [2], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 2>, unique_indices = false}> ({
    ^bb0(%arg4: tensor<f32>, %arg5: tensor<f32>):
      %30 = stablehlo.add %arg4, %arg5 : tensor<f32>
      stablehlo.return %30 : tensor<f32>
    }) : (tensor<64x16xf32>, tensor<8x4x1xi32>, tensor<8x4x16xf32>) -> tensor<64x16xf32>
    %cst_5 = stablehlo.constant dense<1.000000e-01> : tensor<f32>
    %24 = stablehlo.broadcast_in_dim %cst_5, dims = [] : (tensor<f32>) -> tensor<64x16xf32>
    %25 = stablehlo.multiply %24, %23 : tensor<64x16xf32>
    %26 = stablehlo.subtract %arg0, %25 : tensor<64x16xf32>
    %cst_6 = stablehlo.constant dense<1.000000e-01> : tensor<f32>
    %27 = stablehlo.broadcast_in_dim %cst_6, dims = [] : (tensor<f32>) -> tensor<16x64xf32>
    %28 = stablehlo.multiply %27, %20 : tensor<16x64xf32>
    %29 = stablehlo.subtract %arg1, %28 : tensor<16x64xf32>
    return %13, %26, %29 : tensor<f32>, tensor<64x16xf32>, tensor<16x64xf32>
  }
  func.func private @log_softmax(%arg0: tensor<8x4x64xf32>) -> (tensor<8x4x64xf32>, tensor<8x4x64xf32>, tensor<8x4x1xf32>) {
    %cst = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %0 = stablehlo.reduce(%arg0 init: %cst) applies stablehlo.maximum across dimensions = [2] : (tensor<8x4x64xf32>, tensor<f32>) -> tensor<8x4xf32>
    %cst_0 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %1 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<8x4xf32>
    %2 = stablehlo.maximum %1, %0 : tensor<8x4xf32>
    %3 = stablehlo.broadcast_in_dim %2, dims = [0, 1] : (tensor<8x4xf32>) -> tensor<8x4x1xf32>
    %4 = stablehlo.broadcast_in_dim %3, dims = [0, 1, 2] : (tensor<8x4x1xf32>) -> tensor<8x4x64xf32>
    %5 = stablehlo.subtract %arg0, %4 : tensor<8x4x64xf32>
    %6 = stablehlo.exponential %5 : tensor<8x4x64xf32>
    %cst_1 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %7 = stablehlo.reduce(%6 init: %cst_1) applies stablehlo.add across dimensions = [2] : (tensor<8x4x64xf32>, tensor<f32>) -> tensor<8x4xf32>
    %8 = stablehlo.broadcast_in_dim %7, dims = [0, 1] : (tensor<8x4xf32>) -> tensor<8x4x1xf32>
    %9 = stablehlo.log %8 : tensor<8x4x1xf32>
    %10 = stablehlo.broadcast_in_dim %9, dims = [0, 1, 2] : (tensor<8x4x1xf32>) -> tensor<8x4x64xf32>
    %11 = stablehlo.subtract %5, %10 : tensor<8x4x64xf32>
    return %11, %6, %8 : tensor<8x4x64xf32>, tensor<8x4x64xf32>, tensor<8x4x1xf32>
  }
  func.func private @take_along_axis(%arg0: tensor<8x4x64xf32>, %arg1: tensor<8x4x1xi32>) -> (tensor<8x4x1xf32>, tensor<8x4x1x1xi32>) {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %0 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<i32>) -> tensor<8x4x1xi32>
    %1 = stablehlo.compare LT, %arg1, %0, SIGNED : (tensor<8x4x1xi32>, tensor<8x4x1xi32>) -> tensor<8x4x1xi1>
    %c_0 = stablehlo.constant dense<64> : tensor<i32>
    %2 = stablehlo.broadcast_in_dim %c_0, dims = [] : (tensor<i32>) -> tensor<8x4x1xi32>
    %3 = stablehlo.add %arg1, %2 : tensor<8x4x1xi32>
    %4 = stablehlo.select %1, %3, %arg1 : tensor<8x4x1xi1>, tensor<8x4x1xi32>
    %5 = stablehlo.reshape %4 : (tensor<8x4x1xi32>) -> tensor<8x4x1x1xi32>
    %c_1 = stablehlo.constant dense<63> : tensor<1xi32>
    %c_2 = stablehlo.constant dense<0> : tensor<i32>
    %6 = stablehlo.broadcast_in_dim %c_2, dims = [] : (tensor<i32>) -> tensor<8x4x1x1xi32>
    %7 = stablehlo.compare GE, %5, %6, SIGNED : (tensor<8x4x1x1xi32>, tensor<8x4x1x1xi32>) -> tensor<8x4x1x1xi1>
    %8 = stablehlo.broadcast_in_dim %c_1, dims = [3] : (tensor<1xi32>) -> tensor<1x1x1x1xi32>
    %9 = stablehlo.broadcast_in_dim %8, dims = [0, 1, 2, 3] : (tensor<1x1x1x1xi32>) -> tensor<8x4x1x1xi32>
    %10 = stablehlo.compare LE, %5, %9, SIGNED : (tensor<8x4x1x1xi32>, tensor<8x4x1x1xi32>) -> tensor<8x4x1x1xi1>
    %11 = stablehlo.and %7, %10 : tensor<8x4x1x1xi1>
    %c_3 = stablehlo.constant dense<true> : tensor<i1>
    %12 = stablehlo.reduce(%11 init: %c_3) applies stablehlo.and across dimensions = [3] : (tensor<8x4x1x1xi1>, tensor<i1>) -> tensor<8x4x1xi1>
    %13 = "stablehlo.gather"(%arg0, %5) <{dimension_numbers = #stablehlo.gather<collapsed_slice_dims = [2], operand_batching_dims = [0, 1], start_indices_batching_dims = [0, 1], start_index_map = [2], index_vector_dim = 3>, indices_are_sorted = false, slice_sizes = array<i64: 1, 1, 1>}> : (tensor<8x4x64xf32>, tensor<8x4x1x1xi32>) -> tensor<8x4x1xf32>
    %cst = stablehlo.constant dense<0x7FC00000> : tensor<f32>
    %14 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<8x4x1xf32>
    %15 = stablehlo.select %12, %13, %14 : tensor<8x4x1xi1>, tensor<8x4x1xf32>
    return %15, %5 : tensor<8x4x1xf32>, tensor<8x4x1x1xi32>
  }
  func.func private @take_along_axis_0(%arg0: tensor<8x4x1x1xi32>, %arg1: tensor<8x4x1xf32>) -> tensor<8x4x64xf32> {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<8x4x64xf32>
    %1 = "stablehlo.scatter"(%0, %arg0, %arg1) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<inserted_window_dims = [2], input_batching_dims = [0, 1], scatter_indices_batching_dims = [0, 1], scatter_dims_to_operand_dims = [2], index_vector_dim = 3>, unique_indices = false}> ({
    ^bb0(%arg2: tensor<f32>, %arg3: tensor<f32>):
      %2 = stablehlo.add %arg2, %arg3 : tensor<f32>
      stablehlo.return %2 : tensor<f32>
    }) : (tensor<8x4x64xf32>, tensor<8x4x1x1xi32>, tensor<8x4x1xf32>) -> tensor<8x4x64xf32>
    return %1 : tensor<8x4x64xf32>
  }
  func.func private @log_softmax_1(%arg0: tensor<8x4x64xf32>, %arg1: tensor<8x4x1xf32>, %arg2: tensor<8x4x64xf32>) -> tensor<8x4x64xf32> {
    %0 = stablehlo.negate %arg2 : tensor<8x4x64xf32>
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %1 = stablehlo.reduce(%0 init: %cst) applies stablehlo.add across dimensions = [2] : (tensor<8x4x64xf32>, tensor<f32>) -> tensor<8x4xf32>
    %2 = stablehlo.reshape %1 : (tensor<8x4xf32>) -> tensor<8x4x1xf32>
    %3 = stablehlo.divide %2, %arg1 : tensor<8x4x1xf32>
    %cst_0 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %4 = stablehlo.reduce(%3 init: %cst_0) applies stablehlo.add across dimensions = [2] : (tensor<8x4x1xf32>, tensor<f32>) -> tensor<8x4xf32>
    %5 = stablehlo.broadcast_in_dim %4, dims = [0, 1] : (tensor<8x4xf32>) -> tensor<8x4x64xf32>
    %6 = stablehlo.multiply %5, %arg0 : tensor<8x4x64xf32>
    %7 = stablehlo.add %arg2, %6 : tensor<8x4x64xf32>
    return %7 : tensor<8x4x64xf32>
  }
}
