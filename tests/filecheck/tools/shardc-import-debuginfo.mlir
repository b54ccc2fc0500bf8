// shardc-import keeps JAX's debug locations: each op's location is its place in the
// file read, fused with the loc(...) JAX wrote for it (aliases resolved, a range read as
// its start); they print with --print-debuginfo only.

// RUN: shardc-import %s --print-debuginfo | filecheck %s
// RUN: shardc-import %s | filecheck %s --check-prefix=PLAIN

#loc1 = loc("x")
module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<4xf32> loc("x")) -> (tensor<4xf32> {jax.result_info = "result"}) {
    %0 = stablehlo.tanh %arg0 : tensor<4xf32> loc(#loc4)
    %1 = stablehlo.log_plus_one %0 : tensor<4xf32> loc(#loc5)
    return %1 : tensor<4xf32> loc(#loc)
  } loc(#loc)
} loc(#loc)
#loc = loc(unknown)
#loc2 = loc("/home/me/model.py":12:3 to :20)
#loc3 = loc("f"(#loc2))
#loc4 = loc("jit(f)/tanh"(#loc3))
#loc5 = loc("jit(f)/log1p"(callsite(#loc3 at "/home/me/model.py":30:1)))

// CHECK:      hlo.tanh %{{.*}} : tensor<4xf32> loc(fused["{{.*}}shardc-import-debuginfo.mlir":11:5, "jit(f)/tanh"("f"("/home/me/model.py":12:3))])
// CHECK:      hlo.log1p {{.*}} loc(fused["{{.*}}shardc-import-debuginfo.mlir":12:5, "jit(f)/log1p"(callsite("f"("/home/me/model.py":12:3) at "/home/me/model.py":30:1))])
// CHECK:      func.return {{.*}} loc("{{.*}}shardc-import-debuginfo.mlir":10:3)
// CHECK:      } loc("{{.*}}shardc-import-debuginfo.mlir":10:3)

// PLAIN-NOT:  loc(
