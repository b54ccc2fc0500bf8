// RUN: shardc-opt %s -p spmd-propagate,spmd-partition,canonicalize,cse --split-input-file | filecheck %s

// sort: the sorted dimension 1 is all-gathered for every operand (its factor cannot be
// split), dimension 0 keeps its sharding: each device sorts its own rows.
spmd.mesh @mesh = <["a"=2, "b"=2]>
func.func @sort(%x: tensor<8x4xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"a"}, {"b"}]>}, %y: tensor<8x4xi32> {spmd.sharding = #spmd.sharding<@mesh, [{"a"}, {"b"}]>})
    -> (tensor<8x4xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"a"}, {}]>}, tensor<8x4xi32> {spmd.sharding = #spmd.sharding<@mesh, [{"a"}, {}]>}) {
  %s, %p = hlo.sort %x, %y, dim = 1, comparator = LT, stable : (tensor<8x4xf32>, tensor<8x4xi32>) -> (tensor<8x4xf32>, tensor<8x4xi32>)
  func.return %s, %p : tensor<8x4xf32>, tensor<8x4xi32>
}
// CHECK:      func.func @sort(%x: tensor<4x2xf32> {{.*}}, %y: tensor<4x2xi32> {{.*}}) -> (tensor<4x4xf32> {{.*}}, tensor<4x4xi32> {{.*}}) attributes {spmd.partitioned} {
// CHECK-NEXT:   %0 = collective.all_gather %x on @mesh["b"], dim = 1 : (tensor<4x2xf32>) -> tensor<4x4xf32>
// CHECK-NEXT:   %1 = collective.all_gather %y on @mesh["b"], dim = 1 : (tensor<4x2xi32>) -> tensor<4x4xi32>
// CHECK-NEXT:   %s, %p = hlo.sort %0, %1, dim = 1, comparator = LT, stable : (tensor<4x4xf32>, tensor<4x4xi32>) -> (tensor<4x4xf32>, tensor<4x4xi32>)
// CHECK-NEXT:   func.return %s, %p : tensor<4x4xf32>, tensor<4x4xi32>

// -----

// top_k: the last dimension is computed whole; the batch dimension keeps its sharding
// (values and indices alike), and a result wanted split along k is sliced locally.
spmd.mesh @mesh = <["a"=2, "b"=2]>
func.func @top_k(%x: tensor<8x6xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"a"}, {"b"}]>})
    -> (tensor<8x2xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"a"}, {}]>}, tensor<8x2xi32> {spmd.sharding = #spmd.sharding<@mesh, [{"a"}, {"b"}]>}) {
  %v, %i = hlo.top_k %x, k = 2 : tensor<8x6xf32> -> (tensor<8x2xf32>, tensor<8x2xi32>)
  func.return %v, %i : tensor<8x2xf32>, tensor<8x2xi32>
}
// CHECK:      func.func @top_k(%x: tensor<4x3xf32> {{.*}}) -> (tensor<4x2xf32> {{.*}}, tensor<4x1xi32> {{.*}}) attributes {spmd.partitioned} {
// CHECK-NEXT:   %0 = collective.all_gather %x on @mesh["b"], dim = 1 : (tensor<4x3xf32>) -> tensor<4x6xf32>
// CHECK-NEXT:   %v, %i = hlo.top_k %0, k = 2 : tensor<4x6xf32> -> (tensor<4x2xf32>, tensor<4x2xi32>)
// CHECK:        %{{.*}} = hlo.dynamic_slice %i
// CHECK-NOT:    collective.
// CHECK:        func.return %v, %{{.*}} : tensor<4x2xf32>, tensor<4x1xi32>
