// RUN: shardc-opt %s --split-input-file --verify-diagnostics | filecheck %s
// RUN: shardc-opt %s --split-input-file --verify-diagnostics | filecheck %s --check-prefix=NOIR

// One chunk per rule of DESIGN.md's "Type rules" (and issue 2 item 4) for hlo ops.
// Each diagnostic names this file, the line and the column of the failing op (or, for
// a syntax error, of the offending token). No chunk may verify:
// NOIR-NOT: builtin.module

// Elementwise: operands and result share one type (reachable through the generic form).
func.func @binary_operand_types(%a: tensor<4xf32>, %b: tensor<4xi32>) {
  %0 = "hlo.add"(%a, %b) : (tensor<4xf32>, tensor<4xi32>) -> tensor<4xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.add' op operand 'rhs' at position 1 does not verify:
  // CHECK-NEXT: attribute tensor<4xf32> expected from variable 'T', but got tensor<4xi32>
  func.return
}

// -----

func.func @binary_result_type(%a: tensor<4xf32>) {
  %0 = "hlo.mul"(%a, %a) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf16>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.mul' op result 'result' at position 0 does not verify:
  // CHECK-NEXT: attribute tensor<4xf32> expected from variable 'T', but got tensor<4xf16>
  func.return
}

// -----

func.func @unary_result_type(%a: tensor<4xf32>) {
  %0 = "hlo.exp"(%a) : (tensor<4xf32>) -> tensor<8xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.exp' op result 'result' at position 0 does not verify:
  // CHECK-NEXT: attribute tensor<4xf32> expected from variable 'T', but got tensor<8xf32>
  func.return
}

// -----

// Element kinds: and/or/not take integers and i1, transcendental ops take floats.
func.func @and_of_floats(%a: tensor<4xf32>) {
  %0 = hlo.and %a, %a : tensor<4xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.and' op does not accept element type f32 (accepts bool, int)
  func.return
}

// -----

func.func @dynamic_shape(%a: tensor<?xf32>) {
  %0 = hlo.abs %a : tensor<?xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.abs' op dynamic dimensions are not supported: tensor<?xf32>
  func.return
}

// -----

func.func @not_a_tensor(%a: memref<4xf32>) {
  %0 = "hlo.neg"(%a) : (memref<4xf32>) -> memref<4xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.neg' op operand 'operand' at position 0 does not verify:
  // CHECK-NEXT: memref<4xf32> should be of base attribute tensor
  func.return
}

// -----

// compare: operands share one type, the result is i1 of their shape.
func.func @compare_operand_types(%a: tensor<4xf32>, %b: tensor<4xf16>) {
  %0 = hlo.compare LT, %a, %b : (tensor<4xf32>, tensor<4xf16>) -> tensor<4xi1>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.compare' op operands must have one type, got tensor<4xf32> and tensor<4xf16>
  func.return
}

// -----

func.func @compare_result_not_i1(%a: tensor<4xf32>) {
  %0 = hlo.compare LT, %a, %a : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.compare' op result must be tensor<4xi1>, got tensor<4xf32>
  func.return
}

// -----

func.func @compare_result_shape(%a: tensor<4xf32>) {
  %0 = hlo.compare GE, %a, %a : (tensor<4xf32>, tensor<4xf32>) -> tensor<2x2xi1>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.compare' op result must be tensor<4xi1>, got tensor<2x2xi1>
  func.return
}

// -----

// An unknown comparison direction is a parse error at the direction.
func.func @compare_unknown_direction(%a: tensor<4xf32>) {
  %0 = hlo.compare LESS, %a, %a : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:20: error: expected a comparison direction: EQ, NE, LT, LE, GT, GE
  func.return
}

// -----

func.func @compare_generic_unknown_direction(%a: tensor<4xf32>) {
  %0 = "hlo.compare"(%a, %a) <{comparison_direction = "lt"}> : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.compare' op unknown comparison direction "lt"
  func.return
}

// -----

// select: an i1 predicate of the result's shape (or rank 0); both branches one type.
func.func @select_predicate_type(%p: tensor<4xi32>, %a: tensor<4xf32>) {
  %0 = hlo.select %p, %a, %a : tensor<4xi32>, tensor<4xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.select' op predicate must have element type i1, got tensor<4xi32>
  func.return
}

// -----

func.func @select_predicate_shape(%p: tensor<2xi1>, %a: tensor<4xf32>) {
  %0 = hlo.select %p, %a, %a : tensor<2xi1>, tensor<4xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.select' op predicate shape [2] must equal the result shape [4] or be rank 0
  func.return
}

// -----

func.func @select_branch_types(%p: tensor<4xi1>, %a: tensor<4xf32>, %b: tensor<4xf16>) {
  %0 = "hlo.select"(%p, %a, %b) : (tensor<4xi1>, tensor<4xf32>, tensor<4xf16>) -> tensor<4xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.select' op operand 'on_false' at position 2 does not verify:
  // CHECK-NEXT: attribute tensor<4xf32> expected from variable 'T', but got tensor<4xf16>
  func.return
}

// -----

func.func @convert_shape(%a: tensor<4xf32>) {
  %0 = hlo.convert %a : (tensor<4xf32>) -> tensor<2x2xbf16>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.convert' op convert keeps the shape: tensor<4xf32> -> tensor<2x2xbf16>
  func.return
}

// -----

func.func @constant_type() {
  %0 = "hlo.constant"() <{value = dense<1.0> : tensor<4xf32>}> : () -> tensor<2xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.constant' op value type tensor<4xf32> differs from result type tensor<2xf32>
  func.return
}

// -----

func.func @constant_not_dense() {
  %0 = hlo.constant 1.0 : f32
  // CHECK: invalid.mlir:[[# @LINE - 1]]:21: error: expected a dense tensor literal such as dense<1.0> : tensor<4xf32>
  func.return
}

// -----

func.func @constant_f16_overflow() {
  %0 = hlo.constant dense<1.0e10> : tensor<2xf16>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:21: error: invalid constant: a value is out of range for its element type
  func.return
}

// -----

func.func @constant_signed_hex_float() {
  %0 = hlo.constant dense<-0x7f800000> : tensor<f32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:27: error: a hexadecimal float literal gives the bits and takes no sign
  func.return
}

// -----

func.func @constant_wide_hex_float() {
  %0 = hlo.constant dense<[1.0, 0x7f8000000]> : tensor<2xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:33: error: hexadecimal literal 0x7f8000000 does not fit in f32
  func.return
}

// -----

func.func @constant_complex_without_a_pair() {
  %0 = hlo.constant dense<0.0> : tensor<2xcomplex<f32>>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:27: error: expected a complex literal (re, im) for complex<f32>
  func.return
}

// -----

func.func @iota_dim() {
  %0 = hlo.iota dim = 2 : tensor<8x4xi32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.iota' op iota dim 2 is out of range for tensor<8x4xi32>
  func.return
}

// -----

// broadcast: one dims entry per operand dimension, strictly increasing, in range, and
// each operand size 1 or equal to the result size there.
func.func @broadcast_rank(%a: tensor<4xf32>) {
  %0 = hlo.broadcast %a, dims = [0, 1] : (tensor<4xf32>) -> tensor<4x4xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.broadcast' op dims has 2 entries but the operand has rank 1
  func.return
}

// -----

func.func @broadcast_order(%a: tensor<4x4xf32>) {
  %0 = hlo.broadcast %a, dims = [1, 0] : (tensor<4x4xf32>) -> tensor<4x4xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.broadcast' op dims [1, 0] must be strictly increasing
  func.return
}

// -----

