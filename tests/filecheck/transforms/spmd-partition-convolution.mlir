// RUN: shardc-opt %s -p spmd-propagate,spmd-partition,canonicalize,cse --split-input-file | filecheck %s

// batch-sharded input: each device convolves its own images, no collective.
spmd.mesh @mesh = <["a"=2, "b"=2]>
func.func @batch(%x: tensor<8x10x10x4xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"a"}, {}, {}, {}]>}, %w: tensor<3x3x4x8xf32>)
    -> (tensor<8x10x10x8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"a"}, {}, {}, {}]>}) {
  %r = hlo.convolution(%x, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {pad = [[1, 1], [1, 1]]} : (tensor<8x10x10x4xf32>, tensor<3x3x4x8xf32>) -> tensor<8x10x10x8xf32>
  func.return %r : tensor<8x10x10x8xf32>
}
// CHECK:      func.func @batch(%x: tensor<4x10x10x4xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"a"}, {}, {}, {}]>}, %w: tensor<3x3x4x8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{}, {}, {}, {}]>}) -> (tensor<4x10x10x8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"a"}, {}, {}, {}]>}) attributes {spmd.partitioned} {
// CHECK-NEXT: %r = hlo.convolution(%x, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {pad = [[1, 1], [1, 1]]} : (tensor<4x10x10x4xf32>, tensor<3x3x4x8xf32>) -> tensor<4x10x10x8xf32>
// CHECK-NEXT: func.return %r : tensor<4x10x10x8xf32>

// -----


// output-feature sharded kernel: the result is sharded on its feature dimension.
spmd.mesh @mesh = <["a"=2, "b"=2]>
func.func @out_features(%x: tensor<8x4x10x10xf32>, %w: tensor<8x4x3x3xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"b"}, {}, {}, {}]>})
    -> (tensor<8x8x8x8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{}, {"b"}, {}, {}]>}) {
  %r = hlo.convolution(%x, %w) dim_numbers = [b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1], window = {} : (tensor<8x4x10x10xf32>, tensor<8x4x3x3xf32>) -> tensor<8x8x8x8xf32>
  func.return %r : tensor<8x8x8x8xf32>
}
// CHECK:      func.func @out_features(%x: tensor<8x4x10x10xf32> {spmd.sharding = #spmd.sharding<@mesh, [{}, {}, {}, {}]>}, %w: tensor<4x4x3x3xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"b"}, {}, {}, {}]>}) -> (tensor<8x4x8x8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{}, {"b"}, {}, {}]>}) attributes {spmd.partitioned} {
// CHECK-NEXT: %r = hlo.convolution(%x, %w) dim_numbers = [b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1], window = {} : (tensor<8x4x10x10xf32>, tensor<4x4x3x3xf32>) -> tensor<8x4x8x8xf32>
// CHECK-NEXT: func.return %r : tensor<8x4x8x8xf32>

// -----


// input features sharded on both operands, small: gathering both operands over "b" (two
// one-step rings in flight at once, 1 us: their latencies overlap) beats the partial
// convolutions' all_reduce (two ring steps, 2 us); level T agrees (1.00 us).
spmd.mesh @mesh = <["a"=2, "b"=2]>
func.func @in_features(%x: tensor<8x10x4xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"a"}, {}, {"b"}]>}, %w: tensor<3x4x6xf32> {spmd.sharding = #spmd.sharding<@mesh, [{}, {"b"}, {}]>})
    -> (tensor<8x8x6xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"a"}, {}, {}]>}) {
  %r = hlo.convolution(%x, %w) dim_numbers = [b, 0, f]x[0, i, o]->[b, 0, f], window = {} : (tensor<8x10x4xf32>, tensor<3x4x6xf32>) -> tensor<8x8x6xf32>
  func.return %r : tensor<8x8x6xf32>
}
// CHECK:      func.func @in_features(%x: tensor<4x10x2xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"a"}, {}, {"b"}]>}, %w: tensor<3x2x6xf32> {spmd.sharding = #spmd.sharding<@mesh, [{}, {"b"}, {}]>}) -> (tensor<4x8x6xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"a"}, {}, {}]>}) attributes {spmd.partitioned} {
// CHECK-NEXT: %0 = collective.all_gather %x on @mesh["b"], dim = 2 : (tensor<4x10x2xf32>) -> tensor<4x10x4xf32>
// CHECK-NEXT: %1 = collective.all_gather %w on @mesh["b"], dim = 1 : (tensor<3x2x6xf32>) -> tensor<3x4x6xf32>
// CHECK-NEXT: %r = hlo.convolution(%0, %1) dim_numbers = [b, 0, f]x[0, i, o]->[b, 0, f], window = {} : (tensor<4x10x4xf32>, tensor<3x4x6xf32>) -> tensor<4x8x6xf32>
// CHECK-NEXT: func.return %r : tensor<4x8x6xf32>

