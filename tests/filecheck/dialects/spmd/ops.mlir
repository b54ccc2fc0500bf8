// RUN: SHARDC_ROUNDTRIP
// RUN: SHARDC_GENERIC_ROUNDTRIP

// Every spmd op and attribute of DESIGN.md ("Level G"), in its exact custom syntax.
// A program declares one mesh, so each mesh shape gets its own chunk.

spmd.mesh @ring = <["x"=8]>

func.func @one_axis(%x: tensor<16x4xf32> {spmd.sharding = #spmd.sharding<@ring, [{"x"}, {}]>}) -> (tensor<16x4xf32> {spmd.sharding = #spmd.sharding<@ring, [{}, {}]>}) {
  %c = spmd.constraint %x <@ring, [{}, {}]> : tensor<16x4xf32>
  %i = spmd.axis_index @ring["x"] : tensor<i32>
  func.return %c : tensor<16x4xf32>
}

// CHECK:      spmd.mesh @ring = <["x"=8]>
// CHECK-NEXT: func.func @one_axis(%x: tensor<16x4xf32> {spmd.sharding = #spmd.sharding<@ring, [{"x"}, {}]>}) -> (tensor<16x4xf32> {spmd.sharding = #spmd.sharding<@ring, [{}, {}]>}) {
// CHECK-NEXT:   %c = spmd.constraint %x <@ring, [{}, {}]> : tensor<16x4xf32>
// CHECK-NEXT:   %i = spmd.axis_index @ring["x"] : tensor<i32>
// CHECK-NEXT:   func.return %c : tensor<16x4xf32>

// CHECK-GENERIC: "spmd.mesh"() <{sym_name = "ring", mesh = #spmd.mesh<["x"=8]>}> : () -> ()
// CHECK-GENERIC: arg_attrs = [{spmd.sharding = #spmd.sharding<@ring, [{"x"}, {}]>}], res_attrs = [{spmd.sharding = #spmd.sharding<@ring, [{}, {}]>}]
// CHECK-GENERIC: %c = "spmd.constraint"(%x) <{sharding = #spmd.sharding<@ring, [{}, {}]>}> : (tensor<16x4xf32>) -> tensor<16x4xf32>
// CHECK-GENERIC: %i = "spmd.axis_index"() <{mesh = @ring, axis = "x"}> : () -> tensor<i32>

// -----

// DESIGN.md's mesh: device (data, model) has id data*4 + model.
spmd.mesh @mesh = <["data"=2, "model"=4]>

func.func @two_axes(%x: tensor<16x32xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"data"}, {}]>},
                    %w: tensor<32x128xf32> {spmd.sharding = #spmd.sharding<@mesh, [{}, {"model"}]>},
                    %ab: tensor<16x8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"data", "model"}, {}]>},
                    %ba: tensor<16x8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"model", "data"}, {}]>},
                    %r: tensor<16x8xf32>,
                    %s: tensor<f32> {spmd.sharding = #spmd.sharding<@mesh, []>})
    -> (tensor<16x128xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"data"}, {}], unreduced={"model"}>},
        tensor<16x8xf32>,
        tensor<f32> {spmd.sharding = #spmd.sharding<@mesh, [], unreduced={"model", "data"}>}) {
  %0 = hlo.dot %x, %w, contracting_dims = [1] x [0] : (tensor<16x32xf32>, tensor<32x128xf32>) -> tensor<16x128xf32>
  %1 = spmd.constraint %0 <@mesh, [{"data"}, {"model"}]> : tensor<16x128xf32>
  %2 = spmd.constraint %r <@mesh, [{"model", "data"}, {}]> : tensor<16x8xf32>
  %3 = spmd.constraint %1 <@mesh, [{"data"}, {}], unreduced={"model"}> : tensor<16x128xf32>
  %4 = spmd.constraint %s <@mesh, [], unreduced={"data"}> : tensor<f32>
  %d = spmd.axis_index @mesh["data"] : tensor<i32>
  %m = spmd.axis_index @mesh["model"] : tensor<i64>
  func.return %3, %2, %s : tensor<16x128xf32>, tensor<16x8xf32>, tensor<f32>
}

