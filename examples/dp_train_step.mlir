// A data-parallel training step of a 2-layer MLP on 8 devices: forward, loss gradient,
// backward; weight gradients are all-reduced and applied (SGD) to replicated weights.
spmd.mesh @mesh = <["data"=8]>

func.func @main(%x: tensor<64x32xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"data"}, {}]>},
                %t: tensor<64x16xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"data"}, {}]>},
                %w1: tensor<32x64xf32>, %w2: tensor<64x16xf32>)
    -> (tensor<32x64xf32>, tensor<64x16xf32>) {
  %h = hlo.dot %x, %w1, contracting_dims = [1] x [0] : (tensor<64x32xf32>, tensor<32x64xf32>) -> tensor<64x64xf32>
  %a = hlo.tanh %h : tensor<64x64xf32>
  %y = hlo.dot %a, %w2, contracting_dims = [1] x [0] : (tensor<64x64xf32>, tensor<64x16xf32>) -> tensor<64x16xf32>
  %dy = hlo.sub %y, %t : tensor<64x16xf32>
  %dw2 = hlo.dot %a, %dy, contracting_dims = [0] x [0] : (tensor<64x64xf32>, tensor<64x16xf32>) -> tensor<64x16xf32>
  %da = hlo.dot %dy, %w2, contracting_dims = [1] x [1] : (tensor<64x16xf32>, tensor<64x16xf32>) -> tensor<64x64xf32>
  %one = hlo.constant dense<1.0> : tensor<64x64xf32>
  %a2 = hlo.mul %a, %a : tensor<64x64xf32>
  %g = hlo.sub %one, %a2 : tensor<64x64xf32>
  %dh = hlo.mul %da, %g : tensor<64x64xf32>
  %dw1 = hlo.dot %x, %dh, contracting_dims = [0] x [0] : (tensor<64x32xf32>, tensor<64x64xf32>) -> tensor<32x64xf32>
  %lr1 = hlo.constant dense<0.01> : tensor<32x64xf32>
  %lr2 = hlo.constant dense<0.01> : tensor<64x16xf32>
  %s1 = hlo.mul %dw1, %lr1 : tensor<32x64xf32>
  %s2 = hlo.mul %dw2, %lr2 : tensor<64x16xf32>
  %nw1 = hlo.sub %w1, %s1 : tensor<32x64xf32>
  %nw2 = hlo.sub %w2, %s2 : tensor<64x16xf32>
  func.return %nw1, %nw2 : tensor<32x64xf32>, tensor<64x16xf32>
}
