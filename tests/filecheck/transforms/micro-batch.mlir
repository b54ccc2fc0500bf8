// RUN: shardc-opt %s -p 'micro-batch{force=true chunks=2}' --split-input-file | filecheck %s --check-prefix=FORCE
// RUN: shardc-opt %s -p 'micro-batch{force=true chunks=4}' --split-input-file | filecheck %s --check-prefix=FOUR
// RUN: shardc-opt %s -p 'micro-batch{force=true chunks=3}' --split-input-file | filecheck %s --check-prefix=THREE
// RUN: shardc-opt %s -p micro-batch --split-input-file | filecheck %s --check-prefix=DEFAULT
// RUN: shardc-opt %s -p 'micro-batch{max-chunks=4}' --split-input-file | filecheck %s --check-prefix=MAX4
// RUN: shardc-opt %s -p 'micro-batch{min-gain=0.5}' --split-input-file | filecheck %s --check-prefix=GAIN
// RUN: not shardc-opt %s -p 'micro-batch{chunks=1}' 2>&1 | filecheck %s --check-prefix=ONE
// RUN: not shardc-opt %s -p 'micro-batch{chip=v9}' 2>&1 | filecheck %s --check-prefix=CHIP
// RUN: not shardc-opt %s -p 'micro-batch{min-gain=1.5}' 2>&1 | filecheck %s --check-prefix=GAINBAD

// ONE-NOT: Traceback
// ONE:     error: invalid pass pipeline: pass 'micro-batch': option 'chunks' must be 0 or at least 2, got 1
// CHIP:    error: invalid pass pipeline: pass 'micro-batch': option 'chip' must be one of v4, v5e, v5p, v6e, got 'v9'
// GAINBAD: error: invalid pass pipeline: pass 'micro-batch': option 'min-gain' must be in [0, 1), got 1.5

// A Megatron layer per device (tensor parallel over "model"): forced into 2 chunks along
// the batch. The bias broadcast has no chunked operand (one op for both chunks), the
// splat constant becomes one chunk-sized constant, each chunk has its own all_reduce and
// the result is reassembled for the return. Chunk-major order: chunk 0 first.
spmd.mesh @mesh = <["data"=2, "model"=4]>
func.func @megatron(%x: tensor<8x32xf32>, %w1: tensor<32x32xf32>, %b1: tensor<32xf32>, %w2: tensor<32x32xf32>) -> tensor<8x32xf32> attributes {spmd.partitioned, spmd.per_device_io} {
  %h = hlo.dot %x, %w1, contracting_dims = [1] x [0] : (tensor<8x32xf32>, tensor<32x32xf32>) -> tensor<8x32xf32>
  %bb = hlo.broadcast %b1, dims = [1] : (tensor<32xf32>) -> tensor<8x32xf32>
  %hb = hlo.add %h, %bb : tensor<8x32xf32>
  %zero = hlo.constant dense<0.0> : tensor<8x32xf32>
  %a = hlo.max %hb, %zero : tensor<8x32xf32>
  %y = hlo.dot %a, %w2, contracting_dims = [1] x [0] : (tensor<8x32xf32>, tensor<32x32xf32>) -> tensor<8x32xf32>
  %r = collective.all_reduce add %y on @mesh["model"] : tensor<8x32xf32>
  func.return %r : tensor<8x32xf32>
}

