// RUN: shardc-opt %s -p "spmd-propagate,spmd-partition{cost-based=false},canonicalize,cse" --split-input-file | filecheck %s
// The partitioning rules as written (cost-based=false): at these tiny sizes the cost model
// prefers gathering operands to latency-bound all_reduces (spmd-partition-cost.mlir).

// (a) gather from a table split on the vocabulary (the indexed dimension): indices are
// clamped globally and shifted by this device's first row, rows it does not own are
// masked to zero, and the partial results are summed by an all_reduce.
spmd.mesh @mesh = <["v"=4]>
func.func @vocab(%t: tensor<64x16xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"v"}, {}]>}, %i: tensor<8xi32>)
    -> (tensor<8x16xf32> {spmd.sharding = #spmd.sharding<@mesh, [{}, {}]>}) {
  %g = hlo.gather %t, %i, offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1, slice_sizes = [1, 16] : (tensor<64x16xf32>, tensor<8xi32>) -> tensor<8x16xf32>
  func.return %g : tensor<8x16xf32>
}
// CHECK:      func.func @vocab(%t: tensor<16x16xf32> {{.*}}, %i: tensor<8xi32> {{.*}}) -> (tensor<8x16xf32> {{.*}})
// CHECK-NEXT:   %0 = hlo.constant dense<0> : tensor<8xi32>
// CHECK-NEXT:   %1 = hlo.constant dense<63> : tensor<8xi32>
// CHECK-NEXT:   %2 = hlo.clamp %0, %i, %1
// CHECK-NEXT:   %3 = spmd.axis_index @mesh["v"] : tensor<i32>
// CHECK-NEXT:   %4 = hlo.constant dense<16> : tensor<i32>
// CHECK-NEXT:   %5 = hlo.mul %3, %4 : tensor<i32>
// CHECK-NEXT:   %6 = hlo.broadcast %5, dims = [] : (tensor<i32>) -> tensor<8xi32>
// CHECK-NEXT:   %7 = hlo.sub %2, %6 : tensor<8xi32>
// CHECK-NEXT:   %g = hlo.gather %t, %7, {{.*}} slice_sizes = [1, 16], {{.*}} : (tensor<16x16xf32>, tensor<8xi32>) -> tensor<8x16xf32>
// CHECK-NEXT:   %8 = hlo.compare GE, %7, %0
// CHECK-NEXT:   %9 = hlo.constant dense<16> : tensor<8xi32>
// CHECK-NEXT:   %10 = hlo.compare LT, %7, %9
// CHECK-NEXT:   %11 = hlo.and %8, %10 : tensor<8xi1>
// CHECK-NEXT:   %12 = hlo.broadcast %11, dims = [0] : (tensor<8xi1>) -> tensor<8x16xi1>
// CHECK-NEXT:   %13 = hlo.constant dense<0.000000e+00> : tensor<8x16xf32>
// CHECK-NEXT:   %g_1 = hlo.select %12, %g, %13
// CHECK-NEXT:   %g_2 = collective.all_reduce add %g_1 on @mesh["v"] : tensor<8x16xf32>
// CHECK-NEXT:   func.return %g_2 : tensor<8x16xf32>

// -----

// (b) a table split on the embedding (offset) dimension: a local gather, the result split
// on that dimension.
spmd.mesh @mesh = <["e"=4]>
func.func @embed_dim(%t: tensor<64x16xf32> {spmd.sharding = #spmd.sharding<@mesh, [{}, {"e"}]>}, %i: tensor<8x1xi32>)
    -> (tensor<8x16xf32> {spmd.sharding = #spmd.sharding<@mesh, [{}, {"e"}]>}) {
  %g = hlo.gather %t, %i, offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1, slice_sizes = [1, 16] : (tensor<64x16xf32>, tensor<8x1xi32>) -> tensor<8x16xf32>
  func.return %g : tensor<8x16xf32>
}
// CHECK:      func.func @embed_dim(%t: tensor<64x4xf32> {{.*}}, %i: tensor<8x1xi32> {{.*}}) -> (tensor<8x4xf32> {{.*}})
// CHECK-NEXT:   %g = hlo.gather %t, %i, {{.*}} slice_sizes = [1, 4], {{.*}} : (tensor<64x4xf32>, tensor<8x1xi32>) -> tensor<8x4xf32>
// CHECK-NEXT:   func.return %g : tensor<8x4xf32>

// -----

// (c) indices split on the batch: a local gather, the result split on the batch (the
// intermediate's sharding carried by spmd-propagate).
spmd.mesh @mesh = <["b"=2]>
func.func @batch(%t: tensor<64x16xf32>, %i: tensor<4x6xi32> {spmd.sharding = #spmd.sharding<@mesh, [{"b"}, {}]>})
    -> (tensor<4x6x16xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"b"}, {}, {}]>}) {
  %g = hlo.gather %t, %i, offset_dims = [2], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 2, slice_sizes = [1, 16] : (tensor<64x16xf32>, tensor<4x6xi32>) -> tensor<4x6x16xf32>
  %n = hlo.neg %g : tensor<4x6x16xf32>
  func.return %n : tensor<4x6x16xf32>
}
// CHECK:      func.func @batch(%t: tensor<64x16xf32> {{.*}}, %i: tensor<2x6xi32> {{.*}}) -> (tensor<2x6x16xf32> {{.*}})
// CHECK-NEXT:   %g = hlo.gather %t, %i, {{.*}} : (tensor<64x16xf32>, tensor<2x6xi32>) -> tensor<2x6x16xf32>
// CHECK-NEXT:   %n = hlo.neg %g : tensor<2x6x16xf32>
// CHECK-NEXT:   func.return %n

// -----

// A gather the rules cannot split (a window smaller than its dimension, not the only
// indexed one): the operand is gathered to replicated first.
spmd.mesh @mesh = <["a"=2]>
func.func @whole(%t: tensor<8x8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"a"}, {}]>}, %i: tensor<3x2xi32>)
    -> tensor<3x2x2xf32> {
  %g = hlo.gather %t, %i, offset_dims = [1, 2], collapsed_slice_dims = [], start_index_map = [0, 1], index_vector_dim = 1, slice_sizes = [2, 2] : (tensor<8x8xf32>, tensor<3x2xi32>) -> tensor<3x2x2xf32>
  func.return %g : tensor<3x2x2xf32>
}
// CHECK:      func.func @whole(%t: tensor<4x8xf32> {{.*}}
// CHECK-NEXT:   %0 = collective.all_gather %t on @mesh["a"], dim = 0 : (tensor<4x8xf32>) -> tensor<8x8xf32>
// CHECK-NEXT:   %g = hlo.gather %0, %i, {{.*}} : (tensor<8x8xf32>, tensor<3x2xi32>) -> tensor<3x2x2xf32>

