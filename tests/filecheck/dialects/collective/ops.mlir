// RUN: SHARDC_ROUNDTRIP
// RUN: SHARDC_GENERIC_ROUNDTRIP

// Every collective op and type of DESIGN.md ("Level S"), in its exact custom syntax.
// @mesh is <["data"=2, "model"=4]>, @ring is <["x"=8]> (one mesh per program).

spmd.mesh @mesh = <["data"=2, "model"=4]>

func.func @sync(%x: tensor<8x32xf32>, %y: tensor<32xf32>, %g: tensor<8x8xf32>, %h: tensor<2x8xf32>, %v: tensor<2xf32>, %i: tensor<4xi32>) {
  %r = collective.all_reduce add %x on @mesh["model"] : tensor<8x32xf32>
  %a, %b = collective.all_reduce add %x, %y on @mesh["data"] : tensor<8x32xf32>, tensor<32xf32>
  %mul = collective.all_reduce mul %x on @mesh["model"] : tensor<8x32xf32>
  %max = collective.all_reduce max %i on @mesh["data", "model"] : tensor<4xi32>
  %min = collective.all_reduce min %x on @mesh["model", "data"] : tensor<8x32xf32>
  %ag = collective.all_gather %g on @mesh["model"], dim = 1 : (tensor<8x8xf32>) -> tensor<8x32xf32>
  %ag2 = collective.all_gather %g on @mesh["data", "model"], dim = 0 : (tensor<8x8xf32>) -> tensor<64x8xf32>
  %rs = collective.reduce_scatter add %x on @mesh["model"], dim = 1 : (tensor<8x32xf32>) -> tensor<8x8xf32>
  %c, %d = collective.all_gather %h, %v on @mesh["model"], dim = 0 : (tensor<2x8xf32>, tensor<2xf32>) -> (tensor<8x8xf32>, tensor<8xf32>)
  %e, %f = collective.reduce_scatter max %x, %y on @mesh["model"], dim = 0 : (tensor<8x32xf32>, tensor<32xf32>) -> (tensor<2x32xf32>, tensor<8xf32>)
  %t = collective.all_to_all %x on @mesh["model"], split_dim = 1, concat_dim = 0 : (tensor<8x32xf32>) -> tensor<32x8xf32>
  %gr = collective.all_reduce add %x on groups [[0, 1], [2, 3], [4, 5], [6, 7]] : tensor<8x32xf32>
  %gg = collective.all_gather %g on groups [[0, 2, 4, 6], [1, 3, 5, 7]], dim = 0 : (tensor<8x8xf32>) -> tensor<32x8xf32>
  %p0 = collective.permute %x on @mesh["model"], shift = 1 : tensor<8x32xf32>
  %p1 = collective.permute %x on @mesh["model"], shift = -1 : tensor<8x32xf32>
  %p2 = collective.permute %x on @mesh["model"], pairs = [[0, 1], [1, 0]] : tensor<8x32xf32>
  %p3 = collective.permute %x on groups [[0, 1, 2, 3], [4, 5, 6, 7]], pairs = [[0, 3], [3, 2]] : tensor<8x32xf32>
  func.return
}