// FORCE-LABEL: func.func @megatron
// FORCE-NEXT:    %x_c0 = hlo.slice %x [0:4, 0:32] : (tensor<8x32xf32>) -> tensor<4x32xf32>
// FORCE-NEXT:    %h_c0 = hlo.dot %x_c0, %w1, contracting_dims = [1] x [0] : (tensor<4x32xf32>, tensor<32x32xf32>) -> tensor<4x32xf32>
// FORCE-NEXT:    %bb = hlo.broadcast %b1, dims = [1] : (tensor<32xf32>) -> tensor<4x32xf32>
// FORCE-NEXT:    %hb_c0 = hlo.add %h_c0, %bb : tensor<4x32xf32>
// FORCE-NEXT:    %zero = hlo.constant dense<0.000000e+00> : tensor<4x32xf32>
// FORCE-NEXT:    %a_c0 = hlo.max %hb_c0, %zero : tensor<4x32xf32>
// FORCE-NEXT:    %y_c0 = hlo.dot %a_c0, %w2, contracting_dims = [1] x [0] : (tensor<4x32xf32>, tensor<32x32xf32>) -> tensor<4x32xf32>
// FORCE-NEXT:    %r_c0 = collective.all_reduce add %y_c0 on @mesh["model"] : tensor<4x32xf32>
// FORCE-NEXT:    %x_c1 = hlo.slice %x [4:8, 0:32] : (tensor<8x32xf32>) -> tensor<4x32xf32>
// FORCE-NEXT:    %h_c1 = hlo.dot %x_c1, %w1, contracting_dims = [1] x [0] : (tensor<4x32xf32>, tensor<32x32xf32>) -> tensor<4x32xf32>
// FORCE-NEXT:    %hb_c1 = hlo.add %h_c1, %bb : tensor<4x32xf32>
// FORCE-NEXT:    %a_c1 = hlo.max %hb_c1, %zero : tensor<4x32xf32>
// FORCE-NEXT:    %y_c1 = hlo.dot %a_c1, %w2, contracting_dims = [1] x [0] : (tensor<4x32xf32>, tensor<32x32xf32>) -> tensor<4x32xf32>
// FORCE-NEXT:    %r_c1 = collective.all_reduce add %y_c1 on @mesh["model"] : tensor<4x32xf32>
// FORCE-NEXT:    %r = hlo.concatenate %r_c0, %r_c1, dim = 0 : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<8x32xf32>
// FORCE-NEXT:    func.return %r : tensor<8x32xf32>
// Four chunks.
// FOUR-LABEL: func.func @megatron
// FOUR-COUNT-4: collective.all_reduce add %{{.*}} on @mesh["model"] : tensor<2x32xf32>
// FOUR:         hlo.concatenate %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, dim = 0 : (tensor<2x32xf32>, tensor<2x32xf32>, tensor<2x32xf32>, tensor<2x32xf32>) -> tensor<8x32xf32>
// By the cost model, this tiny layer stays as it is: its all_reduce is all latency,
// which every chunk's all_reduce would pay again.
// DEFAULT-LABEL: func.func @megatron
// DEFAULT-NOT:   hlo.slice
// DEFAULT:       collective.all_reduce add %y on @mesh["model"] : tensor<8x32xf32>
// DEFAULT-NOT:   hlo.concatenate

// -----

// A reduction over the batch is not split: the chunks are concatenated before it. The
// all_gather over dim 1 is split along dim 0.
spmd.mesh @mesh = <["x"=4]>
func.func @loss(%x: tensor<16x8xf32>, %w: tensor<8x8xf32>) -> tensor<32xf32> attributes {spmd.partitioned, spmd.per_device_io} {
  %y = hlo.dot %x, %w, contracting_dims = [1] x [0] : (tensor<16x8xf32>, tensor<8x8xf32>) -> tensor<16x8xf32>
  %g = collective.all_gather %y on @mesh["x"], dim = 1 : (tensor<16x8xf32>) -> tensor<16x32xf32>
  %e = hlo.exp %g : tensor<16x32xf32>
  %s = hlo.reduce add %e, dims = [0] : (tensor<16x32xf32>) -> tensor<32xf32>
  func.return %s : tensor<32xf32>
}

// FORCE-LABEL: func.func @loss
// FORCE-NEXT:    %x_c0 = hlo.slice %x [0:8, 0:8]
// FORCE-NEXT:    %y_c0 = hlo.dot %x_c0, %w
// FORCE-NEXT:    %g_c0 = collective.all_gather %y_c0 on @mesh["x"], dim = 1 : (tensor<8x8xf32>) -> tensor<8x32xf32>
// FORCE-NEXT:    %e_c0 = hlo.exp %g_c0 : tensor<8x32xf32>
// FORCE-NEXT:    %x_c1 = hlo.slice %x [8:16, 0:8]
// FORCE-NEXT:    %y_c1 = hlo.dot %x_c1, %w
// FORCE-NEXT:    %g_c1 = collective.all_gather %y_c1 on @mesh["x"], dim = 1 : (tensor<8x8xf32>) -> tensor<8x32xf32>
// FORCE-NEXT:    %e_c1 = hlo.exp %g_c1 : tensor<8x32xf32>
// FORCE-NEXT:    %e = hlo.concatenate %e_c0, %e_c1, dim = 0 : (tensor<8x32xf32>, tensor<8x32xf32>) -> tensor<16x32xf32>
// FORCE-NEXT:    %s = hlo.reduce add %e, dims = [0] : (tensor<16x32xf32>) -> tensor<32xf32>
// FORCE-NEXT:    func.return %s
// DEFAULT-LABEL: func.func @loss
// DEFAULT-NEXT:    hlo.dot %x, %w

