// RUN: shardc-opt %s -p spmd-propagate,spmd-partition,canonicalize,cse --split-input-file | filecheck %s

// rng_bit_generator: the state is replicated and the bits are generated whole on every
// device (they depend on the whole shape, as XLA's CPU partitioned program computes
// them), then each device keeps the block its user wants: a local slice, no collective.
spmd.mesh @mesh = <["a"=2, "b"=2]>
func.func @dropout(%s: tensor<2xui64>, %x: tensor<8x4xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"a"}, {"b"}]>})
    -> (tensor<2xui64>, tensor<8x4xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"a"}, {"b"}]>}) {
  %t, %b = hlo.rng_bit_generator %s, algorithm = PHILOX : (tensor<2xui64>) -> (tensor<2xui64>, tensor<8x4xui32>)
  %f = hlo.convert %b : (tensor<8x4xui32>) -> tensor<8x4xf32>
  %y = hlo.mul %x, %f : tensor<8x4xf32>
  func.return %t, %y : tensor<2xui64>, tensor<8x4xf32>
}
// CHECK:      func.func @dropout(%s: tensor<2xui64> {spmd.sharding = #spmd.sharding<@mesh, [{}]>}, %x: tensor<4x2xf32> {{.*}}) -> (tensor<2xui64> {{.*}}, tensor<4x2xf32> {{.*}}) attributes {spmd.partitioned} {
// CHECK-NEXT:   %t, %b = hlo.rng_bit_generator %s, algorithm = PHILOX : (tensor<2xui64>) -> (tensor<2xui64>, tensor<8x4xui32>)
// CHECK-NOT:    collective.
// CHECK:        %{{.*}} = hlo.dynamic_slice %b
// CHECK-NOT:    collective.
// CHECK:        func.return %t, %{{.*}} : tensor<2xui64>, tensor<4x2xf32>

// -----

// A state split by its annotation is all-gathered first (the state is replicated).
spmd.mesh @mesh = <["a"=2]>
func.func @split_state(%s: tensor<2xui64> {spmd.sharding = #spmd.sharding<@mesh, [{"a"}]>}) -> tensor<4xui64> {
  %t, %b = hlo.rng_bit_generator %s, algorithm = THREE_FRY : (tensor<2xui64>) -> (tensor<2xui64>, tensor<4xui64>)
  func.return %b : tensor<4xui64>
}
// CHECK:      func.func @split_state(%s: tensor<1xui64> {{.*}}) -> (tensor<4xui64> {{.*}}) attributes {spmd.partitioned} {
// CHECK-NEXT:   %0 = collective.all_gather %s on @mesh["a"], dim = 0 : (tensor<1xui64>) -> tensor<2xui64>
// CHECK-NEXT:   %t, %b = hlo.rng_bit_generator %0, algorithm = THREE_FRY : (tensor<2xui64>) -> (tensor<2xui64>, tensor<4xui64>)
// CHECK-NEXT:   func.return %b : tensor<4xui64>
