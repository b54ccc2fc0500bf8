"""
Partition quality: collectives and bytes per device that `spmd-pipeline` inserts for each
example program, next to what XLA's own SPMD partitioner (through JAX, on 8 simulated CPU
devices) inserts for the same program, measured in one run.

    python bench/partition_quality.py [--jax-python PATH]

XLA's side needs a Python with `jax` (default: this one; `--jax-python` or the
SHARDC_JAX_PYTHON variable name another). Without one, only our column is printed.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from shardc.dialects import make_context
from shardc.parsing import parse_and_verify
from shardc.passes.collective_combine import CollectiveCombinePass
from shardc.passes.collective_stats import KINDS, CollectiveStats
from shardc.passes.spmd_pipeline import SpmdPipelinePass
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

EXAMPLES = Path(__file__).parents[1] / "examples"
PROGRAMS = [
    "megatron_mlp",
    "attention",
    "layernorm",
    "softmax",
    "matmul_reduce_scatter",
    "reshard",
    "dp_train_step",
]

# The same programs in JAX; each entry: mesh shape and names, function, input shapes and
# their PartitionSpecs, output PartitionSpecs.
JAX_SCRIPT = r"""
import json, re, sys
import numpy as np
import jax, jax.numpy as jnp
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

def mesh(shape, names):
    return Mesh(np.array(jax.devices()[: int(np.prod(shape))]).reshape(shape), names)

def megatron(x, w1, b1, w2):
    return jnp.maximum(x @ w1 + b1, 0) @ w2

def attention(x, wq, wk, wv, wo):
    q = jnp.einsum("bsd,dhk->bshk", x, wq)
    k = jnp.einsum("bsd,dhk->bshk", x, wk)
    v = jnp.einsum("bsd,dhk->bshk", x, wv)
    s = jnp.einsum("bqhk,bshk->bhqs", q, k) * 0.25
    p = jnp.exp(s - s.max(-1, keepdims=True))
    p = p / p.sum(-1, keepdims=True)
    c = jnp.einsum("bhqs,bshk->bhqk", p, v)
    return jnp.einsum("bhqk,hkd->bqd", c, wo)

def layernorm(x, g, b):
    mean = x.sum(1, keepdims=True) * 0.015625
    xc = x - mean
    var = (xc * xc).sum(1, keepdims=True) * 0.015625
    return xc * jax.lax.rsqrt(var + 1e-5) * g + b

def softmax(x):
    e = jnp.exp(x - x.max(1, keepdims=True))
    return e / e.sum(1, keepdims=True)

def matmul(a, b):
    return a @ b

def reshard(a):
    c = jax.lax.with_sharding_constraint(a, NamedSharding(MESH, P(None, "x")))
    return jnp.exp(c)

def dp_step(x, t, w1, w2):
    def loss(w1, w2):
        y = jnp.tanh(x @ w1) @ w2
        return 0.5 * jnp.sum((y - t) ** 2)
    g1, g2 = jax.grad(loss, argnums=(0, 1))(w1, w2)
    return w1 - 0.01 * g1, w2 - 0.01 * g2

PROGRAMS = {
    "megatron_mlp": ((2, 4), ("data", "model"), megatron,
        [((16, 32), P("data", None)), ((32, 128), P(None, "model")), ((128,), P("model")), ((128, 32), P("model", None))],
        P("data", None)),
    "attention": ((2, 4), ("data", "model"), attention,
        [((4, 16, 64), P("data")), ((64, 8, 16), P(None, "model")), ((64, 8, 16), P(None, "model")),
         ((64, 8, 16), P(None, "model")), ((8, 16, 64), P("model"))],
        P("data")),
    "layernorm": ((2, 4), ("data", "model"), layernorm,
        [((8, 64), P("data", "model")), ((64,), P("model")), ((64,), P("model"))], P("data", "model")),
    "softmax": ((4,), ("x",), softmax, [((8, 64), P(None, "x"))], P(None, "x")),
    "matmul_reduce_scatter": ((8,), ("x",), matmul,
        [((32, 64), P(None, "x")), ((64, 128), P("x", None))], P(None, "x")),
    "reshard": ((4,), ("x",), reshard, [((16, 32), P("x", None))], P()),
    "dp_train_step": ((8,), ("data",), dp_step,
        [((64, 32), P("data")), ((64, 16), P("data")), ((32, 64), P()), ((64, 16), P())],
        (P(), P())),
}
BYTES = {"f32": 4, "bf16": 2, "f16": 2, "s32": 4, "f64": 8, "pred": 1, "s64": 8}
KIND = {"all-reduce": "all_reduce", "all-gather": "all_gather", "reduce-scatter": "reduce_scatter",
        "all-to-all": "all_to_all", "collective-permute": "permute"}

