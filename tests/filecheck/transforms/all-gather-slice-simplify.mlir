// RUN: shardc-opt %s -p all-gather-slice-simplify --split-input-file | filecheck %s

// XLA's AllPartitions: this device's block of an all_gather is its own operand. The
// all_gather and the index computation are dead afterwards and go too.
spmd.mesh @mesh = <["x"=8]>
func.func @all_partitions(%p: tensor<32x8x128xf32>) -> tensor<32x8x128xf32> attributes {spmd.partitioned, spmd.per_device_io} {
  %ag = collective.all_gather %p on @mesh["x"], dim = 0 : (tensor<32x8x128xf32>) -> tensor<256x8x128xf32>
  %pid = spmd.axis_index @mesh["x"] : tensor<i32>
  %size = hlo.constant dense<32> : tensor<i32>
  %off = hlo.mul %pid, %size : tensor<i32>
  %zero = hlo.constant dense<0> : tensor<i32>
  %ds = hlo.dynamic_slice %ag [%off, %zero, %zero] sizes = [32, 8, 128] : (tensor<256x8x128xf32>, tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<32x8x128xf32>
  func.return %ds : tensor<32x8x128xf32>
}
// CHECK-LABEL: func.func @all_partitions
// CHECK-NEXT:    func.return %p : tensor<32x8x128xf32>

// -----

// XLA's AllReplicasWithReshape: through a reshape that keeps the blocks contiguous, the
// result is the operand reshaped. XLA's AllPartitionsWithReshapeOnSliceDim (declined by
// XLA) is simplified too: block r of [256, 8, 128] is rows 256 r .. 256 r + 255 of the
// [2048, 128] reshape.
spmd.mesh @mesh = <["x"=8]>
func.func @with_reshape(%p: tensor<32x8x128xf32>) -> (tensor<32x8x64x2xf32>, tensor<256x128xf32>) attributes {spmd.partitioned, spmd.per_device_io} {
  %ag = collective.all_gather %p on @mesh["x"], dim = 0 : (tensor<32x8x128xf32>) -> tensor<256x8x128xf32>
  %reshape = hlo.reshape %ag : (tensor<256x8x128xf32>) -> tensor<256x8x64x2xf32>
  %pid = spmd.axis_index @mesh["x"] : tensor<i32>
  %size = hlo.constant dense<32> : tensor<i32>
  %off = hlo.mul %pid, %size : tensor<i32>
  %zero = hlo.constant dense<0> : tensor<i32>
  %ds = hlo.dynamic_slice %reshape [%off, %zero, %zero, %zero] sizes = [32, 8, 64, 2] : (tensor<256x8x64x2xf32>, tensor<i32>, tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<32x8x64x2xf32>
  %ag2 = collective.all_gather %p on @mesh["x"], dim = 0 : (tensor<32x8x128xf32>) -> tensor<256x8x128xf32>
  %flat = hlo.reshape %ag2 : (tensor<256x8x128xf32>) -> tensor<2048x128xf32>
  %size2 = hlo.constant dense<256> : tensor<i32>
  %off2 = hlo.mul %pid, %size2 : tensor<i32>
  %ds2 = hlo.dynamic_slice %flat [%off2, %zero] sizes = [256, 128] : (tensor<2048x128xf32>, tensor<i32>, tensor<i32>) -> tensor<256x128xf32>
  func.return %ds, %ds2 : tensor<32x8x64x2xf32>, tensor<256x128xf32>
}
// CHECK-LABEL: func.func @with_reshape
// CHECK-NEXT:    %ds = hlo.reshape %p : (tensor<32x8x128xf32>) -> tensor<32x8x64x2xf32>
// CHECK-NEXT:    %ds2 = hlo.reshape %p : (tensor<32x8x128xf32>) -> tensor<256x128xf32>
// CHECK-NEXT:    func.return %ds, %ds2

// -----

// XLA's AllReplicasWithReshapeMultipleUsers: the all_gather stays for its other user.
// A gather over two mesh axes (row-major shard index), and a variadic all_gather (each
// result on its own).
spmd.mesh @mesh = <["a"=2, "b"=4]>
func.func @multiple_users(%p: tensor<4x8xf32>, %q: tensor<2x3xi32>) -> (tensor<4x8xf32>, tensor<16x8xf32>, tensor<4x8xf32>, tensor<2x3xi32>) attributes {spmd.partitioned, spmd.per_device_io} {
  %ag = collective.all_gather %p on @mesh["b"], dim = 0 : (tensor<4x8xf32>) -> tensor<16x8xf32>
  %b = spmd.axis_index @mesh["b"] : tensor<i32>
  %a = spmd.axis_index @mesh["a"] : tensor<i32>
  %c4 = hlo.constant dense<4> : tensor<i32>
  %c8 = hlo.constant dense<8> : tensor<i32>
  %off = hlo.mul %b, %c4 : tensor<i32>
  %zero = hlo.constant dense<0> : tensor<i32>
  %ds = hlo.dynamic_slice %ag [%off, %zero] sizes = [4, 8] : (tensor<16x8xf32>, tensor<i32>, tensor<i32>) -> tensor<4x8xf32>
  %ag2 = collective.all_gather %p on @mesh["a", "b"], dim = 1 : (tensor<4x8xf32>) -> tensor<4x64xf32>
  %am = hlo.mul %a, %c4 : tensor<i32>
  %ab = hlo.add %am, %b : tensor<i32>
  %off2 = hlo.mul %ab, %c8 : tensor<i32>
  %ds2 = hlo.dynamic_slice %ag2 [%zero, %off2] sizes = [4, 8] : (tensor<4x64xf32>, tensor<i32>, tensor<i32>) -> tensor<4x8xf32>
  %g1, %g2 = collective.all_gather %p, %q on @mesh["b"], dim = 0 : (tensor<4x8xf32>, tensor<2x3xi32>) -> (tensor<16x8xf32>, tensor<8x3xi32>)
  %c2 = hlo.constant dense<2> : tensor<i32>
  %off3 = hlo.mul %b, %c2 : tensor<i32>
  %ds3 = hlo.dynamic_slice %g2 [%off3, %zero] sizes = [2, 3] : (tensor<8x3xi32>, tensor<i32>, tensor<i32>) -> tensor<2x3xi32>
  func.return %ds, %ag, %ds2, %ds3 : tensor<4x8xf32>, tensor<16x8xf32>, tensor<4x8xf32>, tensor<2x3xi32>
}
// CHECK-LABEL: func.func @multiple_users
// CHECK-NEXT:    %ag = collective.all_gather %p on @mesh["b"], dim = 0
// CHECK-NEXT:    func.return %p, %ag, %p, %q

// -----

// Part of this device's block: a static slice of the operand.
spmd.mesh @mesh = <["x"=4]>
func.func @part_of_block(%p: tensor<8x6xf32>) -> tensor<3x4xf32> attributes {spmd.partitioned, spmd.per_device_io} {
  %ag = collective.all_gather %p on @mesh["x"], dim = 0 : (tensor<8x6xf32>) -> tensor<32x6xf32>
  %pid = spmd.axis_index @mesh["x"] : tensor<i32>
  %c8 = hlo.constant dense<8> : tensor<i32>
  %c2 = hlo.constant dense<2> : tensor<i32>
  %base = hlo.mul %pid, %c8 : tensor<i32>
  %off = hlo.add %base, %c2 : tensor<i32>
  %one = hlo.constant dense<1> : tensor<i32>
  %ds = hlo.dynamic_slice %ag [%off, %one] sizes = [3, 4] : (tensor<32x6xf32>, tensor<i32>, tensor<i32>) -> tensor<3x4xf32>
  func.return %ds : tensor<3x4xf32>
}
// CHECK-LABEL: func.func @part_of_block
// CHECK-NEXT:    %ds = hlo.slice %p [2:5, 1:5] : (tensor<8x6xf32>) -> tensor<3x4xf32>
// CHECK-NEXT:    func.return %ds

// -----

// Left alone: XLA's NoAllGather, IncorrectAllGatherDimension (the slice runs along
// another dimension) and AllGatherDimDoesNotMatchDynamicSlice; another device's block;
// a slice straddling two blocks; a reshape that interleaves the blocks.
spmd.mesh @mesh = <["x"=8]>
func.func @no_change(%p: tensor<32x8x128xf32>, %q: tensor<2x16xf32>) -> (tensor<32x8x128xf32>, tensor<32x8x128xf32>, tensor<16x2xf32>, tensor<2x16xf32>, tensor<2x16xf32>, tensor<32x8xf32>) attributes {spmd.partitioned, spmd.per_device_io} {
  %pid = spmd.axis_index @mesh["x"] : tensor<i32>
  %c32 = hlo.constant dense<32> : tensor<i32>
  %c8 = hlo.constant dense<8> : tensor<i32>
  %c2 = hlo.constant dense<2> : tensor<i32>
  %c1 = hlo.constant dense<1> : tensor<i32>
  %zero = hlo.constant dense<0> : tensor<i32>
  %off = hlo.mul %pid, %c32 : tensor<i32>
  %ds0 = hlo.dynamic_slice %p [%off, %zero, %zero] sizes = [32, 8, 128] : (tensor<32x8x128xf32>, tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<32x8x128xf32>
  %ag = collective.all_gather %p on @mesh["x"], dim = 1 : (tensor<32x8x128xf32>) -> tensor<32x64x128xf32>
  %off8 = hlo.mul %pid, %c8 : tensor<i32>
  %ds1 = hlo.dynamic_slice %ag [%zero, %zero, %off8] sizes = [32, 8, 128] : (tensor<32x64x128xf32>, tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<32x8x128xf32>
  %ag2 = collective.all_gather %q on @mesh["x"], dim = 0 : (tensor<2x16xf32>) -> tensor<16x16xf32>
  %off2 = hlo.mul %pid, %c2 : tensor<i32>
  %ds2 = hlo.dynamic_slice %ag2 [%zero, %off2] sizes = [16, 2] : (tensor<16x16xf32>, tensor<i32>, tensor<i32>) -> tensor<16x2xf32>
  %ag3 = collective.all_gather %q on @mesh["x"], dim = 0 : (tensor<2x16xf32>) -> tensor<16x16xf32>
  %next = hlo.add %pid, %c1 : tensor<i32>
  %off3 = hlo.mul %next, %c2 : tensor<i32>
  %ds3 = hlo.dynamic_slice %ag3 [%off3, %zero] sizes = [2, 16] : (tensor<16x16xf32>, tensor<i32>, tensor<i32>) -> tensor<2x16xf32>
  %ag4 = collective.all_gather %q on @mesh["x"], dim = 0 : (tensor<2x16xf32>) -> tensor<16x16xf32>
  %off4 = hlo.add %off2, %c1 : tensor<i32>
  %ds4 = hlo.dynamic_slice %ag4 [%off4, %zero] sizes = [2, 16] : (tensor<16x16xf32>, tensor<i32>, tensor<i32>) -> tensor<2x16xf32>
  %ag5 = collective.all_gather %p on @mesh["x"], dim = 1 : (tensor<32x8x128xf32>) -> tensor<32x64x128xf32>
  %r5 = hlo.reshape %ag5 : (tensor<32x64x128xf32>) -> tensor<256x1024xf32>
  %ds5 = hlo.dynamic_slice %r5 [%off, %zero] sizes = [32, 8] : (tensor<256x1024xf32>, tensor<i32>, tensor<i32>) -> tensor<32x8xf32>
  func.return %ds0, %ds1, %ds2, %ds3, %ds4, %ds5 : tensor<32x8x128xf32>, tensor<32x8x128xf32>, tensor<16x2xf32>, tensor<2x16xf32>, tensor<2x16xf32>, tensor<32x8xf32>
}
// CHECK-LABEL: func.func @no_change
// CHECK-COUNT-6: hlo.dynamic_slice
// CHECK:         func.return %ds0, %ds1, %ds2, %ds3, %ds4, %ds5
