// RUN: shardc-opt %s -p 'lower-to-tpu{chip=v5e}' --split-input-file | filecheck %s
// RUN: shardc-opt %s -p lower-to-tpu --split-input-file | shardc-opt - --split-input-file > /dev/null
// RUN: shardc-opt %s -p 'lower-to-tpu{chip=v5p}' --split-input-file | filecheck %s --check-prefix=V5P
// RUN: not shardc-opt %s -p 'lower-to-tpu{chip=v99}' --split-input-file 2>&1 | filecheck %s --check-prefix=CHIP

// Ring all_gather, HBM to HBM: own shard into its slot, then N-1 forwards to the right,
// one receive semaphore per step (every slot is written once: no handshake needed).
// Outputs are extra HBM arguments after the inputs; the kernel returns nothing.

spmd.mesh @ring = <["x"=4]>
func.func @all_gather(%a: tensor<8x128xf32>) -> tensor<32x128xf32> attributes {spmd.per_device_io} {
  %r = collective.all_gather %a on @ring["x"], dim = 0 : (tensor<8x128xf32>) -> tensor<32x128xf32>
  func.return %r : tensor<32x128xf32>
}

// CHECK-LABEL: func.func @all_gather(%a: memref<8x128xf32, #tpu.memory_space<hbm>>, %out0: memref<32x128xf32, #tpu.memory_space<hbm>>) attributes {tpu.kernel, tpu.io = [1 : i64, 1 : i64, 0 : i64]} {
// CHECK:         %dev = tpu.device_id : i32
// CHECK-NEXT:    %me_x = tpu.axis_index @ring["x"] : i32
// CHECK-NEXT:    %n_x = arith.constant 4 : i32
// CHECK:         %right_x = arith.addi %dev, %{{.*}} : i32
// CHECK-NEXT:    tpu.barrier
// CHECK:         %ag_own = tpu.memref_slice %out0[%{{.*}}, %{{.*}}] : memref<32x128xf32, #tpu.memory_space<hbm>> -> memref<8x128xf32, #tpu.memory_space<hbm>>
// CHECK-NEXT:    %ag_own_sem = tpu.alloc : !tpu.dma_semaphore
// CHECK-NEXT:    tpu.dma_start %a, %ag_own, %ag_own_sem
// CHECK-NEXT:    tpu.dma_wait %ag_own_sem, %ag_own
// CHECK-NEXT:    %ag_send_sem = tpu.alloc : !tpu.dma_semaphore
// CHECK-NEXT:    %ag_recv_sems = tpu.alloc : !tpu.dma_semaphore<3>
// CHECK:         scf.for %s = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK:           %ag_recv_sem = tpu.memref_slice %ag_recv_sems[%s] : !tpu.dma_semaphore<3> -> !tpu.dma_semaphore
// CHECK-NEXT:      tpu.dma_start %ag_block, %ag_block, %ag_send_sem, %ag_recv_sem, device = %right_x
// CHECK-NEXT:      tpu.dma_wait %ag_send_sem, %ag_block
// CHECK-NEXT:      tpu.dma_wait %ag_recv_sem, %ag_incoming
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return

// -----

// Ring reduce_scatter: partial sums travel right in VMEM, double-buffered receive slots,
// one credit (regular semaphore, signalled by the receiver to its left neighbour) per
// free slot; the sender waits for a credit before each remote DMA.

spmd.mesh @ring = <["x"=4]>
func.func @reduce_scatter(%a: tensor<32x128xi32>) -> tensor<8x128xi32> attributes {spmd.per_device_io} {
  %r = collective.reduce_scatter add %a on @ring["x"], dim = 0 : (tensor<32x128xi32>) -> tensor<8x128xi32>
  func.return %r : tensor<8x128xi32>
}