// CHECK:      func.func @sync(
// CHECK-NEXT:   %r = collective.all_reduce add %x on @mesh["model"] : tensor<8x32xf32>
// CHECK-NEXT:   %a, %b = collective.all_reduce add %x, %y on @mesh["data"] : tensor<8x32xf32>, tensor<32xf32>
// CHECK-NEXT:   %mul = collective.all_reduce mul %x on @mesh["model"] : tensor<8x32xf32>
// CHECK-NEXT:   %max = collective.all_reduce max %i on @mesh["data", "model"] : tensor<4xi32>
// CHECK-NEXT:   %min = collective.all_reduce min %x on @mesh["model", "data"] : tensor<8x32xf32>
// CHECK-NEXT:   %ag = collective.all_gather %g on @mesh["model"], dim = 1 : (tensor<8x8xf32>) -> tensor<8x32xf32>
// CHECK-NEXT:   %ag2 = collective.all_gather %g on @mesh["data", "model"], dim = 0 : (tensor<8x8xf32>) -> tensor<64x8xf32>
// CHECK-NEXT:   %rs = collective.reduce_scatter add %x on @mesh["model"], dim = 1 : (tensor<8x32xf32>) -> tensor<8x8xf32>
// CHECK-NEXT:   %c, %d = collective.all_gather %h, %v on @mesh["model"], dim = 0 : (tensor<2x8xf32>, tensor<2xf32>) -> (tensor<8x8xf32>, tensor<8xf32>)
// CHECK-NEXT:   %e, %f = collective.reduce_scatter max %x, %y on @mesh["model"], dim = 0 : (tensor<8x32xf32>, tensor<32xf32>) -> (tensor<2x32xf32>, tensor<8xf32>)
// CHECK-NEXT:   %t = collective.all_to_all %x on @mesh["model"], split_dim = 1, concat_dim = 0 : (tensor<8x32xf32>) -> tensor<32x8xf32>
// CHECK-NEXT:   %gr = collective.all_reduce add %x on groups {{\[\[}}0, 1], [2, 3], [4, 5], [6, 7]] : tensor<8x32xf32>
// CHECK-NEXT:   %gg = collective.all_gather %g on groups {{\[\[}}0, 2, 4, 6], [1, 3, 5, 7]], dim = 0 : (tensor<8x8xf32>) -> tensor<32x8xf32>
// CHECK-NEXT:   %p0 = collective.permute %x on @mesh["model"], shift = 1 : tensor<8x32xf32>
// CHECK-NEXT:   %p1 = collective.permute %x on @mesh["model"], shift = -1 : tensor<8x32xf32>
// CHECK-NEXT:   %p2 = collective.permute %x on @mesh["model"], pairs = {{\[\[}}0, 1], [1, 0]] : tensor<8x32xf32>
// CHECK-NEXT:   %p3 = collective.permute %x on groups {{\[\[}}0, 1, 2, 3], [4, 5, 6, 7]], pairs = {{\[\[}}0, 3], [3, 2]] : tensor<8x32xf32>
// CHECK-NEXT:   func.return

// CHECK-GENERIC: %r = "collective.all_reduce"(%x) <{kind = "add", mesh = @mesh, mesh_axes = ["model"]}> : (tensor<8x32xf32>) -> tensor<8x32xf32>
// CHECK-GENERIC: %a, %b = "collective.all_reduce"(%x, %y) <{kind = "add", mesh = @mesh, mesh_axes = ["data"]}> : (tensor<8x32xf32>, tensor<32xf32>) -> (tensor<8x32xf32>, tensor<32xf32>)
// CHECK-GENERIC: %ag = "collective.all_gather"(%g) <{mesh = @mesh, mesh_axes = ["model"], dim = 1 : i64}> : (tensor<8x8xf32>) -> tensor<8x32xf32>
// CHECK-GENERIC: %t = "collective.all_to_all"(%x) <{mesh = @mesh, mesh_axes = ["model"], split_dim = 1 : i64, concat_dim = 0 : i64}> : (tensor<8x32xf32>) -> tensor<32x8xf32>
// CHECK-GENERIC: %gr = "collective.all_reduce"(%x) <{kind = "add", groups = [array<i64: 0, 1>, array<i64: 2, 3>, array<i64: 4, 5>, array<i64: 6, 7>]}> : (tensor<8x32xf32>) -> tensor<8x32xf32>
// CHECK-GENERIC: %p1 = "collective.permute"(%x) <{mesh = @mesh, mesh_axes = ["model"], shift = -1 : i64}> : (tensor<8x32xf32>) -> tensor<8x32xf32>
// CHECK-GENERIC: %p2 = "collective.permute"(%x) <{mesh = @mesh, mesh_axes = ["model"], pairs = [array<i64: 0, 1>, array<i64: 1, 0>]}> : (tensor<8x32xf32>) -> tensor<8x32xf32>

// -----

spmd.mesh @mesh = <["data"=2, "model"=4]>