def shape_bytes(text):
    total = 0
    for dtype, dims in re.findall(r"(\w+)\[([\d,]*)\]", text):
        n = 1
        for d in filter(None, dims.split(",")):
            n *= int(d)
        total += n * BYTES.get(dtype, 4)
    return total

def group_size(line):
    m = re.search(r"replica_groups=\{\{([\d,]+)\}", line) or re.search(r"replica_groups=\[\d+,(\d+)\]", line)
    if not m:
        return 1
    return len(m.group(1).split(",")) if "," in m.group(1) or "{" in line else int(m.group(1))

result = {}
for name, (shape, names, fn, ins, out) in PROGRAMS.items():
    MESH = mesh(shape, names)
    S = lambda spec: NamedSharding(MESH, spec)
    outs = tuple(S(o) for o in out) if isinstance(out, tuple) else S(out)
    jitted = jax.jit(fn, in_shardings=tuple(S(p) for _, p in ins), out_shardings=outs)
    hlo = jitted.lower(*[jnp.zeros(s, jnp.float32) for s, _ in ins]).compile().as_text()
    counts, nbytes = {}, {}
    for line in hlo.splitlines():
        m = re.search(r"=\s*(.*?)\s+(all-reduce|all-gather|reduce-scatter|all-to-all|collective-permute)(-start)?\(", line)
        if not m:
            continue
        kind = KIND[m.group(2)]
        out_bytes = shape_bytes(m.group(1))
        g = group_size(line)
        operand = out_bytes // g if kind == "all_gather" else out_bytes * g if kind == "reduce_scatter" else out_bytes
        counts[kind] = counts.get(kind, 0) + 1
        nbytes[kind] = nbytes.get(kind, 0) + operand
    result[name] = {"counts": counts, "bytes": nbytes}
