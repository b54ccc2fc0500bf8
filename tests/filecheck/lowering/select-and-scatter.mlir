// RUN: shardc-opt %s -p lower-to-tpu | filecheck %s
// RUN: shardc-opt %s -p lower-to-tpu | shardc-opt - > /dev/null

// select_and_scatter (a 2x1 max pool's gradient over the leading dimension, GE: the first
// largest; not channels-last, so not lowering/select_scatter_kernel.py's: see
// select-and-scatter-kernel.mlir) becomes level-S ops before the kernel is built
// (hardware/select_scatter.py): offset 0's strided slice
// is every window's first candidate (index 0 broadcast); offset 1's slice is compared
// with the best so far (GE kept: not taken) and taken where the compare fails; then, per
// offset in reverse order (1, then 0), the windows that chose it give their source
// element (-0.0 elsewhere), placed by a pad with interior padding 1 (low padding 1 for
// offset 1, 0 for offset 0) and added to the result, which starts as the init.

func.func @max_pool_grad(%x: tensor<256x8xf32>, %g: tensor<128x8xf32>, %init: tensor<f32>) -> tensor<256x8xf32> {
  %r = hlo.select_and_scatter %x, %g, %init, select = GE, scatter = add, window = [2, 1], strides = [2, 1] : (tensor<256x8xf32>, tensor<128x8xf32>, tensor<f32>) -> tensor<256x8xf32>
  func.return %r : tensor<256x8xf32>
}

// CHECK-LABEL: func.func @max_pool_grad(
// CHECK-NOT:     hlo.select_and_scatter
// CHECK:         %slice_src = tpu.memref_reshape %x : memref<256x8xf32, #tpu.memory_space<hbm>> -> memref<128x2x8xf32, #tpu.memory_space<hbm>>
// CHECK:         %slice_src_1 = tpu.memref_reshape %x
// CHECK:         tpu.cmp oge, %{{.*}} : vector<128x8xf32>
// CHECK:         arith.xori %{{.*}} : vector<128x8xi1>
// CHECK:         tpu.select %{{.*}} : vector<128x8xi1>, vector<128x8xi32>
// CHECK:         tpu.cmp eq, %{{.*}} : vector<128x8xi32>
// CHECK:         tpu.select %{{.*}} : vector<128x8xi1>, vector<128x8xf32>
// CHECK:         %pad_dst = tpu.memref_reshape %{{.*}} : memref<256x8xf32, #tpu.memory_space<hbm>> -> memref<128x2x8xf32, #tpu.memory_space<hbm>>
// CHECK:         arith.addf %{{.*}} : vector<256x8xf32>
// CHECK:         tpu.cmp eq, %{{.*}} : vector<128x8xi32>
// CHECK:         tpu.select %{{.*}} : vector<128x8xi1>, vector<128x8xf32>
// CHECK:         %pad_dst_1 = tpu.memref_reshape
// CHECK:         arith.addf %{{.*}} : vector<256x8xf32>
// CHECK-NOT:     arith.addf
// CHECK:         func.return
