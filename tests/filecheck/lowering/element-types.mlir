// RUN: shardc-opt %s -p lower-to-tpu --split-input-file | filecheck %s
// RUN: shardc-opt %s -p lower-to-tpu --split-input-file | shardc-opt - --split-input-file > /dev/null

// Sub-byte integers (lowering/narrow_ints.py): VMEM blocks stay packed i4; the block is
// unpacked into i32 lanes, computed there and packed back (the convert wraps at 4 bits).

func.func @add_i4(%a: tensor<8x128xi4>, %b: tensor<8x128xi4>) -> tensor<8x128xi4> {
  %r = hlo.add %a, %b : tensor<8x128xi4>
  func.return %r : tensor<8x128xi4>
}

// CHECK-LABEL: func.func @add_i4(
// CHECK:         %[[X:.*]] = tpu.load %add_in0{{.*}}vector<8x128xi4>
// CHECK:         %[[Y:.*]] = tpu.load %add_in1{{.*}}vector<8x128xi4>
// CHECK-NEXT:    %[[XW:.*]] = tpu.convert %[[X]] : vector<8x128xi4> -> vector<8x128xi32>
// CHECK-NEXT:    %[[YW:.*]] = tpu.convert %[[Y]] : vector<8x128xi4> -> vector<8x128xi32>
// CHECK-NEXT:    %[[S:.*]] = arith.addi %[[XW]], %[[YW]] : vector<8x128xi32>
// CHECK-NEXT:    %[[P:.*]] = tpu.convert %[[S]] : vector<8x128xi32> -> vector<8x128xi4>
// CHECK-NEXT:    tpu.store %[[P]], %add_out

// -----

// A shift of i4 sees the 4 bits: the amount masked to 4 unsigned bits, the operand's bits
// zero-extended (a logical shift of -8 is 4, not 2^31 - 4).

func.func @shift_i4(%a: tensor<8x128xi4>, %b: tensor<8x128xi4>) -> tensor<8x128xi4> {
  %r = hlo.shift_right_logical %a, %b : tensor<8x128xi4>
  func.return %r : tensor<8x128xi4>
}

// CHECK-LABEL: func.func @shift_i4(
// CHECK:         arith.constant 15 : i32
// CHECK:         %[[U:.*]] = arith.andi %{{.*}}, %{{.*}} : vector<8x128xi32>
// CHECK:         %[[N:.*]] = arith.andi %{{.*}}, %{{.*}} : vector<8x128xi32>
// CHECK-NEXT:    %[[R:.*]] = arith.shrui %[[U]], %[[N]] : vector<8x128xi32>
// CHECK-NEXT:    tpu.convert %[[R]] : vector<8x128xi32> -> vector<8x128xi4>

// -----

// complex<f32> (lowering/complex_pairs.py): each part is one strided DMA out of the
// complex buffer viewed as pairs of f32; the product's parts are one fused loop each,
// numpy's fused multiply-add computed in f64 (ar * br exact there); the parts go back
// into the result's pairs view.

func.func @mul_c64(%a: tensor<8x128xcomplex<f32>>, %b: tensor<8x128xcomplex<f32>>) -> tensor<8x128xcomplex<f32>> {
  %r = hlo.mul %a, %b : tensor<8x128xcomplex<f32>>
  func.return %r : tensor<8x128xcomplex<f32>>
}

// CHECK-LABEL: func.func @mul_c64(
// CHECK:         %[[P:.*]] = tpu.memref_bitcast %a : memref<8x128xcomplex<f32>, #tpu.memory_space<hbm>> -> memref<8x128x2xf32, #tpu.memory_space<hbm>>
// CHECK-NEXT:    %{{.*}} = arith.constant 0 : index
// CHECK:         %[[RE:.*]] = tpu.memref_slice %[[P]]{{.*}} -> memref<8x128x1xf32, #tpu.memory_space<hbm>>
// CHECK:         tpu.dma_start %[[RE]], %part_dst
// CHECK:         %[[X:.*]] = arith.extf %{{.*}} : vector<8x128xf32> to vector<8x128xf64>
// CHECK-NEXT:    %[[Y:.*]] = tpu.load
// CHECK-NEXT:    %[[YW:.*]] = arith.extf %[[Y]] : vector<8x128xf32> to vector<8x128xf64>
// CHECK-NEXT:    %[[XY:.*]] = arith.mulf %[[X]], %[[YW]] : vector<8x128xf64>
// CHECK:         %[[Q:.*]] = arith.mulf %{{.*}}, %{{.*}} : vector<8x128xf32>
// CHECK-NEXT:    %[[QW:.*]] = arith.extf %[[Q]] : vector<8x128xf32> to vector<8x128xf64>
// CHECK-NEXT:    %[[D:.*]] = arith.subf %[[XY]], %[[QW]] : vector<8x128xf64>
// CHECK-NEXT:    arith.truncf %[[D]] : vector<8x128xf64> to vector<8x128xf32>
// CHECK:         %[[O:.*]] = tpu.memref_bitcast %out0 : memref<8x128xcomplex<f32>, #tpu.memory_space<hbm>> -> memref<8x128x2xf32, #tpu.memory_space<hbm>>
// CHECK:         %[[PLACE:.*]] = tpu.memref_slice %[[O]]
// CHECK:         tpu.dma_start %part_src, %[[PLACE]], %complex_sem

