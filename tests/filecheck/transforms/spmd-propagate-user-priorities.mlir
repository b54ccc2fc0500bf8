// RUN: shardc-opt %s -p spmd-propagate --split-input-file | filecheck %s
// RUN: not shardc-opt %s -p spmd-partition --split-input-file 2>&1 | filecheck %s --check-prefix=REFUSE

// Shardy's user priorities (`{"a"}p1`), after Shardy's user_priority_propagation tests (an
// `sdy.sharding` on an op is a constraint after it here): propagation runs once per
// priority, lowest first (no priority is p0); until its turn a dimension of a later
// priority is unsplit and decides nothing; after propagation no priority is left.

// p4's "b" comes after p1's "c" reached dim 1 of everything else: %arg0 keeps its "b".
spmd.mesh @mesh = <["a"=2, "b"=2, "c"=2]>
func.func @skipped_priorities(%arg0: tensor<8x8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"a"}, {"b"}p4]>},
    %arg1: tensor<8x8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{?}, {?}]>},
    %arg2: tensor<8x8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{?}, {?}]>})
    -> (tensor<8x8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{?}, {?}]>}) {
  %0 = hlo.add %arg0, %arg1 : tensor<8x8xf32>
  %1 = hlo.div %0, %arg2 : tensor<8x8xf32>
  %2 = spmd.constraint %1 <@mesh, [{?}, {"c", ?}p1]> : tensor<8x8xf32>
  func.return %2 : tensor<8x8xf32>
}
// CHECK-LABEL: func.func @skipped_priorities
// CHECK-SAME:  %arg0: tensor<8x8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"a"}, {"b"}]>}
// CHECK-SAME:  %arg1: tensor<8x8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"a"}, {"c"}]>}
// CHECK-SAME:  %arg2: tensor<8x8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"a"}, {"c"}]>}
// CHECK-SAME:  -> (tensor<8x8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"a"}, {"c"}]>})
// CHECK:       %0 = hlo.add {{.*}} {spmd.sharding = #spmd.sharding<@mesh, [{"a"}, {"c"}]>}
// CHECK:       %2 = spmd.constraint %1 <@mesh, [{"a"}, {"c"}]>
// REFUSE: spmd-propagate-user-priorities.mlir:11:1: error: 'func.func' op spmd-partition: the sharding of argument 0 has a user priority (`p<N>`), which spmd-propagate uses: run spmd-propagate first

// -----

// The argument's p1 dimensions come after the result constraint's p0 "c": "c" reaches
// dim 0 of every value first, then "b" dim 1; the argument keeps its own "a".
spmd.mesh @mesh = <["a"=2, "b"=2, "c"=2]>
func.func @arg_lower_priority_than_return_value(
    %arg0: tensor<8x8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"a", ?}p1, {"b"}p1]>},
    %arg1: tensor<8x8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{?}, {?}]>},
    %arg2: tensor<8x8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{?}, {?}]>},
    %arg3: tensor<8x8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{?}, {?}]>})
    -> (tensor<8x8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{?}, {?}]>}) {
  %0 = hlo.add %arg0, %arg1 : tensor<8x8xf32>
  %1 = hlo.add %0, %arg2 : tensor<8x8xf32>
  %2 = hlo.div %1, %arg3 : tensor<8x8xf32>
  %3 = spmd.constraint %2 <@mesh, [{"c"}p0, {?}]> : tensor<8x8xf32>
  func.return %3 : tensor<8x8xf32>
}
// CHECK-LABEL: func.func @arg_lower_priority_than_return_value
// CHECK-SAME:  %arg0: tensor<8x8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"a"}, {"b"}]>}
// CHECK-SAME:  %arg1: tensor<8x8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"c"}, {"b"}]>}
// CHECK-SAME:  %arg3: tensor<8x8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"c"}, {"b"}]>}
// CHECK-SAME:  -> (tensor<8x8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"c"}, {"b"}]>})
// CHECK:       %0 = hlo.add {{.*}} {spmd.sharding = #spmd.sharding<@mesh, [{"c"}, {"b"}]>}
// CHECK:       %3 = spmd.constraint %2 <@mesh, [{"c"}, {"b"}]>

// -----

