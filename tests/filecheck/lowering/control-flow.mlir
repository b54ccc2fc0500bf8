// RUN: shardc-opt %s -p lower-to-tpu --split-input-file | filecheck %s
// RUN: shardc-opt %s -p lower-to-tpu --split-input-file | shardc-opt - --split-input-file > /dev/null

// A counted loop (JAX's fori_loop): the carried values are DMA'd into the result
// buffers, then one scf.for over the 5 trips; the condition is never run. %i1 and %x1
// are elementwise ops after every other read of the old values: both are computed straight
// into the carried buffers (no copy per iteration). %mul's operand is fetched early, while
// %add's loop runs (lowering/fusion.py's early fetch: %x is ready before it).

func.func @counted(%a: tensor<8x128xf32>) -> (tensor<8x128xf32>, tensor<i32>) {
  %c0 = hlo.constant dense<0> : tensor<i32>
  %r:2 = hlo.while(%i = %c0, %x = %a) : tensor<i32>, tensor<8x128xf32> cond {
    %n = hlo.constant dense<5> : tensor<i32>
    %p = hlo.compare LT, %i, %n : (tensor<i32>, tensor<i32>) -> tensor<i1>
    hlo.return %p : tensor<i1>
  } do {
    %one = hlo.constant dense<1> : tensor<i32>
    %i1 = hlo.add %i, %one : tensor<i32>
    %x1 = hlo.mul %x, %x : tensor<8x128xf32>
    hlo.return %i1, %x1 : tensor<i32>, tensor<8x128xf32>
  }
  func.return %r#1, %r#0 : tensor<8x128xf32>, tensor<i32>
}

// CHECK-LABEL: func.func @counted(%a: memref<8x128xf32, #tpu.memory_space<hbm>>, %out0: memref<8x128xf32, #tpu.memory_space<hbm>>, %out1: memref<i32, #tpu.memory_space<hbm>>
// CHECK:         tpu.dma_start %a, %out0, %while_init_sem
// CHECK:         %[[FIVE:.*]] = arith.constant 5 : index
// CHECK:         scf.for %trip = %{{.*}} to %[[FIVE]] step
// CHECK-NOT:       cmp
// CHECK-NOT:       while_carry
// CHECK:           tpu.dma_start %out0, %mul_in0
// CHECK-NOT:       while_carry
// CHECK:           tpu.dma_start %add_out, %out1
// CHECK:           tpu.dma_start %mul_out, %out0
// CHECK-NOT:       while_carry
// CHECK:         }
// CHECK-NEXT:    func.return

// -----

// A loop whose limit is an argument: scf.while, the condition lowered in its `before`
// region, its i1 DMA'd into SMEM and read as the flag of scf.condition.

func.func @dynamic(%a: tensor<8x128xi32>, %lim: tensor<i32>) -> tensor<8x128xi32> {
  %c0 = hlo.constant dense<0> : tensor<i32>
  %r:2 = hlo.while(%i = %c0, %x = %a) : tensor<i32>, tensor<8x128xi32> cond {
    %p = hlo.compare LT, %i, %lim : (tensor<i32>, tensor<i32>) -> tensor<i1>
    hlo.return %p : tensor<i1>
  } do {
    %one = hlo.constant dense<1> : tensor<i32>
    %i1 = hlo.add %i, %one : tensor<i32>
    %x1 = hlo.add %x, %x : tensor<8x128xi32>
    hlo.return %i1, %x1 : tensor<i32>, tensor<8x128xi32>
  }
  func.return %r#1 : tensor<8x128xi32>
}

// CHECK-LABEL: func.func @dynamic(
// CHECK:         scf.while () : () -> () {
// CHECK:           tpu.cmp
// CHECK:           %while_pred_smem = tpu.alloc : memref<i1, #tpu.memory_space<smem>>
// CHECK:           tpu.dma_start %{{.*}}, %while_pred_smem, %while_pred_sem : memref<i1, #tpu.memory_space<hbm>> to memref<i1, #tpu.memory_space<smem>>
// CHECK-NEXT:      tpu.dma_wait %while_pred_sem, %while_pred_smem
// CHECK-NEXT:      %while_pred = memref.load %while_pred_smem[] : memref<i1, #tpu.memory_space<smem>>
// CHECK-NEXT:      tpu.dealloc %while_pred_smem
// CHECK-NEXT:      scf.condition(%while_pred)
// CHECK-NEXT:    } do {
// CHECK:           arith.addi
// CHECK:           scf.yield
// CHECK-NEXT:    }

