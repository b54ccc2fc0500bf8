// RUN: not shardc-opt %s -p spmd-partition --split-input-file 2>&1 | filecheck %s
// RUN: shardc-opt %s -p spmd-propagate,spmd-partition,canonicalize,cse --split-input-file | filecheck %s --check-prefix=PIPE

// spmd-partition refuses a sharding that is still open (spmd-propagate decides open
// dimensions), at the function or op that carries it (shardc-opt stops at the first: the
// constraint's refusal is tested in tests/e2e/test_partition_open_dims.py); after
// spmd-propagate it partitions.

spmd.mesh @mesh = <["a"=2, "b"=2]>
func.func @open_argument(%x: tensor<8x8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"a", ?}, {?}]>},
                         %y: tensor<8x8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"a", "b"}, {}]>})
    -> (tensor<8x8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{?}, {?}]>}) {
  %s = hlo.add %x, %y : tensor<8x8xf32>
  func.return %s : tensor<8x8xf32>
}
// CHECK: spmd-partition-open.mlir:10:1: error: 'func.func' op spmd-partition: the sharding of argument 0 has an open dimension (`?`), which spmd-propagate decides: run spmd-propagate first
// The open dimensions take "b" from %y: no collective at all.
// PIPE-LABEL: func.func @open_argument
// PIPE-SAME:  %x: tensor<2x8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"a", "b"}, {}]>}
// PIPE-SAME:  -> (tensor<2x8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"a", "b"}, {}]>})
// PIPE-NEXT:  %s = hlo.add %x, %y
// PIPE-NEXT:  func.return %s

// -----

spmd.mesh @mesh = <["x"=2]>
func.func @open_constraint(%x: tensor<8xf32>) -> tensor<8xf32> {
  %c = spmd.constraint %x <@mesh, [{?}]> : tensor<8xf32>
  func.return %c : tensor<8xf32>
}
// PIPE-LABEL: func.func @open_constraint
// PIPE-SAME:  %x: tensor<8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{}]>}
// PIPE-NEXT:  func.return %x
