// RUN: shardc-opt %s -p spmd-propagate --split-input-file | filecheck %s
// RUN: shardc-opt %s -p spmd-propagate,spmd-partition,canonicalize,cse --split-input-file | filecheck %s --check-prefix=PART

// Shardy's constant splitting: a constant-like expression (constant, iota, and a
// broadcast / reshape / convert / transpose of one) used by several ops gets one copy per
// use, each with its use's sharding, so no use forces a reshard on another.
spmd.mesh @mesh = <["a"=2, "b"=2]>
func.func @split(%x: tensor<8x8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"a"}, {}]>},
                 %y: tensor<8x8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{}, {"b"}]>})
    -> (tensor<8x8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"a"}, {}]>},
        tensor<8x8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{}, {"b"}]>}) {
  %c = hlo.constant dense<2.0> : tensor<f32>
  %b = hlo.broadcast %c, dims = [] : (tensor<f32>) -> tensor<8x8xf32>
  %p = hlo.mul %x, %b : tensor<8x8xf32>
  %q = hlo.add %y, %b : tensor<8x8xf32>
  func.return %p, %q : tensor<8x8xf32>, tensor<8x8xf32>
}
// CHECK-LABEL: func.func @split
// CHECK:       %c = hlo.constant
// CHECK:       %c_1 = hlo.constant
// CHECK:       %b = hlo.broadcast %c, {{.*}}#spmd.sharding<@mesh, [{"a"}, {}]>
// CHECK:       %b_1 = hlo.broadcast %c_1, {{.*}}#spmd.sharding<@mesh, [{}, {"b"}]>
// CHECK:       %p = hlo.mul %x, %b
// CHECK:       %q = hlo.add %y, %b_1
// No collective: each copy is made in its use's layout.
// PART-LABEL:  func.func @split
// PART-NOT:    collective.
// PART:        func.return

// -----

// An iota used twice, by ops that want it split differently.
spmd.mesh @mesh = <["x"=4]>
func.func @iota(%x: tensor<8x4xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"x"}, {}]>},
                %y: tensor<8x4xf32> {spmd.sharding = #spmd.sharding<@mesh, [{}, {"x"}]>})
    -> (tensor<8x4xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"x"}, {}]>},
        tensor<8x4xf32> {spmd.sharding = #spmd.sharding<@mesh, [{}, {"x"}]>}) {
  %i = hlo.iota dim = 0 : tensor<8x4xf32>
  %p = hlo.add %x, %i : tensor<8x4xf32>
  %q = hlo.add %y, %i : tensor<8x4xf32>
  func.return %p, %q : tensor<8x4xf32>, tensor<8x4xf32>
}
// CHECK-LABEL: func.func @iota
// CHECK:       %i = hlo.iota dim = 0 {spmd.sharding = #spmd.sharding<@mesh, [{"x"}, {}]>}
// CHECK:       %i_1 = hlo.iota dim = 0 {spmd.sharding = #spmd.sharding<@mesh, [{}, {"x"}]>}
// CHECK:       %p = hlo.add %x, %i
// CHECK:       %q = hlo.add %y, %i_1
// PART-LABEL:  func.func @iota
// PART-NOT:    collective.
// PART:        func.return