// CHECK-LABEL: func.func @reduce_scatter(
// CHECK:         %left_x = arith.addi %dev, %{{.*}} : i32
// CHECK:         %rs_slots = arith.constant 2 : i32
// CHECK:         %rs_recv_buf = tpu.alloc : memref<2x8x128xi32, #tpu.memory_space<vmem>>
// CHECK:         %rs_acc = tpu.alloc : memref<8x128xi32, #tpu.memory_space<vmem>>
// CHECK:         %rs_credits = tpu.alloc : !tpu.semaphore
// CHECK:         tpu.sem_signal %rs_credits, %rs_slots, device = %left_x
// CHECK:         %rs_first_block = tpu.memref_slice %a
// CHECK:         tpu.sem_wait %rs_credits, %one
// CHECK-NEXT:    tpu.dma_start %rs_first_block, %rs_slot, %rs_send_sem, %rs_recv_sem, device = %right_x
// CHECK:         tpu.store %sum, %rs_acc
// CHECK:         scf.for %s = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK:           tpu.sem_wait %rs_credits, %one
// CHECK-NEXT:      tpu.dma_start %rs_acc, %rs_slot_1, %rs_send_sem, %rs_recv_sem_1, device = %right_x
// CHECK:           tpu.dma_wait %rs_recv_sem_1, %rs_slot_1
// CHECK-NEXT:      %partial_1 = tpu.load %rs_recv_buf[%slot_1, %{{.*}}, %{{.*}}]
// CHECK-NEXT:      %own_1 = tpu.load %rs_mine
// CHECK-NEXT:      %sum_1 = arith.addi %partial_1, %own_1 : vector<8x128xi32>
// CHECK-NEXT:      tpu.dma_wait %rs_send_sem, %rs_acc
// CHECK-NEXT:      tpu.store %sum_1, %rs_acc
// CHECK-NEXT:      tpu.sem_signal %rs_credits, %one, device = %left_x
// CHECK-NEXT:    }
// CHECK-NEXT:    tpu.sem_wait %rs_credits, %rs_slots
// CHECK:         tpu.dma_start %rs_acc, %out0, %rs_out_sem
// CHECK-NEXT:    tpu.dma_wait %rs_out_sem, %out0

// -----

// all_reduce = reduce_scatter + all_gather over the buffer viewed as [N, numel / N]; the
// reduced chunk goes straight to its slot of the output, where the all-gather finds it.

spmd.mesh @ring = <["x"=2]>
func.func @all_reduce(%a: tensor<8x6xf32>) -> tensor<8x6xf32> attributes {spmd.per_device_io} {
  %r = collective.all_reduce add %a on @ring["x"] : tensor<8x6xf32>
  func.return %r : tensor<8x6xf32>
}

// CHECK-LABEL: func.func @all_reduce(
// CHECK:         %ar_in = tpu.memref_reshape %a : memref<8x6xf32, #tpu.memory_space<hbm>> -> memref<2x24xf32, #tpu.memory_space<hbm>>
// CHECK-NEXT:    %ar_out = tpu.memref_reshape %out0 : memref<8x6xf32, #tpu.memory_space<hbm>> -> memref<2x24xf32, #tpu.memory_space<hbm>>
// CHECK:         %rs_slots = arith.constant 1 : i32
// CHECK:         %sum = arith.addf %partial, %own : vector<1x24xf32>
// CHECK:         tpu.dma_start %rs_acc, %group_view, %rs_out_sem : memref<1x24xf32, #tpu.memory_space<vmem>> to memref<1x24xf32, #tpu.memory_space<hbm>>
// CHECK:         tpu.dealloc %rs_acc
// CHECK:         %ag_recv_sems = tpu.alloc : !tpu.dma_semaphore<1>

// -----

// permute_start issues its DMA, the compute runs, done waits; an intermediate value
// gets an HBM scratch argument after the outputs.

