// RUN: SHARDC_ROUNDTRIP
// RUN: SHARDC_GENERIC_ROUNDTRIP

// Every op and type of the tpu dialect (DESIGN.md, "Level T"), in its custom syntax.

spmd.mesh @mesh = <["data"=2, "model"=4]>

func.func @memory(%hbm: memref<4x16x128xf32, #tpu.memory_space<hbm>>, %i: index) {
  %c0 = arith.constant 0 : index
  %vmem = tpu.alloc : memref<2x8x128xf32, #tpu.memory_space<vmem>>
  %smem = tpu.alloc : memref<16xi32, #tpu.memory_space<smem>>
  %bf = tpu.alloc : memref<8x128xbf16, #tpu.memory_space<vmem>>
  %sem = tpu.alloc : !tpu.semaphore
  %dma = tpu.alloc : !tpu.dma_semaphore
  %sems = tpu.alloc : !tpu.dma_semaphore<7>
  %grid = tpu.alloc : !tpu.semaphore<2x3>
  %blk = tpu.memref_slice %hbm[%i, %c0, %c0] : memref<4x16x128xf32, #tpu.memory_space<hbm>> -> memref<8x128xf32, #tpu.memory_space<hbm>>
  %rows = tpu.memref_slice %hbm[%i, %c0, %c0] : memref<4x16x128xf32, #tpu.memory_space<hbm>> -> memref<2x16x128xf32, #tpu.memory_space<hbm>>
  %one = tpu.memref_slice %sems[%i] : !tpu.dma_semaphore<7> -> !tpu.dma_semaphore
  %row = tpu.memref_slice %grid[%i, %c0] : !tpu.semaphore<2x3> -> !tpu.semaphore<3>
  %flat = tpu.memref_reshape %hbm : memref<4x16x128xf32, #tpu.memory_space<hbm>> -> memref<8192xf32, #tpu.memory_space<hbm>>
  %bytes = tpu.memref_bitcast %hbm : memref<4x16x128xf32, #tpu.memory_space<hbm>> -> memref<4x16x128x4xui8, #tpu.memory_space<hbm>>
  tpu.dealloc %bf : memref<8x128xbf16, #tpu.memory_space<vmem>>
  tpu.dealloc %grid : !tpu.semaphore<2x3>
  func.return
}

// CHECK:      func.func @memory(%hbm: memref<4x16x128xf32, #tpu.memory_space<hbm>>, %i: index) {
// CHECK-NEXT:   %c0 = arith.constant 0 : index
// CHECK-NEXT:   %vmem = tpu.alloc : memref<2x8x128xf32, #tpu.memory_space<vmem>>
// CHECK-NEXT:   %smem = tpu.alloc : memref<16xi32, #tpu.memory_space<smem>>
// CHECK-NEXT:   %bf = tpu.alloc : memref<8x128xbf16, #tpu.memory_space<vmem>>
// CHECK-NEXT:   %sem = tpu.alloc : !tpu.semaphore
// CHECK-NEXT:   %dma = tpu.alloc : !tpu.dma_semaphore
// CHECK-NEXT:   %sems = tpu.alloc : !tpu.dma_semaphore<7>
// CHECK-NEXT:   %grid = tpu.alloc : !tpu.semaphore<2x3>
// CHECK-NEXT:   %blk = tpu.memref_slice %hbm[%i, %c0, %c0] : memref<4x16x128xf32, #tpu.memory_space<hbm>> -> memref<8x128xf32, #tpu.memory_space<hbm>>
// CHECK-NEXT:   %rows = tpu.memref_slice %hbm[%i, %c0, %c0] : memref<4x16x128xf32, #tpu.memory_space<hbm>> -> memref<2x16x128xf32, #tpu.memory_space<hbm>>
// CHECK-NEXT:   %one = tpu.memref_slice %sems[%i] : !tpu.dma_semaphore<7> -> !tpu.dma_semaphore
// CHECK-NEXT:   %row = tpu.memref_slice %grid[%i, %c0] : !tpu.semaphore<2x3> -> !tpu.semaphore<3>
// CHECK-NEXT:   %flat = tpu.memref_reshape %hbm : memref<4x16x128xf32, #tpu.memory_space<hbm>> -> memref<8192xf32, #tpu.memory_space<hbm>>
// CHECK-NEXT:   %bytes = tpu.memref_bitcast %hbm : memref<4x16x128xf32, #tpu.memory_space<hbm>> -> memref<4x16x128x4xui8, #tpu.memory_space<hbm>>
// CHECK-NEXT:   tpu.dealloc %bf : memref<8x128xbf16, #tpu.memory_space<vmem>>
// CHECK-NEXT:   tpu.dealloc %grid : !tpu.semaphore<2x3>
// CHECK-NEXT:   func.return

