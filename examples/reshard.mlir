// Resharding a value rows -> columns -> replicated: one all_to_all, then one all_gather.
spmd.mesh @mesh = <["x"=4]>

func.func @main(%a: tensor<16x32xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"x"}, {}]>})
    -> (tensor<16x32xf32> {spmd.sharding = #spmd.sharding<@mesh, [{}, {}]>}) {
  %c = spmd.constraint %a <@mesh, [{}, {"x"}]> : tensor<16x32xf32>
  %e = hlo.exp %c : tensor<16x32xf32>
  %r = spmd.constraint %e <@mesh, [{}, {}]> : tensor<16x32xf32>
  func.return %r : tensor<16x32xf32>
}