spmd.mesh @m = <["data"=2, "model"=4]>
func.func @permute(%a: tensor<8x128xf32>) -> tensor<8x128xf32> attributes {spmd.per_device_io} {
  %f = collective.permute_start %a on @m["model"], shift = 1 : tensor<8x128xf32> -> !collective.future<tensor<8x128xf32>>
  %e = hlo.exp %a : tensor<8x128xf32>
  %p = collective.done %f : !collective.future<tensor<8x128xf32>> -> tensor<8x128xf32>
  %s = hlo.add %p, %e : tensor<8x128xf32>
  func.return %s : tensor<8x128xf32>
}

// CHECK-LABEL: func.func @permute(%a: memref<8x128xf32, #tpu.memory_space<hbm>>, %out0: memref<8x128xf32, #tpu.memory_space<hbm>>, %scratch0: memref<8x128xf32, #tpu.memory_space<hbm>>, %scratch1: memref<8x128xf32, #tpu.memory_space<hbm>>) attributes {tpu.kernel, tpu.io = [1 : i64, 1 : i64, 2 : i64]} {
// CHECK:         %me_model = tpu.axis_index @m["model"] : i32
// CHECK:         tpu.dma_start %a, %scratch1, %pm_send_sem, %pm_recv_sem, device = %right_model
// CHECK:         {{.*}}math.exp %{{.*}} : vector<8x128xf32>
// CHECK:         tpu.dma_wait %pm_send_sem, %a
// CHECK-NEXT:    tpu.dma_wait %pm_recv_sem, %scratch1
// CHECK:         {{.*}}arith.addf %{{.*}}, %{{.*}} : vector<8x128xf32>
// CHECK:         tpu.dma_start %{{.*}}, %out0, %{{.*}}sem

// -----

// all_gather_start: the own slot copy and step 0's DMA at the start; the later steps,
// unrolled (lowering/ring_steps.py), go into the tiled loops of the compute in between
// where their transfers fit; the exp here is far too short for any, so step 0's waits
// and steps 1..2 run at the done.

spmd.mesh @ring = <["x"=4]>
func.func @all_gather_start(%a: tensor<8x128xf32>, %b: tensor<8x128xf32>) -> (tensor<32x128xf32>, tensor<8x128xf32>) attributes {spmd.per_device_io} {
  %f = collective.all_gather_start %a on @ring["x"], dim = 0 : (tensor<8x128xf32>) -> !collective.future<tensor<32x128xf32>>
  %e = hlo.exp %b : tensor<8x128xf32>
  %r = collective.done %f : !collective.future<tensor<32x128xf32>> -> tensor<32x128xf32>
  func.return %r, %e : tensor<32x128xf32>, tensor<8x128xf32>
}

// CHECK-LABEL: func.func @all_gather_start(
// CHECK:         tpu.dma_start %a, %ag_own, %ag_own_sem
// CHECK:         tpu.dma_start %ag_block, %ag_block, %ag_send_sem, %ag_recv_sem, device = %right_x
// CHECK-NOT:     tpu.dma_wait %ag_send_sem
// CHECK:         {{.*}}math.exp
// CHECK:         tpu.dma_wait %ag_send_sem, %ag_block
// CHECK-NEXT:    tpu.dma_wait %ag_recv_sem, %ag_incoming
// CHECK-NEXT:    tpu.dma_start %ag_block_1, %ag_block_1, %ag_send_sem, %ag_recv_sem_1, device = %right_x
// CHECK-NEXT:    tpu.dma_wait %ag_send_sem, %ag_block_1
// CHECK-NEXT:    tpu.dma_wait %ag_recv_sem_1, %ag_incoming_1
// CHECK-NEXT:    tpu.dma_start %ag_block_2, %ag_block_2, %ag_send_sem, %ag_recv_sem_2, device = %right_x
// CHECK-NEXT:    tpu.dma_wait %ag_send_sem, %ag_block_2
// CHECK-NEXT:    tpu.dma_wait %ag_recv_sem_2, %ag_incoming_2
// CHECK-NEXT:    func.return

