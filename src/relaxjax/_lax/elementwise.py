"""``relaxjax.lax``'s elementwise functions, with jax.lax's dtype rules: no implicit promotion.

A floating function (``exp``, ``tanh``, ``erf``, ...) refuses integers and booleans; a binary
function needs both operands of one dtype (a Python scalar counts as its default dtype,
``float64`` or ``int64``, as in jax with 64-bit types); the message is jax's. Each is the op
of ``relaxjax.numpy`` of the same meaning, or a short composition of them where jax.lax's
meaning differs (``div`` and ``rem`` of integers truncate, ``round`` rounds half away from
zero by default, ``erf_inv`` is Giles' approximation as XLA's, refined in float64).
"""

from __future__ import annotations

import builtins
import enum
import operator

import numpy as np

from relaxjax import dtypes
from relaxjax._numpy import core, ufuncs
from relaxjax._numpy.arraylike import array_operand, astype, dtype_of
from relaxjax.trace import emit

__all__ = [
    "RoundingMethod",
    "abs",
    "acos",
    "acosh",
    "add",
    "asin",
    "asinh",
    "atan",
    "atan2",
    "atanh",
    "cbrt",
    "ceil",
    "clamp",
    "convert_element_type",
    "cos",
    "cosh",
    "div",
    "eq",
    "erf",
    "erf_inv",
    "erfc",
    "exp",
    "exp2",
    "expm1",
    "floor",
    "ge",
    "gt",
    "integer_pow",
    "is_finite",
    "le",
    "log",
    "log1p",
    "logistic",
    "lt",
    "max",
    "min",
    "mul",
    "ne",
    "neg",
    "nextafter",
    "pow",
    "rem",
    "round",
    "rsqrt",
    "select",
    "sign",
    "sin",
    "sinh",
    "sqrt",
    "square",
    "sub",
    "tan",
    "tanh",
]

_FLOATING = "floating, complexfloating"
_SIGNED = "floating, complexfloating, signedinteger"
_NUMERIC = "integer, floating, complexfloating"
_ANY = "any"  # bool too


class RoundingMethod(enum.IntEnum):
    """How :func:`round` breaks ties (``jax.lax.RoundingMethod``)."""

    AWAY_FROM_ZERO = 0
    TO_NEAREST_EVEN = 1


def _accepts(kinds: str, dtype: str) -> bool:
    """Whether ``dtype`` is a subtype of one of ``kinds`` (jax's abstract dtype names)."""
    if kinds == _ANY:
        return True
    names = set(kinds.split(", "))
    if dtype == "bool":
        return False
    if dtypes.is_floating(dtype):
        return "floating" in names
    return "integer" in names or ("signedinteger" in names and dtypes.is_signed(dtype))


def _checked(name: str, x: object, kinds: str = _FLOATING, position: int | None = None) -> object:
    """``x`` as an operand, refused (``TypeError``, jax's words) unless its dtype is a
    subtype of ``kinds`` (``position``: the operand's, named as jax names it)."""
    x = array_operand(x)
    dtype = dtype_of(x)
    if not _accepts(kinds, dtype):
        at = "" if position is None else f" at position {position}"
        raise TypeError(
            f"{name} does not accept dtype {dtype}{at}. Accepted dtypes{at} are subtypes of "
            f"{kinds}."
        )
    return x


def _same(name: str, *xs: object, kinds: str = _NUMERIC) -> list[object]:
    """The operands of a binary function: one dtype (``TypeError`` naming both otherwise)."""
    operands = [array_operand(x) for x in xs]
    found = [dtype_of(x) for x in operands]
    if len(set(found)) > 1:
        raise TypeError(
            f"lax.{name} requires arguments to have the same dtypes, got {', '.join(found)}. "
            f"(Tip: jnp.{name} is a similar function that does automatic type promotion on "
            "inputs)."
        )
    return [_checked(name, x, kinds, i) for i, x in enumerate(operands)]


def _unary(name: str, function, kinds: str = _FLOATING, doc: str = ""):
    def wrapper(x):
        return function(_checked(name, x, kinds))

    wrapper.__name__ = wrapper.__qualname__ = name
    wrapper.__doc__ = f"``jax.lax.{name}``: {doc}"
    return wrapper


