"""The op families the generator draws from: each proposes one statement.

A family is ``family(g) -> Proposal | None``: it picks operands from ``g``'s scope
(:class:`fuzz_gen.Gen`), writes the expression against the jax.numpy API (``np_``,
``nn``) and predicts each result's shape (a tuple of :class:`Dim`), whether it is
exact and the range of its elements. The generator then checks the expression with
``jax.eval_shape`` at every environment (rejecting what jax rejects, and failing loudly
when the predicted shapes are wrong), and takes dtypes and weak types from jax.

Families return None when nothing in scope fits; the rules that keep programs valid at
every environment (non-empty max/argmax axes, in-range indices, no integer division by
zero, no float-to-int conversion out of range...) live next to the op they guard.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from fuzz_known import avoid
from fuzz_model import (
    BOOL_RANGE,
    FLOATS,
    INT_RANGE,
    UNKNOWN,
    Dim,
    Range,
    Val,
    broadcast_shapes,
    is_float,
    is_int,
)


@dataclass(frozen=True)
class Proposal:
    """A statement before jax has checked it: the expression, the names it reads, and
    per result the predicted shape, range (None: from the dtype) and exactness."""

    expr: str
    uses: tuple[str, ...]
    shapes: tuple[tuple[Dim, ...], ...]
    ranges: tuple[Range | None, ...]
    exact: bool
    family: str
    unpack: bool = False  # the expression gives a sequence of results (split)

    @staticmethod
    def one(expr, uses, shape, rng, exact, family) -> Proposal:
        return Proposal(expr, tuple(dict.fromkeys(uses)), (tuple(shape),), (rng,), exact, family)


def _call(g, name: str, v: Val, arguments: str) -> str:
    """``np_.name(v, arguments)`` or the array method ``v.name(arguments)``."""
    if g.rng.random() < 0.3:
        return f"{v.name}.{name}({arguments})"
    return f"np_.{name}({v.name}, {arguments})"


def _off_zero(r: Range) -> bool:
    """All elements are away from 0 (at least 1e-3) on one side."""
    return not r.nan and (r.lo >= 1e-3 or r.hi <= -1e-3)


def _difference_fits(v: Val) -> bool:
    """Does ``x - max(x)`` fit ``v``'s dtype (always, for floats)?"""
    if not is_int(v.dtype):
        return True
    lo, _ = INT_RANGE[v.dtype]
    return v.range.finite and v.range.lo - v.range.hi >= lo


_FLOAT_MAX = {"float16": 65504.0, "bfloat16": 3.39e38, "float32": 3.4e38, "float64": 1.79e308}


def _approx_ok(v: Val) -> bool:
    """May a discontinuous op (comparison, floor, conversion to int, argmax) read ``v``?
    Exact values always; rounded float32/float64 values computed from random floats too
    (a tie within a few ulps is rare); not rounded half-precision values (implementations
    round intermediates differently), nor values computed from integers (they land on
    round numbers, where a last-bit difference flips the answer)."""
    return v.exact or (v.dtype in ("float32", "float64") and not v.discrete)


def _kind(dtype: str) -> int:
    """jax's type lattice order of a dtype's kind: bool < int < float."""
    return 0 if dtype == "bool" else 1 if is_int(dtype) else 2


# --------------------------------------------------------------------------- scalars


def scalar_for(g, dtype: str, allow_zero: bool = True) -> tuple[str, Range]:
    """A Python scalar operand for a tensor of ``dtype`` and its range. Its kind never
    exceeds the tensor's (see ``weak-scalar-results``), except where that bug is fixed."""
    kind = _kind(dtype)
    if not avoid("weak-scalar-results"):
        kind = g.rng.choice([0, 1, 2]) if g.rng.random() < 0.3 else kind
    if kind == 0:  # no False divisor: jax gives x / False = 0 where x is False (not NaN)
        value = g.rng.choice([True, False]) if allow_zero else True
        return repr(value), Range(int(value), int(value))
    if kind == 1 or g.rng.random() < 0.3:
        values = [1, 2, 3, -1, -2, 5] + ([0] if allow_zero else [])
        value = g.rng.choice(values)
        return str(value), Range(value, value)
    values = [0.5, 2.0, -1.5, 3.0, 0.125, -0.25] + ([0.0] if allow_zero else [])
    value = g.rng.choice(values)
    return repr(value), Range(value, value)


# --------------------------------------------------------------------------- ranges


def _exp(x: float) -> float:
    try:
        return math.exp(x)
    except OverflowError:
        return math.inf


def _power(base: float, count: int) -> float:
    try:
        return float(base) ** count
    except OverflowError:
        return math.inf


def _mul_range(a: Range, b: Range) -> Range:
    products = []
    for x in (a.lo, a.hi):
        for y in (b.lo, b.hi):
            p = x * y
            products.append(0.0 if math.isnan(p) else p)  # 0 * inf: the bound is 0
    nan = (
        a.nan
        or b.nan
        or (not a.finite and b.lo <= 0 <= b.hi)
        or (not b.finite and a.lo <= 0 <= a.hi)
    )
    return Range(min(products), max(products), nan)


def _add_range(a: Range, b: Range, sign: int = 1) -> Range:
    lo, hi = (b.lo, b.hi) if sign > 0 else (-b.hi, -b.lo)
    total_lo, total_hi = a.lo + lo, a.hi + hi
    nan = a.nan or b.nan or math.isnan(total_lo) or math.isnan(total_hi)
    return Range(
        -math.inf if math.isnan(total_lo) else total_lo,
        math.inf if math.isnan(total_hi) else total_hi,
        nan,
    )


def _div_range(a: Range, b: Range) -> Range:
    if not b.excludes_zero() or not b.finite:
        return UNKNOWN
    inv = Range(1 / b.hi, 1 / b.lo)
    return _mul_range(a, inv)


def _unary_range(name: str, r: Range) -> Range:
    lo, hi, nan = r.lo, r.hi, r.nan
    if name in ("negative", "neg"):
        return Range(-hi, -lo, nan)
    if name == "abs":
        top = max(abs(lo), abs(hi))
        return Range(0 if lo <= 0 <= hi else min(abs(lo), abs(hi)), top, nan)
    if name == "exp":
        return Range(_exp(lo) if lo > -math.inf else 0.0, _exp(hi), nan)
    if name in ("log", "sqrt"):
        fn = math.log if name == "log" else math.sqrt
        low = -math.inf if name == "log" else 0.0
        return Range(
            fn(lo) if lo > 0 and math.isfinite(lo) else low,
            fn(hi) if hi > 0 and math.isfinite(hi) else (math.inf if hi > 0 else low),
            nan or lo < 0,
        )
    if name in ("tanh", "sin", "cos"):
        return Range(-1, 1, nan or (name != "tanh" and not r.finite))
    if name == "sigmoid":
        return Range(0, 1, nan)
    if name == "relu":
        return Range(max(lo, 0), max(hi, 0), nan)
    if name in ("gelu", "silu"):
        return Range(-0.3, max(hi, 0), nan)
    raise KeyError(name)