// -----

// Through reshape, transpose, a full slice and a dynamic_slice keeping the batch whole;
// the reduce_scatter scatters dim 1, the batch is dim 0. The iota along dim 1 becomes one
// chunk-sized iota.
spmd.mesh @mesh = <["x"=2]>
func.func @shapes(%x: tensor<8x2x4xi32>, %i: tensor<i32>) -> tensor<8x2xi32> attributes {spmd.partitioned, spmd.per_device_io} {
  %r = hlo.reshape %x : (tensor<8x2x4xi32>) -> tensor<8x8xi32>
  %t = hlo.transpose %r, dims = [1, 0] : (tensor<8x8xi32>) -> tensor<8x8xi32>
  %u = hlo.transpose %t, dims = [1, 0] : (tensor<8x8xi32>) -> tensor<8x8xi32>
  %s = hlo.slice %u [0:8, 0:8] : (tensor<8x8xi32>) -> tensor<8x8xi32>
  %zero = hlo.constant dense<0> : tensor<i32>
  %d = hlo.dynamic_slice %s [%zero, %i] sizes = [8, 4] : (tensor<8x8xi32>, tensor<i32>, tensor<i32>) -> tensor<8x4xi32>
  %io = hlo.iota dim = 1 : tensor<8x4xi32>
  %p = hlo.add %d, %io : tensor<8x4xi32>
  %rs = collective.reduce_scatter add %p on @mesh["x"], dim = 1 : (tensor<8x4xi32>) -> tensor<8x2xi32>
  func.return %rs : tensor<8x2xi32>
}

// FORCE-LABEL: func.func @shapes
// FORCE-NEXT:    %x_c0 = hlo.slice %x [0:4, 0:2, 0:4] : (tensor<8x2x4xi32>) -> tensor<4x2x4xi32>
// FORCE-NEXT:    %r_c0 = hlo.reshape %x_c0 : (tensor<4x2x4xi32>) -> tensor<4x8xi32>
// FORCE-NEXT:    %t_c0 = hlo.transpose %r_c0, dims = [1, 0] : (tensor<4x8xi32>) -> tensor<8x4xi32>
// FORCE-NEXT:    %u_c0 = hlo.transpose %t_c0, dims = [1, 0] : (tensor<8x4xi32>) -> tensor<4x8xi32>
// FORCE-NEXT:    %s_c0 = hlo.slice %u_c0 [0:4, 0:8] : (tensor<4x8xi32>) -> tensor<4x8xi32>
// FORCE-NEXT:    %zero = hlo.constant dense<0> : tensor<i32>
// FORCE-NEXT:    %d_c0 = hlo.dynamic_slice %s_c0 [%zero, %i] sizes = [4, 4] : (tensor<4x8xi32>, tensor<i32>, tensor<i32>) -> tensor<4x4xi32>
// FORCE-NEXT:    %io = hlo.iota dim = 1 : tensor<4x4xi32>
// FORCE-NEXT:    %p_c0 = hlo.add %d_c0, %io : tensor<4x4xi32>
// FORCE-NEXT:    %rs_c0 = collective.reduce_scatter add %p_c0 on @mesh["x"], dim = 1 : (tensor<4x4xi32>) -> tensor<4x2xi32>
// FORCE-NEXT:    %x_c1 = hlo.slice %x [4:8, 0:2, 0:4]
// FORCE:         %d_c1 = hlo.dynamic_slice %s_c1 [%zero, %i] sizes = [4, 4]
// FORCE-NEXT:    %p_c1 = hlo.add %d_c1, %io : tensor<4x4xi32>
// FORCE-NEXT:    %rs_c1 = collective.reduce_scatter add %p_c1
// FORCE-NEXT:    %rs = hlo.concatenate %rs_c0, %rs_c1, dim = 0 : (tensor<4x2xi32>, tensor<4x2xi32>) -> tensor<8x2xi32>
// FORCE-NEXT:    func.return %rs

// -----