exp = _unary("exp", core.exp, doc="``e ** x`` (floats).")
exp2 = _unary("exp2", ufuncs.exp2, doc="``2 ** x`` (floats).")
expm1 = _unary("expm1", ufuncs.expm1, doc="``exp(x) - 1``, accurate near 0 (floats).")
log = _unary("log", core.log, doc="the natural logarithm (floats).")
log1p = _unary("log1p", ufuncs.log1p, doc="``log(1 + x)``, accurate near 0 (floats).")
sqrt = _unary("sqrt", core.sqrt, doc="the square root (floats).")
cbrt = _unary("cbrt", ufuncs.cbrt, doc="the cube root (floats).")
tanh = _unary("tanh", core.tanh, doc="the hyperbolic tangent (floats).")
sinh = _unary("sinh", ufuncs.sinh, doc="the hyperbolic sine (floats).")
cosh = _unary("cosh", ufuncs.cosh, doc="the hyperbolic cosine (floats).")
asinh = _unary("asinh", ufuncs.arcsinh, doc="the inverse hyperbolic sine (floats).")
acosh = _unary("acosh", ufuncs.arccosh, doc="the inverse hyperbolic cosine (floats).")
atanh = _unary("atanh", ufuncs.arctanh, doc="the inverse hyperbolic tangent (floats).")
sin = _unary("sin", core.sin, doc="the sine (floats).")
cos = _unary("cos", core.cos, doc="the cosine (floats).")
tan = _unary("tan", ufuncs.tan, doc="the tangent (floats).")
asin = _unary("asin", ufuncs.arcsin, doc="the inverse sine (floats).")
acos = _unary("acos", ufuncs.arccos, doc="the inverse cosine (floats).")
atan = _unary("atan", ufuncs.arctan, doc="the inverse tangent (floats).")
erf = _unary("erf", lambda x: emit("erf", (x,)), doc="the error function (floats).")
erfc = _unary("erfc", lambda x: emit("erfc", (x,)), doc="``1 - erf(x)``, accurate in the tail.")
logistic = _unary("logistic", lambda x: emit("sigmoid", (x,)), doc="``1 / (1 + exp(-x))``.")
floor = _unary("floor", ufuncs.floor, doc="rounds toward negative infinity (floats).")
ceil = _unary("ceil", ufuncs.ceil, doc="rounds toward positive infinity (floats).")
is_finite = _unary("is_finite", ufuncs.isfinite, doc="neither infinite nor NaN (floats).")
neg = _unary("neg", core.negative, _NUMERIC, doc="``-x`` (integers wrap).")
sign = _unary("sign", ufuncs.sign, _NUMERIC, doc="-1, 0 or 1 (NaN stays NaN).")
abs = _unary("abs", core.abs, _SIGNED, doc="``|x|`` (floats and signed integers).")  # noqa: A001
square = _unary("square", ufuncs.square, _NUMERIC, doc="``x * x``.")
rsqrt = _unary("rsqrt", lambda x: emit("rsqrt", (x,)), doc="``1 / sqrt(x)`` (floats).")


def round(x, rounding_method=RoundingMethod.AWAY_FROM_ZERO):  # noqa: A001 - jax.lax's name
    """``jax.lax.round``: the nearest integer; ties away from zero by default,
    to even with ``RoundingMethod.TO_NEAREST_EVEN`` (floats)."""
    x = _checked("round", x)
    method = RoundingMethod(int(rounding_method))
    if method is RoundingMethod.TO_NEAREST_EVEN:
        return ufuncs.rint(x)
    whole = ufuncs.trunc(x)  # x - whole is exact, so ties are found exactly
    tie_or_more = core.greater_equal(core.abs(core.subtract(x, whole)), _like(0.5, x))
    return core.where(tie_or_more, core.add(whole, ufuncs.sign(x)), whole)


def _like(value: float, x: object) -> np.ndarray:
    return np.asarray(value, dtypes.to_numpy(dtype_of(x)))


def integer_pow(x, y):
    """``jax.lax.integer_pow``: ``x ** y`` for a static int ``y``, by repeated squaring
    (integers wrap as jax's; a negative ``y`` needs a float ``x``)."""
    x = _checked("integer_pow", x, _NUMERIC)
    if isinstance(y, builtins.bool) or not isinstance(y, int | np.integer):
        raise TypeError(f"integer_pow: the exponent must be a static int, got {y!r}")
    if y < 0 and not dtypes.is_floating(dtype_of(x)):
        raise TypeError("Integers cannot be raised to negative powers.")
    power, base, n = None, x, builtins.abs(operator.index(y))
    while n:
        if n & 1:
            power = base if power is None else core.multiply(power, base)
        n >>= 1
        if n:
            base = core.multiply(base, base)
    if power is None:
        return core.ones_like(x)
    return core.divide(_like(1, x), power) if y < 0 else power


