// RUN: shardc-opt %s -p 'collective-matmul{bidirectional=false}' --split-input-file | filecheck %s --check-prefix=UNI
// RUN: shardc-opt %s -p collective-matmul --split-input-file | filecheck %s --check-prefix=BIDI
// RUN: shardc-opt %s -p 'collective-matmul{min-bytes=100000}' --split-input-file | filecheck %s --check-prefix=BIG
// RUN: shardc-opt %s -p 'collective-matmul{f32-accumulation=true}' --split-input-file | filecheck %s --check-prefix=F32ACC
// RUN: not shardc-opt %s -p 'collective-matmul{min-bytes=-5}' 2>&1 | filecheck %s --check-prefix=NEG
// RUN: not shardc-opt %s -p 'collective-matmul{bidirectional=2}' 2>&1 | filecheck %s --check-prefix=TYPE

// NEG-NOT: Traceback
// NEG:     error: invalid pass pipeline: pass 'collective-matmul': option 'min-bytes' must be at least 0, got -5
// TYPE:    error: invalid pass pipeline: invalid pass option value '2': expected bool

// all_gather of the lhs rows + dot (FSDP / sequence-parallel style), 4 devices.
// Unidirectional: device r computes with its own block first, while passing it to r + 1;
// after s permutes it holds block (r - s) mod 4, which goes to rows ((r - s) mod 4) * 4.
spmd.mesh @mesh = <["x"=4]>
func.func @gather_lhs(%x: tensor<4x32xf32>, %w: tensor<32x8xf32>) -> tensor<16x8xf32> attributes {spmd.partitioned, spmd.per_device_io} {
  %g = collective.all_gather %x on @mesh["x"], dim = 0 : (tensor<4x32xf32>) -> tensor<16x32xf32>
  %y = hlo.dot %g, %w, contracting_dims = [1] x [0] : (tensor<16x32xf32>, tensor<32x8xf32>) -> tensor<16x8xf32>
  func.return %y : tensor<16x8xf32>
}
// UNI-LABEL: func.func @gather_lhs
// UNI-NEXT:    %[[BUF:.*]] = hlo.constant dense<0.000000e+00> : tensor<16x8xf32>
// UNI-NEXT:    %[[X1:.*]] = collective.permute %x on @mesh["x"], shift = 1 : tensor<4x32xf32>
// UNI-NEXT:    %[[D0:.*]] = hlo.dot %x, %w, contracting_dims = [1] x [0] : (tensor<4x32xf32>, tensor<32x8xf32>) -> tensor<4x8xf32>
// UNI-NEXT:    %[[R:.*]] = spmd.axis_index @mesh["x"] : tensor<i32>
// UNI-NEXT:    %[[C4:.*]] = hlo.constant dense<4> : tensor<i32>
// UNI-NEXT:    %[[OFF0:.*]] = hlo.mul %[[R]], %[[C4]] : tensor<i32>
// UNI-NEXT:    %[[ZERO:.*]] = hlo.constant dense<0> : tensor<i32>
// UNI-NEXT:    %[[B0:.*]] = hlo.dynamic_update_slice %[[BUF]], %[[D0]] [%[[OFF0]], %[[ZERO]]]
// UNI-NEXT:    %[[X2:.*]] = collective.permute %[[X1]] on @mesh["x"], shift = 1
// UNI-NEXT:    %[[D1:.*]] = hlo.dot %[[X1]], %w
// UNI-NEXT:    %[[C3:.*]] = hlo.constant dense<3> : tensor<i32>
// UNI-NEXT:    %[[T:.*]] = hlo.add %[[R]], %[[C3]] : tensor<i32>
// UNI-NEXT:    %[[WRAPS:.*]] = hlo.compare GE, %[[T]], %[[C4]]
// UNI-NEXT:    %[[TW:.*]] = hlo.sub %[[T]], %[[C4]]
// UNI-NEXT:    %[[IDX:.*]] = hlo.select %[[WRAPS]], %[[TW]], %[[T]]
// UNI-NEXT:    %[[OFF1:.*]] = hlo.mul %[[IDX]], %[[C4]]
// UNI-NEXT:    %[[B1:.*]] = hlo.dynamic_update_slice %[[B0]], %[[D1]] [%[[OFF1]], %[[ZERO]]]
// UNI-NEXT:    %[[X3:.*]] = collective.permute %[[X2]] on @mesh["x"], shift = 1
// UNI-NEXT:    %[[D2:.*]] = hlo.dot %[[X2]], %w
// UNI:         hlo.dynamic_update_slice %[[B1]], %[[D2]]
// UNI:         %[[D3:.*]] = hlo.dot %[[X3]], %w
// UNI:         %y = hlo.dynamic_update_slice %{{.*}}, %[[D3]]
// UNI-NEXT:    func.return %y
// Bidirectional (default for 4 devices): blocks travel both ways, 2 + 1 permutes.
// BIDI-LABEL: func.func @gather_lhs
// BIDI-NEXT:    hlo.constant dense<0.000000e+00> : tensor<16x8xf32>
// BIDI-NEXT:    %[[CW1:.*]] = collective.permute %x on @mesh["x"], shift = 1
// BIDI-NEXT:    %[[CCW1:.*]] = collective.permute %x on @mesh["x"], shift = -1
// BIDI-NEXT:    hlo.dot %x, %w
// BIDI:         %[[CW2:.*]] = collective.permute %[[CW1]] on @mesh["x"], shift = 1
// BIDI-NEXT:    hlo.dot %[[CW1]], %w
// BIDI:         hlo.dot %[[CCW1]], %w
// BIDI:         hlo.dot %[[CW2]], %w
// BIDI-NOT:     collective.permute
// BIDI-NOT:     collective.all_gather
// BIDI:         func.return
// BIG-LABEL:  func.func @gather_lhs
// BIG-NEXT:     collective.all_gather