// -----


// input features sharded on both operands, large (1 MiB per device): local partial
// convolutions, then an all_reduce of the small result.
spmd.mesh @mesh = <["a"=2, "b"=2]>
func.func @in_features_large(%x: tensor<8x256x512xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"a"}, {}, {"b"}]>}, %w: tensor<3x512x6xf32> {spmd.sharding = #spmd.sharding<@mesh, [{}, {"b"}, {}]>})
    -> (tensor<8x254x6xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"a"}, {}, {}]>}) {
  %r = hlo.convolution(%x, %w) dim_numbers = [b, 0, f]x[0, i, o]->[b, 0, f], window = {} : (tensor<8x256x512xf32>, tensor<3x512x6xf32>) -> tensor<8x254x6xf32>
  func.return %r : tensor<8x254x6xf32>
}
// CHECK:      func.func @in_features_large(%x: tensor<4x256x256xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"a"}, {}, {"b"}]>}, %w: tensor<3x256x6xf32> {spmd.sharding = #spmd.sharding<@mesh, [{}, {"b"}, {}]>}) -> (tensor<4x254x6xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"a"}, {}, {}]>}) attributes {spmd.partitioned} {
// CHECK-NEXT: %r = hlo.convolution(%x, %w) dim_numbers = [b, 0, f]x[0, i, o]->[b, 0, f], window = {} : (tensor<4x256x256xf32>, tensor<3x256x6xf32>) -> tensor<4x254x6xf32>
// CHECK-NEXT: %r_1 = collective.all_reduce add %r on @mesh["b"] : tensor<4x254x6xf32>
// CHECK-NEXT: func.return %r_1 : tensor<4x254x6xf32>

// -----


