"""Elementwise math, logic and bit wrappers of ``relaxjax.numpy``: trigonometric,
hyperbolic, exponential and logarithmic functions, rounding, classification, the binary
float functions, bit operations, comparisons of whole arrays (``isclose allclose
array_equal array_equiv``) and the real-valued forms of the complex helpers.

Each elementwise function records one op (see :mod:`relaxjax.ops.transcendental`,
``rounding``, ``classify``, ``binary_math``, ``bitwise``); the others record jax's own
composition of ops. relaxjax has no complex dtypes, so ``real``, ``conj`` and
``conjugate`` return their operand, ``imag`` zeros, ``angle`` the angle of a real number
(0 or pi), ``iscomplex`` false and ``isreal`` true everywhere.
"""

from __future__ import annotations

import builtins
import math

import ml_dtypes
import numpy as np

from relaxjax import arith, dtypes
from relaxjax._numpy import arraylike
from relaxjax._numpy.arraylike import dtype_of, shape_of
from relaxjax._numpy.core import asarray, full_like, where, zeros_like
from relaxjax._numpy.reduction import sum as _sum
from relaxjax._numpy.shape import concatenate, cumsum
from relaxjax.ops.rounding import RoundAttrs
from relaxjax.trace import Tracer, emit

__all__ = [
    "acos",
    "acosh",
    "allclose",
    "angle",
    "arccos",
    "arccosh",
    "arcsin",
    "arcsinh",
    "arctan",
    "arctan2",
    "arctanh",
    "around",
    "array_equal",
    "array_equiv",
    "asin",
    "asinh",
    "atan",
    "atan2",
    "atanh",
    "bitwise_and",
    "bitwise_count",
    "bitwise_invert",
    "bitwise_left_shift",
    "bitwise_not",
    "bitwise_or",
    "bitwise_right_shift",
    "bitwise_xor",
    "cbrt",
    "ceil",
    "conj",
    "conjugate",
    "copysign",
    "cosh",
    "deg2rad",
    "degrees",
    "divmod",
    "exp2",
    "expm1",
    "fabs",
    "float_power",
    "floor",
    "fmax",
    "fmin",
    "fmod",
    "frexp",
    "gcd",
    "heaviside",
    "hypot",
    "i0",
    "imag",
    "invert",
    "isclose",
    "iscomplex",
    "iscomplexobj",
    "isfinite",
    "isinf",
    "isnan",
    "isneginf",
    "isposinf",
    "isreal",
    "isrealobj",
    "lcm",
    "ldexp",
    "left_shift",
    "log10",
    "log1p",
    "log2",
    "logaddexp",
    "logaddexp2",
    "logical_xor",
    "modf",
    "nan_to_num",
    "nextafter",
    "positive",
    "pow",
    "rad2deg",
    "radians",
    "real",
    "reciprocal",
    "right_shift",
    "rint",
    "round",
    "sign",
    "signbit",
    "sinc",
    "sinh",
    "spacing",
    "square",
    "tan",
    "trunc",
    "unwrap",
]


def _no_out(name: str, out: object) -> None:
    if out is not None:
        raise NotImplementedError(f"{name}: the out argument is not supported")


def _no_ufunc_extras(name: str, out: object, where: object) -> None:
    """jax's ufunc objects take ``out`` and ``where`` but support neither; nor do we."""
    for keyword, value in (("out", out), ("where", where)):
        if value is not None:
            raise NotImplementedError(f"{name}: the {keyword} argument is not supported")


# --------------------------------------------------------------------------- unary


def tan(x, /):
    """The tangent (``jnp.tan``); integers compute in float."""
    return emit("tan", (x,))


def arcsin(x, /):
    """The inverse sine (``jnp.arcsin``): NaN outside ``[-1, 1]``."""
    return emit("arcsin", (x,))


def arccos(x, /):
    """The inverse cosine (``jnp.arccos``): NaN outside ``[-1, 1]``."""
    return emit("arccos", (x,))


