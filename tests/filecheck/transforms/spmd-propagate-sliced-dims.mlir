// RUN: shardc-opt %s -p spmd-propagate --split-input-file | filecheck %s
// RUN: shardc-opt %s -p 'spmd-propagate{sliced-dims=off}' --split-input-file | filecheck %s --check-prefix=OFF
// RUN: shardc-opt %s -p spmd-propagate,spmd-partition,canonicalize,cse --split-input-file | filecheck %s --check-prefix=PART

// Propagation through sliced dimensions where Shardy does it (its non-conservative rules in
// op_sharding_rule_registry.cc: a slice's sliced, a pad's padded and a concatenate's
// concatenated dimension are permutation factors; a dynamic_slice's sliced dimension is
// no factor). `sliced-dims=auto` applies it where op priorities apply (a function with an
// open dimension or a user priority, as shardc-import writes a Shardy module). The
// partitioner still computes such a dimension whole, and reshards.

// A slice: the argument's "b" on the sliced dimension 1 reaches the result, forward.
spmd.mesh @mesh = <["a"=2, "b"=2]>
func.func @slice_forward(%x: tensor<8x16xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"a", ?}, {"b", ?}]>})
    -> (tensor<8x8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{?}, {?}]>}) {
  %s = hlo.slice %x [0:8, 4:12] : (tensor<8x16xf32>) -> tensor<8x8xf32>
  func.return %s : tensor<8x8xf32>
}
// CHECK-LABEL: func.func @slice_forward
// CHECK-SAME:  -> (tensor<8x8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"a"}, {"b"}]>})
// CHECK:       %s = hlo.slice {{.*}} {spmd.sharding = #spmd.sharding<@mesh, [{"a"}, {"b"}]>}
// OFF-LABEL:   func.func @slice_forward
// OFF:         %s = hlo.slice {{.*}} {spmd.sharding = #spmd.sharding<@mesh, [{"a"}, {}]>}
// The sliced dimension is computed whole: gathered, sliced, then split again locally.
// PART-LABEL:  func.func @slice_forward
// PART-SAME:   %x: tensor<4x8xf32>
// PART:        collective.all_gather
// PART:        hlo.slice
// PART:        hlo.dynamic_slice
// PART:        -> tensor<4x4xf32>

// -----

// And backward: the result's "b" on the sliced dimension reaches the open argument.
spmd.mesh @mesh = <["a"=2, "b"=2]>
func.func @slice_backward(%x: tensor<8x16xf32> {spmd.sharding = #spmd.sharding<@mesh, [{?}, {?}]>})
    -> (tensor<8x8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{}, {"b"}]>}) {
  %s = hlo.slice %x [0:8, 0:16:2] : (tensor<8x16xf32>) -> tensor<8x8xf32>
  func.return %s : tensor<8x8xf32>
}
// CHECK-LABEL: func.func @slice_backward
// CHECK-SAME:  %x: tensor<8x16xf32> {spmd.sharding = #spmd.sharding<@mesh, [{}, {"b"}]>}
// OFF-LABEL:   func.func @slice_backward
// OFF-SAME:    %x: tensor<8x16xf32> {spmd.sharding = #spmd.sharding<@mesh, [{}, {}]>}

// -----

// A pad's padded dimension (edge and interior padding) carries the split; the padding
// value (rank 0) none.
spmd.mesh @mesh = <["a"=2, "b"=2]>
func.func @pad(%x: tensor<8x6xf32> {spmd.sharding = #spmd.sharding<@mesh, [{?}, {"b", ?}]>}, %v: tensor<f32>)
    -> (tensor<8x12xf32> {spmd.sharding = #spmd.sharding<@mesh, [{?}, {?}]>}) {
  %p = hlo.pad %x, %v, low = [0, 1], high = [0, 0], interior = [0, 1] : (tensor<8x6xf32>, tensor<f32>) -> tensor<8x12xf32>
  func.return %p : tensor<8x12xf32>
}
// CHECK-LABEL: func.func @pad
// CHECK:       %p = hlo.pad {{.*}} {spmd.sharding = #spmd.sharding<@mesh, [{}, {"b"}]>}
// OFF-LABEL:   func.func @pad
// OFF:         %p = hlo.pad {{.*}} {spmd.sharding = #spmd.sharding<@mesh, [{}, {}]>}

// -----

// A concatenate's concatenated dimension: the result's "a" reaches both operands.
spmd.mesh @mesh = <["a"=2, "b"=2]>
func.func @concatenate(%x: tensor<8x4xf32> {spmd.sharding = #spmd.sharding<@mesh, [{?}, {?}]>},
                       %y: tensor<4x4xf32> {spmd.sharding = #spmd.sharding<@mesh, [{?}, {?}]>})
    -> (tensor<12x4xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"a"}, {?}]>}) {
  %c = hlo.concatenate %x, %y, dim = 0 : (tensor<8x4xf32>, tensor<4x4xf32>) -> tensor<12x4xf32>
  func.return %c : tensor<12x4xf32>
}
// CHECK-LABEL: func.func @concatenate
// CHECK-SAME:  %x: tensor<8x4xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"a"}, {}]>}
// CHECK-SAME:  %y: tensor<4x4xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"a"}, {}]>}
// OFF-LABEL:   func.func @concatenate
// OFF-SAME:    %x: tensor<8x4xf32> {spmd.sharding = #spmd.sharding<@mesh, [{}, {}]>}

// -----

// A dynamic_slice's sliced dimension is no factor (Shardy: its start is not static), with
// sliced-dims or without.
spmd.mesh @mesh = <["a"=2, "b"=2]>
func.func @dynamic_slice(%x: tensor<8x16xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"a", ?}, {"b", ?}]>}, %i: tensor<i32>)
    -> (tensor<8x8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{?}, {?}]>}) {
  %s = hlo.dynamic_slice %x [%i, %i] sizes = [8, 8] : (tensor<8x16xf32>, tensor<i32>, tensor<i32>) -> tensor<8x8xf32>
  func.return %s : tensor<8x8xf32>
}
// CHECK-LABEL: func.func @dynamic_slice
// CHECK:       %s = hlo.dynamic_slice {{.*}} {spmd.sharding = #spmd.sharding<@mesh, [{"a"}, {}]>}

// -----

// Closed programs (no open dimension, no priority) propagate as before: no sliced-dimension
// propagation under `auto`.
spmd.mesh @mesh = <["a"=2, "b"=2]>
func.func @closed(%x: tensor<8x16xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"a"}, {"b"}]>}) -> tensor<8x8xf32> {
  %s = hlo.slice %x [0:8, 4:12] : (tensor<8x16xf32>) -> tensor<8x8xf32>
  %t = hlo.neg %s : tensor<8x8xf32>
  func.return %t : tensor<8x8xf32>
}
// CHECK-LABEL: func.func @closed
// CHECK:       %s = hlo.slice {{.*}} {spmd.sharding = #spmd.sharding<@mesh, [{"a"}, {}]>}
