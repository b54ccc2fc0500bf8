// RUN: shardc-opt %s -p lower-to-tpu --split-input-file | filecheck %s
// RUN: shardc-opt %s -p lower-to-tpu --split-input-file | shardc-opt - --split-input-file > /dev/null

// Sub-byte integers (lowering/narrow_ints.py): VMEM blocks stay packed i4; the block is
// unpacked into i32 lanes, computed there and packed back (the convert wraps at 4 bits).

func.func @add_i4(%a: tensor<8x128xi4>, %b: tensor<8x128xi4>) -> tensor<8x128xi4> {
  %r = hlo.add %a, %b : tensor<8x128xi4>
  func.return %r : tensor<8x128xi4>
}

// CHECK-LABEL: func.func @add_i4(
// CHECK:         %[[X:.*]] = tpu.load %add_in0{{.*}}vector<8x128xi4>
// CHECK:         %[[Y:.*]] = tpu.load %add_in1{{.*}}vector<8x128xi4>
// CHECK-NEXT:    %[[XW:.*]] = tpu.convert %[[X]] : vector<8x128xi4> -> vector<8x128xi32>
// CHECK-NEXT:    %[[YW:.*]] = tpu.convert %[[Y]] : vector<8x128xi4> -> vector<8x128xi32>
// CHECK-NEXT:    %[[S:.*]] = arith.addi %[[XW]], %[[YW]] : vector<8x128xi32>
// CHECK-NEXT:    %[[P:.*]] = tpu.convert %[[S]] : vector<8x128xi32> -> vector<8x128xi4>
// CHECK-NEXT:    tpu.store %[[P]], %add_out

// -----

// A shift of i4 sees the 4 bits: the amount masked to 4 unsigned bits, the operand's bits
// zero-extended (a logical shift of -8 is 4, not 2^31 - 4).

func.func @shift_i4(%a: tensor<8x128xi4>, %b: tensor<8x128xi4>) -> tensor<8x128xi4> {
  %r = hlo.shift_right_logical %a, %b : tensor<8x128xi4>
  func.return %r : tensor<8x128xi4>
}

// CHECK-LABEL: func.func @shift_i4(
// CHECK:         arith.constant 15 : i32
// CHECK:         %[[U:.*]] = arith.andi %{{.*}}, %{{.*}} : vector<8x128xi32>
// CHECK:         %[[N:.*]] = arith.andi %{{.*}}, %{{.*}} : vector<8x128xi32>
// CHECK-NEXT:    %[[R:.*]] = arith.shrui %[[U]], %[[N]] : vector<8x128xi32>
// CHECK-NEXT:    tpu.convert %[[R]] : vector<8x128xi32> -> vector<8x128xi4>
