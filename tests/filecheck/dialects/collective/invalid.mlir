// RUN: shardc-opt %s --split-input-file --verify-diagnostics | filecheck %s
// RUN: shardc-opt %s --split-input-file --verify-diagnostics | filecheck %s --check-prefix=NOIR

// One chunk per rule of DESIGN.md ("Level S", "Type rules") for collective ops.
// @mesh is <["data"=2, "model"=4]>, @ring is <["x"=8]>. No chunk may verify:
// NOIR-NOT: builtin.module

// Groups name existing mesh axes, each once.
spmd.mesh @mesh = <["data"=2, "model"=4]>
func.func @unknown_axis(%x: tensor<8x32xf32>) {
  %0 = collective.all_reduce add %x on @mesh["tensor"] : tensor<8x32xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'collective.all_reduce' op mesh @mesh has no axis "tensor"
  func.return
}

// -----

spmd.mesh @mesh = <["data"=2, "model"=4]>
func.func @unknown_axis_of_two(%x: tensor<8x8xf32>) {
  %0 = collective.all_gather %x on @mesh["data", "pipe"], dim = 0 : (tensor<8x8xf32>) -> tensor<64x8xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'collective.all_gather' op mesh @mesh has no axis "pipe"
  func.return
}

// -----

spmd.mesh @mesh = <["data"=2, "model"=4]>
func.func @axis_twice(%x: tensor<8x32xf32>) {
  %0 = collective.all_reduce add %x on @mesh["model", "model"] : tensor<8x32xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'collective.all_reduce' op mesh axis "model" is named twice
  func.return
}

// -----

spmd.mesh @mesh = <["data"=2, "model"=4]>
func.func @no_axis(%x: tensor<8x32xf32>) {
  %0 = collective.permute %x on @mesh[], shift = 1 : tensor<8x32xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'collective.permute' op a group over a mesh must name at least one axis
  func.return
}

// -----

spmd.mesh @mesh = <["data"=2, "model"=4]>
func.func @unknown_mesh(%x: tensor<8x32xf32>) {
  %0 = collective.all_reduce add %x on @ring["x"] : tensor<8x32xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'collective.all_reduce' op @ring does not name an spmd.mesh
  func.return
}

// -----

spmd.mesh @mesh = <["data"=2, "model"=4]>
func.func @mesh_and_groups(%x: tensor<8x16xf32>) {
  %0 = "collective.all_reduce"(%x) <{kind = "add", mesh = @mesh, mesh_axes = ["data"], groups = [array<i64: 0, 1, 2, 3, 4, 5, 6, 7>]}> : (tensor<8x16xf32>) -> tensor<8x16xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'collective.all_reduce' op a collective needs either `on @mesh[...]` or `on groups`
  func.return
}

// -----

// Explicit groups have equal sizes and partition the devices.
spmd.mesh @ring = <["x"=8]>
func.func @groups_unequal(%x: tensor<8x16xf32>) {
  %0 = collective.permute %x on groups [[0, 1, 2], [3, 4, 5, 6, 7]], shift = 1 : tensor<8x16xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'collective.permute' op explicit groups must all have the same size
  func.return
}

// -----

spmd.mesh @ring = <["x"=8]>
func.func @groups_overlap(%x: tensor<8x16xf32>) {
  %0 = collective.all_reduce add %x on groups [[0, 1, 2, 3], [3, 4, 5, 6]] : tensor<8x16xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'collective.all_reduce' op explicit groups must partition the 8 devices 0..7, each device in exactly one group
  func.return
}

// -----

spmd.mesh @ring = <["x"=8]>
func.func @groups_miss_devices(%x: tensor<8x16xf32>) {
  %0 = collective.all_reduce add %x on groups [[0, 1], [2, 3]] : tensor<8x16xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'collective.all_reduce' op explicit groups must partition the 8 devices 0..7, each device in exactly one group
  func.return
}

// -----

