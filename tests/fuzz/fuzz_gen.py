"""The program generator: a seed gives a shape-correct program and its environments.

``generate(seed)`` draws symbols (some with a lower bound), the environments (the run
ones: every symbol at its lower bound, e.g. 0, then at 1, then at random sizes; then
probe environments, never run), 1-3 inputs whose dims mix ints (0 and 1 included),
symbols and, behind ``Features.compound_dims``, expressions like ``2 * n + 1``; then
3-12 statements drawn from :data:`fuzz_ops.FAMILIES`. Every statement is checked with
``jax.eval_shape`` at every environment before it joins the program: jax is the oracle
for validity and for dtypes (x64, weak types); the families predict shapes and the
generator insists jax agrees (:class:`GeneratorError` otherwise, a bug of the fuzzer).

Why a seeded generator rather than hypothesis: each program costs an LLVM compile
(0.1-0.5 s), so hypothesis's shrinking, blind to the program's structure, would spend
hundreds of compiles on one failure, while :mod:`fuzz_shrink` removes outputs,
statements and environments directly and needs tens. A seed names a program on any
machine and any hypothesis version, so the 10^4-program run shards by seed range and a
failure is replayed from its seed alone.
"""

from __future__ import annotations

import math
import random
import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass, replace

import fuzz_jax
from fuzz_known import avoid
from fuzz_model import (
    BOOL_RANGE,
    DTYPES,
    INT_RANGE,
    TOLERANCE,
    UNKNOWN,
    Dim,
    Input,
    Program,
    Range,
    SpecDim,
    Stmt,
    Symbol,
    Val,
    is_float,
    is_int,
)
from fuzz_ops import FAMILIES, Proposal


@dataclass(frozen=True)
class Features:
    """Capabilities of issue 9 that land separately; each switches on a kind of input.

    ``compound_dims``: spec dims that are expressions (``2 * n``, ``n + 1``, ``n * m``),
    solved from the arguments at call time (issue 9 part 1).
    """

    compound_dims: bool = False


#: What the default suite generates; switch a feature on when it is merged.
FEATURES = Features()

RUN_ENVS = 4
PROBE_ENVS = 3
#: The most elements a value may have at any environment (the large one included).
MAX_ELEMENTS = 1 << 15

_DTYPE_WEIGHTS = {
    "float32": 30,
    "float64": 10,
    "float16": 8,
    "bfloat16": 7,
    "int32": 12,
    "int64": 8,
    "int8": 5,
    "int16": 4,
    "uint8": 4,
    "bool": 12,
}


#: Families whose result keeps the weak type of weakly typed scalar operands in relaxjax.
_SCALAR_ARITHMETIC = frozenset({"unary", "binary", "compare", "where", "clip"})


class GeneratorError(AssertionError):
    """The fuzzer predicted a shape that jax does not compute: a bug of the fuzzer."""


