// RUN: shardc-opt %s -p spmd-propagate --split-input-file | filecheck %s
// RUN: shardc-opt %s -p 'spmd-propagate{op-priorities=off}' --split-input-file | filecheck %s --check-prefix=OFF

// Shardy's op priorities, after Shardy's op_priority_propagation tests (in a function with
// an open dimension, `op-priorities=auto` uses them): element-wise ops decide before a dot,
// pass-through factors before the others, a broadcast backward before forward.

// The element-wise adds carry the result's "a" on dim 1 back to the dot before the dot
// can carry %x's "a" on dim 0 forward.
spmd.mesh @mesh = <["a"=2, "b"=2]>
func.func @element_wise_over_dot(%x: tensor<8x8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"a", ?}, {?}]>},
                                 %y: tensor<8x8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{?}, {?}]>})
    -> (tensor<8x8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{?}, {"a", ?}]>}) {
  %d = hlo.dot %x, %y, contracting_dims = [1] x [0] : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %s = hlo.add %d, %d : tensor<8x8xf32>
  %t = hlo.add %s, %s : tensor<8x8xf32>
  func.return %t : tensor<8x8xf32>
}
// CHECK-LABEL: func.func @element_wise_over_dot
// CHECK-SAME:  %x: tensor<8x8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"a"}, {}]>}
// CHECK-SAME:  %y: tensor<8x8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{}, {"a"}]>}
// CHECK-SAME:  -> (tensor<8x8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{}, {"a"}]>})
// CHECK:       %d = hlo.dot {{.*}} {spmd.sharding = #spmd.sharding<@mesh, [{}, {"a"}]>}
// Without priorities the dot, first in the block, takes %x's "a" on dim 0.
// OFF-LABEL:   func.func @element_wise_over_dot
// OFF:         %d = hlo.dot {{.*}} {spmd.sharding = #spmd.sharding<@mesh, [{"a"}, {}]>}

// -----

// A dot's pass-through (batch) factor before its other factors: %y's "b" on the batch
// dimension reaches the result before %x's "b" on the non-contracting one.
spmd.mesh @mesh = <["a"=2, "b"=2]>
func.func @pass_through_first(%x: tensor<4x8x16xf32> {spmd.sharding = #spmd.sharding<@mesh, [{?}, {"b", ?}, {?}]>},
                              %y: tensor<4x16x8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"b", ?}, {?}, {?}]>})
    -> (tensor<4x8x8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{?}, {?}, {?}]>}) {
  %d = hlo.dot %x, %y, batching_dims = [0] x [0], contracting_dims = [2] x [1] : (tensor<4x8x16xf32>, tensor<4x16x8xf32>) -> tensor<4x8x8xf32>
  func.return %d : tensor<4x8x8xf32>
}
// CHECK-LABEL: func.func @pass_through_first
// CHECK:       %d = hlo.dot {{.*}} {spmd.sharding = #spmd.sharding<@mesh, [{"b"}, {}, {}]>}

// -----

// A broadcast propagates backward (from its result) before forward: the result's "a" on
// dim 1 wins over the argument's "a" on dim 0.
spmd.mesh @mesh = <["a"=2]>
func.func @broadcast_backward_first(%x: tensor<32xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"a", ?}]>})
    -> (tensor<32x16x8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{?}, {"a", ?}, {?}]>}) {
  %b = hlo.broadcast %x, dims = [0] : (tensor<32xf32>) -> tensor<32x16xf32>
  %c = hlo.broadcast %b, dims = [0, 1] : (tensor<32x16xf32>) -> tensor<32x16x8xf32>
  func.return %c : tensor<32x16x8xf32>
}
// CHECK-LABEL: func.func @broadcast_backward_first
// CHECK:       %b = hlo.broadcast {{.*}} {spmd.sharding = #spmd.sharding<@mesh, [{}, {"a"}]>}
// CHECK:       %c = hlo.broadcast {{.*}} {spmd.sharding = #spmd.sharding<@mesh, [{}, {"a"}, {}]>}