// The result's p0 shardings before the argument's p1 "c": every value takes "a", "b".
spmd.mesh @mesh = <["a"=2, "b"=2, "c"=2]>
func.func @result_higher_priority_than_arg(
    %arg0: tensor<8x8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"c", ?}p1, {?}]>},
    %arg1: tensor<8x8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{?}, {?}]>},
    %arg2: tensor<8x8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{?}, {?}]>},
    %arg3: tensor<8x8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{?}, {?}]>})
    -> (tensor<8x8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"a"}p0, {"b"}p0]>}) {
  %0 = hlo.add %arg0, %arg1 : tensor<8x8xf32>
  %1 = hlo.add %0, %arg2 : tensor<8x8xf32>
  %2 = hlo.div %1, %arg3 : tensor<8x8xf32>
  func.return %2 : tensor<8x8xf32>
}
// CHECK-LABEL: func.func @result_higher_priority_than_arg
// CHECK-SAME:  %arg0: tensor<8x8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"c"}, {"b"}]>}
// CHECK-SAME:  %arg1: tensor<8x8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"a"}, {"b"}]>}
// CHECK-SAME:  -> (tensor<8x8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"a"}, {"b"}]>})
// CHECK:       %0 = hlo.add {{.*}} {spmd.sharding = #spmd.sharding<@mesh, [{"a"}, {"b"}]>}

// -----

// A p0 dimension further split by a p0 constraint ("b" then "a"), and "c" from another
// p0 constraint, before the argument's p1 "b".
spmd.mesh @mesh = <["a"=2, "b"=2, "c"=2]>
func.func @dim_with_lower_priority_gets_further_sharded_by_higher(
    %arg0: tensor<8x8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"b", ?}p1, {}]>},
    %arg1: tensor<8x8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{?}, {?}]>},
    %arg2: tensor<8x8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{?}, {?}]>},
    %arg3: tensor<8x8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{?}, {?}]>})
    -> (tensor<8x8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{?}, {?}]>},
        tensor<8x8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{?}, {?}]>}) {
  %0 = hlo.add %arg0, %arg1 : tensor<8x8xf32>
  %1 = hlo.add %arg0, %arg2 : tensor<8x8xf32>
  %c1 = spmd.constraint %1 <@mesh, [{"b", "a", ?}p0, {}]> : tensor<8x8xf32>
  %2 = hlo.div %0, %arg3 : tensor<8x8xf32>
  %c2 = spmd.constraint %2 <@mesh, [{"c", ?}p0, {}]> : tensor<8x8xf32>
  func.return %c1, %c2 : tensor<8x8xf32>, tensor<8x8xf32>
}
// CHECK-LABEL: func.func @dim_with_lower_priority_gets_further_sharded_by_higher
// CHECK-SAME:  %arg0: tensor<8x8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"b", "a"}, {}]>}
// CHECK-SAME:  %arg1: tensor<8x8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"c"}, {}]>}
// CHECK-SAME:  %arg2: tensor<8x8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"b", "a"}, {}]>}
// CHECK:       %0 = hlo.add {{.*}} {spmd.sharding = #spmd.sharding<@mesh, [{"c"}, {}]>}
// CHECK:       %1 = hlo.add {{.*}} {spmd.sharding = #spmd.sharding<@mesh, [{"b", "a"}, {}]>}

// -----

// Batch parallelism + ZeRO: the activations' p0 "a" on the batch decides the dot before
// the weight's p1 "a" (which then conflicts and is resharded by spmd-partition).
spmd.mesh @mesh = <["a"=2, "b"=2, "c"=2]>
func.func @different_priorities_from_args(
    %arg0: tensor<8x8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"a"}p0, {?}]>},
    %arg1: tensor<8x8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{?}, {?}]>},
    %arg2: tensor<8x16xf32> {spmd.sharding = #spmd.sharding<@mesh, [{?}, {"a"}p1]>})
    -> (tensor<8x16xf32> {spmd.sharding = #spmd.sharding<@mesh, [{?}, {?}]>}) {
  %0 = hlo.add %arg0, %arg1 : tensor<8x8xf32>
  %1 = hlo.dot %0, %arg2, contracting_dims = [1] x [0] : (tensor<8x8xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
  func.return %1 : tensor<8x16xf32>
}
// CHECK-LABEL: func.func @different_priorities_from_args
// CHECK-SAME:  %arg0: tensor<8x8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"a"}, {}]>}
// CHECK-SAME:  %arg1: tensor<8x8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"a"}, {}]>}
// CHECK-SAME:  %arg2: tensor<8x16xf32> {spmd.sharding = #spmd.sharding<@mesh, [{}, {"a"}]>}
// CHECK-SAME:  -> (tensor<8x16xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"a"}, {}]>})
// CHECK:       %1 = hlo.dot {{.*}} {spmd.sharding = #spmd.sharding<@mesh, [{"a"}, {}]>}
