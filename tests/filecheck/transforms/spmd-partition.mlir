// RUN: shardc-opt %s -p "spmd-propagate,spmd-partition{cost-based=false},canonicalize,cse" --split-input-file | filecheck %s
// The partitioning rules as written (cost-based=false): at these tiny sizes the cost model
// prefers gathering operands to latency-bound all_reduces (spmd-partition-cost.mlir).

// Megatron MLP: column-parallel then row-parallel matmul: exactly one all_reduce over "model".
spmd.mesh @mesh = <["data"=2, "model"=4]>
func.func @main(%x: tensor<16x32xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"data"}, {}]>},
                %w1: tensor<32x128xf32> {spmd.sharding = #spmd.sharding<@mesh, [{}, {"model"}]>},
                %w2: tensor<128x32xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"model"}, {}]>})
    -> (tensor<16x32xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"data"}, {}]>}) {
  %h = hlo.dot %x, %w1, contracting_dims = [1] x [0] : (tensor<16x32xf32>, tensor<32x128xf32>) -> tensor<16x128xf32>
  %a = hlo.tanh %h : tensor<16x128xf32>
  %y = hlo.dot %a, %w2, contracting_dims = [1] x [0] : (tensor<16x128xf32>, tensor<128x32xf32>) -> tensor<16x32xf32>
  func.return %y : tensor<16x32xf32>
}
// CHECK:      func.func @main(%x: tensor<8x32xf32> {{.*}}, %w1: tensor<32x32xf32> {{.*}}, %w2: tensor<32x32xf32> {{.*}}) -> (tensor<8x32xf32> {{.*}}) attributes {spmd.partitioned} {
// CHECK-NEXT:   %h = hlo.dot %x, %w1, contracting_dims = [1] x [0] : (tensor<8x32xf32>, tensor<32x32xf32>) -> tensor<8x32xf32>
// CHECK-NEXT:   %a = hlo.tanh %h : tensor<8x32xf32>
// CHECK-NEXT:   %y = hlo.dot %a, %w2, contracting_dims = [1] x [0] : (tensor<8x32xf32>, tensor<32x32xf32>) -> tensor<8x32xf32>
// CHECK-NEXT:   %y_1 = collective.all_reduce add %y on @mesh["model"] : tensor<8x32xf32>
// CHECK-NEXT:   func.return %y_1 : tensor<8x32xf32>

// -----

// A contracting-sharded matmul feeding a column-sharded result: one reduce_scatter, no all_reduce.
spmd.mesh @mesh = <["y"=4]>
func.func @rs(%a: tensor<16x32xf32> {spmd.sharding = #spmd.sharding<@mesh, [{}, {"y"}]>},
              %b: tensor<32x64xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"y"}, {}]>})
    -> (tensor<16x64xf32> {spmd.sharding = #spmd.sharding<@mesh, [{}, {"y"}]>}) {
  %c = hlo.dot %a, %b, contracting_dims = [1] x [0] : (tensor<16x32xf32>, tensor<32x64xf32>) -> tensor<16x64xf32>
  func.return %c : tensor<16x64xf32>
}
// CHECK:      %c = hlo.dot %a, %b, contracting_dims = [1] x [0] : (tensor<16x8xf32>, tensor<8x64xf32>) -> tensor<16x64xf32>
// CHECK-NEXT: %c_1 = collective.reduce_scatter add %c on @mesh["y"], dim = 1 : (tensor<16x64xf32>) -> tensor<16x16xf32>
// CHECK-NEXT: func.return %c_1
// CHECK-NOT:  collective.all_reduce

// -----

// Reduce over a split dimension: local reduce, then an all_reduce of the same kind.
spmd.mesh @mesh = <["x"=2]>
func.func @reduce(%a: tensor<4x8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{}, {"x"}]>})
    -> (tensor<4xf32>, tensor<4xf32>) {
  %m = hlo.reduce max %a, dims = [1] : (tensor<4x8xf32>) -> tensor<4xf32>
  %s = hlo.reduce add %a, dims = [1] : (tensor<4x8xf32>) -> tensor<4xf32>
  func.return %m, %s : tensor<4xf32>, tensor<4xf32>
}
// CHECK:      %m = hlo.reduce max %a, dims = [1] : (tensor<4x4xf32>) -> tensor<4xf32>
// CHECK-NEXT: %m_1 = collective.all_reduce max %m on @mesh["x"] : tensor<4xf32>
// CHECK-NEXT: %s = hlo.reduce add %a, dims = [1] : (tensor<4x4xf32>) -> tensor<4xf32>
// CHECK-NEXT: %s_1 = collective.all_reduce add %s on @mesh["x"] : tensor<4xf32>
// CHECK-NEXT: func.return %m_1, %s_1

// -----