// -----

// all_gather of the rhs columns, 3 devices: bidirectional by default only for an even
// group, so one ring of 2 permutes; the rhs result dims follow the lhs free dims.
spmd.mesh @mesh = <["a"=2, "y"=3]>
func.func @gather_rhs(%x: tensor<5x16xf32>, %w: tensor<16x2xf32>) -> tensor<5x6xf32> attributes {spmd.partitioned, spmd.per_device_io} {
  %g = collective.all_gather %w on @mesh["y"], dim = 1 : (tensor<16x2xf32>) -> tensor<16x6xf32>
  %y = hlo.dot %x, %g, contracting_dims = [1] x [0] : (tensor<5x16xf32>, tensor<16x6xf32>) -> tensor<5x6xf32>
  func.return %y : tensor<5x6xf32>
}
// BIDI-LABEL: func.func @gather_rhs
// BIDI:         %[[P1:.*]] = collective.permute %w on @mesh["y"], shift = 1 : tensor<16x2xf32>
// BIDI-NEXT:    hlo.dot %x, %w, contracting_dims = [1] x [0] : (tensor<5x16xf32>, tensor<16x2xf32>) -> tensor<5x2xf32>
// BIDI:         %[[P2:.*]] = collective.permute %[[P1]] on @mesh["y"], shift = 1
// BIDI-NEXT:    hlo.dot %x, %[[P1]]
// BIDI:         hlo.dot %x, %[[P2]]
// BIDI-NOT:     collective.permute
// BIDI:         %y = hlo.dynamic_update_slice %{{.*}}, %{{.*}} [%{{.*}}, %{{.*}}] : (tensor<5x6xf32>, tensor<5x2xf32>

// -----

// Gathering a batch dimension: the other operand's batch dimension is sliced to the
// same block.
spmd.mesh @mesh = <["x"=2]>
func.func @gather_batch(%x: tensor<2x4x8xf32>, %w: tensor<4x8x3xf32>) -> tensor<4x4x3xf32> attributes {spmd.partitioned, spmd.per_device_io} {
  %g = collective.all_gather %x on @mesh["x"], dim = 0 : (tensor<2x4x8xf32>) -> tensor<4x4x8xf32>
  %y = hlo.dot %g, %w, batching_dims = [0] x [0], contracting_dims = [2] x [1] : (tensor<4x4x8xf32>, tensor<4x8x3xf32>) -> tensor<4x4x3xf32>
  func.return %y : tensor<4x4x3xf32>
}
// UNI-LABEL: func.func @gather_batch
// UNI:         collective.permute %x on @mesh["x"], shift = 1 : tensor<2x4x8xf32>
// UNI:         %[[WB:.*]] = hlo.dynamic_slice %w [%{{.*}}, %{{.*}}, %{{.*}}] sizes = [2, 8, 3]
// UNI-NEXT:    hlo.dot %x, %[[WB]], batching_dims = [0] x [0], contracting_dims = [2] x [1] : (tensor<2x4x8xf32>, tensor<2x8x3xf32>) -> tensor<2x4x3xf32>