spmd.mesh @ring = <["x"=8]>
func.func @groups_empty(%x: tensor<8x16xf32>) {
  %0 = collective.all_reduce add %x on groups [] : tensor<8x16xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'collective.all_reduce' op explicit groups must be non-empty
  func.return
}

// -----

// all_reduce: results have the operands' types; the kind is add, mul, max or min.
spmd.mesh @mesh = <["data"=2, "model"=4]>
func.func @all_reduce_result(%x: tensor<8x32xf32>) {
  %0 = "collective.all_reduce"(%x) <{kind = "add", mesh = @mesh, mesh_axes = ["model"]}> : (tensor<8x32xf32>) -> tensor<8x16xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'collective.all_reduce' op result 0 must have type tensor<8x32xf32>, got tensor<8x16xf32>
  func.return
}

// -----

spmd.mesh @mesh = <["data"=2, "model"=4]>
func.func @all_reduce_kind(%x: tensor<8x32xf32>) {
  %0 = collective.all_reduce xor %x on @mesh["model"] : tensor<8x32xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:30: error: expected a reduction kind: add, mul, max, min
  func.return
}

// -----

spmd.mesh @mesh = <["data"=2, "model"=4]>
func.func @all_reduce_generic_kind(%x: tensor<8x32xf32>) {
  %0 = "collective.all_reduce"(%x) <{kind = "sum", mesh = @mesh, mesh_axes = ["model"]}> : (tensor<8x32xf32>) -> tensor<8x32xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'collective.all_reduce' op unknown reduction kind "sum" (expected add, mul, max, min)
  func.return
}

// -----

spmd.mesh @mesh = <["data"=2, "model"=4]>
func.func @reduce_scatter_kind(%x: tensor<8x32xf32>) {
  %0 = collective.reduce_scatter avg %x on @mesh["model"], dim = 1 : (tensor<8x32xf32>) -> tensor<8x8xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:34: error: expected a reduction kind: add, mul, max, min
  func.return
}

// -----

// all_gather multiplies `dim` by the group size.
spmd.mesh @mesh = <["data"=2, "model"=4]>
func.func @all_gather_result(%x: tensor<8x8xf32>) {
  %0 = collective.all_gather %x on @mesh["model"], dim = 1 : (tensor<8x8xf32>) -> tensor<8x16xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'collective.all_gather' op result 0 must have type tensor<8x32xf32>, got tensor<8x16xf32>
  func.return
}

// -----

spmd.mesh @mesh = <["data"=2, "model"=4]>
func.func @all_gather_two_axes(%x: tensor<8x8xf32>) {
  %0 = collective.all_gather %x on @mesh["data", "model"], dim = 0 : (tensor<8x8xf32>) -> tensor<32x8xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'collective.all_gather' op result 0 must have type tensor<64x8xf32>, got tensor<32x8xf32>
  func.return
}

// -----

spmd.mesh @mesh = <["data"=2, "model"=4]>
func.func @all_gather_variadic(%x: tensor<8x8xf32>, %y: tensor<2xf32>) {
  %0, %1 = collective.all_gather %x, %y on @mesh["model"], dim = 0 : (tensor<8x8xf32>, tensor<2xf32>) -> (tensor<32x8xf32>, tensor<2xf32>)
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'collective.all_gather' op result 1 must have type tensor<8xf32>, got tensor<2xf32>
  func.return
}

// -----

spmd.mesh @ring = <["x"=8]>
func.func @all_gather_groups(%x: tensor<8x16xf32>) {
  %0 = collective.all_gather %x on groups [[0, 1, 2, 3], [4, 5, 6, 7]], dim = 0 : (tensor<8x16xf32>) -> tensor<64x16xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'collective.all_gather' op result 0 must have type tensor<32x16xf32>, got tensor<64x16xf32>
  func.return
}

// -----