def arctan(x, /):
    """The inverse tangent (``jnp.arctan``)."""
    return emit("arctan", (x,))


def sinh(x, /):
    """The hyperbolic sine (``jnp.sinh``)."""
    return emit("sinh", (x,))


def cosh(x, /):
    """The hyperbolic cosine (``jnp.cosh``)."""
    return emit("cosh", (x,))


def arcsinh(x, /):
    """The inverse hyperbolic sine (``jnp.arcsinh``)."""
    return emit("arcsinh", (x,))


def arccosh(x, /):
    """The inverse hyperbolic cosine (``jnp.arccosh``): NaN below 1."""
    return emit("arccosh", (x,))


def arctanh(x, /):
    """The inverse hyperbolic tangent (``jnp.arctanh``): NaN outside ``[-1, 1]``."""
    return emit("arctanh", (x,))


acos, asin, atan = arccos, arcsin, arctan
acosh, asinh, atanh = arccosh, arcsinh, arctanh


def exp2(x, /):
    """``2 ** x`` (``jnp.exp2``)."""
    return emit("exp2", (x,))


def expm1(x, /):
    """``exp(x) - 1``, accurate near 0 (``jnp.expm1``)."""
    return emit("expm1", (x,))


def log2(x, /):
    """The base-2 logarithm (``jnp.log2``)."""
    return emit("log2", (x,))


def log10(x, /):
    """The base-10 logarithm (``jnp.log10``)."""
    return emit("log10", (x,))


def log1p(x, /):
    """``log(1 + x)``, accurate near 0 (``jnp.log1p``)."""
    return emit("log1p", (x,))


def cbrt(x, /):
    """The real cube root (``jnp.cbrt``): ``cbrt(-8) == -2``."""
    return emit("cbrt", (x,))


def fabs(x, /):
    """``|x|`` in floating point (``jnp.fabs``): integers become floats."""
    return emit("fabs", (x,))


def reciprocal(x, /):
    """``1 / x`` in floating point (``jnp.reciprocal``)."""
    return emit("reciprocal", (x,))


def deg2rad(x, /):
    """Degrees to radians (``jnp.deg2rad``)."""
    return emit("deg2rad", (x,))


def rad2deg(x, /):
    """Radians to degrees (``jnp.rad2deg``)."""
    return emit("rad2deg", (x,))


radians, degrees = deg2rad, rad2deg


def sinc(x, /):
    """The normalised sinc ``sin(pi x) / (pi x)``, 1 at 0 (``jnp.sinc``)."""
    return emit("sinc", (x,))


def i0(x):
    """The modified Bessel function of the first kind, order 0 (``jnp.i0``)."""
    return emit("i0", (x,))


def floor(x, /):
    """Round toward -inf (``jnp.floor``); integers and bools are returned unchanged."""
    return emit("floor", (x,))


def ceil(x, /):
    """Round toward +inf (``jnp.ceil``); integers and bools are returned unchanged."""
    return emit("ceil", (x,))


def trunc(x):
    """Round toward 0 (``jnp.trunc``); integers and bools are returned unchanged."""
    return emit("trunc", (x,))


def rint(x, /):
    """Round to the nearest integer, half to even (``jnp.rint``); integers and bools
    become float64, as in jax."""
    return emit("rint", (x,))


def round(a, decimals=0, out=None):  # noqa: A001 - jax.numpy's name
    """Round to ``decimals`` decimals, half to even (``jnp.round``): integers are
    returned unchanged (``decimals >= 0``), bools are rejected."""
    _no_out("round", out)
    decimals = _static_int("round", "decimals", decimals)
    if decimals < 0 and dtypes.is_integer(dtype_of(a)):
        raise NotImplementedError("integer np.round not implemented for decimals < 0")
    return emit("round", (a,), RoundAttrs(decimals))


around = round