def _binary(name: str, function, kinds: str = _NUMERIC, doc: str = ""):
    def wrapper(x, y):
        return function(*_same(name, x, y, kinds=kinds))

    wrapper.__name__ = wrapper.__qualname__ = name
    wrapper.__doc__ = f"``jax.lax.{name}``: {doc} Both operands of one dtype."
    return wrapper


add = _binary("add", core.add, doc="``x + y``.")
sub = _binary("sub", core.subtract, doc="``x - y``.")
mul = _binary("mul", core.multiply, doc="``x * y``.")
max = _binary("max", core.maximum, _ANY, doc="the elementwise maximum (NaN propagates).")  # noqa: A001
min = _binary("min", core.minimum, _ANY, doc="the elementwise minimum (NaN propagates).")  # noqa: A001
atan2 = _binary("atan2", ufuncs.arctan2, _FLOATING, doc="the angle of ``(y=x, x=y)``.")
eq = _binary("eq", core.equal, _ANY, doc="``x == y``.")
ne = _binary("ne", core.not_equal, _ANY, doc="``x != y``.")
lt = _binary("lt", core.less, _ANY, doc="``x < y``.")
le = _binary("le", core.less_equal, _ANY, doc="``x <= y``.")
gt = _binary("gt", core.greater, _ANY, doc="``x > y``.")
ge = _binary("ge", core.greater_equal, _ANY, doc="``x >= y``.")


def nextafter(x1, x2):
    """``jax.lax.nextafter``: the next float after ``x1`` toward ``x2``. Both operands of
    one dtype."""
    return ufuncs.nextafter(*_same("nextafter", x1, x2, kinds="floating"))


def div(x, y):
    """``jax.lax.div``: ``x / y``; integers round toward zero, and an integer divided by 0
    gives -1 (all ones unsigned), as XLA. Both operands of one dtype."""
    x, y = _same("div", x, y)
    if dtypes.is_floating(dtype_of(x)):
        return core.divide(x, y)
    floor_quotient = core.floor_divide(x, y)
    remainder = ufuncs.fmod(x, y)
    signs_differ = core.not_equal(core.less(remainder, 0), core.less(y, 0))
    behind = core.logical_and(core.not_equal(remainder, 0), signs_differ)
    quotient = core.where(behind, core.add(floor_quotient, 1), floor_quotient)
    by_zero = np.asarray(-1).astype(dtypes.to_numpy(dtype_of(x)))
    return core.where(core.equal(y, 0), by_zero, quotient)


def rem(x, y):
    """``jax.lax.rem``: the remainder with the sign of ``x`` (C's ``fmod``); an integer
    remainder by 0 is ``x``, as XLA. Both operands of one dtype."""
    x, y = _same("rem", x, y)
    remainder = ufuncs.fmod(x, y)
    if dtypes.is_floating(dtype_of(x)):
        return remainder
    return core.where(core.equal(y, 0), x, remainder)


def pow(x, y):  # noqa: A001 - jax.lax's name
    """``jax.lax.pow``: ``x ** y`` for a float ``x`` and a ``y`` of its dtype or an integer
    ``y``."""
    x = _checked("pow", x, position=0)
    y = array_operand(y)
    if dtype_of(y) != dtype_of(x) and not dtypes.is_integer(dtype_of(y)):
        raise TypeError(
            f"lax.pow requires the exponent to be an integer or of the base's dtype, got "
            f"{dtype_of(x)}, {dtype_of(y)}."
        )
    if dtypes.is_integer(dtype_of(y)):
        y = astype(y, dtype_of(x))
    return core.power(x, y)


def clamp(min, x, max):  # noqa: A002 - jax.lax's names
    """``jax.lax.clamp``: ``x`` limited to ``[min, max]`` (bounds scalars or of x's shape),
    all three of one dtype."""
    low, x, high = _same("clamp", min, x, max, kinds=_ANY)
    return core.minimum(core.maximum(x, low), high)


def select(pred, on_true, on_false):
    """``jax.lax.select``: ``on_true`` where the boolean ``pred``, else ``on_false``
    (cases of one dtype)."""
    pred = array_operand(pred)
    if dtype_of(pred) != "bool":
        raise TypeError(f"select: pred must be boolean, got {dtype_of(pred)}")
    on_true, on_false = _same("select", on_true, on_false, kinds=_ANY)
    return core.where(pred, on_true, on_false)


def convert_element_type(operand, new_dtype):
    """``jax.lax.convert_element_type``: ``operand`` as ``new_dtype`` (floats to integers
    truncate toward zero)."""
    return astype(array_operand(operand), dtypes.canonical(np.dtype(new_dtype)))


