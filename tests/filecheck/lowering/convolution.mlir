// RUN: shardc-opt %s -p lower-to-tpu | filecheck %s
// RUN: shardc-opt %s -p lower-to-tpu | shardc-opt - > /dev/null

// A 1-D convolution of 3 taps with padding 1: the lhs padded once (its DMA under the
// edge fills), then per tap a strided window of the padded lhs, the kernel's [in, out]
// matrix at that tap, one MXU dot of (batch x positions) rows, and a sum of the three;
// the result is already in the dots' layout ([b, 0, f]): no transpose.

func.func @conv1d(%x: tensor<8x16x128xf32>, %w: tensor<3x128x256xf32>) -> tensor<8x16x256xf32> {
  %r = hlo.convolution(%x, %w) dim_numbers = [b, 0, f]x[0, i, o]->[b, 0, f], window = {pad = [[1, 1]]} : (tensor<8x16x128xf32>, tensor<3x128x256xf32>) -> tensor<8x16x256xf32>
  func.return %r : tensor<8x16x256xf32>
}

// CHECK-LABEL: func.func @conv1d(
// CHECK-SAME:    %scratch1: memref<8x18x128xf32, #tpu.memory_space<hbm>>
// CHECK:         tpu.dma_start %x, %pad_place, %pad_sem
// CHECK:         %pad_edge = tpu.memref_slice %scratch1
// CHECK:         tpu.dma_wait %pad_sem, %pad_place
// CHECK:         %slice_block = tpu.memref_slice %scratch1{{.*}} -> memref<8x16x128xf32, #tpu.memory_space<hbm>>
// CHECK:         tpu.matmul %{{.*}} : vector<128x128xf32>, vector<128x256xf32> -> vector<128x256xf32>
// CHECK:         tpu.matmul %{{.*}} : vector<128x128xf32>, vector<128x256xf32> -> vector<128x256xf32>
// CHECK:         arith.addf %{{.*}} : vector<8x16x256xf32>
// CHECK:         tpu.matmul %{{.*}} : vector<128x128xf32>, vector<128x256xf32> -> vector<128x256xf32>
// CHECK:         arith.addf %{{.*}} : vector<8x16x256xf32>
// CHECK:         tpu.dma_start %add_out_1, %out0
// CHECK-NOT:     tpu.transpose
// CHECK:         func.return