def _static_int(name: str, what: str, value: object) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name}: {what} must be a Python int, got {value!r}")
    return int(value)


def sign(x, /):
    """-1, 0 or 1 by the sign of ``x`` (``jnp.sign``); ``sign(-0.0) == -0.0`` and NaN
    stays NaN; bools are rejected."""
    return emit("sign", (x,))


def square(x, /):
    """``x * x`` (``jnp.square``); bools compute in int32."""
    return emit("square", (x,))


def positive(x, /):
    """``+x`` (``jnp.positive``): ``x`` itself, as an array."""
    return x if isinstance(x, Tracer) else asarray(x)


def isnan(x, /):
    """Whether ``x`` is NaN (``jnp.isnan``); false for integers."""
    return emit("isnan", (x,))


def isinf(x, /):
    """Whether ``x`` is +-inf (``jnp.isinf``); false for integers."""
    return emit("isinf", (x,))


def isfinite(x, /):
    """Whether ``x`` is neither infinite nor NaN (``jnp.isfinite``); true for integers."""
    return emit("isfinite", (x,))


def isposinf(x, /, out=None):
    """Whether ``x`` is +inf (``jnp.isposinf``)."""
    _no_out("isposinf", out)
    return emit("isposinf", (x,))


def isneginf(x, /, out=None):
    """Whether ``x`` is -inf (``jnp.isneginf``)."""
    _no_out("isneginf", out)
    return emit("isneginf", (x,))


def signbit(x, /):
    """Whether the sign bit of ``x`` is set (``jnp.signbit``): true for ``-0.0``."""
    return emit("signbit", (x,))


def spacing(x, /):
    """The distance from ``x`` to the next value of its dtype away from 0, signed
    (``jnp.spacing``)."""
    return emit("spacing", (x,))


def frexp(x, /):
    """``(mantissa, exponent)`` with ``x == mantissa * 2 ** exponent`` and ``0.5 <=
    |mantissa| < 1``; the exponent is int32 (``jnp.frexp``)."""
    return emit("frexp", (x,))


def modf(x, /, out=None):
    """``(fractional part, integral part)``, both with the sign of ``x`` (``jnp.modf``)."""
    _no_out("modf", out)
    (x,) = arraylike.converted(x, inexact=True)
    whole = where(emit("greater_equal", (x, 0)), floor(x), ceil(x))
    return emit("subtract", (x, whole)), whole


def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    """NaN, +inf and -inf replaced by ``nan``, ``posinf`` and ``neginf`` (default: the
    dtype's largest and lowest finite values) (``jnp.nan_to_num``); non-float arrays
    are returned unchanged."""
    del copy
    dtype = dtype_of(x)
    if not dtypes.is_floating(dtype):
        return positive(x)
    info = ml_dtypes.finfo(dtypes.to_numpy(dtype))
    posinf = info.max if posinf is None else posinf
    neginf = info.min if neginf is None else neginf
    out = where(isnan(x), asarray(nan, dtype=dtype), x)
    out = where(isposinf(out), asarray(posinf, dtype=dtype), out)
    return where(isneginf(out), asarray(neginf, dtype=dtype), out)


# --------------------------------------------------------------------------- binary


def arctan2(x1, x2, /):
    """The angle of the point ``(x2, x1)`` in ``(-pi, pi]`` (``jnp.arctan2``)."""
    return emit("arctan2", (x1, x2))


atan2 = arctan2


def copysign(x1, x2, /):
    """``|x1|`` with the sign of ``x2`` (``jnp.copysign``)."""
    return emit("copysign", (x1, x2))


def hypot(x1, x2, /):
    """``sqrt(x1 ** 2 + x2 ** 2)`` without intermediate overflow (``jnp.hypot``)."""
    return emit("hypot", (x1, x2))


def nextafter(x, y, /):
    """The next value of the dtype after ``x`` toward ``y`` (``jnp.nextafter``)."""
    return emit("nextafter", (x, y))