def erf_inv(x):
    """``jax.lax.erf_inv``: the inverse error function on ``[-1, 1]`` (``±inf`` at
    ``±1``, NaN outside): XLA's polynomial (Giles) in float32 (float16 and bfloat16 compute
    in float32); in float64 that polynomial, or the tail's asymptotic inverse where
    ``1 - |x| < 6e-6``, refined by two steps (within 2 ulp of the true inverse)."""
    x = _checked("erf_inv", x)
    dtype = dtype_of(x)
    if dtype == "float64":
        y = _refine(_refine(_erf_inv_start(x), x), x)
    else:
        wide = astype(x, "float32") if dtype != "float32" else x
        y = _erf_inv_giles(
            wide, core.negative(ufuncs.log1p(core.negative(core.multiply(wide, wide))))
        )
    ends = core.where(core.greater(x, 0), _like(np.inf, y), _like(-np.inf, y))
    y = core.where(core.equal(core.abs(x), _like(1, y)), ends, y)
    return y if dtype_of(y) == dtype else astype(y, dtype)


_GILES_CENTRAL = (
    2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
    -0.00125372503, -0.00417768164, 0.246640727, 1.50140941,
)  # fmt: skip
_GILES_TAIL = (
    -0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
    -0.0076224613, 0.00943887047, 1.00167406, 2.83297682,
)  # fmt: skip


def _polynomial(coefficients: tuple[float, ...], w: object) -> object:
    p = _like(coefficients[0], w)
    for c in coefficients[1:]:
        p = core.add(_like(c, w), core.multiply(p, w))
    return p


def _erf_inv_giles(x: object, w: object) -> object:
    """Giles' single-precision inverse from ``w = -log(1 - x * x)``."""
    central = _polynomial(_GILES_CENTRAL, core.subtract(w, _like(2.5, w)))
    tail_w = core.subtract(core.sqrt(core.maximum(w, _like(5.0, w))), _like(3.0, w))
    tail = _polynomial(_GILES_TAIL, tail_w)
    return core.multiply(core.where(core.less(w, _like(5.0, w)), central, tail), x)


def _erf_inv_start(x: object) -> object:
    """A float64 start within 1e-5: Giles' polynomial (``w`` as ``-log((1 - a)(1 + a))``,
    which keeps the digits ``1 - x * x`` loses), or where ``w >= 12``, ``t`` solving
    ``erfc(t) = q`` asymptotically (``q = t sqrt(pi) exp(t^2) / (1 + 1 / (2 t^2))``)."""
    a = core.abs(x)
    one = _like(1.0, a)
    q = core.subtract(one, a)
    w = core.negative(core.log(core.multiply(q, core.add(one, a))))
    t = core.sqrt(core.negative(core.log(q)))
    for _ in range(2):
        correction = core.add(one, core.divide(_like(0.5, t), core.multiply(t, t)))
        scaled = core.multiply(
            core.multiply(q, _like(np.sqrt(np.pi), q)), core.multiply(t, correction)
        )
        t = core.sqrt(core.maximum(core.negative(core.log(scaled)), _like(0.01, t)))
    tail = core.multiply(ufuncs.sign(x), t)
    return core.where(core.less(w, _like(12.0, w)), _erf_inv_giles(x, w), tail)


def _refine(y: object, x: object) -> object:
    """One step toward ``erf(y) = x`` on ``|x|``: Halley's on ``erf`` where ``|x| < 0.5``,
    Newton's on ``log(erfc(t)) = log(1 - |x|)`` elsewhere (nearly quadratic in ``t``, and
    ``1 - |x|`` is exact there, so the tail keeps its digits)."""
    a, t = core.abs(x), core.abs(y)
    slope = core.multiply(
        _like(2 / np.sqrt(np.pi), t), core.exp(core.negative(core.multiply(t, t)))
    )
    residual = core.subtract(emit("erf", (t,)), a)
    # erf'' / erf' = -2t: Halley's denominator f' - f f'' / (2 f') = f' + f t
    halley = core.subtract(t, core.divide(residual, core.add(slope, core.multiply(residual, t))))
    tail = emit("erfc", (t,))
    gap = core.subtract(core.log(tail), core.log(core.subtract(_like(1.0, a), a)))
    newton = core.add(t, core.divide(core.multiply(gap, tail), slope))
    return core.multiply(ufuncs.sign(x), core.where(core.less(a, _like(0.5, a)), halley, newton))
