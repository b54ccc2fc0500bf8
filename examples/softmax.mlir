// Softmax over a split axis: an all_reduce max, then an all_reduce add.
spmd.mesh @mesh = <["x"=4]>

func.func @main(%x: tensor<8x64xf32> {spmd.sharding = #spmd.sharding<@mesh, [{}, {"x"}]>})
    -> (tensor<8x64xf32> {spmd.sharding = #spmd.sharding<@mesh, [{}, {"x"}]>}) {
  %m = hlo.reduce max %x, dims = [1] : (tensor<8x64xf32>) -> tensor<8xf32>
  %mb = hlo.broadcast %m, dims = [0] : (tensor<8xf32>) -> tensor<8x64xf32>
  %d = hlo.sub %x, %mb : tensor<8x64xf32>
  %e = hlo.exp %d : tensor<8x64xf32>
  %z = hlo.reduce add %e, dims = [1] : (tensor<8x64xf32>) -> tensor<8xf32>
  %zb = hlo.broadcast %z, dims = [0] : (tensor<8xf32>) -> tensor<8x64xf32>
  %p = hlo.div %e, %zb : tensor<8x64xf32>
  func.return %p : tensor<8x64xf32>
}
