"""
Write a pre-LayerNorm transformer layer (attention + GELU MLP, bf16 weights and
activations, f32 LayerNorm and softmax as JAX computes them) as a level-G program on a
`data` x `model` mesh: batch split on `data`, heads and FFN split on `model` (Megatron).

    python scripts/make_transformer_layer.py [--batch 8 --seq 2048 --model 4096 --heads 32
        --ffn 16384 --data 2 --tp 4] [-o examples/transformer_layer.mlir]

The defaults are the real-size layer of issue 14 (what `scripts/main.sh` costs with
`--timing-only` on a v5e 2x4 slice); tests build a small one with the same generator, so
the small checked run and the real-size one are the same model.
"""

from __future__ import annotations

import argparse
import math
import sys
from dataclasses import dataclass


@dataclass(frozen=True)
class LayerShape:
    batch: int = 8
    seq: int = 2048
    model: int = 4096
    heads: int = 32
    ffn: int = 16384
    data: int = 2
    tp: int = 4

    @property
    def head_dim(self) -> int:
        return self.model // self.heads


class _Writer:
    """Appends `%name = op` lines; types spelled once per shape."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def op(self, text: str) -> None:
        self.lines.append("  " + text)


def _t(shape: tuple[int, ...], ty: str) -> str:
    return f"tensor<{'x'.join(map(str, shape))}x{ty}>" if shape else f"tensor<{ty}>"


def _layer_norm(w: _Writer, p: str, x: str, shape: LayerShape) -> str:
    """LayerNorm over the model dimension of a bf16 [B, S, M] value, in f32; bf16 result."""
    b, s, m = shape.batch, shape.seq, shape.model
    full, rows = _t((b, s, m), "f32"), _t((b, s), "f32")
    w.op(f"%{p}_x32 = hlo.convert %{x} : ({_t((b, s, m), 'bf16')}) -> {full}")
    w.op(f"%{p}_sum = hlo.reduce add %{p}_x32, dims = [2] : ({full}) -> {rows}")
    w.op(f"%{p}_n = hlo.constant dense<{1.0 / m!r}> : {rows}")
    w.op(f"%{p}_mean = hlo.mul %{p}_sum, %{p}_n : {rows}")
    w.op(f"%{p}_mb = hlo.broadcast %{p}_mean, dims = [0, 1] : ({rows}) -> {full}")
    w.op(f"%{p}_xc = hlo.sub %{p}_x32, %{p}_mb : {full}")
    w.op(f"%{p}_sq = hlo.mul %{p}_xc, %{p}_xc : {full}")
    w.op(f"%{p}_vsum = hlo.reduce add %{p}_sq, dims = [2] : ({full}) -> {rows}")
    w.op(f"%{p}_var = hlo.mul %{p}_vsum, %{p}_n : {rows}")
    w.op(f"%{p}_eps = hlo.constant dense<1.0e-5> : {rows}")
    w.op(f"%{p}_ve = hlo.add %{p}_var, %{p}_eps : {rows}")
    w.op(f"%{p}_r = hlo.rsqrt %{p}_ve : {rows}")
    w.op(f"%{p}_rb = hlo.broadcast %{p}_r, dims = [0, 1] : ({rows}) -> {full}")
    w.op(f"%{p}_y = hlo.mul %{p}_xc, %{p}_rb : {full}")
    w.op(f"%{p}_g32 = hlo.convert %{p}_gamma : ({_t((m,), 'bf16')}) -> {_t((m,), 'f32')}")
    w.op(f"%{p}_gb = hlo.broadcast %{p}_g32, dims = [2] : ({_t((m,), 'f32')}) -> {full}")
    w.op(f"%{p}_yg = hlo.mul %{p}_y, %{p}_gb : {full}")
    w.op(f"%{p}_out = hlo.convert %{p}_yg : ({full}) -> {_t((b, s, m), 'bf16')}")
    return f"{p}_out"


def _attention(w: _Writer, x: str, shape: LayerShape) -> str:
    """Multi-head self-attention of a bf16 [B, S, M] value; the output projection's result."""
    b, s, m, h, d = shape.batch, shape.seq, shape.model, shape.heads, shape.head_dim
    x_t, w_t, bshd = _t((b, s, m), "bf16"), _t((m, h, d), "bf16"), _t((b, s, h, d), "bf16")
    for name in ("q", "k", "v"):
        w.op(
            f"%{name} = hlo.dot %{x}, %w{name}, contracting_dims = [2] x [0] : "
            f"({x_t}, {w_t}) -> {bshd}"
        )
    scores_bf, scores = _t((b, h, s, s), "bf16"), _t((b, h, s, s), "f32")
    rows = _t((b, h, s), "f32")
    w.op(
        f"%scores = hlo.dot %q, %k, batching_dims = [0, 2] x [0, 2], contracting_dims = [3] x [3]"
        f" : ({bshd}, {bshd}) -> {scores_bf}"
    )
    w.op(f"%s32 = hlo.convert %scores : ({scores_bf}) -> {scores}")
    w.op(f"%scale = hlo.constant dense<{1.0 / math.sqrt(d)!r}> : {scores}")
    w.op(f"%ss = hlo.mul %s32, %scale : {scores}")
    w.op(f"%smax = hlo.reduce max %ss, dims = [3] : ({scores}) -> {rows}")
    w.op(f"%smaxb = hlo.broadcast %smax, dims = [0, 1, 2] : ({rows}) -> {scores}")
    w.op(f"%sd = hlo.sub %ss, %smaxb : {scores}")
    w.op(f"%se = hlo.exp %sd : {scores}")
    w.op(f"%ssum = hlo.reduce add %se, dims = [3] : ({scores}) -> {rows}")
    w.op(f"%ssumb = hlo.broadcast %ssum, dims = [0, 1, 2] : ({rows}) -> {scores}")
    w.op(f"%probs32 = hlo.div %se, %ssumb : {scores}")
    w.op(f"%probs = hlo.convert %probs32 : ({scores}) -> {scores_bf}")
    ctx = _t((b, h, s, d), "bf16")
    w.op(
        f"%ctx = hlo.dot %probs, %v, batching_dims = [0, 1] x [0, 2], contracting_dims = [3] x [1]"
        f" : ({scores_bf}, {bshd}) -> {ctx}"
    )
    w.op(
        f"%attn = hlo.dot %ctx, %wo, contracting_dims = [1, 3] x [0, 1] : "
        f"({ctx}, {_t((h, d, m), 'bf16')}) -> {x_t}"
    )
    return "attn"