// The generic form spells memory spaces as builtin strings (valid MLIR, see tpu.py).
// CHECK-GENERIC:      ^bb0(%hbm: memref<4x16x128xf32, "hbm">, %i: index):
// CHECK-GENERIC:      %vmem = "tpu.alloc"() : () -> memref<2x8x128xf32, "vmem">
// CHECK-GENERIC:      %smem = "tpu.alloc"() : () -> memref<16xi32, "smem">
// CHECK-GENERIC:      %sems = "tpu.alloc"() : () -> !tpu.dma_semaphore<7>
// CHECK-GENERIC:      %blk = "tpu.memref_slice"(%hbm, %i, %c0, %c0) : (memref<4x16x128xf32, "hbm">, index, index, index) -> memref<8x128xf32, "hbm">
// CHECK-GENERIC:      %one = "tpu.memref_slice"(%sems, %i) : (!tpu.dma_semaphore<7>, index) -> !tpu.dma_semaphore
// CHECK-GENERIC:      %flat = "tpu.memref_reshape"(%hbm) : (memref<4x16x128xf32, "hbm">) -> memref<8192xf32, "hbm">
// CHECK-GENERIC:      %bytes = "tpu.memref_bitcast"(%hbm) : (memref<4x16x128xf32, "hbm">) -> memref<4x16x128x4xui8, "hbm">
// CHECK-GENERIC:      "tpu.dealloc"(%grid) : (!tpu.semaphore<2x3>) -> ()

// -----

spmd.mesh @mesh = <["data"=2, "model"=4]>

func.func @dma(%hbm: memref<8x128xf32, #tpu.memory_space<hbm>>, %out: memref<8x128xf32, #tpu.memory_space<hbm>>, %dev: i32) {
  %vmem = tpu.alloc : memref<8x128xf32, #tpu.memory_space<vmem>>
  %smem = tpu.alloc : memref<8x128xf32, #tpu.memory_space<smem>>
  %send = tpu.alloc : !tpu.dma_semaphore
  %recv = tpu.alloc : !tpu.dma_semaphore
  tpu.dma_start %hbm, %vmem, %recv : memref<8x128xf32, #tpu.memory_space<hbm>> to memref<8x128xf32, #tpu.memory_space<vmem>>
  tpu.dma_wait %recv, %vmem : memref<8x128xf32, #tpu.memory_space<vmem>>
  tpu.dma_start %vmem, %smem, %send, %recv : memref<8x128xf32, #tpu.memory_space<vmem>> to memref<8x128xf32, #tpu.memory_space<smem>>
  tpu.dma_wait %send, %vmem : memref<8x128xf32, #tpu.memory_space<vmem>>
  tpu.dma_wait %recv, %smem : memref<8x128xf32, #tpu.memory_space<smem>>
  tpu.dma_start %vmem, %out, %send, %recv, device = %dev : memref<8x128xf32, #tpu.memory_space<vmem>> to memref<8x128xf32, #tpu.memory_space<hbm>>
  tpu.dma_wait %send, %vmem : memref<8x128xf32, #tpu.memory_space<vmem>>
  tpu.dma_wait %recv, %out : memref<8x128xf32, #tpu.memory_space<hbm>>
  tpu.dma_start %hbm, %out, %send, %recv, device = %dev {note = "hbm to remote hbm"} : memref<8x128xf32, #tpu.memory_space<hbm>> to memref<8x128xf32, #tpu.memory_space<hbm>>
  tpu.dma_wait %send, %hbm {note = "sent"} : memref<8x128xf32, #tpu.memory_space<hbm>>
  tpu.dma_wait %recv, %out : memref<8x128xf32, #tpu.memory_space<hbm>>
  func.return
}