print(json.dumps(result))
"""


def partitioning_passes() -> list[ModulePass]:
    """
    spmd-pipeline up to its combiner: the collectives partitioning decides. (Later steps
    turn collectives into async pairs or permute rings, which XLA's count would not show.)
    The combiner runs with XLA's policy (`overlap-aware=false`) to compare like for like.
    """
    passes = SpmdPipelinePass().partitioning_passes()
    assert isinstance(passes[-1], CollectiveCombinePass)
    return [*passes[:-1], CollectiveCombinePass(overlap_aware=False)]


def ours(name: str) -> CollectiveStats:
    ctx = make_context()
    text = (EXAMPLES / f"{name}.mlir").read_text()
    module = parse_and_verify(ctx, text, name)
    for p in partitioning_passes():
        p.apply(ctx, module)
    return CollectiveStats.of(module)


def xla(python: str) -> dict[str, dict[str, dict[str, int]]] | None:
    env = dict(
        os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=8", JAX_PLATFORMS="cpu"
    )
    try:
        out = subprocess.run(
            [python, "-c", JAX_SCRIPT], capture_output=True, text=True, env=env, timeout=600
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        print(f"(XLA side not measured: {e})", file=sys.stderr)
        return None
    if out.returncode != 0:
        print(f"(XLA side not measured: {out.stderr.strip().splitlines()[-1:]})", file=sys.stderr)
        return None
    return json.loads(out.stdout)


CORPUS = Path(__file__).parents[1] / "tests" / "frontends" / "corpus"


def corpus_census() -> list[str]:
    """
    Per JAX corpus program: the collectives of each kind `spmd-pipeline`'s partitioning
    gives its StableHLO, next to those in the per-device HLO XLA compiled from the same
    jit (`NAME.hlo.txt`, exported in the same run as the StableHLO), kind by kind.
    """
    from shardc.frontends.hlo_text import import_hlo_text
    from shardc.frontends.stablehlo import import_stablehlo

    manifest = json.loads((CORPUS / "manifest.json").read_text())["programs"]
    rows = [
        "| corpus program | shardc collectives | XLA collectives | shardc <= XLA per kind |",
        "|---|---|---|---|",
    ]
    ctx = make_context()
    for name, meta in manifest.items():
        files = meta["files"]
        theirs = CollectiveStats.of(
            import_hlo_text((CORPUS / files["hlo"]).read_text(), files["hlo"]).module
        )
        try:
            module = import_stablehlo((CORPUS / files["stablehlo"]).read_text(), name).module
            for p in partitioning_passes():
                p.apply(ctx, module)
            mine = CollectiveStats.of(module)
        except Exception as e:  # a program the importer does not take yet: say why
            first = str(e).splitlines()[0][:90]
            rows.append(f"| {name} | not imported: {first} | {describe(theirs.counts)} | n/a |")
            continue
        ok = all(mine.counts[k] <= theirs.counts[k] for k in KINDS)
        rows.append(
            f"| {name} | {describe(mine.counts)} | {describe(theirs.counts)} | "
            f"{'yes' if ok else '**no**'} |"
        )
    return rows


@dataclass(frozen=True)
class CorpusTiming:
    """One corpus program timed both ways by the same cost model (seconds, bytes/device)."""

    name: str
    shardc_step: float
    shardc_bytes: int
    xla_step: float
    xla_bytes: int


def corpus_timing(name: str, chip: str = "v5e") -> CorpusTiming:
    """
    A corpus program's step under shardc's partitioning (its StableHLO imported, then the
    whole `spmd-pipeline` for `chip`) and under XLA's (the per-device `NAME.hlo.txt` XLA
    compiled from the same jit, imported as it is), both timed by the scheduled-step
    estimate (`step_estimate.module_step_time`: every collective async, list-scheduled by
    the cost model) with their collectives' bytes per device (`comm_bytes`).
    """
    from shardc.dialects import spmd
    from shardc.frontends.hlo_text import import_hlo_text
    from shardc.frontends.stablehlo import import_stablehlo
    from shardc.hardware.chips import CHIPS
    from shardc.hardware.cost import CostModel
    from shardc.passes.step_estimate import module_step_time

    files = json.loads((CORPUS / "manifest.json").read_text())["programs"][name]["files"]
    ctx = make_context()
    theirs = import_hlo_text((CORPUS / files["hlo"]).read_text(), files["hlo"]).module
    mine = import_stablehlo((CORPUS / files["stablehlo"]).read_text(), name).module
    SpmdPipelinePass(chip=chip).apply(ctx, mine)

    def timed(module: ModuleOp) -> tuple[float, int]:
        mesh = spmd.module_mesh(module)
        model = CostModel(CHIPS[chip], mesh[1] if mesh else None)
        return module_step_time(module, model), sum(CollectiveStats.of(module).bytes.values())

    return CorpusTiming(name, *timed(mine), *timed(theirs))


def corpus_names() -> list[str]:
    return list(json.loads((CORPUS / "manifest.json").read_text())["programs"])


def corpus_timing_table(chip: str = "v5e") -> list[str]:
    """Per corpus program: shardc's step and bytes vs XLA's partitioned program's."""
    rows = [
        f"| corpus program ({chip}) | shardc step (us) | XLA step (us) | shardc / XLA | "
        "shardc bytes/device | XLA bytes/device | shardc no slower, no more bytes |",
        "|---|---|---|---|---|---|---|",
    ]
    for name in corpus_names():
        t = corpus_timing(name, chip)
        ratio = t.shardc_step / t.xla_step if t.xla_step else 1.0
        ok = t.shardc_step <= t.xla_step * (1 + STEP_TOLERANCE) and t.shardc_bytes <= t.xla_bytes
        rows.append(
            f"| {name} | {t.shardc_step * 1e6:.3f} | {t.xla_step * 1e6:.3f} | {ratio:.3f} | "
            f"{t.shardc_bytes} | {t.xla_bytes} | {'yes' if ok else '**no**'} |"
        )
    return rows


