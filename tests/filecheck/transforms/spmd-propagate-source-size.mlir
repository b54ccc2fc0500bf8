// RUN: shardc-opt %s -p 'spmd-propagate{explain=true}' --split-input-file | filecheck %s

// A factor conflict between an annotated (fixed) operand and a bigger propagated one: the
// bigger tensor wins whether annotated or not (Shardy's aggressive strategy), so the
// hidden activations keep their batch split and the small annotated weight w2 is
// all-gathered, as XLA does for an FSDP layer. (Annotated sources used to win first: %o
// took w2's contracting split, a replicated partial result, and the backward pass inherited
// the hidden-dimension split of w2: two more all_gathers and all_reduces.)
spmd.mesh @mesh = <["d"=4]>
func.func @fsdp_layer(%x: tensor<32x8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"d"}, {}]>},
                      %w1: tensor<8x16xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"d"}, {}]>},
                      %w2: tensor<16x8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"d"}, {}]>})
    -> tensor<32x8xf32> {
  %h = hlo.dot %x, %w1, contracting_dims = [1] x [0] : (tensor<32x8xf32>, tensor<8x16xf32>) -> tensor<32x16xf32>
  %a = hlo.tanh %h : tensor<32x16xf32>
  %o = hlo.dot %a, %w2, contracting_dims = [1] x [0] : (tensor<32x16xf32>, tensor<16x8xf32>) -> tensor<32x8xf32>
  %r = hlo.exp %o : tensor<32x8xf32>
  func.return %r : tensor<32x8xf32>
}
// CHECK-LABEL: func.func @fsdp_layer
// CHECK:       %h = hlo.dot {{.*}} {spmd.sharding = #spmd.sharding<@mesh, [{"d"}, {}]>, spmd.origin = "forward through hlo.dot from %x (argument 0)"}
// CHECK:       %o = hlo.dot {{.*}} {spmd.sharding = #spmd.sharding<@mesh, [{"d"}, {}]>, spmd.origin = "forward through hlo.dot from %a (hlo.tanh)"}

// -----

// Equal sizes: the annotation does not win the tie, operand order does (Shardy's source
// tensor index), so the gradient of the activations (dy x w2^T) keeps dy's batch split,
// not w2's (annotated) split of the hidden dimension.
spmd.mesh @mesh = <["d"=4]>
func.func @equal_sizes(%y: tensor<16x8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"d"}, {}]>},
                       %w2: tensor<16x8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"d"}, {}]>})
    -> tensor<16x16xf32> {
  %dy = hlo.tanh %y : tensor<16x8xf32>
  %da = hlo.dot %dy, %w2, contracting_dims = [1] x [1] : (tensor<16x8xf32>, tensor<16x8xf32>) -> tensor<16x16xf32>
  %g = hlo.exp %da : tensor<16x16xf32>
  func.return %g : tensor<16x16xf32>
}
// CHECK-LABEL: func.func @equal_sizes
// CHECK:       %da = hlo.dot {{.*}} {spmd.sharding = #spmd.sharding<@mesh, [{"d"}, {}]>, spmd.origin = "forward through hlo.dot from %dy (hlo.tanh)"}
