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