// CHECK:      func.func @dma(
// CHECK-NEXT:   %vmem = tpu.alloc : memref<8x128xf32, #tpu.memory_space<vmem>>
// CHECK-NEXT:   %smem = tpu.alloc : memref<8x128xf32, #tpu.memory_space<smem>>
// CHECK-NEXT:   %send = tpu.alloc : !tpu.dma_semaphore
// CHECK-NEXT:   %recv = tpu.alloc : !tpu.dma_semaphore
// CHECK-NEXT:   tpu.dma_start %hbm, %vmem, %recv : memref<8x128xf32, #tpu.memory_space<hbm>> to memref<8x128xf32, #tpu.memory_space<vmem>>
// CHECK-NEXT:   tpu.dma_wait %recv, %vmem : memref<8x128xf32, #tpu.memory_space<vmem>>
// CHECK-NEXT:   tpu.dma_start %vmem, %smem, %send, %recv : memref<8x128xf32, #tpu.memory_space<vmem>> to memref<8x128xf32, #tpu.memory_space<smem>>
// CHECK-NEXT:   tpu.dma_wait %send, %vmem : memref<8x128xf32, #tpu.memory_space<vmem>>
// CHECK-NEXT:   tpu.dma_wait %recv, %smem : memref<8x128xf32, #tpu.memory_space<smem>>
// CHECK-NEXT:   tpu.dma_start %vmem, %out, %send, %recv, device = %dev : memref<8x128xf32, #tpu.memory_space<vmem>> to memref<8x128xf32, #tpu.memory_space<hbm>>
// CHECK-NEXT:   tpu.dma_wait %send, %vmem : memref<8x128xf32, #tpu.memory_space<vmem>>
// CHECK-NEXT:   tpu.dma_wait %recv, %out : memref<8x128xf32, #tpu.memory_space<hbm>>
// CHECK-NEXT:   tpu.dma_start %hbm, %out, %send, %recv, device = %dev {note = "hbm to remote hbm"} : memref<8x128xf32, #tpu.memory_space<hbm>> to memref<8x128xf32, #tpu.memory_space<hbm>>
// CHECK-NEXT:   tpu.dma_wait %send, %hbm {note = "sent"} : memref<8x128xf32, #tpu.memory_space<hbm>>
// CHECK-NEXT:   tpu.dma_wait %recv, %out : memref<8x128xf32, #tpu.memory_space<hbm>>
// CHECK-NEXT:   func.return

// CHECK-GENERIC: "tpu.dma_start"(%hbm, %vmem, %recv) <{operandSegmentSizes = array<i32: 1, 1, 0, 1, 0>}> : (memref<8x128xf32, "hbm">, memref<8x128xf32, "vmem">, !tpu.dma_semaphore) -> ()
// CHECK-GENERIC: "tpu.dma_wait"(%recv, %vmem) : (!tpu.dma_semaphore, memref<8x128xf32, "vmem">) -> ()
// CHECK-GENERIC: "tpu.dma_start"(%vmem, %smem, %send, %recv) <{operandSegmentSizes = array<i32: 1, 1, 1, 1, 0>}> : (memref<8x128xf32, "vmem">, memref<8x128xf32, "smem">, !tpu.dma_semaphore, !tpu.dma_semaphore) -> ()
// CHECK-GENERIC: "tpu.dma_start"(%vmem, %out, %send, %recv, %dev) <{operandSegmentSizes = array<i32: 1, 1, 1, 1, 1>}> : (memref<8x128xf32, "vmem">, memref<8x128xf32, "hbm">, !tpu.dma_semaphore, !tpu.dma_semaphore, i32) -> ()
// CHECK-GENERIC: "tpu.dma_start"(%hbm, %out, %send, %recv, %dev) <{operandSegmentSizes = array<i32: 1, 1, 1, 1, 1>}> {note = "hbm to remote hbm"} : (memref<8x128xf32, "hbm">, memref<8x128xf32, "hbm">, !tpu.dma_semaphore, !tpu.dma_semaphore, i32) -> ()

// -----

spmd.mesh @mesh = <["data"=2, "model"=4]>

