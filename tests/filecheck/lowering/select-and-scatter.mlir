// RUN: shardc-opt %s -p lower-to-tpu | filecheck %s
// RUN: shardc-opt %s -p lower-to-tpu | shardc-opt - > /dev/null

// select_and_scatter (a 1x2 max pool's gradient, GE: the first largest) becomes level-S
// ops before the kernel is built (hardware/select_scatter.py): offset 0's strided slice
// is every window's first candidate (index 0 broadcast); offset 1's slice is compared
// with the best so far (GE kept: not taken) and taken where the compare fails; then, per
// offset in reverse order (1, then 0), the windows that chose it give their source
// element (-0.0 elsewhere), placed by a pad with interior padding 1 (low padding 1 for
// offset 1, 0 for offset 0) and added to the result, which starts as the init.

func.func @max_pool_grad(%x: tensor<8x256xf32>, %g: tensor<8x128xf32>, %init: tensor<f32>) -> tensor<8x256xf32> {
  %r = hlo.select_and_scatter %x, %g, %init, select = GE, scatter = add, window = [1, 2], strides = [1, 2] : (tensor<8x256xf32>, tensor<8x128xf32>, tensor<f32>) -> tensor<8x256xf32>
  func.return %r : tensor<8x256xf32>
}

// CHECK-LABEL: func.func @max_pool_grad(
// CHECK-NOT:     hlo.select_and_scatter
// CHECK:         %slice_src = tpu.memref_reshape %x : memref<8x256xf32, #tpu.memory_space<hbm>> -> memref<8x128x2xf32, #tpu.memory_space<hbm>>
// CHECK:         %slice_src_1 = tpu.memref_reshape %x
// CHECK:         tpu.cmp oge, %{{.*}} : vector<8x128xf32>
// CHECK:         arith.xori %{{.*}} : vector<8x128xi1>
// CHECK:         tpu.select %{{.*}} : vector<8x128xi1>, vector<8x128xi32>
// CHECK:         tpu.cmp eq, %{{.*}} : vector<8x128xi32>
// CHECK:         tpu.select %{{.*}} : vector<8x128xi1>, vector<8x128xf32>
// CHECK:         %pad_dst = tpu.memref_reshape %{{.*}} : memref<8x256xf32, #tpu.memory_space<hbm>> -> memref<8x128x2xf32, #tpu.memory_space<hbm>>
// CHECK:         arith.addf %{{.*}} : vector<8x256xf32>
// CHECK:         tpu.cmp eq, %{{.*}} : vector<8x128xi32>
// CHECK:         tpu.select %{{.*}} : vector<8x128xi1>, vector<8x128xf32>
// CHECK:         %pad_dst_1 = tpu.memref_reshape
// CHECK:         arith.addf %{{.*}} : vector<8x256xf32>
// CHECK-NOT:     arith.addf
// CHECK:         func.return