# --------------------------------------------------------------------------- elementwise


_UNARY = (
    ("np_.negative({})", "negative", True),
    ("-{}", "neg", True),
    ("np_.abs({})", "abs", True),
    ("np_.exp({})", "exp", False),
    ("np_.log({})", "log", False),
    ("np_.sqrt({})", "sqrt", False),
    ("np_.tanh({})", "tanh", False),
    ("np_.sin({})", "sin", False),
    ("np_.cos({})", "cos", False),
    ("nn.relu({})", "relu", True),
    ("nn.gelu({}, approximate=False)", "gelu", False),
    ("nn.gelu({})", "gelu", False),
    ("nn.silu({})", "silu", False),
    ("nn.sigmoid({})", "sigmoid", False),
)


def unary(g) -> Proposal | None:
    v = g.pick()
    if v is None:
        return None
    if g.rng.random() < 0.1:
        if not _approx_ok(v):
            return None  # nonzero is a discontinuous test
        return Proposal.one(
            f"np_.logical_not({v.name})", [v.name], v.shape, BOOL_RANGE, True, "unary"
        )
    template, name, exact_op = g.rng.choice(_UNARY)
    if name in ("log", "sqrt") and not (v.exact or _off_zero(v.range)):
        return None  # near 0, a last-bit difference is -inf against NaN
    rng = _unary_range(name, v.range) if v.dtype != "bool" else None
    exact = exact_op and v.exact
    return Proposal.one(template.format(v.name), [v.name], v.shape, rng, exact, "unary")


_BINARY = (
    ("{} + {}", "add"),
    ("np_.add({}, {})", "add"),
    ("{} - {}", "sub"),
    ("np_.subtract({}, {})", "sub"),
    ("{} * {}", "mul"),
    ("np_.multiply({}, {})", "mul"),
    ("{} / {}", "div"),
    ("np_.divide({}, {})", "div"),
    ("{} // {}", "floordiv"),
    ("np_.floor_divide({}, {})", "floordiv"),
    ("{} % {}", "mod"),
    ("np_.mod({}, {})", "mod"),
    ("{} ** {}", "pow"),
    ("np_.power({}, {})", "pow"),
    ("np_.maximum({}, {})", "max"),
    ("np_.minimum({}, {})", "min"),
)


def _partner(g, v: Val, pred: Callable[[Val], bool] = lambda w: True) -> Val | None:
    """A value in scope that broadcasts with ``v``."""
    return g.pick(lambda w: pred(w) and broadcast_shapes(v.shape, w.shape) is not None)


def _binary_range(op: str, a: Range, b: Range) -> Range | None:
    if op == "add":
        return _add_range(a, b)
    if op == "sub":
        return _add_range(a, b, -1)
    if op == "mul":
        return _mul_range(a, b)
    if op == "div":
        return _div_range(a, b)
    if op in ("max", "min"):
        pick = max if op == "max" else min
        return Range(pick(a.lo, b.lo), pick(a.hi, b.hi), a.nan or b.nan)
    if op == "mod" and b.excludes_zero() and b.finite:
        top = max(abs(b.lo), abs(b.hi))
        return Range(-top, top, a.nan or not a.finite)
    return None


@dataclass(frozen=True)
class Operand:
    """The second operand of a binary op: a value, a Python scalar or a symbolic dim."""

    text: str
    range: Range
    shape: tuple[Dim, ...] = ()
    exact: bool = True
    value: Val | None = None
    integral: bool = True  # an int, a dim, or a tensor of an integer (or bool) dtype


def _operand(g, a: Val, op: str) -> Operand | None:
    choice = g.rng.random()
    if choice < 0.3:  # a Python scalar, weakly typed
        text, srng = scalar_for(g, a.dtype, allow_zero=op not in ("floordiv", "mod", "div"))
        return Operand(text, srng, integral="." not in text)
    if choice < 0.4 and a.rank and (a.dtype != "bool" or not avoid("weak-scalar-results")):
        axis = g.rng.randrange(a.rank)  # a symbolic dim: a weakly typed int
        dim = a.shape[axis]
        return Operand(f"{a.name}.shape[{axis}]", Range(min(dim.vals), max(dim.vals)))
    b = _partner(g, a)
    if b is None or (avoid("weak-scalar-results") and _weak_above(a, b)):
        return None
    return Operand(b.name, b.range, b.shape, b.exact, b, not is_float(b.dtype))


def _weak_above(a: Val, b: Val) -> bool:
    """Is one operand weakly typed and of a higher kind (``weak-scalar-results``)?"""
    return (b.weak and _kind(b.dtype) > _kind(a.dtype)) or (
        a.weak and _kind(a.dtype) > _kind(b.dtype)
    )


def binary(g) -> Proposal | None:
    a = g.pick(lambda v: v.dtype != "bool" or g.rng.random() < 0.3)
    if a is None:
        return None
    template, op = g.rng.choice(_BINARY)
    b = _operand(g, a, op)
    if b is None:
        return None
    integral = not is_float(a.dtype) and b.integral
    if op in ("floordiv", "mod"):
        if integral and not b.range.excludes_zero():
            return None  # integer division by zero is undefined (docs/ops.md)
        if not (a.exact and b.exact):
            return None  # floor is discontinuous, and a rounded quotient often sits on an
            # integer (x % (x / 3)): one ulp there changes the answer
    if op == "div" and not b.exact and not _off_zero(b.range):
        return None  # a rounded divisor near 0: huge against inf, or a sign flipped
    if op == "pow" and not integral and not (a.exact or _off_zero(a.range) or b.range.lo >= 0):
        return None  # a rounded base near 0 to a negative power
    if op == "pow" and integral and not (b.range.finite and 0 <= b.range.lo <= b.range.hi <= 3):
        return None  # an integer to a negative (or huge) power
    if op == "pow" and not integral and a.range.lo < 0 and not b.integral:
        return None  # NaN for a negative base exactly where the exponent is not an integer
    left, right, lrng, rrng = a.name, b.text, a.range, b.range
    commutes = op in ("add", "sub", "mul", "max", "min")  # the divisor, the exponent stay put
    if b.value is None and commutes and g.rng.random() < 0.3 and template.startswith("{}"):
        left, right, lrng, rrng = b.text, a.name, b.range, a.range  # the scalar on the left
    shape = broadcast_shapes(a.shape, b.shape)
    exact = a.exact and b.exact and ((integral and op != "div") or op in ("max", "min"))
    uses = [a.name] + ([b.value.name] if b.value is not None else [])
    rng = _binary_range(op, lrng, rrng)
    return Proposal.one(template.format(left, right), uses, shape, rng, exact, "binary")


