// RUN: shardc-opt %s -p 'spmd-propagate{explain=true}' | filecheck %s

// Forward through a convolution: the batch factor from the input, the output-feature
// factor from the kernel; the element-wise consumer follows.
spmd.mesh @mesh = <["data"=2, "model"=4]>
func.func @forward(%x: tensor<8x10x10x4xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"data"}, {}, {}, {}]>},
                   %w: tensor<3x3x4x8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{}, {}, {}, {"model"}]>})
    -> tensor<8x8x8x8xf32> {
  %r = hlo.convolution(%x, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {} : (tensor<8x10x10x4xf32>, tensor<3x3x4x8xf32>) -> tensor<8x8x8x8xf32>
  %n = hlo.neg %r : tensor<8x8x8x8xf32>
  %m = hlo.neg %n : tensor<8x8x8x8xf32>
  func.return %m : tensor<8x8x8x8xf32>
}
// CHECK: %r = hlo.convolution(%x, %w) {{.*}} {spmd.sharding = #spmd.sharding<@mesh, [{"data"}, {}, {}, {"model"}]>, spmd.origin = "forward through hlo.convolution from %w (argument 1), %x (argument 0)"}
// CHECK: %n = hlo.neg %r {spmd.sharding = #spmd.sharding<@mesh, [{"data"}, {}, {}, {"model"}]>, spmd.origin = "forward through hlo.neg from %r (hlo.convolution)"}
