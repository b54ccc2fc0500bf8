// RUN: shardc-opt %s -p spmd-propagate,spmd-partition --split-input-file | filecheck %s

// shard_map inside auto-sharded code: the manual computation's in-sharding reaches back
// to the dot (propagation treats its boundary as fixed), its body is inlined as it is
// (per-device code), and the auto code after it starts from the out-sharding.
spmd.mesh @mesh = <["x"=4]>
func.func @mixed(%a: tensor<8x16xf32>, %b: tensor<16x8xf32>) -> (tensor<8x8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{}, {"x"}]>}) {
  %h = hlo.dot %a, %b, contracting_dims = [1] x [0] : (tensor<8x16xf32>, tensor<16x8xf32>) -> tensor<8x8xf32>
  %m = spmd.manual_computation(%h) in_shardings=[<@mesh, [{"x"}, {}]>] out_shardings=[<@mesh, [{"x"}, {}]>] manual_axes={"x"} (%l: tensor<2x8xf32>) {
    %s = collective.permute %l on @mesh["x"], shift = 1 : tensor<2x8xf32>
    spmd.return %s : tensor<2x8xf32>
  } : (tensor<8x8xf32>) -> tensor<8x8xf32>
  %t = hlo.tanh %m : tensor<8x8xf32>
  func.return %t : tensor<8x8xf32>
}
// CHECK:      func.func @mixed(%a: tensor<8x16xf32> {{.*}}, %b: tensor<16x8xf32> {{.*}}) -> (tensor<8x2xf32> {{.*}}) attributes {spmd.partitioned} {
// CHECK:        %h = hlo.dot {{.*}} -> tensor<2x8xf32>
// CHECK-NEXT:   %s = collective.permute %h on @mesh["x"], shift = 1 : tensor<2x8xf32>
// CHECK-NEXT:   %[[A:.*]] = collective.all_to_all %s on @mesh["x"], split_dim = 1, concat_dim = 0 : (tensor<2x8xf32>) -> tensor<8x2xf32>
// CHECK-NEXT:   %t = hlo.tanh %[[A]] : tensor<8x2xf32>
// CHECK-NOT:    spmd.manual_computation

// -----

// Operands are resharded to the in-shardings; a body returning its argument; a
// partition_id outside manual computations is 0 (one partition at level G), inside it
// stays the device's id.
spmd.mesh @mesh = <["x"=2, "y"=2]>
func.func @reshard(%a: tensor<4x4xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"x"}, {"y"}]>}) -> (tensor<4x4xf32>, tensor<4x4xf32>, tensor<i32>) {
  %m, %same = spmd.manual_computation(%a) in_shardings=[<@mesh, [{}, {"y"}]>] out_shardings=[<@mesh, [{"y"}, {}]>, <@mesh, [{}, {"y"}]>] manual_axes={"x", "y"} (%l: tensor<4x2xf32>) {
    %p = hlo.partition_id : tensor<i32>
    %t = hlo.transpose %l, dims = [1, 0] : (tensor<4x2xf32>) -> tensor<2x4xf32>
    spmd.return %t, %l : tensor<2x4xf32>, tensor<4x2xf32>
  } : (tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>)
  %o = hlo.partition_id : tensor<i32>
  func.return %m, %same, %o : tensor<4x4xf32>, tensor<4x4xf32>, tensor<i32>
}
// CHECK:      func.func @reshard(%a: tensor<2x2xf32> {{.*}})
// CHECK-NEXT:   %l = collective.all_gather %a on @mesh["x"], dim = 0 : (tensor<2x2xf32>) -> tensor<4x2xf32>
// CHECK-NEXT:   %same = hlo.reshape %l : (tensor<4x2xf32>) -> tensor<4x2xf32>
// CHECK-NEXT:   %p = hlo.partition_id : tensor<i32>
// CHECK-NEXT:   %t = hlo.transpose %l, dims = [1, 0] : (tensor<4x2xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:   %o = hlo.constant dense<0> : tensor<i32>
// CHECK-NEXT:   %0 = collective.all_gather %t on @mesh["y"], dim = 0 : (tensor<2x4xf32>) -> tensor<4x4xf32>
// CHECK-NEXT:   %1 = collective.all_gather %same on @mesh["y"], dim = 1 : (tensor<4x2xf32>) -> tensor<4x4xf32>
// CHECK-NEXT:   func.return %0, %1, %o

// -----

// Partially manual ("y" free): the operand is resharded to the in-sharding's manual part
// (the "y" split of the argument gathered: the body runs replicated along "y"), the body
// keeps its "x" collective (groups over "x" for every "y"), and the result is split
// over "y" as the out-sharding's free part says, locally.
spmd.mesh @mesh = <["x"=2, "y"=2]>
func.func @partial(%a: tensor<4x4xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"x", "y"}, {}]>}) -> (tensor<4x4xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"x"}, {"y"}]>}) {
  %m = spmd.manual_computation(%a) in_shardings=[<@mesh, [{"x", "y"}, {}]>] out_shardings=[<@mesh, [{"x"}, {"y"}]>] manual_axes={"x"} (%l: tensor<2x4xf32>) {
    %s = collective.all_reduce add %l on @mesh["x"] : tensor<2x4xf32>
    spmd.return %s : tensor<2x4xf32>
  } : (tensor<4x4xf32>) -> tensor<4x4xf32>
  func.return %m : tensor<4x4xf32>
}
// CHECK:      func.func @partial(%a: tensor<1x4xf32> {{.*}}) -> (tensor<2x2xf32> {{.*}}) attributes {spmd.partitioned} {
// CHECK-NEXT:   %l = collective.all_gather %a on @mesh["y"], dim = 0 : (tensor<1x4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:   %s = collective.all_reduce add %l on @mesh["x"] : tensor<2x4xf32>
// CHECK:        hlo.dynamic_slice %s
// CHECK-NOT:    collective.
// CHECK:        func.return
// CHECK-NOT:    spmd.manual_computation