_COMPARE = (
    ("{} == {}", "np_.equal({}, {})"),
    ("{} != {}", "np_.not_equal({}, {})"),
    ("{} < {}", "np_.less({}, {})"),
    ("{} <= {}", "np_.less_equal({}, {})"),
    ("{} > {}", "np_.greater({}, {})"),
    ("{} >= {}", "np_.greater_equal({}, {})"),
    ("np_.logical_and({}, {})", "np_.logical_or({}, {})"),
)


def compare(g) -> Proposal | None:
    a = g.pick(_approx_ok)
    if a is None:
        return None
    template = g.rng.choice(g.rng.choice(_COMPARE))
    if g.rng.random() < 0.4:
        text, _ = scalar_for(g, a.dtype)
        b_name, b_shape = text, ()
        uses = [a.name]
    else:
        b = _partner(g, a, _approx_ok)
        if b is None:
            return None
        b_name, b_shape, uses = b.name, b.shape, [a.name, b.name]
    shape = broadcast_shapes(a.shape, b_shape)
    return Proposal.one(template.format(a.name, b_name), uses, shape, BOOL_RANGE, True, "compare")


def where(g) -> Proposal | None:
    c = g.pick(lambda v: v.dtype == "bool")
    if c is None:
        a = g.pick(_approx_ok)
        if a is None:
            return None
        text, _ = scalar_for(g, a.dtype)
        cond, cshape, cuses = f"{a.name} > {text}", a.shape, [a.name]
    else:
        cond, cshape, cuses = c.name, c.shape, [c.name]
    x = g.pick(lambda v: broadcast_shapes(cshape, v.shape) is not None)
    if x is None:
        return None
    if g.rng.random() < 0.4:
        other, orng = scalar_for(g, x.dtype)
        y_shape, y_uses, y_exact = (), [], True
    else:
        y = g.pick(lambda v: broadcast_shapes(cshape, x.shape, v.shape) is not None)
        if y is None or (avoid("weak-scalar-results") and y.weak != x.weak):
            return None
        other, orng, y_shape, y_uses, y_exact = y.name, y.range, y.shape, [y.name], y.exact
    args = [x.name, other] if g.rng.random() < 0.5 else [other, x.name]
    shape = broadcast_shapes(cshape, x.shape, y_shape)
    rng = x.range.union(orng)
    expr = f"np_.where({cond}, {args[0]}, {args[1]})"
    return Proposal.one(expr, cuses + [x.name] + y_uses, shape, rng, x.exact and y_exact, "where")


def clip(g) -> Proposal | None:
    v = g.pick(lambda v: v.dtype != "bool")
    if v is None:
        return None
    lo, lo_r = scalar_for(g, v.dtype)
    hi, hi_r = scalar_for(g, v.dtype)
    if g.rng.random() < 0.2 and is_int(v.dtype):
        ref = g.positive_dim_ref()
        if ref is not None:  # clip(i, 0, n - 1): a symbolic bound
            text, dim = ref
            lo, lo_r, hi, hi_r = "0", Range(0, 0), f"{text} - 1", Range(0, max(dim.vals) - 1)
    form = g.rng.random()
    if form < 0.2:
        expr, rng = f"np_.clip({v.name}, max={hi})", Range(min(v.range.lo, hi_r.hi), hi_r.hi)
    elif form < 0.4:
        expr, rng = f"np_.clip({v.name}, {lo})", Range(lo_r.lo, max(v.range.hi, lo_r.lo))
    else:
        expr = _call(g, "clip", v, f"{lo}, {hi}")
        rng = Range(min(lo_r.lo, hi_r.hi), hi_r.hi)
    rng = Range(rng.lo, rng.hi, v.range.nan)
    return Proposal.one(expr, [v.name], v.shape, rng, v.exact, "clip")


def _int_conversion_ok(v: Val, dtype: str) -> bool:
    """Is converting ``v`` to ``dtype`` defined (no NaN or out-of-range float to int)?"""
    if not is_float(v.dtype):
        return True
    if dtype == "bool":
        return _approx_ok(v)
    if is_int(dtype):
        lo, hi = INT_RANGE[dtype]
        return _approx_ok(v) and v.range.within(lo + 1, hi - 1)
    return True


def astype(g) -> Proposal | None:
    v = g.pick()
    if v is None:
        return None
    dtype = g.rng.choice(g.dtypes)
    if not _int_conversion_ok(v, dtype):
        return None
    expr = (
        f"{v.name}.astype({dtype!r})"
        if g.rng.random() < 0.5
        else f"np_.astype({v.name}, {dtype!r})"
    )
    widening = (
        is_float(v.dtype) and FLOATS.index(dtype) > FLOATS.index(v.dtype)
        if is_float(dtype)
        else False
    )
    small_int = not is_float(v.dtype) and v.range.within(-2048, 2048)
    exact = v.exact and (not is_float(dtype) or widening or small_int)
    rng = v.range if is_float(dtype) else None
    if is_int(dtype) and is_float(v.dtype):
        rng = Range(math.trunc(v.range.lo), math.trunc(v.range.hi))
    return Proposal.one(expr, [v.name], v.shape, rng, exact, "astype")


# --------------------------------------------------------------------------- reductions


def _reduce_axes(g, v: Val) -> tuple[str, tuple[int, ...]]:
    """An ``axis=`` argument and the axes it names (normalised)."""
    r = v.rank
    pick = g.rng.random()
    if r == 0 or pick < 0.2:
        return "None", tuple(range(r))
    if pick < 0.75 or r == 1:
        axis = g.rng.randrange(r)
        text = str(axis - r if g.rng.random() < 0.3 else axis)
        return text, (axis,)
    axes = tuple(sorted(g.rng.sample(range(r), 2)))
    return f"({axes[0]}, {axes[1] - r if g.rng.random() < 0.3 else axes[1]})", axes


def _reduced(v: Val, axes: tuple[int, ...], keepdims: bool, g) -> tuple[Dim, ...]:
    if keepdims:
        return tuple(g.const(1) if i in axes else d for i, d in enumerate(v.shape))
    return tuple(d for i, d in enumerate(v.shape) if i not in axes)


def _extent_positive(v: Val, axes: tuple[int, ...]) -> bool:
    return all(v.shape[i].positive for i in axes)


def _count_max(v: Val, axes: tuple[int, ...]) -> int:
    return max(math.prod(col) for col in zip(*(v.shape[i].vals for i in axes))) if axes else 1


