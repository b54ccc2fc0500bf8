// RUN: shardc-opt %s -p 'collective-combine{overlap-aware=false}' --split-input-file | filecheck %s
// RUN: shardc-opt %s -p collective-combine --split-input-file | filecheck %s --check-prefix=AWARE
// RUN: shardc-opt %s -p 'collective-combine{align-dims=false}' --split-input-file | filecheck %s --check-prefix=BYDIM
// RUN: shardc-opt %s -p 'collective-combine{threshold-bytes=64 overlap-aware=false}' --split-input-file | filecheck %s --check-prefix=SMALL
// RUN: shardc-opt %s -p 'collective-combine{max-count=2 overlap-aware=false}' --split-input-file | filecheck %s --check-prefix=COUNT
// RUN: not shardc-opt %s -p 'collective-combine{bogus=1}' 2>&1 | filecheck %s --check-prefix=BADOPT

// RUN: not shardc-opt %s --split-input-file -p 'collective-combine{threshold-bytes=-1}' 2>&1 | filecheck %s --check-prefix=NEG
// RUN: not shardc-opt %s --split-input-file -p 'collective-combine{chip=v1}' 2>&1 | filecheck %s --check-prefix=CHIP
// RUN: not shardc-opt %s -p 'collective-combine{max-count=abc}' 2>&1 | filecheck %s --check-prefix=TYPE

// NEG: error: collective-combine: threshold-bytes must be >= 0 and max-count >= 1
// NEG-NOT: Traceback
// CHIP: error: collective-combine: unknown chip 'v1' (known: v4, v5e, v5p, v6e)
// TYPE: <pass-pipeline>:1:30: error: invalid pass pipeline: invalid pass option value 'abc': expected int
// BADOPT: <pass-pipeline>:1:{{[0-9]+}}: error: invalid pass pipeline: unknown pass option 'bogus' (the pass's options: threshold-bytes, max-count, overlap-aware, chip, align-dims)

// Independent all_reduces of one kind over one group become one variadic all_reduce,
// placed after the last operand it needs; users are redirected.
spmd.mesh @mesh = <["data"=2, "model"=2]>
func.func @combine(%a: tensor<8xf32>, %b: tensor<8xf32>, %c: tensor<4xf32>) -> (tensor<8xf32>, tensor<8xf32>, tensor<4xf32>)
    attributes {spmd.partitioned} {
  %ra = collective.all_reduce add %a on @mesh["data"] : tensor<8xf32>
  %x = hlo.exp %ra : tensor<8xf32>
  %b2 = hlo.exp %b : tensor<8xf32>
  %rb = collective.all_reduce add %b2 on @mesh["data"] : tensor<8xf32>
  %rc = collective.all_reduce add %c on @mesh["data"] : tensor<4xf32>
  func.return %x, %rb, %rc : tensor<8xf32>, tensor<8xf32>, tensor<4xf32>
}
// CHECK-LABEL: func.func @combine
// CHECK:       %b2 = hlo.exp %b : tensor<8xf32>
// CHECK-NEXT:  %ra, %rb, %rc = collective.all_reduce add %a, %b2, %c on @mesh["data"] : tensor<8xf32>, tensor<8xf32>, tensor<4xf32>
// CHECK-NEXT:  %x = hlo.exp %ra : tensor<8xf32>
// CHECK-NEXT:  func.return %x, %rb, %rc
// Overlap-aware (the default): %ra's result is used (by %x) before %rb exists, so merging
// would make that use wait for the whole group; %rb and %rc still merge.
// AWARE-LABEL: func.func @combine
// AWARE:       %ra = collective.all_reduce add %a on @mesh["data"]
// AWARE:       %rb, %rc = collective.all_reduce add %b2, %c on @mesh["data"]
// Over the threshold (64 bytes): 32 + 32 fit, the third (16 more) would not.
// SMALL-LABEL: func.func @combine
// SMALL:       %ra, %rb = collective.all_reduce add %a, %b2 on @mesh["data"]
// SMALL:       %rc = collective.all_reduce add %c on @mesh["data"]
// COUNT-LABEL: func.func @combine
// COUNT:       %ra, %rb = collective.all_reduce add %a, %b2 on @mesh["data"]
// COUNT:       %rc = collective.all_reduce add %c on @mesh["data"]

// -----

