// RUN: shardc-opt %s -p async-split --split-input-file | filecheck %s
// RUN: shardc-opt %s -p 'async-split{min-bytes=64}' --split-input-file | filecheck %s --check-prefix=MIN
// RUN: shardc-opt %s -p 'async-split{inverse=true}' --split-input-file | filecheck %s --check-prefix=JOIN
// RUN: shardc-opt %s -p 'async-split,async-split{inverse=true}' --split-input-file | filecheck %s --check-prefix=ROUND
// RUN: not shardc-opt %s -p 'async-split{min-bytes=-1}' 2>&1 | filecheck %s --check-prefix=NEG
// RUN: not shardc-opt %s -p 'async-split{inverse=7}' 2>&1 | filecheck %s --check-prefix=TYPE
// RUN: not shardc-opt %s -p 'async-split{min-bytes=many}' 2>&1 | filecheck %s --check-prefix=TYPE2

// NEG-NOT:  Traceback
// NEG:      error: invalid pass pipeline: pass 'async-split': option 'min-bytes' must be at least 0, got -1
// NEG-NOT:  Traceback
// TYPE:     error: invalid pass pipeline: invalid pass option value '7': expected bool
// TYPE2:    error: invalid pass pipeline: invalid pass option value 'many': expected int

// XLA's AsyncCollectiveCreator: every sync collective becomes its _start form and a
// done right after it (the scheduler moves them apart). Variadic collectives give one
// future holding every result; discardable attributes move to the _start.
spmd.mesh @mesh = <["x"=4]>
func.func @every_kind(%a: tensor<8x4xf32>, %b: tensor<4xf32>) -> (tensor<8x4xf32>, tensor<4xf32>, tensor<32x4xf32>, tensor<2x4xf32>, tensor<2x16xf32>, tensor<8x4xf32>, tensor<8x4xf32>) attributes {spmd.partitioned, spmd.per_device_io} {
  %ar, %ar2 = collective.all_reduce add %a, %b on @mesh["x"] {tag = 1 : i64} : tensor<8x4xf32>, tensor<4xf32>
  %ag = collective.all_gather %a on @mesh["x"], dim = 0 : (tensor<8x4xf32>) -> tensor<32x4xf32>
  %rs = collective.reduce_scatter max %a on @mesh["x"], dim = 0 : (tensor<8x4xf32>) -> tensor<2x4xf32>
  %aa = collective.all_to_all %a on @mesh["x"], split_dim = 0, concat_dim = 1 : (tensor<8x4xf32>) -> tensor<2x16xf32>
  %p = collective.permute %a on @mesh["x"], shift = -1 : tensor<8x4xf32>
  %q = collective.permute %a on @mesh["x"], pairs = [[0, 1], [1, 0]] : tensor<8x4xf32>
  func.return %ar, %ar2, %ag, %rs, %aa, %p, %q : tensor<8x4xf32>, tensor<4xf32>, tensor<32x4xf32>, tensor<2x4xf32>, tensor<2x16xf32>, tensor<8x4xf32>, tensor<8x4xf32>
}
// CHECK-LABEL: func.func @every_kind
// CHECK-NEXT:    %[[F0:.*]] = collective.all_reduce_start add %a, %b on @mesh["x"] {tag = 1 : i64} : tensor<8x4xf32>, tensor<4xf32> -> !collective.future<tensor<8x4xf32>, tensor<4xf32>>
// CHECK-NEXT:    %ar, %ar2 = collective.done %[[F0]] : !collective.future<tensor<8x4xf32>, tensor<4xf32>> -> tensor<8x4xf32>, tensor<4xf32>
// CHECK-NEXT:    %[[F1:.*]] = collective.all_gather_start %a on @mesh["x"], dim = 0 : (tensor<8x4xf32>) -> !collective.future<tensor<32x4xf32>>
// CHECK-NEXT:    %ag = collective.done %[[F1]]
// CHECK-NEXT:    %[[F2:.*]] = collective.reduce_scatter_start max %a on @mesh["x"], dim = 0 : (tensor<8x4xf32>) -> !collective.future<tensor<2x4xf32>>
// CHECK-NEXT:    %rs = collective.done %[[F2]]
// CHECK-NEXT:    %[[F3:.*]] = collective.all_to_all_start %a on @mesh["x"], split_dim = 0, concat_dim = 1 : (tensor<8x4xf32>) -> !collective.future<tensor<2x16xf32>>
// CHECK-NEXT:    %aa = collective.done %[[F3]]
// CHECK-NEXT:    %[[F4:.*]] = collective.permute_start %a on @mesh["x"], shift = -1 : tensor<8x4xf32> -> !collective.future<tensor<8x4xf32>>
// CHECK-NEXT:    %p = collective.done %[[F4]]
// CHECK-NEXT:    %[[F5:.*]] = collective.permute_start %a on @mesh["x"], pairs = {{\[}}[0, 1], [1, 0]] : tensor<8x4xf32> -> !collective.future<tensor<8x4xf32>>
// CHECK-NEXT:    %q = collective.done %[[F5]]
// CHECK-NEXT:    func.return %ar, %ar2, %ag, %rs, %aa, %p, %q
// XLA's *_min_threshold_in_bytes: with min-bytes=64, collectives of 16 bytes stay sync.
// MIN-LABEL: func.func @small
// MIN-NEXT:    collective.all_reduce add %s
// MIN-NEXT:    collective.all_reduce_start add %a
// ROUND-LABEL: func.func @every_kind
// ROUND-NEXT:    %ar, %ar2 = collective.all_reduce add %a, %b on @mesh["x"] {tag = 1 : i64}
// ROUND-NEXT:    %ag = collective.all_gather %a
// ROUND-NEXT:    %rs = collective.reduce_scatter max %a
// ROUND-NEXT:    %aa = collective.all_to_all %a
// ROUND-NEXT:    %p = collective.permute %a on @mesh["x"], shift = -1
// ROUND-NEXT:    %q = collective.permute %a on @mesh["x"], pairs
// ROUND-NEXT:    func.return