func.func @broadcast_repeated(%a: tensor<4x4xf32>) {
  %0 = hlo.broadcast %a, dims = [1, 1] : (tensor<4x4xf32>) -> tensor<4x4xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.broadcast' op dims [1, 1] must be strictly increasing
  func.return
}

// -----

func.func @broadcast_out_of_range(%a: tensor<4xf32>) {
  %0 = hlo.broadcast %a, dims = [2] : (tensor<4xf32>) -> tensor<4x4xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.broadcast' op dims[0] = 2 is out of range for result rank 2
  func.return
}

// -----

func.func @broadcast_size(%a: tensor<3xf32>) {
  %0 = hlo.broadcast %a, dims = [1] : (tensor<3xf32>) -> tensor<4x4xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.broadcast' op operand dimension 0 has size 3, which must be 1 or 4 (result dimension 1)
  func.return
}

// -----

func.func @broadcast_element_type(%a: tensor<4xf32>) {
  %0 = hlo.broadcast %a, dims = [1] : (tensor<4xf32>) -> tensor<4x4xbf16>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.broadcast' op broadcast keeps the element type: f32 -> bf16
  func.return
}

// -----

// transpose: dims is a permutation, and the result is the permuted shape.
func.func @transpose_repeated(%a: tensor<4x4xf32>) {
  %0 = hlo.transpose %a, dims = [0, 0] : (tensor<4x4xf32>) -> tensor<4x4xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.transpose' op dims [0, 0] is not a permutation of 0..1
  func.return
}

// -----

func.func @transpose_length(%a: tensor<2x4xf32>) {
  %0 = hlo.transpose %a, dims = [0, 1, 2] : (tensor<2x4xf32>) -> tensor<2x4xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.transpose' op dims [0, 1, 2] is not a permutation of 0..1
  func.return
}

// -----

func.func @transpose_result(%a: tensor<2x4xf32>) {
  %0 = hlo.transpose %a, dims = [1, 0] : (tensor<2x4xf32>) -> tensor<2x4xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.transpose' op result must be tensor<4x2xf32>, got tensor<2x4xf32>
  func.return
}

// -----

// reshape keeps the element count (and type).
func.func @reshape_count(%a: tensor<2x4xf32>) {
  %0 = hlo.reshape %a : (tensor<2x4xf32>) -> tensor<9xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.reshape' op reshape must keep the element count: 8 elements to 9
  func.return
}

// -----

func.func @reshape_element_type(%a: tensor<2x4xf32>) {
  %0 = hlo.reshape %a : (tensor<2x4xf32>) -> tensor<8xi32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.reshape' op reshape keeps the element type: f32 -> i32
  func.return
}

// -----

// slice: bounds lie inside the operand, strides are positive, one range per dimension.
func.func @slice_limit(%a: tensor<16x128xf32>) {
  %0 = hlo.slice %a [0:8, 0:130] : (tensor<16x128xf32>) -> tensor<8x130xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.slice' op slice 0:130 of dimension 1 is out of bounds for size 128
  func.return
}

// -----

func.func @slice_negative_start(%a: tensor<16x128xf32>) {
  %0 = hlo.slice %a [-1:4, 0:128] : (tensor<16x128xf32>) -> tensor<5x128xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.slice' op slice -1:4 of dimension 0 is out of bounds for size 16
  func.return
}

// -----

func.func @slice_reversed(%a: tensor<16x128xf32>) {
  %0 = hlo.slice %a [8:4, 0:128] : (tensor<16x128xf32>) -> tensor<0x128xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.slice' op slice 8:4 of dimension 0 starts after its limit
  func.return
}

// -----

func.func @slice_stride(%a: tensor<16x128xf32>) {
  %0 = hlo.slice %a [0:8, 0:128:0] : (tensor<16x128xf32>) -> tensor<8x128xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.slice' op stride 0 of dimension 1 must be positive
  func.return
}

// -----

func.func @slice_rank(%a: tensor<16x128xf32>) {
  %0 = hlo.slice %a [0:8] : (tensor<16x128xf32>) -> tensor<8xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.slice' op slice needs one range per dimension (2), got 1
  func.return
}

// -----

func.func @slice_result(%a: tensor<16x128xf32>) {
  %0 = hlo.slice %a [0:8, 0:128:2] : (tensor<16x128xf32>) -> tensor<8x128xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.slice' op result must be tensor<8x64xf32>, got tensor<8x128xf32>
  func.return
}

// -----

// dynamic_slice: one rank-0 integer index and one size per dimension, sizes in bounds.
func.func @dynamic_slice_index_count(%a: tensor<16x128xf32>, %i: tensor<i32>) {
  %0 = hlo.dynamic_slice %a [%i] sizes = [2, 128] : (tensor<16x128xf32>, tensor<i32>) -> tensor<2x128xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.dynamic_slice' op expected 2 start indices (one per dimension), got 1
  func.return
}

// -----

func.func @dynamic_slice_index_type(%a: tensor<16x128xf32>, %i: tensor<i32>, %j: tensor<f32>) {
  %0 = hlo.dynamic_slice %a [%i, %j] sizes = [2, 128] : (tensor<16x128xf32>, tensor<i32>, tensor<f32>) -> tensor<2x128xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.dynamic_slice' op start index 1 must be a rank-0 integer tensor, got tensor<f32>
  func.return
}

// -----

func.func @dynamic_slice_size_count(%a: tensor<16x128xf32>, %i: tensor<i32>) {
  %0 = hlo.dynamic_slice %a [%i, %i] sizes = [2] : (tensor<16x128xf32>, tensor<i32>, tensor<i32>) -> tensor<2xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.dynamic_slice' op sizes needs 2 entries, got 1
  func.return
}

// -----

func.func @dynamic_slice_size(%a: tensor<16x128xf32>, %i: tensor<i32>) {
  %0 = hlo.dynamic_slice %a [%i, %i] sizes = [2, 256] : (tensor<16x128xf32>, tensor<i32>, tensor<i32>) -> tensor<2x256xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.dynamic_slice' op slice size 256 of dimension 1 exceeds the operand size 128
  func.return
}

// -----

func.func @dynamic_slice_result(%a: tensor<16x128xf32>, %i: tensor<i32>) {
  %0 = hlo.dynamic_slice %a [%i, %i] sizes = [2, 128] : (tensor<16x128xf32>, tensor<i32>, tensor<i32>) -> tensor<2x64xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.dynamic_slice' op result must be tensor<2x128xf32>, got tensor<2x64xf32>
  func.return
}

// -----

func.func @dynamic_update_slice_index_count(%a: tensor<16x128xf32>, %u: tensor<2x128xf32>, %i: tensor<i32>) {
  %0 = hlo.dynamic_update_slice %a, %u [%i] : (tensor<16x128xf32>, tensor<2x128xf32>, tensor<i32>) -> tensor<16x128xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.dynamic_update_slice' op expected 2 start indices (one per dimension), got 1
  func.return
}

// -----

func.func @dynamic_update_slice_update_size(%a: tensor<16x128xf32>, %u: tensor<2x256xf32>, %i: tensor<i32>) {
  %0 = hlo.dynamic_update_slice %a, %u [%i, %i] : (tensor<16x128xf32>, tensor<2x256xf32>, tensor<i32>, tensor<i32>) -> tensor<16x128xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.dynamic_update_slice' op update dimension 1 of size 256 exceeds the operand size 128
  func.return
}

// -----

func.func @dynamic_update_slice_update_rank(%a: tensor<16x128xf32>, %u: tensor<2xf32>, %i: tensor<i32>) {
  %0 = hlo.dynamic_update_slice %a, %u [%i, %i] : (tensor<16x128xf32>, tensor<2xf32>, tensor<i32>, tensor<i32>) -> tensor<16x128xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.dynamic_update_slice' op update tensor<2xf32> must match the operand's rank and element type
  func.return
}