// -----

// scatter add of batch-split updates into a replicated table (an embedding gradient):
// each device scatters into zeros, an all_reduce sums, the table is added.
spmd.mesh @mesh = <["b"=2]>
func.func @grad(%t: tensor<64x16xf32>, %i: tensor<8x1xi32> {spmd.sharding = #spmd.sharding<@mesh, [{"b"}, {}]>}, %u: tensor<8x16xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"b"}, {}]>})
    -> (tensor<64x16xf32> {spmd.sharding = #spmd.sharding<@mesh, [{}, {}]>}) {
  %s = hlo.scatter add %t, %i, %u, update_window_dims = [1], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1 : (tensor<64x16xf32>, tensor<8x1xi32>, tensor<8x16xf32>) -> tensor<64x16xf32>
  func.return %s : tensor<64x16xf32>
}
// CHECK:      func.func @grad(%t: tensor<64x16xf32> {{.*}}, %i: tensor<4x1xi32> {{.*}}, %u: tensor<4x16xf32> {{.*}})
// CHECK-NEXT:   %0 = hlo.constant dense<0.000000e+00> : tensor<64x16xf32>
// CHECK-NEXT:   %s = hlo.scatter add %0, %i, %u, {{.*}} : (tensor<64x16xf32>, tensor<4x1xi32>, tensor<4x16xf32>) -> tensor<64x16xf32>
// CHECK-NEXT:   %1 = collective.all_reduce add %s on @mesh["b"] : tensor<64x16xf32>
// CHECK-NEXT:   %s_1 = hlo.add %t, %1 : tensor<64x16xf32>
// CHECK-NEXT:   func.return %s_1

// -----

// scatter max: the identity is -inf, the all_reduce is a max.
spmd.mesh @mesh = <["b"=2]>
func.func @max(%t: tensor<64x16xf32>, %i: tensor<8x1xi32> {spmd.sharding = #spmd.sharding<@mesh, [{"b"}, {}]>}, %u: tensor<8x16xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"b"}, {}]>})
    -> (tensor<64x16xf32> {spmd.sharding = #spmd.sharding<@mesh, [{}, {}]>}) {
  %s = hlo.scatter max %t, %i, %u, update_window_dims = [1], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1 : (tensor<64x16xf32>, tensor<8x1xi32>, tensor<8x16xf32>) -> tensor<64x16xf32>
  func.return %s : tensor<64x16xf32>
}
// CHECK:      func.func @max(
// CHECK-NEXT:   %0 = hlo.constant dense<0xff800000> : tensor<64x16xf32>
// CHECK-NEXT:   %s = hlo.scatter max %0, %i, %u
// CHECK-NEXT:   %1 = collective.all_reduce max %s on @mesh["b"] : tensor<64x16xf32>
// CHECK-NEXT:   %s_1 = hlo.max %t, %1 : tensor<64x16xf32>

// -----

// scatter into a vocabulary-split table: indices shifted by the device's first row, the
// updates for other devices' rows are out of bounds locally and skipped; no collective.
spmd.mesh @mesh = <["v"=4]>
func.func @vocab_scatter(%t: tensor<64x16xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"v"}, {}]>}, %i: tensor<8x1xi32>, %u: tensor<8x16xf32>)
    -> (tensor<64x16xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"v"}, {}]>}) {
  %s = hlo.scatter add %t, %i, %u, update_window_dims = [1], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1 : (tensor<64x16xf32>, tensor<8x1xi32>, tensor<8x16xf32>) -> tensor<64x16xf32>
  func.return %s : tensor<64x16xf32>
}
// CHECK:      func.func @vocab_scatter(%t: tensor<16x16xf32> {{.*}}, %i: tensor<8x1xi32> {{.*}}, %u: tensor<8x16xf32> {{.*}})
// CHECK-NEXT:   %0 = spmd.axis_index @mesh["v"] : tensor<i32>
// CHECK-NEXT:   %1 = hlo.constant dense<16> : tensor<i32>
// CHECK-NEXT:   %2 = hlo.mul %0, %1 : tensor<i32>
// CHECK-NEXT:   %3 = hlo.broadcast %2, dims = [] : (tensor<i32>) -> tensor<8x1xi32>
// CHECK-NEXT:   %4 = hlo.sub %i, %3 : tensor<8x1xi32>
// CHECK-NEXT:   %s = hlo.scatter add %t, %4, %u, {{.*}} : (tensor<16x16xf32>, tensor<8x1xi32>, tensor<8x16xf32>) -> tensor<16x16xf32>
// CHECK-NEXT:   func.return %s : tensor<16x16xf32>

