// An unknown op and an unknown attribute: one located diagnostic, exit status 1.

// RUN: not shardc-opt %s --split-input-file 2>&1 | filecheck %s
// RUN: not shardc-opt %s 2>&1 | filecheck %s
// RUN: shardc-opt %s --split-input-file --verify-diagnostics | filecheck %s --check-prefix=DIAG

func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = hlo.frobnicate %a : tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// CHECK-NOT: Traceback
// CHECK:      unknown-op.mlir:8:{{[0-9]+}}: error: Operation hlo.frobnicate is not registered
// CHECK-NEXT: {{^  }}%0 = hlo.frobnicate %a : tensor<4xf32>{{$}}
// CHECK-NEXT: {{^ +\^+$}}
// CHECK-NOT: {{.}}

// -----

func.func @g(%a: tensor<4xf32> {hlo.layout = #hlo.layout<[0]>}) -> tensor<4xf32> {
  func.return %a : tensor<4xf32>
}

// -----

func.func @h(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "hlo.frobnicate"(%a) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// DIAG:      unknown-op.mlir:8:{{[0-9]+}}: error: Operation hlo.frobnicate is not registered
// DIAG:      unknown-op.mlir:20:{{[0-9]+}}: error: 'hlo.layout' is not registered
// DIAG-NEXT: {{^}}func.func @g(%a: tensor<4xf32> {hlo.layout = #hlo.layout<[0]>}) -> tensor<4xf32> {{[{]$}}
// DIAG:      unknown-op.mlir:27:{{[0-9]+}}: error: Operation hlo.frobnicate is not registered
// DIAG-NEXT: {{^  }}%0 = "hlo.frobnicate"(%a) : (tensor<4xf32>) -> tensor<4xf32>{{$}}
// DIAG-NOT: Traceback
