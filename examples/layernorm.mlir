// Layer norm with the feature dimension split over "model": the mean and the variance
// each need one all_reduce over "model".
spmd.mesh @mesh = <["data"=2, "model"=4]>

func.func @main(%x: tensor<8x64xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"data"}, {"model"}]>},
                %gamma: tensor<64xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"model"}]>},
                %beta: tensor<64xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"model"}]>})
    -> (tensor<8x64xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"data"}, {"model"}]>}) {
  %n = hlo.constant dense<0.015625> : tensor<8xf32>
  %sum = hlo.reduce add %x, dims = [1] : (tensor<8x64xf32>) -> tensor<8xf32>
  %mean = hlo.mul %sum, %n : tensor<8xf32>
  %mb = hlo.broadcast %mean, dims = [0] : (tensor<8xf32>) -> tensor<8x64xf32>
  %xc = hlo.sub %x, %mb : tensor<8x64xf32>
  %sq = hlo.mul %xc, %xc : tensor<8x64xf32>
  %vsum = hlo.reduce add %sq, dims = [1] : (tensor<8x64xf32>) -> tensor<8xf32>
  %var = hlo.mul %vsum, %n : tensor<8xf32>
  %eps = hlo.constant dense<1.0e-5> : tensor<8xf32>
  %ve = hlo.add %var, %eps : tensor<8xf32>
  %r = hlo.rsqrt %ve : tensor<8xf32>
  %rb = hlo.broadcast %r, dims = [0] : (tensor<8xf32>) -> tensor<8x64xf32>
  %y = hlo.mul %xc, %rb : tensor<8x64xf32>
  %gb = hlo.broadcast %gamma, dims = [1] : (tensor<64xf32>) -> tensor<8x64xf32>
  %bb = hlo.broadcast %beta, dims = [1] : (tensor<64xf32>) -> tensor<8x64xf32>
  %yg = hlo.mul %y, %gb : tensor<8x64xf32>
  %out = hlo.add %yg, %bb : tensor<8x64xf32>
  func.return %out : tensor<8x64xf32>
}