// CHECK:      spmd.mesh @mesh = <["data"=2, "model"=4]>
// CHECK-NEXT: func.func @two_axes(%x: tensor<16x32xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"data"}, {}]>}, %w: tensor<32x128xf32> {spmd.sharding = #spmd.sharding<@mesh, [{}, {"model"}]>}, %ab: tensor<16x8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"data", "model"}, {}]>}, %ba: tensor<16x8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"model", "data"}, {}]>}, %r: tensor<16x8xf32>, %s: tensor<f32> {spmd.sharding = #spmd.sharding<@mesh, []>})
// CHECK-SAME:     -> (tensor<16x128xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"data"}, {}], unreduced={"model"}>}, tensor<16x8xf32>, tensor<f32> {spmd.sharding = #spmd.sharding<@mesh, [], unreduced={"model", "data"}>}) {
// CHECK-NEXT:   %0 = hlo.dot %x, %w, contracting_dims = [1] x [0] : (tensor<16x32xf32>, tensor<32x128xf32>) -> tensor<16x128xf32>
// CHECK-NEXT:   %1 = spmd.constraint %0 <@mesh, [{"data"}, {"model"}]> : tensor<16x128xf32>
// CHECK-NEXT:   %2 = spmd.constraint %r <@mesh, [{"model", "data"}, {}]> : tensor<16x8xf32>
// CHECK-NEXT:   %3 = spmd.constraint %1 <@mesh, [{"data"}, {}], unreduced={"model"}> : tensor<16x128xf32>
// CHECK-NEXT:   %4 = spmd.constraint %s <@mesh, [], unreduced={"data"}> : tensor<f32>
// CHECK-NEXT:   %d = spmd.axis_index @mesh["data"] : tensor<i32>
// CHECK-NEXT:   %m = spmd.axis_index @mesh["model"] : tensor<i64>
// CHECK-NEXT:   func.return %3, %2, %s : tensor<16x128xf32>, tensor<16x8xf32>, tensor<f32>

// The axis lists stay ordered lists (never sorted like an attribute dictionary).
// CHECK-GENERIC: %2 = "spmd.constraint"(%r) <{sharding = #spmd.sharding<@mesh, [{"model", "data"}, {}]>}> : (tensor<16x8xf32>) -> tensor<16x8xf32>
// CHECK-GENERIC: %3 = "spmd.constraint"(%1) <{sharding = #spmd.sharding<@mesh, [{"data"}, {}], unreduced={"model"}>}> : (tensor<16x128xf32>) -> tensor<16x128xf32>

// -----

spmd.mesh @cube = <["a"=2, "b"=2, "c"=3]>

func.func @three_axes(%x: tensor<12x8xf32> {spmd.sharding = #spmd.sharding<@cube, [{"c", "a"}, {"b"}]>}) -> tensor<12x8xf32> {
  %0 = spmd.constraint %x <@cube, [{"a", "b", "c"}, {}]> : tensor<12x8xf32>
  %1 = spmd.constraint %0 <@cube, [{}, {"b"}], unreduced={"c", "a"}> : tensor<12x8xf32>
  %2 = spmd.axis_index @cube["c"] : tensor<i32>
  func.return %1 : tensor<12x8xf32>
}

// CHECK:      spmd.mesh @cube = <["a"=2, "b"=2, "c"=3]>
// CHECK-NEXT: func.func @three_axes(%x: tensor<12x8xf32> {spmd.sharding = #spmd.sharding<@cube, [{"c", "a"}, {"b"}]>}) -> tensor<12x8xf32> {
// CHECK-NEXT:   %0 = spmd.constraint %x <@cube, [{"a", "b", "c"}, {}]> : tensor<12x8xf32>
// CHECK-NEXT:   %1 = spmd.constraint %0 <@cube, [{}, {"b"}], unreduced={"c", "a"}> : tensor<12x8xf32>
// CHECK-NEXT:   %2 = spmd.axis_index @cube["c"] : tensor<i32>

// CHECK-GENERIC: "spmd.mesh"() <{sym_name = "cube", mesh = #spmd.mesh<["a"=2, "b"=2, "c"=3]>}> : () -> ()

// -----

// After spmd-partition: local shapes, shardings kept; divisibility is checked on the
// global shape (8x32 split 2 ways is 16x32), so a local 3x5 with a split dimension is fine.
spmd.mesh @mesh = <["data"=2, "model"=4]>

func.func @partitioned(%x: tensor<3x5xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"data"}, {"model"}]>}) -> (tensor<3x5xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"data"}, {"model"}]>}) attributes {spmd.partitioned} {
  %i = spmd.axis_index @mesh["model"] : tensor<i32>
  func.return %x : tensor<3x5xf32>
}

