// RUN: shardc-opt %s --split-input-file --verify-diagnostics | filecheck %s
// RUN: shardc-opt %s --split-input-file --verify-diagnostics | filecheck %s --check-prefix=NOIR

// One chunk per rule of DESIGN.md for meshes and shardings. Function argument and result
// shardings are reported at the function; op shardings at the op; errors found while
// parsing at the offending text. No chunk may verify:
// NOIR-NOT: builtin.module

// Every axis a sharding names exists in its mesh: on an argument, a result, an op.
spmd.mesh @mesh = <["data"=2, "model"=4]>
func.func @argument_axis(%x: tensor<16x32xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"batch"}, {}]>}) {
  // CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'func.func' op argument 0 of @argument_axis: sharding names axis "batch", which mesh @mesh does not have (its axes: data, model)
  func.return
}

// -----

spmd.mesh @mesh = <["data"=2, "model"=4]>
func.func @result_axis(%x: tensor<16x32xf32>) -> (tensor<16x32xf32>, tensor<16x32xf32> {spmd.sharding = #spmd.sharding<@mesh, [{}, {}], unreduced={"pipe"}>}) {
  // CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'func.func' op result 1 of @result_axis: sharding names axis "pipe", which mesh @mesh does not have (its axes: data, model)
  func.return %x, %x : tensor<16x32xf32>, tensor<16x32xf32>
}

// -----

spmd.mesh @mesh = <["data"=2, "model"=4]>
func.func @constraint_axis(%x: tensor<16x32xf32>) {
  %0 = spmd.constraint %x <@mesh, [{}, {"tensor"}]> : tensor<16x32xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'spmd.constraint' op sharding names axis "tensor", which mesh @mesh does not have (its axes: data, model)
  func.return
}

// -----

spmd.mesh @mesh = <["data"=2, "model"=4]>
func.func @axis_index_axis() {
  %0 = spmd.axis_index @mesh["pipe"] : tensor<i32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'spmd.axis_index' op mesh @mesh has no axis "pipe"
  func.return
}

// -----

// The mesh a sharding or an axis_index names exists.
spmd.mesh @mesh = <["data"=2, "model"=4]>
func.func @argument_mesh(%x: tensor<16xf32> {spmd.sharding = #spmd.sharding<@nomesh, [{}]>}) {
  // CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'func.func' op argument 0 of @argument_mesh: @nomesh does not name an spmd.mesh
  func.return
}

// -----

func.func @constraint_without_mesh(%x: tensor<16x32xf32>) {
  %0 = spmd.constraint %x <@mesh, [{"data"}, {}]> : tensor<16x32xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'spmd.constraint' op @mesh does not name an spmd.mesh
  func.return
}

// -----

func.func @axis_index_names_a_function() {
  %0 = spmd.axis_index @axis_index_names_a_function["x"] : tensor<i32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'spmd.axis_index' op @axis_index_names_a_function does not name an spmd.mesh
  func.return
}

// -----

// A sharding has one entry per tensor dimension.
spmd.mesh @mesh = <["data"=2, "model"=4]>
func.func @argument_rank(%x: tensor<16x32xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"data"}]>}) {
  // CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'func.func' op argument 0 of @argument_rank: sharding has 1 dimension entries but the tensor has rank 2
  func.return
}

// -----

spmd.mesh @mesh = <["data"=2, "model"=4]>
func.func @constraint_rank(%x: tensor<16x32xf32>) {
  %0 = spmd.constraint %x <@mesh, [{}, {}, {}]> : tensor<16x32xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'spmd.constraint' op sharding has 3 dimension entries but the tensor has rank 2
  func.return
}

// -----