spmd.mesh @mesh = <["data"=2, "model"=4]>
func.func @all_gather_dim(%x: tensor<8x8xf32>) {
  %0 = collective.all_gather %x on @mesh["model"], dim = 2 : (tensor<8x8xf32>) -> tensor<8x32xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'collective.all_gather' op dim 2 is out of range for tensor<8x8xf32>
  func.return
}

// -----

// reduce_scatter needs `dim` divisible by the group size, and divides it.
spmd.mesh @mesh = <["data"=2, "model"=4]>
func.func @reduce_scatter_divisibility(%x: tensor<8x30xf32>) {
  %0 = collective.reduce_scatter add %x on @mesh["model"], dim = 1 : (tensor<8x30xf32>) -> tensor<8x7xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'collective.reduce_scatter' op dimension 1 of size 30 is not divisible by the group size 4
  func.return
}

// -----

spmd.mesh @mesh = <["data"=2, "model"=4]>
func.func @reduce_scatter_variadic_divisibility(%x: tensor<8x32xf32>, %y: tensor<6xf32>) {
  %0, %1 = collective.reduce_scatter add %x, %y on @mesh["model"], dim = 0 : (tensor<8x32xf32>, tensor<6xf32>) -> (tensor<2x32xf32>, tensor<1xf32>)
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'collective.reduce_scatter' op dimension 0 of size 6 is not divisible by the group size 4
  func.return
}

// -----

spmd.mesh @mesh = <["data"=2, "model"=4]>
func.func @reduce_scatter_result(%x: tensor<8x32xf32>) {
  %0 = collective.reduce_scatter max %x on @mesh["model"], dim = 1 : (tensor<8x32xf32>) -> tensor<8x32xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'collective.reduce_scatter' op result 0 must have type tensor<8x8xf32>, got tensor<8x32xf32>
  func.return
}

// -----

// all_to_all needs `split_dim` divisible by the group size.
spmd.mesh @ring = <["x"=8]>
func.func @all_to_all_divisibility(%x: tensor<8x60xf32>) {
  %0 = collective.all_to_all %x on @ring["x"], split_dim = 1, concat_dim = 0 : (tensor<8x60xf32>) -> tensor<64x7xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'collective.all_to_all' op split_dim 1 of size 60 is not divisible by the group size 8
  func.return
}

// -----

spmd.mesh @ring = <["x"=8]>
func.func @all_to_all_result(%x: tensor<8x64xf32>) {
  %0 = collective.all_to_all %x on @ring["x"], split_dim = 1, concat_dim = 0 : (tensor<8x64xf32>) -> tensor<8x64xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'collective.all_to_all' op result 0 must have type tensor<64x8xf32>, got tensor<8x64xf32>
  func.return
}

// -----

spmd.mesh @ring = <["x"=8]>
func.func @all_to_all_split_dim(%x: tensor<8x64xf32>) {
  %0 = collective.all_to_all %x on @ring["x"], split_dim = 2, concat_dim = 0 : (tensor<8x64xf32>) -> tensor<8x64xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'collective.all_to_all' op split_dim 2 is out of range for tensor<8x64xf32>
  func.return
}

// -----

spmd.mesh @ring = <["x"=8]>
func.func @all_to_all_concat_dim(%x: tensor<8x64xf32>) {
  %0 = collective.all_to_all %x on @ring["x"], split_dim = 1, concat_dim = -1 : (tensor<8x64xf32>) -> tensor<8x64xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'collective.all_to_all' op concat_dim -1 is out of range for tensor<8x64xf32>
  func.return
}

// -----

// permute: pairs are valid ranks; no rank is a source twice or a target twice.
spmd.mesh @ring = <["x"=8]>
func.func @permute_rank_range(%x: tensor<8x16xf32>) {
  %0 = collective.permute %x on @ring["x"], pairs = [[0, 8]] : tensor<8x16xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'collective.permute' op rank 8 is out of range for a group of 8
  func.return
}

// -----

