// RUN: shardc-opt %s -p canonicalize --split-input-file | filecheck %s

// The folds of passes/canonicalization_patterns/, each run through xDSL's `canonicalize` pass.

// broadcast of a splat constant is a splat constant of the result type.
func.func @broadcast_of_splat() -> tensor<4x3xf32> {
  %c = hlo.constant dense<2.0> : tensor<3xf32>
  %b = hlo.broadcast %c, dims = [1] : (tensor<3xf32>) -> tensor<4x3xf32>
  func.return %b : tensor<4x3xf32>
}

// CHECK-LABEL: func.func @broadcast_of_splat() -> tensor<4x3xf32> {
// CHECK-NEXT:    %b = hlo.constant dense<2.000000e+00> : tensor<4x3xf32>
// CHECK-NEXT:    func.return %b : tensor<4x3xf32>
// CHECK-NEXT:  }

// -----

// broadcast of a non-splat constant: StableHLO broadcast_in_dim semantics, operand
// dimension i becomes result dimension dims[i].
func.func @broadcast_of_constant() -> (tensor<2x3xi32>, tensor<2x2x3xf32>, tensor<2x3xf32>) {
  %v = hlo.constant dense<[1, 2]> : tensor<2xi32>
  %b = hlo.broadcast %v, dims = [0] : (tensor<2xi32>) -> tensor<2x3xi32>
  %m = hlo.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %n = hlo.broadcast %m, dims = [1, 2] : (tensor<2x3xf32>) -> tensor<2x2x3xf32>
  %o = hlo.constant dense<[[1.0], [2.0]]> : tensor<2x1xf32>
  %p = hlo.broadcast %o, dims = [0, 1] : (tensor<2x1xf32>) -> tensor<2x3xf32>
  func.return %b, %n, %p : tensor<2x3xi32>, tensor<2x2x3xf32>, tensor<2x3xf32>
}

// CHECK-LABEL: func.func @broadcast_of_constant()
// CHECK-NEXT:    %b = hlo.constant dense<{{\[\[}}1, 1, 1], [2, 2, 2]]> : tensor<2x3xi32>
// CHECK-NEXT:    %n = hlo.constant dense<{{\[\[\[}}1.000000e+00, 2.000000e+00, 3.000000e+00], [4.000000e+00, 5.000000e+00, 6.000000e+00]], {{\[\[}}1.000000e+00, 2.000000e+00, 3.000000e+00], [4.000000e+00, 5.000000e+00, 6.000000e+00]]]> : tensor<2x2x3xf32>
// CHECK-NEXT:    %p = hlo.constant dense<{{\[\[}}1.000000e+00, 1.000000e+00, 1.000000e+00], [2.000000e+00, 2.000000e+00, 2.000000e+00]]> : tensor<2x3xf32>
// CHECK-NEXT:    func.return %b, %n, %p : tensor<2x3xi32>, tensor<2x2x3xf32>, tensor<2x3xf32>

// -----

// A broadcast to the operand's own type with dims 0..n-1 is its operand; one that
// changes the shape stays.
func.func @identity_broadcast(%x: tensor<4x3xf32>, %y: tensor<1x3xf32>) -> (tensor<4x3xf32>, tensor<4x3xf32>) {
  %b = hlo.broadcast %x, dims = [0, 1] : (tensor<4x3xf32>) -> tensor<4x3xf32>
  %c = hlo.broadcast %y, dims = [0, 1] : (tensor<1x3xf32>) -> tensor<4x3xf32>
  func.return %b, %c : tensor<4x3xf32>, tensor<4x3xf32>
}

// CHECK-LABEL: func.func @identity_broadcast(
// CHECK-NEXT:    %c = hlo.broadcast %y, dims = [0, 1] : (tensor<1x3xf32>) -> tensor<4x3xf32>
// CHECK-NEXT:    func.return %x, %c : tensor<4x3xf32>, tensor<4x3xf32>

// -----

// transpose of transpose: the identity disappears, anything else is one transpose
// (result dim i of transpose(x, p) is operand dim p[i], so the composition is p1[p2[i]]).
func.func @transpose_of_transpose(%x: tensor<2x3x4xf32>) -> (tensor<2x3x4xf32>, tensor<4x2x3xf32>) {
  %a = hlo.transpose %x, dims = [1, 0, 2] : (tensor<2x3x4xf32>) -> tensor<3x2x4xf32>
  %b = hlo.transpose %a, dims = [1, 0, 2] : (tensor<3x2x4xf32>) -> tensor<2x3x4xf32>
  %d = hlo.transpose %a, dims = [2, 1, 0] : (tensor<3x2x4xf32>) -> tensor<4x2x3xf32>
  func.return %b, %d : tensor<2x3x4xf32>, tensor<4x2x3xf32>
}

