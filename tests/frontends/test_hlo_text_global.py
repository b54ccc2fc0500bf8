"""
HLO text that XLA has not partitioned yet (its SPMD partitioner's tests, `jax.jit(...)
.lower(...).compiler_ir("hlo")`) imports as a level-G program with its shardings, which
`spmd-pipeline` partitions; per-device reading stays for partitioned modules. Every
HloSharding form maps to the `#spmd.sharding` on one mesh that lays the devices out the
same way (checked here against the tile assignment itself), tuple-shaped parameters are
flattened, the device count may come from the shardings alone, and `unreduced` shardings
keep their partial sums.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from shardc.diagnostics import DiagnosticError
from shardc.dialects import spmd
from shardc.frontends import hlo_sharding as hs
from shardc.frontends.hlo_text import import_hlo_text

from tests.e2e.differential import partition_and_compare

MATMUL = """HloModule module

ENTRY entry {
  %lhs = f32[16,32] parameter(0), sharding={devices=[2,1,4]<=[8] last_tile_dim_replicate}
  %rhs = f32[32,64] parameter(1), sharding={devices=[1,4,2]<=[2,4]T(1,0) last_tile_dim_replicate}
  %dot = f32[16,64] dot(%lhs, %rhs), lhs_contracting_dims={1}, rhs_contracting_dims={0},
    sharding={devices=[2,4]<=[8]}
  %t = f32[16,64] tanh(%dot), sharding={replicated}
  ROOT %r = f32[16,64] add(%t, %dot), sharding={devices=[2,1,4]<=[8] last_tile_dim_replicate}
}
"""


def level_g(text: str) -> str:
    result = import_hlo_text(text, "m.hlo")
    assert result.stats.level == "G"
    program = str(result.module)
    assert "spmd.per_device_io" not in program
    return program


def test_unpartitioned_module_is_a_level_g_program_with_its_shardings() -> None:
    program = level_g(MATMUL)
    assert 'spmd.mesh @mesh = <["a"=2, "b"=4]>' in program
    assert '%0: tensor<16x32xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"a"}, {}]>}' in program
    assert '%1: tensor<32x64xf32> {spmd.sharding = #spmd.sharding<@mesh, [{}, {"b"}]>}' in program
    assert 'spmd.constraint %2 <@mesh, [{"a"}, {"b"}]>' in program
    assert "spmd.constraint %4 <@mesh, [{}, {}]>" in program
    partition_and_compare(program, seed=1)


def test_a_scheduled_module_or_one_with_collectives_stays_per_device() -> None:
    scheduled = MATMUL.replace("HloModule module", "HloModule module, is_scheduled=true")
    result = import_hlo_text(scheduled, "m.hlo")
    assert result.stats.level == "S" and "spmd.per_device_io" in str(result.module)
    forced = import_hlo_text(MATMUL, "m.hlo", per_device=True)
    assert "spmd.per_device_io" in str(forced.module)
    assert forced.stats.devices == 8  # from the shardings: the header says nothing


def tile_of_each_device(sharding: spmd.ShardingAttr, mesh: spmd.MeshAttr) -> list[tuple]:
    """The tile each device holds under a #spmd.sharding (devices row-major on the mesh,
    a dimension's axes major first)."""
    sizes = dict(zip(mesh.names, mesh.shape, strict=True))
    strides, stride = {}, 1
    for name in reversed(mesh.names):
        strides[name] = stride
        stride *= sizes[name]
    tiles = []
    for device in range(mesh.device_count):
        coords = {a: (device // strides[a]) % sizes[a] for a in mesh.names}
        index = []
        for axes in sharding.dim_axes:
            i = 0
            for a in axes:
                i = i * sizes[a] + coords[a]
            index.append(i)
        tiles.append(tuple(index))
    return tiles


@pytest.mark.parametrize(
    "text",
    [
        "{devices=[2,4]<=[8]}",
        "{devices=[4,2]<=[2,4]T(1,0)}",
        "{devices=[2,1,4]<=[8] last_tile_dim_replicate}",
        "{devices=[1,2,4]<=[4,2]T(1,0) last_tile_dim_replicate}",
        "{devices=[2,2,2]<=[2,2,2]T(2,1,0)}",
        "{devices=[2,4]0,1,2,3,4,5,6,7}",
        "{devices=[4,2]0,2,4,6,1,3,5,7}",
        "{devices=[8,1]<=[8]}",
    ],
)
def test_every_tile_assignment_lands_on_the_same_devices(text: str) -> None:
    rank = hs.parse_hlo_sharding(text).tile_rank
    shape = ",".join(["8"] * rank)
    module = f"""HloModule module

ENTRY entry {{
  ROOT %p = f32[{shape}] parameter(0), sharding={text}
}}
"""
    result = import_hlo_text(module, "m.hlo")
    mesh_op = next(op for op in result.module.ops if isinstance(op, spmd.MeshOp))
    main = result.module.ops.last
    assert main is not None
    attr = main.arg_attrs.data[0].data[spmd.SHARDING_ATTR_NAME]  # pyright: ignore
    got = tile_of_each_device(attr, mesh_op.mesh)
    devices = hs.parse_hlo_sharding(text).devices
    assert devices is not None
    want = [None] * devices.size
    for index in np.ndindex(*devices.shape):
        want[int(devices[index])] = index[:rank]  # replicated last dims: same tile
    assert got == want


TUPLE_AND_UNREDUCED = """HloModule module, num_partitions=4

ENTRY entry {
  %p = (f32[8,16], f32[16,4]) parameter(0), sharding={{devices=[2,2]<=[4]}, {devices=[2,1,2]<=[2,2]T(1,0) last_tile_dim_replicate}}
  %lhs = f32[8,16] get-tuple-element(%p), index=0
  %rhs = f32[16,4] get-tuple-element(%p), index=1
  %dot = f32[8,4] dot(%lhs, %rhs), lhs_contracting_dims={1}, rhs_contracting_dims={0}, sharding={devices=[2,1,2]<=[4] last_tile_dims={unreduced}}
  ROOT %r = f32[8,4] negate(%dot), sharding={replicated}
}
"""


def test_tuple_parameter_and_unreduced_sharding() -> None:
    result = import_hlo_text(TUPLE_AND_UNREDUCED, "m.hlo")
    program = str(result.module)
    assert result.stats.constructs["tuple parameter (flattened)"] == 1
    assert '%0: tensor<8x16xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"a"}, {"b"}]>}' in program
    assert '%1: tensor<16x4xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"b"}, {}]>}' in program
    assert 'spmd.constraint %2 <@mesh, [{"a"}, {}], unreduced={"b"}>' in program
    partition_and_compare(program, seed=2)


def test_tuple_parameter_per_device_is_flattened_too() -> None:
    text = TUPLE_AND_UNREDUCED.replace(
        ", sharding={devices=[2,1,2]<=[4] last_tile_dims={unreduced}}", ""
    )
    text = text.replace("num_partitions=4", "is_scheduled=true, num_partitions=4")
    program = str(import_hlo_text(text, "m.hlo").module)
    assert "spmd.per_device_io" in program
    assert 'mhlo.sharding = "{devices=[2,2]<=[4]}"' in program


def test_manual_sharding_at_level_g_is_a_clear_error() -> None:
    text = MATMUL.replace("sharding={replicated}", "sharding={manual}")
    with pytest.raises(
        DiagnosticError, match="m.hlo:8:.*a manual sharding in a module read at level G"
    ):
        import_hlo_text(text, "m.hlo")


def test_shardc_import_flags(tmp_path: Path) -> None:
    path = tmp_path / "m.hlo"
    path.write_text(MATMUL)
    exe = Path(sys.executable).parent / "shardc-import"
    glob = subprocess.run([str(exe), str(path)], capture_output=True, text=True)
    assert glob.returncode == 0 and "per_device_io" not in glob.stdout
    per = subprocess.run([str(exe), str(path), "--per-device"], capture_output=True, text=True)
    assert per.returncode == 0 and "per_device_io" in per.stdout
    both = subprocess.run(
        [str(exe), str(path), "--per-device", "--global"], capture_output=True, text=True
    )
    assert both.returncode == 1 and "not allowed with argument" in both.stderr