func.func @start(%x: tensor<8x32xf32>, %y: tensor<32xf32>, %g: tensor<8x8xf32>, %h: tensor<2x8xf32>, %v: tensor<2xf32>) {
  %f0 = collective.all_reduce_start add %x on @mesh["model"] : tensor<8x32xf32> -> !collective.future<tensor<8x32xf32>>
  %r0 = collective.done %f0 : !collective.future<tensor<8x32xf32>> -> tensor<8x32xf32>
  %f1 = collective.all_reduce_start add %x, %y on @mesh["data"] : tensor<8x32xf32>, tensor<32xf32> -> !collective.future<tensor<8x32xf32>, tensor<32xf32>>
  %a1, %b1 = collective.done %f1 : !collective.future<tensor<8x32xf32>, tensor<32xf32>> -> tensor<8x32xf32>, tensor<32xf32>
  %f2 = collective.all_gather_start %g on @mesh["model"], dim = 1 : (tensor<8x8xf32>) -> !collective.future<tensor<8x32xf32>>
  %r2 = collective.done %f2 : !collective.future<tensor<8x32xf32>> -> tensor<8x32xf32>
  %f3 = collective.all_gather_start %h, %v on @mesh["model"], dim = 0 : (tensor<2x8xf32>, tensor<2xf32>) -> !collective.future<tensor<8x8xf32>, tensor<8xf32>>
  %a3, %b3 = collective.done %f3 : !collective.future<tensor<8x8xf32>, tensor<8xf32>> -> tensor<8x8xf32>, tensor<8xf32>
  %f4 = collective.reduce_scatter_start add %x on @mesh["model"], dim = 1 : (tensor<8x32xf32>) -> !collective.future<tensor<8x8xf32>>
  %r4 = collective.done %f4 : !collective.future<tensor<8x8xf32>> -> tensor<8x8xf32>
  %f5 = collective.reduce_scatter_start min %x, %y on @mesh["model"], dim = 0 : (tensor<8x32xf32>, tensor<32xf32>) -> !collective.future<tensor<2x32xf32>, tensor<8xf32>>
  %a5, %b5 = collective.done %f5 : !collective.future<tensor<2x32xf32>, tensor<8xf32>> -> tensor<2x32xf32>, tensor<8xf32>
  %f6 = collective.all_to_all_start %x on @mesh["model"], split_dim = 1, concat_dim = 0 : (tensor<8x32xf32>) -> !collective.future<tensor<32x8xf32>>
  %r6 = collective.done %f6 : !collective.future<tensor<32x8xf32>> -> tensor<32x8xf32>
  %f7 = collective.permute_start %x on @mesh["model"], shift = 1 : tensor<8x32xf32> -> !collective.future<tensor<8x32xf32>>
  %r7 = collective.done %f7 : !collective.future<tensor<8x32xf32>> -> tensor<8x32xf32>
  %f8 = collective.permute_start %y on groups [[0, 1], [2, 3], [4, 5], [6, 7]], pairs = [[0, 1], [1, 0]] : tensor<32xf32> -> !collective.future<tensor<32xf32>>
  %r8 = collective.done %f8 : !collective.future<tensor<32xf32>> -> tensor<32xf32>
  func.return
}