// CHECK-LABEL: func.func @transpose_of_transpose(
// CHECK-NEXT:    %d = hlo.transpose %x, dims = [2, 0, 1] : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
// CHECK-NEXT:    func.return %x, %d : tensor<2x3x4xf32>, tensor<4x2x3xf32>

// -----

func.func @transpose_cycle(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %a = hlo.transpose %x, dims = [1, 2, 0] : (tensor<2x3x4xf32>) -> tensor<3x4x2xf32>
  %b = hlo.transpose %a, dims = [1, 2, 0] : (tensor<3x4x2xf32>) -> tensor<4x2x3xf32>
  %c = hlo.transpose %b, dims = [1, 2, 0] : (tensor<4x2x3xf32>) -> tensor<2x3x4xf32>
  func.return %c : tensor<2x3x4xf32>
}

// CHECK-LABEL: func.func @transpose_cycle(
// CHECK-NEXT:    func.return %x : tensor<2x3x4xf32>

// -----

func.func @identity_transpose(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<3x2xf32>) {
  %a = hlo.transpose %x, dims = [0, 1] : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %b = hlo.transpose %x, dims = [1, 0] : (tensor<2x3xf32>) -> tensor<3x2xf32>
  func.return %a, %b : tensor<2x3xf32>, tensor<3x2xf32>
}

// CHECK-LABEL: func.func @identity_transpose(
// CHECK-NEXT:    %b = hlo.transpose %x, dims = [1, 0] : (tensor<2x3xf32>) -> tensor<3x2xf32>
// CHECK-NEXT:    func.return %x, %b : tensor<2x3xf32>, tensor<3x2xf32>

// -----

// A reshape to the same type is its operand; a reshape of a reshape is one reshape.
func.func @reshape_same_type(%x: tensor<2x6xf32>) -> tensor<2x6xf32> {
  %a = hlo.reshape %x : (tensor<2x6xf32>) -> tensor<2x6xf32>
  func.return %a : tensor<2x6xf32>
}

// CHECK-LABEL: func.func @reshape_same_type(
// CHECK-NEXT:    func.return %x : tensor<2x6xf32>

// -----

func.func @reshape_of_reshape(%x: tensor<2x6xf32>) -> (tensor<4x3xf32>, tensor<12xf32>, tensor<2x6xf32>) {
  %b = hlo.reshape %x : (tensor<2x6xf32>) -> tensor<12xf32>
  %c = hlo.reshape %b : (tensor<12xf32>) -> tensor<4x3xf32>
  %d = hlo.reshape %b : (tensor<12xf32>) -> tensor<2x6xf32>
  func.return %c, %b, %d : tensor<4x3xf32>, tensor<12xf32>, tensor<2x6xf32>
}

// CHECK-LABEL: func.func @reshape_of_reshape(
// CHECK-NEXT:    %b = hlo.reshape %x : (tensor<2x6xf32>) -> tensor<12xf32>
// CHECK-NEXT:    %c = hlo.reshape %x : (tensor<2x6xf32>) -> tensor<4x3xf32>
// CHECK-NEXT:    func.return %c, %b, %x : tensor<4x3xf32>, tensor<12xf32>, tensor<2x6xf32>

// -----

// A convert to the operand's own type is its operand; a real conversion stays.
func.func @identity_convert(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xbf16>) {
  %a = hlo.convert %x : (tensor<4xf32>) -> tensor<4xf32>
  %b = hlo.convert %a : (tensor<4xf32>) -> tensor<4xbf16>
  func.return %a, %b : tensor<4xf32>, tensor<4xbf16>
}

// CHECK-LABEL: func.func @identity_convert(
// CHECK-NEXT:    %b = hlo.convert %x : (tensor<4xf32>) -> tensor<4xbf16>
// CHECK-NEXT:    func.return %x, %b : tensor<4xf32>, tensor<4xbf16>

// -----

// A collective over groups of one device returns its operands: every kind, variadic
// ones, several size-1 axes, explicit singleton groups. A permute only when rank 0 sends
// to itself (any shift does; empty pairs give zeros and stay).
spmd.mesh @mesh = <["one"=1, "two"=2, "other"=1]>

