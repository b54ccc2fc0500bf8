// RUN: SHARDC_ROUNDTRIP
// RUN: SHARDC_GENERIC_ROUNDTRIP

// Every hlo op of DESIGN.md ("Level G"), in its exact custom syntax. The round trip
// (custom -> generic -> custom) must print each op as written here; CHECK-GENERIC pins
// the generic form (operands, properties, types) of a few of them.

func.func @binary(%a: tensor<4xf32>, %b: tensor<4xf32>, %i: tensor<4xi32>, %j: tensor<4xi32>, %p: tensor<4xi1>, %q: tensor<4xi1>) {
  %add = hlo.add %a, %b : tensor<4xf32>
  %sub = hlo.sub %a, %b : tensor<4xf32>
  %mul = hlo.mul %a, %b : tensor<4xf32>
  %div = hlo.div %a, %b : tensor<4xf32>
  %max = hlo.max %a, %b : tensor<4xf32>
  %min = hlo.min %a, %b : tensor<4xf32>
  %pow = hlo.pow %a, %b : tensor<4xf32>
  %and = hlo.and %i, %j : tensor<4xi32>
  %or = hlo.or %p, %q : tensor<4xi1>
  %iadd = hlo.add %i, %j : tensor<4xi32>
  func.return
}

// CHECK:      func.func @binary(%a: tensor<4xf32>, %b: tensor<4xf32>, %i: tensor<4xi32>, %j: tensor<4xi32>, %p: tensor<4xi1>, %q: tensor<4xi1>) {
// CHECK-NEXT:   %add = hlo.add %a, %b : tensor<4xf32>
// CHECK-NEXT:   %sub = hlo.sub %a, %b : tensor<4xf32>
// CHECK-NEXT:   %mul = hlo.mul %a, %b : tensor<4xf32>
// CHECK-NEXT:   %div = hlo.div %a, %b : tensor<4xf32>
// CHECK-NEXT:   %max = hlo.max %a, %b : tensor<4xf32>
// CHECK-NEXT:   %min = hlo.min %a, %b : tensor<4xf32>
// CHECK-NEXT:   %pow = hlo.pow %a, %b : tensor<4xf32>
// CHECK-NEXT:   %and = hlo.and %i, %j : tensor<4xi32>
// CHECK-NEXT:   %or = hlo.or %p, %q : tensor<4xi1>
// CHECK-NEXT:   %iadd = hlo.add %i, %j : tensor<4xi32>
// CHECK-NEXT:   func.return

// CHECK-GENERIC: %add = "hlo.add"(%a, %b) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
// CHECK-GENERIC: %or = "hlo.or"(%p, %q) : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>

// -----

func.func @unary(%a: tensor<2x3xf32>, %h: tensor<8xbf16>, %i: tensor<4xi64>, %p: tensor<4xi1>) {
  %neg = hlo.neg %a : tensor<2x3xf32>
  %exp = hlo.exp %a : tensor<2x3xf32>
  %log = hlo.log %a : tensor<2x3xf32>
  %tanh = hlo.tanh %h : tensor<8xbf16>
  %sqrt = hlo.sqrt %a : tensor<2x3xf32>
  %rsqrt = hlo.rsqrt %a : tensor<2x3xf32>
  %abs = hlo.abs %i : tensor<4xi64>
  %sin = hlo.sin %a : tensor<2x3xf32>
  %cos = hlo.cos %a : tensor<2x3xf32>
  %logistic = hlo.logistic %h : tensor<8xbf16>
  %not = hlo.not %p : tensor<4xi1>
  %ineg = hlo.neg %i : tensor<4xi64>
  func.return
}

// CHECK:      func.func @unary(%a: tensor<2x3xf32>, %h: tensor<8xbf16>, %i: tensor<4xi64>, %p: tensor<4xi1>) {
// CHECK-NEXT:   %neg = hlo.neg %a : tensor<2x3xf32>
// CHECK-NEXT:   %exp = hlo.exp %a : tensor<2x3xf32>
// CHECK-NEXT:   %log = hlo.log %a : tensor<2x3xf32>
// CHECK-NEXT:   %tanh = hlo.tanh %h : tensor<8xbf16>
// CHECK-NEXT:   %sqrt = hlo.sqrt %a : tensor<2x3xf32>
// CHECK-NEXT:   %rsqrt = hlo.rsqrt %a : tensor<2x3xf32>
// CHECK-NEXT:   %abs = hlo.abs %i : tensor<4xi64>
// CHECK-NEXT:   %sin = hlo.sin %a : tensor<2x3xf32>
// CHECK-NEXT:   %cos = hlo.cos %a : tensor<2x3xf32>
// CHECK-NEXT:   %logistic = hlo.logistic %h : tensor<8xbf16>
// CHECK-NEXT:   %not = hlo.not %p : tensor<4xi1>
// CHECK-NEXT:   %ineg = hlo.neg %i : tensor<4xi64>
// CHECK-NEXT:   func.return

// CHECK-GENERIC: %exp = "hlo.exp"(%a) : (tensor<2x3xf32>) -> tensor<2x3xf32>

// -----

func.func @compare_select_convert(%a: tensor<4xf32>, %b: tensor<4xf32>, %i: tensor<2x2xi32>, %j: tensor<2x2xi32>, %s: tensor<i1>) {
  %eq = hlo.compare EQ, %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
  %ne = hlo.compare NE, %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
  %lt = hlo.compare LT, %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
  %le = hlo.compare LE, %i, %j : (tensor<2x2xi32>, tensor<2x2xi32>) -> tensor<2x2xi1>
  %gt = hlo.compare GT, %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
  %ge = hlo.compare GE, %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
  %sel = hlo.select %gt, %a, %b : tensor<4xi1>, tensor<4xf32>
  %sel0 = hlo.select %s, %i, %j : tensor<i1>, tensor<2x2xi32>
  %bf = hlo.convert %a : (tensor<4xf32>) -> tensor<4xbf16>
  %int = hlo.convert %i : (tensor<2x2xi32>) -> tensor<2x2xf64>
  %pred = hlo.convert %a : (tensor<4xf32>) -> tensor<4xi1>
  func.return
}

// CHECK:      func.func @compare_select_convert(%a: tensor<4xf32>, %b: tensor<4xf32>, %i: tensor<2x2xi32>, %j: tensor<2x2xi32>, %s: tensor<i1>) {
// CHECK-NEXT:   %eq = hlo.compare EQ, %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
// CHECK-NEXT:   %ne = hlo.compare NE, %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
// CHECK-NEXT:   %lt = hlo.compare LT, %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
// CHECK-NEXT:   %le = hlo.compare LE, %i, %j : (tensor<2x2xi32>, tensor<2x2xi32>) -> tensor<2x2xi1>
// CHECK-NEXT:   %gt = hlo.compare GT, %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
// CHECK-NEXT:   %ge = hlo.compare GE, %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
// CHECK-NEXT:   %sel = hlo.select %gt, %a, %b : tensor<4xi1>, tensor<4xf32>
// CHECK-NEXT:   %sel0 = hlo.select %s, %i, %j : tensor<i1>, tensor<2x2xi32>
// CHECK-NEXT:   %bf = hlo.convert %a : (tensor<4xf32>) -> tensor<4xbf16>
// CHECK-NEXT:   %int = hlo.convert %i : (tensor<2x2xi32>) -> tensor<2x2xf64>
// CHECK-NEXT:   %pred = hlo.convert %a : (tensor<4xf32>) -> tensor<4xi1>
// CHECK-NEXT:   func.return

// CHECK-GENERIC: %gt = "hlo.compare"(%a, %b) <{comparison_direction = "GT"}> : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
// CHECK-GENERIC: %sel0 = "hlo.select"(%s, %i, %j) : (tensor<i1>, tensor<2x2xi32>, tensor<2x2xi32>) -> tensor<2x2xi32>
// CHECK-GENERIC: %bf = "hlo.convert"(%a) : (tensor<4xf32>) -> tensor<4xbf16>

// -----

func.func @constants() {
  %f32s = hlo.constant dense<1.5> : tensor<4xf32>
  %f32 = hlo.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %bf16s = hlo.constant dense<-2.0> : tensor<2x2xbf16>
  %bf16 = hlo.constant dense<[1.5, -2.0]> : tensor<2xbf16>
  %f16s = hlo.constant dense<0.25> : tensor<f16>
  %f16 = hlo.constant dense<[0.5, 65504.0]> : tensor<2xf16>
  %f64s = hlo.constant dense<0.0> : tensor<3xf64>
  %f64 = hlo.constant dense<[[0.5, 2.0], [3.0, -4.0]]> : tensor<2x2xf64>
  %i32s = hlo.constant dense<7> : tensor<i32>
  %i32 = hlo.constant dense<[1, -2, 3]> : tensor<3xi32>
  %i64s = hlo.constant dense<-1> : tensor<2xi64>
  %i64 = hlo.constant dense<[[1, 2], [3, 9223372036854775807]]> : tensor<2x2xi64>
  %i1s = hlo.constant dense<true> : tensor<3xi1>
  %i1 = hlo.constant dense<[true, false]> : tensor<2xi1>
  func.return
}