spmd.mesh @mesh = <["data"=2, "model"=4]>
func.func @scalar_rank(%x: tensor<f32> {spmd.sharding = #spmd.sharding<@mesh, [{}]>}) {
  // CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'func.func' op argument 0 of @scalar_rank: sharding has 1 dimension entries but the tensor has rank 0
  func.return
}

// -----

// An axis appears once per sharding, across dimensions, within one, and in unreduced.
spmd.mesh @mesh = <["data"=2, "model"=4]>
func.func @axis_twice_across_dims(%x: tensor<16x32xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"data"}, {"data"}]>}) {
  // CHECK: invalid.mlir:[[# @LINE - 1]]:96: error: mesh axis "data" appears more than once in a sharding
  func.return
}

// -----

spmd.mesh @mesh = <["data"=2, "model"=4]>
func.func @axis_twice_in_dim(%x: tensor<16x32xf32>) {
  %0 = spmd.constraint %x <@mesh, [{"model", "model"}, {}]> : tensor<16x32xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:35: error: mesh axis "model" appears more than once in a sharding
  func.return
}

// -----

spmd.mesh @mesh = <["data"=2, "model"=4]>
func.func @axis_split_and_unreduced(%x: tensor<16x32xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"data"}, {}], unreduced={"data"}>}) {
  // CHECK: invalid.mlir:[[# @LINE - 1]]:98: error: mesh axis "data" appears more than once in a sharding
  func.return
}

// -----

spmd.mesh @mesh = <["data"=2, "model"=4]>
func.func @axis_twice_in_unreduced(%x: tensor<16x32xf32>) {
  %0 = spmd.constraint %x <@mesh, [{}, {}], unreduced={"model", "model"}> : tensor<16x32xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:35: error: mesh axis "model" appears more than once in a sharding
  func.return
}

// -----

// A split dimension need not divide evenly (its blocks are padded, as GSPMD pads them), but
// every shard holds at least one element: the message names the dimension, its size and
// the shard count.
spmd.mesh @mesh = <["data"=2, "model"=4]>
func.func @argument_too_small(%x: tensor<16x3xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"data"}, {"model"}]>}) {
  // CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'func.func' op argument 0 of @argument_too_small: dimension 1 of size 3 is split into 4 shards (the product of its mesh axes {"model"}): a split dimension needs at least as many elements as shards
  func.return
}

// -----

spmd.mesh @mesh = <["data"=2, "model"=4]>
func.func @result_too_small() -> (tensor<2xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"model"}]>}) {
  // CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'func.func' op result 0 of @result_too_small: dimension 0 of size 2 is split into 4 shards (the product of its mesh axes {"model"}): a split dimension needs at least as many elements as shards
  %0 = hlo.constant dense<1.0> : tensor<2xf32>
  func.return %0 : tensor<2xf32>
}

// -----

spmd.mesh @mesh = <["data"=2, "model"=4]>
func.func @constraint_too_small(%x: tensor<6x32xf32>) {
  %0 = spmd.constraint %x <@mesh, [{"model", "data"}, {}]> : tensor<6x32xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'spmd.constraint' op dimension 0 of size 6 is split into 8 shards (the product of its mesh axes {"model", "data"}): a split dimension needs at least as many elements as shards
  func.return
}

// -----

// A partitioned function's `spmd.global_shape` (an uneven split's true global shape) must
// give back the padded local type when split.
spmd.mesh @mesh = <["data"=2, "model"=4]>
func.func @global_shape_mismatch(%x: tensor<3x32xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"model"}, {}]>, spmd.global_shape = array<i64: 6, 32>}) attributes {spmd.partitioned} {
  // CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'func.func' op argument 0 of @global_shape_mismatch: spmd.global_shape [6, 32] split by the sharding gives blocks of shape [2, 32], but the type's shape is [3, 32]
  func.return
}

// -----

spmd.mesh @mesh = <["data"=2, "model"=4]>
func.func @global_shape_at_level_g(%x: tensor<6x32xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"model"}, {}]>, spmd.global_shape = array<i64: 6, 32>}) {
  // CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'func.func' op argument 0 of @global_shape_at_level_g: spmd.global_shape belongs to a partitioned function only
  func.return
}