// -----

// scatter replace of batch-split updates cannot be combined: the updates are gathered.
spmd.mesh @mesh = <["b"=2]>
func.func @replace(%t: tensor<64x16xf32>, %i: tensor<8x1xi32> {spmd.sharding = #spmd.sharding<@mesh, [{"b"}, {}]>}, %u: tensor<8x16xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"b"}, {}]>})
    -> (tensor<64x16xf32> {spmd.sharding = #spmd.sharding<@mesh, [{}, {}]>}) {
  %s = hlo.scatter replace %t, %i, %u, update_window_dims = [1], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1 : (tensor<64x16xf32>, tensor<8x1xi32>, tensor<8x16xf32>) -> tensor<64x16xf32>
  func.return %s : tensor<64x16xf32>
}
// CHECK:      func.func @replace(
// CHECK-NEXT:   %0 = collective.all_gather %i on @mesh["b"], dim = 0 : (tensor<4x1xi32>) -> tensor<8x1xi32>
// CHECK-NEXT:   %1 = collective.all_gather %u on @mesh["b"], dim = 0 : (tensor<4x16xf32>) -> tensor<8x16xf32>
// CHECK-NEXT:   %s = hlo.scatter replace %t, %0, %1
// CHECK-NOT:    collective.
// CHECK:        func.return %s
