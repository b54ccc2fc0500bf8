// RUN: shardc-opt %s -p lower-to-tpu | filecheck %s
// RUN: shardc-opt %s -p lower-to-tpu | shardc-opt - > /dev/null

// A channels-last max-pool gradient (window 3x3, stride 2, padding 1, bf16) is one
// kernel (lowering/select_scatter_kernel.py): per image, the operand into a padded VMEM
// slot [8, 4, 2 * 128] (the width stride a reshape), the source into its slot, the f32
// accumulator of the slot's shape set to init; output row 0 (its window row 0 is
// padding: left out) on its own, rows 1-2 in one loop; each row's select compares
// shifted [3, 128] loads with "not best >= x" (column offset 0 masked: padding at ow 0),
// then adds the source where chosen into the accumulator, column offsets in reverse;
// the interior rounded once to bf16 and DMA'd out. No level-S op is left.

func.func @max_pool_grad(%x: tensor<2x6x6x128xbf16>, %g: tensor<2x3x3x128xbf16>, %init: tensor<bf16>) -> tensor<2x6x6x128xbf16> {
  %r = hlo.select_and_scatter %x, %g, %init, select = GE, scatter = add, window = [1, 3, 3, 1], strides = [1, 2, 2, 1], padding = [[0, 0], [1, 1], [1, 1], [0, 0]] : (tensor<2x6x6x128xbf16>, tensor<2x3x3x128xbf16>, tensor<bf16>) -> tensor<2x6x6x128xbf16>
  func.return %r : tensor<2x6x6x128xbf16>
}

// CHECK-LABEL: func.func @max_pool_grad(
// CHECK-NOT:     hlo.
// CHECK:         %halo_xv = tpu.alloc : memref<2x8x4x256xbf16, #tpu.memory_space<vmem>>
// CHECK:         %halo_ov = tpu.alloc : memref<2x3x3x128xbf16, #tpu.memory_space<vmem>>
// CHECK:         %sas_rv = tpu.alloc : memref<2x6x6x128xbf16, #tpu.memory_space<vmem>>
// CHECK:         %sas_acc = tpu.alloc : memref<8x4x256xf32, #tpu.memory_space<vmem>>
// CHECK:         %sas_ow = tpu.iota dim = 0 : vector<3x128xi32>
// CHECK:         scf.for %img =
// CHECK:           tpu.store %{{.*}}, %sas_acc[%c0, %c0, %c0] : memref<8x4x256xf32, #tpu.memory_space<vmem>>, vector<8x4x256xf32>
// CHECK:           %halo_tap = tpu.load %halo_xslot_1[%c1, %c0, %c0]
// CHECK:           %halo_tap_1 = tpu.load %halo_xslot_1[%c1, %c0, %c128]
// CHECK:           %sas_take = tpu.cmp ult, %halo_tap, %halo_tap_1 : vector<3x128xbf16>
// CHECK:           %sas_chosen_4 = tpu.select
// CHECK:           tpu.cmp eq, %sas_chosen_4, %{{.*}} : vector<3x128xi32>
// CHECK:           %sas_acc_tap = tpu.load %sas_acc[%c1, %c1, %c0]
// CHECK:           arith.addf %sas_acc_tap, %{{.*}} : vector<3x128xf32>
// CHECK:           %sas_acc_tap_1 = tpu.load %sas_acc[%c1, %c0, %c128]
// CHECK:           %sas_acc_tap_2 = tpu.load %sas_acc[%c1, %c0, %c0]
// CHECK:           scf.for %oh = %c0 to %c2
// CHECK:           %sas_total = tpu.load %sas_acc_in[%c0, %c0, %c0]
// CHECK:           arith.truncf %sas_total : vector<6x6x128xf32> to vector<6x6x128xbf16>
// CHECK:           tpu.dma_start %sas_rslot_1, %sas_rimg
// CHECK:         func.return