// CHECK:      func.func @start(
// CHECK-NEXT:   %f0 = collective.all_reduce_start add %x on @mesh["model"] : tensor<8x32xf32> -> !collective.future<tensor<8x32xf32>>
// CHECK-NEXT:   %r0 = collective.done %f0 : !collective.future<tensor<8x32xf32>> -> tensor<8x32xf32>
// CHECK-NEXT:   %f1 = collective.all_reduce_start add %x, %y on @mesh["data"] : tensor<8x32xf32>, tensor<32xf32> -> !collective.future<tensor<8x32xf32>, tensor<32xf32>>
// CHECK-NEXT:   %a1, %b1 = collective.done %f1 : !collective.future<tensor<8x32xf32>, tensor<32xf32>> -> tensor<8x32xf32>, tensor<32xf32>
// CHECK-NEXT:   %f2 = collective.all_gather_start %g on @mesh["model"], dim = 1 : (tensor<8x8xf32>) -> !collective.future<tensor<8x32xf32>>
// CHECK-NEXT:   %r2 = collective.done %f2 : !collective.future<tensor<8x32xf32>> -> tensor<8x32xf32>
// CHECK-NEXT:   %f3 = collective.all_gather_start %h, %v on @mesh["model"], dim = 0 : (tensor<2x8xf32>, tensor<2xf32>) -> !collective.future<tensor<8x8xf32>, tensor<8xf32>>
// CHECK-NEXT:   %a3, %b3 = collective.done %f3 : !collective.future<tensor<8x8xf32>, tensor<8xf32>> -> tensor<8x8xf32>, tensor<8xf32>
// CHECK-NEXT:   %f4 = collective.reduce_scatter_start add %x on @mesh["model"], dim = 1 : (tensor<8x32xf32>) -> !collective.future<tensor<8x8xf32>>
// CHECK-NEXT:   %r4 = collective.done %f4 : !collective.future<tensor<8x8xf32>> -> tensor<8x8xf32>
// CHECK-NEXT:   %f5 = collective.reduce_scatter_start min %x, %y on @mesh["model"], dim = 0 : (tensor<8x32xf32>, tensor<32xf32>) -> !collective.future<tensor<2x32xf32>, tensor<8xf32>>
// CHECK-NEXT:   %a5, %b5 = collective.done %f5 : !collective.future<tensor<2x32xf32>, tensor<8xf32>> -> tensor<2x32xf32>, tensor<8xf32>
// CHECK-NEXT:   %f6 = collective.all_to_all_start %x on @mesh["model"], split_dim = 1, concat_dim = 0 : (tensor<8x32xf32>) -> !collective.future<tensor<32x8xf32>>
// CHECK-NEXT:   %r6 = collective.done %f6 : !collective.future<tensor<32x8xf32>> -> tensor<32x8xf32>
// CHECK-NEXT:   %f7 = collective.permute_start %x on @mesh["model"], shift = 1 : tensor<8x32xf32> -> !collective.future<tensor<8x32xf32>>
// CHECK-NEXT:   %r7 = collective.done %f7 : !collective.future<tensor<8x32xf32>> -> tensor<8x32xf32>
// CHECK-NEXT:   %f8 = collective.permute_start %y on groups {{\[\[}}0, 1], [2, 3], [4, 5], [6, 7]], pairs = {{\[\[}}0, 1], [1, 0]] : tensor<32xf32> -> !collective.future<tensor<32xf32>>
// CHECK-NEXT:   %r8 = collective.done %f8 : !collective.future<tensor<32xf32>> -> tensor<32xf32>
// CHECK-NEXT:   func.return

// CHECK-GENERIC: %f1 = "collective.all_reduce_start"(%x, %y) <{kind = "add", mesh = @mesh, mesh_axes = ["data"]}> : (tensor<8x32xf32>, tensor<32xf32>) -> !collective.future<tensor<8x32xf32>, tensor<32xf32>>
// CHECK-GENERIC: %a1, %b1 = "collective.done"(%f1) : (!collective.future<tensor<8x32xf32>, tensor<32xf32>>) -> (tensor<8x32xf32>, tensor<32xf32>)
// CHECK-GENERIC: %f5 = "collective.reduce_scatter_start"(%x, %y) <{kind = "min", mesh = @mesh, mesh_axes = ["model"], dim = 0 : i64}> : (tensor<8x32xf32>, tensor<32xf32>) -> !collective.future<tensor<2x32xf32>, tensor<8xf32>>

// -----

// DESIGN.md's ring examples.
spmd.mesh @ring = <["x"=8]>

func.func @ring_ops(%x: tensor<8x64xf32>, %y: tensor<8x16xf32>) {
  %r = collective.all_to_all %x on @ring["x"], split_dim = 1, concat_dim = 0 : (tensor<8x64xf32>) -> tensor<64x8xf32>
  %s = collective.permute %y on @ring["x"], shift = 1 : tensor<8x16xf32>
  %n = collective.permute %y on @ring["x"], shift = -3 : tensor<8x16xf32>
  %p = collective.permute %y on @ring["x"], pairs = [[0, 1], [1, 0]] : tensor<8x16xf32>
  %e = collective.permute %y on @ring["x"], pairs = [] : tensor<8x16xf32>
  func.return
}