// Never across a dependency; kinds, reduction kinds, groups and dtypes never mixed.
spmd.mesh @mesh = <["data"=2, "model"=2]>
func.func @keep(%a: tensor<8xf32>, %i: tensor<8xi32>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xi32>)
    attributes {spmd.partitioned} {
  %r1 = collective.all_reduce add %a on @mesh["data"] : tensor<8xf32>
  %r2 = collective.all_reduce add %r1 on @mesh["data"] : tensor<8xf32>
  %r3 = collective.all_reduce max %a on @mesh["data"] : tensor<8xf32>
  %r4 = collective.all_reduce add %a on @mesh["model"] : tensor<8xf32>
  %r5 = collective.all_reduce add %i on @mesh["data"] : tensor<8xi32>
  func.return %r1, %r2, %r3, %r4, %r5 : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xi32>
}
// CHECK-LABEL: func.func @keep
// CHECK-COUNT-5: collective.all_reduce {{add|max}} %{{[a-z0-9]+}} on
// CHECK-NOT:   collective.all_reduce
// CHECK:       func.return

// -----

// all_gathers combine by dimension; reduce_scatters by kind and dimension.
spmd.mesh @mesh = <["x"=4]>
func.func @gathers(%a: tensor<2x4xf32>, %b: tensor<2x8xf32>, %c: tensor<4x2xf32>) -> (tensor<8x4xf32>, tensor<8x8xf32>, tensor<4x8xf32>, tensor<2x2xf32>, tensor<2x2xf32>)
    attributes {spmd.partitioned} {
  %ga = collective.all_gather %a on @mesh["x"], dim = 0 : (tensor<2x4xf32>) -> tensor<8x4xf32>
  %gb = collective.all_gather %b on @mesh["x"], dim = 0 : (tensor<2x8xf32>) -> tensor<8x8xf32>
  %gc = collective.all_gather %c on @mesh["x"], dim = 1 : (tensor<4x2xf32>) -> tensor<4x8xf32>
  %sa = collective.reduce_scatter add %b on @mesh["x"], dim = 1 : (tensor<2x8xf32>) -> tensor<2x2xf32>
  %sb = collective.reduce_scatter add %b on @mesh["x"], dim = 1 : (tensor<2x8xf32>) -> tensor<2x2xf32>
  func.return %ga, %gb, %gc, %sa, %sb : tensor<8x4xf32>, tensor<8x8xf32>, tensor<4x8xf32>, tensor<2x2xf32>, tensor<2x2xf32>
}
// An all_gather on another dimension joins, aligned by a transpose swapping the two
// dimensions before and after (XLA's combine_by_dim=false); the most frequent dim wins.
// CHECK-LABEL: func.func @gathers
// CHECK:       %0 = hlo.transpose %c, dims = [1, 0] : (tensor<4x2xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:  %ga, %gb, %1 = collective.all_gather %a, %b, %0 on @mesh["x"], dim = 0 : (tensor<2x4xf32>, tensor<2x8xf32>, tensor<2x4xf32>) -> (tensor<8x4xf32>, tensor<8x8xf32>, tensor<8x4xf32>)
// CHECK-NEXT:  %gc = hlo.transpose %1, dims = [1, 0] : (tensor<8x4xf32>) -> tensor<4x8xf32>
// CHECK-NEXT:  %sa, %sb = collective.reduce_scatter add %b, %b on @mesh["x"], dim = 1
// With align-dims=false, all_gathers merge only on the same dimension.
// BYDIM-LABEL: func.func @gathers
// BYDIM:       %ga, %gb = collective.all_gather %a, %b on @mesh["x"], dim = 0 : (tensor<2x4xf32>, tensor<2x8xf32>) -> (tensor<8x4xf32>, tensor<8x8xf32>)
// BYDIM-NEXT:  %gc = collective.all_gather %c on @mesh["x"], dim = 1

// -----

// Overlap-aware: a long matmul between two gradients' all_reduces; merging would start the
// first one only after the matmul, so they stay apart (XLA's combiner merges them).
spmd.mesh @mesh = <["data"=8]>
func.func @apart(%a: tensor<1024x1024xbf16>, %b: tensor<2048x2048xbf16>) -> (tensor<1024x1024xbf16>, tensor<2048x2048xbf16>)
    attributes {spmd.partitioned} {
  %ra = collective.all_reduce add %a on @mesh["data"] : tensor<1024x1024xbf16>
  %d = hlo.dot %b, %b, contracting_dims = [1] x [0] : (tensor<2048x2048xbf16>, tensor<2048x2048xbf16>) -> tensor<2048x2048xbf16>
  %rd = collective.all_reduce add %d on @mesh["data"] : tensor<2048x2048xbf16>
  func.return %ra, %rd : tensor<1024x1024xbf16>, tensor<2048x2048xbf16>
}
// AWARE-LABEL: func.func @apart
// AWARE:       %ra = collective.all_reduce add %a on @mesh["data"]
// AWARE:       %rd = collective.all_reduce add %d on @mesh["data"]
// CHECK-LABEL: func.func @apart
// CHECK:       %ra, %rd = collective.all_reduce add %a, %d on @mesh["data"]

// -----