def reduction(g) -> Proposal | None:
    op = g.rng.choice(["sum", "sum", "prod", "mean", "var", "max", "min"])
    # max/min of possible NaNs: XLA's CPU reductions drop NaNs in larger arrays (a jax bug;
    # relaxjax propagates them, as numpy and the docs say)
    v = g.pick(lambda v: op not in ("max", "min") or (v.dtype != "bool" and not v.range.nan))
    if v is None:
        return None
    if v.dtype == "uint8" and op in ("sum", "prod"):
        return None  # jax gives uint64, which relaxjax lacks (a documented TypeError)
    axis, axes = _reduce_axes(g, v)
    keepdims = g.rng.random() < 0.3
    extra = ", keepdims=True" if keepdims else ""
    uses = [v.name]
    r = v.range
    nonempty = _extent_positive(v, axes)
    mask = None
    if g.rng.random() < 0.2:  # where=: a boolean mask broadcasting to the array
        mask = g.pick(lambda w: w.dtype == "bool" and broadcast_shapes(v.shape, w.shape) == v.shape)
    if mask is not None:
        extra += f", where={mask.name}"
        uses.append(mask.name)
        nonempty = False  # the mask may select nothing
    if op in ("max", "min"):
        rng = r
        if not nonempty:  # an empty reduction needs an initial value (as in jax)
            text, srng = scalar_for(g, v.dtype)
            extra += f", initial={text}"
            rng = r.union(srng)
        exact = v.exact
    elif op == "mean":
        rng, exact = Range(r.lo, r.hi, r.nan or not nonempty), False
    elif op == "var":
        if g.rng.random() < 0.3:
            extra += ", ddof=1"
        rng, exact = Range(0, math.inf, True), False
    else:
        count = _count_max(v, axes)
        if op == "sum":
            bound = count * max(abs(r.lo), abs(r.hi))
            rng = Range(-bound if r.lo < 0 else 0, bound if r.hi > 0 else 0, r.nan)
        else:
            bound = _power(max(abs(r.lo), abs(r.hi), 1), count) if r.finite else math.inf
            if is_float(v.dtype) and not bound < _FLOAT_MAX[v.dtype] / 1e3:
                return None  # whether a partial product overflows depends on the order
            rng = Range(-bound, bound, r.nan or not r.finite)
        exact = v.exact and not is_float(v.dtype)
        if op == "sum" and g.rng.random() < 0.15 and not is_float(v.dtype):
            extra += f", dtype={g.rng.choice(['int32', 'float32', 'float64'])!r}"
            exact = False
    expr = _call(g, op, v, f"axis={axis}{extra}")
    return Proposal.one(expr, uses, _reduced(v, axes, keepdims, g), rng, exact, "reduction")


def arg_reduction(g) -> Proposal | None:
    v = g.pick(lambda v: _approx_ok(v) and v.rank > 0 and not v.range.nan)  # as max, min
    if v is None:
        return None
    op = g.rng.choice(["argmax", "argmin"])
    keepdims = g.rng.random() < 0.3
    if g.rng.random() < 0.25:
        axes, axis = tuple(range(v.rank)), "None"
    else:
        a = g.rng.randrange(v.rank)
        axes, axis = (a,), str(a - v.rank if g.rng.random() < 0.3 else a)
    if not _extent_positive(v, axes):
        return None  # an empty arg-reduction has no answer (jax raises)
    extra = ", keepdims=True" if keepdims else ""
    shape = _reduced(v, axes, keepdims, g)
    rng = Range(0, _count_max(v, axes) - 1)
    return Proposal.one(_call(g, op, v, f"axis={axis}{extra}"), [v.name], shape, rng, True, "arg")


def cumsum(g) -> Proposal | None:
    v = g.pick()
    if v is None:
        return None
    if g.rng.random() < 0.25:
        axis = "None"
        shape = (g.prod_dim(v.shape),)
    else:
        if v.rank == 0:
            return None
        a = g.rng.randrange(v.rank)
        axis = str(a - v.rank if g.rng.random() < 0.3 else a)
        shape = v.shape
    r = v.range
    count = max(math.prod(col) for col in zip(*(d.vals for d in v.shape))) if v.rank else 1
    bound = count * max(abs(r.lo), abs(r.hi))
    rng = Range(-bound if r.lo < 0 else 0, bound if r.hi > 0 else 0, r.nan)
    exact = v.exact and not is_float(v.dtype)
    expr = _call(g, "cumsum", v, f"axis={axis}")
    return Proposal.one(expr, [v.name], shape, rng, exact, "cumsum")


# --------------------------------------------------------------------------- shapes


