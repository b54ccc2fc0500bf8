// RUN: shardc-opt %s -p 'lower-to-tpu{vmem-limit=98304}' --split-input-file --verify-diagnostics | filecheck %s
// RUN: shardc-opt %s -p 'lower-to-tpu{vmem-limit=98304}' --split-input-file --verify-diagnostics | shardc-opt - --split-input-file --verify-diagnostics > /dev/null
// RUN: not shardc-opt %s -p 'lower-to-tpu{vmem-limit=98304}' --split-input-file 2>&1 | filecheck %s --check-prefix=EXIT

// hlo compute ops become one tiled loop each (lowering/compute.py). With 96 KiB of VMEM
// an add of two 64x512 f32 tensors takes blocks of 8 whole rows (3 double-buffered
// 16 KiB blocks); step t waits for its blocks, prefetches step t+1's into the other
// slots, computes, and sends its result block back to HBM; a result slot is reused two
// steps later, after waiting for its DMA. At the end every DMA is waited for.

spmd.mesh @m = <["x"=1]>
func.func @add(%a: tensor<64x512xf32>, %b: tensor<64x512xf32>) -> tensor<64x512xf32> attributes {spmd.per_device_io} {
  %r = hlo.add %a, %b : tensor<64x512xf32>
  func.return %r : tensor<64x512xf32>
}

