// RUN: shardc-opt %s -p all-reduce-reassociate --split-input-file | filecheck %s
// RUN: shardc-opt %s -p 'all-reduce-reassociate{reassociate-converted=true}' --split-input-file | filecheck %s --check-prefix=CONV
// RUN: not shardc-opt %s -p 'all-reduce-reassociate{reassociate-converted=3}' 2>&1 | filecheck %s --check-prefix=BADOPT

// BADOPT: error: invalid pass pipeline: invalid pass option value '3': expected bool

// XLA's Simple: add of two all_reduces -> all_reduce of the add.
spmd.mesh @mesh = <["x"=4]>
func.func @simple(%p0: tensor<8xf32>, %p1: tensor<8xf32>) -> tensor<8xf32> attributes {spmd.partitioned, spmd.per_device_io} {
  %ar0 = collective.all_reduce add %p0 on @mesh["x"] : tensor<8xf32>
  %ar1 = collective.all_reduce add %p1 on @mesh["x"] : tensor<8xf32>
  %add = hlo.add %ar0, %ar1 : tensor<8xf32>
  func.return %add : tensor<8xf32>
}
// CHECK-LABEL: func.func @simple
// CHECK-NEXT:    %0 = hlo.add %p0, %p1 : tensor<8xf32>
// CHECK-NEXT:    %add = collective.all_reduce add %0 on @mesh["x"] : tensor<8xf32>
// CHECK-NEXT:    func.return %add

// -----

// XLA's SimpleChain and SimpleTree: one run collapses chains and trees.
spmd.mesh @mesh = <["x"=4]>
func.func @chain_and_tree(%p0: tensor<8xf32>, %p1: tensor<8xf32>, %p2: tensor<8xf32>, %p3: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xi32>) attributes {spmd.partitioned, spmd.per_device_io} {
  %ar0 = collective.all_reduce add %p0 on @mesh["x"] : tensor<8xf32>
  %ar1 = collective.all_reduce add %p1 on @mesh["x"] : tensor<8xf32>
  %ar2 = collective.all_reduce add %p2 on @mesh["x"] : tensor<8xf32>
  %ar3 = collective.all_reduce add %p3 on @mesh["x"] : tensor<8xf32>
  %add0 = hlo.add %ar0, %ar1 : tensor<8xf32>
  %add1 = hlo.add %add0, %ar2 : tensor<8xf32>
  %add2 = hlo.add %add1, %ar3 : tensor<8xf32>
  %i0 = hlo.convert %p0 : (tensor<8xf32>) -> tensor<8xi32>
  %i1 = hlo.convert %p1 : (tensor<8xf32>) -> tensor<8xi32>
  %b0 = collective.all_reduce max %i0 on @mesh["x"] : tensor<8xi32>
  %b1 = collective.all_reduce max %i1 on @mesh["x"] : tensor<8xi32>
  %b2 = collective.all_reduce max %i0 on @mesh["x"] : tensor<8xi32>
  %b3 = collective.all_reduce max %i1 on @mesh["x"] : tensor<8xi32>
  %m0 = hlo.max %b0, %b1 : tensor<8xi32>
  %m1 = hlo.max %b2, %b3 : tensor<8xi32>
  %m2 = hlo.max %m0, %m1 : tensor<8xi32>
  func.return %add2, %m2 : tensor<8xf32>, tensor<8xi32>
}
// CHECK-LABEL: func.func @chain_and_tree
// CHECK:         %[[A0:.*]] = hlo.add %p0, %p1
// CHECK-NEXT:    %[[A1:.*]] = hlo.add %[[A0]], %p2
// CHECK-NEXT:    %[[A2:.*]] = hlo.add %[[A1]], %p3
// CHECK-NEXT:    %add2 = collective.all_reduce add %[[A2]] on @mesh["x"]
// CHECK:         %[[M0:.*]] = hlo.max %i0, %i1
// CHECK:         %[[M1:.*]] = hlo.max %i0, %i1
// CHECK-NEXT:    %[[M2:.*]] = hlo.max %[[M0]], %[[M1]]
// CHECK-NEXT:    %m2 = collective.all_reduce max %[[M2]] on @mesh["x"]
// CHECK-NOT:     collective.all_reduce
// CHECK:         func.return %add2, %m2

// -----

