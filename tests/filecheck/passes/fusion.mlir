// RUN: shardc-opt %s -p fusion --split-input-file | filecheck %s

// Loop fusion of an elementwise chain with a broadcast and a splat constant, named after
// what it computes and its root.
func.func @loop(%x: tensor<8x16xf32>, %b: tensor<16xf32>) -> tensor<8x16xf32> {
  %bb = hlo.broadcast %b, dims = [1] : (tensor<16xf32>) -> tensor<8x16xf32>
  %m = hlo.mul %x, %bb : tensor<8x16xf32>
  %c = hlo.constant dense<1.0> : tensor<8x16xf32>
  %s = hlo.add %m, %c : tensor<8x16xf32>
  func.return %s : tensor<8x16xf32>
}
// CHECK-LABEL: func.func @loop
// CHECK-NEXT:    %s = hlo.fusion(%0 = %b, %1 = %x) kind = loop, name = "multiply_add_fusion" : (tensor<16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32> {
// CHECK-NEXT:      %bb = hlo.broadcast %0
// CHECK-NEXT:      %m = hlo.mul %1, %bb
// CHECK-NEXT:      %c = hlo.constant
// CHECK-NEXT:      %s_1 = hlo.add %m, %c
// CHECK-NEXT:      hlo.return %s_1
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %s

// -----

// Input fusion: a reduce with its elementwise producers; output fusion: a dot with its
// epilogue (convert, bias add, tanh). Two fusions of one name get ".1".
func.func @input_output(%x: tensor<8x16xbf16>, %w: tensor<16x32xbf16>, %b: tensor<32xf32>) -> (tensor<8xf32>, tensor<8x32xf32>, tensor<8x32xf32>) {
  %x32 = hlo.convert %x : (tensor<8x16xbf16>) -> tensor<8x16xf32>
  %e = hlo.exp %x32 : tensor<8x16xf32>
  %r = hlo.reduce add %e, dims = [1] : (tensor<8x16xf32>) -> tensor<8xf32>
  %d = hlo.dot %x, %w, contracting_dims = [1] x [0] : (tensor<8x16xbf16>, tensor<16x32xbf16>) -> tensor<8x32xbf16>
  %d32 = hlo.convert %d : (tensor<8x32xbf16>) -> tensor<8x32xf32>
  %bb = hlo.broadcast %b, dims = [1] : (tensor<32xf32>) -> tensor<8x32xf32>
  %y = hlo.add %d32, %bb : tensor<8x32xf32>
  %t = hlo.tanh %y : tensor<8x32xf32>
  %d2 = hlo.dot %x, %w, contracting_dims = [1] x [0] : (tensor<8x16xbf16>, tensor<16x32xbf16>) -> tensor<8x32xbf16>
  %e2 = hlo.convert %d2 : (tensor<8x32xbf16>) -> tensor<8x32xf32>
  %t2 = hlo.tanh %e2 : tensor<8x32xf32>
  func.return %r, %t, %t2 : tensor<8xf32>, tensor<8x32xf32>, tensor<8x32xf32>
}
// CHECK-LABEL: func.func @input_output
// CHECK-NEXT:    %r = hlo.fusion(%0 = %x) kind = input, name = "reduce_fusion" : (tensor<8x16xbf16>) -> tensor<8xf32> {
// CHECK-NEXT:      %x32 = hlo.convert %0
// CHECK-NEXT:      %e = hlo.exp %x32
// CHECK-NEXT:      %r_1 = hlo.reduce add %e, dims = [1]
// CHECK-NEXT:      hlo.return %r_1
// CHECK-NEXT:    }
// CHECK-NEXT:    %t = hlo.fusion(%0 = %x, %1 = %w, %2 = %b) kind = output, name = "dot_tanh_fusion" : (tensor<8x16xbf16>, tensor<16x32xbf16>, tensor<32xf32>) -> tensor<8x32xf32> {
// CHECK-NEXT:      %d = hlo.dot %0, %1
// CHECK-NEXT:      %d32 = hlo.convert %d
// CHECK-NEXT:      %bb = hlo.broadcast %2
// CHECK-NEXT:      %y = hlo.add %d32, %bb
// CHECK-NEXT:      %t_1 = hlo.tanh %y
// CHECK-NEXT:      hlo.return %t_1
// CHECK-NEXT:    }
// CHECK-NEXT:    %t2 = hlo.fusion({{.*}}) kind = output, name = "dot_tanh_fusion.1"
// CHECK:         func.return %r, %t, %t2