// -----

spmd.mesh @mesh = <["x"=4]>
func.func @small(%s: tensor<4xf32>, %a: tensor<8x4xf32>) -> (tensor<4xf32>, tensor<8x4xf32>) attributes {spmd.partitioned, spmd.per_device_io} {
  %r = collective.all_reduce add %s on groups [[0, 1], [2, 3]] : tensor<4xf32>
  %t = collective.all_reduce add %a on @mesh["x"] : tensor<8x4xf32>
  func.return %r, %t : tensor<4xf32>, tensor<8x4xf32>
}
// CHECK-LABEL: func.func @small
// CHECK-NEXT:    collective.all_reduce_start add %s on groups {{\[}}[0, 1], [2, 3]]

// -----

// XLA's ConvertAsyncCollectivesToSync: SimpleAllReduce (nothing between), ...WithNop
// (only free ops between: constants, axis_index), ...WithNonNop (compute between: stays
// async), MultipleInFlightNestedPartial (the inner pair joins; the outer one then has a
// collective between its start and done and stays).
spmd.mesh @mesh = <["x"=4]>
func.func @join(%a: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<i32>, tensor<8xf32>, tensor<32xf32>) attributes {spmd.partitioned, spmd.per_device_io} {
  %f0 = collective.all_reduce_start add %a on @mesh["x"] : tensor<8xf32> -> !collective.future<tensor<8xf32>>
  %r0 = collective.done %f0 : !collective.future<tensor<8xf32>> -> tensor<8xf32>
  %f1 = collective.permute_start %a on @mesh["x"], shift = 1 : tensor<8xf32> -> !collective.future<tensor<8xf32>>
  %c = hlo.constant dense<1.0> : tensor<8xf32>
  %i = spmd.axis_index @mesh["x"] : tensor<i32>
  %r1 = collective.done %f1 : !collective.future<tensor<8xf32>> -> tensor<8xf32>
  %f2 = collective.all_reduce_start add %a on @mesh["x"] : tensor<8xf32> -> !collective.future<tensor<8xf32>>
  %e = hlo.exp %a : tensor<8xf32>
  %r2 = collective.done %f2 : !collective.future<tensor<8xf32>> -> tensor<8xf32>
  %f3 = collective.all_gather_start %a on @mesh["x"], dim = 0 : (tensor<8xf32>) -> !collective.future<tensor<32xf32>>
  %f4 = collective.all_reduce_start max %a on @mesh["x"] : tensor<8xf32> -> !collective.future<tensor<8xf32>>
  %r4 = collective.done %f4 : !collective.future<tensor<8xf32>> -> tensor<8xf32>
  %r3 = collective.done %f3 : !collective.future<tensor<32xf32>> -> tensor<32xf32>
  func.return %r0, %r1, %r2, %i, %r4, %r3 : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<i32>, tensor<8xf32>, tensor<32xf32>
}
// JOIN-LABEL: func.func @join
// JOIN-NEXT:    %r0 = collective.all_reduce add %a on @mesh["x"] : tensor<8xf32>
// JOIN-NEXT:    %c = hlo.constant
// JOIN-NEXT:    %i = spmd.axis_index
// JOIN-NEXT:    %r1 = collective.permute %a on @mesh["x"], shift = 1 : tensor<8xf32>
// JOIN-NEXT:    %f2 = collective.all_reduce_start add %a
// JOIN-NEXT:    %e = hlo.exp %a
// JOIN-NEXT:    %r2 = collective.done %f2
// JOIN-NEXT:    %f3 = collective.all_gather_start %a
// JOIN-NEXT:    %r4 = collective.all_reduce max %a on @mesh["x"] : tensor<8xf32>
// JOIN-NEXT:    %r3 = collective.done %f3
// JOIN-NEXT:    func.return