// -----

// dot + reduce_scatter (row-parallel matmul): each step slices the rows of the next
// block, adds the partial sum that arrived and passes it on; 4 devices.
spmd.mesh @mesh = <["x"=4]>
func.func @scatter(%a: tensor<16x32xf32>, %w: tensor<32x8xf32>) -> tensor<4x8xf32> attributes {spmd.partitioned, spmd.per_device_io} {
  %y = hlo.dot %a, %w, contracting_dims = [1] x [0] : (tensor<16x32xf32>, tensor<32x8xf32>) -> tensor<16x8xf32>
  %r = collective.reduce_scatter add %y on @mesh["x"], dim = 0 : (tensor<16x8xf32>) -> tensor<4x8xf32>
  func.return %r : tensor<4x8xf32>
}
// UNI-LABEL: func.func @scatter
// UNI:         %[[A3:.*]] = hlo.dynamic_slice %a [%{{.*}}, %{{.*}}] sizes = [4, 32]
// UNI-NEXT:    %[[P3:.*]] = hlo.dot %[[A3]], %w, contracting_dims = [1] x [0] : (tensor<4x32xf32>, tensor<32x8xf32>) -> tensor<4x8xf32>
// UNI-NEXT:    %[[M1:.*]] = collective.permute %[[P3]] on @mesh["x"], shift = 1 : tensor<4x8xf32>
// UNI:         %[[P2:.*]] = hlo.dot
// UNI-NEXT:    %[[S1:.*]] = hlo.add %[[M1]], %[[P2]] : tensor<4x8xf32>
// UNI-NEXT:    %[[M2:.*]] = collective.permute %[[S1]] on @mesh["x"], shift = 1
// UNI:         %[[S2:.*]] = hlo.add %[[M2]], %{{.*}}
// UNI-NEXT:    %[[M3:.*]] = collective.permute %[[S2]] on @mesh["x"], shift = 1
// UNI:         %r = hlo.add %{{.*}}, %[[M3]] : tensor<4x8xf32>
// UNI-NEXT:    func.return %r
// UNI-NOT:     collective.reduce_scatter
// The +1 ring covers 2 blocks, the -1 ring 1: the sums for block r arrive from r - 1
// (2 hops) and r + 1 (1 hop) and are added to r's own partial.
// BIDI-LABEL: func.func @scatter
// BIDI:         collective.permute %{{.*}} shift = 1
// BIDI:         %[[CCW:.*]] = collective.permute %{{.*}} shift = -1
// BIDI:         %[[CW:.*]] = collective.permute %{{.*}} shift = 1
// BIDI-NOT:     collective.permute
// BIDI:         %[[OWN:.*]] = hlo.dot
// BIDI-NEXT:    %[[S:.*]] = hlo.add %[[OWN]], %[[CW]]
// BIDI-NEXT:    %r = hlo.add %[[S]], %[[CCW]]
// BIDI:         func.return

// -----