// -----

// A complex compare EQ (lowering/complex_pairs.py): both parts equal, one loop on them.

func.func @eq_c64(%a: tensor<8x128xcomplex<f32>>, %b: tensor<8x128xcomplex<f32>>) -> tensor<8x128xi1> {
  %r = hlo.compare EQ, %a, %b : (tensor<8x128xcomplex<f32>>, tensor<8x128xcomplex<f32>>) -> tensor<8x128xi1>
  func.return %r : tensor<8x128xi1>
}

// CHECK-LABEL: func.func @eq_c64(
// CHECK:         %[[RE:.*]] = tpu.cmp oeq, %{{.*}}, %{{.*}} : vector<8x128xf32>
// CHECK:         %[[IM:.*]] = tpu.cmp oeq, %{{.*}}, %{{.*}} : vector<8x128xf32>
// CHECK-NEXT:    arith.andi %[[RE]], %[[IM]] : vector<8x128xi1>

// -----

// A complex exp: e^a (cos b + i sin b) in f64 for complex<f32> parts, rounded once.

func.func @exp_c64(%a: tensor<8x128xcomplex<f32>>) -> tensor<8x128xcomplex<f32>> {
  %r = hlo.exp %a : tensor<8x128xcomplex<f32>>
  func.return %r : tensor<8x128xcomplex<f32>>
}

// CHECK-LABEL: func.func @exp_c64(
// CHECK:         %[[X:.*]] = arith.extf %{{.*}} : vector<8x128xf32> to vector<8x128xf64>
// CHECK:         %[[Y:.*]] = arith.extf %{{.*}} : vector<8x128xf32> to vector<8x128xf64>
// CHECK:         %[[E:.*]] = math.exp %[[X]] : vector<8x128xf64>
// CHECK-NEXT:    %[[C:.*]] = math.cos %[[Y]] : vector<8x128xf64>
// CHECK-NEXT:    arith.mulf %[[E]], %[[C]] : vector<8x128xf64>
// CHECK:         arith.truncf %{{.*}} : vector<8x128xf64> to vector<8x128xf32>
// CHECK:         math.sin %[[Y]] : vector<8x128xf64>
// CHECK:         arith.truncf %{{.*}} : vector<8x128xf64> to vector<8x128xf32>

// -----

// A fusion of complex ops is one loop on the parts: the product's real part and the sum
// follow each other in the loop (no HBM round trip of the product, no loop per op); each
// part of the product is selected where its plain sum is NaN (numpy's fma: an infinity).

func.func @fused_c128(%a: tensor<8x128xcomplex<f64>>, %b: tensor<8x128xcomplex<f64>>) -> tensor<8x128xcomplex<f64>> {
  %0 = hlo.fusion(%x = %a, %y = %b) kind = loop, name = "multiply_add_fusion" : (tensor<8x128xcomplex<f64>>, tensor<8x128xcomplex<f64>>) -> tensor<8x128xcomplex<f64>> {
    %m = hlo.mul %x, %y : tensor<8x128xcomplex<f64>>
    %s = hlo.add %m, %y : tensor<8x128xcomplex<f64>>
    hlo.return %s : tensor<8x128xcomplex<f64>>
  }
  func.return %0 : tensor<8x128xcomplex<f64>>
}

// CHECK-LABEL: func.func @fused_c128(
// CHECK:         tpu.dma_start %{{.*}}, %fusion_in3
// CHECK-NOT:     tpu.dma_start
// CHECK:         %[[PLAIN:.*]] = arith.subf %{{.*}}, %{{.*}} : vector<8x128xf64>
// CHECK:         %[[RE:.*]] = tpu.select %{{.*}}, %{{.*}}, %[[PLAIN]] : vector<8x128xi1>, vector<8x128xf64>
// CHECK-NEXT:    arith.addf %[[RE]], %{{.*}} : vector<8x128xf64>
// CHECK-NOT:     tpu.dma_start
// CHECK:         %[[IM:.*]] = tpu.select %{{.*}}, %{{.*}}, %{{.*}} : vector<8x128xi1>, vector<8x128xf64>
// CHECK-NEXT:    arith.addf %[[IM]], %{{.*}} : vector<8x128xf64>
// CHECK:         tpu.dma_start %fusion_out