spmd.mesh @ring = <["x"=8]>
func.func @permute_negative_rank(%x: tensor<8x16xf32>) {
  %0 = collective.permute %x on @ring["x"], pairs = [[-1, 1]] : tensor<8x16xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'collective.permute' op rank -1 is out of range for a group of 8
  func.return
}

// -----

spmd.mesh @mesh = <["data"=2, "model"=4]>
func.func @permute_rank_range_in_group(%x: tensor<8x16xf32>) {
  %0 = collective.permute %x on @mesh["model"], pairs = [[3, 4]] : tensor<8x16xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'collective.permute' op rank 4 is out of range for a group of 4
  func.return
}

// -----

spmd.mesh @ring = <["x"=8]>
func.func @permute_source_twice(%x: tensor<8x16xf32>) {
  %0 = collective.permute %x on @ring["x"], pairs = [[0, 1], [0, 2]] : tensor<8x16xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'collective.permute' op rank 0 is a source more than once
  func.return
}

// -----

spmd.mesh @ring = <["x"=8]>
func.func @permute_target_twice(%x: tensor<8x16xf32>) {
  %0 = collective.permute %x on @ring["x"], pairs = [[0, 1], [2, 1]] : tensor<8x16xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'collective.permute' op rank 1 is a target more than once
  func.return
}

// -----

spmd.mesh @ring = <["x"=8]>
func.func @permute_start_target_twice(%x: tensor<8x16xf32>) {
  %f = collective.permute_start %x on @ring["x"], pairs = [[1, 2], [3, 2]] : tensor<8x16xf32> -> !collective.future<tensor<8x16xf32>>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'collective.permute_start' op rank 2 is a target more than once
  %r = collective.done %f : !collective.future<tensor<8x16xf32>> -> tensor<8x16xf32>
  func.return
}

// -----

spmd.mesh @ring = <["x"=8]>
func.func @permute_pair_shape(%x: tensor<8x16xf32>) {
  %0 = collective.permute %x on @ring["x"], pairs = [[0, 1, 2]] : tensor<8x16xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'collective.permute' op each permute pair is [source, target]
  func.return
}

// -----

spmd.mesh @ring = <["x"=8]>
func.func @permute_shift_and_pairs(%x: tensor<8x16xf32>) {
  %0 = "collective.permute"(%x) <{mesh = @ring, mesh_axes = ["x"], shift = 1 : i64, pairs = []}> : (tensor<8x16xf32>) -> tensor<8x16xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'collective.permute' op permute needs exactly one of `shift` or `pairs`
  func.return
}

// -----

spmd.mesh @ring = <["x"=8]>
func.func @permute_keyword(%x: tensor<8x16xf32>) {
  %0 = collective.permute %x on @ring["x"], rotate = 1 : tensor<8x16xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:45: error: Expected 'shift' or 'pairs'
  func.return
}

// -----

// A done's result types equal its future's.
spmd.mesh @ring = <["x"=8]>
func.func @done_type(%x: tensor<8x16xf32>) {
  %f = collective.all_reduce_start add %x on @ring["x"] : tensor<8x16xf32> -> !collective.future<tensor<8x16xf32>>
  %0 = collective.done %f : !collective.future<tensor<8x16xf32>> -> tensor<8x16xbf16>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'collective.done' op result types (tensor<8x16xbf16>) do not match the future's (tensor<8x16xf32>)
  func.return
}

// -----

spmd.mesh @ring = <["x"=8]>
func.func @done_count(%x: tensor<8x16xf32>, %y: tensor<4xf32>) {
  %f = collective.all_reduce_start add %x, %y on @ring["x"] : tensor<8x16xf32>, tensor<4xf32> -> !collective.future<tensor<8x16xf32>, tensor<4xf32>>
  %0 = collective.done %f : !collective.future<tensor<8x16xf32>, tensor<4xf32>> -> tensor<8x16xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'collective.done' op result types (tensor<8x16xf32>) do not match the future's (tensor<8x16xf32>, tensor<4xf32>)
  func.return
}

