// RUN: shardc-opt %s -p spmd-propagate --split-input-file | filecheck %s

// A carried value has one sharding: the operand's ("x" on rows) reaches the block
// arguments of cond and do, the ops of the body, the value do returns and the result
// (spmd.result_shardings); the unannotated function result stays replicated (resharded at
// the return by spmd-partition).
spmd.mesh @mesh = <["x"=2, "y"=2]>
func.func @while(%a: tensor<8x4xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"x"}, {}]>}, %w: tensor<4x4xf32>) -> tensor<8x4xf32> {
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
// CHECK:      %r, %r_1 = hlo.while(%i = %c0, %x = %a) : tensor<i32>, tensor<8x4xf32> attributes {spmd.sharding = #spmd.sharding<@mesh, []>, spmd.result_shardings = [#spmd.sharding<@mesh, []>, #spmd.sharding<@mesh, [{"x"}, {}]>]} cond {
// CHECK:        %p = hlo.compare LT, %i, %n {spmd.sharding = #spmd.sharding<@mesh, []>}
// CHECK:      } do {
// CHECK:        %y = hlo.dot %x, %w, contracting_dims = [1] x [0] {spmd.sharding = #spmd.sharding<@mesh, [{"x"}, {}]>}
// CHECK-NEXT:   %x1 = hlo.tanh %y {spmd.sharding = #spmd.sharding<@mesh, [{"x"}, {}]>}
// CHECK-NEXT:   hlo.return %i1, %x1
// CHECK:      func.return %r_1

// -----

// A sharding found inside the body (a constraint on the dot's result, fixed) wins over
// what the loop's operand got from the replicated argument: it is the carried sharding
// (the operand is resharded to it by spmd-partition) and the result's.
spmd.mesh @mesh = <["x"=2, "y"=2]>
func.func @from_inside(%a: tensor<8x4xf32>, %w: tensor<4x4xf32>) -> tensor<8x4xf32> {
  %c0 = hlo.constant dense<0> : tensor<i32>
  %a0 = hlo.neg %a : tensor<8x4xf32>
  %r:2 = hlo.while(%i = %c0, %x = %a0) : tensor<i32>, tensor<8x4xf32> cond {
    %n = hlo.constant dense<3> : tensor<i32>
    %p = hlo.compare LT, %i, %n : (tensor<i32>, tensor<i32>) -> tensor<i1>
    hlo.return %p : tensor<i1>
  } do {
    %one = hlo.constant dense<1> : tensor<i32>
    %i1 = hlo.add %i, %one : tensor<i32>
    %y = hlo.dot %x, %w, contracting_dims = [1] x [0] : (tensor<8x4xf32>, tensor<4x4xf32>) -> tensor<8x4xf32>
    %yc = spmd.constraint %y <@mesh, [{}, {"y"}]> : tensor<8x4xf32>
    hlo.return %i1, %yc : tensor<i32>, tensor<8x4xf32>
  }
  %s = hlo.neg %r#1 : tensor<8x4xf32>
  func.return %s : tensor<8x4xf32>
}
// CHECK-LABEL: func.func @from_inside
// CHECK:      hlo.while(%i = %c0, %x = %a0) : tensor<i32>, tensor<8x4xf32> attributes {spmd.sharding = #spmd.sharding<@mesh, []>, spmd.result_shardings = [#spmd.sharding<@mesh, []>, #spmd.sharding<@mesh, [{}, {"y"}]>]}

// -----

// case: the result and what every branch returns share one sharding (the constant of
// branch 1 gets it only through the tie).
spmd.mesh @mesh = <["x"=2]>
func.func @case(%k: tensor<i32>, %a: tensor<8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"x"}]>}) -> (tensor<8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"x"}]>}) {
  %c = hlo.case %k -> (tensor<8xf32>) {
    %e = hlo.exp %a : tensor<8xf32>
    hlo.return %e : tensor<8xf32>
  }, {
    %z = hlo.constant dense<0.0> : tensor<8xf32>
    hlo.return %z : tensor<8xf32>
  }
  %n = hlo.neg %c : tensor<8xf32>
  func.return %n : tensor<8xf32>
}
// CHECK-LABEL: func.func @case
// CHECK:      %c = hlo.case %k attributes {spmd.sharding = #spmd.sharding<@mesh, [{"x"}]>, spmd.result_shardings = [#spmd.sharding<@mesh, [{"x"}]>]} -> (tensor<8xf32>) {
// CHECK-NEXT:   %e = hlo.exp %a {spmd.sharding = #spmd.sharding<@mesh, [{"x"}]>}
// CHECK:        %z = hlo.constant dense<0.000000e+00> : tensor<8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"x"}]>}
