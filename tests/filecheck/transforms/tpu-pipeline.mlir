// RUN: shardc-opt %s -p tpu-pipeline | filecheck %s
// RUN: shardc-opt %s -p tpu-pipeline > %t.pipeline
// RUN: shardc-opt %s -p spmd-pipeline,lower-to-tpu > %t.passes
// RUN: diff %t.pipeline %t.passes
// RUN: shardc-opt %s -p 'tpu-pipeline{chip=v5p}' > %t.v5p
// RUN: shardc-opt %s -p 'spmd-pipeline{chip=v5p},lower-to-tpu{chip=v5p}' > %t.v5p.passes
// RUN: diff %t.v5p %t.v5p.passes
// RUN: shardc-opt %s -p 'spmd-pipeline{chip=v5p},lower-to-tpu{chip=v5e}' > %t.v5p.v5e
// RUN: not diff %t.v5p %t.v5p.v5e > /dev/null
// RUN: shardc-opt %s -p 'tpu-pipeline{chip=v5p micro-batch=false}' | shardc-opt - > /dev/null
// RUN: shardc-opt %s -p tpu-pipeline | shardc-opt - > /dev/null
// RUN: shardc-opt %s -p 'tpu-pipeline{chip=v6e memory-limit=1000000 combine-threshold-bytes=0 micro-batch=false vmem-limit=100000}' | filecheck %s
// RUN: not shardc-opt %s -p 'tpu-pipeline{vmem-limit=1000}' 2>&1 | filecheck %s --check-prefix=VMEM
// RUN: not shardc-opt %s -p 'tpu-pipeline{vmem-limit=0}' 2>&1 | filecheck %s --check-prefix=BAD-VMEM
// RUN: not shardc-opt %s -p 'tpu-pipeline{chip=v9}' 2>&1 | filecheck %s --check-prefix=CHIP
// RUN: not shardc-opt %s -p 'tpu-pipeline{bogus=1}' 2>&1 | filecheck %s --check-prefix=OPTION

// `tpu-pipeline` = `spmd-pipeline` then `lower-to-tpu` for the same chip: level G in,
// one kernel per device out (resharding rows -> columns is an all_to_all, then exp, then
// the all_gather back to replicated). The kernel keeps `spmd.partitioned` and the
// shardings of its inputs and outputs, so a runner can split and assemble global arrays.

spmd.mesh @mesh = <["x"=4]>

func.func @main(%a: tensor<16x32xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"x"}, {}]>})
    -> (tensor<16x32xf32> {spmd.sharding = #spmd.sharding<@mesh, [{}, {}]>}) {
  %c = spmd.constraint %a <@mesh, [{}, {"x"}]> : tensor<16x32xf32>
  %e = hlo.exp %c : tensor<16x32xf32>
  %r = spmd.constraint %e <@mesh, [{}, {}]> : tensor<16x32xf32>
  func.return %r : tensor<16x32xf32>
}

// CHECK:       func.func @main(%a: memref<4x32xf32, #tpu.memory_space<hbm>> {spmd.sharding = #spmd.sharding<@mesh, [{"x"}, {}]>}, %out0: memref<16x32xf32, #tpu.memory_space<hbm>> {spmd.sharding = #spmd.sharding<@mesh, [{}, {}]>}, %scratch0: memref<16x8xf32, #tpu.memory_space<hbm>>, %scratch1: memref<16x8xf32, #tpu.memory_space<hbm>>) attributes {tpu.kernel, tpu.io = [1 : i64, 1 : i64, 2 : i64], spmd.partitioned} {
// CHECK:         tpu.barrier
// CHECK:         tpu.dma_start %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, device = %{{.*}} : memref<4x8xf32, #tpu.memory_space<hbm>>
// CHECK:         math.exp
// CHECK:         tpu.dma_start %{{.*}}, device = %{{.*}} : memref<16x8xf32, #tpu.memory_space<hbm>>
// CHECK:         func.return
// CHECK-NOT:     collective.
// CHECK-NOT:     hlo.

// The chip reaches lower-to-tpu: on v5p a 4-device axis has wraparound links, so its
// rings run both ways (the diffs above: v5p's kernel is not v5e's).

// VMEM:        error: 'hlo.exp' op lower-to-tpu: {{.*}} bytes of VMEM, more than the 1000 bytes available
// BAD-VMEM:    error: invalid pass pipeline: pass 'tpu-pipeline': option 'vmem-limit' must be a positive number of bytes, got 0
// CHIP:        error: invalid pass pipeline: pass 'tpu-pipeline': option 'chip' must be one of v4, v5e, v5p, v6e, got 'v9'
// OPTION:      error: invalid pass pipeline: unknown pass option 'bogus'