func.func @per_device(%x: tensor<8x32xf32>) -> tensor<8x32xf32> attributes {spmd.per_device_io} {
  func.return %x : tensor<8x32xf32>
}

// CHECK:      func.func @partitioned(%x: tensor<3x5xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"data"}, {"model"}]>}) -> (tensor<3x5xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"data"}, {"model"}]>}) attributes {spmd.partitioned} {
// CHECK:      func.func @per_device(%x: tensor<8x32xf32>) -> tensor<8x32xf32> attributes {spmd.per_device_io} {

// CHECK-GENERIC: }) {spmd.partitioned} : () -> ()
// CHECK-GENERIC: }) {spmd.per_device_io} : () -> ()

// -----

// Discardable attributes print before the `:` and read back from there.
spmd.mesh @mesh = <["data"=2]> {tag = 0 : i64}

func.func @attr_dicts(%x: tensor<16xf32>) {
  %c = spmd.constraint %x <@mesh, [{"data"}]> {tag = 1 : i64} : tensor<16xf32>
  %i = spmd.axis_index @mesh["data"] {tag = 2 : i64} : tensor<i32>
  func.return
}

// CHECK:      spmd.mesh @mesh = <["data"=2]> {tag = 0 : i64}
// CHECK-NEXT: func.func @attr_dicts(%x: tensor<16xf32>) {
// CHECK-NEXT:   %c = spmd.constraint %x <@mesh, [{"data"}]> {tag = 1 : i64} : tensor<16xf32>
// CHECK-NEXT:   %i = spmd.axis_index @mesh["data"] {tag = 2 : i64} : tensor<i32>

// CHECK-GENERIC: "spmd.mesh"() <{sym_name = "mesh", mesh = #spmd.mesh<["data"=2]>}> {tag = 0 : i64} : () -> ()

// -----

// A manual computation (shard_map) in a level-G function: global operands and results,
// per-device body ending with spmd.return.
spmd.mesh @mesh = <["x"=4, "y"=2]>

func.func @manual(%a: tensor<8x6xf32>, %b: tensor<6xf32>) -> tensor<8x6xf32> {
  %r, %s = spmd.manual_computation(%a, %b) in_shardings=[<@mesh, [{"x"}, {}]>, <@mesh, [{}]>] out_shardings=[<@mesh, [{"x"}, {}]>, <@mesh, [{}]>] manual_axes={"x", "y"} (%la: tensor<2x6xf32>, %lb: tensor<6xf32>) {
    %p = collective.permute %la on @mesh["x"], shift = 1 : tensor<2x6xf32>
    spmd.return %p, %lb : tensor<2x6xf32>, tensor<6xf32>
  } {tag = 1 : i64} : (tensor<8x6xf32>, tensor<6xf32>) -> (tensor<8x6xf32>, tensor<6xf32>)
  spmd.manual_computation() in_shardings=[] out_shardings=[] manual_axes={"x"} () {
    spmd.return
  } : () -> ()
  func.return %r : tensor<8x6xf32>
}

// CHECK:      func.func @manual(%a: tensor<8x6xf32>, %b: tensor<6xf32>) -> tensor<8x6xf32> {
// CHECK-NEXT:   %r, %s = spmd.manual_computation(%a, %b) in_shardings=[<@mesh, [{"x"}, {}]>, <@mesh, [{}]>] out_shardings=[<@mesh, [{"x"}, {}]>, <@mesh, [{}]>] manual_axes={"x", "y"} (%la: tensor<2x6xf32>, %lb: tensor<6xf32>) {
// CHECK-NEXT:     %p = collective.permute %la on @mesh["x"], shift = 1 : tensor<2x6xf32>
// CHECK-NEXT:     spmd.return %p, %lb : tensor<2x6xf32>, tensor<6xf32>
// CHECK-NEXT:   } {tag = 1 : i64} : (tensor<8x6xf32>, tensor<6xf32>) -> (tensor<8x6xf32>, tensor<6xf32>)
// CHECK-NEXT:   spmd.manual_computation() in_shardings=[] out_shardings=[] manual_axes={"x"} () {
// CHECK-NEXT:     spmd.return
// CHECK-NEXT:   } : () -> ()

