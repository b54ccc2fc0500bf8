"""
`--check`'s tolerance per output element, derived from the computation that produced it:
a first-order, probabilistic running error analysis of the level-G reference run
(Higham, "Accuracy and Stability of Numerical Algorithms", ch. 3; Higham and Mary,
"A New Approach to Probabilistic Rounding Error Analysis", 2019).

A fixed relative tolerance fails both ways: an output that is small because its terms
cancel (a bf16 MLP's output of 0.25 built from partial sums of 30, each rounded to 8
bits) differs between two correct programs by far more than 2% of its own scale, while
an output that only moved data must match bit for bit. So the reference run is observed
op by op (`Executor.observe`) and every element of every float value gets `sigma`, the
standard deviation of the difference two correct evaluations of it may show
(independent roundings add in squares):

* its own roundings: an op whose result is rounded contributes `u(dtype) |result|`,
  once in the reference and once in the partitioned program; a contraction (dot,
  convolution, reduce / reduce_window with add) rounds partial sums of a size the
  partitioning chooses, so it is charged `3 + R` roundings (the reference's, a partial
  sum per device, their combination, and R = the longest ring of permutes in the
  compiled program, in which each step may round a running sum: collective matmul);
  one it does not split still gets 2 (numpy picks its matmul kernel by shape); against a
  level-T kernel, whose vector code computes every op its own way (its erf, exp, tanh),
  every rounding op gets a unit in the last place of its own, at `max(|result|, sqrt(sum of squared terms))` (a partial sum of
  random-signed terms grows like the root of their squares even where the whole sum
  cancels), plus its accumulator's reordering (`sqrt(2n) u(accumulator)` for n terms);
* what it inherits from its operands, element by element: sums add variances, products
  scale by the other operand, a dot's variance is `sigma_A^2 . B^2 + A^2 . sigma_B^2`,
  a sum reduction sums variances, `exp`, `log`, `sqrt`, `rsqrt`, `tanh`, `logistic`,
  division and `pow` by their derivative at the observed input; data movement moves
  sigma with the data (the op itself runs on sigma); `max`, `min`, `clamp`, `select`
  pass it on. Ops without a rule (sort, scatter, collectives in a level-G program, ...)
  pass on the largest sigma of their operands: the 1-Lipschitz assumption, stated here
  so that a false failure through one of them is traced to it.

The tolerance is `LAMBDA` sigma per element. Integers and booleans are exact and compared
for equality; a comparison whose float inputs carry error may flip, which this analysis
does not bound. Memory: sigma arrays (f32) live as long as their values are still to be
used in their own block.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
from shardc.dialects import hlo
from shardc.interpreter.hlo_convolution import ConvParams, convolution
from shardc.interpreter.hlo_impls import dot_general, reduce
from shardc.interpreter.values import BF16, C64, C128, F8E4M3FN, F8E5M2, F16, F32, F64
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, UnknownLoc
from xdsl.ir import Attribute, BlockArgument, Operation, SSAValue

UNIT_ROUNDOFF: dict[Any, float] = {
    F64: 2.0**-53,
    F32: 2.0**-24,
    F16: 2.0**-11,
    BF16: 2.0**-8,
    F8E4M3FN: 2.0**-4,
    F8E5M2: 2.0**-3,
    C128: 2.0**-53,
    C64: 2.0**-24,
}
"""Half a unit in the last place of 1.0: the relative error of one rounding."""

ACCUMULATOR = {BF16: F32, F16: F32, F8E4M3FN: F32, F8E5M2: F32}
"""Low-precision sums accumulate in f32 (`interpreter.values.accumulation_dtype`)."""

LAMBDA = 6.0
"""A tolerance is LAMBDA sigma: exceeded by chance with probability about
2 exp(-LAMBDA^2 / 2) = 3e-8 per element."""

Sigma = np.ndarray | float
"""Per element (an f32 array of the value's shape), or one number for every element."""

_CONTROL = frozenset({"hlo.while", "hlo.case", "hlo.fusion", "scf.if", "scf.for"})
"""Ops whose results are what their regions yield (their inner ops are observed)."""

_EXACT = frozenset(
    {
        "abs", "neg", "max", "min", "clamp", "select", "broadcast", "reshape", "transpose",
        "slice", "concatenate", "pad", "reverse", "dynamic_slice", "dynamic_update_slice",
        "gather", "sort", "top_k", "real", "imag", "complex", "sign", "floor", "ceil",
        "round_nearest_afz", "round_nearest_even", "constant", "iota", "scatter",
    }
)  # fmt: skip
"""Ops whose float result is exact given their operands (no rounding of their own)."""

_MOVES = frozenset(
    {
        "broadcast", "reshape", "transpose", "slice", "concatenate", "pad", "reverse",
        "dynamic_slice", "dynamic_update_slice", "gather", "convert", "real", "imag",
    }
)  # fmt: skip
"""Data movement: sigma moves with the data (the op runs on sigma)."""


def _is_float(value: Any) -> bool:
    return isinstance(value, np.ndarray) and value.dtype in UNIT_ROUNDOFF


def _real(value: np.ndarray) -> np.ndarray:
    """|value| in f64 (complex: its modulus)."""
    return np.abs(value.astype(np.complex128 if value.dtype in (C64, C128) else np.float64))


def _zero(s: Sigma) -> bool:
    return isinstance(s, float) and s == 0.0


def _full(s: Sigma, shape: tuple[int, ...]) -> np.ndarray:
    return np.broadcast_to(np.asarray(s, dtype=np.float64), shape)


def _compact(s: Sigma) -> Sigma:
    """f32 storage; an all-zero array becomes 0.0."""
    if isinstance(s, float):
        return s
    s = np.asarray(s, dtype=np.float32)
    s = np.where(np.isnan(s), np.float32(np.inf), s)
    return 0.0 if not s.any() else s


class RoundingBounds:
    """An `Executor.observe` callback giving every float value its sigma (see above)."""

    def __init__(self, reordered: Mapping[Attribute, int] | None = None, devices: int = 1):
        self.reordered = reordered
        """Location -> partial sums of a contraction the compiled program computes in
        another order (`reordered_sums`); None: assume every contraction is, in a ring
        over all `devices`."""
        self.devices = devices
        self.sigma: dict[SSAValue, Sigma] = {}
        self.pending: dict[SSAValue, int] = {}
        """Uses in its own block not yet observed (then its sigma is dropped)."""

    def sigma_of(self, value: SSAValue) -> Sigma:
        """A value's sigma: recorded, or for a block argument its binding's."""
        s = self.sigma.get(value)
        if s is not None:
            return s
        if not isinstance(value, BlockArgument):
            return 0.0
        owner = value.block.parent_op()
        if owner is None or isinstance(owner, func.FuncOp):
            return 0.0  # the entry's inputs are exact
        i = value.index
        bound: Sigma = self.sigma_of(owner.operands[i]) if i < len(owner.operands) else 0.0
        for region in owner.regions:  # a loop's carried value: what the body yielded
            for block in region.blocks:
                term = block.last_op
                if term is not None and i < len(term.operands):
                    bound = np.maximum(bound, self.sigma.get(term.operands[i], 0.0))
        return bound

    def output_tolerances(self, function: func.FuncOp) -> list[Sigma]:
        """LAMBDA sigma of each result of `function`, after a run."""
        term = function.body.block.last_op
        assert term is not None
        return [LAMBDA * self.sigma_of(v) for v in term.operands]

    def __call__(
        self, op: Operation, vals: tuple[Any, ...], out: tuple[Any, ...], fn: Any, ft: Any, dev: Any
    ) -> None:
        sigmas = [self.sigma_of(v) for v in op.operands]
        if op.name in _CONTROL:
            carried = self._through_regions(op, sigmas)
            for r, v in zip(op.results, out, strict=False):
                self._keep(r, carried if _is_float(v) else 0.0)
        else:
            rerun = _Rerun(op, vals, fn, ft, dev)
            for i, (r, v) in enumerate(zip(op.results, out, strict=False)):
                if not _is_float(v):
                    self._keep(r, 0.0)
                    continue
                inherited = self._inherited(op, vals, v, sigmas, rerun, i)
                own = self._rounding(op, vals, v, inherited)
                if _zero(own):
                    total: Sigma = inherited
                elif _zero(inherited):
                    total = own
                else:
                    total = np.hypot(inherited, own)
                self._keep(r, _compact(total))
        self._release(op)

    def _keep(self, value: SSAValue, s: Sigma) -> None:
        self.sigma[value] = s
        block = value.owner.parent_block() if isinstance(value.owner, Operation) else None
        self.pending[value] = sum(1 for u in value.uses if u.operation.parent_block() is block)

    def _release(self, op: Operation) -> None:
        for v in op.operands:
            n = self.pending.get(v)
            if n is None:
                continue
            if n <= 1:
                del self.pending[v]
                self.sigma.pop(v, None)
            else:
                self.pending[v] = n - 1

    def _through_regions(self, op: Operation, sigmas: list[Sigma]) -> Sigma:
        bound = max((float(np.max(s)) for s in sigmas), default=0.0)
        for region in op.regions:
            for block in region.blocks:
                term = block.last_op
                if term is not None:
                    for v in term.operands:
                        bound = max(bound, float(np.max(self.sigma.get(v, 0.0))))
        return bound

    # what a result inherits from its operands ---------------------------------------

    def _inherited(
        self,
        op: Operation,
        vals: tuple[Any, ...],
        v: np.ndarray,
        sigmas: list[Sigma],
        rerun: _Rerun,
        index: int,
    ) -> Sigma:
        if all(_zero(s) for s in sigmas):
            return 0.0
        name = op.name.split(".", 1)[1]
        with np.errstate(all="ignore"):
            if name in _MOVES:
                return rerun.moved(sigmas, index)
            rule = _ELEMENTWISE.get(name)
            if rule is not None:
                return rule(vals, v, sigmas)
            if name in ("dot", "convolution"):
                return _contracted(op, vals, v, sigmas)
            if name in ("reduce", "reduce_window"):
                return rerun.reduced(sigmas, index)
        return max(float(np.max(s)) for s in sigmas)  # the 1-Lipschitz assumption

    # its own roundings ------------------------------------------------------------

    def _rounding(
        self, op: Operation, vals: tuple[Any, ...], v: np.ndarray, inherited: Sigma
    ) -> Sigma:
        """The rounding difference the op adds: a reordered contraction's partial sums,
        or one rounding of a result whose exact value already differs (both programs
        round, possibly to neighbouring values). An op on identical operands computes
        identical results in both programs."""
        name = op.name.split(".", 1)[1]
        if name in _EXACT or (name == "convert" and _widens(vals[0], v)):
            return 0.0
        u = UNIT_ROUNDOFF[v.dtype]
        with np.errstate(all="ignore"):
            terms = _sum_terms(op, vals, v)
            if terms is None:
                if self.reordered is None:  # a kernel: its own vector code for every op
                    return 2 * u * _real(v)
                return 0.0 if _zero(inherited) else np.where(inherited > 0, u * _real(v), 0.0)
            root_squares, n = terms
            acc = UNIT_ROUNDOFF[ACCUMULATOR.get(v.dtype, v.dtype)]
            size = np.maximum(_real(v), root_squares)
            partials = self._partial_sums(op)
            roundings = 2 if partials is None else 3 + (partials if partials > 1 else 0)
            return size * math.sqrt(roundings * u * u + 2 * n * acc * acc)

    def _partial_sums(self, op: Operation) -> int | None:
        """How many partial sums the compiled program makes of this contraction (1: one,
        but in another order), or None if it sums the same terms (though maybe with
        another kernel: numpy picks its matmul by shape, with or without FMA, so even
        then the accumulator and the final rounding may differ)."""
        if not isinstance(op, hlo.DotOp | hlo.ConvolutionOp | hlo.ReduceOp):
            return None
        if self.reordered is None:
            return self.devices
        if isinstance(op.location, UnknownLoc):
            return max(self.reordered.values(), default=1)
        return self.reordered.get(op.location)


class _Rerun:
    """The observed op run once more, on sigma in place of its float operands."""

    def __init__(self, op: Operation, vals: tuple[Any, ...], fn: Any, ft: Any, dev: Any):
        self.op, self.vals, self.fn, self.ft, self.dev = op, vals, fn, ft, dev

    def run(self, vals: tuple[Any, ...], index: int) -> np.ndarray | None:
        try:
            if self.fn is None:
                out = self.dev.interp.run_op(self.op, vals)
            else:
                out = self.fn(self.ft, self.dev.interp, self.op, vals)
                out = getattr(out, "values", out)
            return np.asarray(out[index])
        except Exception:  # an implementation that does not take sigma: no rule
            return None

    def _on(self, sigmas: list[Sigma], square: bool) -> tuple[Any, ...]:
        args = []
        for x, s in zip(self.vals, sigmas, strict=False):
            if _is_float(x):
                full = _full(s, x.shape)
                args.append((full * full if square else full).astype(x.dtype))
            else:
                args.append(x)
        return tuple(args)

    def moved(self, sigmas: list[Sigma], index: int) -> Sigma:
        out = self.run(self._on(sigmas, square=False), index)
        if out is None:
            return max(float(np.max(s)) for s in sigmas)
        return out.astype(np.float64)

    def reduced(self, sigmas: list[Sigma], index: int) -> Sigma:
        """Sum reductions add variances; max / min and bodies pass the largest on."""
        kind = getattr(self.op, "kind", None)
        if getattr(kind, "data", None) == "add":
            out = self.run(self._on(sigmas, square=True), index)
            if out is not None:
                return np.sqrt(np.abs(out.astype(np.float64)))
        return max(float(np.max(s)) for s in sigmas)


def _contracted(op: Operation, vals: tuple[Any, ...], v: np.ndarray, sigmas: list[Sigma]) -> Sigma:
    """sigma_out^2 = sigma_A^2 . B^2 + A^2 . sigma_B^2 (the contraction on f64 squares)."""
    a, b = (x.astype(np.float64) for x in vals[:2])
    total = np.zeros(v.shape)
    if not _zero(sigmas[0]):
        total += _contract(op, _full(sigmas[0], a.shape) ** 2, b * b, v.shape)
    if not _zero(sigmas[1]):
        total += _contract(op, a * a, _full(sigmas[1], b.shape) ** 2, v.shape)
    return np.sqrt(total)


def _contract(op: Operation, a: np.ndarray, b: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """The dot or convolution `op` applied to f64 arrays, in f64."""
    if isinstance(op, hlo.DotOp):
        return dot_general(a, b, op.batching, op.contracting, np.dtype(np.float64))
    assert isinstance(op, hlo.ConvolutionOp)
    return convolution(a, b, ConvParams.of(op), shape, np.dtype(np.float64))


def _sum_terms(
    op: Operation, vals: tuple[Any, ...], v: np.ndarray
) -> tuple[np.ndarray, int] | None:
    """For a contraction: (sqrt of the sum of its squared terms, terms per element)."""
    if isinstance(op, hlo.DotOp | hlo.ConvolutionOp):
        a, b = (x.astype(np.float64) for x in vals[:2])
        squares = _contract(op, a * a, b * b, v.shape)
        if isinstance(op, hlo.DotOp):
            n = math.prod(a.shape[d] for d in op.contracting[0])
        else:  # at most every kernel element
            n = b.size
        return np.sqrt(squares), max(1, n)
    if isinstance(op, hlo.ReduceOp) and not op.has_body and op.kind is not None:
        if op.kind.data != "add":
            return None
        x = vals[0].astype(np.float64)
        squares = reduce(x * x, "add", op.dims, np.dtype(np.float64))
        return np.sqrt(squares), max(1, x.size // max(1, v.size))
    return None


def _widens(x: Any, v: np.ndarray) -> bool:
    """A float-to-float convert that loses nothing."""
    return _is_float(x) and UNIT_ROUNDOFF[v.dtype] <= UNIT_ROUNDOFF[x.dtype]


# elementwise rules: (operand values, result, operand sigmas) -> inherited sigma --------


def _f(x: np.ndarray) -> np.ndarray:
    return x.astype(np.complex128 if x.dtype in (C64, C128) else np.float64)


def _add(vals: Any, v: np.ndarray, s: list[Sigma]) -> Sigma:
    return np.hypot(s[0], s[1])


def _mul(vals: Any, v: np.ndarray, s: list[Sigma]) -> Sigma:
    return np.hypot(np.abs(_f(vals[1])) * s[0], np.abs(_f(vals[0])) * s[1])


def _div(vals: Any, v: np.ndarray, s: list[Sigma]) -> Sigma:
    return np.hypot(s[0], np.abs(_f(v)) * s[1]) / np.abs(_f(vals[1]))


def _pow(vals: Any, v: np.ndarray, s: list[Sigma]) -> Sigma:
    x, y, out = _f(vals[0]), _f(vals[1]), _f(v)
    return np.hypot(np.abs(y * x ** (y - 1)) * s[0], np.abs(out * np.log(np.abs(x))) * s[1])


def _unary(derivative: Any) -> Any:
    """A rule for y = f(x): sigma_y = |f'(x)| sigma_x (derivative of (x, y))."""
    return lambda vals, v, s: np.abs(derivative(_f(vals[0]), _f(v))) * s[0]


def _first(vals: Any, v: np.ndarray, s: list[Sigma]) -> Sigma:
    return s[0]


def _larger(vals: Any, v: np.ndarray, s: list[Sigma]) -> Sigma:
    return np.maximum(s[0], s[1])


def _select(vals: Any, v: np.ndarray, s: list[Sigma]) -> Sigma:
    return np.where(vals[0], _full(s[1], v.shape), _full(s[2], v.shape))


_ELEMENTWISE: dict[str, Any] = {
    "add": _add,
    "sub": _add,
    "mul": _mul,
    "div": _div,
    "pow": _pow,
    "max": _larger,
    "min": _larger,
    "select": _select,
    "clamp": lambda vals, v, s: s[1],
    "abs": _first,
    "neg": _first,
    "exp": _unary(lambda x, y: y),
    "expm1": _unary(lambda x, y: y + 1),
    "log": _unary(lambda x, y: 1 / x),
    "log1p": _unary(lambda x, y: 1 / (1 + x)),
    "sqrt": _unary(lambda x, y: 0.5 / y),
    "rsqrt": _unary(lambda x, y: 0.5 * y / x),
    "cbrt": _unary(lambda x, y: 1 / (3 * y * y)),
    "tanh": _unary(lambda x, y: 1 - y * y),
    "logistic": _unary(lambda x, y: y * (1 - y)),
    "sin": _unary(lambda x, y: np.cos(x)),
    "cos": _unary(lambda x, y: np.sin(x)),
    "erf": _unary(lambda x, y: 2 / math.sqrt(math.pi) * np.exp(-x * x)),
}
"""Ops with their own rule (the others: _MOVES, reductions, contractions, or the
1-Lipschitz assumption)."""


def reordered_sums(compiled: ModuleOp, reference: ModuleOp) -> dict[Attribute, int] | None:
    """
    The contractions of `reference` that `compiled` sums in another order, by location
    (every op a pass creates keeps the location of the op it came from): location -> how
    many partial contractions of fewer terms `compiled` has there (a partial dot per
    device: 1; a collective-matmul ring of k steps: k). A compiled op without a location
    makes every contraction count as reordered; a level-T kernel (its sums are tiled
    loops and DMA rings, not hlo ops) gives None: every contraction reordered.
    """
    if any(op.name.startswith("tpu.") for op in compiled.walk()):
        return None
    full: dict[Attribute, int] = {}
    for op in reference.walk():
        n = _static_terms(op)
        if n is not None:
            full[op.location] = max(full.get(op.location, 0), n)
    partial: dict[Attribute, int] = {}
    for op in compiled.walk():
        n = _static_terms(op)
        if n is None:
            continue
        if isinstance(op.location, UnknownLoc):
            return {loc: 1 for loc in full}
        if n < full.get(op.location, 0) or isinstance(op, hlo.ConvolutionOp):
            partial[op.location] = partial.get(op.location, 0) + 1
    return partial


def _static_terms(op: Operation) -> int | None:
    """Terms per result element of a contraction, from its types (None: not one)."""
    if isinstance(op, hlo.DotOp):
        shape = op.operands[0].type.get_shape()  # pyright: ignore[reportAttributeAccessIssue]
        return math.prod(shape[d] for d in op.contracting[0])
    if isinstance(op, hlo.ReduceOp) and not op.has_body:
        shape = op.operands[0].type.get_shape()  # pyright: ignore[reportAttributeAccessIssue]
        return math.prod(shape[d] for d in op.dims)
    if isinstance(op, hlo.ConvolutionOp):
        return 1
    return None