// CHECK:      func.func @constants() {
// CHECK-NEXT:   %f32s = hlo.constant dense<1.500000e+00> : tensor<4xf32>
// CHECK-NEXT:   %f32 = hlo.constant dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>
// CHECK-NEXT:   %bf16s = hlo.constant dense<-2.000000e+00> : tensor<2x2xbf16>
// CHECK-NEXT:   %bf16 = hlo.constant dense<[1.500000e+00, -2.000000e+00]> : tensor<2xbf16>
// CHECK-NEXT:   %f16s = hlo.constant dense<2.500000e-01> : tensor<f16>
// CHECK-NEXT:   %f16 = hlo.constant dense<[5.000000e-01, 6.550400e+04]> : tensor<2xf16>
// CHECK-NEXT:   %f64s = hlo.constant dense<0.000000e+00> : tensor<3xf64>
// CHECK-NEXT:   %f64 = hlo.constant dense<{{\[\[}}5.000000e-01, 2.000000e+00], [3.000000e+00, -4.000000e+00]]> : tensor<2x2xf64>
// CHECK-NEXT:   %i32s = hlo.constant dense<7> : tensor<i32>
// CHECK-NEXT:   %i32 = hlo.constant dense<[1, -2, 3]> : tensor<3xi32>
// CHECK-NEXT:   %i64s = hlo.constant dense<-1> : tensor<2xi64>
// CHECK-NEXT:   %i64 = hlo.constant dense<{{\[}}[1, 2], [3, 9223372036854775807]]> : tensor<2x2xi64>
// CHECK-NEXT:   %i1s = hlo.constant dense<true> : tensor<3xi1>
// CHECK-NEXT:   %i1 = hlo.constant dense<[true, false]> : tensor<2xi1>
// CHECK-NEXT:   func.return

// CHECK-GENERIC: %f32 = "hlo.constant"() <{value = dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>}> : () -> tensor<2xf32>
// CHECK-GENERIC: %i1 = "hlo.constant"() <{value = dense<[true, false]> : tensor<2xi1>}> : () -> tensor<2xi1>

// -----

func.func @shapes(%a: tensor<128xf32>, %m: tensor<16x128xf32>, %s: tensor<f32>, %i: tensor<i32>, %j: tensor<i32>, %u: tensor<2x128xf32>, %c: tensor<8x4xf32>, %d: tensor<8x4xf32>, %e: tensor<2x4xf32>) {
  %iota = hlo.iota dim = 0 : tensor<8x4xi32>
  %iota1 = hlo.iota dim = 1 : tensor<8x4xf32>
  %bc = hlo.broadcast %a, dims = [1] : (tensor<128xf32>) -> tensor<16x128xf32>
  %bc0 = hlo.broadcast %s, dims = [] : (tensor<f32>) -> tensor<2x3xf32>
  %bc1 = hlo.broadcast %c, dims = [0, 2] : (tensor<8x4xf32>) -> tensor<8x5x4xf32>
  %rs = hlo.reshape %m : (tensor<16x128xf32>) -> tensor<2048xf32>
  %rs0 = hlo.reshape %s : (tensor<f32>) -> tensor<1x1xf32>
  %tr = hlo.transpose %m, dims = [1, 0] : (tensor<16x128xf32>) -> tensor<128x16xf32>
  %sl = hlo.slice %m [0:8, 0:128:2] : (tensor<16x128xf32>) -> tensor<8x64xf32>
  %sl1 = hlo.slice %m [4:16, 1:128] : (tensor<16x128xf32>) -> tensor<12x127xf32>
  %sl2 = hlo.slice %m [0:16:4, 3:10:3] : (tensor<16x128xf32>) -> tensor<4x3xf32>
  %ds = hlo.dynamic_slice %m [%i, %j] sizes = [2, 128] : (tensor<16x128xf32>, tensor<i32>, tensor<i32>) -> tensor<2x128xf32>
  %dus = hlo.dynamic_update_slice %m, %u [%i, %j] : (tensor<16x128xf32>, tensor<2x128xf32>, tensor<i32>, tensor<i32>) -> tensor<16x128xf32>
  %cat = hlo.concatenate %c, %d, dim = 0 : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<16x4xf32>
  %cat3 = hlo.concatenate %c, %e, %d, dim = 0 : (tensor<8x4xf32>, tensor<2x4xf32>, tensor<8x4xf32>) -> tensor<18x4xf32>
  %cat1 = hlo.concatenate %c, %d, %c, dim = 1 : (tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<8x12xf32>
  func.return
}

// CHECK:      func.func @shapes(
// CHECK-NEXT:   %iota = hlo.iota dim = 0 : tensor<8x4xi32>
// CHECK-NEXT:   %iota1 = hlo.iota dim = 1 : tensor<8x4xf32>
// CHECK-NEXT:   %bc = hlo.broadcast %a, dims = [1] : (tensor<128xf32>) -> tensor<16x128xf32>
// CHECK-NEXT:   %bc0 = hlo.broadcast %s, dims = [] : (tensor<f32>) -> tensor<2x3xf32>
// CHECK-NEXT:   %bc1 = hlo.broadcast %c, dims = [0, 2] : (tensor<8x4xf32>) -> tensor<8x5x4xf32>
// CHECK-NEXT:   %rs = hlo.reshape %m : (tensor<16x128xf32>) -> tensor<2048xf32>
// CHECK-NEXT:   %rs0 = hlo.reshape %s : (tensor<f32>) -> tensor<1x1xf32>
// CHECK-NEXT:   %tr = hlo.transpose %m, dims = [1, 0] : (tensor<16x128xf32>) -> tensor<128x16xf32>
// CHECK-NEXT:   %sl = hlo.slice %m [0:8, 0:128:2] : (tensor<16x128xf32>) -> tensor<8x64xf32>
// CHECK-NEXT:   %sl1 = hlo.slice %m [4:16, 1:128] : (tensor<16x128xf32>) -> tensor<12x127xf32>
// CHECK-NEXT:   %sl2 = hlo.slice %m [0:16:4, 3:10:3] : (tensor<16x128xf32>) -> tensor<4x3xf32>
// CHECK-NEXT:   %ds = hlo.dynamic_slice %m [%i, %j] sizes = [2, 128] : (tensor<16x128xf32>, tensor<i32>, tensor<i32>) -> tensor<2x128xf32>
// CHECK-NEXT:   %dus = hlo.dynamic_update_slice %m, %u [%i, %j] : (tensor<16x128xf32>, tensor<2x128xf32>, tensor<i32>, tensor<i32>) -> tensor<16x128xf32>
// CHECK-NEXT:   %cat = hlo.concatenate %c, %d, dim = 0 : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<16x4xf32>
// CHECK-NEXT:   %cat3 = hlo.concatenate %c, %e, %d, dim = 0 : (tensor<8x4xf32>, tensor<2x4xf32>, tensor<8x4xf32>) -> tensor<18x4xf32>
// CHECK-NEXT:   %cat1 = hlo.concatenate %c, %d, %c, dim = 1 : (tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<8x12xf32>
// CHECK-NEXT:   func.return

// CHECK-GENERIC: %iota = "hlo.iota"() <{iota_dimension = 0 : i64}> : () -> tensor<8x4xi32>
// CHECK-GENERIC: %bc = "hlo.broadcast"(%a) <{broadcast_dimensions = array<i64: 1>}> : (tensor<128xf32>) -> tensor<16x128xf32>
// CHECK-GENERIC: %bc0 = "hlo.broadcast"(%s) <{broadcast_dimensions = array<i64>}> : (tensor<f32>) -> tensor<2x3xf32>
// CHECK-GENERIC: %tr = "hlo.transpose"(%m) <{permutation = array<i64: 1, 0>}> : (tensor<16x128xf32>) -> tensor<128x16xf32>
// CHECK-GENERIC: %sl = "hlo.slice"(%m) <{start_indices = array<i64: 0, 0>, limit_indices = array<i64: 8, 128>, strides = array<i64: 1, 2>}> : (tensor<16x128xf32>) -> tensor<8x64xf32>
// CHECK-GENERIC: %ds = "hlo.dynamic_slice"(%m, %i, %j) <{slice_sizes = array<i64: 2, 128>}> : (tensor<16x128xf32>, tensor<i32>, tensor<i32>) -> tensor<2x128xf32>
// CHECK-GENERIC: %dus = "hlo.dynamic_update_slice"(%m, %u, %i, %j) : (tensor<16x128xf32>, tensor<2x128xf32>, tensor<i32>, tensor<i32>) -> tensor<16x128xf32>
// CHECK-GENERIC: %cat3 = "hlo.concatenate"(%c, %e, %d) <{dimension = 0 : i64}> : (tensor<8x4xf32>, tensor<2x4xf32>, tensor<8x4xf32>) -> tensor<18x4xf32>

// -----

func.func @dot_reduce(%x: tensor<16x32xf32>, %w: tensor<32x128xf32>, %a: tensor<4x16x32xf32>, %b: tensor<4x32x8xf32>, %v: tensor<32xbf16>, %m: tensor<16x128xf32>, %t: tensor<2x3x4xi32>) {
  %mm = hlo.dot %x, %w, contracting_dims = [1] x [0] : (tensor<16x32xf32>, tensor<32x128xf32>) -> tensor<16x128xf32>
  %bmm = hlo.dot %a, %b, batching_dims = [0] x [0], contracting_dims = [2] x [1] : (tensor<4x16x32xf32>, tensor<4x32x8xf32>) -> tensor<4x16x8xf32>
  %outer = hlo.dot %v, %v, contracting_dims = [] x [] : (tensor<32xbf16>, tensor<32xbf16>) -> tensor<32x32xbf16>
  %inner = hlo.dot %v, %v, contracting_dims = [0] x [0] : (tensor<32xbf16>, tensor<32xbf16>) -> tensor<bf16>
  %radd = hlo.reduce add %m, dims = [1] : (tensor<16x128xf32>) -> tensor<16xf32>
  %rmul = hlo.reduce mul %m, dims = [0] : (tensor<16x128xf32>) -> tensor<128xf32>
  %rmax = hlo.reduce max %t, dims = [0, 2] : (tensor<2x3x4xi32>) -> tensor<3xi32>
  %rmin = hlo.reduce min %m, dims = [0, 1] : (tensor<16x128xf32>) -> tensor<f32>
  func.return
}

// CHECK:      func.func @dot_reduce(
// CHECK-NEXT:   %mm = hlo.dot %x, %w, contracting_dims = [1] x [0] : (tensor<16x32xf32>, tensor<32x128xf32>) -> tensor<16x128xf32>
// CHECK-NEXT:   %bmm = hlo.dot %a, %b, batching_dims = [0] x [0], contracting_dims = [2] x [1] : (tensor<4x16x32xf32>, tensor<4x32x8xf32>) -> tensor<4x16x8xf32>
// CHECK-NEXT:   %outer = hlo.dot %v, %v, contracting_dims = [] x [] : (tensor<32xbf16>, tensor<32xbf16>) -> tensor<32x32xbf16>
// CHECK-NEXT:   %inner = hlo.dot %v, %v, contracting_dims = [0] x [0] : (tensor<32xbf16>, tensor<32xbf16>) -> tensor<bf16>
// CHECK-NEXT:   %radd = hlo.reduce add %m, dims = [1] : (tensor<16x128xf32>) -> tensor<16xf32>
// CHECK-NEXT:   %rmul = hlo.reduce mul %m, dims = [0] : (tensor<16x128xf32>) -> tensor<128xf32>
// CHECK-NEXT:   %rmax = hlo.reduce max %t, dims = [0, 2] : (tensor<2x3x4xi32>) -> tensor<3xi32>
// CHECK-NEXT:   %rmin = hlo.reduce min %m, dims = [0, 1] : (tensor<16x128xf32>) -> tensor<f32>
// CHECK-NEXT:   func.return

// CHECK-GENERIC: %bmm = "hlo.dot"(%a, %b) <{lhs_batching_dimensions = array<i64: 0>, rhs_batching_dimensions = array<i64: 0>, lhs_contracting_dimensions = array<i64: 2>, rhs_contracting_dimensions = array<i64: 1>}> : (tensor<4x16x32xf32>, tensor<4x32x8xf32>) -> tensor<4x16x8xf32>
// CHECK-GENERIC: %rmax = "hlo.reduce"(%t) <{kind = "max", dimensions = array<i64: 0, 2>}> : (tensor<2x3x4xi32>) -> tensor<3xi32>

// -----

// The example of DESIGN.md's "Level G" section, as a whole.
spmd.mesh @mesh = <["data"=2, "model"=4]>

func.func @main(%x: tensor<16x32xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"data"}, {}]>},
                %w: tensor<32x128xf32> {spmd.sharding = #spmd.sharding<@mesh, [{}, {"model"}]>})
    -> (tensor<16x128xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"data"}, {"model"}]>}) {
  %0 = hlo.dot %x, %w, contracting_dims = [1] x [0] : (tensor<16x32xf32>, tensor<32x128xf32>) -> tensor<16x128xf32>
  %1 = hlo.constant dense<0.0> : tensor<16x128xf32>
  %2 = hlo.max %0, %1 : tensor<16x128xf32>
  %3 = spmd.constraint %2 <@mesh, [{"data"}, {"model"}]> : tensor<16x128xf32>
  func.return %3 : tensor<16x128xf32>
}