// bf16: the partial sums travel as bf16, like a ring reduce_scatter's (same bytes). With
// f32-accumulation=true the partial dots produce f32, the sums run in f32 and are rounded
// once, as DESIGN.md's reduce_scatter does. A max reduce_scatter combines with hlo.max;
// scattering a column (rhs free) dimension slices the rhs.
spmd.mesh @mesh = <["x"=2]>
func.func @scatter_bf16_max(%a: tensor<4x8xbf16>, %w: tensor<8x6xbf16>, %b: tensor<4x8xi32>, %v: tensor<8x6xi32>) -> (tensor<2x6xbf16>, tensor<4x3xi32>) attributes {spmd.partitioned, spmd.per_device_io} {
  %y = hlo.dot %a, %w, contracting_dims = [1] x [0] : (tensor<4x8xbf16>, tensor<8x6xbf16>) -> tensor<4x6xbf16>
  %r = collective.reduce_scatter add %y on @mesh["x"], dim = 0 : (tensor<4x6xbf16>) -> tensor<2x6xbf16>
  %z = hlo.dot %b, %v, contracting_dims = [1] x [0] : (tensor<4x8xi32>, tensor<8x6xi32>) -> tensor<4x6xi32>
  %s = collective.reduce_scatter max %z on @mesh["x"], dim = 1 : (tensor<4x6xi32>) -> tensor<4x3xi32>
  func.return %r, %s : tensor<2x6xbf16>, tensor<4x3xi32>
}
// F32ACC-LABEL: func.func @scatter_bf16_max
// F32ACC:         hlo.dot %{{.*}}, %w, contracting_dims = [1] x [0] : (tensor<2x8xbf16>, tensor<8x6xbf16>) -> tensor<2x6xf32>
// F32ACC:         collective.permute %{{.*}} : tensor<2x6xf32>
// F32ACC:         hlo.add %{{.*}}, %{{.*}} : tensor<2x6xf32>
// F32ACC-NEXT:    %r = hlo.convert %{{.*}} : (tensor<2x6xf32>) -> tensor<2x6xbf16>
// BIDI-LABEL: func.func @scatter_bf16_max
// BIDI:         hlo.dot %{{.*}}, %w, contracting_dims = [1] x [0] : (tensor<2x8xbf16>, tensor<8x6xbf16>) -> tensor<2x6xbf16>
// BIDI:         collective.permute %{{.*}} : tensor<2x6xbf16>
// BIDI:         %r = hlo.add %{{.*}}, %{{.*}} : tensor<2x6xbf16>
// BIDI:         %[[VB:.*]] = hlo.dynamic_slice %v [%{{.*}}, %{{.*}}] sizes = [8, 3]
// BIDI-NEXT:    hlo.dot %b, %[[VB]], contracting_dims = [1] x [0] : (tensor<4x8xi32>, tensor<8x3xi32>) -> tensor<4x3xi32>
// BIDI:         %s = hlo.max %{{.*}}, %{{.*}} : tensor<4x3xi32>

// -----

// Left alone: groups over two mesh axes or explicit groups (no single axis_index to
// count ring steps with), an all_gather or dot result with another user.
spmd.mesh @mesh = <["a"=2, "b"=2]>
func.func @no_change(%x: tensor<2x8xf32>, %w: tensor<8x4xf32>) -> (tensor<8x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<2x4xf32>, tensor<4x4xf32>) attributes {spmd.partitioned, spmd.per_device_io} {
  %g0 = collective.all_gather %x on @mesh["a", "b"], dim = 0 : (tensor<2x8xf32>) -> tensor<8x8xf32>
  %y0 = hlo.dot %g0, %w, contracting_dims = [1] x [0] : (tensor<8x8xf32>, tensor<8x4xf32>) -> tensor<8x4xf32>
  %g1 = collective.all_gather %x on groups [[0, 3], [1, 2]], dim = 0 : (tensor<2x8xf32>) -> tensor<4x8xf32>
  %y1 = hlo.dot %g1, %w, contracting_dims = [1] x [0] : (tensor<4x8xf32>, tensor<8x4xf32>) -> tensor<4x4xf32>
  %g2 = collective.all_gather %x on @mesh["a"], dim = 0 : (tensor<2x8xf32>) -> tensor<4x8xf32>
  %y2 = hlo.dot %g2, %w, contracting_dims = [1] x [0] : (tensor<4x8xf32>, tensor<8x4xf32>) -> tensor<4x4xf32>
  %y6 = hlo.dot %g2, %w, contracting_dims = [1] x [0] : (tensor<4x8xf32>, tensor<8x4xf32>) -> tensor<4x4xf32>
  %r6 = collective.reduce_scatter add %y6 on @mesh["a", "b"], dim = 0 : (tensor<4x4xf32>) -> tensor<1x4xf32>
  %r7 = collective.reduce_scatter add %y2 on @mesh["b"], dim = 0 : (tensor<4x4xf32>) -> tensor<2x4xf32>
  func.return %y0, %y1, %y2, %r7, %y2 : tensor<8x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<2x4xf32>, tensor<4x4xf32>
}
// UNI-LABEL: func.func @no_change
// UNI-NOT:     collective.permute
// UNI:         func.return