ISSUE_EXAMPLE = """
spmd.mesh @mesh = <["X"=2, "Y"=4]>
func.func @main(%a: tensor<1024x2048xT> {spmd.sharding = #spmd.sharding<@mesh, [{"X"}, {"Y"}]>},
                %w: tensor<2048x8192xT> {spmd.sharding = #spmd.sharding<@mesh, [{}, {"Y"}]>})
    -> (tensor<1024x8192xT> {spmd.sharding = #spmd.sharding<@mesh, [{"X"}, {"Y"}]>}) {
  %o = hlo.dot %a, %w, contracting_dims = [1] x [0] : (tensor<1024x2048xT>, tensor<2048x8192xT>) -> tensor<1024x8192xT>
  func.return %o : tensor<1024x8192xT>
}
"""


def issue_example_rows(chip: str = "v5e") -> list[str]:
    """
    Issue 14's A[B_X, D_Y] x W[D, F_Y] (B 1024, D 2048, F 8192, 2x4): the step and bytes
    per device of `spmd-partition` keeping A's contracting split (`cost-based=false`) and
    choosing by cost, after the rest of `spmd-pipeline`'s partitioning steps.
    """
    from shardc.dialects import spmd
    from shardc.hardware.chips import CHIPS
    from shardc.hardware.cost import CostModel
    from shardc.passes.spmd_partition import SpmdPartitionPass
    from shardc.passes.step_estimate import module_step_time

    rows = [
        f"| issue 14 example ({chip}) | keep the contracting split | cost-based | speedup |",
        "|---|---|---|---|",
    ]
    for dtype in ("bf16", "f32"):
        cells = []
        for cost_based in (False, True):
            ctx = make_context()
            module = parse_and_verify(ctx, ISSUE_EXAMPLE.replace("xT>", f"x{dtype}>"), "issue")
            for p in SpmdPipelinePass(chip=chip).partitioning_passes():
                if isinstance(p, SpmdPartitionPass):
                    p = SpmdPartitionPass(chip=chip, cost_based=cost_based)
                p.apply(ctx, module)
            mesh = spmd.module_mesh(module)
            assert mesh is not None
            step = module_step_time(module, CostModel(CHIPS[chip], mesh[1]))
            stats = CollectiveStats.of(module)
            cells.append((step, sum(stats.bytes.values()), describe(stats.counts)))
        (old, old_bytes, old_kinds), (new, new_bytes, new_kinds) = cells
        rows.append(
            f"| {dtype} | {old * 1e6:.1f} us, {old_bytes / 2**20:.1f} MiB ({old_kinds}) | "
            f"{new * 1e6:.1f} us, {new_bytes / 2**20:.1f} MiB ({new_kinds}) | {old / new:.1f}x |"
        )
    return rows


STEP_TOLERANCE = 1e-3
"""Steps within 0.1% count as equal: the two programs' compute differs by how each frontend
spells constants and broadcasts (a few ns on microseconds of collectives), not by their
partitioning."""


def describe(counts: dict[str, int]) -> str:
    return ", ".join(f"{counts[k]} {k}" for k in KINDS if counts.get(k)) or "none"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--jax-python", default=os.environ.get("SHARDC_JAX_PYTHON", sys.executable))
    args = parser.parse_args()
    reference = xla(args.jax_python)
    rows = [
        "| program | shardc collectives | shardc bytes/device | XLA collectives | XLA bytes/device | shardc <= XLA |",
        "|---|---|---|---|---|---|",
    ]
    for name in PROGRAMS:
        stats = ours(name)
        mine = sum(stats.counts.values()), sum(stats.bytes.values())
        if reference is None:
            rows.append(f"| {name} | {describe(stats.counts)} | {mine[1]} | n/a | n/a | n/a |")
            continue
        theirs = reference[name]
        xla_total = sum(theirs["counts"].values()), sum(theirs["bytes"].values())
        ok = "yes" if mine[0] <= xla_total[0] and mine[1] <= xla_total[1] else "**no**"
        rows.append(
            f"| {name} | {describe(stats.counts)} | {mine[1]} | "
            f"{describe(theirs['counts'])} | {xla_total[1]} | {ok} |"
        )
    print("\n".join(rows))
    print()
    print("\n".join(corpus_census()))
    print()
    print("\n".join(corpus_timing_table()))
    print()
    print("\n".join(issue_example_rows()))


if __name__ == "__main__":
    main()