// CHECK:      spmd.mesh @mesh = <["data"=2, "model"=4]>
// CHECK-NEXT: func.func @main(%x: tensor<16x32xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"data"}, {}]>}, %w: tensor<32x128xf32> {spmd.sharding = #spmd.sharding<@mesh, [{}, {"model"}]>}) -> (tensor<16x128xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"data"}, {"model"}]>}) {
// CHECK-NEXT:   %0 = hlo.dot %x, %w, contracting_dims = [1] x [0] : (tensor<16x32xf32>, tensor<32x128xf32>) -> tensor<16x128xf32>
// CHECK-NEXT:   %1 = hlo.constant dense<0.000000e+00> : tensor<16x128xf32>
// CHECK-NEXT:   %2 = hlo.max %0, %1 : tensor<16x128xf32>
// CHECK-NEXT:   %3 = spmd.constraint %2 <@mesh, [{"data"}, {"model"}]> : tensor<16x128xf32>
// CHECK-NEXT:   func.return %3 : tensor<16x128xf32>

// -----

// Discardable attributes print before the `:` (after the literal for constant) and read
// back from there.
func.func @attr_dicts(%x: tensor<4x8xf32>, %w: tensor<8x2xf32>, %i: tensor<i32>, %p: tensor<4x8xi1>) {
  %add = hlo.add %x, %x {tag = 0 : i64} : tensor<4x8xf32>
  %exp = hlo.exp %x {tag = 1 : i64} : tensor<4x8xf32>
  %cmp = hlo.compare NE, %x, %x {tag = 2 : i64} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xi1>
  %sel = hlo.select %p, %x, %x {tag = 3 : i64} : tensor<4x8xi1>, tensor<4x8xf32>
  %cst = hlo.constant dense<1> : tensor<2xi32> {tag = 4 : i64}
  %iota = hlo.iota dim = 0 {tag = 5 : i64} : tensor<4xi32>
  %bc = hlo.broadcast %i, dims = [] {tag = 6 : i64} : (tensor<i32>) -> tensor<2xi32>
  %tr = hlo.transpose %x, dims = [1, 0] {tag = 7 : i64} : (tensor<4x8xf32>) -> tensor<8x4xf32>
  %sl = hlo.slice %x [0:2, 0:8:4] {tag = 8 : i64} : (tensor<4x8xf32>) -> tensor<2x2xf32>
  %ds = hlo.dynamic_slice %x [%i, %i] sizes = [1, 8] {tag = 9 : i64} : (tensor<4x8xf32>, tensor<i32>, tensor<i32>) -> tensor<1x8xf32>
  %dus = hlo.dynamic_update_slice %x, %ds [%i, %i] {tag = 10 : i64} : (tensor<4x8xf32>, tensor<1x8xf32>, tensor<i32>, tensor<i32>) -> tensor<4x8xf32>
  %cat = hlo.concatenate %x, %x, dim = 1 {tag = 11 : i64} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x16xf32>
  %dot = hlo.dot %x, %w, contracting_dims = [1] x [0] {tag = 12 : i64} : (tensor<4x8xf32>, tensor<8x2xf32>) -> tensor<4x2xf32>
  %red = hlo.reduce add %x, dims = [1] {tag = 13 : i64} : (tensor<4x8xf32>) -> tensor<4xf32>
  %cvt = hlo.convert %x {tag = 14 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf16>
  %rs = hlo.reshape %x {tag = 15 : i64} : (tensor<4x8xf32>) -> tensor<32xf32>
  func.return
}

// CHECK:      func.func @attr_dicts(
// CHECK-NEXT:   %add = hlo.add %x, %x {tag = 0 : i64} : tensor<4x8xf32>
// CHECK-NEXT:   %exp = hlo.exp %x {tag = 1 : i64} : tensor<4x8xf32>
// CHECK-NEXT:   %cmp = hlo.compare NE, %x, %x {tag = 2 : i64} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xi1>
// CHECK-NEXT:   %sel = hlo.select %p, %x, %x {tag = 3 : i64} : tensor<4x8xi1>, tensor<4x8xf32>
// CHECK-NEXT:   %cst = hlo.constant dense<1> : tensor<2xi32> {tag = 4 : i64}
// CHECK-NEXT:   %iota = hlo.iota dim = 0 {tag = 5 : i64} : tensor<4xi32>
// CHECK-NEXT:   %bc = hlo.broadcast %i, dims = [] {tag = 6 : i64} : (tensor<i32>) -> tensor<2xi32>
// CHECK-NEXT:   %tr = hlo.transpose %x, dims = [1, 0] {tag = 7 : i64} : (tensor<4x8xf32>) -> tensor<8x4xf32>
// CHECK-NEXT:   %sl = hlo.slice %x [0:2, 0:8:4] {tag = 8 : i64} : (tensor<4x8xf32>) -> tensor<2x2xf32>
// CHECK-NEXT:   %ds = hlo.dynamic_slice %x [%i, %i] sizes = [1, 8] {tag = 9 : i64} : (tensor<4x8xf32>, tensor<i32>, tensor<i32>) -> tensor<1x8xf32>
// CHECK-NEXT:   %dus = hlo.dynamic_update_slice %x, %ds [%i, %i] {tag = 10 : i64} : (tensor<4x8xf32>, tensor<1x8xf32>, tensor<i32>, tensor<i32>) -> tensor<4x8xf32>
// CHECK-NEXT:   %cat = hlo.concatenate %x, %x, dim = 1 {tag = 11 : i64} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x16xf32>
// CHECK-NEXT:   %dot = hlo.dot %x, %w, contracting_dims = [1] x [0] {tag = 12 : i64} : (tensor<4x8xf32>, tensor<8x2xf32>) -> tensor<4x2xf32>
// CHECK-NEXT:   %red = hlo.reduce add %x, dims = [1] {tag = 13 : i64} : (tensor<4x8xf32>) -> tensor<4xf32>
// CHECK-NEXT:   %cvt = hlo.convert %x {tag = 14 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf16>
// CHECK-NEXT:   %rs = hlo.reshape %x {tag = 15 : i64} : (tensor<4x8xf32>) -> tensor<32xf32>

// -----

// Float constants that have no decimal form (inf, nan) are written as their bits in hex,
// as MLIR prints them (either case); they read back as the same values.
func.func @special_floats() {
  %f32 = hlo.constant dense<[0x7f800000, 0x7FC00000, 0xff800000, -0.0]> : tensor<4xf32>
  %bf16 = hlo.constant dense<0xFF80> : tensor<2xbf16>
  %f16 = hlo.constant dense<[0x7c00, 0x7e00]> : tensor<2xf16>
  %f64 = hlo.constant dense<0xfff0000000000000> : tensor<f64>
  %i32 = hlo.constant dense<0x10> : tensor<2xi32>
  func.return
}

// CHECK:      func.func @special_floats() {
// CHECK-NEXT:   %f32 = hlo.constant dense<[0x7f800000, 0x7fc00000, 0xff800000, -0.000000e+00]> : tensor<4xf32>
// CHECK-NEXT:   %bf16 = hlo.constant dense<0xff80> : tensor<2xbf16>
// CHECK-NEXT:   %f16 = hlo.constant dense<[0x7c00, 0x7e00]> : tensor<2xf16>
// CHECK-NEXT:   %f64 = hlo.constant dense<0xfff0000000000000> : tensor<f64>
// CHECK-NEXT:   %i32 = hlo.constant dense<16> : tensor<2xi32>

// CHECK-GENERIC: %f32 = "hlo.constant"() <{value = dense<[0x7f800000, 0x7fc00000, 0xff800000, -0.000000e+00]> : tensor<4xf32>}> : () -> tensor<4xf32>

// -----

// pad (edge, negative edge and interior padding; a scalar padding value) and reverse.
func.func @pad_reverse(%x: tensor<2x3xf32>, %v: tensor<f32>, %i: tensor<4xi32>, %z: tensor<i32>) {
  %pad = hlo.pad %x, %v, low = [0, 1], high = [2, -1], interior = [1, 0] : (tensor<2x3xf32>, tensor<f32>) -> tensor<5x3xf32>
  %ipad = hlo.pad %i, %z, low = [-1], high = [0], interior = [2] : (tensor<4xi32>, tensor<i32>) -> tensor<9xi32>
  %rev = hlo.reverse %x, dims = [1, 0] : tensor<2x3xf32>
  %none = hlo.reverse %i, dims = [] {tag = 1 : i64} : tensor<4xi32>
  func.return
}

// CHECK:      func.func @pad_reverse(%x: tensor<2x3xf32>, %v: tensor<f32>, %i: tensor<4xi32>, %z: tensor<i32>) {
// CHECK-NEXT:   %pad = hlo.pad %x, %v, low = [0, 1], high = [2, -1], interior = [1, 0] : (tensor<2x3xf32>, tensor<f32>) -> tensor<5x3xf32>
// CHECK-NEXT:   %ipad = hlo.pad %i, %z, low = [-1], high = [0], interior = [2] : (tensor<4xi32>, tensor<i32>) -> tensor<9xi32>
// CHECK-NEXT:   %rev = hlo.reverse %x, dims = [1, 0] : tensor<2x3xf32>
// CHECK-NEXT:   %none = hlo.reverse %i, dims = [] {tag = 1 : i64} : tensor<4xi32>

// CHECK-GENERIC: %pad = "hlo.pad"(%x, %v) <{edge_padding_low = array<i64: 0, 1>, edge_padding_high = array<i64: 2, -1>, interior_padding = array<i64: 1, 0>}> : (tensor<2x3xf32>, tensor<f32>) -> tensor<5x3xf32>
// CHECK-GENERIC: %rev = "hlo.reverse"(%x) <{dimensions = array<i64: 1, 0>}> : (tensor<2x3xf32>) -> tensor<2x3xf32>

// The element-wise ops of issue 13.
func.func @elementwise_13(%a: tensor<4xf32>, %b: tensor<4xf32>, %h: tensor<4xbf16>, %i: tensor<4xi32>, %j: tensor<4xi32>, %p: tensor<4xi1>, %s: tensor<f32>) {
  %remainder = hlo.remainder %a, %b : tensor<4xf32>
  %iremainder = hlo.remainder %i, %j : tensor<4xi32>
  %atan2 = hlo.atan2 %a, %b : tensor<4xf32>
  %xor = hlo.xor %i, %j : tensor<4xi32>
  %pxor = hlo.xor %p, %p : tensor<4xi1>
  %shl = hlo.shift_left %i, %j : tensor<4xi32>
  %shrl = hlo.shift_right_logical %i, %j : tensor<4xi32>
  %shra = hlo.shift_right_arithmetic %i, %j : tensor<4xi32>
  %ceil = hlo.ceil %a : tensor<4xf32>
  %floor = hlo.floor %h : tensor<4xbf16>
  %rne = hlo.round_nearest_even %a : tensor<4xf32>
  %rafz = hlo.round_nearest_afz %a : tensor<4xf32>
  %sign = hlo.sign %a : tensor<4xf32>
  %isign = hlo.sign %i : tensor<4xi32>
  %cbrt = hlo.cbrt %a : tensor<4xf32>
  %expm1 = hlo.expm1 %a : tensor<4xf32>
  %log1p = hlo.log1p %a : tensor<4xf32>
  %erf = hlo.erf %h : tensor<4xbf16>
  %erfc = hlo.erfc %a : tensor<4xf32>
  %sinh = hlo.sinh %a : tensor<4xf32>
  %cosh = hlo.cosh %a : tensor<4xf32>
  %tan = hlo.tan %a : tensor<4xf32>
  %popcnt = hlo.popcnt %i : tensor<4xi32>
  %clz = hlo.count_leading_zeros %i : tensor<4xi32>
  %fin = hlo.is_finite %a : (tensor<4xf32>) -> tensor<4xi1>
  %clamp = hlo.clamp %s, %a, %s : (tensor<f32>, tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %clamp2 = hlo.clamp %a, %a, %b : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// CHECK:      func.func @elementwise_13(%a: tensor<4xf32>, %b: tensor<4xf32>, %h: tensor<4xbf16>, %i: tensor<4xi32>, %j: tensor<4xi32>, %p: tensor<4xi1>, %s: tensor<f32>) {
// CHECK-NEXT:   %remainder = hlo.remainder %a, %b : tensor<4xf32>
// CHECK-NEXT:   %iremainder = hlo.remainder %i, %j : tensor<4xi32>
// CHECK-NEXT:   %atan2 = hlo.atan2 %a, %b : tensor<4xf32>
// CHECK-NEXT:   %xor = hlo.xor %i, %j : tensor<4xi32>
// CHECK-NEXT:   %pxor = hlo.xor %p, %p : tensor<4xi1>
// CHECK-NEXT:   %shl = hlo.shift_left %i, %j : tensor<4xi32>
// CHECK-NEXT:   %shrl = hlo.shift_right_logical %i, %j : tensor<4xi32>
// CHECK-NEXT:   %shra = hlo.shift_right_arithmetic %i, %j : tensor<4xi32>
// CHECK-NEXT:   %ceil = hlo.ceil %a : tensor<4xf32>
// CHECK-NEXT:   %floor = hlo.floor %h : tensor<4xbf16>
// CHECK-NEXT:   %rne = hlo.round_nearest_even %a : tensor<4xf32>
// CHECK-NEXT:   %rafz = hlo.round_nearest_afz %a : tensor<4xf32>
// CHECK-NEXT:   %sign = hlo.sign %a : tensor<4xf32>
// CHECK-NEXT:   %isign = hlo.sign %i : tensor<4xi32>
// CHECK-NEXT:   %cbrt = hlo.cbrt %a : tensor<4xf32>
// CHECK-NEXT:   %expm1 = hlo.expm1 %a : tensor<4xf32>
// CHECK-NEXT:   %log1p = hlo.log1p %a : tensor<4xf32>
// CHECK-NEXT:   %erf = hlo.erf %h : tensor<4xbf16>
// CHECK-NEXT:   %erfc = hlo.erfc %a : tensor<4xf32>
// CHECK-NEXT:   %sinh = hlo.sinh %a : tensor<4xf32>
// CHECK-NEXT:   %cosh = hlo.cosh %a : tensor<4xf32>
// CHECK-NEXT:   %tan = hlo.tan %a : tensor<4xf32>
// CHECK-NEXT:   %popcnt = hlo.popcnt %i : tensor<4xi32>
// CHECK-NEXT:   %clz = hlo.count_leading_zeros %i : tensor<4xi32>
// CHECK-NEXT:   %fin = hlo.is_finite %a : (tensor<4xf32>) -> tensor<4xi1>
// CHECK-NEXT:   %clamp = hlo.clamp %s, %a, %s : (tensor<f32>, tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
// CHECK-NEXT:   %clamp2 = hlo.clamp %a, %a, %b : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT:   func.return

// CHECK-GENERIC: %fin = "hlo.is_finite"(%a) : (tensor<4xf32>) -> tensor<4xi1>
// CHECK-GENERIC: %clamp = "hlo.clamp"(%s, %a, %s) : (tensor<f32>, tensor<4xf32>, tensor<f32>) -> tensor<4xf32>

// sort (several operands, each comparator, stable or not) and top_k.
func.func @sort_top_k(%a: tensor<4x3xf32>, %i: tensor<4x3xi32>, %h: tensor<5xbf16>) {
  %srt, %perm = hlo.sort %a, %i, dim = 0, comparator = LT, stable : (tensor<4x3xf32>, tensor<4x3xi32>) -> (tensor<4x3xf32>, tensor<4x3xi32>)
  %desc = hlo.sort %a, dim = 1, comparator = GT TOTALORDER : (tensor<4x3xf32>) -> tensor<4x3xf32>
  %isrt = hlo.sort %i, dim = 1, comparator = GT, stable {tag = 1 : i64} : (tensor<4x3xi32>) -> tensor<4x3xi32>
  %top, %idx = hlo.top_k %a, k = 2 : tensor<4x3xf32> -> (tensor<4x2xf32>, tensor<4x2xi32>)
  %htop, %hidx = hlo.top_k %h, k = 0 : tensor<5xbf16> -> (tensor<0xbf16>, tensor<0xi32>)
  func.return
}

// CHECK:      func.func @sort_top_k(%a: tensor<4x3xf32>, %i: tensor<4x3xi32>, %h: tensor<5xbf16>) {
// CHECK-NEXT:   %srt, %perm = hlo.sort %a, %i, dim = 0, comparator = LT, stable : (tensor<4x3xf32>, tensor<4x3xi32>) -> (tensor<4x3xf32>, tensor<4x3xi32>)
// CHECK-NEXT:   %desc = hlo.sort %a, dim = 1, comparator = GT TOTALORDER : (tensor<4x3xf32>) -> tensor<4x3xf32>
// CHECK-NEXT:   %isrt = hlo.sort %i, dim = 1, comparator = GT, stable {tag = 1 : i64} : (tensor<4x3xi32>) -> tensor<4x3xi32>
// CHECK-NEXT:   %top, %idx = hlo.top_k %a, k = 2 : tensor<4x3xf32> -> (tensor<4x2xf32>, tensor<4x2xi32>)
// CHECK-NEXT:   %htop, %hidx = hlo.top_k %h, k = 0 : tensor<5xbf16> -> (tensor<0xbf16>, tensor<0xi32>)
// CHECK-NEXT:   func.return

// CHECK-GENERIC: %srt, %perm = "hlo.sort"(%a, %i) <{dimension = 0 : i64, comparator = "LT", is_stable}> : (tensor<4x3xf32>, tensor<4x3xi32>) -> (tensor<4x3xf32>, tensor<4x3xi32>)
// CHECK-GENERIC: %top, %idx = "hlo.top_k"(%a) <{k = 2 : i64}> : (tensor<4x3xf32>) -> (tensor<4x2xf32>, tensor<4x2xi32>)

// CHLO's element-wise ops of issue 13.
func.func @chlo_13(%a: tensor<4xf32>, %h: tensor<4xbf16>) {
  %erfinv = hlo.erf_inv %a : tensor<4xf32>
  %asin = hlo.asin %a : tensor<4xf32>
  %acos = hlo.acos %h : tensor<4xbf16>
  %atan = hlo.atan %a : tensor<4xf32>
  %asinh = hlo.asinh %a : tensor<4xf32>
  %acosh = hlo.acosh %a : tensor<4xf32>
  %atanh = hlo.atanh %a : tensor<4xf32>
  %lgamma = hlo.lgamma %a : tensor<4xf32>
  %digamma = hlo.digamma %h : tensor<4xbf16>
  func.return
}

// CHECK:      func.func @chlo_13(%a: tensor<4xf32>, %h: tensor<4xbf16>) {
// CHECK-NEXT:   %erfinv = hlo.erf_inv %a : tensor<4xf32>
// CHECK-NEXT:   %asin = hlo.asin %a : tensor<4xf32>
// CHECK-NEXT:   %acos = hlo.acos %h : tensor<4xbf16>
// CHECK-NEXT:   %atan = hlo.atan %a : tensor<4xf32>
// CHECK-NEXT:   %asinh = hlo.asinh %a : tensor<4xf32>
// CHECK-NEXT:   %acosh = hlo.acosh %a : tensor<4xf32>
// CHECK-NEXT:   %atanh = hlo.atanh %a : tensor<4xf32>
// CHECK-NEXT:   %lgamma = hlo.lgamma %a : tensor<4xf32>
// CHECK-NEXT:   %digamma = hlo.digamma %h : tensor<4xbf16>
// CHECK-NEXT:   func.return

// CHECK-GENERIC: %erfinv = "hlo.erf_inv"(%a) : (tensor<4xf32>) -> tensor<4xf32>
// -----

// partition_id and replica_id (StableHLO's result is tensor<ui32>; any rank-0 integer here).
func.func @device_ids() -> (tensor<i32>, tensor<i64>) {
  %p = hlo.partition_id : tensor<i32>
  %r = hlo.replica_id {tag = 1 : i64} : tensor<i64>
  func.return %p, %r : tensor<i32>, tensor<i64>
}

// CHECK:      func.func @device_ids() -> (tensor<i32>, tensor<i64>) {
// CHECK-NEXT:   %p = hlo.partition_id : tensor<i32>
// CHECK-NEXT:   %r = hlo.replica_id {tag = 1 : i64} : tensor<i64>

// CHECK-GENERIC: %p = "hlo.partition_id"() : () -> tensor<i32>
// CHECK-GENERIC: %r = "hlo.replica_id"() {tag = 1 : i64} : () -> tensor<i64>

// Element types of issue 13: constants of each, and complex / real / imag / abs of complex /
// bitcast_convert (same width, to a narrower type, to a wider type).
func.func @element_types(%a: tensor<4xf32>, %c: tensor<4xcomplex<f32>>, %u: tensor<4xui8>, %w: tensor<2x2xf32>) {
  %i8 = hlo.constant dense<[-128, 127, 0, -1]> : tensor<4xi8>
  %i16 = hlo.constant dense<[-32768, 32767]> : tensor<2xi16>
  %i4 = hlo.constant dense<[-8, 7]> : tensor<2xi4>
  %i2 = hlo.constant dense<[-2, 1]> : tensor<2xi2>
  %ui8 = hlo.constant dense<[0, 255]> : tensor<2xui8>
  %ui16 = hlo.constant dense<65535> : tensor<2xui16>
  %ui32 = hlo.constant dense<4294967295> : tensor<ui32>
  %ui64 = hlo.constant dense<18446744073709551615> : tensor<ui64>
  %ui4 = hlo.constant dense<[0, 15]> : tensor<2xui4>
  %ui2 = hlo.constant dense<3> : tensor<ui2>
  %e4 = hlo.constant dense<[4.480000e+02, -5.000000e-01]> : tensor<2xf8E4M3FN>
  %e5 = hlo.constant dense<5.734400e+04> : tensor<f8E5M2>
  %c64 = hlo.constant dense<[(1.000000e+00,2.000000e+00), (0.000000e+00,-1.000000e+00)]> : tensor<2xcomplex<f32>>
  %c128 = hlo.constant dense<(1.500000e+00,0.000000e+00)> : tensor<complex<f64>>
  %cplx = hlo.complex %a, %a : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xcomplex<f32>>
  %re = hlo.real %c : (tensor<4xcomplex<f32>>) -> tensor<4xf32>
  %im = hlo.imag %c : (tensor<4xcomplex<f32>>) -> tensor<4xf32>
  %mod = hlo.abs %c : (tensor<4xcomplex<f32>>) -> tensor<4xf32>
  %cexp = hlo.exp %c : tensor<4xcomplex<f32>>
  %ult = hlo.compare LT, %u, %u : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xi1>
  %bits = hlo.bitcast_convert %a : (tensor<4xf32>) -> tensor<4xi32>
  %bytes = hlo.bitcast_convert %a : (tensor<4xf32>) -> tensor<4x4xui8>
  %wide = hlo.bitcast_convert %w : (tensor<2x2xf32>) -> tensor<2xf64>
  func.return
}

// CHECK:      func.func @element_types(%a: tensor<4xf32>, %c: tensor<4xcomplex<f32>>, %u: tensor<4xui8>, %w: tensor<2x2xf32>) {
// CHECK-NEXT:   %i8 = hlo.constant dense<[-128, 127, 0, -1]> : tensor<4xi8>
// CHECK-NEXT:   %i16 = hlo.constant dense<[-32768, 32767]> : tensor<2xi16>
// CHECK-NEXT:   %i4 = hlo.constant dense<[-8, 7]> : tensor<2xi4>
// CHECK-NEXT:   %i2 = hlo.constant dense<[-2, 1]> : tensor<2xi2>
// CHECK-NEXT:   %ui8 = hlo.constant dense<[0, 255]> : tensor<2xui8>
// CHECK-NEXT:   %ui16 = hlo.constant dense<65535> : tensor<2xui16>
// CHECK-NEXT:   %ui32 = hlo.constant dense<4294967295> : tensor<ui32>
// CHECK-NEXT:   %ui64 = hlo.constant dense<18446744073709551615> : tensor<ui64>
// CHECK-NEXT:   %ui4 = hlo.constant dense<[0, 15]> : tensor<2xui4>
// CHECK-NEXT:   %ui2 = hlo.constant dense<3> : tensor<ui2>
// CHECK-NEXT:   %e4 = hlo.constant dense<[4.480000e+02, -5.000000e-01]> : tensor<2xf8E4M3FN>
// CHECK-NEXT:   %e5 = hlo.constant dense<5.734400e+04> : tensor<f8E5M2>
// CHECK-NEXT:   %c64 = hlo.constant dense<[(1.000000e+00,2.000000e+00), (0.000000e+00,-1.000000e+00)]> : tensor<2xcomplex<f32>>
// CHECK-NEXT:   %c128 = hlo.constant dense<(1.500000e+00,0.000000e+00)> : tensor<complex<f64>>
// CHECK-NEXT:   %cplx = hlo.complex %a, %a : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xcomplex<f32>>
// CHECK-NEXT:   %re = hlo.real %c : (tensor<4xcomplex<f32>>) -> tensor<4xf32>
// CHECK-NEXT:   %im = hlo.imag %c : (tensor<4xcomplex<f32>>) -> tensor<4xf32>
// CHECK-NEXT:   %mod = hlo.abs %c : (tensor<4xcomplex<f32>>) -> tensor<4xf32>
// CHECK-NEXT:   %cexp = hlo.exp %c : tensor<4xcomplex<f32>>
// CHECK-NEXT:   %ult = hlo.compare LT, %u, %u : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xi1>
// CHECK-NEXT:   %bits = hlo.bitcast_convert %a : (tensor<4xf32>) -> tensor<4xi32>
// CHECK-NEXT:   %bytes = hlo.bitcast_convert %a : (tensor<4xf32>) -> tensor<4x4xui8>
// CHECK-NEXT:   %wide = hlo.bitcast_convert %w : (tensor<2x2xf32>) -> tensor<2xf64>
// CHECK-NEXT:   func.return

// CHECK-GENERIC: %cplx = "hlo.complex"(%a, %a) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xcomplex<f32>>
// CHECK-GENERIC: %mod = "hlo.abs"(%c) : (tensor<4xcomplex<f32>>) -> tensor<4xf32>
// CHECK-GENERIC: %bytes = "hlo.bitcast_convert"(%a) : (tensor<4xf32>) -> tensor<4x4xui8>

// reduce_window (defaults printed away; strides, dilations, padding) and select_and_scatter.
func.func @windows(%x: tensor<4x6xf32>, %z: tensor<f32>, %g: tensor<2x3xf32>, %i: tensor<5xi32>, %iz: tensor<i32>) {
  %pool = hlo.reduce_window max %x, %z, window = [2, 2], strides = [2, 2] : (tensor<4x6xf32>, tensor<f32>) -> tensor<2x3xf32>
  %cum = hlo.reduce_window add %i, %iz, window = [5], padding = [[4, 0]] : (tensor<5xi32>, tensor<i32>) -> tensor<5xi32>
  %dil = hlo.reduce_window min %x, %z, window = [1, 2], strides = [1, 3], base_dilations = [2, 1], window_dilations = [1, 2], padding = [[1, -1], [0, 2]] {tag = 1 : i64} : (tensor<4x6xf32>, tensor<f32>) -> tensor<7x2xf32>
  %grad = hlo.select_and_scatter %x, %g, %z, select = GE, scatter = add, window = [2, 2], strides = [2, 2] : (tensor<4x6xf32>, tensor<2x3xf32>, tensor<f32>) -> tensor<4x6xf32>
  %last = hlo.select_and_scatter %x, %x, %z, select = GT, scatter = add, window = [3, 1], padding = [[1, 1], [0, 0]] : (tensor<4x6xf32>, tensor<4x6xf32>, tensor<f32>) -> tensor<4x6xf32>
  func.return
}

// CHECK:      func.func @windows(%x: tensor<4x6xf32>, %z: tensor<f32>, %g: tensor<2x3xf32>, %i: tensor<5xi32>, %iz: tensor<i32>) {
// CHECK-NEXT:   %pool = hlo.reduce_window max %x, %z, window = [2, 2], strides = [2, 2] : (tensor<4x6xf32>, tensor<f32>) -> tensor<2x3xf32>
// CHECK-NEXT:   %cum = hlo.reduce_window add %i, %iz, window = [5], padding = [[4, 0]] : (tensor<5xi32>, tensor<i32>) -> tensor<5xi32>
// CHECK-NEXT:   %dil = hlo.reduce_window min %x, %z, window = [1, 2], strides = [1, 3], base_dilations = [2, 1], window_dilations = [1, 2], padding = [[1, -1], [0, 2]] {tag = 1 : i64} : (tensor<4x6xf32>, tensor<f32>) -> tensor<7x2xf32>
// CHECK-NEXT:   %grad = hlo.select_and_scatter %x, %g, %z, select = GE, scatter = add, window = [2, 2], strides = [2, 2] : (tensor<4x6xf32>, tensor<2x3xf32>, tensor<f32>) -> tensor<4x6xf32>
// CHECK-NEXT:   %last = hlo.select_and_scatter %x, %x, %z, select = GT, scatter = add, window = [3, 1], padding = [[1, 1], [0, 0]] : (tensor<4x6xf32>, tensor<4x6xf32>, tensor<f32>) -> tensor<4x6xf32>
// CHECK-NEXT:   func.return

// CHECK-GENERIC: %pool = "hlo.reduce_window"(%x, %z) <{window_dimensions = array<i64: 2, 2>, window_strides = array<i64: 2, 2>, base_dilations = array<i64: 1, 1>, window_dilations = array<i64: 1, 1>, padding_low = array<i64: 0, 0>, padding_high = array<i64: 0, 0>, kind = "max"}> : (tensor<4x6xf32>, tensor<f32>) -> tensor<2x3xf32>
// CHECK-GENERIC: %grad = "hlo.select_and_scatter"(%x, %g, %z) <{window_dimensions = array<i64: 2, 2>, window_strides = array<i64: 2, 2>, base_dilations = array<i64: 1, 1>, window_dilations = array<i64: 1, 1>, padding_low = array<i64: 0, 0>, padding_high = array<i64: 0, 0>, select = "GE", scatter = "add"}> : (tensor<4x6xf32>, tensor<2x3xf32>, tensor<f32>) -> tensor<4x6xf32>

// reduce with a body: several operands reduced together (argmax); the named form as before.
func.func @reduce_body(%v: tensor<4x8xf32>, %i: tensor<4x8xi32>, %v0: tensor<f32>, %i0: tensor<i32>) {
  %r:2 = hlo.reduce(%v init: %v0), (%i init: %i0) across dims = [1] : (tensor<4x8xf32>, tensor<4x8xi32>, tensor<f32>, tensor<i32>) -> (tensor<4xf32>, tensor<4xi32>) reducer(%a: tensor<f32>, %b: tensor<f32>) (%c: tensor<i32>, %d: tensor<i32>) {
    %ge = hlo.compare GE, %a, %b : (tensor<f32>, tensor<f32>) -> tensor<i1>
    %x = hlo.select %ge, %a, %b : tensor<i1>, tensor<f32>
    %y = hlo.select %ge, %c, %d : tensor<i1>, tensor<i32>
    hlo.return %x, %y : tensor<f32>, tensor<i32>
  }
  %s = hlo.reduce(%v init: %v0) across dims = [0, 1] {tag = 1 : i64} : (tensor<4x8xf32>, tensor<f32>) -> tensor<f32> reducer(%p: tensor<f32>, %q: tensor<f32>) {
    %sum = hlo.add %p, %q : tensor<f32>
    hlo.return %sum : tensor<f32>
  }
  func.return
}

// CHECK:      func.func @reduce_body(%v: tensor<4x8xf32>, %i: tensor<4x8xi32>, %v0: tensor<f32>, %i0: tensor<i32>) {
// CHECK-NEXT:   %r, %r_1 = hlo.reduce(%v init: %v0), (%i init: %i0) across dims = [1] : (tensor<4x8xf32>, tensor<4x8xi32>, tensor<f32>, tensor<i32>) -> (tensor<4xf32>, tensor<4xi32>) reducer(%a: tensor<f32>, %b: tensor<f32>) (%c: tensor<i32>, %d: tensor<i32>) {
// CHECK-NEXT:     %ge = hlo.compare GE, %a, %b : (tensor<f32>, tensor<f32>) -> tensor<i1>
// CHECK-NEXT:     %x = hlo.select %ge, %a, %b : tensor<i1>, tensor<f32>
// CHECK-NEXT:     %y = hlo.select %ge, %c, %d : tensor<i1>, tensor<i32>
// CHECK-NEXT:     hlo.return %x, %y : tensor<f32>, tensor<i32>
// CHECK-NEXT:   }
// CHECK-NEXT:   %s = hlo.reduce(%v init: %v0) across dims = [0, 1] {tag = 1 : i64} : (tensor<4x8xf32>, tensor<f32>) -> tensor<f32> reducer(%p: tensor<f32>, %q: tensor<f32>) {
// CHECK-NEXT:     %sum = hlo.add %p, %q : tensor<f32>
// CHECK-NEXT:     hlo.return %sum : tensor<f32>
// CHECK-NEXT:   }
// CHECK-NEXT:   func.return

// CHECK-GENERIC: %r, %r_1 = "hlo.reduce"(%v, %i, %v0, %i0) <{dimensions = array<i64: 1>}> ({
// CHECK-GENERIC-NEXT: ^{{.*}}(%a: tensor<f32>, %c: tensor<i32>, %b: tensor<f32>, %d: tensor<i32>):

// gather and scatter: an embedding lookup, batching dims, sorted/unique flags, each scatter kind.
func.func @gather_scatter(%t: tensor<8x4xf32>, %ids: tensor<3x1xi32>, %rows: tensor<3x4xf32>, %b: tensor<2x5x3xi32>, %bi: tensor<2x6x1xi64>, %bu: tensor<2x6xi32>) {
  %g = hlo.gather %t, %ids, offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], slice_sizes = [1, 4], index_vector_dim = 1 : (tensor<8x4xf32>, tensor<3x1xi32>) -> tensor<3x4xf32>
  %gb = hlo.gather %b, %bi, offset_dims = [2], collapsed_slice_dims = [1], operand_batching_dims = [0], start_indices_batching_dims = [0], start_index_map = [1], slice_sizes = [1, 1, 2], index_vector_dim = 2, indices_are_sorted : (tensor<2x5x3xi32>, tensor<2x6x1xi64>) -> tensor<2x6x2xi32>
  %sa = hlo.scatter add %t, %ids, %rows, update_window_dims = [1], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1 : (tensor<8x4xf32>, tensor<3x1xi32>, tensor<3x4xf32>) -> tensor<8x4xf32>
  %sr = hlo.scatter replace %t, %ids, %rows, update_window_dims = [1], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1, indices_are_sorted, unique_indices {tag = 1 : i64} : (tensor<8x4xf32>, tensor<3x1xi32>, tensor<3x4xf32>) -> tensor<8x4xf32>
  %sb = hlo.scatter max %b, %bi, %bu, update_window_dims = [], inserted_window_dims = [1, 2], input_batching_dims = [0], scatter_indices_batching_dims = [0], scatter_dims_to_operand_dims = [1], index_vector_dim = 2 : (tensor<2x5x3xi32>, tensor<2x6x1xi64>, tensor<2x6xi32>) -> tensor<2x5x3xi32>
  func.return
}

// CHECK:      func.func @gather_scatter(%t: tensor<8x4xf32>, %ids: tensor<3x1xi32>, %rows: tensor<3x4xf32>, %b: tensor<2x5x3xi32>, %bi: tensor<2x6x1xi64>, %bu: tensor<2x6xi32>)
// CHECK-NEXT:   %g = hlo.gather %t, %ids, offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], slice_sizes = [1, 4], index_vector_dim = 1 : (tensor<8x4xf32>, tensor<3x1xi32>) -> tensor<3x4xf32>
// CHECK-NEXT:   %gb = hlo.gather %b, %bi, offset_dims = [2], collapsed_slice_dims = [1], operand_batching_dims = [0], start_indices_batching_dims = [0], start_index_map = [1], slice_sizes = [1, 1, 2], index_vector_dim = 2, indices_are_sorted : (tensor<2x5x3xi32>, tensor<2x6x1xi64>) -> tensor<2x6x2xi32>
// CHECK-NEXT:   %sa = hlo.scatter add %t, %ids, %rows, update_window_dims = [1], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1 : (tensor<8x4xf32>, tensor<3x1xi32>, tensor<3x4xf32>) -> tensor<8x4xf32>
// CHECK-NEXT:   %sr = hlo.scatter replace %t, %ids, %rows, update_window_dims = [1], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1, indices_are_sorted, unique_indices {tag = 1 : i64} : (tensor<8x4xf32>, tensor<3x1xi32>, tensor<3x4xf32>) -> tensor<8x4xf32>
// CHECK-NEXT:   %sb = hlo.scatter max %b, %bi, %bu, update_window_dims = [], inserted_window_dims = [1, 2], input_batching_dims = [0], scatter_indices_batching_dims = [0], scatter_dims_to_operand_dims = [1], index_vector_dim = 2 : (tensor<2x5x3xi32>, tensor<2x6x1xi64>, tensor<2x6xi32>) -> tensor<2x5x3xi32>
// CHECK-NEXT:   func.return

// CHECK-GENERIC: %g = "hlo.gather"(%t, %ids) <{offset_dims = array<i64: 1>, collapsed_slice_dims = array<i64: 0>, start_index_map = array<i64: 0>, slice_sizes = array<i64: 1, 4>, index_vector_dim = 1 : i64, operand_batching_dims = array<i64>, start_indices_batching_dims = array<i64>}> : (tensor<8x4xf32>, tensor<3x1xi32>) -> tensor<3x4xf32>

// convolution: NHWC/HWIO with every window entry, NCHW with defaults left out, 1D
// depthwise (feature groups), 3D, batch groups, an i32 conv.
func.func @convolution(%x: tensor<1x8x8x4xf32>, %w: tensor<3x3x4x6xf32>, %n: tensor<2x4x9xbf16>, %k: tensor<6x4x3xbf16>, %d: tensor<2x9x4xf32>, %dk: tensor<3x1x8xf32>, %v: tensor<1x2x4x4x4xf32>, %vk: tensor<3x2x2x2x2xf32>, %i: tensor<4x5x2xi32>, %ik: tensor<2x3x4xi32>) {
  %0 = hlo.convolution(%x, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [2, 2], pad = [[1, 1], [0, -1]], lhs_dilate = [2, 1], rhs_dilate = [1, 2], reverse = [false, true]} : (tensor<1x8x8x4xf32>, tensor<3x3x4x6xf32>) -> tensor<1x8x2x6xf32>
  %1 = hlo.convolution(%n, %k) dim_numbers = [b, f, 0]x[o, i, 0]->[b, f, 0], window = {} : (tensor<2x4x9xbf16>, tensor<6x4x3xbf16>) -> tensor<2x6x7xbf16>
  %2 = hlo.convolution(%d, %dk) dim_numbers = [b, 0, f]x[0, i, o]->[b, 0, f], window = {pad = [[1, 1]]}, feature_group_count = 4 : (tensor<2x9x4xf32>, tensor<3x1x8xf32>) -> tensor<2x9x8xf32>
  %3 = hlo.convolution(%v, %vk) dim_numbers = [b, f, 0, 1, 2]x[o, i, 0, 1, 2]->[b, f, 0, 1, 2], window = {stride = [1, 2, 2]} : (tensor<1x2x4x4x4xf32>, tensor<3x2x2x2x2xf32>) -> tensor<1x3x3x2x2xf32>
  %4 = hlo.convolution(%i, %ik) dim_numbers = [b, 0, f]x[i, 0, o]->[b, 0, f], window = {}, batch_group_count = 2 {tag = 1 : i64} : (tensor<4x5x2xi32>, tensor<2x3x4xi32>) -> tensor<2x3x4xi32>
  func.return
}

// CHECK:      func.func @convolution(
// CHECK-NEXT:   %0 = hlo.convolution(%x, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [2, 2], pad = [[1, 1], [0, -1]], lhs_dilate = [2, 1], rhs_dilate = [1, 2], reverse = [false, true]} : (tensor<1x8x8x4xf32>, tensor<3x3x4x6xf32>) -> tensor<1x8x2x6xf32>
// CHECK-NEXT:   %1 = hlo.convolution(%n, %k) dim_numbers = [b, f, 0]x[o, i, 0]->[b, f, 0], window = {} : (tensor<2x4x9xbf16>, tensor<6x4x3xbf16>) -> tensor<2x6x7xbf16>
// CHECK-NEXT:   %2 = hlo.convolution(%d, %dk) dim_numbers = [b, 0, f]x[0, i, o]->[b, 0, f], window = {pad = [[1, 1]]}, feature_group_count = 4 : (tensor<2x9x4xf32>, tensor<3x1x8xf32>) -> tensor<2x9x8xf32>
// CHECK-NEXT:   %3 = hlo.convolution(%v, %vk) dim_numbers = [b, f, 0, 1, 2]x[o, i, 0, 1, 2]->[b, f, 0, 1, 2], window = {stride = [1, 2, 2]} : (tensor<1x2x4x4x4xf32>, tensor<3x2x2x2x2xf32>) -> tensor<1x3x3x2x2xf32>
// CHECK-NEXT:   %4 = hlo.convolution(%i, %ik) dim_numbers = [b, 0, f]x[i, 0, o]->[b, 0, f], window = {}, batch_group_count = 2 {tag = 1 : i64} : (tensor<4x5x2xi32>, tensor<2x3x4xi32>) -> tensor<2x3x4xi32>
// CHECK-NEXT:   func.return

// CHECK-GENERIC: %2 = "hlo.convolution"(%d, %dk) <{lhs_dims = array<i64: 0, 2, 1>, rhs_dims = array<i64: 1, 2, 0>, out_dims = array<i64: 0, 2, 1>, window_strides = array<i64: 1>, padding = array<i64: 1, 1>, lhs_dilation = array<i64: 1>, rhs_dilation = array<i64: 1>, window_reversal = array<i64: 0>, feature_group_count = 4 : i64, batch_group_count = 1 : i64}> : (tensor<2x9x4xf32>, tensor<3x1x8xf32>) -> tensor<2x9x8xf32>

// while (carried values named in the header, both regions) and case.
func.func @control(%a: tensor<4xf32>, %k: tensor<i32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %c0 = hlo.constant dense<0> : tensor<i32>
  %r:2 = hlo.while(%i = %c0, %x = %a) : tensor<i32>, tensor<4xf32> attributes {tag = 1 : i64} cond {
    %n = hlo.constant dense<3> : tensor<i32>
    %p = hlo.compare LT, %i, %n : (tensor<i32>, tensor<i32>) -> tensor<i1>
    hlo.return %p : tensor<i1>
  } do {
    %one = hlo.constant dense<1> : tensor<i32>
    %i1 = hlo.add %i, %one : tensor<i32>
    %x1 = hlo.tanh %x : tensor<4xf32>
    hlo.return %i1, %x1 : tensor<i32>, tensor<4xf32>
  }
  %c = hlo.case %k -> (tensor<4xf32>) {
    hlo.return %a : tensor<4xf32>
  }, {
    %neg = hlo.neg %r#1 : tensor<4xf32>
    hlo.return %neg : tensor<4xf32>
  }
  func.return %r#1, %c : tensor<4xf32>, tensor<4xf32>
}

// CHECK:      func.func @control(%a: tensor<4xf32>, %k: tensor<i32>) -> (tensor<4xf32>, tensor<4xf32>) {
// CHECK-NEXT:   %c0 = hlo.constant dense<0> : tensor<i32>
// CHECK-NEXT:   %r, %r_1 = hlo.while(%i = %c0, %x = %a) : tensor<i32>, tensor<4xf32> attributes {tag = 1 : i64} cond {
// CHECK-NEXT:     %n = hlo.constant dense<3> : tensor<i32>
// CHECK-NEXT:     %p = hlo.compare LT, %i, %n : (tensor<i32>, tensor<i32>) -> tensor<i1>
// CHECK-NEXT:     hlo.return %p : tensor<i1>
// CHECK-NEXT:   } do {
// CHECK-NEXT:     %one = hlo.constant dense<1> : tensor<i32>
// CHECK-NEXT:     %i1 = hlo.add %i, %one : tensor<i32>
// CHECK-NEXT:     %x1 = hlo.tanh %x : tensor<4xf32>
// CHECK-NEXT:     hlo.return %i1, %x1 : tensor<i32>, tensor<4xf32>
// CHECK-NEXT:   }
// CHECK-NEXT:   %c = hlo.case %k -> (tensor<4xf32>) {
// CHECK-NEXT:     hlo.return %a : tensor<4xf32>
// CHECK-NEXT:   }, {
// CHECK-NEXT:     %neg = hlo.neg %r_1 : tensor<4xf32>
// CHECK-NEXT:     hlo.return %neg : tensor<4xf32>
// CHECK-NEXT:   }
// CHECK-NEXT:   func.return %r_1, %c : tensor<4xf32>, tensor<4xf32>

// CHECK-GENERIC: %r, %r_1 = "hlo.while"(%c0, %a) ({
// CHECK-GENERIC-NEXT: ^bb{{.*}}(%i: tensor<i32>, %x: tensor<4xf32>):
// CHECK-GENERIC: }, {
// CHECK-GENERIC: }) {tag = 1 : i64} : (tensor<i32>, tensor<4xf32>) -> (tensor<i32>, tensor<4xf32>)
// CHECK-GENERIC: %c = "hlo.case"(%k) ({
// CHECK-GENERIC: }, {
// CHECK-GENERIC: }) : (tensor<i32>) -> tensor<4xf32>

// rng_bit_generator: each algorithm, a Philox state of 3, narrow, signed and 64-bit bits.
func.func @rng_bit_generator(%s: tensor<2xui64>, %p: tensor<3xui64>) {
  %s1, %b1 = hlo.rng_bit_generator %s, algorithm = THREE_FRY : (tensor<2xui64>) -> (tensor<2xui64>, tensor<8x16xui32>)
  %s2, %b2 = hlo.rng_bit_generator %s, algorithm = PHILOX : (tensor<2xui64>) -> (tensor<2xui64>, tensor<4xui64>)
  %s3, %b3 = hlo.rng_bit_generator %p, algorithm = DEFAULT {tag = 1 : i64} : (tensor<3xui64>) -> (tensor<3xui64>, tensor<ui8>)
  %s4, %b4 = hlo.rng_bit_generator %s, algorithm = PHILOX : (tensor<2xui64>) -> (tensor<2xui64>, tensor<2x3xi16>)
  func.return
}

// CHECK:      func.func @rng_bit_generator(%s: tensor<2xui64>, %p: tensor<3xui64>) {
// CHECK-NEXT:   %s1, %b1 = hlo.rng_bit_generator %s, algorithm = THREE_FRY : (tensor<2xui64>) -> (tensor<2xui64>, tensor<8x16xui32>)
// CHECK-NEXT:   %s2, %b2 = hlo.rng_bit_generator %s, algorithm = PHILOX : (tensor<2xui64>) -> (tensor<2xui64>, tensor<4xui64>)
// CHECK-NEXT:   %s3, %b3 = hlo.rng_bit_generator %p, algorithm = DEFAULT {tag = 1 : i64} : (tensor<3xui64>) -> (tensor<3xui64>, tensor<ui8>)
// CHECK-NEXT:   %s4, %b4 = hlo.rng_bit_generator %s, algorithm = PHILOX : (tensor<2xui64>) -> (tensor<2xui64>, tensor<2x3xi16>)
// CHECK-NEXT:   func.return

// CHECK-GENERIC: %s1, %b1 = "hlo.rng_bit_generator"(%s) <{rng_algorithm = "THREE_FRY"}> : (tensor<2xui64>) -> (tensor<2xui64>, tensor<8x16xui32>)

// fusion (issue 14): a loop fusion and an output fusion with two results.
func.func @fusion(%x: tensor<4x8xbf16>, %w: tensor<8x16xbf16>, %b: tensor<16xf32>) -> (tensor<4x16xbf16>, tensor<4x16xf32>) {
  %f:2 = hlo.fusion(%px = %x, %pw = %w, %pb = %b) kind = output, name = "dot_add_fusion" : (tensor<4x8xbf16>, tensor<8x16xbf16>, tensor<16xf32>) -> (tensor<4x16xbf16>, tensor<4x16xf32>) {
    %d = hlo.dot %px, %pw, contracting_dims = [1] x [0] : (tensor<4x8xbf16>, tensor<8x16xbf16>) -> tensor<4x16xbf16>
    %c = hlo.convert %d : (tensor<4x16xbf16>) -> tensor<4x16xf32>
    %bb = hlo.broadcast %pb, dims = [1] : (tensor<16xf32>) -> tensor<4x16xf32>
    %s = hlo.add %c, %bb : tensor<4x16xf32>
    hlo.return %d, %s : tensor<4x16xbf16>, tensor<4x16xf32>
  }
  %g = hlo.fusion(%p = %f#1) kind = loop, name = "tanh_fusion.1" : (tensor<4x16xf32>) -> tensor<4x16xf32> {
    %t = hlo.tanh %p : tensor<4x16xf32>
    hlo.return %t : tensor<4x16xf32>
  }
  func.return %f#0, %g : tensor<4x16xbf16>, tensor<4x16xf32>
}

// CHECK:      func.func @fusion(%x: tensor<4x8xbf16>, %w: tensor<8x16xbf16>, %b: tensor<16xf32>) -> (tensor<4x16xbf16>, tensor<4x16xf32>) {
// CHECK-NEXT:   %f, %f_1 = hlo.fusion(%px = %x, %pw = %w, %pb = %b) kind = output, name = "dot_add_fusion" : (tensor<4x8xbf16>, tensor<8x16xbf16>, tensor<16xf32>) -> (tensor<4x16xbf16>, tensor<4x16xf32>) {
// CHECK-NEXT:     %d = hlo.dot %px, %pw, contracting_dims = [1] x [0] : (tensor<4x8xbf16>, tensor<8x16xbf16>) -> tensor<4x16xbf16>
// CHECK-NEXT:     %c = hlo.convert %d : (tensor<4x16xbf16>) -> tensor<4x16xf32>
// CHECK-NEXT:     %bb = hlo.broadcast %pb, dims = [1] : (tensor<16xf32>) -> tensor<4x16xf32>
// CHECK-NEXT:     %s = hlo.add %c, %bb : tensor<4x16xf32>
// CHECK-NEXT:     hlo.return %d, %s : tensor<4x16xbf16>, tensor<4x16xf32>
// CHECK-NEXT:   }
// CHECK-NEXT:   %g = hlo.fusion(%p = %f_1) kind = loop, name = "tanh_fusion.1" : (tensor<4x16xf32>) -> tensor<4x16xf32> {
// CHECK-NEXT:     %t = hlo.tanh %p : tensor<4x16xf32>
// CHECK-NEXT:     hlo.return %t : tensor<4x16xf32>
// CHECK-NEXT:   }
// CHECK-NEXT:   func.return %f, %g : tensor<4x16xbf16>, tensor<4x16xf32>

// CHECK-GENERIC: %f, %f_1 = "hlo.fusion"(%x, %w, %b) <{kind = "output", fusion_name = "dot_add_fusion"}> ({
// CHECK-GENERIC-NEXT: ^bb{{.*}}(%px: tensor<4x8xbf16>, %pw: tensor<8x16xbf16>, %pb: tensor<16xf32>):
// CHECK-GENERIC: }) : (tensor<4x8xbf16>, tensor<8x16xbf16>, tensor<16xf32>) -> (tensor<4x16xbf16>, tensor<4x16xf32>)