def _mlp(w: _Writer, x: str, shape: LayerShape) -> str:
    """x @ W1, tanh-approximated GELU (as jax.nn.gelu), @ W2; bf16 throughout."""
    b, s, m, f = shape.batch, shape.seq, shape.model, shape.ffn
    x_t, h_t = _t((b, s, m), "bf16"), _t((b, s, f), "bf16")
    w.op(
        f"%h = hlo.dot %{x}, %w1, contracting_dims = [2] x [0] : ({x_t}, {_t((m, f), 'bf16')}) -> {h_t}"
    )
    w.op(f"%h3a = hlo.mul %h, %h : {h_t}")
    w.op(f"%h3 = hlo.mul %h3a, %h : {h_t}")
    w.op(f"%gc = hlo.constant dense<0.044715> : {h_t}")
    w.op(f"%gh3 = hlo.mul %h3, %gc : {h_t}")
    w.op(f"%gin = hlo.add %h, %gh3 : {h_t}")
    w.op(f"%gk = hlo.constant dense<{math.sqrt(2.0 / math.pi)!r}> : {h_t}")
    w.op(f"%garg = hlo.mul %gin, %gk : {h_t}")
    w.op(f"%gt = hlo.tanh %garg : {h_t}")
    w.op(f"%one = hlo.constant dense<1.0> : {h_t}")
    w.op(f"%g1 = hlo.add %gt, %one : {h_t}")
    w.op(f"%half = hlo.constant dense<0.5> : {h_t}")
    w.op(f"%gx = hlo.mul %h, %half : {h_t}")
    w.op(f"%gelu = hlo.mul %gx, %g1 : {h_t}")
    w.op(
        f"%mlp = hlo.dot %gelu, %w2, contracting_dims = [2] x [0] : ({h_t}, {_t((f, m), 'bf16')}) -> {x_t}"
    )
    return "mlp"