func.func @trivial_collectives(%x: tensor<4x8xf32>, %y: tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<8xf32>) {
  %ar = collective.all_reduce add %x on @mesh["one"] : tensor<4x8xf32>
  %a, %b = collective.all_reduce max %x, %y on @mesh["one", "other"] : tensor<4x8xf32>, tensor<8xf32>
  %ag = collective.all_gather %x on @mesh["one"], dim = 1 : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %rs = collective.reduce_scatter add %x on @mesh["other"], dim = 0 : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %aa = collective.all_to_all %x on @mesh["one"], split_dim = 1, concat_dim = 0 : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %ps = collective.permute %x on @mesh["one"], shift = 1 : tensor<4x8xf32>
  %pn = collective.permute %x on @mesh["one"], shift = -1 : tensor<4x8xf32>
  %pp = collective.permute %x on @mesh["one"], pairs = [[0, 0]] : tensor<4x8xf32>
  %gr = collective.all_reduce mul %x on groups [[0], [1]] : tensor<4x8xf32>
  %ga = collective.all_gather %y on groups [[1], [0]], dim = 0 : (tensor<8xf32>) -> tensor<8xf32>
  func.return %ar, %a, %b, %ag, %rs, %aa, %ps, %pn, %pp, %gr, %ga : tensor<4x8xf32>, tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<8xf32>
}

// CHECK-LABEL: func.func @trivial_collectives(
// CHECK-NEXT:    func.return %x, %x, %y, %x, %x, %x, %x, %x, %x, %x, %y : tensor<4x8xf32>, tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<8xf32>
// CHECK-NEXT:  }

// -----

// ... and NOT over an axis of size 2 (or a size-1 axis together with it), nor a permute
// with nothing to receive, nor a _start form (its done would be left without a future).
spmd.mesh @mesh = <["one"=1, "two"=2]>

func.func @real_collectives(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<8x8xf32>, tensor<2x8xf32>, tensor<8x4xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %ar = collective.all_reduce add %x on @mesh["two"] : tensor<4x8xf32>
  %ag = collective.all_gather %x on @mesh["one", "two"], dim = 0 : (tensor<4x8xf32>) -> tensor<8x8xf32>
  %rs = collective.reduce_scatter add %x on @mesh["two"], dim = 0 : (tensor<4x8xf32>) -> tensor<2x8xf32>
  %aa = collective.all_to_all %x on @mesh["two"], split_dim = 1, concat_dim = 0 : (tensor<4x8xf32>) -> tensor<8x4xf32>
  %ps = collective.permute %x on @mesh["two"], shift = 1 : tensor<4x8xf32>
  %pe = collective.permute %x on @mesh["one"], pairs = [] : tensor<4x8xf32>
  %gr = collective.all_reduce add %x on groups [[0, 1]] : tensor<4x8xf32>
  %f = collective.all_reduce_start add %x on @mesh["one"] : tensor<4x8xf32> -> !collective.future<tensor<4x8xf32>>
  %d = collective.done %f : !collective.future<tensor<4x8xf32>> -> tensor<4x8xf32>
  func.return %ar, %ag, %rs, %aa, %ps, %pe, %gr, %d, %x : tensor<4x8xf32>, tensor<8x8xf32>, tensor<2x8xf32>, tensor<8x4xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}

// CHECK-LABEL: func.func @real_collectives(
// CHECK-NEXT:    %ar = collective.all_reduce add %x on @mesh["two"] : tensor<4x8xf32>
// CHECK-NEXT:    %ag = collective.all_gather %x on @mesh["one", "two"], dim = 0 : (tensor<4x8xf32>) -> tensor<8x8xf32>
// CHECK-NEXT:    %rs = collective.reduce_scatter add %x on @mesh["two"], dim = 0 : (tensor<4x8xf32>) -> tensor<2x8xf32>
// CHECK-NEXT:    %aa = collective.all_to_all %x on @mesh["two"], split_dim = 1, concat_dim = 0 : (tensor<4x8xf32>) -> tensor<8x4xf32>
// CHECK-NEXT:    %ps = collective.permute %x on @mesh["two"], shift = 1 : tensor<4x8xf32>
// CHECK-NEXT:    %pe = collective.permute %x on @mesh["one"], pairs = [] : tensor<4x8xf32>
// CHECK-NEXT:    %gr = collective.all_reduce add %x on groups {{\[\[}}0, 1]] : tensor<4x8xf32>
// CHECK-NEXT:    %f = collective.all_reduce_start add %x on @mesh["one"] : tensor<4x8xf32> -> !collective.future<tensor<4x8xf32>>
// CHECK-NEXT:    %d = collective.done %f : !collective.future<tensor<4x8xf32>> -> tensor<4x8xf32>
// CHECK-NEXT:    func.return %ar, %ag, %rs, %aa, %ps, %pe, %gr, %d, %x :

// -----

// Folding keeps special float values.
func.func @broadcast_of_inf() -> tensor<2x2xf32> {
  %c = hlo.constant dense<0xff800000> : tensor<f32>
  %b = hlo.broadcast %c, dims = [] : (tensor<f32>) -> tensor<2x2xf32>
  func.return %b : tensor<2x2xf32>
}

// CHECK-LABEL: func.func @broadcast_of_inf() -> tensor<2x2xf32> {
// CHECK-NEXT:    %b = hlo.constant dense<0xff800000> : tensor<2x2xf32>