func.func @sync(%n: i32, %dev: i32) {
  %sem = tpu.alloc : !tpu.semaphore
  %me = tpu.device_id : i32
  %model = tpu.axis_index @mesh["model"] : i32
  %data = tpu.axis_index @mesh["data"] : i32
  tpu.sem_signal %sem, %n
  tpu.sem_signal %sem, %n, device = %dev
  tpu.sem_wait %sem, %n
  tpu.sem_wait %sem, %n {note = "both"}
  tpu.barrier
  tpu.barrier on @mesh["model"]
  tpu.barrier on @mesh["data", "model"]
  tpu.barrier on groups [[0, 1, 2, 3], [4, 5, 6, 7]]
  tpu.barrier {note = "all"}
  func.return
}

// CHECK:      func.func @sync(%n: i32, %dev: i32) {
// CHECK-NEXT:   %sem = tpu.alloc : !tpu.semaphore
// CHECK-NEXT:   %me = tpu.device_id : i32
// CHECK-NEXT:   %model = tpu.axis_index @mesh["model"] : i32
// CHECK-NEXT:   %data = tpu.axis_index @mesh["data"] : i32
// CHECK-NEXT:   tpu.sem_signal %sem, %n
// CHECK-NEXT:   tpu.sem_signal %sem, %n, device = %dev
// CHECK-NEXT:   tpu.sem_wait %sem, %n
// CHECK-NEXT:   tpu.sem_wait %sem, %n {note = "both"}
// CHECK-NEXT:   tpu.barrier
// CHECK-NEXT:   tpu.barrier on @mesh["model"]
// CHECK-NEXT:   tpu.barrier on @mesh["data", "model"]
// CHECK-NEXT:   tpu.barrier on groups {{\[\[}}0, 1, 2, 3], [4, 5, 6, 7]]
// CHECK-NEXT:   tpu.barrier {note = "all"}
// CHECK-NEXT:   func.return

// CHECK-GENERIC: %me = "tpu.device_id"() : () -> i32
// CHECK-GENERIC: %model = "tpu.axis_index"() <{mesh = @mesh, axis = "model"}> : () -> i32
// CHECK-GENERIC: "tpu.sem_signal"(%sem, %n) : (!tpu.semaphore, i32) -> ()
// CHECK-GENERIC: "tpu.sem_signal"(%sem, %n, %dev) : (!tpu.semaphore, i32, i32) -> ()
// CHECK-GENERIC: "tpu.sem_wait"(%sem, %n) : (!tpu.semaphore, i32) -> ()
// CHECK-GENERIC: "tpu.barrier"() : () -> ()
// CHECK-GENERIC: "tpu.barrier"() <{mesh = @mesh, mesh_axes = ["model"]}> : () -> ()
// CHECK-GENERIC: "tpu.barrier"() <{groups = [array<i64: 0, 1, 2, 3>, array<i64: 4, 5, 6, 7>]}> : () -> ()

// -----

func.func @compute(%x: memref<2x8x128xf32, #tpu.memory_space<vmem>>, %w: memref<128x256xbf16, #tpu.memory_space<vmem>>, %s: memref<16xi32, #tpu.memory_space<smem>>, %w32: memref<128x256xf32, #tpu.memory_space<vmem>>, %slot: index) -> vector<8xf32> {
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  %a = tpu.load %x[%slot, %c0, %c0] : memref<2x8x128xf32, #tpu.memory_space<vmem>>, vector<8x128xf32>
  %half = tpu.load %x[%slot, %c0, %c0] : memref<2x8x128xf32, #tpu.memory_space<vmem>>, vector<4x128xf32>
  %b = tpu.load %w[%c0, %c0] : memref<128x256xbf16, #tpu.memory_space<vmem>>, vector<128x256xbf16>
  %idx = tpu.load %s[%c8] : memref<16xi32, #tpu.memory_space<smem>>, vector<8xi32>
  %b32 = tpu.load %w32[%c0, %c0] : memref<128x256xf32, #tpu.memory_space<vmem>>, vector<128x256xf32>
  %e = math.exp %a : vector<8x128xf32>
  %sum = arith.addf %a, %e : vector<8x128xf32>
  tpu.store %sum, %x[%slot, %c0, %c0] : memref<2x8x128xf32, #tpu.memory_space<vmem>>, vector<8x128xf32>
  %lhs = arith.truncf %a : vector<8x128xf32> to vector<8x128xbf16>
  %zero = arith.constant dense<0.0> : vector<8x256xf32>
  %mm = tpu.matmul %lhs, %b, %zero : vector<8x128xbf16>, vector<128x256xbf16> -> vector<8x256xf32>
  %mm32 = tpu.matmul %a, %b32, %zero {note = "f32"} : vector<8x128xf32>, vector<128x256xf32> -> vector<8x256xf32>
  %acc = arith.constant dense<0.0> : vector<8xf32>
  %rows = tpu.reduce add %a, %acc, dims = [1] : vector<8x128xf32> -> vector<8xf32>
  %big = arith.constant dense<-1.0> : vector<128xf32>
  %cols = tpu.reduce max %a, %big, dims = [0] : vector<8x128xf32> -> vector<128xf32>
  %init = arith.constant dense<1.0> : vector<f32>
  %all = tpu.reduce mul %a, %init, dims = [0, 1] : vector<8x128xf32> -> vector<f32>
  %imin = arith.constant dense<0> : vector<i32>
  %least = tpu.reduce min %idx, %imin, dims = [0] : vector<8xi32> -> vector<i32>
  %t = tpu.transpose %a, dims = [1, 0] : vector<8x128xf32> -> vector<128x8xf32>
  %iota = tpu.iota dim = 1 : vector<8x128xi32>
  %fiota = tpu.iota dim = 0 {note = "rows"} : vector<8x128xf32>
  func.return %rows : vector<8xf32>
}