// -----

spmd.mesh @mesh = <["data"=2, "model"=4]>
func.func @global_shape_without_sharding(%x: tensor<2x32xf32> {spmd.global_shape = array<i64: 6, 32>}) attributes {spmd.partitioned} {
  // CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'func.func' op argument 0 of @global_shape_without_sharding: spmd.global_shape needs an spmd.sharding
  func.return
}

// -----

// The sharding syntax: axis names are string literals, the only keyword is `unreduced`.
spmd.mesh @mesh = <["data"=2, "model"=4]>
func.func @unquoted_axis(%x: tensor<16x32xf32>) {
  %0 = spmd.constraint %x <@mesh, [{data}, {}]> : tensor<16x32xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:37: error: string literal expected
  func.return
}

// -----

spmd.mesh @mesh = <["data"=2, "model"=4]>
func.func @unknown_keyword(%x: tensor<16x32xf32>) {
  %0 = spmd.constraint %x <@mesh, [{"data"}, {}], reduced={"model"}> : tensor<16x32xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:51: error: Expected 'unreduced'
  func.return
}

// -----

spmd.mesh @mesh = <["data"=2, "model"=4]>
func.func @not_a_sharding(%x: tensor<16xf32> {spmd.sharding = "data"}) {
  // CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'func.func' op spmd.sharding must be a #spmd.sharding, got "data"
  func.return
}

// -----

