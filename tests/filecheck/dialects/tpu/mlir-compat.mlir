// REQUIRES: mlir-opt-19

// The generic form of tpu programs is valid MLIR: real MLIR parses every ops.mlir module
// and the ring kernel (unregistered dialects allowed; memory spaces are builtin strings
// there, semaphores dialect types outside memrefs), and what it prints back is read by
// shardc-opt again, with the #tpu.memory_space attributes restored.

// RUN: shardc-opt %S/ops.mlir --print-op-generic --split-input-file | mlir-opt-19 --allow-unregistered-dialect --split-input-file | shardc-opt --split-input-file | filecheck %s --check-prefix=OPS
// RUN: shardc-opt %S/ring_all_gather.mlir --print-op-generic | mlir-opt-19 --allow-unregistered-dialect | shardc-opt | filecheck %s --check-prefix=RING

// OPS: func.func @memory(%{{.*}}: memref<4x16x128xf32, #tpu.memory_space<hbm>>, %{{.*}}: index) {
// OPS: tpu.alloc : memref<16xi32, #tpu.memory_space<smem>>
// OPS: tpu.alloc : !tpu.dma_semaphore<7>
// OPS: tpu.alloc : !tpu.semaphore<2x3>
// OPS: tpu.memref_slice %{{.*}}[%{{.*}}] : !tpu.dma_semaphore<7> -> !tpu.dma_semaphore
// OPS: tpu.memref_reshape %{{.*}} : memref<4x16x128xf32, #tpu.memory_space<hbm>> -> memref<8192xf32, #tpu.memory_space<hbm>>
// OPS: func.func @dma(
// OPS: tpu.dma_start %{{.*}}, %{{.*}}, %{{.*}} : memref<8x128xf32, #tpu.memory_space<hbm>> to memref<8x128xf32, #tpu.memory_space<vmem>>
// OPS: tpu.dma_start %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, device = %{{.*}} : memref<8x128xf32, #tpu.memory_space<vmem>> to memref<8x128xf32, #tpu.memory_space<hbm>>
// OPS: func.func @sync(
// OPS: tpu.sem_signal %{{.*}}, %{{.*}}, device = %{{.*}}
// OPS: tpu.barrier on groups {{\[\[}}0, 1, 2, 3], [4, 5, 6, 7]]
// OPS: func.func @compute(
// OPS: tpu.matmul %{{.*}}, %{{.*}}, %{{.*}} : vector<8x128xbf16>, vector<128x256xbf16> -> vector<8x256xf32>
// OPS: tpu.reduce mul %{{.*}}, %{{.*}}, dims = [0, 1] : vector<8x128xf32> -> vector<f32>
// OPS: tpu.iota dim = 1 : vector<8x128xi32>

// RING: func.func @ring_all_gather(%{{.*}}: memref<8x128xf32, #tpu.memory_space<hbm>>, %{{.*}}: memref<4x8x128xf32, #tpu.memory_space<hbm>>) {
// RING: tpu.barrier on @ring["x"]
// RING: tpu.dma_start %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, device = %{{.*}} : memref<8x128xf32, #tpu.memory_space<hbm>> to memref<8x128xf32, #tpu.memory_space<hbm>>
