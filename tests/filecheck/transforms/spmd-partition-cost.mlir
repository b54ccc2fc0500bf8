// RUN: shardc-opt %s -p 'spmd-propagate,spmd-partition,canonicalize,cse' --split-input-file | filecheck %s
// RUN: shardc-opt %s -p 'spmd-propagate,spmd-partition{cost-based=false},canonicalize,cse' --split-input-file | filecheck %s --check-prefix=OLD
// RUN: shardc-opt %s -p 'spmd-propagate,spmd-partition{explain=true chip=v5e}' --split-input-file 2>&1 >/dev/null | filecheck %s --check-prefix=EXPLAIN
// RUN: not shardc-opt %s -p 'spmd-partition{chip=v9}' 2>&1 | filecheck %s --check-prefix=BADCHIP

// The issue's example at real size (bf16, 2x4 v5e): A[B_X, D_Y] x W[D, F_Y] -> O[B_X, F_Y].
// Keeping A's contracting split costs an all_to_all of W and a reduce_scatter of the
// result (441 us); all-gathering A over Y (XLA, the scaling book) takes 57 us.
spmd.mesh @mesh = <["X"=2, "Y"=4]>
func.func @issue(%a: tensor<1024x2048xbf16> {spmd.sharding = #spmd.sharding<@mesh, [{"X"}, {"Y"}]>},
                 %w: tensor<2048x8192xbf16> {spmd.sharding = #spmd.sharding<@mesh, [{}, {"Y"}]>})
    -> (tensor<1024x8192xbf16> {spmd.sharding = #spmd.sharding<@mesh, [{"X"}, {"Y"}]>}) {
  %o = hlo.dot %a, %w, contracting_dims = [1] x [0] : (tensor<1024x2048xbf16>, tensor<2048x8192xbf16>) -> tensor<1024x8192xbf16>
  func.return %o : tensor<1024x8192xbf16>
}
// CHECK-LABEL: func.func @issue
// CHECK-NEXT:    %0 = collective.all_gather %a on @mesh["Y"], dim = 1 : (tensor<512x512xbf16>) -> tensor<512x2048xbf16>
// CHECK-NEXT:    %o = hlo.dot %0, %w, contracting_dims = [1] x [0] : (tensor<512x2048xbf16>, tensor<2048x2048xbf16>) -> tensor<512x2048xbf16>
// CHECK-NEXT:    func.return %o
// OLD-LABEL:   func.func @issue
// OLD-NEXT:      collective.all_to_all %w on @mesh["Y"], split_dim = 0, concat_dim = 1
// OLD-NEXT:      hlo.dot
// OLD-NEXT:      collective.reduce_scatter add {{.*}} on @mesh["Y"], dim = 1
// EXPLAIN: spmd-partition-cost.mlir:13:3: spmd-partition: hlo.dot: all-gather lhs over "Y" ({{[0-9.]+}} us) chosen over all-to-all rhs over "Y" + reduce-scatter result over "Y" ({{[0-9.]+}} us), all-gather lhs over "X", "Y" + all-gather rhs over "Y" ({{[0-9.]+}} us)

// -----

// The same in f32: the same choice (twice the bytes on every side).
spmd.mesh @mesh = <["X"=2, "Y"=4]>
func.func @issue_f32(%a: tensor<1024x2048xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"X"}, {"Y"}]>},
                     %w: tensor<2048x8192xf32> {spmd.sharding = #spmd.sharding<@mesh, [{}, {"Y"}]>})
    -> (tensor<1024x8192xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"X"}, {"Y"}]>}) {
  %o = hlo.dot %a, %w, contracting_dims = [1] x [0] : (tensor<1024x2048xf32>, tensor<2048x8192xf32>) -> tensor<1024x8192xf32>
  func.return %o : tensor<1024x8192xf32>
}
// CHECK-LABEL: func.func @issue_f32
// CHECK-NEXT:    collective.all_gather %a on @mesh["Y"], dim = 1
// CHECK-NEXT:    hlo.dot
// CHECK-NEXT:    func.return
// OLD-LABEL:   func.func @issue_f32
// OLD-NEXT:      collective.all_to_all
// EXPLAIN: spmd-partition-cost.mlir:33:3: spmd-partition: hlo.dot: all-gather lhs over "Y" ({{.*}} us) chosen over all-to-all rhs over "Y" + reduce-scatter result over "Y"

// -----

// Megatron's row-parallel dot: both operands split along the contracting dimension and the
// result wanted whole: keeping the split and all-reducing the (small) result is cheapest,
// as before.
spmd.mesh @mesh = <["data"=2, "model"=4]>
func.func @row_parallel(%h: tensor<2048x16384xbf16> {spmd.sharding = #spmd.sharding<@mesh, [{"data"}, {"model"}]>},
                        %w: tensor<16384x4096xbf16> {spmd.sharding = #spmd.sharding<@mesh, [{"model"}, {}]>})
    -> (tensor<2048x4096xbf16> {spmd.sharding = #spmd.sharding<@mesh, [{"data"}, {}]>}) {
  %y = hlo.dot %h, %w, contracting_dims = [1] x [0] : (tensor<2048x16384xbf16>, tensor<16384x4096xbf16>) -> tensor<2048x4096xbf16>
  func.return %y : tensor<2048x4096xbf16>
}
// CHECK-LABEL: func.func @row_parallel
// CHECK-NEXT:    %y = hlo.dot %h, %w
// CHECK-NEXT:    %y_1 = collective.all_reduce add %y on @mesh["model"]
// CHECK-NEXT:    func.return %y_1
// EXPLAIN: spmd-partition-cost.mlir:53:3: spmd-partition: hlo.dot: all-reduce result over "model" ({{.*}} us) chosen over

// -----

// A small contracting-sharded matmul feeding a column-sharded result, latency-bound on a
// v5e line of 4: gathering lhs and all_to_all'ing rhs (the all_to_all's DMAs fly while the
// gather's ring runs: 5.09 us) beats the reduce_scatter (its credits: 6.05 us); level T
// agrees (5.09 vs 6.06 us).
spmd.mesh @mesh = <["y"=4]>
func.func @rs(%a: tensor<16x32xf32> {spmd.sharding = #spmd.sharding<@mesh, [{}, {"y"}]>},
              %b: tensor<32x64xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"y"}, {}]>})
    -> (tensor<16x64xf32> {spmd.sharding = #spmd.sharding<@mesh, [{}, {"y"}]>}) {
  %c = hlo.dot %a, %b, contracting_dims = [1] x [0] : (tensor<16x32xf32>, tensor<32x64xf32>) -> tensor<16x64xf32>
  func.return %c : tensor<16x64xf32>
}
// CHECK-LABEL: func.func @rs
// CHECK-NEXT:    %0 = collective.all_gather %a on @mesh["y"], dim = 1
// CHECK-NEXT:    %1 = collective.all_to_all %b on @mesh["y"], split_dim = 1, concat_dim = 0
// CHECK-NEXT:    %c = hlo.dot %0, %1
// EXPLAIN: spmd-partition-cost.mlir:72:3: spmd-partition: hlo.dot: all-gather lhs over "y" + all-to-all rhs over "y" ({{.*}} us) chosen over reduce-scatter result over "y"

// BADCHIP: option 'chip' must be one of
