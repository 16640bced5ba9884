"""The fuzzer's program model: dims known at every environment, abstract values,
straight-line statements, and programs that render to Python source.

A program is generated against a fixed list of *environments* (symbol values): the
run environments, at which it is compiled-once-and-called and compared with jax, then
probe environments, never run, that stand for "every other value" while generating (a
relation that holds at all of them is treated as holding for every value). A dim is the
tuple of its sizes at every environment (:class:`Dim`), so equality, non-emptiness and
divisibility are decided without a symbolic algebra of our own (the thing under test
has one; the fuzzer must not share its mistakes).

The source of a program is a function ``program(np_, nn, x0, x1, ...)`` written once
against the jax.numpy/jax.nn API: called with ``relaxjax.numpy``/``relaxjax.nn``
inside ``@relax.jit`` it is the program under test, called with ``jax.numpy`` and
:data:`JAX_NN` it is the reference.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

FLOATS = ("float16", "bfloat16", "float32", "float64")
SIGNED = ("int8", "int16", "int32", "int64")
INTS = (*SIGNED, "uint8")
DTYPES = (*FLOATS, *INTS, "bool")

#: The representable range of each integer dtype (bool is 0..1).
INT_RANGE = {
    "int8": (-128, 127),
    "int16": (-(2**15), 2**15 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1),
    "uint8": (0, 255),
    "bool": (0, 1),
}


#: The relative precision of a rounded value of each float dtype, for comparisons (a
#: few ulps of a short chain of ops: float32 sums reassociate, half precisions round
#: intermediates differently).
TOLERANCE = {"float64": 1e-7, "float32": 2e-4, "float16": 2e-2, "bfloat16": 8e-2}


def is_float(dtype: str) -> bool:
    return dtype in FLOATS


def is_int(dtype: str) -> bool:
    return dtype in INTS


# --------------------------------------------------------------------------- dims


@dataclass(frozen=True, slots=True)
class Dim:
    """A size at every environment; ``static`` when relaxjax knows it while tracing
    (an int in a spec, or ints combined), ``spec`` the spec text when it is one."""

    vals: tuple[int, ...]
    static: int | None = None

    @staticmethod
    def const(value: int, envs: int) -> Dim:
        return Dim((value,) * envs, value)

    def same(self, other: Dim) -> bool:
        """Equal at every environment (so, for the fuzzer, for every symbol value)."""
        return self.vals == other.vals

    @property
    def positive(self) -> bool:
        """At least 1 at every environment (a reduction over it is never empty)."""
        return min(self.vals) >= 1

    @property
    def min(self) -> int:
        return min(self.vals)

    def at(self, env: int) -> int:
        return self.vals[env]

    def combine(self, fn: Callable[..., int], *others: Dim) -> Dim:
        """``fn`` applied at every environment; static when every operand is."""
        dims = (self, *others)
        vals = tuple(fn(*col) for col in zip(*(d.vals for d in dims)))
        statics = [d.static for d in dims]
        static = fn(*statics) if all(s is not None for s in statics) else None
        return Dim(vals, static)


def broadcast_dims(a: Dim, b: Dim) -> Dim | None:
    """numpy broadcasting of two dims, when valid at every environment and decidable by
    relaxjax without a run-time check failing (equal dims, or a static 1)."""
    if a.same(b):
        return a if a.static is not None or b.static is None else b
    if a.static == 1:
        return b
    if b.static == 1:
        return a
    return None


def broadcast_shapes(*shapes: Sequence[Dim]) -> tuple[Dim, ...] | None:
    """The broadcast of several shapes, or None when they do not broadcast."""
    rank = max((len(s) for s in shapes), default=0)
    out: list[Dim] = []
    for axis in range(rank):
        dims = [s[len(s) - rank + axis] for s in shapes if len(s) - rank + axis >= 0]
        result = dims[0]
        for dim in dims[1:]:
            merged = broadcast_dims(result, dim)
            if merged is None:
                return None
            result = merged
        out.append(result)
    return tuple(out)


# --------------------------------------------------------------------------- values


@dataclass(frozen=True, slots=True)
class Range:
    """Bounds on every element of a value (at every environment); ``nan``: may hold NaN."""

    lo: float
    hi: float
    nan: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "lo", _float(self.lo))
        object.__setattr__(self, "hi", _float(self.hi))

    @property
    def finite(self) -> bool:
        return math.isfinite(self.lo) and math.isfinite(self.hi) and not self.nan

    def excludes_zero(self) -> bool:
        return not self.nan and (self.lo > 0 or self.hi < 0)

    def within(self, lo: float, hi: float) -> bool:
        return self.finite and lo <= self.lo and self.hi <= hi

    def union(self, other: Range) -> Range:
        return Range(min(self.lo, other.lo), max(self.hi, other.hi), self.nan or other.nan)


def _float(x: float) -> float:
    """``x`` as a float; an int too large for one is an infinity of its sign."""
    try:
        return float(x)
    except OverflowError:
        return math.inf if x > 0 else -math.inf


UNKNOWN = Range(-math.inf, math.inf, True)
BOOL_RANGE = Range(0, 1)


@dataclass(frozen=True, slots=True)
class Val:
    """An abstract value in scope: a name in the source, its shape and dtype (``weak``:
    jax's weak type), the range of its elements, and whether it is ``exact`` (computed
    without rounding, so two implementations agree bit for bit: data movement, integer
    and boolean ops, comparisons of exact values...)."""

    name: str
    shape: tuple[Dim, ...]
    dtype: str
    weak: bool = False
    range: Range = UNKNOWN
    exact: bool = False
    tol: float = 0.0  # the relative precision it is compared with (0: exactly)
    discrete: bool = True  # computed from integers, bools and constants only: its rounded
    # values sit on or next to round numbers, where discontinuous ops (floor, comparisons)
    # turn a last-bit difference into a different answer

    @property
    def rank(self) -> int:
        return len(self.shape)

    def size_positive(self) -> bool:
        """Non-empty at every environment."""
        return all(d.positive for d in self.shape)

    def may_be_empty(self) -> bool:
        return not self.size_positive()


# --------------------------------------------------------------------------- symbols, inputs


@dataclass(frozen=True, slots=True)
class Symbol:
    """A symbolic dim of the specs: ``relax.sym(name, lower=...)``."""

    name: str
    lower: int = 0

    def declaration(self) -> str:
        bounds = f", lower={self.lower}" if self.lower else ""
        return f'{self.name} = relax.sym("{self.name}"{bounds})'


@dataclass(frozen=True, slots=True)
class SpecDim:
    """One dim of an input's spec: ``text`` is Python over the symbols' variables
    (``3``, ``n``, ``2 * n + 1``); ``coef``/``symbol``/``offset`` say it is
    ``coef * symbol + offset`` (``symbol`` None: the int ``offset``); ``product`` names
    a second symbol multiplying the first (``n * m``, only with compound dims)."""

    text: str
    offset: int = 0
    symbol: str | None = None
    coef: int = 1
    product: str | None = None

    @property
    def is_static(self) -> bool:
        return self.symbol is None

    @property
    def is_bare_symbol(self) -> bool:
        return self.symbol is not None and self.coef == 1 and not self.offset and not self.product

    def size(self, env: dict[str, int]) -> int:
        if self.symbol is None:
            return self.offset
        value = env[self.symbol] * (env[self.product] if self.product else 1)
        return self.coef * value + self.offset


@dataclass(frozen=True, slots=True)
class Input:
    """A parameter: its spec dims and dtype, and how its test values are drawn
    (``low``..``high``: uniform floats or integers in that closed range; ``special``:
    about one element in eight replaced by NaN, +inf or -inf). A ``scalar`` input is a
    Python ``float``, ``int`` or ``bool`` (dtype float64, int64 or bool, weakly typed)."""

    name: str
    dims: tuple[SpecDim, ...]
    dtype: str
    low: float
    high: float
    special: bool = False  # some elements NaN, +inf or -inf (floats only)
    scalar: bool = False  # an unannotated parameter given a Python scalar (weakly typed)

    def parameter(self) -> str:
        """The parameter as ``def f(...)`` declares it: annotated with its spec, unless a
        Python scalar (specialised at the call, like jax.jit)."""
        return self.name if self.scalar else f"{self.name}: {self.spec()}"

    def spec(self) -> str:
        dims = ", ".join(d.text for d in self.dims) + ("," if len(self.dims) == 1 else "")
        return f'relax.Tensor(({dims}), "{self.dtype}")'

    def shape(self, env: dict[str, int]) -> tuple[int, ...]:
        return tuple(d.size(env) for d in self.dims)


# --------------------------------------------------------------------------- statements, programs


@dataclass(frozen=True, slots=True)
class Stmt:
    """``targets = expr``: one line of the program, reading ``uses``."""

    targets: tuple[str, ...]
    expr: str
    results: tuple[Val, ...]
    uses: tuple[str, ...]
    family: str
    unpack: bool = False  # the expression gives a sequence (split): unpack it

    def line(self) -> str:
        lhs = ", ".join(self.targets) + ("," if self.unpack and len(self.targets) == 1 else "")
        return f"{lhs} = {self.expr}"


#: How a program returns its outputs: one value, a tuple, a list or a dict.
OUTPUT_KINDS = ("single", "tuple", "list", "dict")


@dataclass(frozen=True, slots=True)
class Program:
    """A generated program and the environments it is run at (``envs[:runs]``)."""

    seed: int
    symbols: tuple[Symbol, ...]
    inputs: tuple[Input, ...]
    stmts: tuple[Stmt, ...]
    outputs: tuple[str, ...]
    output_kind: str
    envs: tuple[dict[str, int], ...]
    runs: int
    notes: tuple[str, ...] = field(default=())

    @property
    def run_envs(self) -> tuple[dict[str, int], ...]:
        return self.envs[: self.runs]

    def uses_nn_shim(self) -> bool:
        return any("nn.layer_norm" in s.expr or "nn.rms_norm" in s.expr for s in self.stmts)

    def used_symbols(self) -> tuple[Symbol, ...]:
        used = {d.symbol for i in self.inputs for d in i.dims} | {
            d.product for i in self.inputs for d in i.dims
        }
        return tuple(s for s in self.symbols if s.name in used)

    def values(self) -> dict[str, Val]:
        return {r.name: r for s in self.stmts for r in s.results}

    def source(self, name: str = "program", returns: Sequence[str] | None = None) -> str:
        """``def program(np_, nn, x0, ...)`` returning ``outputs`` in ``output_kind``
        (or, given ``returns``, that tuple of names)."""
        params = ", ".join(["np_", "nn", *(i.name for i in self.inputs)])
        lines = [f"def {name}({params}):"]
        lines += [f"    {s.line()}" for s in self.stmts]
        lines.append(f"    return {self.return_expr(returns)}")
        return "\n".join(lines) + "\n"

    def return_expr(self, returns: Sequence[str] | None = None) -> str:
        if returns is not None:
            return "(" + "".join(f"{r}, " for r in returns) + ")"
        outs = self.outputs
        if self.output_kind == "single":
            return outs[0]
        if self.output_kind == "list":
            return "[" + ", ".join(outs) + "]"
        if self.output_kind == "dict":
            return "{" + ", ".join(f'"{o}": {o}' for o in outs) + "}"
        return "(" + "".join(f"{o}, " for o in outs) + ")"

    def with_(self, **changes: object) -> Program:
        return replace(self, **changes)