// -----

// A gathered contracting dimension (the scaling book's all-gather collective matmul): each
// step multiplies the block it holds by the same rows of %k and adds the product to the
// running sum while the permute passes the block on.
spmd.mesh @mesh = <["a"=2]>
func.func @contracting(%x: tensor<2x8xf32>, %k: tensor<16x4xf32>) -> tensor<2x4xf32> attributes {spmd.partitioned, spmd.per_device_io} {
  %g3 = collective.all_gather %x on @mesh["a"], dim = 1 : (tensor<2x8xf32>) -> tensor<2x16xf32>
  %y3 = hlo.dot %g3, %k, contracting_dims = [1] x [0] : (tensor<2x16xf32>, tensor<16x4xf32>) -> tensor<2x4xf32>
  func.return %y3 : tensor<2x4xf32>
}
// UNI-LABEL: func.func @contracting
// UNI-NOT:     collective.all_gather
// UNI:         %[[NEXT:.*]] = collective.permute %x on @mesh["a"], shift = 1
// UNI:         %[[K0:.*]] = hlo.dynamic_slice %k [{{.*}}] sizes = [8, 4]
// UNI:         %[[P0:.*]] = hlo.dot %x, %[[K0]], contracting_dims = [1] x [0] : (tensor<2x8xf32>, tensor<8x4xf32>) -> tensor<2x4xf32>
// UNI:         %[[K1:.*]] = hlo.dynamic_slice %k [{{.*}}] sizes = [8, 4]
// UNI:         %[[P1:.*]] = hlo.dot %[[NEXT]], %[[K1]], contracting_dims = [1] x [0]
// UNI:         %[[SUM:.*]] = hlo.add %[[P0]], %[[P1]] : tensor<2x4xf32>
// UNI:         func.return %[[SUM]] : tensor<2x4xf32>

// -----

// A combined (variadic) all_gather or reduce_scatter: the operand feeding (fed by) the
// dot leaves it for the ring, the others stay combined.
spmd.mesh @mesh = <["x"=2]>
func.func @variadic(%x: tensor<2x8xf32>, %v: tensor<3xf32>, %w: tensor<8x4xf32>, %a: tensor<4x8xf32>) -> (tensor<4x4xf32>, tensor<6xf32>, tensor<2x4xf32>, tensor<3xf32>) attributes {spmd.partitioned, spmd.per_device_io} {
  %g, %gv = collective.all_gather %x, %v on @mesh["x"], dim = 0 : (tensor<2x8xf32>, tensor<3xf32>) -> (tensor<4x8xf32>, tensor<6xf32>)
  %y = hlo.dot %g, %w, contracting_dims = [1] x [0] : (tensor<4x8xf32>, tensor<8x4xf32>) -> tensor<4x4xf32>
  %z = hlo.dot %a, %w, contracting_dims = [1] x [0] : (tensor<4x8xf32>, tensor<8x4xf32>) -> tensor<4x4xf32>
  %v2 = hlo.concatenate %v, %v, dim = 0 : (tensor<3xf32>, tensor<3xf32>) -> tensor<6xf32>
  %r, %rv = collective.reduce_scatter add %z, %v2 on @mesh["x"], dim = 0 : (tensor<4x4xf32>, tensor<6xf32>) -> (tensor<2x4xf32>, tensor<3xf32>)
  func.return %y, %gv, %r, %rv : tensor<4x4xf32>, tensor<6xf32>, tensor<2x4xf32>, tensor<3xf32>
}
// UNI-LABEL: func.func @variadic
// UNI:         %gv = collective.all_gather %v on @mesh["x"], dim = 0 : (tensor<3xf32>) -> tensor<6xf32>
// UNI:         collective.permute %x on @mesh["x"], shift = 1
// UNI:         %rv = collective.reduce_scatter add %v2 on @mesh["x"], dim = 0 : (tensor<6xf32>) -> tensor<3xf32>
// UNI:         func.return %y, %gv, %r, %rv