// -----

// A cheap producer with several users (exp of a convert) is duplicated into each fusion;
// an expensive one (the dot) is not: its consumers join it as a multi-output fusion
// instead (its result, read by nobody else, is no output of it).
func.func @multi_user(%x: tensor<8x16xbf16>, %w: tensor<16x16xbf16>) -> (tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xbf16>, tensor<8x16xbf16>) {
  %x32 = hlo.convert %x : (tensor<8x16xbf16>) -> tensor<8x16xf32>
  %e = hlo.exp %x32 : tensor<8x16xf32>
  %a = hlo.tanh %e : tensor<8x16xf32>
  %n = hlo.neg %e : tensor<8x16xf32>
  %d = hlo.dot %x, %w, contracting_dims = [1] x [0] : (tensor<8x16xbf16>, tensor<16x16xbf16>) -> tensor<8x16xbf16>
  %p = hlo.abs %d : tensor<8x16xbf16>
  %q = hlo.neg %d : tensor<8x16xbf16>
  func.return %a, %n, %p, %q : tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xbf16>, tensor<8x16xbf16>
}
// CHECK-LABEL: func.func @multi_user
// CHECK-NEXT:    %a = hlo.fusion(%0 = %x) kind = loop, name = "exponential_tanh_fusion"
// CHECK-NEXT:      hlo.convert
// CHECK-NEXT:      hlo.exp
// CHECK-NEXT:      hlo.tanh
// CHECK-NEXT:      hlo.return
// CHECK-NEXT:    }
// CHECK-NEXT:    %n = hlo.fusion(%0 = %x) kind = loop, name = "exponential_negate_fusion"
// CHECK-NEXT:      hlo.convert
// CHECK-NEXT:      hlo.exp
// CHECK-NEXT:      hlo.neg
// CHECK-NEXT:      hlo.return
// CHECK-NEXT:    }
// CHECK-NEXT:    %p, %q = hlo.fusion(%0 = %x, %1 = %w) kind = output, name = "dot_fusion" : (tensor<8x16xbf16>, tensor<16x16xbf16>) -> (tensor<8x16xbf16>, tensor<8x16xbf16>) {
// CHECK-NEXT:      %d = hlo.dot %0, %1
// CHECK-NEXT:      %p_1 = hlo.abs %d
// CHECK-NEXT:      %q_1 = hlo.neg %d
// CHECK-NEXT:      hlo.return %p_1, %q_1
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %a, %n, %p, %q

// -----

// No fusion across a collective: the add after the all_reduce stays out of the dot's
// fusion; the multiply before it joins the dot (its operand side).
spmd.mesh @mesh = <["x"=2]>
func.func @collective(%x: tensor<8x16xbf16>, %w: tensor<16x16xbf16>) -> tensor<8x16xbf16> attributes {spmd.partitioned} {
  %m = hlo.mul %x, %x : tensor<8x16xbf16>
  %d = hlo.dot %m, %w, contracting_dims = [1] x [0] : (tensor<8x16xbf16>, tensor<16x16xbf16>) -> tensor<8x16xbf16>
  %r = collective.all_reduce add %d on @mesh["x"] : tensor<8x16xbf16>
  %s = hlo.add %r, %x : tensor<8x16xbf16>
  %t = hlo.tanh %s : tensor<8x16xbf16>
  func.return %t : tensor<8x16xbf16>
}
// CHECK-LABEL: func.func @collective
// CHECK-NEXT:    %d = hlo.fusion(%0 = %x, %1 = %w) kind = output, name = "dot_fusion"
// CHECK-NEXT:      %m = hlo.mul %0, %0
// CHECK-NEXT:      %d_1 = hlo.dot %m, %1
// CHECK-NEXT:      hlo.return %d_1
// CHECK-NEXT:    }
// CHECK-NEXT:    %r = collective.all_reduce add %d
// CHECK-NEXT:    %t = hlo.fusion(%0 = %r, %1 = %x) kind = loop, name = "add_tanh_fusion"