// -----

// all_to_all: block t of the input straight to rank t's slot `me`; all DMAs independent.

spmd.mesh @ring = <["x"=4]>
func.func @all_to_all(%a: tensor<8x12xf32>) -> tensor<32x3xf32> attributes {spmd.per_device_io} {
  %r = collective.all_to_all %a on @ring["x"], split_dim = 1, concat_dim = 0 : (tensor<8x12xf32>) -> tensor<32x3xf32>
  func.return %r : tensor<32x3xf32>
}

// CHECK-LABEL: func.func @all_to_all(
// CHECK:         %a2a_recv_sems = tpu.alloc : !tpu.dma_semaphore<3>
// CHECK:         %a2a_own_src = tpu.memref_slice %a[%{{.*}}, %{{.*}}] : memref<8x12xf32, #tpu.memory_space<hbm>> -> memref<8x3xf32, #tpu.memory_space<hbm>>
// CHECK:         %a2a_own_dst = tpu.memref_slice %out0[%{{.*}}, %{{.*}}] : memref<32x3xf32, #tpu.memory_space<hbm>> -> memref<8x3xf32, #tpu.memory_space<hbm>>
// CHECK:         scf.for %s = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK:           %a2a_target = arith.remsi
// CHECK:           %a2a_device = arith.addi %dev, %{{.*}} : i32
// CHECK:           tpu.dma_start %a2a_block, %a2a_slot, %a2a_send_sem, %a2a_recv_sem, device = %a2a_device
// CHECK-NEXT:    }
// CHECK-NEXT:    tpu.dma_wait %a2a_copy_sem, %a2a_own_dst
// CHECK:         scf.for %s_1 = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK:           tpu.dma_wait %a2a_send_sem, %a2a_own_src
// CHECK-NEXT:      tpu.dma_wait %a2a_recv_sem_1, %a2a_incoming

// -----

// permute pairs: one scf.if per sender and receiver; ranks nobody sends to get zeros.

spmd.mesh @ring = <["x"=4]>
func.func @pairs(%a: tensor<8xi32>) -> tensor<8xi32> attributes {spmd.per_device_io} {
  %r = collective.permute %a on @ring["x"], pairs = [[0, 3]] : tensor<8xi32>
  func.return %r : tensor<8xi32>
}

// CHECK-LABEL: func.func @pairs(
// CHECK:         %{{.*}} = arith.cmpi eq, %me_x, %{{.*}} : i32
// CHECK-NEXT:    scf.if %{{.*}} {
// CHECK:           tpu.dma_start %a, %out0, %pm_send_sem, %pm_recv_sem, device = %{{.*}}
// CHECK:         arith.constant dense<0> : vector<8xi32>
// CHECK:         tpu.dma_wait %pm_recv_sem, %out0

// -----

// Two axes of different sizes: reduce-scatter over "a" then "b", each phase leaving its
// result in this device's part of the output, where the next phase reads it; all-gather
// over "b" then "a" (the "b" phase within this device's "a" part of the output).

spmd.mesh @m = <["a"=2, "b"=4]>
func.func @two_axes(%x: tensor<4x6xi32>) -> tensor<4x6xi32> attributes {spmd.per_device_io} {
  %r = collective.all_reduce add %x on @m["a", "b"] : tensor<4x6xi32>
  func.return %r : tensor<4x6xi32>
}

