// Multi-head attention on a 2x4 mesh: batch split on "data", heads split on "model".
// Every head is local; the output projection contracts over heads: one all_reduce.
spmd.mesh @mesh = <["data"=2, "model"=4]>

func.func @main(%x: tensor<4x16x64xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"data"}, {}, {}]>},
                %wq: tensor<64x8x16xf32> {spmd.sharding = #spmd.sharding<@mesh, [{}, {"model"}, {}]>},
                %wk: tensor<64x8x16xf32> {spmd.sharding = #spmd.sharding<@mesh, [{}, {"model"}, {}]>},
                %wv: tensor<64x8x16xf32> {spmd.sharding = #spmd.sharding<@mesh, [{}, {"model"}, {}]>},
                %wo: tensor<8x16x64xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"model"}, {}, {}]>})
    -> (tensor<4x16x64xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"data"}, {}, {}]>}) {
  %q = hlo.dot %x, %wq, contracting_dims = [2] x [0] : (tensor<4x16x64xf32>, tensor<64x8x16xf32>) -> tensor<4x16x8x16xf32>
  %k = hlo.dot %x, %wk, contracting_dims = [2] x [0] : (tensor<4x16x64xf32>, tensor<64x8x16xf32>) -> tensor<4x16x8x16xf32>
  %v = hlo.dot %x, %wv, contracting_dims = [2] x [0] : (tensor<4x16x64xf32>, tensor<64x8x16xf32>) -> tensor<4x16x8x16xf32>
  %s = hlo.dot %q, %k, batching_dims = [0, 2] x [0, 2], contracting_dims = [3] x [3] : (tensor<4x16x8x16xf32>, tensor<4x16x8x16xf32>) -> tensor<4x8x16x16xf32>
  %scale = hlo.constant dense<0.25> : tensor<4x8x16x16xf32>
  %ss = hlo.mul %s, %scale : tensor<4x8x16x16xf32>
  %m = hlo.reduce max %ss, dims = [3] : (tensor<4x8x16x16xf32>) -> tensor<4x8x16xf32>
  %mb = hlo.broadcast %m, dims = [0, 1, 2] : (tensor<4x8x16xf32>) -> tensor<4x8x16x16xf32>
  %d = hlo.sub %ss, %mb : tensor<4x8x16x16xf32>
  %e = hlo.exp %d : tensor<4x8x16x16xf32>
  %z = hlo.reduce add %e, dims = [3] : (tensor<4x8x16x16xf32>) -> tensor<4x8x16xf32>
  %zb = hlo.broadcast %z, dims = [0, 1, 2] : (tensor<4x8x16xf32>) -> tensor<4x8x16x16xf32>
  %p = hlo.div %e, %zb : tensor<4x8x16x16xf32>
  %c = hlo.dot %p, %v, batching_dims = [0, 1] x [0, 2], contracting_dims = [3] x [1] : (tensor<4x8x16x16xf32>, tensor<4x16x8x16xf32>) -> tensor<4x8x16x16xf32>
  %o = hlo.dot %c, %wo, contracting_dims = [1, 3] x [0, 1] : (tensor<4x8x16x16xf32>, tensor<8x16x64xf32>) -> tensor<4x16x64xf32>
  func.return %o : tensor<4x16x64xf32>
}
