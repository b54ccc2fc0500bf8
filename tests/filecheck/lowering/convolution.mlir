// RUN: shardc-opt %s -p lower-to-tpu | filecheck %s
// RUN: shardc-opt %s -p lower-to-tpu | shardc-opt - > /dev/null

// A channels-last 1-D convolution of 3 taps with padding 1: one kernel
// (lowering/conv_kernel.py). The kernel's taps DMA'd to VMEM once and loaded as [in, out]
// matrices; the VMEM lhs slots (padded rows) zeroed once; per image (an scf.for, double
// buffered) the image DMA'd into its slot's interior, the next one started, then per tap
// a shifted load of the slot into one MXU accumulator, one store, one DMA out.

func.func @conv1d(%x: tensor<8x16x128xf32>, %w: tensor<3x128x256xf32>) -> tensor<8x16x256xf32> {
  %r = hlo.convolution(%x, %w) dim_numbers = [b, 0, f]x[0, i, o]->[b, 0, f], window = {pad = [[1, 1]]} : (tensor<8x16x128xf32>, tensor<3x128x256xf32>) -> tensor<8x16x256xf32>
  func.return %r : tensor<8x16x256xf32>
}

// CHECK-LABEL: func.func @conv1d(
// CHECK-NOT:     %scratch
// CHECK:         %halo_xv = tpu.alloc : memref<2x1x18x128xf32, #tpu.memory_space<vmem>>
// CHECK:         tpu.dma_start %conv_w, %conv_wv, %conv_wsem
// CHECK:         tpu.store %{{.*}}, %halo_xslot[%c0, %c0, %c0] : memref<1x18x128xf32, #tpu.memory_space<vmem>>, vector<1x18x128xf32>
// CHECK:         %[[XIN:.*]] = tpu.memref_slice %halo_xslot_2[%c0, %c1, %c0] : memref<1x18x128xf32, #tpu.memory_space<vmem>> -> memref<1x16x128xf32, #tpu.memory_space<vmem>>
// CHECK:         tpu.dma_start %halo_img, %[[XIN]]
// CHECK:         tpu.dma_wait %conv_wsem, %conv_wv
// CHECK:         %[[T0:.*]] = tpu.load %conv_wv[%c0, %c0, %c0, %c0] : memref<1x3x128x256xf32, #tpu.memory_space<vmem>>, vector<128x256xf32>
// CHECK:         scf.for %img = %c0 to %c8 step %c1 {
// CHECK:           tpu.dma_wait
// CHECK:           scf.if
// CHECK:             tpu.dma_start %halo_img_1
// CHECK:           %[[X0:.*]] = tpu.load %halo_xslot_3[%c0, %c0, %c0] : memref<1x18x128xf32, #tpu.memory_space<vmem>>, vector<16x128xf32>
// CHECK-NEXT:      %[[A0:.*]] = tpu.matmul %[[X0]], %[[T0]], %{{.*}} : vector<16x128xf32>, vector<128x256xf32> -> vector<16x256xf32>
// CHECK:           %[[X1:.*]] = tpu.load %halo_xslot_3[%c0, %c1, %c0]
// CHECK-NEXT:      %[[A1:.*]] = tpu.matmul %[[X1]], %{{.*}}, %[[A0]]
// CHECK:           %[[X2:.*]] = tpu.load %halo_xslot_3[%c0, %c2, %c0]
// CHECK-NEXT:      %[[A2:.*]] = tpu.matmul %[[X2]], %{{.*}}, %[[A1]]
// CHECK-NEXT:      tpu.store %[[A2]], %halo_oslot_1[%c0, %c0, %c0]
// CHECK:           tpu.dma_start %halo_oslot_1, %halo_oimg
// CHECK:         }
// CHECK-NOT:     tpu.dma_start
// CHECK:         func.return

// With two feature groups the kernel does not apply: the rewrite into level-S ops (the
// lhs padded once, per group and tap a strided window and an MXU dot, the sum of the
// taps), every intermediate through HBM.

func.func @conv1d_groups(%x: tensor<8x16x128xf32>, %w: tensor<3x64x256xf32>) -> tensor<8x16x256xf32> {
  %r = hlo.convolution(%x, %w) dim_numbers = [b, 0, f]x[0, i, o]->[b, 0, f], window = {pad = [[1, 1]]}, feature_group_count = 2 : (tensor<8x16x128xf32>, tensor<3x64x256xf32>) -> tensor<8x16x256xf32>
  func.return %r : tensor<8x16x256xf32>
}

// CHECK-LABEL: func.func @conv1d_groups(
// CHECK-SAME:    %scratch1: memref<8x18x128xf32, #tpu.memory_space<hbm>>
// CHECK:         tpu.dma_start %x, %pad_place, %pad_sem
// CHECK:         %slice_block = tpu.memref_slice %scratch1{{.*}} -> memref<8x18x64xf32, #tpu.memory_space<hbm>>
// CHECK:         tpu.matmul %{{.*}} : vector<128x64xf32>, vector<64x128xf32> -> vector<128x128xf32>
// CHECK:         arith.addf %{{.*}} : vector<8x16x128xf32>
// CHECK-NOT:     %halo_xv
// CHECK:         func.return