def float_power(x, y, /):
    """``x ** y`` in floating point (``jnp.float_power``)."""
    return emit("float_power", (x, y))


def pow(x1, x2, /):  # noqa: A001 - jax.numpy's name
    """``x1 ** x2`` (``jnp.pow``, an alias of ``power``)."""
    return emit("power", (x1, x2))


def logaddexp(x1, x2, /, *, out=None, where=None):
    """``log(exp(x1) + exp(x2))`` without overflow (``jnp.logaddexp``)."""
    _no_ufunc_extras("logaddexp", out, where)
    return emit("logaddexp", (x1, x2))


def logaddexp2(x1, x2, /, *, out=None, where=None):
    """``log2(2 ** x1 + 2 ** x2)`` without overflow (``jnp.logaddexp2``)."""
    _no_ufunc_extras("logaddexp2", out, where)
    return emit("logaddexp2", (x1, x2))


def heaviside(x1, x2, /):
    """0 where ``x1 < 0``, 1 where ``x1 > 0``, ``x2`` where ``x1 == 0``
    (``jnp.heaviside``)."""
    return emit("heaviside", (x1, x2))


def fmod(x1, x2, /):
    """The remainder with the sign of ``x1`` (C's ``fmod``, ``jnp.fmod``); an integer
    remainder by 0 is 0."""
    return emit("fmod", (x1, x2))


def fmax(x1, x2):
    """The elementwise maximum, ignoring NaN (``jnp.fmax``)."""
    return emit("fmax", (x1, x2))


def fmin(x1, x2):
    """The elementwise minimum, ignoring NaN (``jnp.fmin``)."""
    return emit("fmin", (x1, x2))


def ldexp(x1, x2, /):
    """``x1 * 2 ** x2`` exactly (``jnp.ldexp``); ``x2`` must be an integer array."""
    return emit("ldexp", (x1, x2))


def divmod(x1, x2, /):  # noqa: A001 - jax.numpy's name
    """``(x1 // x2, x1 % x2)`` (``jnp.divmod``)."""
    return emit("floor_divide", (x1, x2)), emit("mod", (x1, x2))


def logical_xor(x1, x2, /, *, out=None, where=None):
    """``x1 != x2`` as truth values (``jnp.logical_xor``)."""
    _no_ufunc_extras("logical_xor", out, where)
    return emit("logical_xor", (x1, x2))


def gcd(x1, x2):
    """The greatest common divisor of ``|x1|`` and ``|x2|`` (``jnp.gcd``); integers only."""
    return emit("gcd", (x1, x2))


def lcm(x1, x2):
    """The least common multiple of ``|x1|`` and ``|x2|`` (``jnp.lcm``); integers only."""
    return emit("lcm", (x1, x2))


# --------------------------------------------------------------------------- bits


def bitwise_and(x1, x2, /, *, out=None, where=None):
    """``x1 & x2`` on integers and bools (``jnp.bitwise_and``)."""
    _no_ufunc_extras("bitwise_and", out, where)
    return emit("bitwise_and", (x1, x2))


def bitwise_or(x1, x2, /, *, out=None, where=None):
    """``x1 | x2`` on integers and bools (``jnp.bitwise_or``)."""
    _no_ufunc_extras("bitwise_or", out, where)
    return emit("bitwise_or", (x1, x2))


def bitwise_xor(x1, x2, /, *, out=None, where=None):
    """``x1 ^ x2`` on integers and bools (``jnp.bitwise_xor``)."""
    _no_ufunc_extras("bitwise_xor", out, where)
    return emit("bitwise_xor", (x1, x2))


def invert(x, /):
    """``~x`` on integers, ``not x`` on bools (``jnp.invert``)."""
    return emit("invert", (x,))


bitwise_not = bitwise_invert = invert


def left_shift(x1, x2, /):
    """``x1 << x2`` (``jnp.left_shift``); a shift outside ``[0, bits)`` gives 0."""
    return emit("left_shift", (x1, x2))


