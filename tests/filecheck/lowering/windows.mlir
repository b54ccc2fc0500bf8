// RUN: shardc-opt %s -p lower-to-tpu --split-input-file | filecheck %s
// RUN: shardc-opt %s -p lower-to-tpu --split-input-file | shardc-opt - --split-input-file > /dev/null

// pad without interior padding: the operand is one DMA into its place, started first;
// under it, one fill loop per padded edge writes only the frame (the value fetched
// once per loop, broadcast per block); then the wait.

func.func @pad_frame(%a: tensor<8x128xf32>, %v: tensor<f32>) -> tensor<11x128xf32> {
  %r = hlo.pad %a, %v, low = [1, 0], high = [2, 0], interior = [0, 0] : (tensor<8x128xf32>, tensor<f32>) -> tensor<11x128xf32>
  func.return %r : tensor<11x128xf32>
}

// CHECK-LABEL: func.func @pad_frame(
// CHECK:         %pad_place = tpu.memref_slice %out0[%{{.*}}, %{{.*}}] : memref<11x128xf32, #tpu.memory_space<hbm>> -> memref<8x128xf32, #tpu.memory_space<hbm>>
// CHECK:         tpu.dma_start %a, %pad_place, %pad_sem
// CHECK:         %pad_edge = tpu.memref_slice %out0{{.*}} -> memref<1x128xf32, #tpu.memory_space<hbm>>
// CHECK:         tpu.dma_start %v, %pad_in0
// CHECK:         vector.broadcast %{{.*}} : vector<1x1xf32> to vector<1x128xf32>
// CHECK:         tpu.dma_start %pad_out, %pad_edge
// CHECK:         %pad_edge_1 = tpu.memref_slice %out0{{.*}} -> memref<2x128xf32, #tpu.memory_space<hbm>>
// CHECK:         tpu.dma_start %pad_out_1, %pad_edge_1
// CHECK:         tpu.dma_wait %pad_sem, %pad_place
// CHECK-NEXT:    func.return

// -----

// Interior padding whose stride divides the result: the whole result is filled, then
// the operand goes to one column of the result seen as [4, 2, 128]: one DMA.

func.func @pad_interior(%a: tensor<4x128xf32>, %v: tensor<f32>) -> tensor<8x128xf32> {
  %r = hlo.pad %a, %v, low = [0, 0], high = [1, 0], interior = [1, 0] : (tensor<4x128xf32>, tensor<f32>) -> tensor<8x128xf32>
  func.return %r : tensor<8x128xf32>
}

// CHECK-LABEL: func.func @pad_interior(
// CHECK:         tpu.dma_start %pad_out, %out0
// CHECK:         tpu.dma_wait %pad_out_sems
// CHECK:         %pad_src = tpu.memref_reshape %a : memref<4x128xf32, #tpu.memory_space<hbm>> -> memref<4x1x128xf32, #tpu.memory_space<hbm>>
// CHECK-NEXT:    %pad_dst = tpu.memref_reshape %out0 : memref<8x128xf32, #tpu.memory_space<hbm>> -> memref<4x2x128xf32, #tpu.memory_space<hbm>>
// CHECK:         %pad_place = tpu.memref_slice %pad_dst{{.*}} -> memref<4x1x128xf32, #tpu.memory_space<hbm>>
// CHECK:         tpu.dma_start %pad_src, %pad_place, %pad_sem
// CHECK-NEXT:    tpu.dma_wait %pad_sem, %pad_place

// -----

// Interior padding whose stride does not divide the result: one DMA per element along
// it, all started before the first wait.

func.func @pad_loop(%a: tensor<3x128xi32>, %v: tensor<i32>) -> tensor<7x128xi32> {
  %r = hlo.pad %a, %v, low = [0, 0], high = [0, 0], interior = [2, 0] : (tensor<3x128xi32>, tensor<i32>) -> tensor<7x128xi32>
  func.return %r : tensor<7x128xi32>
}

// CHECK-LABEL: func.func @pad_loop(
// CHECK:         scf.for %i = %{{.*}} to %{{.*}} step
// CHECK:           tpu.dma_start %pad_block, %pad_place, %pad_sem : memref<1x128xi32, #tpu.memory_space<hbm>> to memref<1x128xi32, #tpu.memory_space<hbm>>
// CHECK:         scf.for
// CHECK:           tpu.dma_wait %pad_sem

// -----

// reverse: one DMA per index of the reversed dimension, row j to row n - 1 - j, 16 in
// flight: the first 16 started, then each later one after the wait of the one 16 before,
// then the last 16 waits.

func.func @reverse(%a: tensor<32x128xf32>) -> tensor<32x128xf32> {
  %r = hlo.reverse %a, dims = [0] : tensor<32x128xf32>
  func.return %r : tensor<32x128xf32>
}