// CHECK-LABEL: func.func @add(%a: memref<64x512xf32, #tpu.memory_space<hbm>>, %b: memref<64x512xf32, #tpu.memory_space<hbm>>, %out0: memref<64x512xf32, #tpu.memory_space<hbm>>)
// CHECK:         %add_in0 = tpu.alloc : memref<2x8x512xf32, #tpu.memory_space<vmem>>
// CHECK-NEXT:    %add_in0_sems = tpu.alloc : !tpu.dma_semaphore<2>
// CHECK-NEXT:    %add_in1 = tpu.alloc : memref<2x8x512xf32, #tpu.memory_space<vmem>>
// CHECK-NEXT:    %add_in1_sems = tpu.alloc : !tpu.dma_semaphore<2>
// CHECK-NEXT:    %add_out = tpu.alloc : memref<2x8x512xf32, #tpu.memory_space<vmem>>
// CHECK-NEXT:    %add_out_sems = tpu.alloc : !tpu.dma_semaphore<2>
// CHECK-NEXT:    %add_in0_block = tpu.memref_slice %a[%c0, %c0] : memref<64x512xf32, #tpu.memory_space<hbm>> -> memref<8x512xf32, #tpu.memory_space<hbm>>
// CHECK-NEXT:    %add_in0_slot = tpu.memref_slice %add_in0[%c0, %c0, %c0]
// CHECK-NEXT:    %add_in0_sem = tpu.memref_slice %add_in0_sems[%c0]
// CHECK-NEXT:    tpu.dma_start %add_in0_block, %add_in0_slot, %add_in0_sem
// CHECK:         tpu.dma_start %add_in1_block, %add_in1_slot, %add_in1_sem
// CHECK-NEXT:    scf.for %t = %c0 to %c8 step %c1 {
// CHECK-NEXT:      %[[SLOT:.*]] = arith.remsi %t, %c2 : index
// CHECK-NEXT:      %[[X:.*]] = tpu.memref_slice %add_in0[%[[SLOT]], %c0, %c0]
// CHECK-NEXT:      %[[XS:.*]] = tpu.memref_slice %add_in0_sems[%[[SLOT]]]
// CHECK-NEXT:      tpu.dma_wait %[[XS]], %[[X]] : memref<8x512xf32, #tpu.memory_space<vmem>>
// CHECK-NEXT:      %[[Y:.*]] = tpu.memref_slice %add_in1[%[[SLOT]], %c0, %c0]
// CHECK-NEXT:      %[[YS:.*]] = tpu.memref_slice %add_in1_sems[%[[SLOT]]]
// CHECK-NEXT:      tpu.dma_wait %[[YS]], %[[Y]]
// CHECK-NEXT:      %[[NEXT:.*]] = arith.addi %t, %c1 : index
// CHECK-NEXT:      %[[MORE:.*]] = arith.cmpi slt, %[[NEXT]], %c8 : index
// CHECK-NEXT:      scf.if %[[MORE]] {
// CHECK-NEXT:        %[[ROW:.*]] = arith.muli %[[NEXT]], %c8 : index
// CHECK-NEXT:        %[[SRC:.*]] = tpu.memref_slice %a[%[[ROW]], %c0] : memref<64x512xf32, #tpu.memory_space<hbm>> -> memref<8x512xf32, #tpu.memory_space<hbm>>
// CHECK-NEXT:        %[[OTHER:.*]] = arith.remsi %[[NEXT]], %c2 : index
// CHECK-NEXT:        %[[DST:.*]] = tpu.memref_slice %add_in0[%[[OTHER]], %c0, %c0]
// CHECK-NEXT:        %[[SEM:.*]] = tpu.memref_slice %add_in0_sems[%[[OTHER]]]
// CHECK-NEXT:        tpu.dma_start %[[SRC]], %[[DST]], %[[SEM]]
// CHECK:             tpu.dma_start
// CHECK-NEXT:      }
// CHECK-NEXT:      %add_out_slot = tpu.memref_slice %add_out[%[[SLOT]], %c0, %c0]
// CHECK-NEXT:      %add_out_sem = tpu.memref_slice %add_out_sems[%[[SLOT]]]
// CHECK-NEXT:      %[[REUSE:.*]] = arith.cmpi sge, %t, %c2 : index
// CHECK-NEXT:      scf.if %[[REUSE]] {
// CHECK-NEXT:        tpu.dma_wait %add_out_sem, %add_out_slot : memref<8x512xf32, #tpu.memory_space<vmem>>
// CHECK-NEXT:      }
// CHECK-NEXT:      %[[XV:.*]] = tpu.load %[[X]][%c0, %c0] : memref<8x512xf32, #tpu.memory_space<vmem>>, vector<8x512xf32>
// CHECK-NEXT:      %[[YV:.*]] = tpu.load %[[Y]][%c0, %c0]
// CHECK-NEXT:      %[[SUM:.*]] = arith.addf %[[XV]], %[[YV]] : vector<8x512xf32>
// CHECK-NEXT:      tpu.store %[[SUM]], %add_out_slot[%c0, %c0]
// CHECK-NEXT:      %[[OROW:.*]] = arith.muli %t, %c8 : index
// CHECK-NEXT:      %add_out_block = tpu.memref_slice %out0[%[[OROW]], %c0]
// CHECK-NEXT:      tpu.dma_start %add_out_slot, %add_out_block, %add_out_sem
// CHECK-NEXT:    }
// CHECK-NEXT:    %[[O0:.*]] = tpu.memref_slice %add_out[%c0, %c0, %c0]
// CHECK-NEXT:    %[[S0:.*]] = tpu.memref_slice %add_out_sems[%c0]
// CHECK-NEXT:    tpu.dma_wait %[[S0]], %[[O0]]
// CHECK-NEXT:    %[[O1:.*]] = tpu.memref_slice %add_out[%c1, %c0, %c0]
// CHECK-NEXT:    %[[S1:.*]] = tpu.memref_slice %add_out_sems[%c1]
// CHECK-NEXT:    tpu.dma_wait %[[S1]], %[[O1]]
// CHECK-NEXT:    tpu.dealloc %add_in0
// CHECK-NEXT:    tpu.dealloc %add_in1
// CHECK-NEXT:    tpu.dealloc %add_out
// CHECK-NEXT:    func.return

// -----

// A bf16 dot whose contracting dimension does not fit: K blocks of 128 (the MXU's
// tile), one tpu.matmul per step into an f32 VMEM accumulator, zeroed at the first K
// block and rounded to bf16 once, after the last.

spmd.mesh @m = <["x"=1]>
func.func @dot(%a: tensor<8x1024xbf16>, %b: tensor<1024x128xbf16>) -> tensor<8x128xbf16> attributes {spmd.per_device_io} {
  %r = hlo.dot %a, %b, contracting_dims = [1] x [0] : (tensor<8x1024xbf16>, tensor<1024x128xbf16>) -> tensor<8x128xbf16>
  func.return %r : tensor<8x128xbf16>
}

