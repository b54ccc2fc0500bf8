// RUN: shardc-opt %s -p spmd-propagate,spmd-partition,canonicalize,cse --split-input-file | filecheck %s

// reduce_window along a split dimension (a 3-wide "same" window): each device sends its
// last element right and its first left (collective.permute), the first and last device
// fill the missing halo with the init value (the global padding), then reduce locally on
// the extended block with no padding. The batch dimension 0 keeps its sharding.
spmd.mesh @mesh = <["a"=2, "b"=2]>
func.func @halo(%x: tensor<8x16xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"a"}, {"b"}]>})
    -> (tensor<8x16xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"a"}, {"b"}]>}) {
  %z = hlo.constant dense<0.0> : tensor<f32>
  %r = hlo.reduce_window add %x, %z, window = [1, 3], padding = [[0, 0], [1, 1]] : (tensor<8x16xf32>, tensor<f32>) -> tensor<8x16xf32>
  func.return %r : tensor<8x16xf32>
}
// CHECK:      func.func @halo(%x: tensor<4x8xf32> {{.*}}) -> (tensor<4x8xf32> {{.*}}) attributes {spmd.partitioned} {
// CHECK:        %[[TAIL:.*]] = hlo.slice %x [0:4, 7:8] : (tensor<4x8xf32>) -> tensor<4x1xf32>
// CHECK-NEXT:   %[[FROM_LEFT:.*]] = collective.permute %[[TAIL]] on @mesh["b"], pairs = {{\[\[}}0, 1]] : tensor<4x1xf32>
// CHECK:        %[[FIRST:.*]] = hlo.compare EQ, %{{.*}}, %{{.*}} : (tensor<i32>, tensor<i32>) -> tensor<i1>
// CHECK:        %[[LEFT:.*]] = hlo.select %[[FIRST]], %{{.*}}, %[[FROM_LEFT]] : tensor<i1>, tensor<4x1xf32>
// CHECK:        %[[HEAD:.*]] = hlo.slice %x [0:4, 0:1] : (tensor<4x8xf32>) -> tensor<4x1xf32>
// CHECK-NEXT:   %[[FROM_RIGHT:.*]] = collective.permute %[[HEAD]] on @mesh["b"], pairs = {{\[\[}}1, 0]] : tensor<4x1xf32>
// CHECK:        %[[RIGHT:.*]] = hlo.select %{{.*}}, %{{.*}}, %[[FROM_RIGHT]] : tensor<i1>, tensor<4x1xf32>
// CHECK:        %[[EXT:.*]] = hlo.concatenate %[[LEFT]], %x, %[[RIGHT]], dim = 1 : (tensor<4x1xf32>, tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x10xf32>
// CHECK-NEXT:   %r = hlo.reduce_window add %[[EXT]], %z, window = [1, 3] : (tensor<4x10xf32>, tensor<f32>) -> tensor<4x8xf32>
// CHECK-NEXT:   func.return %r : tensor<4x8xf32>
// CHECK-NOT:    all_gather

// -----

// Max pooling (windows tile the blocks) and its gradient: no communication at all.
spmd.mesh @mesh = <["a"=2, "b"=2]>
func.func @pool(%x: tensor<8x16xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"a"}, {"b"}]>})
    -> (tensor<8x16xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"a"}, {"b"}]>}) {
  %z = hlo.constant dense<0.0> : tensor<f32>
  %p = hlo.reduce_window max %x, %z, window = [2, 2], strides = [2, 2] : (tensor<8x16xf32>, tensor<f32>) -> tensor<4x8xf32>
  %g = hlo.select_and_scatter %x, %p, %z, select = GE, scatter = add, window = [2, 2], strides = [2, 2] : (tensor<8x16xf32>, tensor<4x8xf32>, tensor<f32>) -> tensor<8x16xf32>
  func.return %g : tensor<8x16xf32>
}
// CHECK:      func.func @pool(%x: tensor<4x8xf32> {{.*}}) -> (tensor<4x8xf32> {{.*}}) attributes {spmd.partitioned} {
// CHECK-NEXT:   %z = hlo.constant dense<0.000000e+00> : tensor<f32>
// CHECK-NEXT:   %p = hlo.reduce_window max %x, %z, window = [2, 2], strides = [2, 2] : (tensor<4x8xf32>, tensor<f32>) -> tensor<2x4xf32>
// CHECK-NEXT:   %g = hlo.select_and_scatter %x, %p, %z, select = GE, scatter = add, window = [2, 2], strides = [2, 2] : (tensor<4x8xf32>, tensor<2x4xf32>, tensor<f32>) -> tensor<4x8xf32>
// CHECK-NEXT:   func.return %g : tensor<4x8xf32>

// -----

// jnp.cumsum over a split dimension (a window of the whole dimension): no halo of one
// block reaches, so the dimension is all-gathered, the scan computed whole, and each
// device keeps its block of the result.
spmd.mesh @mesh = <["a"=2]>
func.func @cumsum(%x: tensor<16xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"a"}]>})
    -> (tensor<16xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"a"}]>}) {
  %z = hlo.constant dense<0.0> : tensor<f32>
  %c = hlo.reduce_window add %x, %z, window = [16], padding = [[15, 0]] : (tensor<16xf32>, tensor<f32>) -> tensor<16xf32>
  func.return %c : tensor<16xf32>
}
// CHECK:      func.func @cumsum(%x: tensor<8xf32> {{.*}}) -> (tensor<8xf32> {{.*}}) attributes {spmd.partitioned} {
// CHECK:        %[[FULL:.*]] = collective.all_gather %x on @mesh["a"], dim = 0 : (tensor<8xf32>) -> tensor<16xf32>
// CHECK-NEXT:   %c = hlo.reduce_window add %[[FULL]], %z, window = [16], padding = {{\[\[}}15, 0]] : (tensor<16xf32>, tensor<f32>) -> tensor<16xf32>
// CHECK:        hlo.dynamic_slice %c
