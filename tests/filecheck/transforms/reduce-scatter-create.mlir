// RUN: shardc-opt %s -p reduce-scatter-create --split-input-file | filecheck %s
// RUN: not shardc-opt %s -p 'reduce-scatter-create{bogus=1}' 2>&1 | filecheck %s --check-prefix=BADOPT

// BADOPT: error: invalid pass pipeline: unknown pass option 'bogus'

// The partitioner's pattern: an all_reduce, then this device's block by
// axis_index * block size. The index computation is dead afterwards and goes too.
spmd.mesh @mesh = <["x"=8]>
func.func @partitioner_pattern(%p: tensor<32x8x128xf32>) -> tensor<4x8x128xf32> attributes {spmd.partitioned, spmd.per_device_io} {
  %ar = collective.all_reduce add %p on @mesh["x"] : tensor<32x8x128xf32>
  %i = spmd.axis_index @mesh["x"] : tensor<i32>
  %c4 = hlo.constant dense<4> : tensor<i32>
  %off = hlo.mul %i, %c4 : tensor<i32>
  %zero = hlo.constant dense<0> : tensor<i32>
  %ds = hlo.dynamic_slice %ar [%off, %zero, %zero] sizes = [4, 8, 128] : (tensor<32x8x128xf32>, tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<4x8x128xf32>
  func.return %ds : tensor<4x8x128xf32>
}
// CHECK-LABEL: func.func @partitioner_pattern
// CHECK-NEXT:    %ds = collective.reduce_scatter add %p on @mesh["x"], dim = 0 : (tensor<32x8x128xf32>) -> tensor<4x8x128xf32>
// CHECK-NEXT:    func.return %ds

// -----

// XLA's AllReplicas: the device index read from a constant table.
spmd.mesh @mesh = <["x"=8]>
func.func @table_lookup(%p: tensor<32x8x128xf32>) -> tensor<4x8x128xf32> attributes {spmd.partitioned, spmd.per_device_io} {
  %ar = collective.all_reduce add %p on @mesh["x"] : tensor<32x8x128xf32>
  %table = hlo.constant dense<[0, 1, 2, 3, 4, 5, 6, 7]> : tensor<8xi32>
  %rid = spmd.axis_index @mesh["x"] : tensor<i32>
  %id = hlo.dynamic_slice %table [%rid] sizes = [1] : (tensor<8xi32>, tensor<i32>) -> tensor<1xi32>
  %reshape = hlo.reshape %id : (tensor<1xi32>) -> tensor<i32>
  %size = hlo.constant dense<4> : tensor<i32>
  %off = hlo.mul %reshape, %size : tensor<i32>
  %zero = hlo.constant dense<0> : tensor<i32>
  %ds = hlo.dynamic_slice %ar [%off, %zero, %zero] sizes = [4, 8, 128] : (tensor<32x8x128xf32>, tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<4x8x128xf32>
  func.return %ds : tensor<4x8x128xf32>
}
// CHECK-LABEL: func.func @table_lookup
// CHECK-NEXT:    %ds = collective.reduce_scatter add %p on @mesh["x"], dim = 0
// CHECK-NEXT:    func.return %ds

// -----

// XLA's AllReplicasWithOffsetReshape and AllReplicasIotaTable: the product taken on a
// tensor<1xi32> and reshaped afterwards; the table an iota.
spmd.mesh @mesh = <["x"=8]>
func.func @offset_reshape(%p: tensor<32x8xf32>) -> tensor<4x8xf32> attributes {spmd.partitioned, spmd.per_device_io} {
  %ar = collective.all_reduce add %p on @mesh["x"] : tensor<32x8xf32>
  %table = hlo.iota dim = 0 : tensor<8xi32>
  %rid = spmd.axis_index @mesh["x"] : tensor<i32>
  %id = hlo.dynamic_slice %table [%rid] sizes = [1] : (tensor<8xi32>, tensor<i32>) -> tensor<1xi32>
  %size = hlo.constant dense<[4]> : tensor<1xi32>
  %mul = hlo.mul %id, %size : tensor<1xi32>
  %off = hlo.reshape %mul : (tensor<1xi32>) -> tensor<i32>
  %zero = hlo.constant dense<0> : tensor<i32>
  %ds = hlo.dynamic_slice %ar [%off, %zero] sizes = [4, 8] : (tensor<32x8xf32>, tensor<i32>, tensor<i32>) -> tensor<4x8xf32>
  func.return %ds : tensor<4x8xf32>
}
// CHECK-LABEL: func.func @offset_reshape
// CHECK-NEXT:    %ds = collective.reduce_scatter add %p on @mesh["x"], dim = 0
// CHECK-NEXT:    func.return %ds

// -----

// XLA's AllReplicasWithReshape and AllReplicasWithReshapeSplitDimModified: a reshape
// between the all_reduce and the slice moves before the collective (data movement
// commutes with an elementwise reduction), whatever it does to the split dimension.
spmd.mesh @mesh = <["x"=8]>
func.func @through_reshape(%p: tensor<32x8x128xf32>, %q: tensor<336x1024xf32>) -> (tensor<4x16x64xf32>, tensor<4x84x128xf32>) attributes {spmd.partitioned, spmd.per_device_io} {
  %ar = collective.all_reduce add %p on @mesh["x"] : tensor<32x8x128xf32>
  %rid = spmd.axis_index @mesh["x"] : tensor<i32>
  %c4 = hlo.constant dense<4> : tensor<i32>
  %off = hlo.mul %rid, %c4 : tensor<i32>
  %zero = hlo.constant dense<0> : tensor<i32>
  %r = hlo.reshape %ar : (tensor<32x8x128xf32>) -> tensor<32x16x64xf32>
  %ds = hlo.dynamic_slice %r [%off, %zero, %zero] sizes = [4, 16, 64] : (tensor<32x16x64xf32>, tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<4x16x64xf32>
  %ar2 = collective.all_reduce add %q on @mesh["x"] : tensor<336x1024xf32>
  %c128 = hlo.constant dense<128> : tensor<i32>
  %off2 = hlo.mul %rid, %c128 : tensor<i32>
  %r2 = hlo.reshape %ar2 : (tensor<336x1024xf32>) -> tensor<4x84x1024xf32>
  %ds2 = hlo.dynamic_slice %r2 [%zero, %zero, %off2] sizes = [4, 84, 128] : (tensor<4x84x1024xf32>, tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<4x84x128xf32>
  func.return %ds, %ds2 : tensor<4x16x64xf32>, tensor<4x84x128xf32>
}
// CHECK-LABEL: func.func @through_reshape
// CHECK-NEXT:    %0 = hlo.reshape %p : (tensor<32x8x128xf32>) -> tensor<32x16x64xf32>
// CHECK-NEXT:    %ds = collective.reduce_scatter add %0 on @mesh["x"], dim = 0 : (tensor<32x16x64xf32>) -> tensor<4x16x64xf32>
// CHECK-NEXT:    %1 = hlo.reshape %q : (tensor<336x1024xf32>) -> tensor<4x84x1024xf32>
// CHECK-NEXT:    %ds2 = collective.reduce_scatter add %1 on @mesh["x"], dim = 2 : (tensor<4x84x1024xf32>) -> tensor<4x84x128xf32>
// CHECK-NEXT:    func.return %ds, %ds2

// -----

// XLA's AllReplicasDim2, and a transpose in between; a max all_reduce becomes a max
// reduce_scatter.
spmd.mesh @mesh = <["x"=8]>
func.func @dim2_transpose_max(%p: tensor<32x8x128xf32>, %q: tensor<16x8xi32>) -> (tensor<32x8x16xf32>, tensor<1x16xi32>) attributes {spmd.partitioned, spmd.per_device_io} {
  %ar = collective.all_reduce add %p on @mesh["x"] : tensor<32x8x128xf32>
  %rid = spmd.axis_index @mesh["x"] : tensor<i32>
  %c16 = hlo.constant dense<16> : tensor<i32>
  %off = hlo.mul %rid, %c16 : tensor<i32>
  %zero = hlo.constant dense<0> : tensor<i32>
  %ds = hlo.dynamic_slice %ar [%zero, %zero, %off] sizes = [32, 8, 16] : (tensor<32x8x128xf32>, tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<32x8x16xf32>
  %ar2 = collective.all_reduce max %q on @mesh["x"] : tensor<16x8xi32>
  %t = hlo.transpose %ar2, dims = [1, 0] : (tensor<16x8xi32>) -> tensor<8x16xi32>
  %ds2 = hlo.dynamic_slice %t [%rid, %zero] sizes = [1, 16] : (tensor<8x16xi32>, tensor<i32>, tensor<i32>) -> tensor<1x16xi32>
  func.return %ds, %ds2 : tensor<32x8x16xf32>, tensor<1x16xi32>
}
// CHECK-LABEL: func.func @dim2_transpose_max
// CHECK-NEXT:    %ds = collective.reduce_scatter add %p on @mesh["x"], dim = 2 : (tensor<32x8x128xf32>) -> tensor<32x8x16xf32>
// CHECK-NEXT:    %0 = hlo.transpose %q, dims = [1, 0]
// CHECK-NEXT:    %ds2 = collective.reduce_scatter max %0 on @mesh["x"], dim = 0 : (tensor<8x16xi32>) -> tensor<1x16xi32>
// CHECK-NEXT:    func.return %ds, %ds2

// -----

// XLA's AllReplicasWrongOffsets: the table does not give every device its own block
// (two devices take block 6). (XLA's table [0, ..., 6, 8] would be rewritten here:
// offset 32 is clamped to 28, the last block, as dynamic_slice does.)
spmd.mesh @mesh = <["x"=8]>
func.func @wrong_offsets(%p: tensor<32x8xf32>) -> tensor<4x8xf32> attributes {spmd.partitioned, spmd.per_device_io} {
  %ar = collective.all_reduce add %p on @mesh["x"] : tensor<32x8xf32>
  %table = hlo.constant dense<[0, 1, 2, 3, 4, 5, 6, 6]> : tensor<8xi32>
  %rid = spmd.axis_index @mesh["x"] : tensor<i32>
  %id = hlo.dynamic_slice %table [%rid] sizes = [1] : (tensor<8xi32>, tensor<i32>) -> tensor<1xi32>
  %reshape = hlo.reshape %id : (tensor<1xi32>) -> tensor<i32>
  %size = hlo.constant dense<4> : tensor<i32>
  %off = hlo.mul %reshape, %size : tensor<i32>
  %zero = hlo.constant dense<0> : tensor<i32>
  %ds = hlo.dynamic_slice %ar [%off, %zero] sizes = [4, 8] : (tensor<32x8xf32>, tensor<i32>, tensor<i32>) -> tensor<4x8xf32>
  func.return %ds : tensor<4x8xf32>
}
// CHECK-LABEL: func.func @wrong_offsets
// CHECK:         collective.all_reduce
// CHECK:         hlo.dynamic_slice
// CHECK-NOT:     collective.reduce_scatter

// -----

// XLA's SubgroupedReplicas: explicit groups, each device's rank read from a table.
spmd.mesh @mesh = <["x"=8]>
func.func @explicit_groups(%p: tensor<32x8xf32>) -> tensor<8x8xf32> attributes {spmd.partitioned, spmd.per_device_io} {
  %ar = collective.all_reduce add %p on groups [[1, 3, 2, 0], [4, 5, 6, 7]] : tensor<32x8xf32>
  %gtable = hlo.constant dense<[3, 0, 2, 1, 0, 1, 2, 3]> : tensor<8xi32>
  %rid = spmd.axis_index @mesh["x"] : tensor<i32>
  %id = hlo.dynamic_slice %gtable [%rid] sizes = [1] : (tensor<8xi32>, tensor<i32>) -> tensor<1xi32>
  %r0 = hlo.reshape %id : (tensor<1xi32>) -> tensor<i32>
  %table = hlo.constant dense<[0, 8, 16, 24]> : tensor<4xi32>
  %off = hlo.dynamic_slice %table [%r0] sizes = [1] : (tensor<4xi32>, tensor<i32>) -> tensor<1xi32>
  %r1 = hlo.reshape %off : (tensor<1xi32>) -> tensor<i32>
  %zero = hlo.constant dense<0> : tensor<i32>
  %ds = hlo.dynamic_slice %ar [%r1, %zero] sizes = [8, 8] : (tensor<32x8xf32>, tensor<i32>, tensor<i32>) -> tensor<8x8xf32>
  func.return %ds : tensor<8x8xf32>
}
// CHECK-LABEL: func.func @explicit_groups
// CHECK-NEXT:    %ds = collective.reduce_scatter add %p on groups {{\[}}[1, 3, 2, 0], [4, 5, 6, 7]], dim = 0
// CHECK-NEXT:    func.return %ds

// -----

// Groups over two mesh axes: the row-major shard index over ["a", "b"] is the rank. The
// minor-major index (a {"b", "a"} sharding) is the rank over ["b", "a"]: the same
// devices, ranked the other way. XLA's SubgroupsGlobalsNonOrthogonalReplicas (groups
// ranked differently from the all_reduce) is rewritten too, with explicit groups in the
// slice's order (floats then sum in another order).
spmd.mesh @mesh = <["a"=2, "b"=4]>
func.func @multi_axis(%p: tensor<16x8xf32>) -> (tensor<2x8xf32>, tensor<2x8xf32>, tensor<4x8xf32>) attributes {spmd.partitioned, spmd.per_device_io} {
  %a = spmd.axis_index @mesh["a"] : tensor<i32>
  %b = spmd.axis_index @mesh["b"] : tensor<i32>
  %c2 = hlo.constant dense<2> : tensor<i32>
  %c4 = hlo.constant dense<4> : tensor<i32>
  %zero = hlo.constant dense<0> : tensor<i32>
  %ar = collective.all_reduce add %p on @mesh["a", "b"] : tensor<16x8xf32>
  %am = hlo.mul %a, %c4 : tensor<i32>
  %ab = hlo.add %am, %b : tensor<i32>
  %off = hlo.mul %ab, %c2 : tensor<i32>
  %ds = hlo.dynamic_slice %ar [%off, %zero] sizes = [2, 8] : (tensor<16x8xf32>, tensor<i32>, tensor<i32>) -> tensor<2x8xf32>
  %ar2 = collective.all_reduce add %p on @mesh["a", "b"] : tensor<16x8xf32>
  %bm = hlo.mul %b, %c2 : tensor<i32>
  %ba = hlo.add %bm, %a : tensor<i32>
  %off2 = hlo.mul %ba, %c2 : tensor<i32>
  %ds2 = hlo.dynamic_slice %ar2 [%off2, %zero] sizes = [2, 8] : (tensor<16x8xf32>, tensor<i32>, tensor<i32>) -> tensor<2x8xf32>
  %ar3 = collective.all_reduce add %p on @mesh["b"] : tensor<16x8xf32>
  %rev = hlo.sub %c4, %b : tensor<i32>
  %c1 = hlo.constant dense<1> : tensor<i32>
  %rev1 = hlo.sub %rev, %c1 : tensor<i32>
  %off3 = hlo.mul %rev1, %c4 : tensor<i32>
  %ds3 = hlo.dynamic_slice %ar3 [%off3, %zero] sizes = [4, 8] : (tensor<16x8xf32>, tensor<i32>, tensor<i32>) -> tensor<4x8xf32>
  func.return %ds, %ds2, %ds3 : tensor<2x8xf32>, tensor<2x8xf32>, tensor<4x8xf32>
}
// CHECK-LABEL: func.func @multi_axis
// CHECK:         %ds = collective.reduce_scatter add %p on @mesh["a", "b"], dim = 0
// CHECK:         %ds2 = collective.reduce_scatter add %p on @mesh["b", "a"], dim = 0
// CHECK:         %ds3 = collective.reduce_scatter add %p on groups {{\[}}[3, 2, 1, 0], [7, 6, 5, 4]], dim = 0
// CHECK-NOT:     collective.all_reduce
// CHECK:         func.return %ds, %ds2, %ds3

// -----

// XLA's NonUniformSplit: 2 blocks of 3 out of 7 columns; the rest of the all_reduce is
// not needed, so the input is sliced first. A partial slice of another dimension at a
// device-independent offset is taken before the collective too (fewer bytes to move).
// XLA's SubtractionPatternWithTableLookup: offset = 16 * id - table[id].
spmd.mesh @mesh = <["x"=8]>
func.func @non_uniform(%p: tensor<1x7xf32>, %q: tensor<4x64x32xf32>) -> (tensor<1x3xf32>, tensor<4x16x8xf32>) attributes {spmd.partitioned, spmd.per_device_io} {
  %ar = collective.all_reduce add %p on groups [[0, 1], [2, 3], [4, 5], [6, 7]] : tensor<1x7xf32>
  %pid = spmd.axis_index @mesh["x"] : tensor<i32>
  %table = hlo.constant dense<[0, 1, 0, 1, 0, 1, 0, 1]> : tensor<8xi32>
  %t = hlo.dynamic_slice %table [%pid] sizes = [1] : (tensor<8xi32>, tensor<i32>) -> tensor<1xi32>
  %r = hlo.reshape %t : (tensor<1xi32>) -> tensor<i32>
  %c3 = hlo.constant dense<3> : tensor<i32>
  %off = hlo.mul %r, %c3 : tensor<i32>
  %zero = hlo.constant dense<0> : tensor<i32>
  %ds = hlo.dynamic_slice %ar [%zero, %off] sizes = [1, 3] : (tensor<1x7xf32>, tensor<i32>, tensor<i32>) -> tensor<1x3xf32>
  %ar2 = collective.all_reduce add %q on groups [[0, 1, 2, 3], [4, 5, 6, 7]] : tensor<4x64x32xf32>
  %table2 = hlo.constant dense<[0, 0, 0, 0, 64, 64, 64, 64]> : tensor<8xi32>
  %t2 = hlo.dynamic_slice %table2 [%pid] sizes = [1] : (tensor<8xi32>, tensor<i32>) -> tensor<1xi32>
  %r2 = hlo.reshape %t2 : (tensor<1xi32>) -> tensor<i32>
  %c16 = hlo.constant dense<16> : tensor<i32>
  %m = hlo.mul %pid, %c16 : tensor<i32>
  %off2 = hlo.sub %m, %r2 : tensor<i32>
  %c8 = hlo.constant dense<8> : tensor<i32>
  %ds2 = hlo.dynamic_slice %ar2 [%zero, %off2, %c8] sizes = [4, 16, 8] : (tensor<4x64x32xf32>, tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<4x16x8xf32>
  func.return %ds, %ds2 : tensor<1x3xf32>, tensor<4x16x8xf32>
}
// CHECK-LABEL: func.func @non_uniform
// CHECK:         %0 = hlo.slice %p [0:1, 0:6] : (tensor<1x7xf32>) -> tensor<1x6xf32>
// CHECK-NEXT:    %ds = collective.reduce_scatter add %0 on groups {{\[}}[0, 1], [2, 3], [4, 5], [6, 7]], dim = 1 : (tensor<1x6xf32>) -> tensor<1x3xf32>
// CHECK:         %1 = hlo.slice %q [0:4, 0:64, 8:16] : (tensor<4x64x32xf32>) -> tensor<4x64x8xf32>
// CHECK-NEXT:    %ds2 = collective.reduce_scatter add %1 on groups {{\[}}[0, 1, 2, 3], [4, 5, 6, 7]], dim = 1 : (tensor<4x64x8xf32>) -> tensor<4x16x8xf32>
// CHECK-NOT:     collective.all_reduce

// -----

// XLA's AllReduceFollowedByAllReduce: the scattered all_reduce becomes a reduce_scatter,
// the second all_reduce (of the slice) stays.
spmd.mesh @mesh = <["r"=2, "p"=8]>
func.func @followed_by_all_reduce(%p: tensor<32x8xf32>) -> tensor<4x8xf32> attributes {spmd.partitioned, spmd.per_device_io} {
  %ar = collective.all_reduce add %p on @mesh["p"] : tensor<32x8xf32>
  %pid = spmd.axis_index @mesh["p"] : tensor<i32>
  %c4 = hlo.constant dense<4> : tensor<i32>
  %off = hlo.mul %pid, %c4 : tensor<i32>
  %zero = hlo.constant dense<0> : tensor<i32>
  %ds = hlo.dynamic_slice %ar [%off, %zero] sizes = [4, 8] : (tensor<32x8xf32>, tensor<i32>, tensor<i32>) -> tensor<4x8xf32>
  %sync = collective.all_reduce add %ds on @mesh["r"] : tensor<4x8xf32>
  func.return %sync : tensor<4x8xf32>
}
// CHECK-LABEL: func.func @followed_by_all_reduce
// CHECK-NEXT:    %ds = collective.reduce_scatter add %p on @mesh["p"], dim = 0
// CHECK-NEXT:    %sync = collective.all_reduce add %ds on @mesh["r"]

// -----

// Left alone: the all_reduce (or the reshape) has another user; a static slice; an
// offset read from a function argument; a slice varying in two dimensions; a variadic
// all_reduce.
spmd.mesh @mesh = <["a"=2, "b"=2]>
func.func @no_change(%p: tensor<8x8xf32>, %k: tensor<i32>) -> (tensor<4x8xf32>, tensor<8x8xf32>, tensor<4x8xf32>, tensor<64xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x4xf32>, tensor<8x8xf32>) attributes {spmd.partitioned, spmd.per_device_io} {
  %a = spmd.axis_index @mesh["a"] : tensor<i32>
  %b = spmd.axis_index @mesh["b"] : tensor<i32>
  %c4 = hlo.constant dense<4> : tensor<i32>
  %zero = hlo.constant dense<0> : tensor<i32>
  %off = hlo.mul %a, %c4 : tensor<i32>
  %ar1 = collective.all_reduce add %p on @mesh["a"] : tensor<8x8xf32>
  %ds1 = hlo.dynamic_slice %ar1 [%off, %zero] sizes = [4, 8] : (tensor<8x8xf32>, tensor<i32>, tensor<i32>) -> tensor<4x8xf32>
  %ar2 = collective.all_reduce add %p on @mesh["a"] : tensor<8x8xf32>
  %r2 = hlo.reshape %ar2 : (tensor<8x8xf32>) -> tensor<64xf32>
  %ds2 = hlo.dynamic_slice %r2 [%off] sizes = [4] : (tensor<64xf32>, tensor<i32>) -> tensor<4xf32>
  %ar3 = collective.all_reduce add %p on @mesh["a"] : tensor<8x8xf32>
  %s3 = hlo.slice %ar3 [0:4, 0:8] : (tensor<8x8xf32>) -> tensor<4x8xf32>
  %ar4 = collective.all_reduce add %p on @mesh["a"] : tensor<8x8xf32>
  %ds4 = hlo.dynamic_slice %ar4 [%k, %zero] sizes = [4, 8] : (tensor<8x8xf32>, tensor<i32>, tensor<i32>) -> tensor<4x8xf32>
  %ar5 = collective.all_reduce add %p on @mesh["a", "b"] : tensor<8x8xf32>
  %boff = hlo.mul %b, %c4 : tensor<i32>
  %ds5 = hlo.dynamic_slice %ar5 [%off, %boff] sizes = [4, 4] : (tensor<8x8xf32>, tensor<i32>, tensor<i32>) -> tensor<4x4xf32>
  %ar6, %ar7 = collective.all_reduce add %p, %p on @mesh["a"] : tensor<8x8xf32>, tensor<8x8xf32>
  %ds6 = hlo.dynamic_slice %ar6 [%off, %zero] sizes = [4, 8] : (tensor<8x8xf32>, tensor<i32>, tensor<i32>) -> tensor<4x8xf32>
  func.return %ds1, %ar1, %s3, %r2, %ds4, %ds6, %ds5, %ar7 : tensor<4x8xf32>, tensor<8x8xf32>, tensor<4x8xf32>, tensor<64xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x4xf32>, tensor<8x8xf32>
}
// CHECK-LABEL: func.func @no_change
// CHECK-NOT:     collective.reduce_scatter
// CHECK:         func.return
