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
// UNKNOWN:     shardc-opt: error: invalid pass pipeline 'nope': Unrecognized passes: ['nope']
// UNKNOWN-NOT: {{.}}

// UNKNOWN2-NOT: Traceback
// UNKNOWN2:     shardc-opt: error: invalid pass pipeline 'canonicalize,nope': Unrecognized passes: ['nope']
// UNKNOWN2-NOT: {{.}}

// OPTION-NOT: Traceback
// OPTION:     shardc-opt: error: invalid pass pipeline 'canonicalize{bogus=1}': Provided arguments ["bogus"] not found in expected arguments []
// OPTION-NOT: {{.}}

// SYNTAX-NOT: Traceback
// SYNTAX:      shardc-opt: error: invalid pass pipeline 'canonicalize{': Error parsing pass pipeline specification:
// SYNTAX-NEXT: pass-pipeline:1:14
// SYNTAX-NEXT: {{^}}canonicalize{{[{]$}}
// SYNTAX-NEXT: {{^ {13}\^$}}
// SYNTAX-NEXT: Expected argument name here
// SYNTAX-NOT: Traceback

// EMPTY-NOT: {{.}}

// FLAG-NOT: Traceback
// FLAG:     shardc-opt: error: unrecognized arguments: --no-such-flag
// FLAG-NOT: Traceback
