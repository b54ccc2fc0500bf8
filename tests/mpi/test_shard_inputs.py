"""
Issue 17: a rank's inputs without the global arrays (`interpreter.shard_inputs`): the
blocks `random_blocks` draws for any set of devices are bit-identical to the in-process
`split_inputs(random_inputs(...))`, for every input type and kind of split (even,
uneven, replicated, unreduced), over several inputs drawn from one seed in order; and an
.npz maps lazily. (No MPI needed.)
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from shardc.dialects import make_context
from shardc.interpreter import io, shard_inputs
from shardc.parsing import parse_and_verify

PROGRAM = """spmd.mesh @m = <["a"=2, "b"=4]>
func.func @main(
    %w: tensor<5x3xbf16> {spmd.sharding = #spmd.sharding<@m, [{"a"}, {"b"}]>, spmd.global_shape = array<i64: 9, 12>},
    %x: tensor<8x3xi1> {spmd.sharding = #spmd.sharding<@m, [{}, {"b"}]>},
    %y: tensor<3x2xf32> {spmd.sharding = #spmd.sharding<@m, [{}, {}]>},
    %z: tensor<4x4xcomplex<f32>> {spmd.sharding = #spmd.sharding<@m, [{"a"}, {}]>},
    %u: tensor<8x4xf32> {spmd.sharding = #spmd.sharding<@m, [{"b"}, {}], unreduced = {"a"}>},
    %s: tensor<i32> {spmd.sharding = #spmd.sharding<@m, []>},
    %big: tensor<250x350xf32> {spmd.sharding = #spmd.sharding<@m, [{"b"}, {"a"}]>}
) -> tensor<3x2xf32> attributes {spmd.partitioned} {
  func.return %y : tensor<3x2xf32>
}
"""


def _sig() -> io.Signature:
    module = parse_and_verify(make_context(), PROGRAM, "<test>")
    return io.signature(module, io.find_entry(module, None, "<test>"), "<test>")


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


@pytest.mark.parametrize("devices", [range(8), range(0, 2), range(4, 8), [3], range(6, 8)])
@pytest.mark.parametrize("piece", [1 << 20, 64])
def test_random_blocks_match_the_in_process_split(devices, piece, monkeypatch) -> None:
    monkeypatch.setattr(shard_inputs, "PIECE_BYTES", piece)  # many pieces per input too
    sig = _sig()
    expected = io.split_inputs(sig, io.random_inputs(sig, 7))
    got = shard_inputs.random_blocks(sig, 7, list(devices))
    assert sorted(got) == list(devices)
    for d in devices:
        assert len(got[d]) == len(expected[d])
        for k, (a, b) in enumerate(zip(expected[d], got[d], strict=True)):
            assert _same(a, b), f"device {d}, input {k}"


def test_a_rank_draws_only_its_blocks() -> None:
    sig = _sig()
    rows = shard_inputs.random_blocks(sig, 0, [0, 1])
    big = sig.args[-1]
    assert rows[0][-1].shape == big.local_shape == (250, 350)
    assert rows[0][-1].base is None or rows[0][-1].base.size == 250 * 350  # no global base


def test_npz_maps_lazily(tmp_path: Path) -> None:
    path = tmp_path / "in.npz"
    arrays = {
        "in_0": np.arange(24, dtype=np.float32).reshape(4, 6),
        "in_1": np.asfortranarray(np.arange(6, dtype=np.int64).reshape(2, 3)),
        "in_2": np.zeros((0, 3), np.float32),
        "in_3": np.array(5, np.int32),
    }
    np.savez(path, **arrays)
    lazy = shard_inputs.load_lazily(str(path))
    assert isinstance(lazy["in_0"], np.memmap)
    for name, a in arrays.items():
        assert _same(lazy[name], a), name
    np.savez_compressed(path, **arrays)
    for name, a in shard_inputs.load_lazily(str(path)).items():
        assert _same(a, arrays[name]), name


PER_DEVICE = """spmd.mesh @m = <["x"=4]>
func.func @main(%a: tensor<3x2xf32>, %b: tensor<2xi1>) -> tensor<3x2xf32>
    attributes {spmd.per_device_io} {
  func.return %a : tensor<3x2xf32>
}
"""


def test_per_device_inputs_match() -> None:
    module = parse_and_verify(make_context(), PER_DEVICE, "<test>")
    sig = io.signature(module, io.find_entry(module, None, "<test>"), "<test>")
    expected = io.split_inputs(sig, io.random_inputs(sig, 2))
    got = shard_inputs.random_blocks(sig, 2, [2, 3])
    for d in (2, 3):
        assert all(_same(a, b) for a, b in zip(expected[d], got[d], strict=True))
