"""Expression-building functions: math intrinsics, select, min/max, logic, casts.

>>> from relaxjax.tir.expr import Var
>>> x = Var("x", "float32")
>>> exp(-x) + sqrt(x)
exp(-x) + sqrt(x)

Python scalars take the dtype of the other operands (``maximum(x, 0)``).
"""

from __future__ import annotations

from relaxjax.tir.expr import (
    Call,
    PrimExpr,
    Select,
    as_expr,
    binop,
    cast,
    eq,
    ne,
    unary,
)
from relaxjax.tir.intrinsics import LAZY_SELECT

__all__ = [
    "abs",
    "acos",
    "acosh",
    "asin",
    "asinh",
    "atan",
    "atan2",
    "atanh",
    "bitwise_and",
    "bitwise_not",
    "bitwise_or",
    "bitwise_xor",
    "call",
    "cast",
    "cbrt",
    "ceil",
    "copysign",
    "cos",
    "cosh",
    "eq",
    "erf",
    "erfc",
    "exp",
    "exp2",
    "expm1",
    "floor",
    "fma",
    "fmod",
    "hypot",
    "if_then_else",
    "isfinite",
    "isinf",
    "isnan",
    "ldexp",
    "log",
    "log1p",
    "log2",
    "log10",
    "logical_and",
    "logical_not",
    "logical_or",
    "max",
    "min",
    "ne",
    "nextafter",
    "popcount",
    "pow",
    "round",
    "rsqrt",
    "select",
    "shift_left",
    "shift_right",
    "sigmoid",
    "sin",
    "sinh",
    "sqrt",
    "tan",
    "tanh",
    "trunc",
]


def _operands(args: tuple[object, ...]) -> tuple[PrimExpr, ...]:
    """PrimExprs from ``args``; Python scalars take the dtype of the first PrimExpr."""
    dtype = next((a.dtype for a in args if isinstance(a, PrimExpr)), None)
    return tuple(as_expr(a, dtype) if not isinstance(a, PrimExpr) else a for a in args)


def call(intrinsic: str, *args: object) -> PrimExpr:
    """The intrinsic ``intrinsic`` applied to ``args`` (see :mod:`relaxjax.tir.intrinsics`)."""
    return Call(intrinsic, _operands(args))


def select(condition: object, true_value: object, false_value: object) -> PrimExpr:
    """``true_value if condition else false_value`` (both evaluated)."""
    t, f = _operands((true_value, false_value))
    return Select(as_expr(condition), t, f)


def if_then_else(condition: object, true_value: object, false_value: object) -> PrimExpr:
    """Like :func:`select`, but only the chosen operand is evaluated."""
    t, f = _operands((true_value, false_value))
    return Call(LAZY_SELECT, (as_expr(condition), t, f))


def max(a: object, b: object) -> PrimExpr:
    """The larger of ``a`` and ``b`` (NaN propagates; folds for index values)."""
    return binop("max", a, b)


def min(a: object, b: object) -> PrimExpr:
    """The smaller of ``a`` and ``b`` (NaN propagates; folds for index values)."""
    return binop("min", a, b)


def logical_and(a: object, b: object) -> PrimExpr:
    """``a and b`` on bool expressions."""
    return binop("and", a, b)


def logical_or(a: object, b: object) -> PrimExpr:
    """``a or b`` on bool expressions."""
    return binop("or", a, b)


def logical_not(a: object) -> PrimExpr:
    """``not a`` on a bool expression."""
    return unary("not", a)


def exp(x: PrimExpr) -> PrimExpr:
    """``e ** x``."""
    return call("exp", x)


def exp2(x: PrimExpr) -> PrimExpr:
    """``2 ** x``."""
    return call("exp2", x)


def expm1(x: PrimExpr) -> PrimExpr:
    """``exp(x) - 1``, accurate near 0."""
    return call("expm1", x)


def log(x: PrimExpr) -> PrimExpr:
    """The natural logarithm."""
    return call("log", x)


def log2(x: PrimExpr) -> PrimExpr:
    """The base-2 logarithm."""
    return call("log2", x)


def log10(x: PrimExpr) -> PrimExpr:
    """The base-10 logarithm."""
    return call("log10", x)


def log1p(x: PrimExpr) -> PrimExpr:
    """``log(1 + x)``, accurate near 0."""
    return call("log1p", x)


def sqrt(x: PrimExpr) -> PrimExpr:
    """The square root."""
    return call("sqrt", x)


def rsqrt(x: PrimExpr) -> PrimExpr:
    """``1 / sqrt(x)``."""
    return call("rsqrt", x)


def sin(x: PrimExpr) -> PrimExpr:
    """The sine."""
    return call("sin", x)


def cos(x: PrimExpr) -> PrimExpr:
    """The cosine."""
    return call("cos", x)


def tan(x: PrimExpr) -> PrimExpr:
    """The tangent."""
    return call("tan", x)


def asin(x: PrimExpr) -> PrimExpr:
    """The arc sine."""
    return call("asin", x)


