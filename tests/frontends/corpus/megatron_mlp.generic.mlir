"builtin.module"() <{sym_name = "jit_megatron_mlp"}> ({
  "sdy.mesh"() <{mesh = #sdy.mesh<["data"=2, "model"=4]>, sym_name = "mesh"}> {stablehlo.mesh = {axes = [{name = "data", size = 2 : i64}, {name = "model", size = 4 : i64}]}} : () -> ()
  "func.func"() <{arg_attrs = [{sdy.sharding = #sdy.sharding<@mesh, [{"data"}, {}]>}, {sdy.sharding = #sdy.sharding<@mesh, [{}, {"model"}]>}, {sdy.sharding = #sdy.sharding<@mesh, [{"model"}]>}, {sdy.sharding = #sdy.sharding<@mesh, [{"model"}, {}]>}], function_type = (tensor<8x16xf32>, tensor<16x64xf32>, tensor<64xf32>, tensor<64x16xf32>) -> tensor<8x16xf32>, res_attrs = [{jax.result_info = "result", sdy.sharding = #sdy.sharding<@mesh, [{"data"}, {}]>}], sym_name = "main", sym_visibility = "public"}> ({
  ^bb0(%arg0: tensor<8x16xf32>, %arg1: tensor<16x64xf32>, %arg2: tensor<64xf32>, %arg3: tensor<64x16xf32>):
    %0 = "stablehlo.dot_general"(%arg0, %arg1) <{dot_dimension_numbers = #stablehlo.dot<lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]>, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]}> : (tensor<8x16xf32>, tensor<16x64xf32>) -> tensor<8x64xf32>
    %1 = "stablehlo.broadcast_in_dim"(%arg2) <{broadcast_dimensions = array<i64: 1>}> : (tensor<64xf32>) -> tensor<1x64xf32>
    %2 = "stablehlo.broadcast_in_dim"(%1) <{broadcast_dimensions = array<i64: 0, 1>}> : (tensor<1x64xf32>) -> tensor<8x64xf32>
    %3 = "stablehlo.add"(%0, %2) : (tensor<8x64xf32>, tensor<8x64xf32>) -> tensor<8x64xf32>
    %4 = "stablehlo.constant"() <{value = dense<5.000000e-01> : tensor<f32>}> : () -> tensor<f32>
    %5 = "stablehlo.broadcast_in_dim"(%4) <{broadcast_dimensions = array<i64>}> : (tensor<f32>) -> tensor<8x64xf32>
    %6 = "stablehlo.multiply"(%5, %3) : (tensor<8x64xf32>, tensor<8x64xf32>) -> tensor<8x64xf32>
    %7 = "stablehlo.negate"(%3) : (tensor<8x64xf32>) -> tensor<8x64xf32>
    %8 = "stablehlo.constant"() <{value = dense<0.707106769> : tensor<f32>}> : () -> tensor<f32>
    %9 = "stablehlo.broadcast_in_dim"(%8) <{broadcast_dimensions = array<i64>}> : (tensor<f32>) -> tensor<8x64xf32>
    %10 = "stablehlo.multiply"(%7, %9) : (tensor<8x64xf32>, tensor<8x64xf32>) -> tensor<8x64xf32>
    %11 = "chlo.erfc"(%10) : (tensor<8x64xf32>) -> tensor<8x64xf32>
    %12 = "stablehlo.multiply"(%6, %11) : (tensor<8x64xf32>, tensor<8x64xf32>) -> tensor<8x64xf32>
    %13 = "sdy.sharding_constraint"(%12) <{sharding = #sdy.sharding<@mesh, [{"data"}, {"model"}]>}> : (tensor<8x64xf32>) -> tensor<8x64xf32>
    %14 = "stablehlo.dot_general"(%13, %arg3) <{dot_dimension_numbers = #stablehlo.dot<lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]>, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]}> : (tensor<8x64xf32>, tensor<64x16xf32>) -> tensor<8x16xf32>
    "func.return"(%14) : (tensor<8x16xf32>) -> ()
  }) : () -> ()
}) {mhlo.num_partitions = 8 : i32, mhlo.num_replicas = 1 : i32} : () -> ()