// Nothing to split: the only dimension of the all_gather is the gathered one; a dot of x
// with itself puts both dimensions of its result in one class; the variadic all_reduce's
// other operand has no dimension linked to y's, so it is not split, and then no class
// splits a collective. chunks=3 divides nothing here either.
spmd.mesh @mesh = <["x"=2]>
func.func @nothing(%v: tensor<4xf32>, %x: tensor<4x8xf32>, %w: tensor<8x8xf32>, %z: tensor<5xf32>) -> (tensor<8xf32>, tensor<4x4xf32>, tensor<4x8xf32>, tensor<5xf32>) attributes {spmd.partitioned, spmd.per_device_io} {
  %g = collective.all_gather %v on @mesh["x"], dim = 0 : (tensor<4xf32>) -> tensor<8xf32>
  %xx = hlo.dot %x, %x, contracting_dims = [1] x [1] : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x4xf32>
  %r = collective.all_reduce add %xx on @mesh["x"] : tensor<4x4xf32>
  %y = hlo.dot %x, %w, contracting_dims = [1] x [0] : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %a, %b = collective.all_reduce add %y, %z on @mesh["x"] : tensor<4x8xf32>, tensor<5xf32>
  func.return %g, %r, %a, %b : tensor<8xf32>, tensor<4x4xf32>, tensor<4x8xf32>, tensor<5xf32>
}
// FORCE-LABEL: func.func @nothing
// FORCE-NEXT:    %g = collective.all_gather %v
// FORCE-NEXT:    %xx = hlo.dot %x, %x
// FORCE-NEXT:    %r = collective.all_reduce add %xx
// FORCE-NEXT:    %y = hlo.dot %x, %w
// FORCE-NEXT:    %a, %b = collective.all_reduce add %y, %z
// FORCE-NEXT:    func.return
// THREE-LABEL: func.func @nothing
// THREE-NOT:     hlo.slice
// THREE:         func.return

// -----

// Large enough layers (two Megatron layers, 4096 rows per device, bf16, v5e): the cost
// model splits into 8 chunks (the estimate prefers it to 2 and 4); `max-chunks=4` takes 4;
// a `min-gain` above what it saves leaves it alone.
spmd.mesh @mesh = <["data"=2, "model"=4]>
func.func @big(%x: tensor<4096x4096xbf16>, %a0: tensor<4096x4096xbf16>, %b0: tensor<4096x4096xbf16>, %a1: tensor<4096x4096xbf16>, %b1: tensor<4096x4096xbf16>) -> tensor<4096x4096xbf16> attributes {spmd.partitioned, spmd.per_device_io} {
  %h0 = hlo.dot %x, %a0, contracting_dims = [1] x [0] : (tensor<4096x4096xbf16>, tensor<4096x4096xbf16>) -> tensor<4096x4096xbf16>
  %t0 = hlo.tanh %h0 : tensor<4096x4096xbf16>
  %y0 = hlo.dot %t0, %b0, contracting_dims = [1] x [0] : (tensor<4096x4096xbf16>, tensor<4096x4096xbf16>) -> tensor<4096x4096xbf16>
  %r0 = collective.all_reduce add %y0 on @mesh["model"] : tensor<4096x4096xbf16>
  %h1 = hlo.dot %r0, %a1, contracting_dims = [1] x [0] : (tensor<4096x4096xbf16>, tensor<4096x4096xbf16>) -> tensor<4096x4096xbf16>
  %t1 = hlo.tanh %h1 : tensor<4096x4096xbf16>
  %y1 = hlo.dot %t1, %b1, contracting_dims = [1] x [0] : (tensor<4096x4096xbf16>, tensor<4096x4096xbf16>) -> tensor<4096x4096xbf16>
  %r1 = collective.all_reduce add %y1 on @mesh["model"] : tensor<4096x4096xbf16>
  func.return %r1 : tensor<4096x4096xbf16>
}
// DEFAULT-LABEL: func.func @big
// DEFAULT-NEXT:    %x_c0 = hlo.slice %x [0:512, 0:4096]
// DEFAULT-COUNT-16: collective.all_reduce add %{{.*}} : tensor<512x4096xbf16>
// DEFAULT-NOT:     collective.all_reduce
// DEFAULT:         %r1 = hlo.concatenate
// DEFAULT-NEXT:    func.return %r1
// MAX4-LABEL: func.func @big
// MAX4-COUNT-8: collective.all_reduce add %{{.*}} : tensor<1024x4096xbf16>
// MAX4-NOT:     collective.all_reduce
// GAIN-LABEL: func.func @big
// GAIN-NOT:     hlo.slice
// GAIN-COUNT-2: collective.all_reduce add %{{.*}} : tensor<4096x4096xbf16>
// GAIN-NOT:     hlo.concatenate