spmd.mesh @mesh = <["data"=2, "model"=4]>
func.func @constraint_type(%x: tensor<16x32xf32>) {
  %0 = "spmd.constraint"(%x) <{sharding = #spmd.sharding<@mesh, [{"data"}, {}]>}> : (tensor<16x32xf32>) -> tensor<16x16xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'spmd.constraint' op result 'result' at position 0 does not verify:
  // CHECK-NEXT: attribute tensor<16x32xf32> expected from variable 'T', but got tensor<16x16xf32>
  func.return
}

// -----

// Meshes: distinct axis names, positive sizes, quoted names, one mesh per program.
spmd.mesh @mesh = <["data"=2, "data"=4]>
// CHECK: invalid.mlir:[[# @LINE - 1]]:20: error: mesh axis "data" is declared twice

// -----

spmd.mesh @mesh = <["data"=2, "model"=0]>
// CHECK: invalid.mlir:[[# @LINE - 1]]:31: error: mesh axis "model" must have a positive size, got 0

// -----

spmd.mesh @mesh = <[data=2]>
// CHECK: invalid.mlir:[[# @LINE - 1]]:21: error: string literal expected (a mesh axis name)

// -----

spmd.mesh @mesh = <["data"=2]>
spmd.mesh @other = <["x"=2]>
// CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'spmd.mesh' op a program declares one mesh, but @mesh is declared already

// -----

// axis_index gives a rank-0 integer tensor.
spmd.mesh @mesh = <["data"=2, "model"=4]>
func.func @axis_index_type() {
  %0 = spmd.axis_index @mesh["data"] : tensor<2xi32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'spmd.axis_index' op result must be a rank-0 integer tensor such as tensor<i32>, got tensor<2xi32>
  func.return
}

// -----

spmd.mesh @mesh = <["data"=2, "model"=4]>
func.func @axis_index_unquoted() {
  %0 = spmd.axis_index @mesh[data] : tensor<i32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:30: error: string literal expected (a mesh axis name)
  func.return
}

// -----

// spmd.partitioned and spmd.per_device_io are unit attributes.
spmd.mesh @mesh = <["data"=2, "model"=4]>
func.func @partitioned_value(%x: tensor<16xf32>) -> tensor<16xf32> attributes {spmd.partitioned = 1} {
  // CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'func.func' op spmd.partitioned must be a unit attribute
  func.return %x : tensor<16xf32>
}

// -----

func.func @per_device_io_value(%x: tensor<16xf32>) -> tensor<16xf32> attributes {spmd.per_device_io = "yes"} {
  // CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'func.func' op spmd.per_device_io must be a unit attribute
  func.return %x : tensor<16xf32>
}

// -----

// An unknown spmd op and an unknown spmd attribute.
func.func @unknown_op(%x: tensor<16xf32>) {
  %0 = spmd.reshard %x : tensor<16xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:{{[0-9]+}}: error: Operation spmd.reshard is not registered
  func.return
}

// -----

func.func @unknown_attribute(%x: tensor<16xf32> {spmd.sharding = #spmd.layout<[0]>}) {
  // CHECK: invalid.mlir:[[# @LINE - 1]]:{{[0-9]+}}: error: 'spmd.layout' is not registered
  func.return
}

// -----

// spmd.manual_computation: the body's types are the operands split per in_shardings.
spmd.mesh @mesh = <["x"=4, "y"=2]>
func.func @manual_body_type(%a: tensor<8x6xf32>) {
  %r = spmd.manual_computation(%a) in_shardings=[<@mesh, [{"x"}, {}]>] out_shardings=[<@mesh, [{"x"}, {}]>] manual_axes={"x", "y"} (%l: tensor<4x6xf32>) {
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'spmd.manual_computation' op operand 0: tensor<8x6xf32> split as #spmd.sharding<@mesh, [{"x"}, {}]> is tensor<2x6xf32> per device, but the body has tensor<4x6xf32>
    spmd.return %l : tensor<4x6xf32>
  } : (tensor<8x6xf32>) -> tensor<8x6xf32>
  func.return
}

// -----

// Partially manual shardings: the body's types are split by the manual axes only.
spmd.mesh @mesh = <["x"=4, "y"=2]>
func.func @manual_free_axis(%a: tensor<8x6xf32>) {
  %r = spmd.manual_computation(%a) in_shardings=[<@mesh, [{"x"}, {"y"}]>] out_shardings=[<@mesh, [{"x"}, {"y"}]>] manual_axes={"x"} (%l: tensor<2x3xf32>) {
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'spmd.manual_computation' op operand 0: tensor<8x6xf32> split as #spmd.sharding<@mesh, [{"x"}, {"y"}]> (by its manual axes: #spmd.sharding<@mesh, [{"x"}, {}]>) is tensor<2x6xf32> per device, but the body has tensor<2x3xf32>
    spmd.return %l : tensor<2x3xf32>
  } : (tensor<8x6xf32>) -> tensor<8x6xf32>
  func.return
}

// -----

// A free axis before a manual axis in one dimension.
spmd.mesh @mesh = <["x"=4, "y"=2]>
func.func @manual_free_axis_first(%a: tensor<8x6xf32>) {
  %r = spmd.manual_computation(%a) in_shardings=[<@mesh, [{"y", "x"}, {}]>] out_shardings=[<@mesh, [{"x"}, {}]>] manual_axes={"x"} (%l: tensor<2x6xf32>) {
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'spmd.manual_computation' op operand 0: dimension 0 splits over {"y", "x"}: a manual axis follows the free axis "y" (manual axes come first)
    spmd.return %l : tensor<2x6xf32>
  } : (tensor<8x6xf32>) -> tensor<8x6xf32>
  func.return
}

// -----

spmd.mesh @mesh = <["x"=4]>
func.func @manual_counts(%a: tensor<8xf32>) {
  %r = spmd.manual_computation(%a) in_shardings=[] out_shardings=[<@mesh, [{"x"}]>] manual_axes={"x"} (%l: tensor<2xf32>) {
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'spmd.manual_computation' op 1 operands, 0 operand shardings and 1 body arguments
    spmd.return %l : tensor<2xf32>
  } : (tensor<8xf32>) -> tensor<8xf32>
  func.return
}

// -----

spmd.mesh @mesh = <["x"=4]>
func.func @manual_axis(%a: tensor<8xf32>) {
  %r = spmd.manual_computation(%a) in_shardings=[<@mesh, [{"x"}]>] out_shardings=[<@mesh, [{"x"}]>] manual_axes={"z"} (%l: tensor<2xf32>) {
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'spmd.manual_computation' op manual_axes names "z", which the mesh does not have
    spmd.return %l : tensor<2xf32>
  } : (tensor<8xf32>) -> tensor<8xf32>
  func.return
}

// -----

// The body is isolated: it uses no value from outside.
spmd.mesh @mesh = <["x"=4]>
func.func @manual_isolated(%a: tensor<8xf32>, %b: tensor<2xf32>) {
  %r = spmd.manual_computation(%a) in_shardings=[<@mesh, [{"x"}]>] out_shardings=[<@mesh, [{"x"}]>] manual_axes={"x"} (%l: tensor<2xf32>) {
    %s = hlo.add %l, %b : tensor<2xf32>
    spmd.return %s : tensor<2xf32>
  } : (tensor<8xf32>) -> tensor<8xf32>
  func.return
}
// CHECK: invalid.mlir:[[# @LINE - 6]]:3: error: 'spmd.manual_computation' op Operation using value defined out of its IsolatedFromAbove parent

// -----

// Only in level-G functions (spmd-partition inlines it).
spmd.mesh @mesh = <["x"=4]>
func.func @manual_partitioned(%a: tensor<8xf32>) attributes {spmd.partitioned} {
  %r = spmd.manual_computation(%a) in_shardings=[<@mesh, [{"x"}]>] out_shardings=[<@mesh, [{"x"}]>] manual_axes={"x"} (%l: tensor<2xf32>) {
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'spmd.manual_computation' op spmd.manual_computation belongs in a level-G function (spmd-partition inlines its body)
    spmd.return %l : tensor<2xf32>
  } : (tensor<8xf32>) -> tensor<8xf32>
  func.return
}

// -----

func.func @return_outside(%a: tensor<2xf32>) {
  spmd.return %a : tensor<2xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'spmd.return' op spmd.return must end the body of spmd.manual_computation
}

// -----

// An open dimension's `?` comes last.
spmd.mesh @mesh = <["data"=2]>
func.func @open_not_last(%x: tensor<16xf32> {spmd.sharding = #spmd.sharding<@mesh, [{?, "data"}]>}) {
  // CHECK: invalid.mlir:[[# @LINE - 1]]:{{[0-9]+}}: error: `?` (an open dimension) must come last, before `}`
  func.return
}

// -----

// A priority is `p` and a number, after the dimension's `}`.
spmd.mesh @mesh = <["data"=2]>
func.func @bad_priority(%x: tensor<16xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"data"}q1]>}) {
  // CHECK: invalid.mlir:[[# @LINE - 1]]:{{[0-9]+}}: error: expected a priority `p<N>` after a dimension, got `q1`
  func.return
}

// -----

// Sizes nobody can run and names that cannot name a value (issue 16).
spmd.mesh @huge_axis = <["x"=2147483647]>
// CHECK: invalid.mlir:[[# @LINE - 1]]:26: error: mesh axis "x" has 2147483647 devices; a mesh has at most 65536

// -----

spmd.mesh @huge_mesh = <["a"=1024, "b"=1024]>
// CHECK: invalid.mlir:[[# @LINE - 1]]:25: error: the mesh has 1048576 devices; a mesh has at most 65536

// -----

spmd.mesh @empty_name = <[""=2]>
// CHECK: invalid.mlir:[[# @LINE - 1]]:27: error: mesh axis name "" must be an identifier

// -----

spmd.mesh @spaced_name = <["a b"=2]>
// CHECK: invalid.mlir:[[# @LINE - 1]]:28: error: mesh axis name "a b" must be an identifier