// -----

// Micro-batch's chunks (issue 14 item 1.2): a slice joins every fusion that reads it, as a
// copy where others read it too (the fused slice reads only its part of %x, so the copy
// costs nothing), and the dead original goes; the concatenate of the chunks is a loop
// fusion's root that takes the chunks' elementwise ops, so neither the slices nor the
// chunks' results are materialized.
func.func @chunks(%x: tensor<4x16xf32>, %y: tensor<4x16xf32>) -> (tensor<4x16xf32>, tensor<2xf32>) {
  %x0 = hlo.slice %x [0:2, 0:16] : (tensor<4x16xf32>) -> tensor<2x16xf32>
  %x1 = hlo.slice %x [2:4, 0:16] : (tensor<4x16xf32>) -> tensor<2x16xf32>
  %y0 = hlo.slice %y [0:2, 0:16] : (tensor<4x16xf32>) -> tensor<2x16xf32>
  %y1 = hlo.slice %y [2:4, 0:16] : (tensor<4x16xf32>) -> tensor<2x16xf32>
  %r0 = hlo.reduce add %x0, dims = [1] : (tensor<2x16xf32>) -> tensor<2xf32>
  %e0 = hlo.exp %x0 : tensor<2x16xf32>
  %e1 = hlo.exp %x1 : tensor<2x16xf32>
  %a0 = hlo.add %e0, %y0 : tensor<2x16xf32>
  %a1 = hlo.add %e1, %y1 : tensor<2x16xf32>
  %c = hlo.concatenate %a0, %a1, dim = 0 : (tensor<2x16xf32>, tensor<2x16xf32>) -> tensor<4x16xf32>
  func.return %c, %r0 : tensor<4x16xf32>, tensor<2xf32>
}
// CHECK-LABEL: func.func @chunks
// CHECK-NEXT:    %r0 = hlo.fusion(%0 = %x) kind = input, name = "reduce_fusion" : (tensor<4x16xf32>) -> tensor<2xf32> {
// CHECK-NEXT:      %x0 = hlo.slice %0 [0:2, 0:16]
// CHECK-NEXT:      %r0_1 = hlo.reduce add %x0, dims = [1]
// CHECK-NEXT:      hlo.return %r0_1
// CHECK-NEXT:    }
// CHECK-NEXT:    %c = hlo.fusion(%0 = %x, %1 = %y) kind = loop, name = "exponential_concatenate_fusion" : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32> {
// CHECK-NEXT:      %x0 = hlo.slice %0 [0:2, 0:16]
// CHECK-NEXT:      %x1 = hlo.slice %0 [2:4, 0:16]
// CHECK-NEXT:      %y0 = hlo.slice %1 [0:2, 0:16]
// CHECK-NEXT:      %y1 = hlo.slice %1 [2:4, 0:16]
// CHECK-NEXT:      %e0 = hlo.exp %x0
// CHECK-NEXT:      %e1 = hlo.exp %x1
// CHECK-NEXT:      %a0 = hlo.add %e0, %y0
// CHECK-NEXT:      %a1 = hlo.add %e1, %y1
// CHECK-NEXT:      %c_1 = hlo.concatenate %a0, %a1, dim = 0
// CHECK-NEXT:      hlo.return %c_1
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %c, %r0

// -----

