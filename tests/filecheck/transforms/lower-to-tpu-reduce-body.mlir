// RUN: shardc-opt %s -p 'lower-to-tpu{vmem-limit=98304}' --split-input-file --verify-diagnostics | filecheck %s
// RUN: shardc-opt %s -p 'lower-to-tpu{vmem-limit=98304}' --split-input-file --verify-diagnostics | shardc-opt - --split-input-file --verify-diagnostics > /dev/null

// hlo.reduce with a body (lowering/reduce_body.py): JAX's argmax pair. One tiled loop;
// the operand blocks are staged as [reduced, kept] (a transpose through VMEM), the
// accumulators (the value's, and a VMEM buffer for the index's) take the inits at the
// first reduced block, then the body folds in the reduced elements one by one, in level
// S's order (`scf.for %rk` carrying the accumulators; each element a `vector.extract` of
// the loaded block), as vector ops on a whole result block.

spmd.mesh @m = <["x"=1]>
func.func @argmax(%x: tensor<8x256xf32>, %i: tensor<8x256xi32>) -> (tensor<8xf32>, tensor<8xi32>) attributes {spmd.per_device_io} {
  %v0 = hlo.constant dense<0xFF800000> : tensor<f32>
  %i0 = hlo.constant dense<0> : tensor<i32>
  %r:2 = hlo.reduce(%x init: %v0), (%i init: %i0) across dims = [1] : (tensor<8x256xf32>, tensor<8x256xi32>, tensor<f32>, tensor<i32>) -> (tensor<8xf32>, tensor<8xi32>) reducer(%a: tensor<f32>, %b: tensor<f32>) (%c: tensor<i32>, %d: tensor<i32>) {
    %cmp = hlo.compare GT, %a, %b : (tensor<f32>, tensor<f32>) -> tensor<i1>
    %eq = hlo.compare EQ, %a, %b : (tensor<f32>, tensor<f32>) -> tensor<i1>
    %lt = hlo.compare LT, %c, %d : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %tie = hlo.and %eq, %lt : tensor<i1>
    %keep = hlo.or %cmp, %tie : tensor<i1>
    %bx = hlo.select %keep, %a, %b : tensor<i1>, tensor<f32>
    %by = hlo.select %keep, %c, %d : tensor<i1>, tensor<i32>
    hlo.return %bx, %by : tensor<f32>, tensor<i32>
  }
  func.return %r#0, %r#1 : tensor<8xf32>, tensor<8xi32>
}