// Resharding: rows -> columns is one all_to_all; columns -> replicated is one all_gather;
// replicated -> rows is a local dynamic_slice at this device's block (no communication).
spmd.mesh @mesh = <["x"=4]>
func.func @reshard(%a: tensor<16x32xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"x"}, {}]>})
    -> (tensor<16x32xf32> {spmd.sharding = #spmd.sharding<@mesh, [{}, {}]>}) {
  %c = spmd.constraint %a <@mesh, [{}, {"x"}]> : tensor<16x32xf32>
  %r = spmd.constraint %c <@mesh, [{}, {}]> : tensor<16x32xf32>
  func.return %r : tensor<16x32xf32>
}
// CHECK:      %c = collective.all_to_all %a on @mesh["x"], split_dim = 1, concat_dim = 0 : (tensor<4x32xf32>) -> tensor<16x8xf32>
// CHECK-NEXT: %r = collective.all_gather %c on @mesh["x"], dim = 1 : (tensor<16x8xf32>) -> tensor<16x32xf32>
// CHECK-NEXT: func.return %r : tensor<16x32xf32>

// -----

spmd.mesh @mesh = <["x"=4]>
func.func @slice_locally(%a: tensor<16x32xf32>)
    -> (tensor<16x32xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"x"}, {}]>}) {
  func.return %a : tensor<16x32xf32>
}
// CHECK-LABEL: func.func @slice_locally(%a: tensor<16x32xf32> {spmd.sharding = #spmd.sharding<@mesh, [{}, {}]>}) -> (tensor<4x32xf32>
// CHECK-NEXT: %0 = spmd.axis_index @mesh["x"] : tensor<i32>
// CHECK:      hlo.dynamic_slice %a [{{.*}}] sizes = [4, 32] : (tensor<16x32xf32>, tensor<i32>, tensor<i32>) -> tensor<4x32xf32>
// CHECK-NOT:  collective.
// CHECK:      func.return %{{.*}} : tensor<4x32xf32>

// -----

// Two axes on one dimension; dropping the minor one gathers over it only.
spmd.mesh @mesh = <["a"=2, "b"=2, "c"=2]>
func.func @multi(%x: tensor<8x4xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"a", "b"}, {"c"}]>})
    -> (tensor<8x4xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"a"}, {"c"}]>}) {
  func.return %x : tensor<8x4xf32>
}
// CHECK:      %0 = collective.all_gather %x on @mesh["b"], dim = 0 : (tensor<2x2xf32>) -> tensor<4x2xf32>
// CHECK-NEXT: func.return %0 : tensor<4x2xf32>

// -----

// iota along a split dimension is offset by this device's block.
spmd.mesh @mesh = <["x"=4]>
func.func @iota() -> (tensor<8x2xi32> {spmd.sharding = #spmd.sharding<@mesh, [{"x"}, {}]>}) {
  %i = hlo.iota dim = 0 : tensor<8x2xi32>
  func.return %i : tensor<8x2xi32>
}
// CHECK:      %i = hlo.iota dim = 0 : tensor<2x2xi32>
// CHECK-NEXT: %0 = spmd.axis_index @mesh["x"] : tensor<i32>
// CHECK-NEXT: %1 = hlo.constant dense<2> : tensor<i32>
// CHECK-NEXT: %2 = hlo.mul %0, %1 : tensor<i32>
// CHECK-NEXT: %3 = hlo.broadcast %2, dims = [] : (tensor<i32>) -> tensor<2x2xi32>
// CHECK-NEXT: %i_1 = hlo.add %i, %3 : tensor<2x2xi32>

// -----

// Elementwise, broadcast, transpose and splat constants stay local.
spmd.mesh @mesh = <["x"=2, "y"=2]>
func.func @local(%a: tensor<4x8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"x"}, {"y"}]>},
                 %b: tensor<8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"y"}]>})
    -> (tensor<8x4xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"y"}, {"x"}]>}) {
  %bb = hlo.broadcast %b, dims = [1] : (tensor<8xf32>) -> tensor<4x8xf32>
  %one = hlo.constant dense<1.0> : tensor<4x8xf32>
  %s = hlo.add %a, %bb : tensor<4x8xf32>
  %m = hlo.mul %s, %one : tensor<4x8xf32>
  %t = hlo.transpose %m, dims = [1, 0] : (tensor<4x8xf32>) -> tensor<8x4xf32>
  func.return %t : tensor<8x4xf32>
}
// CHECK-LABEL: func.func @local
// CHECK-NOT:  collective.
// CHECK:      hlo.transpose %{{.*}}, dims = [1, 0] : (tensor<2x4xf32>) -> tensor<4x2xf32>
// CHECK-NOT:  collective.
// CHECK:      func.return %{{.*}} : tensor<4x2xf32>

// -----

// Slicing a split dimension needs it whole first.
spmd.mesh @mesh = <["x"=2]>
func.func @slice(%a: tensor<8x4xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"x"}, {}]>})
    -> (tensor<2x4xf32>) {
  %s = hlo.slice %a [1:5:2, 0:4] : (tensor<8x4xf32>) -> tensor<2x4xf32>
  func.return %s : tensor<2x4xf32>
}
// CHECK:      %0 = collective.all_gather %a on @mesh["x"], dim = 0 : (tensor<4x4xf32>) -> tensor<8x4xf32>
// CHECK-NEXT: %s = hlo.slice %0 [1:5:2, 0:4] : (tensor<8x4xf32>) -> tensor<2x4xf32>

// -----

// Same axes, same local shape, blocks in other places: one permute moves each block once.
spmd.mesh @mesh = <["a"=2, "b"=2]>
func.func @permute(%x: tensor<8x4xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"a", "b"}, {}]>},
                   %y: tensor<8x8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"a"}, {"b"}]>})
    -> (tensor<8x4xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"b", "a"}, {}]>},
        tensor<8x8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"b"}, {"a"}]>}) {
  func.return %x, %y : tensor<8x4xf32>, tensor<8x8xf32>
}
// CHECK-LABEL: func.func @permute
// CHECK:      %0 = collective.permute %x on @mesh["a", "b"], pairs = [[0, 0], [2, 1], [1, 2], [3, 3]] : tensor<2x4xf32>
// CHECK-NEXT: %1 = collective.permute %y on @mesh["a", "b"], pairs = [[0, 0], [2, 1], [1, 2], [3, 3]] : tensor<4x4xf32>
// CHECK-NEXT: func.return %0, %1
