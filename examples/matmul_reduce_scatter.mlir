// A matmul whose contracting dimension is split, feeding a column-split result: the
// partial sums become one reduce_scatter (never an all_reduce followed by a slice).
spmd.mesh @mesh = <["x"=8]>

func.func @main(%a: tensor<32x64xf32> {spmd.sharding = #spmd.sharding<@mesh, [{}, {"x"}]>},
                %b: tensor<64x128xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"x"}, {}]>})
    -> (tensor<32x128xf32> {spmd.sharding = #spmd.sharding<@mesh, [{}, {"x"}]>}) {
  %c = hlo.dot %a, %b, contracting_dims = [1] x [0] : (tensor<32x64xf32>, tensor<64x128xf32>) -> tensor<32x128xf32>
  func.return %c : tensor<32x128xf32>
}