// CHECK-LABEL: func.func @two_axes(
// CHECK:         %ar_in = tpu.memref_reshape %x : memref<4x6xi32, #tpu.memory_space<hbm>> -> memref<8x3xi32, #tpu.memory_space<hbm>>
// CHECK:         %group_view = tpu.memref_slice %ar_out[%{{.*}}, %{{.*}}] : memref<8x3xi32, #tpu.memory_space<hbm>> -> memref<4x3xi32, #tpu.memory_space<hbm>>
// CHECK:         %rs_recv_buf = tpu.alloc : memref<2x4x3xi32, #tpu.memory_space<vmem>>
// CHECK:         tpu.dma_start %rs_first_block, %rs_slot, %rs_send_sem, %rs_recv_sem, device = %left_a
// CHECK:         tpu.dma_start %rs_acc, %group_view, %rs_out_sem
// CHECK:         %group_view_1 = tpu.memref_slice %ar_out[%{{.*}}, %{{.*}}] : memref<8x3xi32, #tpu.memory_space<hbm>> -> memref<1x3xi32, #tpu.memory_space<hbm>>
// CHECK:         %rs_recv_buf_1 = tpu.alloc : memref<2x1x3xi32, #tpu.memory_space<vmem>>
// CHECK:         %rs_first_block_1 = tpu.memref_slice %group_view[%rs_first_1, %{{.*}}] : memref<4x3xi32, #tpu.memory_space<hbm>> -> memref<1x3xi32, #tpu.memory_space<hbm>>
// CHECK:           tpu.dma_start %rs_acc_1, %rs_slot_2, %rs_send_sem_1, %rs_recv_sem_2, device = %right_b
// CHECK:         tpu.dma_start %rs_acc_1, %group_view_1, %rs_out_sem_1
// CHECK:         %group_view_2 = tpu.memref_slice %ar_out[%{{.*}}, %{{.*}}] : memref<8x3xi32, #tpu.memory_space<hbm>> -> memref<4x3xi32, #tpu.memory_space<hbm>>
// CHECK:           tpu.dma_start %ag_block, %ag_block, %ag_send_sem, %ag_recv_sem, device = %right_b : memref<1x3xi32, #tpu.memory_space<hbm>>
// CHECK:         %ag_recv_sems_1 = tpu.alloc : !tpu.dma_semaphore<1>
// CHECK:           tpu.dma_start %ag_block_1, %ag_block_1, %ag_send_sem_1, %ag_recv_sem_1, device = %left_a : memref<4x3xi32, #tpu.memory_space<hbm>>

// -----

// A 2-D torus all_reduce (two axes of one size): half the buffer is reduced over "a" then
// "b", the other half over "b" then "a", the two halves' rings in one loop, so every
// phase keeps the links of both axes busy.

spmd.mesh @m = <["a"=4, "b"=4]>
func.func @torus(%x: tensor<64xf32>) -> tensor<64xf32> attributes {spmd.per_device_io} {
  %r = collective.all_reduce add %x on @m["a", "b"] : tensor<64xf32>
  func.return %r : tensor<64xf32>
}

// CHECK-LABEL: func.func @torus(
// CHECK:         %ar_in = tpu.memref_reshape %x : memref<64xf32, #tpu.memory_space<hbm>> -> memref<32x2xf32, #tpu.memory_space<hbm>>
// CHECK:         %ar_in0 = tpu.memref_slice %ar_in
// CHECK:         %ar_in1 = tpu.memref_slice %ar_in
// CHECK:         scf.for %s
// CHECK:           tpu.dma_start %rs_acc, %{{.*}}, %rs_send_sem, %{{.*}}, device = %right_a
// CHECK:           tpu.dma_start %rs1_acc, %{{.*}}, %rs1_send_sem, %{{.*}}, device = %right_b
// CHECK:         }
// CHECK:         scf.for %s
// CHECK:           tpu.dma_start %rs_acc_1, %{{.*}}, %rs_send_sem_1, %{{.*}}, device = %right_b
// CHECK:           tpu.dma_start %rs1_acc_1, %{{.*}}, %rs1_send_sem_1, %{{.*}}, device = %right_a
// CHECK:         }
// CHECK:         scf.for %s
// CHECK:           tpu.dma_start %ag_block, %ag_block, %ag_send_sem, %ag_recv_sem, device = %right_b
// CHECK:           tpu.dma_start %ag1_block, %ag1_block, %ag1_send_sem, %ag1_recv_sem, device = %right_a
// CHECK:         }
// CHECK:         scf.for %s
// CHECK:           tpu.dma_start %ag_block_1, %ag_block_1, %ag_send_sem_1, %ag_recv_sem_1, device = %right_a
// CHECK:           tpu.dma_start %ag1_block_1, %ag1_block_1, %ag1_send_sem_1, %ag1_recv_sem_1, device = %right_b
// CHECK:         }