// -----

func.func @dynamic_update_slice_result(%a: tensor<16x128xf32>, %u: tensor<2x128xf32>, %i: tensor<i32>) {
  %0 = hlo.dynamic_update_slice %a, %u [%i, %i] : (tensor<16x128xf32>, tensor<2x128xf32>, tensor<i32>, tensor<i32>) -> tensor<8x128xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.dynamic_update_slice' op result must have the operand's type tensor<16x128xf32>, got tensor<8x128xf32>
  func.return
}

// -----

// concatenate: operands agree except in `dim`; the result sums that dimension.
func.func @concatenate_shapes(%a: tensor<8x4xf32>, %b: tensor<8x5xf32>) {
  %0 = hlo.concatenate %a, %b, dim = 0 : (tensor<8x4xf32>, tensor<8x5xf32>) -> tensor<16x4xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.concatenate' op operand 1 (tensor<8x5xf32>) must match operand 0 (tensor<8x4xf32>) except in dimension 0
  func.return
}

// -----

func.func @concatenate_element_types(%a: tensor<8x4xf32>, %b: tensor<8x4xf32>, %c: tensor<8x4xbf16>) {
  %0 = hlo.concatenate %a, %b, %c, dim = 0 : (tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xbf16>) -> tensor<24x4xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.concatenate' op operand 2 (tensor<8x4xbf16>) must match operand 0 (tensor<8x4xf32>) except in dimension 0
  func.return
}

// -----

func.func @concatenate_dim(%a: tensor<8x4xf32>, %b: tensor<8x4xf32>) {
  %0 = hlo.concatenate %a, %b, dim = 2 : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<16x4xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.concatenate' op dim 2 is out of range for tensor<8x4xf32>
  func.return
}

// -----