// a sharded spatial dimension is all-gathered first (no halo exchange).
spmd.mesh @mesh = <["a"=2, "b"=2]>
func.func @spatial(%x: tensor<2x8x4xf32> {spmd.sharding = #spmd.sharding<@mesh, [{}, {"a"}, {}]>}, %w: tensor<3x4x6xf32>)
    -> (tensor<2x8x6xf32> {spmd.sharding = #spmd.sharding<@mesh, [{}, {"a"}, {}]>}) {
  %r = hlo.convolution(%x, %w) dim_numbers = [b, 0, f]x[0, i, o]->[b, 0, f], window = {pad = [[1, 1]]} : (tensor<2x8x4xf32>, tensor<3x4x6xf32>) -> tensor<2x8x6xf32>
  func.return %r : tensor<2x8x6xf32>
}
// CHECK:      func.func @spatial(%x: tensor<2x4x4xf32> {spmd.sharding = #spmd.sharding<@mesh, [{}, {"a"}, {}]>}, %w: tensor<3x4x6xf32> {spmd.sharding = #spmd.sharding<@mesh, [{}, {}, {}]>}) -> (tensor<2x4x6xf32> {spmd.sharding = #spmd.sharding<@mesh, [{}, {"a"}, {}]>}) attributes {spmd.partitioned} {
// CHECK-NEXT: %0 = collective.all_gather %x on @mesh["a"], dim = 1 : (tensor<2x4x4xf32>) -> tensor<2x8x4xf32>
// CHECK-NEXT: %r = hlo.convolution(%0, %w) dim_numbers = [b, 0, f]x[0, i, o]->[b, 0, f], window = {pad = [[1, 1]]} : (tensor<2x8x4xf32>, tensor<3x4x6xf32>) -> tensor<2x8x6xf32>
// CHECK-NEXT: %1 = hlo.constant dense<0> : tensor<i32>
// CHECK-NEXT: %2 = spmd.axis_index @mesh["a"] : tensor<i32>
// CHECK-NEXT: %3 = hlo.constant dense<4> : tensor<i32>
// CHECK-NEXT: %4 = hlo.mul %2, %3 : tensor<i32>
// CHECK-NEXT: %r_1 = hlo.dynamic_slice %r [%1, %4, %1] sizes = [2, 4, 6] : (tensor<2x8x6xf32>, tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<2x4x6xf32>
// CHECK-NEXT: func.return %r_1 : tensor<2x4x6xf32>

// -----


// depthwise (feature_group_count = features): sharded on features, it stays local.
spmd.mesh @mesh = <["a"=2, "b"=2]>
func.func @depthwise(%x: tensor<2x10x8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{}, {}, {"a", "b"}]>}, %w: tensor<3x1x16xf32> {spmd.sharding = #spmd.sharding<@mesh, [{}, {}, {"a", "b"}]>})
    -> (tensor<2x8x16xf32> {spmd.sharding = #spmd.sharding<@mesh, [{}, {}, {"a", "b"}]>}) {
  %r = hlo.convolution(%x, %w) dim_numbers = [b, 0, f]x[0, i, o]->[b, 0, f], window = {}, feature_group_count = 8 : (tensor<2x10x8xf32>, tensor<3x1x16xf32>) -> tensor<2x8x16xf32>
  func.return %r : tensor<2x8x16xf32>
}
// CHECK:      func.func @depthwise(%x: tensor<2x10x2xf32> {spmd.sharding = #spmd.sharding<@mesh, [{}, {}, {"a", "b"}]>}, %w: tensor<3x1x4xf32> {spmd.sharding = #spmd.sharding<@mesh, [{}, {}, {"a", "b"}]>}) -> (tensor<2x8x4xf32> {spmd.sharding = #spmd.sharding<@mesh, [{}, {}, {"a", "b"}]>}) attributes {spmd.partitioned} {
// CHECK-NEXT: %r = hlo.convolution(%x, %w) dim_numbers = [b, 0, f]x[0, i, o]->[b, 0, f], window = {}, feature_group_count = 2 : (tensor<2x10x2xf32>, tensor<3x1x4xf32>) -> tensor<2x8x4xf32>
// CHECK-NEXT: func.return %r : tensor<2x8x4xf32>

// -----


// the weight gradient of a depthwise conv (batch_group_count = features): the lhs
// "batch" (input features) sharded, the result's output features follow it, locally.
spmd.mesh @mesh = <["a"=2, "b"=2]>
func.func @batch_groups(%x: tensor<8x10x2xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"a"}, {}, {}]>}, %g: tensor<2x8x8xf32>)
    -> (tensor<1x3x8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{}, {}, {"a"}]>}) {
  %r = hlo.convolution(%x, %g) dim_numbers = [b, 0, f]x[i, 0, o]->[b, 0, f], window = {}, batch_group_count = 8 : (tensor<8x10x2xf32>, tensor<2x8x8xf32>) -> tensor<1x3x8xf32>
  func.return %r : tensor<1x3x8xf32>
}
// CHECK:      func.func @batch_groups(%x: tensor<4x10x2xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"a"}, {}, {}]>}, %g: tensor<2x8x8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{}, {}, {}]>}) -> (tensor<1x3x4xf32> {spmd.sharding = #spmd.sharding<@mesh, [{}, {}, {"a"}]>}) attributes {spmd.partitioned} {
// CHECK-NEXT: %0 = hlo.constant dense<0> : tensor<i32>
// CHECK-NEXT: %1 = spmd.axis_index @mesh["a"] : tensor<i32>
// CHECK-NEXT: %2 = hlo.constant dense<4> : tensor<i32>
// CHECK-NEXT: %3 = hlo.mul %1, %2 : tensor<i32>
// CHECK-NEXT: %4 = hlo.dynamic_slice %g [%0, %0, %3] sizes = [2, 8, 4] : (tensor<2x8x8xf32>, tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<2x8x4xf32>
// CHECK-NEXT: %r = hlo.convolution(%x, %4) dim_numbers = [b, 0, f]x[i, 0, o]->[b, 0, f], window = {}, batch_group_count = 4 : (tensor<4x10x2xf32>, tensor<2x8x4xf32>) -> tensor<1x3x4xf32>
// CHECK-NEXT: func.return %r : tensor<1x3x4xf32>