// CHECK:      func.func @compute(
// CHECK-NEXT:   %c0 = arith.constant 0 : index
// CHECK-NEXT:   %c8 = arith.constant 8 : index
// CHECK-NEXT:   %a = tpu.load %x[%slot, %c0, %c0] : memref<2x8x128xf32, #tpu.memory_space<vmem>>, vector<8x128xf32>
// CHECK-NEXT:   %half = tpu.load %x[%slot, %c0, %c0] : memref<2x8x128xf32, #tpu.memory_space<vmem>>, vector<4x128xf32>
// CHECK-NEXT:   %b = tpu.load %w[%c0, %c0] : memref<128x256xbf16, #tpu.memory_space<vmem>>, vector<128x256xbf16>
// CHECK-NEXT:   %idx = tpu.load %s[%c8] : memref<16xi32, #tpu.memory_space<smem>>, vector<8xi32>
// CHECK-NEXT:   %b32 = tpu.load %w32[%c0, %c0] : memref<128x256xf32, #tpu.memory_space<vmem>>, vector<128x256xf32>
// CHECK-NEXT:   %e = math.exp %a : vector<8x128xf32>
// CHECK-NEXT:   %sum = arith.addf %a, %e : vector<8x128xf32>
// CHECK-NEXT:   tpu.store %sum, %x[%slot, %c0, %c0] : memref<2x8x128xf32, #tpu.memory_space<vmem>>, vector<8x128xf32>
// CHECK-NEXT:   %lhs = arith.truncf %a : vector<8x128xf32> to vector<8x128xbf16>
// CHECK-NEXT:   %zero = arith.constant dense<0.000000e+00> : vector<8x256xf32>
// CHECK-NEXT:   %mm = tpu.matmul %lhs, %b, %zero : vector<8x128xbf16>, vector<128x256xbf16> -> vector<8x256xf32>
// CHECK-NEXT:   %mm32 = tpu.matmul %a, %b32, %zero {note = "f32"} : vector<8x128xf32>, vector<128x256xf32> -> vector<8x256xf32>
// CHECK-NEXT:   %acc = arith.constant dense<0.000000e+00> : vector<8xf32>
// CHECK-NEXT:   %rows = tpu.reduce add %a, %acc, dims = [1] : vector<8x128xf32> -> vector<8xf32>
// CHECK-NEXT:   %big = arith.constant dense<-1.000000e+00> : vector<128xf32>
// CHECK-NEXT:   %cols = tpu.reduce max %a, %big, dims = [0] : vector<8x128xf32> -> vector<128xf32>
// CHECK-NEXT:   %init = arith.constant dense<1.000000e+00> : vector<f32>
// CHECK-NEXT:   %all = tpu.reduce mul %a, %init, dims = [0, 1] : vector<8x128xf32> -> vector<f32>
// CHECK-NEXT:   %imin = arith.constant dense<0> : vector<i32>
// CHECK-NEXT:   %least = tpu.reduce min %idx, %imin, dims = [0] : vector<8xi32> -> vector<i32>
// CHECK-NEXT:   %t = tpu.transpose %a, dims = [1, 0] : vector<8x128xf32> -> vector<128x8xf32>
// CHECK-NEXT:   %iota = tpu.iota dim = 1 : vector<8x128xi32>
// CHECK-NEXT:   %fiota = tpu.iota dim = 0 {note = "rows"} : vector<8x128xf32>
// CHECK-NEXT:   func.return %rows : vector<8xf32>