func.func @concatenate_result(%a: tensor<8x4xf32>, %b: tensor<8x4xf32>) {
  %0 = hlo.concatenate %a, %b, %a, dim = 0 : (tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<16x4xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.concatenate' op result must be tensor<24x4xf32>, got tensor<16x4xf32>
  func.return
}

// -----

// dot: batching and contracting dims pair up (same count, same sizes, in range, distinct),
// and the result is batch, lhs free, rhs free.
func.func @dot_batching_count(%a: tensor<4x16x32xf32>, %b: tensor<4x32x8xf32>) {
  %0 = hlo.dot %a, %b, batching_dims = [0] x [], contracting_dims = [2] x [1] : (tensor<4x16x32xf32>, tensor<4x32x8xf32>) -> tensor<4x16x8xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.dot' op batching dims differ in number: [0] x []
  func.return
}

// -----

func.func @dot_contracting_count(%a: tensor<16x32xf32>, %b: tensor<32x8xf32>) {
  %0 = hlo.dot %a, %b, contracting_dims = [1, 0] x [0] : (tensor<16x32xf32>, tensor<32x8xf32>) -> tensor<8xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.dot' op contracting dims differ in number: [1, 0] x [0]
  func.return
}

// -----

func.func @dot_contracting_size(%a: tensor<16x32xf32>, %b: tensor<30x8xf32>) {
  %0 = hlo.dot %a, %b, contracting_dims = [1] x [0] : (tensor<16x32xf32>, tensor<30x8xf32>) -> tensor<16x8xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.dot' op contracting dims have different sizes: lhs dim 1 is 32, rhs dim 0 is 30
  func.return
}

// -----

func.func @dot_batching_size(%a: tensor<4x16x32xf32>, %b: tensor<2x32x8xf32>) {
  %0 = hlo.dot %a, %b, batching_dims = [0] x [0], contracting_dims = [2] x [1] : (tensor<4x16x32xf32>, tensor<2x32x8xf32>) -> tensor<4x16x8xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.dot' op batching dims have different sizes: lhs dim 0 is 4, rhs dim 0 is 2
  func.return
}

// -----

func.func @dot_lhs_out_of_range(%a: tensor<16x32xf32>, %b: tensor<32x8xf32>) {
  %0 = hlo.dot %a, %b, contracting_dims = [2] x [0] : (tensor<16x32xf32>, tensor<32x8xf32>) -> tensor<16x8xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.dot' op lhs contracting dim 2 is out of range for rank 2
  func.return
}

// -----

func.func @dot_rhs_out_of_range(%a: tensor<4x16x32xf32>, %b: tensor<4x32x8xf32>) {
  %0 = hlo.dot %a, %b, batching_dims = [0] x [3], contracting_dims = [2] x [1] : (tensor<4x16x32xf32>, tensor<4x32x8xf32>) -> tensor<4x16x8xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.dot' op rhs batching dim 3 is out of range for rank 3
  func.return
}

// -----

func.func @dot_dims_not_distinct(%a: tensor<32x32xf32>, %b: tensor<32x32xf32>) {
  %0 = hlo.dot %a, %b, batching_dims = [1] x [0], contracting_dims = [1] x [1] : (tensor<32x32xf32>, tensor<32x32xf32>) -> tensor<32x32xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.dot' op lhs batching and contracting dims must be distinct
  func.return
}

// -----

func.func @dot_result_shape(%a: tensor<16x32xf32>, %b: tensor<32x8xf32>) {
  %0 = hlo.dot %a, %b, contracting_dims = [1] x [0] : (tensor<16x32xf32>, tensor<32x8xf32>) -> tensor<8x16xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.dot' op result shape must be [16, 8] (batch, lhs free, rhs free), got [8, 16]
  func.return
}

// -----

func.func @dot_result_batch_first(%a: tensor<4x16x32xf32>, %b: tensor<4x32x8xf32>) {
  %0 = hlo.dot %a, %b, batching_dims = [0] x [0], contracting_dims = [2] x [1] : (tensor<4x16x32xf32>, tensor<4x32x8xf32>) -> tensor<16x4x8xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.dot' op result shape must be [4, 16, 8] (batch, lhs free, rhs free), got [16, 4, 8]
  func.return
}

// -----

func.func @dot_element_types(%a: tensor<16x32xf32>, %b: tensor<32x8xbf16>) {
  %0 = hlo.dot %a, %b, contracting_dims = [1] x [0] : (tensor<16x32xf32>, tensor<32x8xbf16>) -> tensor<16x8xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.dot' op operands must share an element type, got f32 and bf16
  func.return
}

// -----

func.func @dot_repeated_keyword(%a: tensor<16x32xf32>, %b: tensor<32x8xf32>) {
  %0 = hlo.dot %a, %b, contracting_dims = [1] x [0], contracting_dims = [1] x [0] : (tensor<16x32xf32>, tensor<32x8xf32>) -> tensor<16x8xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:54: error: contracting_dims given twice
  func.return
}

// -----

// reduce: dims distinct and in range; the result drops them.
func.func @reduce_repeated(%a: tensor<16x128xf32>) {
  %0 = hlo.reduce add %a, dims = [1, 1] : (tensor<16x128xf32>) -> tensor<16xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.reduce' op dims [1, 1] must be distinct
  func.return
}

// -----

func.func @reduce_out_of_range(%a: tensor<16x128xf32>) {
  %0 = hlo.reduce mul %a, dims = [2] : (tensor<16x128xf32>) -> tensor<16x128xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.reduce' op dim 2 is out of range for tensor<16x128xf32>
  func.return
}

// -----

func.func @reduce_negative(%a: tensor<16x128xf32>) {
  %0 = hlo.reduce min %a, dims = [-1] : (tensor<16x128xf32>) -> tensor<16xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.reduce' op dim -1 is out of range for tensor<16x128xf32>
  func.return
}

// -----

func.func @reduce_result(%a: tensor<16x128xf32>) {
  %0 = hlo.reduce max %a, dims = [1] : (tensor<16x128xf32>) -> tensor<128xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.reduce' op result must be tensor<16xf32>, got tensor<128xf32>
  func.return
}

// -----

// An unknown reduction kind is a parse error at the kind.
func.func @reduce_unknown_kind(%a: tensor<16x128xf32>) {
  %0 = hlo.reduce sum %a, dims = [1] : (tensor<16x128xf32>) -> tensor<16xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:19: error: expected a reduction kind: add, mul, max, min
  func.return
}

// -----

func.func @reduce_generic_unknown_kind(%a: tensor<16x128xf32>) {
  %0 = "hlo.reduce"(%a) <{kind = "and", dimensions = array<i64: 1>}> : (tensor<16x128xf32>) -> tensor<16xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.reduce' op unknown reduction kind "and"
  func.return
}

// -----

// A syntax error, an unknown op, an unknown attribute, an unknown type.
func.func @syntax(%a: tensor<4xf32>) {
  %0 = hlo.add %a %a : tensor<4xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:19: error: Expected ','
  func.return
}

// -----

func.func @unknown_op(%a: tensor<4xf32>) {
  %0 = hlo.frobnicate %a : tensor<4xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:{{[0-9]+}}: error: Operation hlo.frobnicate is not registered
  func.return
}

// -----

func.func @unknown_attribute(%a: tensor<4xf32>) {
  %0 = hlo.add %a, %a {precision = #hlo.precision<HIGH>} : tensor<4xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:{{[0-9]+}}: error: 'hlo.precision' is not registered
  func.return
}

// -----

func.func @unknown_type(%a: tensor<4x!hlo.token>) {
  // CHECK: invalid.mlir:[[# @LINE - 1]]:{{[0-9]+}}: error: 'hlo.token' is not registered
  func.return
}

// -----

// pad: the padding value is a scalar of the operand's element type.
func.func @pad_value_rank(%x: tensor<4xf32>, %v: tensor<1xf32>) {
  %0 = hlo.pad %x, %v, low = [0], high = [0], interior = [0] : (tensor<4xf32>, tensor<1xf32>) -> tensor<4xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.pad' op the padding value must be a rank-0 tensor, got tensor<1xf32>
  func.return
}

// -----

func.func @pad_value_type(%x: tensor<4xf32>, %v: tensor<i32>) {
  %0 = hlo.pad %x, %v, low = [0], high = [0], interior = [0] : (tensor<4xf32>, tensor<i32>) -> tensor<4xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.pad' op operand, padding value and result must share an element type, got f32, i32 and f32
  func.return
}

// -----

func.func @pad_entries(%x: tensor<4x2xf32>, %v: tensor<f32>) {
  %0 = hlo.pad %x, %v, low = [0], high = [0, 0], interior = [0, 0] : (tensor<4x2xf32>, tensor<f32>) -> tensor<4x2xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.pad' op low has 1 entries but the operand has rank 2
  func.return
}

// -----

func.func @pad_negative_interior(%x: tensor<4xf32>, %v: tensor<f32>) {
  %0 = hlo.pad %x, %v, low = [0], high = [0], interior = [-1] : (tensor<4xf32>, tensor<f32>) -> tensor<1xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.pad' op interior padding [-1] must be >= 0
  func.return
}

// -----

func.func @pad_negative_result(%x: tensor<4xf32>, %v: tensor<f32>) {
  %0 = hlo.pad %x, %v, low = [-3], high = [-2], interior = [0] : (tensor<4xf32>, tensor<f32>) -> tensor<0xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.pad' op padding gives a negative result dimension: [-1] (negative edge padding removes more elements than the dimension has)
  func.return
}

// -----

func.func @pad_result_shape(%x: tensor<4xf32>, %v: tensor<f32>) {
  %0 = hlo.pad %x, %v, low = [1], high = [1], interior = [1] : (tensor<4xf32>, tensor<f32>) -> tensor<6xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.pad' op result shape must be [9] (low + size + (size - 1) * interior + high), got [6]
  func.return
}

// -----

func.func @reverse_dims_distinct(%x: tensor<4x2xf32>) {
  %0 = hlo.reverse %x, dims = [1, 1] : tensor<4x2xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.reverse' op dims [1, 1] must be distinct
  func.return
}

// -----

func.func @reverse_dim_range(%x: tensor<4x2xf32>) {
  %0 = hlo.reverse %x, dims = [2] : tensor<4x2xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.reverse' op dim 2 is out of range for rank 2
  func.return
}

// -----

func.func @reverse_result_type(%x: tensor<4x2xf32>) {
  %0 = "hlo.reverse"(%x) <{dimensions = array<i64: 0>}> : (tensor<4x2xf32>) -> tensor<2x4xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.reverse' op result 'result' at position 0 does not verify:
  func.return
}

// -----

// Element-wise ops of issue 13: element kinds, is_finite's result, clamp's bounds.
func.func @erf_of_integers(%i: tensor<4xi32>) {
  %0 = hlo.erf %i : tensor<4xi32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.erf' op does not accept element type i32 (accepts float)
  func.return
}

// -----

func.func @shift_of_floats(%a: tensor<4xf32>) {
  %0 = hlo.shift_left %a, %a : tensor<4xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.shift_left' op does not accept element type f32 (accepts int)
  func.return
}

// -----

func.func @is_finite_result(%a: tensor<4xf32>) {
  %0 = hlo.is_finite %a : (tensor<4xf32>) -> tensor<4xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.is_finite' op result must be tensor<4xi1>, got tensor<4xf32>
  func.return
}

// -----

func.func @clamp_bound_shape(%a: tensor<4xf32>, %b: tensor<2xf32>) {
  %0 = hlo.clamp %b, %a, %a : (tensor<2xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.clamp' op min must have the operand's type tensor<4xf32> or be rank 0 (tensor<f32>), got tensor<2xf32>
  func.return
}

// -----

func.func @sort_comparator(%a: tensor<4xf32>) {
  %0 = hlo.sort %a, dim = 0, comparator = LE : (tensor<4xf32>) -> tensor<4xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.sort' op comparator must be one of LT, GT, LT TOTALORDER, GT TOTALORDER, got 'LE'
  func.return
}

// -----

func.func @sort_shapes(%a: tensor<4xf32>, %b: tensor<3xi32>) {
  %0:2 = hlo.sort %a, %b, dim = 0, comparator = LT : (tensor<4xf32>, tensor<3xi32>) -> (tensor<4xf32>, tensor<3xi32>)
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.sort' op operand 1 has shape [3], operand 0 [4]: every operand must have the same shape
  func.return
}

// -----

func.func @sort_dim_range(%a: tensor<4xf32>) {
  %0 = hlo.sort %a, dim = 1, comparator = LT : (tensor<4xf32>) -> tensor<4xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.sort' op dim 1 is out of range for rank 1
  func.return
}

// -----

func.func @sort_result_type(%a: tensor<4xf32>) {
  %0 = hlo.sort %a, dim = 0, comparator = LT : (tensor<4xf32>) -> tensor<4xi32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.sort' op result 0 must be tensor<4xf32>, got tensor<4xi32>
  func.return
}

// -----

func.func @sort_result_count(%a: tensor<4xf32>) {
  %0:2 = "hlo.sort"(%a) <{dimension = 0 : i64, comparator = "LT"}> : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.sort' op sort has 1 operands but 2 results
  func.return
}

// -----

func.func @top_k_k_range(%a: tensor<2x4xf32>) {
  %0:2 = hlo.top_k %a, k = 5 : tensor<2x4xf32> -> (tensor<2x5xf32>, tensor<2x5xi32>)
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.top_k' op k = 5 must be in [0, 4] (the last dimension's size)
  func.return
}

// -----

func.func @top_k_result_types(%a: tensor<2x4xf32>) {
  %0:2 = hlo.top_k %a, k = 2 : tensor<2x4xf32> -> (tensor<2x2xf32>, tensor<2x2xi64>)
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.top_k' op results must be (tensor<2x2xf32>, tensor<2x2xi32>), got (tensor<2x2xf32>, tensor<2x2xi64>)
  func.return
}

// -----

func.func @top_k_rank(%a: tensor<f32>) {
  %0:2 = hlo.top_k %a, k = 0 : tensor<f32> -> (tensor<0xf32>, tensor<0xi32>)
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.top_k' op top_k needs an operand of rank >= 1
  func.return
}

// -----

func.func @convolution_result_shape(%x: tensor<1x5x2xf32>, %w: tensor<3x2x4xf32>) {
  %0 = hlo.convolution(%x, %w) dim_numbers = [b, 0, f]x[0, i, o]->[b, 0, f], window = {stride = [2]} : (tensor<1x5x2xf32>, tensor<3x2x4xf32>) -> tensor<1x3x4xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.convolution' op result shape must be [1, 2, 4], got [1, 3, 4]
  func.return
}

// -----

func.func @convolution_features(%x: tensor<1x5x3xf32>, %w: tensor<3x2x4xf32>) {
  %0 = hlo.convolution(%x, %w) dim_numbers = [b, 0, f]x[0, i, o]->[b, 0, f], window = {} : (tensor<1x5x3xf32>, tensor<3x2x4xf32>) -> tensor<1x3x4xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.convolution' op lhs feature dimension (3) must be rhs input feature dimension (2) times feature_group_count (1)
  func.return
}

// -----

func.func @convolution_groups(%x: tensor<2x5x4xf32>, %w: tensor<3x2x4xf32>) {
  %0 = hlo.convolution(%x, %w) dim_numbers = [b, 0, f]x[0, i, o]->[b, 0, f], window = {}, feature_group_count = 2, batch_group_count = 2 : (tensor<2x5x4xf32>, tensor<3x2x4xf32>) -> tensor<1x3x4xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.convolution' op feature_group_count (2) and batch_group_count (2) must be positive, and one of them 1
  func.return
}

// -----

func.func @convolution_window_rank(%x: tensor<1x5x2xf32>, %w: tensor<3x2x4xf32>) {
  %0 = hlo.convolution(%x, %w) dim_numbers = [b, 0, f]x[0, i, o]->[b, 0, f], window = {rhs_dilate = [1, 1]} : (tensor<1x5x2xf32>, tensor<3x2x4xf32>) -> tensor<1x3x4xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.convolution' op rhs dilation [1, 1] must be 1 positive numbers
  func.return
}

// -----

func.func @convolution_rank(%x: tensor<1x5x2xf32>, %w: tensor<3x2x4x1xf32>) {
  %0 = hlo.convolution(%x, %w) dim_numbers = [b, 0, f]x[0, i, o]->[b, 0, f], window = {} : (tensor<1x5x2xf32>, tensor<3x2x4x1xf32>) -> tensor<1x3x4xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.convolution' op rhs dimension numbers [1, 2, 0] must be a permutation of the 3 dimensions of every operand and the result (rank 4)
  func.return
}

// -----

func.func @return_outside_hlo_region(%a: tensor<f32>) {
  "test.op"() ({
    hlo.return %a : tensor<f32>
    // CHECK: invalid.mlir:[[# @LINE - 1]]:5: error: 'hlo.return' op hlo.return must end a region of an hlo op
  }) : () -> ()
  func.return
}

// -----

func.func @erf_inv_of_an_integer(%i: tensor<4xi32>) {
  %0 = hlo.erf_inv %i : tensor<4xi32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.erf_inv' op does not accept element type i32 (accepts float)
  func.return
}

// -----

func.func @partition_id_type() {
  %0 = hlo.partition_id : tensor<2xi32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.partition_id' op result must be a rank-0 integer tensor (StableHLO: tensor<ui32>), got tensor<2xi32>
  func.return
}

// -----

func.func @replica_id_type() {
  %0 = hlo.replica_id : tensor<f32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.replica_id' op result must be a rank-0 integer tensor (StableHLO: tensor<ui32>), got tensor<f32>
  func.return
}

// -----

func.func @exp_of_ints(%a: tensor<4xi32>) {
  %0 = hlo.exp %a : tensor<4xi32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.exp' op does not accept element type i32 (accepts complex, float)
  func.return
}

// -----

func.func @sub_of_bools(%a: tensor<4xi1>) {
  %0 = hlo.sub %a, %a : tensor<4xi1>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.sub' op does not accept element type i1 (accepts complex, float, int)
  func.return
}

// -----

// Unsupported element types: explicitly signed integers (StableHLO's are signless).
func.func @si8(%a: tensor<4xsi8>) {
  %0 = hlo.add %a, %a : tensor<4xsi8>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.add' op unsupported element type si8 (expected f64, f32, bf16, f16, f8E4M3FN, f8E5M2, i64, i32, i16, i8, i4, i2, ui64, ui32, ui16, ui8, ui4, ui2, i1, complex<f32> or complex<f64>)
  func.return
}

// -----

func.func @unsigned_bool(%a: tensor<4xui1>) {
  %0 = hlo.neg %a : tensor<4xui1>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.neg' op unsupported element type ui1 (expected f64, f32, bf16, f16, f8E4M3FN, f8E5M2, i64, i32, i16, i8, i4, i2, ui64, ui32, ui16, ui8, ui4, ui2, i1, complex<f32> or complex<f64>)
  func.return
}

// -----

func.func @constant_f8_fnuz() {
  %0 = hlo.constant dense<1.0> : tensor<2xf8E4M3FNUZ>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.constant' op unsupported element type f8E4M3FNUZ (expected f64, f32, bf16, f16, f8E4M3FN, f8E5M2, i64, i32, i16, i8, i4, i2, ui64, ui32, ui16, ui8, ui4, ui2, i1, complex<f32> or complex<f64>)
  func.return
}

// -----

// Element types of issue 13: a type hlo still refuses, complex compares, complex / real /
// bitcast_convert shapes and types.
func.func @still_refused(%a: tensor<4xcomplex<bf16>>) {
  %0 = hlo.add %a, %a : tensor<4xcomplex<bf16>>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.add' op unsupported element type complex<bf16> (expected f64, f32, bf16, f16, f8E4M3FN, f8E5M2, i64, i32, i16, i8, i4, i2, ui64, ui32, ui16, ui8, ui4, ui2, i1, complex<f32> or complex<f64>)
  func.return
}

// -----

func.func @complex_lt(%c: tensor<4xcomplex<f32>>) {
  %0 = hlo.compare LT, %c, %c : (tensor<4xcomplex<f32>>, tensor<4xcomplex<f32>>) -> tensor<4xi1>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.compare' op complex operands compare only with EQ or NE
  func.return
}

// -----

func.func @complex_of_integers(%i: tensor<4xi32>) {
  %0 = hlo.complex %i, %i : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xcomplex<f32>>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.complex' op operands must be f32 or f64 tensors, got tensor<4xi32>
  func.return
}

// -----

func.func @imag_type(%c: tensor<4xcomplex<f64>>) {
  %0 = hlo.imag %c : (tensor<4xcomplex<f64>>) -> tensor<4xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.imag' op result must be tensor<4xf64>, got tensor<4xf32>
  func.return
}

// -----

func.func @bitcast_wider(%a: tensor<3xf32>) {
  %0 = hlo.bitcast_convert %a : (tensor<3xf32>) -> tensor<f64>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.bitcast_convert' op to a type 2 times wider, the operand's last dimension must be 2: tensor<3xf32> -> tensor<f64>
  func.return
}

// -----

func.func @bitcast_bool(%p: tensor<8xi1>) {
  %0 = hlo.bitcast_convert %p : (tensor<8xi1>) -> tensor<8xui8>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.bitcast_convert' op i1 cannot be bitcast: tensor<8xi1> -> tensor<8xui8>
  func.return
}

// -----

func.func @reduce_window_shape(%a: tensor<4x6xf32>, %z: tensor<f32>) {
  %0 = hlo.reduce_window max %a, %z, window = [2, 2], strides = [2, 2] : (tensor<4x6xf32>, tensor<f32>) -> tensor<2x2xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.reduce_window' op result shape must be [2, 3], got [2, 2]
  func.return
}

// -----

func.func @reduce_window_rank(%a: tensor<4x6xf32>, %z: tensor<f32>) {
  %0 = hlo.reduce_window add %a, %z, window = [2] : (tensor<4x6xf32>, tensor<f32>) -> tensor<3xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.reduce_window' op window has 1 entries but the operand has rank 2
  func.return
}

// -----

func.func @reduce_window_stride(%a: tensor<4xf32>, %z: tensor<f32>) {
  %0 = hlo.reduce_window add %a, %z, window = [2], strides = [0] : (tensor<4xf32>, tensor<f32>) -> tensor<3xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.reduce_window' op strides [0] must be >= 1
  func.return
}

// -----

func.func @reduce_window_init(%a: tensor<4xf32>, %z: tensor<1xf32>) {
  %0 = hlo.reduce_window add %a, %z, window = [2] : (tensor<4xf32>, tensor<1xf32>) -> tensor<3xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.reduce_window' op the init value must be a rank-0 tensor, got tensor<1xf32>
  func.return
}

// -----

func.func @reduce_window_element_type(%a: tensor<4xf32>, %z: tensor<i32>) {
  %0 = hlo.reduce_window add %a, %z, window = [2] : (tensor<4xf32>, tensor<i32>) -> tensor<3xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.reduce_window' op operand, init value and result must share an element type, got f32, i32 and f32
  func.return
}

// -----

func.func @select_and_scatter_source(%a: tensor<4xf32>, %g: tensor<3xf32>, %z: tensor<f32>) {
  %0 = hlo.select_and_scatter %a, %g, %z, select = GE, scatter = add, window = [2], strides = [2] : (tensor<4xf32>, tensor<3xf32>, tensor<f32>) -> tensor<4xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.select_and_scatter' op the source must have the window positions' shape [2], got [3]
  func.return
}

// -----

func.func @select_and_scatter_select(%a: tensor<4xf32>, %g: tensor<2xf32>, %z: tensor<f32>) {
  %0 = hlo.select_and_scatter %a, %g, %z, select = LT, scatter = add, window = [2], strides = [2] : (tensor<4xf32>, tensor<2xf32>, tensor<f32>) -> tensor<4xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.select_and_scatter' op select must be one of GE, GT, got 'LT'
  func.return
}

// -----

func.func @select_and_scatter_scatter(%a: tensor<4xf32>, %g: tensor<2xf32>, %z: tensor<f32>) {
  %0 = hlo.select_and_scatter %a, %g, %z, select = GE, scatter = max, window = [2], strides = [2] : (tensor<4xf32>, tensor<2xf32>, tensor<f32>) -> tensor<4xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.select_and_scatter' op scatter must be add, got 'max'
  func.return
}

// -----

func.func @select_and_scatter_dilation(%a: tensor<4xf32>, %g: tensor<2xf32>, %z: tensor<f32>) {
  %0 = hlo.select_and_scatter %a, %g, %z, select = GE, scatter = add, window = [2], base_dilations = [2] : (tensor<4xf32>, tensor<2xf32>, tensor<f32>) -> tensor<4xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.select_and_scatter' op select_and_scatter has no dilations
  func.return
}

// -----

func.func @reduce_body_operand_count(%v: tensor<4xf32>, %v0: tensor<f32>, %w: tensor<4xf32>) {
  %0 = "hlo.reduce"(%v, %v0, %w) <{dimensions = array<i64: 0>}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    hlo.return %a : tensor<f32>
  }) : (tensor<4xf32>, tensor<f32>, tensor<4xf32>) -> tensor<f32>
  // CHECK: invalid.mlir:[[# @LINE - 4]]:3: error: 'hlo.reduce' op a reduce with a body has N inputs and N inits for N results: 3 operands, 1 results
  func.return
}

