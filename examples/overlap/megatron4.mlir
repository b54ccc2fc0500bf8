// The Megatron MLP stacked 4 layers deep on a 2x4 mesh (bench/overlap.py "megatron4 large"):
// spmd-pipeline micro-batches it so each chunk's all_reduce hides behind the next chunk's
// matmuls. megatron4_trace.json (ui.perfetto.dev) and megatron4_timeline.png beside it show it.
spmd.mesh @mesh = <["data"=2, "model"=4]>
func.func @main(%x: tensor<8192x4096xbf16> {spmd.sharding = #spmd.sharding<@mesh, [{"data"}, {}]>}, %a0: tensor<4096x16384xbf16> {spmd.sharding = #spmd.sharding<@mesh, [{}, {"model"}]>}, %b0: tensor<16384x4096xbf16> {spmd.sharding = #spmd.sharding<@mesh, [{"model"}, {}]>}, %a1: tensor<4096x16384xbf16> {spmd.sharding = #spmd.sharding<@mesh, [{}, {"model"}]>}, %b1: tensor<16384x4096xbf16> {spmd.sharding = #spmd.sharding<@mesh, [{"model"}, {}]>}, %a2: tensor<4096x16384xbf16> {spmd.sharding = #spmd.sharding<@mesh, [{}, {"model"}]>}, %b2: tensor<16384x4096xbf16> {spmd.sharding = #spmd.sharding<@mesh, [{"model"}, {}]>}, %a3: tensor<4096x16384xbf16> {spmd.sharding = #spmd.sharding<@mesh, [{}, {"model"}]>}, %b3: tensor<16384x4096xbf16> {spmd.sharding = #spmd.sharding<@mesh, [{"model"}, {}]>}) -> (tensor<8192x4096xbf16> {spmd.sharding = #spmd.sharding<@mesh, [{"data"}, {}]>}) {
  %h0 = hlo.dot %x, %a0, contracting_dims = [1] x [0] : (tensor<8192x4096xbf16>, tensor<4096x16384xbf16>) -> tensor<8192x16384xbf16>
  %r0 = hlo.tanh %h0 : tensor<8192x16384xbf16>
  %y0 = hlo.dot %r0, %b0, contracting_dims = [1] x [0] : (tensor<8192x16384xbf16>, tensor<16384x4096xbf16>) -> tensor<8192x4096xbf16>
  %h1 = hlo.dot %y0, %a1, contracting_dims = [1] x [0] : (tensor<8192x4096xbf16>, tensor<4096x16384xbf16>) -> tensor<8192x16384xbf16>
  %r1 = hlo.tanh %h1 : tensor<8192x16384xbf16>
  %y1 = hlo.dot %r1, %b1, contracting_dims = [1] x [0] : (tensor<8192x16384xbf16>, tensor<16384x4096xbf16>) -> tensor<8192x4096xbf16>
  %h2 = hlo.dot %y1, %a2, contracting_dims = [1] x [0] : (tensor<8192x4096xbf16>, tensor<4096x16384xbf16>) -> tensor<8192x16384xbf16>
  %r2 = hlo.tanh %h2 : tensor<8192x16384xbf16>
  %y2 = hlo.dot %r2, %b2, contracting_dims = [1] x [0] : (tensor<8192x16384xbf16>, tensor<16384x4096xbf16>) -> tensor<8192x4096xbf16>
  %h3 = hlo.dot %y2, %a3, contracting_dims = [1] x [0] : (tensor<8192x4096xbf16>, tensor<4096x16384xbf16>) -> tensor<8192x16384xbf16>
  %r3 = hlo.tanh %h3 : tensor<8192x16384xbf16>
  %y3 = hlo.dot %r3, %b3, contracting_dims = [1] x [0] : (tensor<8192x16384xbf16>, tensor<16384x4096xbf16>) -> tensor<8192x4096xbf16>
  func.return %y3 : tensor<8192x4096xbf16>
}