// CHECK-GENERIC: %a = "tpu.load"(%x, %slot, %c0, %c0) : (memref<2x8x128xf32, "vmem">, index, index, index) -> vector<8x128xf32>
// CHECK-GENERIC: "tpu.store"(%sum, %x, %slot, %c0, %c0) : (vector<8x128xf32>, memref<2x8x128xf32, "vmem">, index, index, index) -> ()
// CHECK-GENERIC: %mm = "tpu.matmul"(%lhs, %b, %zero) : (vector<8x128xbf16>, vector<128x256xbf16>, vector<8x256xf32>) -> vector<8x256xf32>
// CHECK-GENERIC: %rows = "tpu.reduce"(%a, %acc) <{kind = "add", dims = array<i64: 1>}> : (vector<8x128xf32>, vector<8xf32>) -> vector<8xf32>
// CHECK-GENERIC: %t = "tpu.transpose"(%a) <{permutation = array<i64: 1, 0>}> : (vector<8x128xf32>) -> vector<128x8xf32>
// CHECK-GENERIC: %iota = "tpu.iota"() <{dim = 1 : i64}> : () -> vector<8x128xi32>

// -----

// A memref spelled with a builtin string memory space (the generic spelling) is read
// as the #tpu.memory_space; other strings stay strings.
func.func @string_spaces(%a: memref<8xf32, "vmem">, %b: memref<8xf32, "other">) {
  func.return
}

// CHECK: func.func @string_spaces(%a: memref<8xf32, #tpu.memory_space<vmem>>, %b: memref<8xf32, "other">)

// -----

// Masks and conversions on vectors (xDSL 0.74's arith compares, select and integer casts
// take scalars only): compare with arith's predicates, select by a mask, convert as
// hlo.convert.
func.func @masks(%a: vector<8x128xf32>, %b: vector<8x128xf32>, %i: vector<8x128xi32>) -> vector<8x128xf32> {
  %m = tpu.cmp olt, %a, %b : vector<8x128xf32>
  %n = tpu.cmp sge, %i, %i {note = "ints"} : vector<8x128xi32>
  %r = tpu.select %m, %a, %b : vector<8x128xi1>, vector<8x128xf32>
  %f = tpu.convert %i : vector<8x128xi32> -> vector<8x128xf32>
  %k = tpu.convert %a : vector<8x128xf32> -> vector<8x128xi64>
  %w = tpu.convert %n : vector<8x128xi1> -> vector<8x128xbf16>
  func.return %r : vector<8x128xf32>
}

// CHECK:      func.func @masks(
// CHECK-NEXT:   %m = tpu.cmp olt, %a, %b : vector<8x128xf32>
// CHECK-NEXT:   %n = tpu.cmp sge, %i, %i {note = "ints"} : vector<8x128xi32>
// CHECK-NEXT:   %r = tpu.select %m, %a, %b : vector<8x128xi1>, vector<8x128xf32>
// CHECK-NEXT:   %f = tpu.convert %i : vector<8x128xi32> -> vector<8x128xf32>
// CHECK-NEXT:   %k = tpu.convert %a : vector<8x128xf32> -> vector<8x128xi64>
// CHECK-NEXT:   %w = tpu.convert %n : vector<8x128xi1> -> vector<8x128xbf16>
// CHECK-NEXT:   func.return %r : vector<8x128xf32>

// CHECK-GENERIC: %m = "tpu.cmp"(%a, %b) <{predicate = "olt"}> : (vector<8x128xf32>, vector<8x128xf32>) -> vector<8x128xi1>
// CHECK-GENERIC: %r = "tpu.select"(%m, %a, %b) : (vector<8x128xi1>, vector<8x128xf32>, vector<8x128xf32>) -> vector<8x128xf32>
// CHECK-GENERIC: %f = "tpu.convert"(%i) : (vector<8x128xi32>) -> vector<8x128xf32>