// CHECK-LABEL: func.func @dot(
// CHECK:         %dot_in0 = tpu.alloc : memref<2x8x128xbf16, #tpu.memory_space<vmem>>
// CHECK:         %dot_in1 = tpu.alloc : memref<2x128x128xbf16, #tpu.memory_space<vmem>>
// CHECK:         %dot_out = tpu.alloc : memref<8x128xbf16, #tpu.memory_space<vmem>>
// CHECK-NEXT:    %dot_out_sems = tpu.alloc : !tpu.dma_semaphore
// CHECK-NEXT:    %dot_acc = tpu.alloc : memref<8x128xf32, #tpu.memory_space<vmem>>
// CHECK:         scf.for %t = %c0 to %c8 step %c1 {
// CHECK:           %[[K:.*]] = arith.muli %{{.*}}, %c128 : index
// CHECK-NEXT:      tpu.memref_slice %a[%c0, %[[K]]] : memref<8x1024xbf16, #tpu.memory_space<hbm>> -> memref<8x128xbf16, #tpu.memory_space<hbm>>
// CHECK:           tpu.memref_slice %b[%[[K]], %c0] : memref<1024x128xbf16, #tpu.memory_space<hbm>> -> memref<128x128xbf16, #tpu.memory_space<hbm>>
// CHECK:           %[[FIRST:.*]] = arith.cmpi eq, %t, %c0 : index
// CHECK-NEXT:      scf.if %[[FIRST]] {
// CHECK-NEXT:        %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:        %[[ZEROS:.*]] = vector.broadcast %[[ZERO]] : f32 to vector<8x128xf32>
// CHECK-NEXT:        tpu.store %[[ZEROS]], %dot_acc[%c0, %c0]
// CHECK-NEXT:      }
// CHECK:           %[[LHS:.*]] = tpu.load %{{.*}}[%c0, %c0, %c0] : memref<1x8x128xbf16, #tpu.memory_space<vmem>>, vector<8x128xbf16>
// CHECK-NEXT:      %[[RHS:.*]] = tpu.load %{{.*}}[%c0, %c0, %c0] : memref<1x128x128xbf16, #tpu.memory_space<vmem>>, vector<128x128xbf16>
// CHECK-NEXT:      %[[ACC:.*]] = tpu.load %[[ACCV:.*]][%c0, %c0, %c0] : memref<1x8x128xf32, #tpu.memory_space<vmem>>, vector<8x128xf32>
// CHECK-NEXT:      %[[MM:.*]] = tpu.matmul %[[LHS]], %[[RHS]], %[[ACC]] : vector<8x128xbf16>, vector<128x128xbf16> -> vector<8x128xf32>
// CHECK-NEXT:      tpu.store %[[MM]], %[[ACCV]][%c0, %c0, %c0]
// CHECK-NEXT:      %[[LAST:.*]] = arith.cmpi eq, %t, %c7 : index
// CHECK-NEXT:      scf.if %[[LAST]] {
// CHECK-NEXT:        %[[F32:.*]] = tpu.load %dot_acc[%c0, %c0] : memref<8x128xf32, #tpu.memory_space<vmem>>, vector<8x128xf32>
// CHECK-NEXT:        %[[BF16:.*]] = arith.truncf %[[F32]] : vector<8x128xf32> to vector<8x128xbf16>
// CHECK-NEXT:        tpu.store %[[BF16]], %dot_out[%c0, %c0]
// CHECK-NEXT:        tpu.dma_start %dot_out, %out0, %dot_out_sems
// CHECK-NEXT:      }
// CHECK-NEXT:    }
// CHECK-NEXT:    tpu.dma_wait %dot_out_sems, %dot_out
// CHECK:         tpu.dealloc %dot_acc

// -----

// reduce max over the last dimension: the operand streams in 16x512 blocks (8 steps),
// the 16 results stay in their VMEM slot (the accumulator: f32 in, f32 out), set to -inf first.

spmd.mesh @m = <["x"=1]>
func.func @reduce(%a: tensor<16x4096xf32>) -> tensor<16xf32> attributes {spmd.per_device_io} {
  %r = hlo.reduce max %a, dims = [1] : (tensor<16x4096xf32>) -> tensor<16xf32>
  func.return %r : tensor<16xf32>
}