// CHECK:      func.func @ring_ops(%x: tensor<8x64xf32>, %y: tensor<8x16xf32>) {
// CHECK-NEXT:   %r = collective.all_to_all %x on @ring["x"], split_dim = 1, concat_dim = 0 : (tensor<8x64xf32>) -> tensor<64x8xf32>
// CHECK-NEXT:   %s = collective.permute %y on @ring["x"], shift = 1 : tensor<8x16xf32>
// CHECK-NEXT:   %n = collective.permute %y on @ring["x"], shift = -3 : tensor<8x16xf32>
// CHECK-NEXT:   %p = collective.permute %y on @ring["x"], pairs = {{\[\[}}0, 1], [1, 0]] : tensor<8x16xf32>
// CHECK-NEXT:   %e = collective.permute %y on @ring["x"], pairs = [] : tensor<8x16xf32>
// CHECK-NEXT:   func.return

// CHECK-GENERIC: %e = "collective.permute"(%y) <{mesh = @ring, mesh_axes = ["x"], pairs = []}> : (tensor<8x16xf32>) -> tensor<8x16xf32>

// -----

// Discardable attributes print before the `:` and read back from there.
spmd.mesh @ring = <["x"=8]>

func.func @attr_dicts(%x: tensor<8x16xf32>) {
  %r = collective.all_reduce add %x on @ring["x"] {tag = 0 : i64} : tensor<8x16xf32>
  %g = collective.all_gather %x on @ring["x"], dim = 0 {tag = 1 : i64} : (tensor<8x16xf32>) -> tensor<64x16xf32>
  %s = collective.reduce_scatter add %x on @ring["x"], dim = 0 {tag = 2 : i64} : (tensor<8x16xf32>) -> tensor<1x16xf32>
  %t = collective.all_to_all %x on @ring["x"], split_dim = 1, concat_dim = 0 {tag = 3 : i64} : (tensor<8x16xf32>) -> tensor<64x2xf32>
  %p = collective.permute %x on @ring["x"], shift = 1 {tag = 4 : i64} : tensor<8x16xf32>
  %q = collective.permute %x on groups [[0, 1, 2, 3, 4, 5, 6, 7]], pairs = [[0, 1]] {tag = 5 : i64} : tensor<8x16xf32>
  %f = collective.all_gather_start %x on @ring["x"], dim = 1 {tag = 6 : i64} : (tensor<8x16xf32>) -> !collective.future<tensor<8x128xf32>>
  %d = collective.done %f {tag = 7 : i64} : !collective.future<tensor<8x128xf32>> -> tensor<8x128xf32>
  func.return
}

// CHECK:      func.func @attr_dicts(%x: tensor<8x16xf32>) {
// CHECK-NEXT:   %r = collective.all_reduce add %x on @ring["x"] {tag = 0 : i64} : tensor<8x16xf32>
// CHECK-NEXT:   %g = collective.all_gather %x on @ring["x"], dim = 0 {tag = 1 : i64} : (tensor<8x16xf32>) -> tensor<64x16xf32>
// CHECK-NEXT:   %s = collective.reduce_scatter add %x on @ring["x"], dim = 0 {tag = 2 : i64} : (tensor<8x16xf32>) -> tensor<1x16xf32>
// CHECK-NEXT:   %t = collective.all_to_all %x on @ring["x"], split_dim = 1, concat_dim = 0 {tag = 3 : i64} : (tensor<8x16xf32>) -> tensor<64x2xf32>
// CHECK-NEXT:   %p = collective.permute %x on @ring["x"], shift = 1 {tag = 4 : i64} : tensor<8x16xf32>
// CHECK-NEXT:   %q = collective.permute %x on groups {{\[\[}}0, 1, 2, 3, 4, 5, 6, 7]], pairs = {{\[\[}}0, 1]] {tag = 5 : i64} : tensor<8x16xf32>
// CHECK-NEXT:   %f = collective.all_gather_start %x on @ring["x"], dim = 1 {tag = 6 : i64} : (tensor<8x16xf32>) -> !collective.future<tensor<8x128xf32>>
// CHECK-NEXT:   %d = collective.done %f {tag = 7 : i64} : !collective.future<tensor<8x128xf32>> -> tensor<8x128xf32>

// CHECK-GENERIC: %r = "collective.all_reduce"(%x) <{kind = "add", mesh = @ring, mesh_axes = ["x"]}> {tag = 0 : i64} : (tensor<8x16xf32>) -> tensor<8x16xf32>