def acos(x: PrimExpr) -> PrimExpr:
    """The arc cosine."""
    return call("acos", x)


def atan(x: PrimExpr) -> PrimExpr:
    """The arc tangent."""
    return call("atan", x)


def atan2(y: object, x: object) -> PrimExpr:
    """The angle of the point ``(x, y)``."""
    return call("atan2", y, x)


def sinh(x: PrimExpr) -> PrimExpr:
    """The hyperbolic sine."""
    return call("sinh", x)


def cosh(x: PrimExpr) -> PrimExpr:
    """The hyperbolic cosine."""
    return call("cosh", x)


def tanh(x: PrimExpr) -> PrimExpr:
    """The hyperbolic tangent."""
    return call("tanh", x)


def erf(x: PrimExpr) -> PrimExpr:
    """The error function."""
    return call("erf", x)


def asinh(x: PrimExpr) -> PrimExpr:
    """The inverse hyperbolic sine."""
    return call("asinh", x)


def acosh(x: PrimExpr) -> PrimExpr:
    """The inverse hyperbolic cosine."""
    return call("acosh", x)


def atanh(x: PrimExpr) -> PrimExpr:
    """The inverse hyperbolic tangent."""
    return call("atanh", x)


def cbrt(x: PrimExpr) -> PrimExpr:
    """The real cube root (negative for negative ``x``)."""
    return call("cbrt", x)


def erfc(x: PrimExpr) -> PrimExpr:
    """``1 - erf(x)``, accurate where it is small."""
    return call("erfc", x)


def hypot(x: object, y: object) -> PrimExpr:
    """``sqrt(x ** 2 + y ** 2)`` without overflow or underflow in between."""
    return call("hypot", x, y)


def copysign(x: object, y: object) -> PrimExpr:
    """``|x|`` with the sign bit of ``y``."""
    return call("copysign", x, y)


def fmod(x: object, y: object) -> PrimExpr:
    """C's remainder of ``x / y`` (truncated quotient: the sign of ``x``)."""
    return call("fmod", x, y)


def nextafter(x: object, y: object) -> PrimExpr:
    """The next value of the dtype after ``x`` toward ``y``."""
    return call("nextafter", x, y)


def ldexp(x: object, e: object) -> PrimExpr:
    """``x * 2 ** e`` for an integral ``e`` of ``x``'s dtype, rounded once."""
    return call("ldexp", x, e)


def bitwise_and(x: object, y: object) -> PrimExpr:
    """``x & y`` on ints (``and`` on bools)."""
    return call("bitwise_and", x, y)


def bitwise_or(x: object, y: object) -> PrimExpr:
    """``x | y`` on ints (``or`` on bools)."""
    return call("bitwise_or", x, y)


def bitwise_xor(x: object, y: object) -> PrimExpr:
    """``x ^ y`` on ints (``!=`` on bools)."""
    return call("bitwise_xor", x, y)


def bitwise_not(x: PrimExpr) -> PrimExpr:
    """``~x`` on ints (``not`` on bools)."""
    return call("bitwise_not", x)


def shift_left(x: object, y: object) -> PrimExpr:
    """``x << y``; 0 for a shift outside ``[0, bits)``."""
    return call("shift_left", x, y)


def shift_right(x: object, y: object) -> PrimExpr:
    """``x >> y``, arithmetic for signed and logical for unsigned dtypes; a shift outside
    ``[0, bits)`` gives 0 (-1 for a negative signed ``x``)."""
    return call("shift_right", x, y)


def popcount(x: PrimExpr) -> PrimExpr:
    """The number of set bits of ``x`` (two's complement), in ``x``'s dtype."""
    return call("popcount", x)


def sigmoid(x: PrimExpr) -> PrimExpr:
    """``1 / (1 + exp(-x))``."""
    return call("sigmoid", x)


def floor(x: PrimExpr) -> PrimExpr:
    """Round toward -inf."""
    return call("floor", x)


def ceil(x: PrimExpr) -> PrimExpr:
    """Round toward +inf."""
    return call("ceil", x)


def trunc(x: PrimExpr) -> PrimExpr:
    """Round toward 0."""
    return call("trunc", x)


def round(x: PrimExpr) -> PrimExpr:
    """Round half to even."""
    return call("round", x)


def abs(x: PrimExpr) -> PrimExpr:
    """The absolute value (ints wrap at the minimum)."""
    return call("abs", x)


def isnan(x: PrimExpr) -> PrimExpr:
    """True where ``x`` is NaN."""
    return call("isnan", x)


def isinf(x: PrimExpr) -> PrimExpr:
    """True where ``x`` is +-inf."""
    return call("isinf", x)


def isfinite(x: PrimExpr) -> PrimExpr:
    """True where ``x`` is neither NaN nor infinite."""
    return call("isfinite", x)


def pow(x: object, y: object) -> PrimExpr:
    """``x ** y`` for floats."""
    return call("pow", x, y)


def fma(a: object, b: object, c: object) -> PrimExpr:
    """``a * b + c`` (backends may fuse)."""
    return call("fma", a, b, c)