// CHECK-LABEL: func.func @reduce(
// CHECK:         %reduce_in0 = tpu.alloc : memref<2x16x512xf32, #tpu.memory_space<vmem>>
// CHECK:         %reduce_out = tpu.alloc : memref<16xf32, #tpu.memory_space<vmem>>
// CHECK:         scf.for %t = %c0 to %c8 step %c1 {
// CHECK:           %[[FIRST:.*]] = arith.cmpi eq, %t, %c0 : index
// CHECK-NEXT:      scf.if %[[FIRST]] {
// CHECK-NEXT:        %[[NEGINF:.*]] = arith.constant 0xff800000 : f32
// CHECK-NEXT:        %[[INIT:.*]] = vector.broadcast %[[NEGINF]] : f32 to vector<16xf32>
// CHECK-NEXT:        tpu.store %[[INIT]], %reduce_out[%c0]
// CHECK-NEXT:      }
// CHECK-NEXT:      %[[V:.*]] = tpu.load %{{.*}}[%c0, %c0] : memref<16x512xf32, #tpu.memory_space<vmem>>, vector<16x512xf32>
// CHECK-NEXT:      %[[A:.*]] = tpu.load %reduce_out[%c0] : memref<16xf32, #tpu.memory_space<vmem>>, vector<16xf32>
// CHECK-NEXT:      %[[R:.*]] = tpu.reduce max %[[V]], %[[A]], dims = [1] : vector<16x512xf32> -> vector<16xf32>
// CHECK-NEXT:      tpu.store %[[R]], %reduce_out[%c0]
// CHECK:             tpu.dma_start %reduce_out, %out0, %reduce_out_sems

// -----

// broadcast: the operand never moves (fetched once, one slot), viewed with the result's
// rank and stretched with vector.broadcast.

spmd.mesh @m = <["x"=1]>
func.func @broadcast(%a: tensor<512xbf16>) -> tensor<256x512xbf16> attributes {spmd.per_device_io} {
  %r = hlo.broadcast %a, dims = [1] : (tensor<512xbf16>) -> tensor<256x512xbf16>
  func.return %r : tensor<256x512xbf16>
}

// CHECK-LABEL: func.func @broadcast(
// CHECK:         %broadcast_in0 = tpu.alloc : memref<512xbf16, #tpu.memory_space<vmem>>
// CHECK-NEXT:    %broadcast_in0_sems = tpu.alloc : !tpu.dma_semaphore
// CHECK:         tpu.dma_start %a, %broadcast_in0, %broadcast_in0_sems
// CHECK-NEXT:    tpu.dma_wait %broadcast_in0_sems, %broadcast_in0
// CHECK-NEXT:    scf.for %t
// CHECK-NOT:       tpu.dma_start %a
// CHECK:           %[[ROW:.*]] = tpu.memref_reshape %broadcast_in0 : memref<512xbf16, #tpu.memory_space<vmem>> -> memref<1x512xbf16, #tpu.memory_space<vmem>>
// CHECK:           %[[V:.*]] = tpu.load %[[ROW]][%c0, %c0] : memref<1x512xbf16, #tpu.memory_space<vmem>>, vector<1x512xbf16>
// CHECK-NEXT:      vector.broadcast %[[V]] : vector<1x512xbf16> to vector<{{[0-9]+}}x512xbf16>

// -----

// Even the smallest legal blocks of this dot (128x128: the MXU's tiles, the (8, 128)
// layout of the transposed lhs) need more than 96 KiB: an error at the op.

spmd.mesh @m = <["x"=1]>
func.func @too_big(%a: tensor<256x256xf32>, %b: tensor<256x256xf32>) -> tensor<256x256xf32> attributes {spmd.per_device_io} {
  %r = hlo.dot %a, %b, contracting_dims = [0] x [0] : (tensor<256x256xf32>, tensor<256x256xf32>) -> tensor<256x256xf32>
  func.return %r : tensor<256x256xf32>
}

// CHECK: lower-to-tpu-compute.mlir:[[# @LINE - 4]]:3: error: 'hlo.dot' op lower-to-tpu: hlo.dot with its smallest blocks (result 128x128, operand 0 128x128, operand 1 128x128) needs 458752 bytes of VMEM, more than the 98304 bytes available on v5e
// EXIT: lower-to-tpu-compute.mlir:[[# @LINE - 5]]:3: error: 'hlo.dot' op lower-to-tpu: hlo.dot with its smallest blocks (result 128x128, operand 0 128x128, operand 1 128x128) needs 458752 bytes of VMEM, more than the 98304 bytes available on v5e
// EXIT-NOT: Traceback