// -----

func.func @reduce_body_init_type(%v: tensor<4xf32>, %v0: tensor<1xf32>) {
  %0 = hlo.reduce(%v init: %v0) across dims = [0] : (tensor<4xf32>, tensor<1xf32>) -> tensor<f32> reducer(%a: tensor<f32>, %b: tensor<f32>) {
    hlo.return %a : tensor<f32>
  }
  // CHECK: invalid.mlir:[[# @LINE - 3]]:3: error: 'hlo.reduce' op init 0 must be tensor<f32>, got tensor<1xf32>
  func.return
}

// -----

func.func @reduce_body_arguments(%v: tensor<4xf32>, %v0: tensor<f32>) {
  %0 = hlo.reduce(%v init: %v0) across dims = [0] : (tensor<4xf32>, tensor<f32>) -> tensor<f32> reducer(%a: tensor<f32>, %b: tensor<i32>) {
    hlo.return %a : tensor<f32>
  }
  // CHECK: invalid.mlir:[[# @LINE - 3]]:3: error: 'hlo.reduce' op the body's arguments must be the accumulated values then the combined ones: (tensor<f32>, tensor<f32>)
  func.return
}

// -----

func.func @reduce_body_return(%v: tensor<4xf32>, %v0: tensor<f32>) {
  %0 = hlo.reduce(%v init: %v0) across dims = [0] : (tensor<4xf32>, tensor<f32>) -> tensor<f32> reducer(%a: tensor<f32>, %b: tensor<f32>) {
    %c = hlo.compare GT, %a, %b : (tensor<f32>, tensor<f32>) -> tensor<i1>
    hlo.return %c : tensor<i1>
  }
  // CHECK: invalid.mlir:[[# @LINE - 4]]:3: error: 'hlo.reduce' op the body must end in hlo.return of (tensor<f32>)
  func.return
}

