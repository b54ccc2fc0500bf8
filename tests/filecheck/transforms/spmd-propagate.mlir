// RUN: shardc-opt %s -p 'spmd-propagate{explain=true}' --split-input-file | filecheck %s

// Forward through a dot (batch/free factors), a broadcast and elementwise ops; every op
// gets a sharding, and `explain` says where it came from.
spmd.mesh @mesh = <["data"=2, "model"=4]>
func.func @forward(%x: tensor<16x32xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"data"}, {}]>},
                   %w: tensor<32x128xf32> {spmd.sharding = #spmd.sharding<@mesh, [{}, {"model"}]>},
                   %b: tensor<128xf32>)
    -> tensor<16x128xf32> {
  %h = hlo.dot %x, %w, contracting_dims = [1] x [0] : (tensor<16x32xf32>, tensor<32x128xf32>) -> tensor<16x128xf32>
  %bb = hlo.broadcast %b, dims = [1] : (tensor<128xf32>) -> tensor<16x128xf32>
  %s = hlo.add %h, %bb : tensor<16x128xf32>
  %t = hlo.transpose %s, dims = [1, 0] : (tensor<16x128xf32>) -> tensor<128x16xf32>
  %u = hlo.transpose %t, dims = [1, 0] : (tensor<128x16xf32>) -> tensor<16x128xf32>
  func.return %u : tensor<16x128xf32>
}
// CHECK-LABEL: func.func @forward
// CHECK-SAME:  %b: tensor<128xf32> {spmd.sharding = #spmd.sharding<@mesh, [{}]>}
// CHECK-SAME:  -> (tensor<16x128xf32> {spmd.sharding = #spmd.sharding<@mesh, [{}, {}]>})
// CHECK:       %h = hlo.dot {{.*}} {spmd.sharding = #spmd.sharding<@mesh, [{"data"}, {"model"}]>, spmd.origin = "forward through hlo.dot from %w (argument 1), %x (argument 0)"}
// The broadcast's new dimension is open: its consumer splits it (no slicing needed later).
// CHECK:       %bb = hlo.broadcast {{.*}} {spmd.sharding = #spmd.sharding<@mesh, [{"data"}, {}]>, spmd.origin = "backward through hlo.add from %h (hlo.dot)"}
// CHECK:       %s = hlo.add {{.*}} {spmd.sharding = #spmd.sharding<@mesh, [{"data"}, {"model"}]>, spmd.origin = "forward through hlo.add from %h (hlo.dot)"}
// CHECK:       %t = hlo.transpose {{.*}} {spmd.sharding = #spmd.sharding<@mesh, [{"model"}, {"data"}]>
// The returned value is pinned by the (missing, so replicated) result annotation.
// CHECK:       %u = hlo.transpose {{.*}} {spmd.sharding = #spmd.sharding<@mesh, [{}, {}]>, spmd.origin = "result 0: unannotated, replicated"}

// -----

// Backward from a result annotation and a constraint to values no argument reaches.
spmd.mesh @mesh = <["x"=4]>
func.func @backward(%a: tensor<8x4xf32>) -> (tensor<8x4xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"x"}, {}]>}) {
  %i = hlo.iota dim = 0 : tensor<8x4xf32>
  %c = hlo.constant dense<2.0> : tensor<8x4xf32>
  %m = hlo.mul %i, %c : tensor<8x4xf32>
  %k = spmd.constraint %m <@mesh, [{}, {"x"}]> : tensor<8x4xf32>
  %r = hlo.exp %k : tensor<8x4xf32>
  func.return %r : tensor<8x4xf32>
}
// CHECK-LABEL: func.func @backward
// CHECK:       %i = hlo.iota {{.*}} {spmd.sharding = #spmd.sharding<@mesh, [{}, {"x"}]>, spmd.origin = "backward through hlo.mul from %m (hlo.mul)"}
// CHECK:       %m = hlo.mul {{.*}} {spmd.sharding = #spmd.sharding<@mesh, [{}, {"x"}]>, spmd.origin = "backward through spmd.constraint from %k (spmd.constraint)"}
// CHECK:       %k = spmd.constraint %m <@mesh, [{}, {"x"}]> {spmd.sharding = #spmd.sharding<@mesh, [{}, {"x"}]>, spmd.origin = "spmd.constraint"}
// CHECK:       %r = hlo.exp {{.*}} {spmd.sharding = #spmd.sharding<@mesh, [{"x"}, {}]>, spmd.origin = "result 0 annotation"}

// -----

// A conflict: the bigger operand's sharding wins; an axis goes to one factor only.
spmd.mesh @mesh = <["x"=2]>
func.func @conflict(%big: tensor<8x64xf32> {spmd.sharding = #spmd.sharding<@mesh, [{}, {"x"}]>},
                    %small: tensor<8x1xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"x"}, {}]>}) -> tensor<8x64xf32> {
  %bs = hlo.broadcast %small, dims = [0, 1] : (tensor<8x1xf32>) -> tensor<8x64xf32>
  %s = hlo.add %bs, %big : tensor<8x64xf32>
  %e = hlo.exp %s : tensor<8x64xf32>
  func.return %e : tensor<8x64xf32>
}
// CHECK-LABEL: func.func @conflict
// CHECK:       %bs = hlo.broadcast {{.*}} {spmd.sharding = #spmd.sharding<@mesh, [{"x"}, {}]>
// CHECK:       %s = hlo.add {{.*}} {spmd.sharding = #spmd.sharding<@mesh, [{}, {"x"}]>, spmd.origin = "forward through hlo.add from %big (argument 0)"}