// CHECK-LABEL: func.func @reverse(
// CHECK:         %reverse_sem = tpu.alloc : !tpu.dma_semaphore
// CHECK:         %[[SIXTEEN:.*]] = arith.constant 16 : index
// CHECK:         scf.for %j = %{{.*}} to %[[SIXTEEN]] step
// CHECK:           %reverse_src = tpu.memref_slice %a[%j, %{{.*}}] : memref<32x128xf32, #tpu.memory_space<hbm>> -> memref<1x128xf32, #tpu.memory_space<hbm>>
// CHECK-NEXT:      %[[LAST:.*]] = arith.constant 31 : index
// CHECK-NEXT:      %[[FLIP:.*]] = arith.subi %[[LAST]], %j : index
// CHECK:           %reverse_dst = tpu.memref_slice %out0[%[[FLIP]], %{{.*}}]
// CHECK-NEXT:      tpu.dma_start %reverse_src, %reverse_dst, %reverse_sem
// CHECK:         scf.for %[[J:.*]] = %{{.*}} to %{{.*}} step
// CHECK:           tpu.dma_wait %reverse_sem
// CHECK:           tpu.dma_start
// CHECK:         scf.for
// CHECK:           tpu.dma_wait %reverse_sem
// CHECK-NOT:       tpu.dma_start
// CHECK:         func.return

// -----

// reduce_window (a 2x2 max pool, stride 2): the init broadcast into an accumulator, then
// per window offset, row-major, a strided slice of the operand (one DMA of a view of the
// operand as [4, 2, 128, 2]) and a max into the accumulator.

func.func @max_pool(%a: tensor<8x256xf32>, %init: tensor<f32>) -> tensor<4x128xf32> {
  %r = hlo.reduce_window max %a, %init, window = [2, 2], strides = [2, 2] : (tensor<8x256xf32>, tensor<f32>) -> tensor<4x128xf32>
  func.return %r : tensor<4x128xf32>
}

// CHECK-LABEL: func.func @max_pool(
// CHECK:         %broadcast_out = tpu.alloc : memref<4x128xf32, #tpu.memory_space<vmem>>
// CHECK:         %slice_src = tpu.memref_reshape %a : memref<8x256xf32, #tpu.memory_space<hbm>> -> memref<4x2x128x2xf32, #tpu.memory_space<hbm>>
// CHECK:         tpu.dma_start %slice_block
// CHECK:         arith.maximumf
// CHECK:         %slice_src_1 = tpu.memref_reshape %a
// CHECK:         arith.maximumf
// CHECK:         %slice_src_2 = tpu.memref_reshape %a
// CHECK:         arith.maximumf
// CHECK:         %slice_src_3 = tpu.memref_reshape %a
// CHECK:         arith.maximumf
// CHECK-NOT:     arith.maximumf
// CHECK:         func.return

// -----

// A channels-last max pool (3x3, stride 2, padding 1: ResNet's stem) is one kernel
// (lowering/window_kernel.py on lowering/halo.py): the init value DMA'd to VMEM and
// broadcast into the frame of both operand slots (viewed [rows, cols / 2, 2 x 128]: the
// width stride is a reshape), each image DMA'd once into a slot's interior (the next one
// prefetched), per output row the nine offsets as shifted loads (columns 2q + r at [q, r
// x 128]), extended to f32 and combined in level S's order, truncated once, stored, the
// image's rows DMA'd out.

func.func @max_pool_nhwc(%a: tensor<2x6x6x128xbf16>, %init: tensor<bf16>) -> tensor<2x3x3x128xbf16> {
  %r = hlo.reduce_window max %a, %init, window = [1, 3, 3, 1], strides = [1, 2, 2, 1], padding = [[0, 0], [1, 1], [1, 1], [0, 0]] : (tensor<2x6x6x128xbf16>, tensor<bf16>) -> tensor<2x3x3x128xbf16>
  func.return %r : tensor<2x3x3x128xbf16>
}

// CHECK-LABEL: func.func @max_pool_nhwc(
// CHECK-NOT:     %scratch
// CHECK:         %halo_xv = tpu.alloc : memref<2x8x4x256xbf16, #tpu.memory_space<vmem>>
// CHECK:         tpu.dma_start %init, %pool_init, %pool_sem
// CHECK:         %pool_initv = tpu.load %pool_init[]
// CHECK:         %[[FRAME:.*]] = vector.broadcast %pool_initv : vector<bf16> to vector<8x4x256xbf16>
// CHECK:         tpu.store %[[FRAME]], %halo_xslot[%c0, %c0, %c0]
// CHECK:         tpu.store %[[FRAME]], %halo_xslot_1[%c0, %c0, %c0]
// CHECK:         tpu.dma_start %halo_img, %halo_xin_2
// CHECK:         scf.for %img = %c0 to %c2 step %c1 {
// CHECK:           scf.for %oh = %c0 to %c3 step %c1 {
// CHECK:             %[[ROW:.*]] = arith.muli %oh, %c2 : index
// CHECK:             tpu.load %halo_xslot_3[%[[ROW]], %c0, %c0] : memref<8x4x256xbf16, #tpu.memory_space<vmem>>, vector<3x128xbf16>
// CHECK:             arith.maximumf
// CHECK:             tpu.load %halo_xslot_3[%[[ROW]], %c0, %c128]
// CHECK:             arith.maximumf
// CHECK:             tpu.load %halo_xslot_3[%[[ROW]], %c1, %c0]
// CHECK-COUNT-7:     arith.maximumf
// CHECK-NOT:         arith.maximumf
// CHECK:             arith.truncf %{{.*}} : vector<3x128xf32> to vector<3x128xbf16>
// CHECK:             tpu.store
// CHECK:           }
// CHECK:           tpu.dma_start %halo_oslot_1, %halo_oimg
// CHECK:         }
// CHECK:         func.return