// -----

func.func @reduce_body_result(%v: tensor<4x2xf32>, %v0: tensor<f32>) {
  %0 = hlo.reduce(%v init: %v0) across dims = [0] : (tensor<4x2xf32>, tensor<f32>) -> tensor<f32> reducer(%a: tensor<f32>, %b: tensor<f32>) {
    hlo.return %a : tensor<f32>
  }
  // CHECK: invalid.mlir:[[# @LINE - 3]]:3: error: 'hlo.reduce' op result must be tensor<2xf32>, got tensor<f32>
  func.return
}

// -----

func.func @reduce_named_with_body(%v: tensor<4xf32>) {
  %0 = "hlo.reduce"(%v) <{kind = "add", dimensions = array<i64: 0>}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    hlo.return %a : tensor<f32>
  }) : (tensor<4xf32>) -> tensor<f32>
  // CHECK: invalid.mlir:[[# @LINE - 4]]:3: error: 'hlo.reduce' op a reduce with a named kind has one operand, one result and no body
  func.return
}

// -----

func.func @gather_slice_too_big(%t: tensor<8x4xf32>, %i: tensor<3x1xi32>) {
  %0 = hlo.gather %t, %i, offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1, slice_sizes = [1, 5] : (tensor<8x4xf32>, tensor<3x1xi32>) -> tensor<3x5xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.gather' op slice_sizes[1] = 5 must be in [0, 4]
  func.return
}

