// RUN: shardc-opt %s -p schedule --split-input-file | filecheck %s
// RUN: shardc-opt %s -p 'schedule{max-in-flight=1}' --split-input-file | filecheck %s --check-prefix=ONE
// RUN: not shardc-opt %s -p 'schedule{memory-limit=100}' --split-input-file 2>&1 | filecheck %s --check-prefix=LIMIT
// RUN: not shardc-opt %s -p 'schedule{chip=v9}' 2>&1 | filecheck %s --check-prefix=CHIP
// RUN: not shardc-opt %s -p 'schedule{memory-limit=-5}' 2>&1 | filecheck %s --check-prefix=NEG

// LIMIT: error: schedule: memory-limit=100 is below this program's minimum of 8388608 bytes
// CHIP: error: schedule: unknown chip 'v9' (known: v4, v5e, v5p, v6e)
// NEG: error: schedule: memory-limit must be positive, got -5

// Gradient all_reduces start as soon as their operand exists and finish as late as their
// users allow; the independent matmuls run in between.
spmd.mesh @dp = <["data"=8]>
func.func @main(%x: tensor<512x1024xbf16>, %w0: tensor<1024x1024xbf16>, %w1: tensor<1024x1024xbf16>) -> (tensor<512x1024xbf16>, tensor<1024x1024xbf16>, tensor<1024x1024xbf16>) attributes {spmd.partitioned} {
  %g0 = hlo.dot %x, %w0, contracting_dims = [1] x [0] : (tensor<512x1024xbf16>, tensor<1024x1024xbf16>) -> tensor<512x1024xbf16>
  %d0 = hlo.dot %x, %g0, contracting_dims = [0] x [0] : (tensor<512x1024xbf16>, tensor<512x1024xbf16>) -> tensor<1024x1024xbf16>
  %f0 = collective.all_reduce_start add %d0 on @dp["data"] : tensor<1024x1024xbf16> -> !collective.future<tensor<1024x1024xbf16>>
  %r0 = collective.done %f0 : !collective.future<tensor<1024x1024xbf16>> -> tensor<1024x1024xbf16>
  %g1 = hlo.dot %g0, %w1, contracting_dims = [1] x [0] : (tensor<512x1024xbf16>, tensor<1024x1024xbf16>) -> tensor<512x1024xbf16>
  %d1 = hlo.dot %x, %g1, contracting_dims = [0] x [0] : (tensor<512x1024xbf16>, tensor<512x1024xbf16>) -> tensor<1024x1024xbf16>
  %f1 = collective.all_reduce_start add %d1 on @dp["data"] : tensor<1024x1024xbf16> -> !collective.future<tensor<1024x1024xbf16>>
  %r1 = collective.done %f1 : !collective.future<tensor<1024x1024xbf16>> -> tensor<1024x1024xbf16>
  %g2 = hlo.tanh %g1 : tensor<512x1024xbf16>
  func.return %g2, %r0, %r1 : tensor<512x1024xbf16>, tensor<1024x1024xbf16>, tensor<1024x1024xbf16>
}
// CHECK:      %g0 = hlo.dot
// CHECK-NEXT: %d0 = hlo.dot
// CHECK-NEXT: %f0 = collective.all_reduce_start
// CHECK-NEXT: %g1 = hlo.dot
// CHECK-NEXT: %d1 = hlo.dot
// CHECK-NEXT: %f1 = collective.all_reduce_start
// CHECK-NEXT: %g2 = hlo.tanh
// CHECK-NEXT: %r0 = collective.done %f0
// CHECK-NEXT: %r1 = collective.done %f1
// CHECK-NEXT: func.return
// With one collective in flight, the second starts only after the first is done; the
// all_reduces take longer than the matmuls here, so the compute goes first.
// ONE:      %f0 = collective.all_reduce_start
// ONE-NEXT: %g1 = hlo.dot
// ONE-NEXT: %d1 = hlo.dot
// ONE-NEXT: %g2 = hlo.tanh
// ONE-NEXT: %r0 = collective.done %f0
// ONE-NEXT: %f1 = collective.all_reduce_start
// ONE-NEXT: %r1 = collective.done %f1
