// RUN: shardc-opt %s -p 'spmd-propagate{explain=true}' --split-input-file | filecheck %s

// Open dimensions (Shardy's `{"a", ?}` / `{?}`), in the spirit of Shardy's propagation
// tests: an open dimension is extended by propagation, a closed one is not, and none is
// left open afterwards.

// An open dimension is extended (axes appended) from a neighbour; the closed argument is
// not touched.
spmd.mesh @mesh = <["a"=2, "b"=2]>
func.func @open_extended(%x: tensor<8x8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"a", ?}, {?}]>},
                         %y: tensor<8x8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"a", "b"}, {}]>})
    -> (tensor<8x8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{?}, {?}]>}) {
  %s = hlo.add %x, %y : tensor<8x8xf32>
  func.return %s : tensor<8x8xf32>
}
// CHECK-LABEL: func.func @open_extended
// CHECK-SAME:  %x: tensor<8x8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"a", "b"}, {}]>}
// CHECK-SAME:  %y: tensor<8x8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"a", "b"}, {}]>}
// CHECK-SAME:  -> (tensor<8x8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"a", "b"}, {}]>})
// CHECK:       %s = hlo.add {{.*}} {spmd.sharding = #spmd.sharding<@mesh, [{"a", "b"}, {}]>
// CHECK-NOT:   ?}

// -----

// The same program with closed dimensions: the annotation is kept as written (today's
// behaviour, and Shardy's for a closed dimension); the add follows the bigger operand.
spmd.mesh @mesh = <["a"=2, "b"=2]>
func.func @closed_kept(%x: tensor<8x8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"a"}, {}]>},
                       %y: tensor<8x8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"a", "b"}, {}]>})
    -> tensor<8x8xf32> {
  %s = hlo.add %x, %y : tensor<8x8xf32>
  func.return %s : tensor<8x8xf32>
}
// CHECK-LABEL: func.func @closed_kept
// CHECK-SAME:  %x: tensor<8x8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"a"}, {}]>}
// CHECK-SAME:  -> (tensor<8x8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{}, {}]>})

// -----

// An argument open in every dimension (how the importer writes Shardy's unannotated
// arguments) takes its sharding backward from a constraint; an unannotated argument of a
// hand-written function stays replicated.
spmd.mesh @mesh = <["x"=4]>
func.func @unannotated(%open: tensor<8x4xf32> {spmd.sharding = #spmd.sharding<@mesh, [{?}, {?}]>},
                       %none: tensor<8x4xf32>)
    -> (tensor<8x4xf32>, tensor<8x4xf32>) {
  %e = hlo.exp %open : tensor<8x4xf32>
  %c = spmd.constraint %e <@mesh, [{"x"}, {}]> : tensor<8x4xf32>
  %f = hlo.exp %none : tensor<8x4xf32>
  %d = spmd.constraint %f <@mesh, [{"x"}, {}]> : tensor<8x4xf32>
  func.return %c, %d : tensor<8x4xf32>, tensor<8x4xf32>
}
// CHECK-LABEL: func.func @unannotated
// CHECK-SAME:  %open: tensor<8x4xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"x"}, {}]>}
// CHECK-SAME:  %none: tensor<8x4xf32> {spmd.sharding = #spmd.sharding<@mesh, [{}, {}]>}
// CHECK:       %e = hlo.exp %open {spmd.sharding = #spmd.sharding<@mesh, [{"x"}, {}]>
// CHECK:       %f = hlo.exp %none {spmd.sharding = #spmd.sharding<@mesh, [{}, {}]>

// -----

// An open dimension that nothing constrains is closed as it is.
spmd.mesh @mesh = <["a"=2, "b"=2]>
func.func @closed_as_is(%x: tensor<8x8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"a", ?}, {?}]>})
    -> tensor<8x8xf32> {
  %e = hlo.exp %x : tensor<8x8xf32>
  func.return %e : tensor<8x8xf32>
}
// CHECK-LABEL: func.func @closed_as_is
// CHECK-SAME:  %x: tensor<8x8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"a"}, {}]>}

// -----

// An open result is extended through a transpose from the closed dimension of an open
// argument (and the argument's own open dimension is closed as it is).
spmd.mesh @mesh = <["a"=2, "b"=2]>
func.func @open_result(%x: tensor<8x8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"a", ?}, {"b"}]>})
    -> (tensor<8x8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"b", ?}, {?}]>}) {
  %t = hlo.transpose %x, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
  func.return %t : tensor<8x8xf32>
}
// CHECK-LABEL: func.func @open_result
// CHECK-SAME:  %x: tensor<8x8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"a"}, {"b"}]>}
// CHECK-SAME:  -> (tensor<8x8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"b"}, {"a"}]>})
// CHECK:       %t = hlo.transpose {{.*}} {spmd.sharding = #spmd.sharding<@mesh, [{"b"}, {"a"}]>

// -----

// An open constraint is extended like an argument and written closed afterwards.
spmd.mesh @mesh = <["a"=2, "b"=2]>
func.func @open_constraint(%x: tensor<8x8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{}, {"b"}]>})
    -> tensor<8x8xf32> {
  %c = spmd.constraint %x <@mesh, [{"a", ?}, {?}]> : tensor<8x8xf32>
  %e = hlo.exp %c : tensor<8x8xf32>
  func.return %e : tensor<8x8xf32>
}
// CHECK-LABEL: func.func @open_constraint
// CHECK:       %c = spmd.constraint %x <@mesh, [{"a"}, {"b"}]>
