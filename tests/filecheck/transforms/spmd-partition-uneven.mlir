// RUN: shardc-opt %s -p "spmd-propagate,spmd-partition{cost-based=false},canonicalize,cse" --split-input-file | filecheck %s
// The partitioning rules as written (cost-based=false): at these tiny sizes the cost model
// prefers gathering operands to latency-bound all_reduces (spmd-partition-cost.mlir).

// Uneven splits (GSPMD's padding): 6 rows over 4 devices are blocks of 2, the last one all
// padding. The function records the global shape; a max-reduce over the padded dimension
// first sets the padding to max's identity (-inf), found by an iota compared with the valid
// length, then all-reduces.
spmd.mesh @mesh = <["a"=4]>
func.func @reduce_max(%x: tensor<6x8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"a"}, {}]>})
    -> (tensor<8xf32>) {
  %r = hlo.reduce max %x, dims = [0] : (tensor<6x8xf32>) -> tensor<8xf32>
  func.return %r : tensor<8xf32>
}
// CHECK:      func.func @reduce_max(%x: tensor<2x8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"a"}, {}]>, spmd.global_shape = array<i64: 6, 8>}) -> (tensor<8xf32> {{.*}}) attributes {spmd.partitioned} {
// CHECK-NEXT:   %0 = hlo.iota dim = 0 : tensor<2x8xi32>
// CHECK-NEXT:   %1 = hlo.constant dense<2> : tensor<i32>
// CHECK-NEXT:   %2 = spmd.axis_index @mesh["a"] : tensor<i32>
// CHECK-NEXT:   %3 = hlo.mul %2, %1 : tensor<i32>
// CHECK-NEXT:   %4 = hlo.broadcast %3, dims = [] : (tensor<i32>) -> tensor<2x8xi32>
// CHECK-NEXT:   %5 = hlo.add %0, %4 : tensor<2x8xi32>
// CHECK-NEXT:   %6 = hlo.constant dense<6> : tensor<2x8xi32>
// CHECK-NEXT:   %7 = hlo.compare LT, %5, %6 : (tensor<2x8xi32>, tensor<2x8xi32>) -> tensor<2x8xi1>
// CHECK-NEXT:   %8 = hlo.constant dense<0xff800000> : tensor<2x8xf32>
// CHECK-NEXT:   %9 = hlo.select %7, %x, %8 : tensor<2x8xi1>, tensor<2x8xf32>
// CHECK-NEXT:   %r = hlo.reduce max %9, dims = [0] : (tensor<2x8xf32>) -> tensor<8xf32>
// CHECK-NEXT:   %r_1 = collective.all_reduce max %r on @mesh["a"] : tensor<8xf32>
// CHECK-NEXT:   func.return %r_1 : tensor<8xf32>

// -----

// A dot contracting over an uneven dimension zeroes the padding of both operands (NaN
// padding times a zero is still NaN), then sums the partial products.
spmd.mesh @mesh = <["a"=4]>
func.func @dot_contracting(%x: tensor<8x6xf32> {spmd.sharding = #spmd.sharding<@mesh, [{}, {"a"}]>},
                           %w: tensor<6x16xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"a"}, {}]>})
    -> (tensor<8x16xf32>) {
  %d = hlo.dot %x, %w, contracting_dims = [1] x [0] : (tensor<8x6xf32>, tensor<6x16xf32>) -> tensor<8x16xf32>
  func.return %d : tensor<8x16xf32>
}
// CHECK:      func.func @dot_contracting(%x: tensor<8x2xf32> {{.*}}spmd.global_shape = array<i64: 8, 6>}, %w: tensor<2x16xf32> {{.*}}spmd.global_shape = array<i64: 6, 16>})
// CHECK:        %0 = hlo.iota dim = 1 : tensor<8x2xi32>
// CHECK:        %7 = hlo.compare LT, %5, %6 : (tensor<8x2xi32>, tensor<8x2xi32>) -> tensor<8x2xi1>
// CHECK-NEXT:   %8 = hlo.constant dense<0.000000e+00> : tensor<8x2xf32>
// CHECK-NEXT:   %9 = hlo.select %7, %x, %8 : tensor<8x2xi1>, tensor<8x2xf32>
// CHECK-NEXT:   %10 = hlo.iota dim = 0 : tensor<2x16xi32>
// CHECK:        %14 = hlo.compare LT, %12, %13 : (tensor<2x16xi32>, tensor<2x16xi32>) -> tensor<2x16xi1>
// CHECK-NEXT:   %15 = hlo.constant dense<0.000000e+00> : tensor<2x16xf32>
// CHECK-NEXT:   %16 = hlo.select %14, %w, %15 : tensor<2x16xi1>, tensor<2x16xf32>
// CHECK-NEXT:   %d = hlo.dot %9, %16, contracting_dims = [1] x [0] : (tensor<8x2xf32>, tensor<2x16xf32>) -> tensor<8x16xf32>
// CHECK-NEXT:   %d_1 = collective.all_reduce add %d on @mesh["a"] : tensor<8x16xf32>
// CHECK-NEXT:   func.return %d_1 : tensor<8x16xf32>