// A slice is a fusion's leaf: it does not pull its (cheap, but whole) producer in after
// it, which would compute all of %w for a part of it; %w stays materialized for the slice.
func.func @slice_of_computed(%x: tensor<4x16xbf16>) -> (tensor<2x16xf32>, tensor<4x16xf32>) {
  %w = hlo.convert %x : (tensor<4x16xbf16>) -> tensor<4x16xf32>
  %s = hlo.slice %w [0:2, 0:16] : (tensor<4x16xf32>) -> tensor<2x16xf32>
  %e = hlo.exp %s : tensor<2x16xf32>
  %t = hlo.tanh %w : tensor<4x16xf32>
  func.return %e, %t : tensor<2x16xf32>, tensor<4x16xf32>
}
// CHECK-LABEL: func.func @slice_of_computed
// CHECK-NEXT:    %w = hlo.convert %x
// CHECK-NEXT:    %e = hlo.fusion(%0 = %w) kind = loop, name = "exponential_fusion"
// CHECK-NEXT:      %s = hlo.slice %0
// CHECK-NEXT:      %e_1 = hlo.exp %s
// CHECK-NEXT:      hlo.return %e_1
// CHECK-NEXT:    }
// CHECK-NEXT:    %t = hlo.fusion(%0 = %x) kind = loop, name = "tanh_fusion"

// -----

// Producer fusion into a dot operand (issue 14 item 1.1): the softmax's normalization (its
// only user the P x V dot) is computed in the dot's kernel, which reads the scores and the
// row statistics instead of a materialized P; a transpose of an operand likewise.
func.func @softmax_pv(%s: tensor<4x8x8xbf16>, %m: tensor<4x8xf32>, %z: tensor<4x8xf32>, %v: tensor<4x8x16xbf16>, %w: tensor<16x8xbf16>) -> (tensor<4x8x16xbf16>, tensor<8x8xbf16>) {
  %s32 = hlo.convert %s : (tensor<4x8x8xbf16>) -> tensor<4x8x8xf32>
  %mb = hlo.broadcast %m, dims = [0, 1] : (tensor<4x8xf32>) -> tensor<4x8x8xf32>
  %d = hlo.sub %s32, %mb : tensor<4x8x8xf32>
  %e = hlo.exp %d : tensor<4x8x8xf32>
  %zb = hlo.broadcast %z, dims = [0, 1] : (tensor<4x8xf32>) -> tensor<4x8x8xf32>
  %p32 = hlo.div %e, %zb : tensor<4x8x8xf32>
  %p = hlo.convert %p32 : (tensor<4x8x8xf32>) -> tensor<4x8x8xbf16>
  %ctx = hlo.dot %p, %v, batching_dims = [0] x [0], contracting_dims = [2] x [1] : (tensor<4x8x8xbf16>, tensor<4x8x16xbf16>) -> tensor<4x8x16xbf16>
  %wt = hlo.transpose %w, dims = [1, 0] : (tensor<16x8xbf16>) -> tensor<8x16xbf16>
  %y = hlo.dot %wt, %w, contracting_dims = [1] x [0] : (tensor<8x16xbf16>, tensor<16x8xbf16>) -> tensor<8x8xbf16>
  func.return %ctx, %y : tensor<4x8x16xbf16>, tensor<8x8xbf16>
}
// CHECK-LABEL: func.func @softmax_pv
// CHECK-NEXT:    %ctx = hlo.fusion(%0 = %s, %1 = %m, %2 = %z, %3 = %v) kind = output, name = "dot_fusion"
// CHECK-NEXT:      %s32 = hlo.convert %0
// CHECK-NEXT:      %mb = hlo.broadcast %1
// CHECK-NEXT:      %d = hlo.sub %s32, %mb
// CHECK-NEXT:      %e = hlo.exp %d
// CHECK-NEXT:      %zb = hlo.broadcast %2
// CHECK-NEXT:      %p32 = hlo.div %e, %zb
// CHECK-NEXT:      %p = hlo.convert %p32
// CHECK-NEXT:      %ctx_1 = hlo.dot %p, %3
// CHECK-NEXT:      hlo.return %ctx_1
// CHECK-NEXT:    }
// CHECK-NEXT:    %y = hlo.fusion(%0 = %w) kind = output, name = "dot_fusion.1"
// CHECK-NEXT:      %wt = hlo.transpose %0
// CHECK-NEXT:      %y_1 = hlo.dot %wt, %0
// CHECK-NEXT:      hlo.return %y_1
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %ctx, %y