// -----

// On a ring with wraparound (v5p, 4 devices) the all_gather is bidirectional: the first
// half of every slot travels right, the second half left, both DMAs in flight at once.

spmd.mesh @ring = <["x"=4]>
func.func @bidirectional(%a: tensor<8x128xf32>) -> tensor<32x128xf32> attributes {spmd.per_device_io} {
  %r = collective.all_gather %a on @ring["x"], dim = 0 : (tensor<8x128xf32>) -> tensor<32x128xf32>
  func.return %r : tensor<32x128xf32>
}

// V5P-LABEL: func.func @bidirectional(
// V5P:         %ag_r_recv_sems = tpu.alloc : !tpu.dma_semaphore<3>
// V5P:         %ag_l_recv_sems = tpu.alloc : !tpu.dma_semaphore<3>
// V5P:         scf.for %s
// V5P:           %ag_r_block = tpu.memref_slice %out0[%{{.*}}, %{{.*}}] : memref<32x128xf32, #tpu.memory_space<hbm>> -> memref<4x128xf32, #tpu.memory_space<hbm>>
// V5P:           tpu.dma_start %ag_r_block, %ag_r_block, %ag_r_send_sem, %ag_r_recv_sem, device = %right_x
// V5P:           tpu.dma_start %ag_l_block, %ag_l_block, %ag_l_send_sem, %ag_l_recv_sem, device = %left_x
// V5P-NEXT:      tpu.dma_wait %ag_r_send_sem, %ag_r_block
// V5P-NEXT:      tpu.dma_wait %ag_r_recv_sem, %ag_r_incoming
// V5P-NEXT:      tpu.dma_wait %ag_l_send_sem, %ag_l_block
// V5P-NEXT:      tpu.dma_wait %ag_l_recv_sem, %ag_l_incoming
// V5P-NEXT:    }

// -----

// Bidirectional reduce_scatter (v5p, 4 devices): rows 0:4 of every chunk are reduced on the
// rightward ring, rows 4:8 on the leftward one, each with its own credits.

spmd.mesh @ring = <["x"=4]>
func.func @bidirectional_rs(%a: tensor<32x128xf32>) -> tensor<8x128xf32> attributes {spmd.per_device_io} {
  %r = collective.reduce_scatter add %a on @ring["x"], dim = 0 : (tensor<32x128xf32>) -> tensor<8x128xf32>
  func.return %r : tensor<8x128xf32>
}