// -----

spmd.mesh @ring = <["x"=8]>
func.func @done_future_type_mismatch(%x: tensor<8x16xf32>) {
  %f = collective.all_reduce_start add %x on @ring["x"] : tensor<8x16xf32> -> !collective.future<tensor<8x16xf32>>
  %0 = collective.done %f : !collective.future<tensor<4xf32>> -> tensor<4xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:24: error: operand is used with type !collective.future<tensor<4xf32>>, but has been previously used or defined with type !collective.future<tensor<8x16xf32>>
  func.return
}

// -----

// A _start op's future holds what its sync form would produce.
spmd.mesh @ring = <["x"=8]>
func.func @all_reduce_start_future(%x: tensor<8x16xf32>) {
  %f = collective.all_reduce_start add %x on @ring["x"] : tensor<8x16xf32> -> !collective.future<tensor<8x8xf32>>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'collective.all_reduce_start' op result 0 must have type tensor<8x16xf32>, got tensor<8x8xf32>
  func.return
}

// -----

spmd.mesh @ring = <["x"=8]>
func.func @all_gather_start_future(%x: tensor<8x16xf32>) {
  %f = collective.all_gather_start %x on @ring["x"], dim = 0 : (tensor<8x16xf32>) -> !collective.future<tensor<8x16xf32>>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'collective.all_gather_start' op result 0 must have type tensor<64x16xf32>, got tensor<8x16xf32>
  func.return
}

// -----

spmd.mesh @ring = <["x"=8]>
func.func @reduce_scatter_start_future(%x: tensor<8x16xf32>) {
  %f = collective.reduce_scatter_start add %x on @ring["x"], dim = 1 : (tensor<8x16xf32>) -> !collective.future<tensor<8x16xf32>>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'collective.reduce_scatter_start' op result 0 must have type tensor<8x2xf32>, got tensor<8x16xf32>
  func.return
}

// -----

spmd.mesh @ring = <["x"=8]>
func.func @all_to_all_start_future(%x: tensor<8x16xf32>) {
  %f = collective.all_to_all_start %x on @ring["x"], split_dim = 1, concat_dim = 0 : (tensor<8x16xf32>) -> !collective.future<tensor<8x16xf32>>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'collective.all_to_all_start' op result 0 must have type tensor<64x2xf32>, got tensor<8x16xf32>
  func.return
}

// -----

spmd.mesh @ring = <["x"=8]>
func.func @start_without_future(%x: tensor<8x16xf32>) {
  %f = collective.all_reduce_start add %x on @ring["x"] : tensor<8x16xf32> -> tensor<8x16xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'collective.all_reduce_start' op result 'future' at position 0 does not verify:
  // CHECK-NEXT: tensor<8x16xf32> should be of base attribute collective.future
  func.return
}

// -----

spmd.mesh @ring = <["x"=8]>
func.func @future_of_scalar(%x: tensor<8x16xf32>) {
  %f = collective.all_reduce_start add %x on @ring["x"] : tensor<8x16xf32> -> !collective.future<f32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:98: error: a future holds tensors, got f32
  func.return
}

// -----

// Syntax: `on` is required; an unknown collective; an unknown collective type.
spmd.mesh @ring = <["x"=8]>
func.func @missing_on(%x: tensor<8x16xf32>) {
  %0 = collective.all_reduce add %x @ring["x"] : tensor<8x16xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:37: error: Expected 'on'
  func.return
}

// -----

spmd.mesh @ring = <["x"=8]>
func.func @unknown_op(%x: tensor<8x16xf32>) {
  %0 = collective.broadcast %x on @ring["x"] : tensor<8x16xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:{{[0-9]+}}: error: Operation collective.broadcast is not registered
  func.return
}

// -----

func.func @unknown_type(%x: !collective.token) {
  // CHECK: invalid.mlir:[[# @LINE - 1]]:{{[0-9]+}}: error: 'collective.token' is not registered
  func.return
}
