// An unknown pass and a bad pass option: one diagnostic naming the pipeline and what is
// wrong with it, exit status 1, nothing on stdout, no output file, no traceback.

// RUN: not shardc-opt %s -p nope 2>&1 | filecheck %s --check-prefix=UNKNOWN
// RUN: not shardc-opt %s -p canonicalize,nope 2>&1 | filecheck %s --check-prefix=UNKNOWN2
// RUN: not shardc-opt %s -p 'canonicalize{bogus=1}' 2>&1 | filecheck %s --check-prefix=OPTION
// RUN: not shardc-opt %s -p 'canonicalize{' 2>&1 | filecheck %s --check-prefix=SYNTAX
// RUN: not shardc-opt %s -p nope 2>/dev/null | filecheck %s --check-prefix=EMPTY --allow-empty
// RUN: rm -f %t.out && not shardc-opt %s -p 'canonicalize{bogus=1}' -o %t.out
// RUN: not test -e %t.out
// RUN: not shardc-opt %s --no-such-flag 2>&1 | filecheck %s --check-prefix=FLAG

func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  func.return %a : tensor<4xf32>
}

// UNKNOWN-NOT: Traceback
// UNKNOWN:      <pass-pipeline>:1:1: error: invalid pass pipeline: unknown pass 'nope'
// UNKNOWN-NEXT: {{^}}nope{{$}}
// UNKNOWN-NEXT: {{^\^$}}
// UNKNOWN-NOT: {{.}}

// UNKNOWN2-NOT: Traceback
// UNKNOWN2:      <pass-pipeline>:1:14: error: invalid pass pipeline: unknown pass 'nope'
// UNKNOWN2-NEXT: {{^}}canonicalize,nope{{$}}
// UNKNOWN2-NEXT: {{^ {13}\^$}}
// UNKNOWN2-NOT: {{.}}

// OPTION-NOT: Traceback
// OPTION:      <pass-pipeline>:1:14: error: invalid pass pipeline: unknown pass option 'bogus' (the pass's options: none)
// OPTION-NEXT: {{^}}canonicalize{bogus=1}{{$}}
// OPTION-NEXT: {{^ {13}\^$}}
// OPTION-NOT: {{.}}

// SYNTAX-NOT: Traceback
// SYNTAX:      <pass-pipeline>:1:14: error: invalid pass pipeline: Expected argument name here
// SYNTAX-NEXT: {{^}}canonicalize{{[{]$}}
// SYNTAX-NEXT: {{^ {13}\^$}}
// SYNTAX-NOT: Traceback

// EMPTY-NOT: {{.}}

// FLAG-NOT: Traceback
// FLAG:     shardc-opt: error: unrecognized arguments: --no-such-flag
// FLAG-NOT: Traceback