// -----

// Multi-output fusion (issue 14 item 1.3): a dot's result that is returned and also read
// by a loop fusion: the consumer joins the dot's kernel as a second output, so the dot's
// result is not read back. Not where a collective reads the dot's result (the merged
// kernel would issue it later), nor where the consumer needs a value made after the dot.
// (The bf16 chain negate then tanh joins: level S charges a dot's epilogue once per result
// block, as the lowering runs it, not at every step of K, which made the merged kernel
// look slower than the two.)
spmd.mesh @mesh = <["x"=2]>
func.func @multi_output(%x: tensor<512x4096xbf16>, %w: tensor<4096x1024xbf16>, %b: tensor<512x1024xbf16>) -> (tensor<512x1024xbf16>, tensor<512x1024xbf16>, tensor<512x1024xbf16>, tensor<512x1024xbf16>, tensor<512x1024xbf16>, tensor<512x1024xbf16>) attributes {spmd.partitioned} {
  %y = hlo.dot %x, %w, contracting_dims = [1] x [0] : (tensor<512x4096xbf16>, tensor<4096x1024xbf16>) -> tensor<512x1024xbf16>
  %n = hlo.neg %y : tensor<512x1024xbf16>
  %t = hlo.tanh %n : tensor<512x1024xbf16>
  %y2 = hlo.dot %x, %w, contracting_dims = [1] x [0] : (tensor<512x4096xbf16>, tensor<4096x1024xbf16>) -> tensor<512x1024xbf16>
  %r = collective.all_reduce add %y2 on @mesh["x"] : tensor<512x1024xbf16>
  %n2 = hlo.neg %y2 : tensor<512x1024xbf16>
  %y3 = hlo.dot %x, %w, contracting_dims = [1] x [0] : (tensor<512x4096xbf16>, tensor<4096x1024xbf16>) -> tensor<512x1024xbf16>
  %late = collective.all_reduce add %b on @mesh["x"] : tensor<512x1024xbf16>
  %a3 = hlo.add %y3, %late : tensor<512x1024xbf16>
  func.return %y, %t, %r, %n2, %y3, %a3 : tensor<512x1024xbf16>, tensor<512x1024xbf16>, tensor<512x1024xbf16>, tensor<512x1024xbf16>, tensor<512x1024xbf16>, tensor<512x1024xbf16>
}
// CHECK-LABEL: func.func @multi_output
// CHECK-NEXT:    %y, %t = hlo.fusion(%0 = %x, %1 = %w) kind = output, name = "dot_fusion" : (tensor<512x4096xbf16>, tensor<4096x1024xbf16>) -> (tensor<512x1024xbf16>, tensor<512x1024xbf16>) {
// CHECK-NEXT:      %y_1 = hlo.dot %0, %1
// CHECK-NEXT:      %n = hlo.neg %y_1
// CHECK-NEXT:      %t_1 = hlo.tanh %n
// CHECK-NEXT:      hlo.return %y_1, %t_1
// CHECK-NEXT:    }
// CHECK-NEXT:    %y2 = hlo.dot %x, %w
// CHECK-NEXT:    %r = collective.all_reduce add %y2
// CHECK-NEXT:    %n2 = hlo.neg %y2
// CHECK-NEXT:    %y3 = hlo.dot %x, %w
// CHECK-NEXT:    %late = collective.all_reduce add %b
// CHECK-NEXT:    %a3 = hlo.add %y3, %late