def right_shift(x1, x2, /):
    """``x1 >> x2``, arithmetic for signed dtypes (``jnp.right_shift``); a shift outside
    ``[0, bits)`` gives 0, or -1 for negative ``x1``."""
    return emit("right_shift", (x1, x2))


bitwise_left_shift, bitwise_right_shift = left_shift, right_shift


def bitwise_count(x, /):
    """The number of set bits of ``|x|``, as uint8 (``jnp.bitwise_count``)."""
    return emit("bitwise_count", (x,))


# --------------------------------------------------------------------------- closeness


def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """``|a - b| <= atol + rtol * |b|`` elementwise, or ``a == b`` (infinities of one
    sign); NaNs are close when ``equal_nan`` (``jnp.isclose``)."""
    a, b = arraylike.converted(a, b, inexact=True)
    dtype = arraylike.dtype_of(a)
    rtol, atol = arraylike.astype(rtol, dtype), arraylike.astype(atol, dtype)
    difference = emit("abs", (emit("subtract", (a, b)),))
    bound = emit("add", (atol, emit("multiply", (rtol, emit("abs", (b,))))))
    in_range = emit("logical_and", (isfinite(b), emit("less_equal", (difference, bound))))
    close = emit("logical_or", (emit("equal", (a, b)), in_range))
    if equal_nan:
        close = emit("logical_or", (close, emit("logical_and", (isnan(a), isnan(b)))))
    return close


def _all(condition: object) -> object:
    """Whether every element is true: no element is false (true for an empty array)."""
    falses = _sum(emit("logical_not", (condition,)))
    return emit("equal", (falses, 0))


def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Whether every pair is :func:`isclose` (``jnp.allclose``): a bool scalar."""
    return _all(isclose(a, b, rtol, atol, equal_nan))


def array_equal(a1, a2, equal_nan=False):
    """Whether the arrays have the same shape and elements (``jnp.array_equal``).

    Symbolic dims that may differ are compared at run time: the elements are compared
    over the common part of the two shapes, and the sizes must be equal too.
    """
    a1, a2 = asarray(a1), asarray(a2)
    shape1, shape2 = shape_of(a1), shape_of(a2)
    if len(shape1) != len(shape2) or builtins.any(
        arith.compare(d1, "!=", d2) is True for d1, d2 in zip(shape1, shape2)
    ):
        return asarray(False)
    key1, key2, same_size = [], [], []
    for d1, d2 in zip(shape1, shape2):
        if arith.compare(d1, "==", d2) is True:
            key1.append(slice(None))
            key2.append(slice(None))
            continue
        common = arith.min_(d1, d2)
        key1.append(slice(0, common))
        key2.append(slice(0, common))
        same_size.append(emit("equal", (d1, d2)))
    if same_size:
        a1, a2 = a1[tuple(key1)], a2[tuple(key2)]
    equal = emit("equal", (a1, a2))
    if equal_nan:
        equal = emit("logical_or", (equal, emit("logical_and", (isnan(a1), isnan(a2)))))
    result = _all(equal)
    for check in same_size:
        result = emit("logical_and", (result, check))
    return result


def array_equiv(a1, a2):
    """Whether the arrays broadcast together and are equal everywhere
    (``jnp.array_equiv``). Shapes that can never broadcast give False; symbolic dims
    that may not broadcast are checked at run time (a ``ShapeError`` then)."""
    a1, a2 = asarray(a1), asarray(a2)
    shape1, shape2 = shape_of(a1), shape_of(a2)
    for d1, d2 in zip(reversed(shape1), reversed(shape2)):
        if builtins.all(arith.compare(d, "!=", 1) is True for d in (d1, d2)) and (
            arith.compare(d1, "!=", d2) is True
        ):
            return asarray(False)
    return _all(emit("equal", (a1, a2)))


# --------------------------------------------------------------------------- complex


def real(val, /):
    """The real part (``jnp.real``): ``val`` itself, relaxjax having no complex dtypes."""
    return positive(val)


def imag(val, /):
    """The imaginary part (``jnp.imag``): zeros of ``val``'s shape and dtype."""
    return zeros_like(val)


