// RUN: shardc-opt %s -p 'lower-to-tpu{vmem-limit=131072}' | filecheck %s
// RUN: shardc-opt %s -p 'lower-to-tpu{vmem-limit=131072}' | shardc-opt - > /dev/null

// An output fusion (a dot with its epilogue: convert, bias add, tanh) lowers to ONE tiled
// loop (lowering/fusion.py): the dot's operands and the bias are fetched once per block
// into double-buffered VMEM slots, the products accumulate in an f32 VMEM accumulator,
// and at a result block's last contracting block the accumulator is rounded to the dot's
// bf16 (level S's rounding), the epilogue runs on it in vregs, and the block is written
// back to HBM once. No HBM intermediate (tpu.io's scratch count is 0), no second loop.

spmd.mesh @m = <["x"=1]>
func.func @dot_bias_tanh(%x: tensor<64x512xbf16>, %w: tensor<512x256xbf16>, %b: tensor<256xf32>) -> tensor<64x256xf32> attributes {spmd.per_device_io} {
  %r = hlo.fusion(%p0 = %x, %p1 = %w, %p2 = %b) kind = output, name = "dot_add_tanh_fusion" : (tensor<64x512xbf16>, tensor<512x256xbf16>, tensor<256xf32>) -> tensor<64x256xf32> {
    %d = hlo.dot %p0, %p1, contracting_dims = [1] x [0] : (tensor<64x512xbf16>, tensor<512x256xbf16>) -> tensor<64x256xbf16>
    %d32 = hlo.convert %d : (tensor<64x256xbf16>) -> tensor<64x256xf32>
    %bb = hlo.broadcast %p2, dims = [1] : (tensor<256xf32>) -> tensor<64x256xf32>
    %y = hlo.add %d32, %bb : tensor<64x256xf32>
    %t = hlo.tanh %y : tensor<64x256xf32>
    hlo.return %t : tensor<64x256xf32>
  }
  func.return %r : tensor<64x256xf32>
}

// CHECK-LABEL: func.func @dot_bias_tanh(%x: memref<64x512xbf16, #tpu.memory_space<hbm>>, %w: memref<512x256xbf16, #tpu.memory_space<hbm>>, %b: memref<256xf32, #tpu.memory_space<hbm>>, %out0: memref<64x256xf32, #tpu.memory_space<hbm>>) attributes {tpu.kernel, tpu.io = [3 : i64, 1 : i64, 0 : i64]}
// CHECK:         %fusion_in0 = tpu.alloc : memref<2x128xf32, #tpu.memory_space<vmem>>
// CHECK:         %fusion_in1 = tpu.alloc : memref<2x16x128xbf16, #tpu.memory_space<vmem>>
// CHECK:         %fusion_in2 = tpu.alloc : memref<2x128x128xbf16, #tpu.memory_space<vmem>>
// CHECK:         %fusion_out = tpu.alloc : memref<2x16x128xf32, #tpu.memory_space<vmem>>
// CHECK:         %fusion_acc = tpu.alloc : memref<16x128xf32, #tpu.memory_space<vmem>>
// CHECK:         scf.for %t = %c0 to %c32 step %c1 {
// CHECK-NOT:       scf.for
// CHECK:           tpu.dma_wait %fusion_in1_sem_1, %fusion_in1_slot_1
// CHECK:           tpu.dma_wait %fusion_in2_sem_1, %fusion_in2_slot_1
// CHECK:           tpu.matmul {{.*}} : vector<16x128xbf16>, vector<128x128xbf16> -> vector<16x128xf32>
// CHECK-NOT:       tpu.dma_start
// CHECK:             tpu.dma_wait %fusion_out_sem, %fusion_out_slot
// CHECK-NEXT:      }
// CHECK-NEXT:      %[[ACC:.*]] = tpu.load %fusion_acc[%c0, %c0] : memref<16x128xf32, #tpu.memory_space<vmem>>, vector<16x128xf32>
// CHECK-NEXT:      %[[D:.*]] = arith.truncf %[[ACC]] : vector<16x128xf32> to vector<16x128xbf16>
// CHECK-NEXT:      %[[D32:.*]] = arith.extf %[[D]] : vector<16x128xbf16> to vector<16x128xf32>
// CHECK-NEXT:      %[[B:.*]] = tpu.load %fusion_in0_slot_1[%c0]
// CHECK-NEXT:      %[[BB:.*]] = vector.broadcast %[[B]] : vector<128xf32> to vector<16x128xf32>
// CHECK-NEXT:      %[[Y:.*]] = arith.addf %[[D32]], %[[BB]] : vector<16x128xf32>
// CHECK-NEXT:      %[[T:.*]] = math.tanh %[[Y]] : vector<16x128xf32>
// CHECK-NEXT:      tpu.store %[[T]], %fusion_out_slot[%c0, %c0]
// CHECK:           tpu.dma_start %fusion_out_slot, %fusion_out_block, %fusion_out_sem : memref<16x128xf32, #tpu.memory_space<vmem>> to memref<16x128xf32, #tpu.memory_space<hbm>>
// CHECK-NEXT:    }
// CHECK-NEXT:  }
// CHECK-NOT:   scf.for
// CHECK-NOT:   tpu.dma_start
// CHECK:       tpu.dealloc %fusion_acc