def transformer_layer(shape: LayerShape = LayerShape()) -> str:
    """The layer as MLIR text (level G, with input and output shardings)."""
    b, s, m, h, d, f = shape.batch, shape.seq, shape.model, shape.heads, shape.head_dim, shape.ffn
    if m % h:
        raise ValueError(f"model {m} is not a multiple of heads {h}")

    def arg(name: str, dims: tuple[int, ...], axes: list[str]) -> str:
        spec = ", ".join("{" + (f'"{a}"' if a else "") + "}" for a in axes)
        sharding = f"#spmd.sharding<@mesh, [{spec}]>"
        return f"%{name}: {_t(dims, 'bf16')} {{spmd.sharding = {sharding}}}"

    args = [
        arg("x", (b, s, m), ["data", "", ""]),
        arg("ln1_gamma", (m,), [""]),
        arg("wq", (m, h, d), ["", "model", ""]),
        arg("wk", (m, h, d), ["", "model", ""]),
        arg("wv", (m, h, d), ["", "model", ""]),
        arg("wo", (h, d, m), ["model", "", ""]),
        arg("ln2_gamma", (m,), [""]),
        arg("w1", (m, f), ["", "model"]),
        arg("w2", (f, m), ["model", ""]),
    ]
    w = _Writer()
    ln1 = _layer_norm(w, "ln1", "x", shape)
    attn = _attention(w, ln1, shape)
    x_t = _t((b, s, m), "bf16")
    w.op(f"%res1 = hlo.add %x, %{attn} : {x_t}")
    ln2 = _layer_norm(w, "ln2", "res1", shape)
    mlp = _mlp(w, ln2, shape)
    w.op(f"%out = hlo.add %res1, %{mlp} : {x_t}")
    w.op(f"func.return %out : {x_t}")
    result = '#spmd.sharding<@mesh, [{"data"}, {}, {}]>'
    header = [
        f"// A pre-LayerNorm transformer layer: batch {b}, sequence {s}, model {m} ({h} heads of {d}),",
        f"// FFN {f}, bf16 (LayerNorm and softmax in f32), on a {shape.data}x{shape.tp} mesh: batch split",
        '// on "data", heads and FFN on "model" (Megatron: one all_reduce after attention, one after',
        "// the MLP). Generated by scripts/make_transformer_layer.py.",
        f'spmd.mesh @mesh = <["data"={shape.data}, "model"={shape.tp}]>',
        "",
        "func.func @main(" + ",\n                ".join(args) + ")",
        f"    -> ({x_t} {{spmd.sharding = {result}}}) {{",
    ]
    return "\n".join([*header, *w.lines, "}", ""])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    defaults = LayerShape()
    for field in ("batch", "seq", "model", "heads", "ffn", "data", "tp"):
        parser.add_argument(f"--{field}", type=int, default=getattr(defaults, field))
    parser.add_argument("-o", "--output", default="-")
    ns = parser.parse_args(argv)
    shape = LayerShape(**{k: getattr(ns, k) for k in defaults.__dataclass_fields__})
    text = transformer_layer(shape)
    if ns.output == "-":
        sys.stdout.write(text)
    else:
        with open(ns.output, "w") as out:
            out.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