def conjugate(x, /):
    """The complex conjugate (``jnp.conjugate``): ``x`` itself for real arrays."""
    return positive(x)


conj = conjugate


def angle(z, deg=False):
    """The angle of ``z`` in the complex plane (``jnp.angle``): 0 for non-negative reals,
    pi for negative ones (``-0.0`` included), NaN for NaN; in degrees when ``deg``.
    Integers, bools and 0-d floats give float64, as in jax."""
    dtype = dtype_of(z)
    if not dtypes.is_floating(dtype) or len(shape_of(z)) == 0:
        z = arraylike.astype(z, dtypes.default_float())
    result = emit("arctan2", (0.0, z))
    return rad2deg(result) if deg else result


def iscomplex(x):
    """Whether each element has a nonzero imaginary part (``jnp.iscomplex``): false."""
    return full_like(x, False, dtype="bool")


def isreal(x):
    """Whether each element has a zero imaginary part (``jnp.isreal``): true."""
    return full_like(x, True, dtype="bool")


def iscomplexobj(x):
    """Whether ``x`` is a complex number or array (``jnp.iscomplexobj``): a Python bool;
    only Python/numpy complex values and complex numpy arrays are."""
    if isinstance(x, (complex, np.complexfloating)):
        return True
    if x is None or isinstance(x, (bool, int, float, str, np.generic, Tracer)):
        return False
    kind = getattr(x, "dtype", None)
    if kind is None:
        kind = np.asarray(x).dtype
    try:
        return bool(np.issubdtype(np.dtype(kind), np.complexfloating))
    except TypeError:
        return False


def isrealobj(x):
    """``not iscomplexobj(x)`` (``jnp.isrealobj``)."""
    return not iscomplexobj(x)


# --------------------------------------------------------------------------- unwrap


def _negated(x: object) -> object:
    return -x if isinstance(x, (int, float)) else emit("negative", (x,))


def unwrap(p, discont=None, axis=-1, period=2 * math.pi):
    """``p`` with jumps larger than ``discont`` along ``axis`` replaced by their
    complement modulo ``period`` (``jnp.unwrap``)."""
    p = asarray(p)
    dtype = arraylike.promoted(p, period)
    p = arraylike.converted(p, period)[0]
    ndim = len(shape_of(p))
    axis = _static_int("unwrap", "axis", axis)
    if not -ndim <= axis < ndim:
        raise ValueError(f"unwrap: axis {axis} is out of bounds for an array of rank {ndim}")
    axis %= ndim

    def along(part: slice) -> object:
        return p[(slice(None),) * axis + (part,)]

    integral = dtypes.is_integer(dtype)
    if isinstance(period, (int, float)):  # Python arithmetic keeps the scalars weak
        interval = period // 2 if integral else period / 2
        discont = period / 2 if discont is None else discont
    else:
        interval = emit("floor_divide" if integral else "divide", (period, 2))
        discont = emit("divide", (period, 2)) if discont is None else discont
    dd = emit("subtract", (along(slice(1, None)), along(slice(None, -1))))
    ddmod = emit("subtract", (emit("mod", (emit("add", (dd, interval)), period)), interval))
    at_lower = emit("equal", (ddmod, _negated(interval)))
    ddmod = where(emit("logical_and", (at_lower, emit("greater", (dd, 0)))), interval, ddmod)
    small = emit("less", (emit("abs", (dd,)), discont))
    correction = where(small, 0, emit("subtract", (ddmod, dd)))
    shifted = emit("add", (along(slice(1, None)), cumsum(correction, axis=axis)))
    return concatenate((along(slice(None, 1)), shifted), axis=axis)