class Gen:
    """The state of one program being generated (what families see as ``g``)."""

    def __init__(
        self,
        seed: int,
        features: Features = FEATURES,
        symbols: tuple[Symbol, ...] | None = None,
        inputs: tuple[Input, ...] | None = None,
    ) -> None:
        """Symbols and inputs are drawn from ``seed`` unless given."""
        self.seed = seed
        self.rng = random.Random(seed)
        self.features = features
        self.dtypes = DTYPES
        self.symbols = self._symbols() if symbols is None else symbols
        self.envs = self._envs()
        self.E = len(self.envs)
        self.inputs = self._inputs() if inputs is None else inputs
        self._fit_large_env()
        self.scope: list[Val] = [self._input_val(i) for i in self.inputs]
        self.stmts: list[Stmt] = []
        self._counter = 0
        self.rejected: dict[str, int] = {}

    # -- symbols, environments, inputs --------------------------------------------------

    def _symbols(self) -> tuple[Symbol, ...]:
        names = self.rng.sample(["n", "m", "k"], self.rng.choice([1, 1, 2, 2, 3]))
        return tuple(
            Symbol(name, self.rng.choices([0, 1, 2], weights=[70, 25, 5])[0]) for name in names
        )

    def _envs(self) -> tuple[dict[str, int], ...]:
        low = {s.name: s.lower for s in self.symbols}
        one = {s.name: max(s.lower, 1) for s in self.symbols}
        if one == low:
            one = {s.name: s.lower + 1 for s in self.symbols}
        sizes = self.rng.sample(range(2, 6), len(self.symbols))
        mid = {s.name: max(s.lower, v) for s, v in zip(self.symbols, sizes)}
        # past a vector's width and a parallel chunk: kernels' main loops and tails both run
        large = {s.name: self.rng.choice([9, 13, 17, 24, 33, 40]) for s in self.symbols}
        probes = []
        for _ in range(PROBE_ENVS):
            values = self.rng.sample(range(2, 14), len(self.symbols))
            probes.append({s.name: max(s.lower, v) for s, v in zip(self.symbols, values)})
        return (low, one, mid, large, *probes)

    def _fit_large_env(self) -> None:
        """Shrink the large environment's sizes until every input fits MAX_ELEMENTS."""
        large = self.envs[3]
        while any(math.prod(i.shape(large)) > MAX_ELEMENTS for i in self.inputs):
            name = max(large, key=large.get)
            if large[name] <= 2:
                break
            large[name] = max(2, large[name] * 2 // 3)

    def _spec_dim(self) -> SpecDim:
        r = self.rng.random()
        if r < 0.35:
            zero = 0 if avoid("static-zero-extent") else 4
            values = [0, 1, 2, 3, 4, 8, 17]  # 8, 17: a vector's width, and one past two
            value = self.rng.choices(values, weights=[zero, 30, 30, 25, 11, 3, 3])[0]
            return SpecDim(str(value), offset=value)
        symbol = self.rng.choice(self.symbols).name
        if self.features.compound_dims and r > 0.85:
            coef, offset = self.rng.choice([(2, 0), (1, 1), (2, 1), (3, 0), (1, 2)])
            others = [s.name for s in self.symbols if s.name != symbol]
            if others and self.rng.random() < 0.25:
                other = self.rng.choice(others)
                return SpecDim(f"{symbol} * {other}", 0, symbol, 1, other)
            text = (f"{coef} * {symbol}" if coef != 1 else symbol) + (
                f" + {offset}" if offset else ""
            )
            return SpecDim(text, offset, symbol, coef)
        return SpecDim(symbol, symbol=symbol)

    def _inputs(self) -> tuple[Input, ...]:
        inputs = []
        count = self.rng.choice([1, 2, 2, 3])
        if count > 1 and self.rng.random() < 0.2:  # a Python scalar, specialised on its type
            count -= 1
            dtype = self.rng.choice(["float64", "float64", "int64", "bool"])
            low, high = {"float64": (-2.0, 2.0), "int64": (-3, 3), "bool": (0, 1)}[dtype]
            inputs.append(Input("s0", (), dtype, low, high, scalar=True))
        for i in range(count):
            rank = self.rng.choices([0, 1, 2, 3, 4], weights=[4, 25, 40, 22, 9])[0]
            dims = tuple(self._spec_dim() for _ in range(rank))
            dtype = self.rng.choices(list(_DTYPE_WEIGHTS), weights=list(_DTYPE_WEIGHTS.values()))[0]
            low, high = self._value_range(dtype)
            special = is_float(dtype) and self.rng.random() < 0.12
            inputs.append(Input(f"x{i}", dims, dtype, low, high, special))
        return self._bind_every_symbol(tuple(inputs))

    def _bind_every_symbol(self, inputs: tuple[Input, ...]) -> tuple[Input, ...]:
        """Every symbol a spec uses can be bound by a call: it appears in some dim linear
        in it alone (``n``, ``2 * n + 1``), which the call solves; a product (``n * m``)
        only checks. A symbol that is not gets a dim of its own on the first tensor."""
        linear = {d.symbol for i in inputs for d in i.dims if d.symbol and not d.product}
        used = {d.symbol for i in inputs for d in i.dims if d.symbol} | {
            d.product for i in inputs for d in i.dims if d.product
        }
        missing = sorted(used - linear)
        if not missing:
            return inputs
        index = next(i for i, inp in enumerate(inputs) if not inp.scalar)
        extra = tuple(SpecDim(name, symbol=name) for name in missing)
        bound = replace(inputs[index], dims=inputs[index].dims + extra)
        return (*inputs[:index], bound, *inputs[index + 1 :])

    def _value_range(self, dtype: str) -> tuple[float, float]:
        if is_float(dtype):
            return self.rng.choice([(-2.0, 2.0), (-2.0, 2.0), (0.25, 2.0)])
        if dtype == "bool":
            return (0, 1)
        if dtype == "uint8":
            return (0, 9)
        return self.rng.choice([(-5, 5), (0, 5), (1, 5)])

    def _input_val(self, inp: Input) -> Val:
        shape = tuple(
            Dim(tuple(d.size(env) for env in self.envs), d.offset if d.is_static else None)
            for d in inp.dims
        )
        rng = BOOL_RANGE if inp.dtype == "bool" else Range(inp.low, inp.high)
        if inp.special:
            rng = Range(-math.inf, math.inf, True)
        return Val(inp.name, shape, inp.dtype, inp.scalar, rng, True, 0.0, not is_float(inp.dtype))

    # -- what families use ----------------------------------------------------------------

    def pick(self, pred: Callable[[Val], bool] | None = None) -> Val | None:
        """A value in scope satisfying ``pred``; recent values are likelier (deep chains)."""
        pool = [(i, v) for i, v in enumerate(self.scope) if pred is None or pred(v)]
        if not pool:
            return None
        weights = [1 + i for i, _ in pool]
        return self.rng.choices([v for _, v in pool], weights=weights)[0]

    def val(self, name: str) -> Val:
        return next(v for v in self.scope if v.name == name)

    def const(self, value: int) -> Dim:
        return Dim.const(value, self.E)

    def prod_dim(self, shape: tuple[Dim, ...]) -> Dim:
        total = self.const(1)
        for d in shape:
            total = total.combine(lambda x, y: x * y, d)
        return total

    def _axis_refs(self) -> list[tuple[str, Dim]]:
        return [(f"{v.name}.shape[{i}]", d) for v in self.scope for i, d in enumerate(v.shape)]

    def any_dim_ref(self) -> tuple[str, Dim]:
        """A dim as code: an int, or a value's axis (``v.shape[i]``), maybe plus an int."""
        refs = self._axis_refs()
        if not refs or self.rng.random() < 0.3:
            value = self.rng.choice([0, 1, 1, 2, 3])
            return str(value), self.const(value)
        text, dim = self.rng.choice(refs)
        if self.rng.random() < 0.15:
            k = self.rng.choice([1, 2])
            return f"{text} + {k}", dim.combine(lambda x: x + k)
        return text, dim

    def positive_dim_ref(self) -> tuple[str, Dim] | None:
        refs = [(t, d) for t, d in self._axis_refs() if d.positive]
        return self.rng.choice(refs) if refs else None

    def uses_of(self, text: str) -> list[str]:
        """The values a piece of code reads (``v3.shape[0]`` reads ``v3``)."""
        names = {v.name for v in self.scope}
        return [n for n in dict.fromkeys(re.findall(r"\b[vx]\d+\b", text)) if n in names]

    # -- statements -------------------------------------------------------------------------

    def _fresh(self) -> str:
        name = f"v{self._counter}"
        self._counter += 1
        return name

    def add(self, proposal: Proposal) -> bool:
        """Check ``proposal`` with jax at every run environment and one probe; add it to the
        program when jax accepts it there with the predicted shapes (the other probes only
        decide which dims are equal). Returns whether it was added."""
        values = [self.val(u) for u in proposal.uses]
        fn = fuzz_jax.lambda_of(proposal.uses, proposal.expr, fuzz_jax.jnp, fuzz_jax.JAX_NN)
        results = None
        for env in (3, 0, 1, 2, self.E - 1):  # the large environment first: it rejects most
            avals = [(tuple(d.vals[env] for d in v.shape), v.dtype, v.weak) for v in values]
            try:
                with warnings.catch_warnings():  # jax folding constants: invalid casts
                    warnings.simplefilter("ignore")
                    out = fuzz_jax.abstract_results(fn, avals)
            except Exception:  # noqa: BLE001 - jax rejects the statement here: drop it
                self.rejected[proposal.family] = self.rejected.get(proposal.family, 0) + 1
                return False
            self._check_shapes(proposal, out, env)
            results = out
        if any(dtype not in DTYPES for _, dtype, _ in results):
            return False  # e.g. uint64 from summing uint8: not a relaxjax dtype
        weak_scalars = all(v.weak for v in values) and proposal.family in _SCALAR_ARITHMETIC
        if avoid("weak-scalar-results") and any(w for _, _, w in results) and not weak_scalars:
            return False  # weak in jax, strong in relaxjax: only arithmetic on scalars stays weak
        if any(
            math.prod(d.vals[e] for d in shape) > MAX_ELEMENTS
            for shape in proposal.shapes
            for e in range(self.E)
        ):
            return False  # too large to run quickly
        if avoid("static-zero-extent") and any(
            max(d.vals) == 0 for shape in proposal.shapes for d in shape
        ):
            return False  # 0 at every environment: relaxjax may well prove it static
        targets = tuple(self._fresh() for _ in results)
        inherited = max((v.tol for v in values), default=0.0)
        discrete = proposal.family == "creation" or all(v.discrete for v in values)
        vals = tuple(
            Val(
                name,
                shape,
                dtype,
                weak,
                _clamp(rng, dtype),
                proposal.exact,
                _tolerance(dtype, proposal.exact, inherited),
                discrete or not is_float(dtype),
            )
            for name, shape, (_, dtype, weak), rng in zip(
                targets, proposal.shapes, results, proposal.ranges
            )
        )
        stmt = Stmt(targets, proposal.expr, vals, proposal.uses, proposal.family, proposal.unpack)
        self.stmts.append(stmt)
        self.scope.extend(vals)
        return True

    def _check_shapes(self, proposal: Proposal, out: list[tuple], env: int) -> None:
        predicted = [tuple(d.vals[env] for d in shape) for shape in proposal.shapes]
        actual = [shape for shape, _, _ in out]
        if predicted != actual:
            raise GeneratorError(
                f"seed {self.seed}: {proposal.family} {proposal.expr!r} at environment "
                f"{self.envs[env]}: predicted shapes {predicted}, jax gives {actual}; inputs "
                + ", ".join(
                    f"{u}: {tuple(d.vals[env] for d in self.val(u).shape)}" for u in proposal.uses
                )
            )

    def statement(self) -> bool:
        """Try one family; True when a statement was added."""
        family = self.rng.choices([f for f, _ in FAMILIES], weights=[w for _, w in FAMILIES])[0]
        proposal = family(self)
        if proposal is None:
            return False
        return self.add(proposal)


def _tolerance(dtype: str, exact: bool, inherited: float) -> float:
    """A value is as precise as its dtype and the least precise rounded value it reads
    (a float32 layer_norm of a rounded bfloat16 product is only as good as bfloat16)."""
    if not is_float(dtype):
        return 0.0
    if exact:
        return inherited
    return max(TOLERANCE[dtype], inherited)


def _clamp(rng: Range | None, dtype: str) -> Range:
    """A family's range made consistent with the result's dtype (integers wrap)."""
    if dtype == "bool":
        return BOOL_RANGE
    if is_int(dtype):
        lo, hi = INT_RANGE[dtype]
        if rng is None or not rng.within(lo, hi):
            return Range(lo, hi)
        return Range(rng.lo, rng.hi)
    if rng is None:
        return UNKNOWN
    top = {"float16": 65504.0, "bfloat16": 3.38e38, "float32": 3.4e38}.get(dtype)
    if top is not None and (abs(rng.lo) > top or abs(rng.hi) > top):
        return Range(
            rng.lo if abs(rng.lo) <= top else -float("inf") if rng.lo < 0 else rng.lo,
            rng.hi if abs(rng.hi) <= top else float("inf"),
            rng.nan,
        )
    return rng


def generate(seed: int, features: Features = FEATURES) -> Program:
    """The program of ``seed``: 3-12 statements over 1-3 inputs, pruned to its outputs."""
    g = Gen(seed, features)
    target = g.rng.randint(3, 12)
    attempts = 0
    while len(g.stmts) < target and attempts < 40 * target:
        attempts += 1
        g.statement()
    if not g.stmts:  # nothing fitted: at least one statement
        g.add(
            Proposal.one(
                f"{g.scope[0].name} == {g.scope[0].name}",
                [g.scope[0].name],
                g.scope[0].shape,
                BOOL_RANGE,
                True,
                "compare",
            )
        )
    outputs, kind = _outputs(g)
    program = Program(seed, g.symbols, g.inputs, tuple(g.stmts), outputs, kind, g.envs, RUN_ENVS)
    return prune(program)


def handmade(symbols: tuple[Symbol, ...], inputs: tuple[Input, ...], exprs: list[str]) -> Program:
    """A program written by hand (for tests): statement ``k`` binds ``v<k>`` to
    ``exprs[k]``, which may read the inputs and earlier statements; the last is the output.
    Shapes and dtypes come from jax; nothing is exact (values compare with tolerance)."""
    g = Gen(0, symbols=symbols, inputs=inputs)
    for expr in exprs:
        names = {v.name for v in g.scope}
        uses = tuple(dict.fromkeys(n for n in re.findall(r"\b\w+\b", expr) if n in names))
        values = [g.val(u) for u in uses]
        fn = fuzz_jax.lambda_of(uses, expr, fuzz_jax.jnp, fuzz_jax.JAX_NN)
        columns = [
            fuzz_jax.abstract_results(
                fn, [(tuple(d.vals[e] for d in v.shape), v.dtype, v.weak) for v in values]
            )
            for e in range(g.E)
        ]
        shapes = tuple(
            tuple(Dim(tuple(col[r][0][axis] for col in columns)) for axis in range(len(out[0])))
            for r, out in enumerate(columns[0])
        )
        if not g.add(Proposal(expr, uses, shapes, (None,) * len(shapes), False, "handmade")):
            raise ValueError(f"handmade: the statement {expr!r} was refused")
    last = g.stmts[-1].targets[-1]
    return Program(0, g.symbols, g.inputs, tuple(g.stmts), (last,), "single", g.envs, RUN_ENVS)


def _outputs(g: Gen) -> tuple[tuple[str, ...], str]:
    used = {u for s in g.stmts for u in s.uses}
    results = [r.name for s in g.stmts for r in s.results]
    sinks = [r for r in results if r not in used]
    outputs = sinks[-4:] if sinks else results[-1:]
    if len(outputs) < 4 and g.rng.random() < 0.3:
        extra = [r for r in results if r not in outputs]
        if extra:
            outputs = [g.rng.choice(extra), *outputs]
    if len(outputs) == 1 and g.rng.random() < 0.7:
        return tuple(outputs), "single"
    return tuple(outputs), g.rng.choices(["tuple", "list", "dict"], weights=[6, 2, 2])[0]


def prune(program: Program) -> Program:
    """Drop the statements no output depends on (inputs stay: they bind symbols)."""
    needed = set(program.outputs)
    kept = []
    for stmt in reversed(program.stmts):
        if needed & set(stmt.targets):
            kept.append(stmt)
            needed |= set(stmt.uses)
    stmts = tuple(reversed(kept))
    return program.with_(stmts=stmts)
