// A syntax error: one located diagnostic (file:line:col, the source line, a caret under
// the offending token) on stderr, exit status 1, nothing on stdout, no output file
// (not even an earlier version of it), no traceback.

// RUN: not shardc-opt %s 2>&1 | filecheck %s
// RUN: not shardc-opt - < %s 2>&1 | filecheck %s --check-prefix=STDIN
// RUN: not shardc-opt %s 2>/dev/null | filecheck %s --check-prefix=EMPTY --allow-empty
// RUN: rm -f %t.out && not shardc-opt %s -o %t.out
// RUN: not test -e %t.out
// RUN: echo "previous contents" > %t.out && not shardc-opt %s -o %t.out
// RUN: filecheck %s --check-prefix=KEPT --input-file=%t.out

func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = hlo.add %a %a : tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// CHECK-NOT: Traceback
// CHECK:      syntax-error.mlir:14:19: error: Expected ','
// CHECK-NEXT: {{^  }}%0 = hlo.add %a %a : tensor<4xf32>{{$}}
// CHECK-NEXT: {{^ {18}\^\^$}}
// CHECK-NOT: {{.}}

// STDIN:      <stdin>:14:19: error: Expected ','
// STDIN-NEXT: {{^  }}%0 = hlo.add %a %a : tensor<4xf32>{{$}}
// STDIN-NEXT: {{^ {18}\^\^$}}

// EMPTY-NOT: {{.}}

// KEPT: previous contents