// XLA's cross-group cycle: %a1/%a2 share a key, %b1/%b2 another, %a2 needs %b1 and %b2
// needs %a1. Merging both pairs would make each merged op wait for the other: the first
// pair merges, the second is refused (no cycle, whatever the policy).
spmd.mesh @mesh = <["x"=2, "y"=2]>
func.func @cross_cycle(%p: tensor<8xf32>, %q: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>)
    attributes {spmd.partitioned} {
  %a1 = collective.all_reduce add %p on @mesh["x"] : tensor<8xf32>
  %b1 = collective.all_reduce add %q on @mesh["y"] : tensor<8xf32>
  %a2 = collective.all_reduce add %b1 on @mesh["x"] : tensor<8xf32>
  %b2 = collective.all_reduce add %a1 on @mesh["y"] : tensor<8xf32>
  func.return %a2, %b2 : tensor<8xf32>, tensor<8xf32>
}
// CHECK-LABEL: func.func @cross_cycle
// CHECK:       %b1 = collective.all_reduce add %q on @mesh["y"]
// CHECK-NEXT:  %a1, %a2 = collective.all_reduce add %p, %b1 on @mesh["x"]
// CHECK-NEXT:  %b2 = collective.all_reduce add %a1 on @mesh["y"]
// COUNT-LABEL: func.func @cross_cycle
// COUNT:       %a1, %a2 = collective.all_reduce add %p, %b1 on @mesh["x"]
// COUNT-NEXT:  %b2 = collective.all_reduce add %a1 on @mesh["y"]

// -----

// reduce_scatters on another scatter dimension join too, aligned by a transpose of the
// operand before and of the result after (XLA's ReduceScatterCombiner, combine_by_dim=false).
spmd.mesh @mesh = <["x"=4]>
func.func @scatters(%a: tensor<8x4xf32>, %b: tensor<4x8xf32>, %c: tensor<8x8xf32>)
    -> (tensor<2x4xf32>, tensor<4x2xf32>, tensor<8x2xf32>) attributes {spmd.partitioned} {
  %sa = collective.reduce_scatter add %a on @mesh["x"], dim = 0 : (tensor<8x4xf32>) -> tensor<2x4xf32>
  %sb = collective.reduce_scatter add %b on @mesh["x"], dim = 1 : (tensor<4x8xf32>) -> tensor<4x2xf32>
  %sc = collective.reduce_scatter add %c on @mesh["x"], dim = 1 : (tensor<8x8xf32>) -> tensor<8x2xf32>
  func.return %sa, %sb, %sc : tensor<2x4xf32>, tensor<4x2xf32>, tensor<8x2xf32>
}
// CHECK-LABEL: func.func @scatters
// CHECK:       %0 = hlo.transpose %a, dims = [1, 0] : (tensor<8x4xf32>) -> tensor<4x8xf32>
// CHECK-NEXT:  %1, %sb, %sc = collective.reduce_scatter add %0, %b, %c on @mesh["x"], dim = 1 : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<8x8xf32>) -> (tensor<4x2xf32>, tensor<4x2xf32>, tensor<8x2xf32>)
// CHECK-NEXT:  %sa = hlo.transpose %1, dims = [1, 0] : (tensor<4x2xf32>) -> tensor<2x4xf32>
// BYDIM-LABEL: func.func @scatters
// BYDIM:       %sa = collective.reduce_scatter add %a on @mesh["x"], dim = 0
// BYDIM-NEXT:  %sb, %sc = collective.reduce_scatter add %b, %c on @mesh["x"], dim = 1

// -----

// XLA's control-predecessors (spmd.control_after naming an op's spmd.control_id) order
// two collectives: they are never merged (the merged op would wait for itself); a third,
// unordered one joins one of them, and the merged op keeps the names of both.
spmd.mesh @mesh = <["x"=4]>
func.func @control(%a: tensor<8xf32>, %b: tensor<8xf32>, %c: tensor<8xf32>)
    -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) attributes {spmd.partitioned} {
  %ra = collective.all_reduce add %a on @mesh["x"] {spmd.control_id = ["ra"]} : tensor<8xf32>
  %rb = collective.all_reduce add %b on @mesh["x"] {spmd.control_after = ["ra"]} : tensor<8xf32>
  %rc = collective.all_reduce add %c on @mesh["x"] {spmd.control_id = ["rc"]} : tensor<8xf32>
  func.return %ra, %rb, %rc : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
}
// CHECK-LABEL: func.func @control
// CHECK:       %ra = collective.all_reduce add %a on @mesh["x"] {spmd.control_id = ["ra"]}
// CHECK-NEXT:  %rb, %rc = collective.all_reduce add %b, %c on @mesh["x"] {spmd.control_after = ["ra"], spmd.control_id = ["rc"]}
