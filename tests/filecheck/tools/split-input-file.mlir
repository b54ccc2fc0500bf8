// --split-input-file: line numbers of a later chunk are those of the whole file; with a
// failing chunk nothing at all is printed or written (not even the good chunks); with
// --verify-diagnostics every chunk's diagnostic is printed in place of its IR, exit 0.

// RUN: not shardc-opt %s --split-input-file 2>&1 | filecheck %s
// RUN: not shardc-opt %s --split-input-file 2>/dev/null | filecheck %s --check-prefix=EMPTY --allow-empty
// RUN: rm -f %t.out && not shardc-opt %s --split-input-file -o %t.out
// RUN: not test -e %t.out
// RUN: shardc-opt %s --split-input-file --verify-diagnostics | filecheck %s --check-prefix=DIAG
// RUN: not shardc-opt - --split-input-file < %s 2>&1 | filecheck %s --check-prefix=STDIN

func.func @first(%a: tensor<4xf32>) -> tensor<4xf32> {
  func.return %a : tensor<4xf32>
}

// -----

func.func @second(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = hlo.transpose %a, dims = [1] : (tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

func.func @third(%a: tensor<4xf32>) -> tensor<4xf32> {
  func.return %a : tensor<4xf32>
}

// -----

func.func @fourth(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = hlo.sqrt %a : tensor<4xf32>
  %1 = hlo.slice %0 [0:5] : (tensor<4xf32>) -> tensor<5xf32>
  func.return %a : tensor<4xf32>
}

// -----

func.func @fifth(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = hlo.add %a, %a, %a : tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// The first failing chunk ends the run.
// CHECK-NOT: Traceback
// CHECK:      split-input-file.mlir:19:3: error: 'hlo.transpose' op dims [1] is not a permutation of 0..0
// CHECK-NEXT: {{^  }}%0 = hlo.transpose %a, dims = [1] : (tensor<4xf32>) -> tensor<4xf32>{{$}}
// CHECK-NEXT: {{^  \^$}}
// CHECK-NOT: {{.}}

// EMPTY-NOT: {{.}}

// DIAG:      func.func @first(
// DIAG:      {{//}} -----
// DIAG-NEXT: split-input-file.mlir:19:3: error: 'hlo.transpose' op dims [1] is not a permutation of 0..0
// DIAG:      {{//}} -----
// DIAG-NEXT: builtin.module {
// DIAG-NEXT:   func.func @third(
// DIAG:      {{//}} -----
// DIAG-NEXT: split-input-file.mlir:33:3: error: 'hlo.slice' op slice 0:5 of dimension 0 is out of bounds for size 4
// DIAG-NEXT: {{^  }}%1 = hlo.slice %0 [0:5] : (tensor<4xf32>) -> tensor<5xf32>{{$}}
// DIAG-NEXT: {{^  \^$}}
// DIAG-NEXT: {{//}} -----
// DIAG-NEXT: split-input-file.mlir:40:22: error: Expected ':'
// DIAG-NEXT: {{^  }}%0 = hlo.add %a, %a, %a : tensor<4xf32>{{$}}
// DIAG-NEXT: {{^ {21}\^$}}
// DIAG-NOT: {{.}}

// STDIN: <stdin>:19:3: error: 'hlo.transpose' op dims [1] is not a permutation of 0..0