def reshape(g) -> Proposal | None:
    v = g.pick()
    if v is None:
        return None
    refs = [(f"{v.name}.shape[{i}]", d) for i, d in enumerate(v.shape)]
    kind = g.rng.choice(["flatten", "merge", "split", "unit", "unit"])
    if kind == "flatten" or v.rank == 0:
        dims = [("-1", g.prod_dim(v.shape))]
    elif kind == "merge" and v.rank >= 2:
        i = g.rng.randrange(v.rank - 1)
        (ta, da), (tb, db) = refs[i], refs[i + 1]
        merged = (f"{ta} * {tb}", da.combine(lambda x, y: x * y, db))
        dims = refs[:i] + [merged] + refs[i + 2 :]
    elif kind == "split":
        i = g.rng.randrange(v.rank)
        text, d = refs[i]
        factor = g.rng.choice([2, 3])
        if any(x % factor for x in d.vals):
            return None
        rest = (f"{text} // {factor}", d.combine(lambda x: x // factor))
        pair = [(str(factor), g.const(factor)), rest]
        dims = refs[:i] + (pair if g.rng.random() < 0.5 else pair[::-1]) + refs[i + 1 :]
    else:
        i = g.rng.randrange(v.rank + 1)
        dims = refs[:i] + [("1", g.const(1))] + refs[i:]
    if len(dims) > 1 and g.rng.random() < 0.4:  # one dim as -1, when it is determined
        j = g.rng.randrange(len(dims))
        others = [d for k, (_, d) in enumerate(dims) if k != j]
        if all(d.positive for d in others):
            dims[j] = ("-1", dims[j][1])
    texts = [t for t, _ in dims]
    form = g.rng.random()
    if form < 0.4:
        expr = f"{v.name}.reshape({', '.join(texts)})"
    elif form < 0.7:
        expr = f"{v.name}.reshape(({', '.join(texts)}{',' if len(texts) == 1 else ''}))"
    else:
        expr = f"np_.reshape({v.name}, ({', '.join(texts)}{',' if len(texts) == 1 else ''}))"
    shape = tuple(d for _, d in dims)
    return Proposal.one(expr, [v.name], shape, v.range, v.exact, "reshape")


def permute(g) -> Proposal | None:
    v = g.pick(lambda v: v.rank >= 1)
    if v is None:
        return None
    r = v.rank
    kind = g.rng.random()
    if kind < 0.2:
        expr, perm = f"{v.name}.T", list(range(r))[::-1]
    elif kind < 0.35:
        expr, perm = f"np_.transpose({v.name})", list(range(r))[::-1]
    elif kind < 0.7:
        perm = list(range(r))
        g.rng.shuffle(perm)
        expr = _call(g, "transpose", v, repr(tuple(perm)))
    else:
        a, b = g.rng.randrange(r), g.rng.randrange(r)
        perm = list(range(r))
        perm[a], perm[b] = perm[b], perm[a]
        ta = a - r if g.rng.random() < 0.3 else a
        expr = _call(g, "swapaxes", v, f"{ta}, {b}")
    shape = tuple(v.shape[p] for p in perm)
    return Proposal.one(expr, [v.name], shape, v.range, v.exact, "permute")


def expand_squeeze(g) -> Proposal | None:
    v = g.pick()
    if v is None:
        return None
    ones = [i for i, d in enumerate(v.shape) if d.static == 1]
    if ones and g.rng.random() < 0.5:
        axes = g.rng.sample(ones, g.rng.randint(1, len(ones)))
        shape = tuple(d for i, d in enumerate(v.shape) if i not in axes)
        axes_text = [a - v.rank if g.rng.random() < 0.3 else a for a in axes]
        arg = str(axes_text[0]) if len(axes) == 1 else repr(tuple(axes_text))
        return Proposal.one(
            _call(g, "squeeze", v, f"axis={arg}"), [v.name], shape, v.range, v.exact, "squeeze"
        )
    count = 1 if g.rng.random() < 0.7 else 2
    out_rank = v.rank + count
    axes = sorted(g.rng.sample(range(out_rank), count))
    dims = list(v.shape)
    for a in axes:
        dims.insert(a, g.const(1))
    texts = [a - out_rank if g.rng.random() < 0.3 else a for a in axes]
    arg = str(texts[0]) if count == 1 else repr(tuple(texts))
    expr = f"np_.expand_dims({v.name}, {arg})"
    return Proposal.one(expr, [v.name], dims, v.range, v.exact, "expand_dims")


def broadcast_to(g) -> Proposal | None:
    v = g.pick(lambda v: v.rank <= 3)
    if v is None:
        return None
    texts, dims = [], []
    for _ in range(g.rng.choice([0, 0, 1, 2])):
        text, dim = g.any_dim_ref()
        texts.append(text)
        dims.append(dim)
    for i, d in enumerate(v.shape):
        if d.static == 1 and g.rng.random() < 0.6:
            text, dim = g.any_dim_ref()
        else:
            text, dim = f"{v.name}.shape[{i}]", d
        texts.append(text)
        dims.append(dim)
    expr = f"np_.broadcast_to({v.name}, ({', '.join(texts)}{',' if len(texts) == 1 else ''}))"
    return Proposal.one(expr, [v.name], dims, v.range, v.exact, "broadcast_to")


def _same_except(a: Val, b: Val, axis: int) -> bool:
    return b.rank == a.rank and all(a.shape[i].same(b.shape[i]) for i in range(a.rank) if i != axis)


def join(g) -> Proposal | None:
    a = g.pick(lambda v: v.rank >= 1)
    if a is None:
        return None
    stack = g.rng.random() < 0.35
    axis = g.rng.randrange(a.rank)
    if stack:
        peers = [
            g.pick(lambda w: w.rank == a.rank and all(x.same(y) for x, y in zip(a.shape, w.shape)))
            for _ in range(g.rng.randint(0, 2))
        ]
    else:
        peers = [g.pick(lambda w: _same_except(a, w, axis)) for _ in range(g.rng.randint(1, 2))]
    vals = [a] + [p for p in peers if p is not None]
    if len(vals) == 1 and not stack:
        vals.append(a)
    names = ", ".join(w.name for w in vals)
    rng = vals[0].range
    for w in vals[1:]:
        rng = rng.union(w.range)
    exact = all(w.exact for w in vals)
    uses = [w.name for w in vals]
    if stack:
        out_axis = g.rng.randrange(a.rank + 1)
        shape = list(a.shape)
        shape.insert(out_axis, g.const(len(vals)))
        text = out_axis - (a.rank + 1) if g.rng.random() < 0.3 else out_axis
        expr = f"np_.stack([{names}], axis={text})"
        return Proposal.one(expr, uses, shape, rng, exact, "stack")
    total = vals[0].shape[axis]
    for w in vals[1:]:
        total = total.combine(lambda x, y: x + y, w.shape[axis])
    shape = list(a.shape)
    shape[axis] = total
    text = axis - a.rank if g.rng.random() < 0.3 else axis
    form = (
        "np_.concatenate([{}], axis={})"
        if g.rng.random() < 0.8
        else "np_.concatenate(({},), axis={})"
    )
    return Proposal.one(form.format(names, text), uses, shape, rng, exact, "concatenate")


def _slice_len(n: int, start: int | None, stop: int | None, step: int | None) -> int:
    return len(range(n)[slice(start, stop, step)])


def _piece(d: Dim, lo: Dim | None, hi: Dim | None) -> Dim:
    """The length of ``x[lo:hi]`` along a dim ``d`` (numpy clamps the bounds)."""
    vals = tuple(
        _slice_len(n, lo.vals[e] if lo else None, hi.vals[e] if hi else None, None)
        for e, n in enumerate(d.vals)
    )
    known = d.static is not None and all(b is None or b.static is not None for b in (lo, hi))
    return Dim(vals, vals[0] if known else None)


def split(g) -> Proposal | None:
    v = g.pick(lambda v: v.rank >= 1)
    if v is None:
        return None
    axis = g.rng.randrange(v.rank)
    d = v.shape[axis]
    text_axis = axis - v.rank if g.rng.random() < 0.3 else axis
    if g.rng.random() < 0.4:
        sections = g.rng.choice([1, 2, 3])
        if any(x % sections for x in d.vals):
            return None
        arg, pieces = str(sections), [d.combine(lambda x: x // sections)] * sections
    else:
        if g.rng.random() < 0.3:
            index_texts = [f"{v.name}.shape[{axis}] // 2"]
            index_dims = [d.combine(lambda x: x // 2)]
        else:
            ints = sorted(g.rng.sample(range(0, 4), g.rng.randint(1, 2)))
            index_texts, index_dims = [str(i) for i in ints], [g.const(i) for i in ints]
        arg = "[" + ", ".join(index_texts) + "]"
        cuts = [None, *index_dims, None]
        pieces = [_piece(d, lo, hi) for lo, hi in zip(cuts, cuts[1:])]
    shapes = []
    for piece in pieces:
        shape = list(v.shape)
        shape[axis] = piece
        shapes.append(tuple(shape))
    expr = f"np_.split({v.name}, {arg}, axis={text_axis})"
    n = len(shapes)
    return Proposal(expr, (v.name,), tuple(shapes), (v.range,) * n, v.exact, "split", True)


def tri(g) -> Proposal | None:
    v = g.pick(lambda v: v.rank >= 2)
    if v is None:
        return None
    op = g.rng.choice(["tril", "triu"])
    k = g.rng.choice([0, 0, 1, -1, 2])
    rng = v.range.union(Range(0, 0))
    return Proposal.one(f"np_.{op}({v.name}, k={k})", [v.name], v.shape, rng, v.exact, "tri")


def pad(g) -> Proposal | None:
    v = g.pick(lambda v: v.rank >= 1)
    if v is None:
        return None
    if g.rng.random() < 0.3:
        w = g.rng.choice([0, 1, 2])
        arg, pairs = str(w), [(w, w)] * v.rank
    else:
        pairs = [(g.rng.choice([0, 0, 1, 2]), g.rng.choice([0, 1, 2])) for _ in range(v.rank)]
        arg = "(" + "".join(f"({lo}, {hi}), " for lo, hi in pairs) + ")"
    shape = tuple(
        d.combine(lambda x, lo=lo, hi=hi: x + lo + hi) for d, (lo, hi) in zip(v.shape, pairs)
    )
    fill, frng = "0", Range(0, 0)
    extra = ""
    if g.rng.random() < 0.4 and v.dtype != "bool":
        fill, frng = scalar_for(g, v.dtype)
        extra = f", constant_values={fill}"
    expr = f"np_.pad({v.name}, {arg}{extra})"
    return Proposal.one(expr, [v.name], shape, v.range.union(frng), v.exact, "pad")


# --------------------------------------------------------------------------- indexing


def _slice_part(g, v: Val, axis: int) -> tuple[str, Callable[[int, int], tuple]]:
    """A slice of axis ``axis`` and, per environment, its (start, stop, step)."""
    ref = f"{v.name}.shape[{axis}]"
    step = g.rng.choice([None, None, 1, 2, -1, -1, -2, 3])

    def bound() -> tuple[str, Callable[[int], int] | None]:
        pick = g.rng.random()
        if pick < 0.35:
            return "", None
        if pick < 0.65:
            k = g.rng.choice([0, 1, 2, -1, -2, 3])
            return str(k), lambda n, k=k: k
        if pick < 0.85:
            return f"{ref} // 2", lambda n: n // 2
        k = g.rng.choice([1, 2])
        return f"{ref} - {k}", lambda n, k=k: n - k

    (start_t, start_f), (stop_t, stop_f) = bound(), bound()
    text = f"{start_t}:{stop_t}" + (f":{step}" if step is not None else "")

    def at(n: int) -> tuple:
        return (
            start_f(n) if start_f else None,
            stop_f(n) if stop_f else None,
            step,
        )

    return text, at


def getitem(g) -> Proposal | None:
    v = g.pick(lambda v: v.rank >= 1)
    if v is None:
        return None
    parts: list[str] = []
    shape: list[Dim] = []
    uses = [v.name]
    used_array = False
    used_int = False
    axes = list(range(v.rank))
    if g.rng.random() < 0.4:  # not every axis is named
        axes = axes[: g.rng.randint(1, v.rank)]
    for axis in axes:
        d = v.shape[axis]
        if g.rng.random() < 0.15:
            parts.append("None")
            shape.append(g.const(1))
        pick = g.rng.random()
        if pick < 0.2 and d.min >= 1 and not used_array:
            k = g.rng.randrange(d.min)
            parts.append(str(-1 - k if g.rng.random() < 0.4 else k))
            used_int = True
        elif pick < 0.35 and d.positive and not used_array and not used_int:
            idx = g.pick(lambda w: is_int(w.dtype) and w.exact and w.rank <= 2)
            if idx is None:
                consts = [g.rng.randrange(d.min) for _ in range(g.rng.randint(1, 3))]
                parts.append(f"np_.asarray({consts!r})")
                shape.append(g.const(len(consts)))
            else:
                parts.append(f"{idx.name} % {v.name}.shape[{axis}]")
                uses.append(idx.name)
                shape.extend(idx.shape)
            used_array = True
        else:
            text, at = _slice_part(g, v, axis)
            parts.append(text)
            vals = tuple(_slice_len(n, *at(n)) for n in d.vals)
            static = vals[0] if d.static is not None and "shape" not in text else None
            shape.append(Dim(vals, static))
    shape.extend(v.shape[axes[-1] + 1 :] if axes else v.shape)
    if used_array and sum(1 for p in parts if p not in ("None",) and ":" not in p) > 1:
        return None
    key = ", ".join(parts)
    expr = f"{v.name}[{key}]"
    exact = v.exact
    return Proposal.one(expr, uses, shape, v.range, exact, "getitem")


def take(g) -> Proposal | None:
    v = g.pick(lambda v: v.rank >= 1)
    if v is None:
        return None
    axis = g.rng.randrange(v.rank)
    d = v.shape[axis]
    if not d.positive:
        return None
    idx = g.pick(lambda w: is_int(w.dtype) and w.exact and w.rank <= 2)
    mode = g.rng.choice([None, None, "clip", "wrap", "fill"])
    extra = f", mode={mode!r}" if mode else ""
    rng = v.range
    if mode in ("clip", "wrap") or (idx is not None and g.rng.random() < 0.3):
        # any index: clipped or wrapped; or out of range under "fill" (a fill value)
        index, ishape, uses = (idx.name, idx.shape, [v.name, idx.name]) if idx else (None, (), [])
        if index is None:
            consts = [g.rng.randint(-6, 8) for _ in range(g.rng.randint(1, 3))]
            index, ishape, uses = f"np_.asarray({consts!r})", (g.const(len(consts)),), [v.name]
        if mode not in ("clip", "wrap"):
            rng = UNKNOWN if is_float(v.dtype) else None  # NaN, or the dtype's extreme
    elif idx is None or g.rng.random() < 0.3:  # in range, negative ones counting from the end
        consts = [g.rng.randrange(-d.min, d.min) for _ in range(g.rng.randint(1, 3))]
        index, ishape, uses = f"np_.asarray({consts!r})", (g.const(len(consts)),), [v.name]
    else:
        index, ishape, uses = f"{idx.name} % {v.name}.shape[{axis}]", idx.shape, [v.name, idx.name]
    text_axis = axis - v.rank if g.rng.random() < 0.3 else axis
    shape = v.shape[:axis] + tuple(ishape) + v.shape[axis + 1 :]
    expr = f"np_.take({v.name}, {index}, axis={text_axis}{extra})"
    return Proposal.one(expr, uses, shape, rng, v.exact, "take")


# --------------------------------------------------------------------------- linear algebra


#: The most multiply-adds a contraction may do at any environment.
MAX_WORK = 1 << 21


def _work(out: tuple[Dim, ...], contracted: list[Dim]) -> int:
    dims = list(out) + list(contracted)
    if not dims:
        return 1
    return max(math.prod(col) for col in zip(*(d.vals for d in dims)))


def _contractible(v: Val) -> bool:
    """An operand of a contraction: not bool, and finite (where NaN or inf meets an empty
    or a zero factor, the result depends on the order of the contraction)."""
    return v.dtype != "bool" and v.range.finite


def matmul(g) -> Proposal | None:
    a = g.pick(lambda v: v.rank >= 1 and _contractible(v))
    if a is None:
        return None
    k = a.shape[-1]
    if a.rank >= 2 and g.rng.random() < 0.25:  # a self-product, always valid
        t = f"np_.swapaxes({a.name}, -1, -2)"
        left, right = (t, a.name) if g.rng.random() < 0.5 else (a.name, t)
        dims = list(a.shape)
        shape = (*dims[:-2], dims[-1], dims[-1]) if left == t else (*dims[:-2], dims[-2], dims[-2])
        b = a
    else:
        b = g.pick(
            lambda w: (
                w.rank >= 1
                and _contractible(w)
                and (w.shape[0] if w.rank == 1 else w.shape[-2]).same(k)
                and (
                    w.rank <= 2
                    or a.rank <= 2
                    or broadcast_shapes(a.shape[:-2], w.shape[:-2]) is not None
                )
            )
        )
        if b is None:
            return None
        left, right = a.name, b.name
        batch = broadcast_shapes(a.shape[:-2], b.shape[:-2]) or ()
        shape = (*batch, *a.shape[-2:-1], *b.shape[b.rank - 1 :][: 1 if b.rank >= 2 else 0])
    form = g.rng.random()
    if form < 0.6:
        expr = f"{left} @ {right}"
    elif form < 0.8 or (a.rank > 2 or b.rank > 2):
        expr = f"np_.matmul({left}, {right})"
    else:
        expr = f"np_.dot({left}, {right})"
    if _work(shape, [k]) > MAX_WORK:
        return None
    count = max(k.vals) if k.vals else 1
    rng = _mul_range(a.range, b.range)
    bound = count * max(abs(rng.lo), abs(rng.hi))
    rng = Range(-bound, bound, rng.nan or not rng.finite)
    exact = a.exact and b.exact and not is_float(a.dtype) and not is_float(b.dtype)
    return Proposal.one(expr, [a.name, b.name], shape, rng, exact, "matmul")


_LETTERS = "ijklmn"


def einsum(g) -> Proposal | None:
    a = g.pick(lambda v: 1 <= v.rank <= 3 and _contractible(v))
    if a is None:
        return None
    labels: dict[str, Dim] = {}
    a_labels = []
    for d in a.shape:
        same = [c for c, e in labels.items() if e.same(d)]
        if same and g.rng.random() < 0.15:  # a diagonal
            a_labels.append(g.rng.choice(same))
            continue
        c = _LETTERS[len(labels)]
        labels[c] = d
        a_labels.append(c)
    operands, subs = [a], ["".join(a_labels)]
    if g.rng.random() < 0.6:
        b = g.pick(lambda v: 1 <= v.rank <= 3 and _contractible(v))
        if b is not None:
            b_labels = []
            for d in b.shape:
                same = [c for c, e in labels.items() if e.same(d) and c not in b_labels]
                if same and g.rng.random() < 0.7:
                    b_labels.append(g.rng.choice(same))
                    continue
                c = _LETTERS[len(labels)]
                labels[c] = d
                b_labels.append(c)
            operands.append(b)
            subs.append("".join(b_labels))
    used = sorted(set("".join(subs)))
    out = [c for c in used if g.rng.random() < 0.6]
    g.rng.shuffle(out)
    spec = ",".join(subs) + "->" + "".join(out)
    names = ", ".join(o.name for o in operands)
    shape = tuple(labels[c] for c in out)
    contracted = [labels[c] for c in used if c not in out]
    if _work(shape, contracted) > MAX_WORK:
        return None
    count = max((math.prod(col) for col in zip(*(d.vals for d in contracted))), default=1)
    rng = operands[0].range if len(operands) == 1 else _mul_range(a.range, operands[1].range)
    bound = max(count, 1) * max(abs(rng.lo), abs(rng.hi))
    rng = Range(-bound, bound, rng.nan or not rng.finite)
    exact = all(o.exact and not is_float(o.dtype) for o in operands)
    uses = [o.name for o in operands]
    return Proposal.one(f'np_.einsum("{spec}", {names})', uses, shape, rng, exact, "einsum")


# --------------------------------------------------------------------------- creation


def creation(g) -> Proposal | None:
    kind = g.rng.choice(["zeros", "ones", "full", "arange", "like", "like"])
    if kind == "like":
        v = g.pick()
        if v is None:
            return None
        op = g.rng.choice(["zeros_like", "ones_like", "full_like"])
        dtype = g.rng.choice([None, None, *g.dtypes])
        target = dtype or v.dtype
        extra = f", dtype={dtype!r}" if dtype else ""
        if op == "full_like":
            fill, frng = scalar_for(g, target)
            if is_int(target) and "." in fill:
                frng = Range(math.trunc(frng.lo), math.trunc(frng.hi))
            expr = f"np_.full_like({v.name}, {fill}{extra})"
        else:
            value = 0 if op == "zeros_like" else 1
            frng = Range(value, value)
            expr = f"np_.{op}({v.name}{extra})"
        return Proposal.one(expr, [v.name], v.shape, frng, True, "creation")
    if kind == "arange":
        text, dim = g.any_dim_ref()
        start = g.rng.choice([None, 0, 1, 2])
        step = g.rng.choice([None, 1, 2, 3]) if start is not None else None
        args = [text] if start is None else [str(start), text] + ([str(step)] if step else [])
        vals = tuple(len(range(start or 0, n, step or 1)) for n in dim.vals)
        static = vals[0] if dim.static is not None else None
        hi = max(dim.vals)
        dtype = g.rng.choice([None, None, "int32", "float32"])
        extra = f", dtype={dtype!r}" if dtype else ""
        expr = f"np_.arange({', '.join(args)}{extra})"
        uses = g.uses_of(text)
        return Proposal.one(expr, uses, [Dim(vals, static)], Range(0, hi), True, "creation")
    texts, dims = [], []
    for _ in range(g.rng.randint(0, 3)):
        text, dim = g.any_dim_ref()
        texts.append(text)
        dims.append(dim)
    shape_text = "(" + ", ".join(texts) + ("," if len(texts) == 1 else "") + ")"
    uses = [u for t in texts for u in g.uses_of(t)]
    dtype = g.rng.choice([None, *g.dtypes]) if kind != "full" else g.rng.choice(g.dtypes)
    extra = f", dtype={dtype!r}" if dtype else ""
    if kind == "full":
        fill, frng = scalar_for(g, dtype)
        if is_int(dtype) and "." in fill:
            frng = Range(math.trunc(frng.lo), math.trunc(frng.hi))
        expr = f"np_.full({shape_text}, {fill}{extra})"
    else:
        value = 0 if kind == "zeros" else 1
        frng = Range(value, value)
        expr = f"np_.{kind}({shape_text}{extra})"
    return Proposal.one(expr, uses, dims, frng, True, "creation")


# --------------------------------------------------------------------------- nn


def softmax(g) -> Proposal | None:
    # bool: relaxjax raises TypeError (docs/ops.md). Integers: jax subtracts the max in the
    # integer dtype before converting, so its results wrap around where x - max overflows
    # (uint8 always); relaxjax computes in float. Only integers whose differences fit.
    v = g.pick(lambda v: v.dtype != "bool" and _difference_fits(v))
    if v is None:
        return None
    op = g.rng.choice(["softmax", "log_softmax"])
    if v.rank == 0 or g.rng.random() < 0.15:
        arg = "axis=None"
    elif g.rng.random() < 0.2 and v.rank >= 2:
        arg = f"axis=(0, {v.rank - 1})"
    else:
        a = g.rng.randrange(v.rank)
        arg = f"axis={a - v.rank if g.rng.random() < 0.5 else a}"
    if arg == "axis=-1" and g.rng.random() < 0.5:
        arg = ""
    rng = Range(0, 1, v.range.nan or not v.range.finite) if op == "softmax" else UNKNOWN
    expr = f"nn.{op}({v.name}{', ' + arg if arg else ''})"
    return Proposal.one(expr, [v.name], v.shape, rng, False, "softmax")


def one_hot(g) -> Proposal | None:
    v = g.pick(lambda v: is_int(v.dtype) and v.exact and v.rank <= 2)
    if v is None:
        return None
    if g.rng.random() < 0.5:
        text, dim = str(g.rng.choice([1, 2, 3, 4])), None
        dim = g.const(int(text))
    else:
        text, dim = g.any_dim_ref()
    out_rank = v.rank + 1
    axis = g.rng.choice([None, -1, 0, out_rank - 1])
    dtype = g.rng.choice([None, "float32", "int32", "bool"])
    extra = (f", dtype={dtype!r}" if dtype else "") + (f", axis={axis}" if axis is not None else "")
    shape = list(v.shape)
    position = out_rank - 1 if axis in (None, -1) else axis
    shape.insert(position, dim)
    expr = f"nn.one_hot({v.name}, {text}{extra})"
    uses = [v.name, *g.uses_of(text)]
    return Proposal.one(expr, uses, shape, Range(0, 1), True, "one_hot")


def norm(g) -> Proposal | None:
    # of exactly computed values only: normalising a row of nearly equal rounded values
    # (an attention output, say) divides their last-bit differences by a tiny deviation
    v = g.pick(lambda v: v.rank >= 1 and is_float(v.dtype) and v.tol == 0)
    if v is None:
        return None
    last = v.shape[-1]
    params, uses = [], [v.name]
    for _ in range(2):
        w = g.pick(lambda w: w.rank == 1 and w.shape[0].same(last) and is_float(w.dtype))
        if w is None or g.rng.random() < 0.3:
            dtype = g.rng.choice(["float32", v.dtype])
            params.append((f"np_.ones({v.name}.shape[-1:], dtype={dtype!r})", None))
        else:
            params.append((w.name, w.name))
    if g.rng.random() < 0.5:
        expr = f"nn.layer_norm({v.name}, {params[0][0]}, {params[1][0]})"
    else:
        expr = f"nn.rms_norm({v.name}, {params[0][0]})"
        params = params[:1]
    uses += [name for _, name in params if name is not None]
    return Proposal.one(expr, uses, v.shape, UNKNOWN, False, "norm")


def _attends(q: Val, w: Val) -> bool:
    """Can ``w`` be the keys of query ``q`` (rank 3 ``(T, N, H)`` or 4 ``(B, T, N, H)``):
    the same dtype and head size (and batch), ``K`` heads dividing ``N``, finite values?"""
    if w.rank != q.rank or w.dtype != q.dtype or not w.range.finite:
        return False
    if not w.shape[-1].same(q.shape[-1]) or (q.rank == 4 and not w.shape[0].same(q.shape[0])):
        return False
    heads, kv_heads = q.shape[-2].static, w.shape[-2].static
    return heads is not None and bool(kv_heads) and heads % kv_heads == 0


def attention(g) -> Proposal | None:
    # half precisions: jax's reference does not run on CPU (its dot asks for F16_F16_F32 or
    # BF16_BF16_F32 precision, which XLA's CPU backend lacks)
    q = g.pick(lambda v: 2 <= v.rank <= 4 and v.dtype in ("float32", "float64") and v.range.finite)
    if q is None:
        return None
    if q.rank == 2:  # (T, H) as one batch and one head
        k = g.pick(
            lambda w: (
                w.rank == 2
                and w.dtype == q.dtype
                and w.range.finite
                and w.shape[1].same(q.shape[1])
            )
        )
        if k is None:
            return None
        expand = "[None, :, None, :]"
        qt, kt = f"{q.name}{expand}", f"{k.name}{expand}"
        shape = (g.const(1), q.shape[0], g.const(1), q.shape[1])
    else:
        k = g.pick(lambda w: _attends(q, w))
        if k is None:
            return None
        qt, kt = q.name, k.name
        shape = q.shape
    causal = ", is_causal=True" if g.rng.random() < 0.4 else ""
    expr = f"nn.dot_product_attention({qt}, {kt}, {kt}{causal})"
    return Proposal.one(expr, [q.name, k.name], shape, UNKNOWN, False, "attention")


#: (family, weight): how often each is tried.
FAMILIES: tuple[tuple[Callable, float], ...] = (
    (unary, 3),
    (binary, 5),
    (compare, 2),
    (where, 1.5),
    (clip, 1),
    (astype, 1.5),
    (reduction, 3),
    (arg_reduction, 1),
    (cumsum, 1),
    (reshape, 2),
    (permute, 1.5),
    (expand_squeeze, 1.5),
    (broadcast_to, 1),
    (join, 1.5),
    (split, 1),
    (getitem, 3),
    (take, 1),
    (tri, 0.7),
    (pad, 1),
    (matmul, 2),
    (einsum, 1.5),
    (creation, 1.5),
    (softmax, 1),
    (one_hot, 0.7),
    (norm, 0.8),
    (attention, 1.2),
)

#: The ``family`` of the statements the families make (some make two kinds).
FAMILY_TAGS = frozenset(
    {f.__name__ for f, _ in FAMILIES} - {"expand_squeeze", "join", "arg_reduction"}
    | {"expand_dims", "squeeze", "concatenate", "stack", "arg"}
)
