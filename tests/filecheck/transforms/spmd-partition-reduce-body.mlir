// RUN: shardc-opt %s -p "spmd-propagate,spmd-partition{cost-based=false},canonicalize,cse" --split-input-file | filecheck %s
// The partitioning rules as written (cost-based=false): at these tiny sizes the cost model
// prefers gathering operands to latency-bound all_reduces (spmd-partition-cost.mlir).

// argmax over a split dimension (1, on "b"): each device reduces its block (the iota
// offset by its block start gives global indices), the partial values and indices are
// all-gathered along "b" on a new leading dimension and reduced again with the same body
// and inits, so ties still go to the lowest index. Dimension 0 keeps its sharding.
spmd.mesh @mesh = <["a"=2, "b"=2]>
func.func @argmax(%v: tensor<4x8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"a"}, {"b"}]>})
    -> (tensor<4xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"a"}]>}, tensor<4xi32> {spmd.sharding = #spmd.sharding<@mesh, [{"a"}]>}) {
  %v0 = hlo.constant dense<0xFF800000> : tensor<f32>
  %i0 = hlo.constant dense<0> : tensor<i32>
  %i = hlo.iota dim = 1 : tensor<4x8xi32>
  %r:2 = hlo.reduce(%v init: %v0), (%i init: %i0) across dims = [1] : (tensor<4x8xf32>, tensor<4x8xi32>, tensor<f32>, tensor<i32>) -> (tensor<4xf32>, tensor<4xi32>) reducer(%a: tensor<f32>, %b: tensor<f32>) (%c: tensor<i32>, %d: tensor<i32>) {
    %gt = hlo.compare GT, %a, %b : (tensor<f32>, tensor<f32>) -> tensor<i1>
    %eq = hlo.compare EQ, %a, %b : (tensor<f32>, tensor<f32>) -> tensor<i1>
    %lt = hlo.compare LT, %c, %d : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %tie = hlo.and %eq, %lt : tensor<i1>
    %keep = hlo.or %gt, %tie : tensor<i1>
    %x = hlo.select %keep, %a, %b : tensor<i1>, tensor<f32>
    %y = hlo.select %keep, %c, %d : tensor<i1>, tensor<i32>
    hlo.return %x, %y : tensor<f32>, tensor<i32>
  }
  func.return %r#0, %r#1 : tensor<4xf32>, tensor<4xi32>
}
// CHECK:      func.func @argmax(%v: tensor<2x4xf32> {{.*}}) -> (tensor<2xf32> {{.*}}, tensor<2xi32> {{.*}}) attributes {spmd.partitioned} {
// CHECK:        %[[IDX:.*]] = hlo.add %i, %{{.*}} : tensor<2x4xi32>
// CHECK-NEXT:   %r, %r_1 = hlo.reduce(%v init: %v0), (%[[IDX]] init: %i0) across dims = [1] : (tensor<2x4xf32>, tensor<2x4xi32>, tensor<f32>, tensor<i32>) -> (tensor<2xf32>, tensor<2xi32>) reducer(%a: tensor<f32>, %b: tensor<f32>) (%c: tensor<i32>, %d: tensor<i32>) {
// CHECK:        %[[V:.*]] = hlo.reshape %r : (tensor<2xf32>) -> tensor<1x2xf32>
// CHECK-NEXT:   %[[VS:.*]] = collective.all_gather %[[V]] on @mesh["b"], dim = 0 : (tensor<1x2xf32>) -> tensor<2x2xf32>
// CHECK-NEXT:   %[[I:.*]] = hlo.reshape %r_1 : (tensor<2xi32>) -> tensor<1x2xi32>
// CHECK-NEXT:   %[[IS:.*]] = collective.all_gather %[[I]] on @mesh["b"], dim = 0 : (tensor<1x2xi32>) -> tensor<2x2xi32>
// CHECK-NEXT:   %[[RV:.*]], %[[RI:.*]] = hlo.reduce(%[[VS]] init: %v0), (%[[IS]] init: %i0) across dims = [0] : (tensor<2x2xf32>, tensor<2x2xi32>, tensor<f32>, tensor<i32>) -> (tensor<2xf32>, tensor<2xi32>) reducer
// CHECK:        hlo.return
// CHECK-NEXT:   }
// CHECK-NEXT:   func.return %[[RV]], %[[RI]] : tensor<2xf32>, tensor<2xi32>

// -----

// argmax along an unsplit dimension: no communication, each device its rows.
spmd.mesh @mesh = <["a"=4]>
func.func @rows(%v: tensor<8x6xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"a"}, {}]>}, %i: tensor<8x6xi32> {spmd.sharding = #spmd.sharding<@mesh, [{"a"}, {}]>})
    -> (tensor<8xi32> {spmd.sharding = #spmd.sharding<@mesh, [{"a"}]>}) {
  %v0 = hlo.constant dense<0xFF800000> : tensor<f32>
  %i0 = hlo.constant dense<0> : tensor<i32>
  %r:2 = hlo.reduce(%v init: %v0), (%i init: %i0) across dims = [1] : (tensor<8x6xf32>, tensor<8x6xi32>, tensor<f32>, tensor<i32>) -> (tensor<8xf32>, tensor<8xi32>) reducer(%a: tensor<f32>, %b: tensor<f32>) (%c: tensor<i32>, %d: tensor<i32>) {
    %ge = hlo.compare GE, %a, %b : (tensor<f32>, tensor<f32>) -> tensor<i1>
    %x = hlo.select %ge, %a, %b : tensor<i1>, tensor<f32>
    %y = hlo.select %ge, %c, %d : tensor<i1>, tensor<i32>
    hlo.return %x, %y : tensor<f32>, tensor<i32>
  }
  func.return %r#1 : tensor<8xi32>
}
// CHECK:      func.func @rows(%v: tensor<2x6xf32> {{.*}}, %i: tensor<2x6xi32> {{.*}}) -> (tensor<2xi32> {{.*}}) attributes {spmd.partitioned} {
// CHECK-NOT:    collective
// CHECK:        func.return %r_1 : tensor<2xi32>