// mul and min with their kinds.
spmd.mesh @mesh = <["x"=4]>
func.func @mul_min(%p0: tensor<8xi32>, %p1: tensor<8xi32>) -> (tensor<8xi32>, tensor<8xi32>) attributes {spmd.partitioned, spmd.per_device_io} {
  %a = collective.all_reduce mul %p0 on @mesh["x"] : tensor<8xi32>
  %b = collective.all_reduce mul %p1 on @mesh["x"] : tensor<8xi32>
  %m = hlo.mul %a, %b : tensor<8xi32>
  %c = collective.all_reduce min %p0 on @mesh["x"] : tensor<8xi32>
  %d = collective.all_reduce min %p1 on @mesh["x"] : tensor<8xi32>
  %n = hlo.min %c, %d : tensor<8xi32>
  func.return %m, %n : tensor<8xi32>, tensor<8xi32>
}
// CHECK-LABEL: func.func @mul_min
// CHECK-NEXT:    %0 = hlo.mul %p0, %p1
// CHECK-NEXT:    %m = collective.all_reduce mul %0 on @mesh["x"]
// CHECK-NEXT:    %1 = hlo.min %p0, %p1
// CHECK-NEXT:    %n = collective.all_reduce min %1 on @mesh["x"]

// -----

// Left alone: XLA's MismatchOp0 (add and max all_reduces), MismatchOp1 (max all_reduces
// under an add), MismatchReplicaGroups (different axes, axes in another order, explicit
// groups vs mesh axes), different attributes, NotSingleUser, and an elementwise op in
// between (exp does not commute with a sum).
spmd.mesh @mesh = <["a"=2, "b"=2]>
func.func @no_change(%p0: tensor<8xf32>, %p1: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) attributes {spmd.partitioned, spmd.per_device_io} {
  %a0 = collective.all_reduce add %p0 on @mesh["a"] : tensor<8xf32>
  %a1 = collective.all_reduce max %p1 on @mesh["a"] : tensor<8xf32>
  %r0 = hlo.add %a0, %a1 : tensor<8xf32>
  %b0 = collective.all_reduce max %p0 on @mesh["a"] : tensor<8xf32>
  %b1 = collective.all_reduce max %p1 on @mesh["a"] : tensor<8xf32>
  %r1 = hlo.add %b0, %b1 : tensor<8xf32>
  %c0 = collective.all_reduce add %p0 on @mesh["a"] : tensor<8xf32>
  %c1 = collective.all_reduce add %p1 on @mesh["b"] : tensor<8xf32>
  %r2 = hlo.add %c0, %c1 : tensor<8xf32>
  %d0 = collective.all_reduce add %p0 on @mesh["a", "b"] : tensor<8xf32>
  %d1 = collective.all_reduce add %p1 on @mesh["b", "a"] : tensor<8xf32>
  %r3 = hlo.add %d0, %d1 : tensor<8xf32>
  %e0 = collective.all_reduce add %p0 on @mesh["a"] : tensor<8xf32>
  %e1 = collective.all_reduce add %p1 on groups [[0, 2], [1, 3]] : tensor<8xf32>
  %r4 = hlo.add %e0, %e1 : tensor<8xf32>
  %f0 = collective.all_reduce add %p0 on @mesh["a"] {key = "g0"} : tensor<8xf32>
  %f1 = collective.all_reduce add %p1 on @mesh["a"] {key = "g1"} : tensor<8xf32>
  %r5 = hlo.add %f0, %f1 : tensor<8xf32>
  %g0 = collective.all_reduce add %p0 on @mesh["a"] : tensor<8xf32>
  %g1 = collective.all_reduce add %p1 on @mesh["a"] : tensor<8xf32>
  %r6 = hlo.add %g0, %g1 : tensor<8xf32>
  %h0 = collective.all_reduce add %p0 on @mesh["a"] : tensor<8xf32>
  %h1 = collective.all_reduce add %p1 on @mesh["a"] : tensor<8xf32>
  %h2 = hlo.exp %h1 : tensor<8xf32>
  %r7 = hlo.add %h0, %h2 : tensor<8xf32>
  func.return %r0, %r1, %r2, %r3, %r4, %r5, %r6, %g0, %r7 : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
}
// CHECK-LABEL: func.func @no_change
// CHECK-COUNT-16: collective.all_reduce
// CHECK-NOT:     collective.all_reduce
// CHECK:         func.return

// -----

// XLA's DoubleUse: one all_reduce used twice by the add.
spmd.mesh @mesh = <["x"=4]>
func.func @double_use(%p0: tensor<8xf32>) -> tensor<8xf32> attributes {spmd.partitioned, spmd.per_device_io} {
  %ar0 = collective.all_reduce add %p0 on @mesh["x"] : tensor<8xf32>
  %add = hlo.add %ar0, %ar0 : tensor<8xf32>
  %c = hlo.exp %add : tensor<8xf32>
  func.return %c : tensor<8xf32>
}
// CHECK-LABEL: func.func @double_use
// CHECK-NEXT:    %0 = hlo.add %p0, %p0
// CHECK-NEXT:    %add = collective.all_reduce add %0 on @mesh["x"]
// CHECK-NEXT:    %c = hlo.exp %add