// V5P-LABEL: func.func @bidirectional_rs(
// V5P:         %rs_r_recv_buf = tpu.alloc : memref<2x4x128xf32, #tpu.memory_space<vmem>>
// V5P:         tpu.sem_signal %rs_r_credits, %rs_slots, device = %left_x
// V5P:         %rs_l_recv_buf = tpu.alloc : memref<2x4x128xf32, #tpu.memory_space<vmem>>
// V5P:         tpu.sem_signal %rs_l_credits, %rs_slots, device = %right_x
// V5P:         tpu.dma_start %rs_r_first_block, %rs_r_slot, %rs_r_send_sem, %rs_r_recv_sem, device = %right_x
// V5P:         tpu.dma_start %rs_l_first_block, %rs_l_slot, %rs_l_send_sem, %rs_l_recv_sem, device = %left_x
// V5P:         scf.for %s
// V5P:           tpu.sem_wait %rs_r_credits, %one
// V5P-NEXT:      tpu.dma_start %rs_r_acc, %rs_r_slot_1, %rs_r_send_sem, %rs_r_recv_sem_1, device = %right_x
// V5P:           tpu.sem_wait %rs_l_credits, %one
// V5P-NEXT:      tpu.dma_start %rs_l_acc, %rs_l_slot_1, %rs_l_send_sem, %rs_l_recv_sem_1, device = %left_x
// V5P:           tpu.sem_signal %rs_r_credits, %one, device = %left_x
// V5P:           tpu.sem_signal %rs_l_credits, %one, device = %right_x
// V5P-NEXT:    }
// V5P-NEXT:    tpu.sem_wait %rs_r_credits, %rs_slots
// V5P:         tpu.sem_wait %rs_l_credits, %rs_slots
// V5P:         %rs_part = tpu.memref_slice %out0[%{{.*}}, %{{.*}}] : memref<8x128xf32, #tpu.memory_space<hbm>> -> memref<4x128xf32, #tpu.memory_space<hbm>>
// V5P:         tpu.dma_start %rs_r_acc, %rs_part, %rs_out_sem

// -----

// bf16 max: partials travel and accumulate in f32 (the own chunk widened), the result is
// rounded once on the way out, as level S.

spmd.mesh @ring = <["x"=4]>
func.func @bf16_max(%a: tensor<16x128xbf16>) -> tensor<4x128xbf16> attributes {spmd.per_device_io} {
  %r = collective.reduce_scatter max %a on @ring["x"], dim = 0 : (tensor<16x128xbf16>) -> tensor<4x128xbf16>
  func.return %r : tensor<4x128xbf16>
}

// CHECK-LABEL: func.func @bf16_max(
// CHECK:         %rs_recv_buf = tpu.alloc : memref<2x4x128xf32, #tpu.memory_space<vmem>>
// CHECK-NEXT:    %rs_mine = tpu.alloc : memref<4x128xbf16, #tpu.memory_space<vmem>>
// CHECK-NEXT:    %rs_acc = tpu.alloc : memref<4x128xf32, #tpu.memory_space<vmem>>
// CHECK:         %rs_first_low = tpu.load %rs_mine
// CHECK-NEXT:    %[[W:.*]] = arith.extf %rs_first_low : vector<4x128xbf16> to vector<4x128xf32>
// CHECK-NEXT:    tpu.store %[[W]], %rs_acc
// CHECK:         scf.for %s
// CHECK:           %[[O:.*]] = arith.extf %own_1 : vector<4x128xbf16> to vector<4x128xf32>
// CHECK-NEXT:      %max_1 = arith.maximumf %partial_1, %[[O]] : vector<4x128xf32>
// CHECK:         %rounded = arith.truncf %wide : vector<4x128xf32> to vector<4x128xbf16>
// CHECK:         tpu.dma_start %rs_rounded, %out0, %rs_out_sem

// -----

// Explicit groups: the rank and the peer come from the device id through selects.

spmd.mesh @m = <["x"=4]>
func.func @groups(%a: tensor<8x128xf32>) -> tensor<8x128xf32> attributes {spmd.per_device_io} {
  %r = collective.permute %a on groups [[0, 2], [1, 3]], shift = 1 : tensor<8x128xf32>
  func.return %r : tensor<8x128xf32>
}

// CHECK-LABEL: func.func @groups(
// CHECK:         %me_g0 = arith.select %{{.*}}, %{{.*}}, %{{.*}} : i32
// CHECK-NEXT:    %n_g0 = arith.constant 2 : i32
// CHECK:         %left_g0 = arith.select
// CHECK-NEXT:    tpu.barrier
// CHECK:         tpu.dma_start %a, %out0, %pm_send_sem, %pm_recv_sem, device = %left_g0

// CHIP: error: lower-to-tpu: unknown chip 'v99'