// -----

func.func @gather_collapsed_window(%t: tensor<8x4xf32>, %i: tensor<3x1xi32>) {
  %0 = hlo.gather %t, %i, offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1, slice_sizes = [2, 4] : (tensor<8x4xf32>, tensor<3x1xi32>) -> tensor<3x4xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.gather' op slice_sizes[0] = 2 must be <= 1 (collapsed or batching dimension)
  func.return
}

// -----

func.func @gather_result_shape(%t: tensor<8x4xf32>, %i: tensor<3x1xi32>) {
  %0 = hlo.gather %t, %i, offset_dims = [0], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1, slice_sizes = [1, 4] : (tensor<8x4xf32>, tensor<3x1xi32>) -> tensor<3x4xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.gather' op result shape must be [4, 3] (batch dimensions of the indices, offset dimensions of the slice), got [3, 4]
  func.return
}

// -----

func.func @gather_index_map(%t: tensor<8x4xf32>, %i: tensor<3x1xi32>) {
  %0 = hlo.gather %t, %i, offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0, 1], index_vector_dim = 1, slice_sizes = [1, 4] : (tensor<8x4xf32>, tensor<3x1xi32>) -> tensor<3x4xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.gather' op start_index_map has 2 entries but the index vector (indices dimension 1) has 1
  func.return
}

// -----

func.func @gather_float_indices(%t: tensor<8x4xf32>, %i: tensor<3x1xf32>) {
  %0 = hlo.gather %t, %i, offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1, slice_sizes = [1, 4] : (tensor<8x4xf32>, tensor<3x1xf32>) -> tensor<3x4xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.gather' op does not accept element type f32 (accepts int)
  func.return
}

// -----

func.func @scatter_kind(%t: tensor<8x4xf32>, %i: tensor<3x1xi32>, %u: tensor<3x4xf32>) {
  %0 = "hlo.scatter"(%t, %i, %u) <{kind = "sub", update_window_dims = array<i64: 1>, inserted_window_dims = array<i64: 0>, input_batching_dims = array<i64>, scatter_indices_batching_dims = array<i64>, scatter_dims_to_operand_dims = array<i64: 0>, index_vector_dim = 1 : i64}> : (tensor<8x4xf32>, tensor<3x1xi32>, tensor<3x4xf32>) -> tensor<8x4xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.scatter' op unknown scatter kind 'sub' (expected add, mul, max, min, replace)
  func.return
}

// -----

func.func @scatter_update_shape(%t: tensor<8x4xf32>, %i: tensor<3x1xi32>, %u: tensor<2x4xf32>) {
  %0 = hlo.scatter add %t, %i, %u, update_window_dims = [1], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1 : (tensor<8x4xf32>, tensor<3x1xi32>, tensor<2x4xf32>) -> tensor<8x4xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.scatter' op updates' scatter dimensions [2] must be the indices' shape without index_vector_dim [3]
  func.return
}

// -----

func.func @scatter_window(%t: tensor<8x4xf32>, %i: tensor<3x1xi32>, %u: tensor<3x5xf32>) {
  %0 = hlo.scatter add %t, %i, %u, update_window_dims = [1], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1 : (tensor<8x4xf32>, tensor<3x1xi32>, tensor<3x5xf32>) -> tensor<8x4xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.scatter' op the update window (5) is larger than operand dimension 1 (4)
  func.return
}

// -----

func.func @scatter_rank(%t: tensor<8x4xf32>, %i: tensor<3x1xi32>, %u: tensor<3x4xf32>) {
  %0 = hlo.scatter add %t, %i, %u, update_window_dims = [1], inserted_window_dims = [], scatter_dims_to_operand_dims = [0], index_vector_dim = 1 : (tensor<8x4xf32>, tensor<3x1xi32>, tensor<3x4xf32>) -> tensor<8x4xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.scatter' op update_window_dims (1) + inserted_window_dims (0) + input_batching_dims (0) must be the operand rank 2
  func.return
}

// -----

func.func @while_cond_not_i1(%a: tensor<4xf32>) {
  %r = hlo.while(%x = %a) : tensor<4xf32> cond {
    %s = hlo.constant dense<1.0> : tensor<f32>
    hlo.return %s : tensor<f32>
  } do {
    hlo.return %x : tensor<4xf32>
  }
  // CHECK: invalid.mlir:[[# @LINE - 6]]:3: error: 'hlo.while' op cond must return one tensor<i1>, got (tensor<f32>)
  func.return
}

// -----

func.func @while_body_types(%a: tensor<4xf32>, %p: tensor<i1>) {
  %r = hlo.while(%x = %a) : tensor<4xf32> cond {
    hlo.return %p : tensor<i1>
  } do {
    %y = hlo.constant dense<1.0> : tensor<2xf32>
    hlo.return %y : tensor<2xf32>
  }
  // CHECK: invalid.mlir:[[# @LINE - 6]]:3: error: 'hlo.while' op do must return the carried values' types (tensor<4xf32>), got (tensor<2xf32>)
  func.return
}

// -----

func.func @while_block_args(%a: tensor<4xf32>, %p: tensor<i1>) {
  %r = "hlo.while"(%a) ({
  ^bb0(%x: tensor<4xi32>):
    hlo.return %p : tensor<i1>
  }, {
  ^bb0(%x: tensor<4xf32>):
    hlo.return %x : tensor<4xf32>
  }) : (tensor<4xf32>) -> tensor<4xf32>
  // CHECK: invalid.mlir:[[# @LINE - 7]]:3: error: 'hlo.while' op cond's block arguments (tensor<4xi32>) must have the carried values' types (tensor<4xf32>)
  func.return
}

// -----

func.func @while_results(%a: tensor<4xf32>, %p: tensor<i1>) {
  %r = "hlo.while"(%a) ({
  ^bb0(%x: tensor<4xf32>):
    hlo.return %p : tensor<i1>
  }, {
  ^bb0(%x: tensor<4xf32>):
    hlo.return %x : tensor<4xf32>
  }) : (tensor<4xf32>) -> tensor<4xf64>
  // CHECK: invalid.mlir:[[# @LINE - 7]]:3: error: 'hlo.while' op results (tensor<4xf64>) must have the operands' types (tensor<4xf32>)
  func.return
}

// -----

func.func @while_no_return(%a: tensor<4xf32>) {
  %r = "hlo.while"(%a) ({
  ^bb0(%x: tensor<4xf32>):
    "test.op"() : () -> ()
  }, {
  ^bb0(%x: tensor<4xf32>):
    hlo.return %x : tensor<4xf32>
  }) : (tensor<4xf32>) -> tensor<4xf32>
  // CHECK: invalid.mlir:[[# @LINE - 7]]:3: error: 'hlo.while' op cond must end with hlo.return
  func.return
}

// -----

func.func @case_branch_types(%a: tensor<4xf32>, %k: tensor<i32>) {
  %c = hlo.case %k -> (tensor<4xf32>) {
    hlo.return %a : tensor<4xf32>
  }, {
    %i = hlo.constant dense<1> : tensor<4xi32>
    hlo.return %i : tensor<4xi32>
  }
  // CHECK: invalid.mlir:[[# @LINE - 6]]:3: error: 'hlo.case' op branch 1 must return the result types (tensor<4xf32>), got (tensor<4xi32>)
  func.return
}

// -----

func.func @case_index(%a: tensor<4xf32>, %k: tensor<i64>) {
  %c = "hlo.case"(%k) ({
    hlo.return %a : tensor<4xf32>
  }) : (tensor<i64>) -> tensor<4xf32>
  // CHECK: invalid.mlir:[[# @LINE - 3]]:3: error: 'hlo.case' op index must be tensor<i32>, got tensor<i64>
  func.return
}