// CHECK-GENERIC: %r, %s = "spmd.manual_computation"(%a, %b) <{in_shardings = [#spmd.sharding<@mesh, [{"x"}, {}]>, #spmd.sharding<@mesh, [{}]>], out_shardings = [#spmd.sharding<@mesh, [{"x"}, {}]>, #spmd.sharding<@mesh, [{}]>], manual_axes = ["x", "y"]}> ({
// CHECK-GENERIC: "spmd.return"(%p, %lb) : (tensor<2x6xf32>, tensor<6xf32>) -> ()

// -----

// Partially manual (Shardy's form): free axis "y" after the manual "x"; the body's types
// are split by "x" only.
spmd.mesh @mesh = <["x"=2, "y"=4]>

func.func @partial_manual(%a: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %r = spmd.manual_computation(%a) in_shardings=[<@mesh, [{"x", "y"}, {}]>] out_shardings=[<@mesh, [{"x"}, {"y"}]>] manual_axes={"x"} (%l: tensor<4x8xf32>) {
    spmd.return %l : tensor<4x8xf32>
  } : (tensor<8x8xf32>) -> tensor<8x8xf32>
  func.return %r : tensor<8x8xf32>
}

// CHECK:      func.func @partial_manual(%a: tensor<8x8xf32>) -> tensor<8x8xf32> {
// CHECK-NEXT:   %r = spmd.manual_computation(%a) in_shardings=[<@mesh, [{"x", "y"}, {}]>] out_shardings=[<@mesh, [{"x"}, {"y"}]>] manual_axes={"x"} (%l: tensor<4x8xf32>) {

// CHECK-GENERIC: "spmd.manual_computation"(%a) <{in_shardings = [#spmd.sharding<@mesh, [{"x", "y"}, {}]>], out_shardings = [#spmd.sharding<@mesh, [{"x"}, {"y"}]>], manual_axes = ["x"]}> ({

// -----

// Open dimensions (Shardy's `?`): on arguments, results and constraints; a `?` after the
// axes a dimension already has, or alone.
spmd.mesh @mesh = <["data"=2, "model"=4]>

func.func @open_dims(%x: tensor<16x32xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"data", ?}, {?}]>})
    -> (tensor<16x32xf32> {spmd.sharding = #spmd.sharding<@mesh, [{?}, {}], unreduced={"model"}>}) {
  %c = spmd.constraint %x <@mesh, [{}, {"model", ?}]> : tensor<16x32xf32>
  func.return %c : tensor<16x32xf32>
}

// CHECK:      func.func @open_dims(%x: tensor<16x32xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"data", ?}, {?}]>}) -> (tensor<16x32xf32> {spmd.sharding = #spmd.sharding<@mesh, [{?}, {}], unreduced={"model"}>}) {
// CHECK-NEXT:   %c = spmd.constraint %x <@mesh, [{}, {"model", ?}]> : tensor<16x32xf32>
// CHECK-GENERIC: %c = "spmd.constraint"(%x) <{sharding = #spmd.sharding<@mesh, [{}, {"model", ?}]>}> : (tensor<16x32xf32>) -> tensor<16x32xf32>

// -----

// Shardy's user priorities (`p<N>` after a dimension, open or closed): on arguments,
// results and constraints.
spmd.mesh @mesh = <["data"=2, "model"=4]>

func.func @priorities(%x: tensor<16x32xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"data", ?}p1, {}p0]>})
    -> (tensor<16x32xf32> {spmd.sharding = #spmd.sharding<@mesh, [{?}, {"model"}p2]>}) {
  %c = spmd.constraint %x <@mesh, [{}, {"model", ?}p3]> : tensor<16x32xf32>
  func.return %c : tensor<16x32xf32>
}

// CHECK:      func.func @priorities(%x: tensor<16x32xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"data", ?}p1, {}p0]>}) -> (tensor<16x32xf32> {spmd.sharding = #spmd.sharding<@mesh, [{?}, {"model"}p2]>}) {
// CHECK-NEXT:   %c = spmd.constraint %x <@mesh, [{}, {"model", ?}p3]> : tensor<16x32xf32>
// CHECK-GENERIC: %c = "spmd.constraint"(%x) <{sharding = #spmd.sharding<@mesh, [{}, {"model", ?}p3]>}> : (tensor<16x32xf32>) -> tensor<16x32xf32>
