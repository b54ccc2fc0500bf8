// RUN: shardc-opt %s -p spmd-propagate,spmd-partition,canonicalize,cse --split-input-file | filecheck %s

// pad: the padded dimension 0 is all-gathered before the pad (its factor cannot be split),
// the unpadded dimension 1 keeps its sharding; the result is sliced to the wanted sharding.
spmd.mesh @mesh = <["a"=2, "b"=2]>
func.func @pad(%x: tensor<8x4xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"a"}, {"b"}]>}, %v: tensor<f32>)
    -> (tensor<12x4xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"a"}, {"b"}]>}) {
  %r = hlo.pad %x, %v, low = [1, 0], high = [3, 0], interior = [0, 0] : (tensor<8x4xf32>, tensor<f32>) -> tensor<12x4xf32>
  func.return %r : tensor<12x4xf32>
}
// CHECK:      func.func @pad(%x: tensor<4x2xf32> {{.*}}, %v: tensor<f32> {{.*}}) -> (tensor<6x2xf32> {{.*}}) attributes {spmd.partitioned} {
// CHECK-NEXT:   %0 = collective.all_gather %x on @mesh["a"], dim = 0 : (tensor<4x2xf32>) -> tensor<8x2xf32>
// CHECK-NEXT:   %r = hlo.pad %0, %v, low = [1, 0], high = [3, 0], interior = [0, 0] : (tensor<8x2xf32>, tensor<f32>) -> tensor<12x2xf32>
// CHECK:        %r_1 = hlo.dynamic_slice %r
// CHECK-NOT:    collective.
// CHECK:        func.return %r_1 : tensor<6x2xf32>

// -----

// reverse: the reversed dimensions stay split; a local reverse, then one permute sends
// block k of N to the device of block N - 1 - k (rank r to rank G - 1 - r over the axes).
spmd.mesh @mesh = <["a"=2, "b"=4]>
func.func @reverse(%x: tensor<8x16xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"a"}, {"b"}]>})
    -> (tensor<8x16xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"a"}, {"b"}]>}) {
  %r = hlo.reverse %x, dims = [1] : tensor<8x16xf32>
  func.return %r : tensor<8x16xf32>
}
// CHECK:      func.func @reverse(%x: tensor<4x4xf32> {{.*}}) -> (tensor<4x4xf32> {{.*}}) attributes {spmd.partitioned} {
// CHECK-NEXT:   %r = hlo.reverse %x, dims = [1] : tensor<4x4xf32>
// CHECK-NEXT:   %r_1 = collective.permute %r on @mesh["b"], pairs = [[0, 3], [1, 2], [2, 1], [3, 0]] : tensor<4x4xf32>
// CHECK-NEXT:   func.return %r_1 : tensor<4x4xf32>

// -----

// A reverse of a dimension that is not split needs no communication.
spmd.mesh @mesh = <["a"=2]>
func.func @reverse_local(%x: tensor<8x16xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"a"}, {}]>})
    -> (tensor<8x16xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"a"}, {}]>}) {
  %r = hlo.reverse %x, dims = [1] : tensor<8x16xf32>
  func.return %r : tensor<8x16xf32>
}
// CHECK:      func.func @reverse_local(%x: tensor<4x16xf32> {{.*}}) -> (tensor<4x16xf32> {{.*}}) attributes {spmd.partitioned} {
// CHECK-NEXT:   %r = hlo.reverse %x, dims = [1] : tensor<4x16xf32>
// CHECK-NEXT:   func.return %r : tensor<4x16xf32>