// -----

// XLA's ReshapeUse and SliceUse (and a transpose): data movement moves before the new
// all_reduce, each side with its own.
spmd.mesh @mesh = <["x"=4]>
func.func @reshape_slice(%p0: tensor<1x8xf32>, %p1: tensor<8x1xf32>, %q0: tensor<8xf32>, %q1: tensor<8xf32>) -> (tensor<8xf32>, tensor<4xf32>) attributes {spmd.partitioned, spmd.per_device_io} {
  %ar0 = collective.all_reduce add %p0 on @mesh["x"] : tensor<1x8xf32>
  %ar1 = collective.all_reduce add %p1 on @mesh["x"] : tensor<8x1xf32>
  %r0 = hlo.reshape %ar0 : (tensor<1x8xf32>) -> tensor<8xf32>
  %t1 = hlo.transpose %ar1, dims = [1, 0] : (tensor<8x1xf32>) -> tensor<1x8xf32>
  %r1 = hlo.reshape %t1 : (tensor<1x8xf32>) -> tensor<8xf32>
  %add = hlo.add %r0, %r1 : tensor<8xf32>
  %ar2 = collective.all_reduce add %q0 on @mesh["x"] : tensor<8xf32>
  %ar3 = collective.all_reduce add %q1 on @mesh["x"] : tensor<8xf32>
  %s2 = hlo.slice %ar2 [0:4] : (tensor<8xf32>) -> tensor<4xf32>
  %s3 = hlo.slice %ar3 [4:8] : (tensor<8xf32>) -> tensor<4xf32>
  %add2 = hlo.add %s2, %s3 : tensor<4xf32>
  func.return %add, %add2 : tensor<8xf32>, tensor<4xf32>
}
// CHECK-LABEL: func.func @reshape_slice
// CHECK-NEXT:    %0 = hlo.reshape %p0 : (tensor<1x8xf32>) -> tensor<8xf32>
// CHECK-NEXT:    %1 = hlo.transpose %p1, dims = [1, 0]
// CHECK-NEXT:    %2 = hlo.reshape %1 : (tensor<1x8xf32>) -> tensor<8xf32>
// CHECK-NEXT:    %3 = hlo.add %0, %2 : tensor<8xf32>
// CHECK-NEXT:    %add = collective.all_reduce add %3 on @mesh["x"] : tensor<8xf32>
// CHECK-NEXT:    %4 = hlo.slice %q0 [0:4]
// CHECK-NEXT:    %5 = hlo.slice %q1 [4:8]
// CHECK-NEXT:    %6 = hlo.add %4, %5 : tensor<4xf32>
// CHECK-NEXT:    %add2 = collective.all_reduce add %6 on @mesh["x"] : tensor<4xf32>

// -----