// -----

func.func @case_no_branch(%k: tensor<i32>) {
  "hlo.case"(%k) : (tensor<i32>) -> ()
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.case' op case needs at least one branch
  func.return
}

// -----

func.func @case_branch_args(%a: tensor<4xf32>, %k: tensor<i32>) {
  %c = "hlo.case"(%k) ({
  ^bb0(%x: tensor<4xf32>):
    hlo.return %x : tensor<4xf32>
  }) : (tensor<i32>) -> tensor<4xf32>
  // CHECK: invalid.mlir:[[# @LINE - 4]]:3: error: 'hlo.case' op branch 0 must not have block arguments
  func.return
}

// -----

func.func @rng_algorithm(%s: tensor<2xui64>) {
  %t, %b = hlo.rng_bit_generator %s, algorithm = MT19937 : (tensor<2xui64>) -> (tensor<2xui64>, tensor<4xui32>)
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.rng_bit_generator' op algorithm must be one of DEFAULT, THREE_FRY, PHILOX, got 'MT19937'
  func.return
}

// -----

func.func @rng_state_type(%s: tensor<2xi64>) {
  %t, %b = hlo.rng_bit_generator %s, algorithm = PHILOX : (tensor<2xi64>) -> (tensor<2xi64>, tensor<4xui32>)
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.rng_bit_generator' op initial_state must be a rank-1 ui64 tensor, got tensor<2xi64>
  func.return
}

// -----

func.func @rng_three_fry_state_size(%s: tensor<3xui64>) {
  %t, %b = hlo.rng_bit_generator %s, algorithm = THREE_FRY : (tensor<3xui64>) -> (tensor<3xui64>, tensor<4xui32>)
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.rng_bit_generator' op THREE_FRY needs a state of 2 ui64 values, got tensor<3xui64>
  func.return
}

// -----

func.func @rng_output_state(%s: tensor<2xui64>) {
  %t, %b = hlo.rng_bit_generator %s, algorithm = PHILOX : (tensor<2xui64>) -> (tensor<3xui64>, tensor<4xui32>)
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.rng_bit_generator' op output_state must have the type of initial_state (tensor<2xui64>), got tensor<3xui64>
  func.return
}

// -----

func.func @rng_float_bits(%s: tensor<2xui64>) {
  %t, %b = hlo.rng_bit_generator %s, algorithm = PHILOX : (tensor<2xui64>) -> (tensor<2xui64>, tensor<4xf32>)
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.rng_bit_generator' op output must be an integer tensor (floats are not supported), got tensor<4xf32>
  func.return
}

// -----

func.func @fusion_bad_kind(%x: tensor<4xf32>) -> tensor<4xf32> {
  %r = hlo.fusion(%p = %x) kind = custom, name = "exp_fusion" : (tensor<4xf32>) -> tensor<4xf32> {
    %e = hlo.exp %p : tensor<4xf32>
    hlo.return %e : tensor<4xf32>
  }
  // CHECK: invalid.mlir:[[# @LINE - 4]]:3: error: 'hlo.fusion' op kind must be one of loop, input, output, got 'custom'
  func.return %r : tensor<4xf32>
}

// -----

func.func @fusion_bad_return(%x: tensor<4xf32>) -> tensor<4xf32> {
  %r = hlo.fusion(%p = %x) kind = loop, name = "convert_fusion" : (tensor<4xf32>) -> tensor<4xf32> {
    %c = hlo.convert %p : (tensor<4xf32>) -> tensor<4xbf16>
    hlo.return %c : tensor<4xbf16>
  }
  // CHECK: invalid.mlir:[[# @LINE - 4]]:3: error: 'hlo.fusion' op the region must return the result types (tensor<4xf32>), got (tensor<4xbf16>)
  func.return %r : tensor<4xf32>
}

// -----

func.func @fusion_bad_args(%x: tensor<4xf32>) -> tensor<4xf32> {
  %r = "hlo.fusion"(%x) <{fusion_name = "exp_fusion", kind = "loop"}> ({
  ^bb0(%p: tensor<4xbf16>):
    hlo.return %p : tensor<4xbf16>
  }) : (tensor<4xf32>) -> tensor<4xf32>
  // CHECK: invalid.mlir:[[# @LINE - 4]]:3: error: 'hlo.fusion' op block arguments (tensor<4xbf16>) must have the operands' types (tensor<4xf32>)
  func.return %r : tensor<4xf32>
}

// -----

spmd.mesh @mesh = <["x"=2]>
func.func @fusion_collective(%x: tensor<4xf32>) -> tensor<4xf32> attributes {spmd.partitioned} {
  %r = hlo.fusion(%p = %x) kind = loop, name = "all_reduce_fusion" : (tensor<4xf32>) -> tensor<4xf32> {
    %a = collective.all_reduce add %p on @mesh["x"] : tensor<4xf32>
    hlo.return %a : tensor<4xf32>
  }
  // CHECK: invalid.mlir:[[# @LINE - 4]]:3: error: 'hlo.fusion' op collective.all_reduce cannot be fused: a fusion holds hlo ops without regions (no collectives, spmd or tpu ops, no nested fusion)
  func.return %r : tensor<4xf32>
}

// -----

func.func @fusion_uses_outer_value(%x: tensor<4xf32>) -> tensor<4xf32> {
  %r = hlo.fusion(%p = %x) kind = loop, name = "add_fusion" : (tensor<4xf32>) -> tensor<4xf32> {
    %s = hlo.add %p, %x : tensor<4xf32>
    hlo.return %s : tensor<4xf32>
  }
  // CHECK: error:
  func.return %r : tensor<4xf32>
}

// -----

// Operand dominance (MLIR's rule; xDSL's parser accepts the forward reference).
func.func @use_before_definition(%a: tensor<4xf32>) -> tensor<4xf32> {
  %c = hlo.exp %b : tensor<4xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.exp' op operand #0 does not dominate this use (it is defined below it)
  %b = hlo.exp %a : tensor<4xf32>
  func.return %c : tensor<4xf32>
}

// -----

func.func @use_of_own_result(%a: tensor<4xf32>) -> tensor<4xf32> {
  %c = hlo.add %a, %c : tensor<4xf32>
  // CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'hlo.add' op operand #1 does not dominate this use (it is defined below it)
  func.return %c : tensor<4xf32>
}

// -----

func.func @use_before_definition_in_region(%a: tensor<4xf32>, %n: tensor<i32>) -> tensor<4xf32> {
  %r:2 = hlo.while (%x = %a, %i = %n) : tensor<4xf32>, tensor<i32>
  cond {
    %t = hlo.compare LT, %i, %n : (tensor<i32>, tensor<i32>) -> tensor<i1>
    hlo.return %t : tensor<i1>
  } do {
    %y = hlo.add %x, %late : tensor<4xf32>
    // CHECK: invalid.mlir:[[# @LINE - 1]]:5: error: 'hlo.add' op operand #1 does not dominate this use (it is defined below it)
    hlo.return %y, %i : tensor<4xf32>, tensor<i32>
  }
  %late = hlo.exp %a : tensor<4xf32>
  func.return %r#0 : tensor<4xf32>
}

// -----

// A value passed straight through is checked too (it reaches the runner and the lowering).
func.func @unsupported_passthrough(%a: tensor<4xf8E4M3FNUZ>) -> tensor<4xf8E4M3FNUZ> {
  func.return %a : tensor<4xf8E4M3FNUZ>
}
// CHECK: invalid.mlir:[[# @LINE - 3]]:1: error: 'func.func' op argument 0 of @unsupported_passthrough has element type f8E4M3FNUZ, which shardc does not support