// CHECK-LABEL: func.func @argmax(
// CHECK:         %reduce_staged0 = tpu.alloc : memref<256x8xf32, #tpu.memory_space<vmem>>
// CHECK-NEXT:    %reduce_staged1 = tpu.alloc : memref<256x8xi32, #tpu.memory_space<vmem>>
// CHECK-NEXT:    %reduce_tmp0 = tpu.alloc : memref<8xi32, #tpu.memory_space<vmem>>
// CHECK:         %reduce_acc = tpu.alloc : memref<8xf32, #tpu.memory_space<vmem>>
// CHECK:         tpu.transpose %{{.*}}, dims = [1, 0] : vector<8x256xf32> -> vector<256x8xf32>
// CHECK:         %[[V0:.*]] = tpu.load %reduce_in2[] : memref<f32, #tpu.memory_space<vmem>>, vector<f32>
// CHECK-NEXT:    %[[VB:.*]] = vector.broadcast %[[V0]] : vector<f32> to vector<8xf32>
// CHECK-NEXT:    tpu.store %[[VB]], %reduce_acc[%c0]
// CHECK-NEXT:    %[[I0:.*]] = tpu.load %reduce_in3[] : memref<i32, #tpu.memory_space<vmem>>, vector<i32>
// CHECK-NEXT:    %[[IB:.*]] = vector.broadcast %[[I0]] : vector<i32> to vector<8xi32>
// CHECK-NEXT:    tpu.store %[[IB]], %reduce_tmp0[%c0]
// CHECK-NEXT:    %[[A0:.*]] = tpu.load %reduce_acc[%c0] : memref<8xf32, #tpu.memory_space<vmem>>, vector<8xf32>
// CHECK-NEXT:    %[[C0:.*]] = tpu.load %reduce_tmp0[%c0] : memref<8xi32, #tpu.memory_space<vmem>>, vector<8xi32>
// CHECK-NEXT:    %[[XS:.*]] = tpu.load %reduce_staged0[%c0, %c0] : memref<256x8xf32, #tpu.memory_space<vmem>>, vector<256x8xf32>
// CHECK-NEXT:    %[[IS:.*]] = tpu.load %reduce_staged1[%c0, %c0] : memref<256x8xi32, #tpu.memory_space<vmem>>, vector<256x8xi32>
// CHECK-NEXT:    %[[RV:.*]], %[[RI:.*]] = scf.for %rk = %c0 to %c256 step %c1 iter_args(%[[A:.*]] = %[[A0]], %[[C:.*]] = %[[C0]]) -> (vector<8xf32>, vector<8xi32>) {
// CHECK-NEXT:      %[[B:.*]] = vector.extract %[[XS]][%rk] : vector<8xf32> from vector<256x8xf32>
// CHECK-NEXT:      %[[D:.*]] = vector.extract %[[IS]][%rk] : vector<8xi32> from vector<256x8xi32>
// CHECK-NEXT:      %[[GT:.*]] = tpu.cmp ogt, %[[A]], %[[B]] : vector<8xf32>
// CHECK-NEXT:      %[[EQ:.*]] = tpu.cmp oeq, %[[A]], %[[B]] : vector<8xf32>
// CHECK-NEXT:      %[[LT:.*]] = tpu.cmp slt, %[[C]], %[[D]] : vector<8xi32>
// CHECK-NEXT:      %[[TIE:.*]] = arith.andi %[[EQ]], %[[LT]] : vector<8xi1>
// CHECK-NEXT:      %[[KEEP:.*]] = arith.ori %[[GT]], %[[TIE]] : vector<8xi1>
// CHECK-NEXT:      %[[BX:.*]] = tpu.select %[[KEEP]], %[[A]], %[[B]] : vector<8xi1>, vector<8xf32>
// CHECK-NEXT:      %[[BY:.*]] = tpu.select %[[KEEP]], %[[C]], %[[D]] : vector<8xi1>, vector<8xi32>
// CHECK-NEXT:      scf.yield %[[BX]], %[[BY]] : vector<8xf32>, vector<8xi32>
// CHECK-NEXT:    }
// CHECK-NEXT:    tpu.store %[[RV]], %reduce_acc[%c0]
// CHECK-NEXT:    tpu.store %[[RI]], %reduce_tmp0[%c0]
// CHECK-NEXT:    %[[OV:.*]] = tpu.load %reduce_acc[%c0]
// CHECK-NEXT:    %[[OI:.*]] = tpu.load %reduce_tmp0[%c0]
// CHECK-NEXT:    tpu.store %[[OV]], %reduce_out[%c0]
// CHECK-NEXT:    tpu.store %[[OI]], %reduce_out1[%c0]
// CHECK-NEXT:    tpu.dma_start %reduce_out, %out0, %reduce_out_sems
// CHECK-NEXT:    tpu.dma_start %reduce_out1, %out1, %reduce_out1_sems

// -----

// A body op lower-to-tpu does not lower: refused at the reduce, naming it.

spmd.mesh @m = <["x"=1]>
func.func @tan(%x: tensor<8x128xf32>, %i: tensor<f32>) -> tensor<8xf32> attributes {spmd.per_device_io} {
  // expected-error @+1 {{lower-to-tpu: hlo.reduce with hlo.tan in its body is not supported yet}}
  %r = hlo.reduce(%x init: %i) across dims = [1] : (tensor<8x128xf32>, tensor<f32>) -> tensor<8xf32> reducer(%a: tensor<f32>, %b: tensor<f32>) {
    %s = hlo.tan %a : tensor<f32>
    hlo.return %s : tensor<f32>
  }
  func.return %r : tensor<8xf32>
}
