// RUN: shardc-opt %s -p spmd-propagate,spmd-partition,canonicalize,cse --split-input-file | filecheck %s

// while: the carried value keeps the operand's sharding (rows on "x") in both regions and
// in the result; the body's dot, whose weights are split on their columns by "y", gathers
// its output inside the body (every iteration); the counter and the predicate are
// replicated; the unannotated function result is gathered once, after the loop.
spmd.mesh @mesh = <["x"=2, "y"=2]>
func.func @while(%a: tensor<8x4xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"x"}, {}]>}, %w: tensor<4x4xf32> {spmd.sharding = #spmd.sharding<@mesh, [{}, {"y"}]>}) -> tensor<8x4xf32> {
  %c0 = hlo.constant dense<0> : tensor<i32>
  %r:2 = hlo.while(%i = %c0, %x = %a) : tensor<i32>, tensor<8x4xf32> cond {
    %n = hlo.constant dense<3> : tensor<i32>
    %p = hlo.compare LT, %i, %n : (tensor<i32>, tensor<i32>) -> tensor<i1>
    hlo.return %p : tensor<i1>
  } do {
    %one = hlo.constant dense<1> : tensor<i32>
    %i1 = hlo.add %i, %one : tensor<i32>
    %y = hlo.dot %x, %w, contracting_dims = [1] x [0] : (tensor<8x4xf32>, tensor<4x4xf32>) -> tensor<8x4xf32>
    %x1 = hlo.tanh %y : tensor<8x4xf32>
    hlo.return %i1, %x1 : tensor<i32>, tensor<8x4xf32>
  }
  func.return %r#1 : tensor<8x4xf32>
}
// CHECK:      func.func @while(%a: tensor<4x4xf32> {{.*}}, %w: tensor<4x2xf32> {{.*}}) -> (tensor<8x4xf32> {{.*}}) attributes {spmd.partitioned} {
// CHECK-NEXT:   %c0 = hlo.constant dense<0> : tensor<i32>
// CHECK-NEXT:   %r, %r_1 = hlo.while(%i = %c0, %x = %a) : tensor<i32>, tensor<4x4xf32> cond {
// CHECK-NEXT:     %n = hlo.constant dense<3> : tensor<i32>
// CHECK-NEXT:     %p = hlo.compare LT, %i, %n : (tensor<i32>, tensor<i32>) -> tensor<i1>
// CHECK-NEXT:     hlo.return %p : tensor<i1>
// CHECK-NEXT:   } do {
// CHECK-NEXT:     %one = hlo.constant dense<1> : tensor<i32>
// CHECK-NEXT:     %i1 = hlo.add %i, %one : tensor<i32>
// CHECK-NEXT:     %y = hlo.dot %x, %w, contracting_dims = [1] x [0] : (tensor<4x4xf32>, tensor<4x2xf32>) -> tensor<4x2xf32>
// CHECK-NEXT:     %0 = collective.all_gather %y on @mesh["y"], dim = 1 : (tensor<4x2xf32>) -> tensor<4x4xf32>
// CHECK-NEXT:     %x1 = hlo.tanh %0 : tensor<4x4xf32>
// CHECK-NEXT:     hlo.return %i1, %x1 : tensor<i32>, tensor<4x4xf32>
// CHECK-NEXT:   }
// CHECK-NEXT:   %1 = collective.all_gather %r_1 on @mesh["x"], dim = 0 : (tensor<4x4xf32>) -> tensor<8x4xf32>
// CHECK-NEXT:   func.return %1 : tensor<8x4xf32>

// -----

// case: the index is replicated; each branch is partitioned on its own and returns the
// result's sharding (branch 1's iota is offset to each device's block).
spmd.mesh @mesh = <["x"=2]>
func.func @case(%k: tensor<i32>, %a: tensor<8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"x"}]>}) -> (tensor<8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"x"}]>}) {
  %c = hlo.case %k -> (tensor<8xf32>) {
    %e = hlo.exp %a : tensor<8xf32>
    hlo.return %e : tensor<8xf32>
  }, {
    %z = hlo.iota dim = 0 : tensor<8xf32>
    hlo.return %z : tensor<8xf32>
  }
  func.return %c : tensor<8xf32>
}
// CHECK:      func.func @case(%k: tensor<i32> {{.*}}, %a: tensor<4xf32> {{.*}}) -> (tensor<4xf32> {{.*}}) attributes {spmd.partitioned} {
// CHECK-NEXT:   %c = hlo.case %k -> (tensor<4xf32>) {
// CHECK-NEXT:     %e = hlo.exp %a : tensor<4xf32>
// CHECK-NEXT:     hlo.return %e : tensor<4xf32>
// CHECK-NEXT:   }, {
// CHECK-NEXT:     %z = hlo.iota dim = 0 : tensor<4xf32>
// CHECK:          hlo.return %{{.*}} : tensor<4xf32>
// CHECK-NEXT:   }
// CHECK-NEXT:   func.return %c : tensor<4xf32>