// -----

// A swap of carried values is staged through VMEM: both read out before either is
// overwritten.

func.func @swap(%a: tensor<8x128xf32>, %b: tensor<8x128xf32>) -> tensor<8x128xf32> {
  %c0 = hlo.constant dense<0> : tensor<i32>
  %r:3 = hlo.while(%i = %c0, %x = %a, %y = %b) : tensor<i32>, tensor<8x128xf32>, tensor<8x128xf32> cond {
    %n = hlo.constant dense<3> : tensor<i32>
    %p = hlo.compare LT, %i, %n : (tensor<i32>, tensor<i32>) -> tensor<i1>
    hlo.return %p : tensor<i1>
  } do {
    %one = hlo.constant dense<1> : tensor<i32>
    %i1 = hlo.add %i, %one : tensor<i32>
    hlo.return %i1, %y, %x : tensor<i32>, tensor<8x128xf32>, tensor<8x128xf32>
  }
  func.return %r#1 : tensor<8x128xf32>
}

// CHECK-LABEL: func.func @swap(
// CHECK:         scf.for
// CHECK:           %[[S0:.*]] = tpu.alloc : memref<8x128xf32, #tpu.memory_space<vmem>>
// CHECK-NEXT:      %[[S1:.*]] = tpu.alloc : memref<8x128xf32, #tpu.memory_space<vmem>>
// CHECK:           tpu.dma_wait %while_swap_sem_1
// CHECK:           tpu.dma_start %[[S0]]
// CHECK:           tpu.dma_start %[[S1]]
// CHECK:           tpu.dealloc %[[S0]]
// CHECK-NEXT:      tpu.dealloc %[[S1]]

// -----

// case: the index DMA'd into SMEM, an out-of-range index mapped to the last branch
// (one unsigned compare), then an scf.if chain; a value a branch makes is computed into
// the result buffer, an outer value is copied.

func.func @case(%a: tensor<8x128xf32>, %k: tensor<i32>) -> tensor<8x128xf32> {
  %r = hlo.case %k -> (tensor<8x128xf32>) {
    %y = hlo.add %a, %a : tensor<8x128xf32>
    hlo.return %y : tensor<8x128xf32>
  }, {
    hlo.return %a : tensor<8x128xf32>
  }, {
    %y = hlo.neg %a : tensor<8x128xf32>
    hlo.return %y : tensor<8x128xf32>
  }
  func.return %r : tensor<8x128xf32>
}

// CHECK-LABEL: func.func @case(
// CHECK:         %case_index = memref.load %case_index_smem[] : memref<i32, #tpu.memory_space<smem>>
// CHECK:         %[[LAST:.*]] = arith.constant 2 : i32
// CHECK-NEXT:    %[[IN:.*]] = arith.cmpi ult, %case_index, %[[LAST]] : i32
// CHECK-NEXT:    %case_branch = arith.select %[[IN]], %case_index, %[[LAST]] : i32
// CHECK:         %[[IS0:.*]] = arith.cmpi eq, %case_branch
// CHECK-NEXT:    scf.if %[[IS0]] {
// CHECK:           tpu.dma_start %add_out, %out0
// CHECK:         } else {
// CHECK:           %[[IS1:.*]] = arith.cmpi eq, %case_branch
// CHECK-NEXT:      scf.if %[[IS1]] {
// CHECK:             tpu.dma_start %a, %out0, %case_result_sem
// CHECK:           } else {
// CHECK:             arith.negf
// CHECK:             tpu.dma_start %{{.*}}, %out0
// CHECK:           }{tpu.branch_on_value}
// CHECK:         }{tpu.branch_on_value}
// CHECK-NEXT:    func.return