// XLA's AllReduceDynamicSlicePattern and ...SameOperand: the same dynamic_slice (at an
// unknown, maybe device-dependent offset) on both sides stays after the new all_reduce.
// XLA's AllReduceDynamicSliceDifferentSlices: an all_reduce of another shape joins only
// when its slice offset is the same on every device (then it moves before).
spmd.mesh @mesh = <["x"=4]>
func.func @dynamic_slice(%p0: tensor<1x8xf32>, %p1: tensor<1x8xf32>, %p2: tensor<1x16xf32>, %p3: tensor<i32>) -> (tensor<1x4xf32>, tensor<1x4xf32>) attributes {spmd.partitioned, spmd.per_device_io} {
  %cst = hlo.constant dense<0> : tensor<i32>
  %ar0 = collective.all_reduce add %p0 on @mesh["x"] : tensor<1x8xf32>
  %ar1 = collective.all_reduce add %p1 on @mesh["x"] : tensor<1x8xf32>
  %ar2 = collective.all_reduce add %p2 on @mesh["x"] : tensor<1x16xf32>
  %dyn0 = hlo.dynamic_slice %ar0 [%cst, %p3] sizes = [1, 4] : (tensor<1x8xf32>, tensor<i32>, tensor<i32>) -> tensor<1x4xf32>
  %dyn1 = hlo.dynamic_slice %ar1 [%cst, %p3] sizes = [1, 4] : (tensor<1x8xf32>, tensor<i32>, tensor<i32>) -> tensor<1x4xf32>
  %dyn2 = hlo.dynamic_slice %ar2 [%cst, %p3] sizes = [1, 4] : (tensor<1x16xf32>, tensor<i32>, tensor<i32>) -> tensor<1x4xf32>
  %add = hlo.add %dyn0, %dyn1 : tensor<1x4xf32>
  %add1 = hlo.add %add, %dyn2 : tensor<1x4xf32>
  %ar3 = collective.all_reduce add %p0 on @mesh["x"] : tensor<1x8xf32>
  %ar4 = collective.all_reduce add %p2 on @mesh["x"] : tensor<1x16xf32>
  %c4 = hlo.constant dense<4> : tensor<i32>
  %dyn3 = hlo.dynamic_slice %ar3 [%cst, %c4] sizes = [1, 4] : (tensor<1x8xf32>, tensor<i32>, tensor<i32>) -> tensor<1x4xf32>
  %dyn4 = hlo.dynamic_slice %ar4 [%cst, %c4] sizes = [1, 4] : (tensor<1x16xf32>, tensor<i32>, tensor<i32>) -> tensor<1x4xf32>
  %add3 = hlo.add %dyn3, %dyn4 : tensor<1x4xf32>
  func.return %add1, %add3 : tensor<1x4xf32>, tensor<1x4xf32>
}
// CHECK-LABEL: func.func @dynamic_slice
// CHECK:         %dyn2 = hlo.dynamic_slice %ar2 [%cst, %p3] sizes = [1, 4]
// CHECK-NEXT:    %[[S:.*]] = hlo.add %p0, %p1 : tensor<1x8xf32>
// CHECK-NEXT:    %[[R:.*]] = collective.all_reduce add %[[S]] on @mesh["x"] : tensor<1x8xf32>
// CHECK-NEXT:    %add = hlo.dynamic_slice %[[R]] [%cst, %p3] sizes = [1, 4]
// CHECK-NEXT:    %add1 = hlo.add %add, %dyn2
// CHECK:         %[[D3:.*]] = hlo.dynamic_slice %p0 [%cst, %c4] sizes = [1, 4]
// CHECK-NEXT:    %[[D4:.*]] = hlo.dynamic_slice %p2 [%cst, %c4] sizes = [1, 4]
// CHECK-NEXT:    %[[S2:.*]] = hlo.add %[[D3]], %[[D4]] : tensor<1x4xf32>
// CHECK-NEXT:    %add3 = collective.all_reduce add %[[S2]] on @mesh["x"] : tensor<1x4xf32>

// -----

// XLA's ChainWithConvert (with reassociate-converted=true): widening converts move
// before the all_reduce, which then reduces f32. Without the option nothing changes.
// Narrowing converts (XLA's AllreduceWithLossyConvert) never move.
spmd.mesh @mesh = <["x"=4]>
func.func @convert(%p0: tensor<8xbf16>, %p1: tensor<8xbf16>, %q0: tensor<8xf32>, %q1: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xbf16>) attributes {spmd.partitioned, spmd.per_device_io} {
  %ar0 = collective.all_reduce add %p0 on @mesh["x"] : tensor<8xbf16>
  %ar1 = collective.all_reduce add %p1 on @mesh["x"] : tensor<8xbf16>
  %c0 = hlo.convert %ar0 : (tensor<8xbf16>) -> tensor<8xf32>
  %c1 = hlo.convert %ar1 : (tensor<8xbf16>) -> tensor<8xf32>
  %add = hlo.add %c0, %c1 : tensor<8xf32>
  %ar2 = collective.all_reduce add %q0 on @mesh["x"] : tensor<8xf32>
  %ar3 = collective.all_reduce add %q1 on @mesh["x"] : tensor<8xf32>
  %d2 = hlo.convert %ar2 : (tensor<8xf32>) -> tensor<8xbf16>
  %d3 = hlo.convert %ar3 : (tensor<8xf32>) -> tensor<8xbf16>
  %add2 = hlo.add %d2, %d3 : tensor<8xbf16>
  func.return %add, %add2 : tensor<8xf32>, tensor<8xbf16>
}
// CHECK-LABEL: func.func @convert
// CHECK-COUNT-4: collective.all_reduce
// CONV-LABEL:  func.func @convert
// CONV-NEXT:     %0 = hlo.convert %p0 : (tensor<8xbf16>) -> tensor<8xf32>
// CONV-NEXT:     %1 = hlo.convert %p1 : (tensor<8xbf16>) -> tensor<8xf32>
// CONV-NEXT:     %2 = hlo.add %0, %1 : tensor<8xf32>
// CONV-NEXT:     %add = collective.all_reduce add %2 on @mesh["x"] : tensor<8xf32>
// CONV-COUNT-2:  collective.all_reduce add %q