// -----

// Element-wise ops compute on the padded blocks: the padding stays in the padding.
spmd.mesh @mesh = <["a"=4]>
func.func @elementwise(%x: tensor<7x8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"a"}, {}]>})
    -> (tensor<7x8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"a"}, {}]>}) {
  %e = hlo.exp %x : tensor<7x8xf32>
  %t = hlo.tanh %e : tensor<7x8xf32>
  func.return %t : tensor<7x8xf32>
}
// CHECK:      func.func @elementwise(%x: tensor<2x8xf32> {{.*}}spmd.global_shape = array<i64: 7, 8>}) -> (tensor<2x8xf32> {{.*}}spmd.global_shape = array<i64: 7, 8>}) attributes {spmd.partitioned} {
// CHECK-NEXT:   %e = hlo.exp %x : tensor<2x8xf32>
// CHECK-NEXT:   %t = hlo.tanh %e : tensor<2x8xf32>
// CHECK-NEXT:   func.return %t : tensor<2x8xf32>

// -----

// Resharding an uneven value: the uneven dimension is gathered and its padding sliced off;
// a dimension the target splits unevenly is padded to a multiple of its shard count and
// this device's block taken.
spmd.mesh @mesh = <["a"=4, "b"=2]>
func.func @reshard(%x: tensor<7x6xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"a"}, {}]>})
    -> (tensor<7x6xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"b"}, {"a"}]>}) {
  func.return %x : tensor<7x6xf32>
}
// CHECK:      func.func @reshard(%x: tensor<2x6xf32> {{.*}}) -> (tensor<4x2xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"b"}, {"a"}]>, spmd.global_shape = array<i64: 7, 6>}) attributes {spmd.partitioned} {
// CHECK-NEXT:   %0 = collective.all_gather %x on @mesh["a"], dim = 0 : (tensor<2x6xf32>) -> tensor<8x6xf32>
// CHECK-NEXT:   %1 = hlo.slice %0 [0:7, 0:6] : (tensor<8x6xf32>) -> tensor<7x6xf32>
// CHECK-NEXT:   %2 = hlo.constant dense<0.000000e+00> : tensor<f32>
// CHECK-NEXT:   %3 = hlo.pad %1, %2, low = [0, 0], high = [1, 0], interior = [0, 0] : (tensor<7x6xf32>, tensor<f32>) -> tensor<8x6xf32>
// CHECK:        %8 = hlo.dynamic_slice %3 [%6, %7] sizes = [4, 6] : (tensor<8x6xf32>, tensor<i32>, tensor<i32>) -> tensor<4x6xf32>
// CHECK-NEXT:   %9 = hlo.pad %8, %2, low = [0, 0], high = [0, 2], interior = [0, 0] : (tensor<4x6xf32>, tensor<f32>) -> tensor<4x8xf32>
// CHECK:        %13 = hlo.dynamic_slice %9 [%7, %12] sizes = [4, 2] : (tensor<4x8xf32>, tensor<i32>, tensor<i32>) -> tensor<4x2xf32>
// CHECK-NEXT:   func.return %13 : tensor<4x2xf32>

// -----

// A reshape would move padding into real positions: its operand is gathered whole first.
spmd.mesh @mesh = <["a"=4]>
func.func @reshape(%x: tensor<6x4xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"a"}, {}]>})
    -> (tensor<24xf32>) {
  %r = hlo.reshape %x : (tensor<6x4xf32>) -> tensor<24xf32>
  func.return %r : tensor<24xf32>
}
// CHECK:      func.func @reshape(%x: tensor<2x4xf32> {{.*}}) -> (tensor<24xf32> {{.*}}) attributes {spmd.partitioned} {
// CHECK-NEXT:   %0 = collective.all_gather %x on @mesh["a"], dim = 0 : (tensor<2x4xf32>) -> tensor<8x4xf32>
// CHECK-NEXT:   %1 = hlo.slice %0 [0:6, 0:4] : (tensor<8x4xf32>) -> tensor<6x4xf32>
// CHECK-NEXT:   %r = hlo.reshape %1 : (tensor<6x4xf32>) -> tensor<24xf32>
// CHECK-NEXT:   func.return %r : tensor<24xf32>
