"""``relaxjax.scipy.special``: the special functions of ``jax.scipy.special`` that
relaxjax provides, with jax's semantics (ints and bools compute in ``to_inexact`` of
their dtype, 64-bit types enabled).

``erf``, ``erfc``, ``i0``, ``i0e`` and ``expit`` are ops (``erfc`` is libm's, accurate
where ``1 - erf`` would cancel); ``ndtr`` and ``log_ndtr`` are jax's formulas (``erfc``
of the tail, and an asymptotic series below ``-20`` (float64) or ``-10`` (float32), so
``log_ndtr(-40)`` is finite); ``logsumexp``, ``softmax`` and ``log_softmax`` are
``relaxjax.nn``'s.
"""

from __future__ import annotations

import math

import numpy as np

from relaxjax import dtypes
from relaxjax._nn import activations
from relaxjax._nn.functions import logsumexp
from relaxjax._numpy import arraylike
from relaxjax._numpy.arraylike import dtype_of
from relaxjax._numpy.core import (
    abs,
    add,
    divide,
    equal,
    greater,
    greater_equal,
    less,
    log,
    logical_and,
    logical_or,
    maximum,
    minimum,
    multiply,
    negative,
    not_equal,
    subtract,
    where,
)
from relaxjax._numpy.ufuncs import (
    i0,
    isnan,
    log1p,
    square,
)
from relaxjax.trace import emit

__all__ = [
    "entr",
    "erf",
    "erfc",
    "expit",
    "i0",
    "i0e",
    "kl_div",
    "log_ndtr",
    "log_softmax",
    "logit",
    "logsumexp",
    "ndtr",
    "rel_entr",
    "softmax",
    "xlog1py",
    "xlogy",
]


def _inexact(*args: object) -> list[object]:
    """The operands converted to ``to_inexact`` of their promoted dtype, weakly typed when
    the promotion is (jax's ``promote_args_inexact``)."""
    return arraylike.converted(*args, inexact=True)


def softmax(x, /, *, axis=None):
    """``exp(x) / sum(exp(x))`` over ``axis``, all axes by default
    (``jax.scipy.special.softmax``; ``relaxjax.nn.softmax`` defaults to the last)."""
    return activations.softmax(x, axis=axis)


def log_softmax(x, /, *, axis=None):
    """``x - logsumexp(x)`` over ``axis``, all axes by default
    (``jax.scipy.special.log_softmax``)."""
    return activations.log_softmax(x, axis=axis)


def erf(x):
    """The error function (``jax.scipy.special.erf``)."""
    return emit("erf", (x,))


def erfc(x):
    """``1 - erf(x)``, accurate in the tail (``jax.scipy.special.erfc``)."""
    return emit("erfc", (x,))


def i0e(x):
    """The exponentially scaled Bessel function ``exp(-|x|) * i0(x)``
    (``jax.scipy.special.i0e``)."""
    return emit("i0e", (x,))


def expit(x):
    """The logistic sigmoid ``1 / (1 + exp(-x))`` (``jax.scipy.special.expit``)."""
    (x,) = _inexact(x)
    return emit("sigmoid", (x,))


def logit(x):
    """``log(x / (1 - x))``, the inverse of ``expit`` (``jax.scipy.special.logit``)."""
    (x,) = _inexact(x)
    return log(divide(x, subtract(_typed(1, x), x)))


def _typed(value: float, like: object) -> np.ndarray:
    """``value`` as a constant of ``like``'s dtype: strongly typed, as jax's ``_lax_const``
    (so a weakly typed operand gives a strongly typed result, as in jax)."""
    return np.asarray(value, dtypes.to_numpy(dtype_of(like)))


def xlogy(x, y):
    """``x * log(y)``, 0 where ``x == 0`` unless ``y`` is NaN (``jax.scipy.special.xlogy``)."""
    x, y = _inexact(x, y)
    keep = logical_or(not_equal(x, 0.0), isnan(y))
    return where(keep, multiply(x, log(y)), 0.0)


def xlog1py(x, y):
    """``x * log1p(y)``, 0 where ``x == 0`` unless ``y`` is NaN
    (``jax.scipy.special.xlog1py``)."""
    x, y = _inexact(x, y)
    keep = logical_or(not_equal(x, 0.0), isnan(y))
    return where(keep, multiply(x, log1p(y)), 0.0)


def entr(x):
    """``-x * log(x)`` for ``x > 0``, 0 at 0, ``-inf`` below (``jax.scipy.special.entr``)."""
    (x,) = _inexact(x)
    return where(less(x, 0.0), -np.inf, negative(xlogy(x, x)))


def rel_entr(p, q):
    """``p * log(p / q)`` elementwise, with the conventions at 0 of
    ``jax.scipy.special.rel_entr`` (0 where ``p == 0 <= q``, inf elsewhere off the
    positive quadrant)."""
    p, q = _inexact(p, q)
    positive = logical_and(greater(p, 0.0), greater(q, 0.0))
    zero_p = logical_and(equal(p, 0.0), greater_equal(q, 0.0))
    safe_p, safe_q = where(positive, p, 1), where(positive, q, 1)
    value = subtract(xlogy(safe_p, safe_p), xlogy(safe_p, safe_q))
    zero = arraylike.astype(0.0, dtype_of(p))  # typed, as jax's: where(mask, 0.0, inf) is float64
    return where(positive, value, where(zero_p, zero, np.inf))


def kl_div(p, q):
    """``rel_entr(p, q) - p + q`` (``jax.scipy.special.kl_div``)."""
    p, q = _inexact(p, q)
    return add(subtract(rel_entr(p, q), p), q)


def _float32_or_64(name: str, x: object) -> str:
    dtype = dtype_of(x)
    if dtype not in ("float32", "float64"):
        raise TypeError(f"{name}: x.dtype={dtype} is not supported: float32 or float64 only")
    return dtype


def _ndtr(x: object, dtype: str) -> object:
    """jax's formula, with its constants typed (numpy scalars of ``dtype``)."""
    half, one, two = (np.asarray(v, dtype) for v in (0.5, 1.0, 2.0))
    half_sqrt_2 = half * np.sqrt(two)
    w = multiply(x, half_sqrt_2)
    z = abs(w)
    tail = where(greater(w, 0.0), subtract(two, erfc(z)), erfc(z))
    return multiply(half, where(less(z, half_sqrt_2), add(one, erf(w)), tail))


def ndtr(x):
    """The standard normal CDF (``jax.scipy.special.ndtr``); float32 or float64 only,
    as jax's."""
    return _ndtr(x, _float32_or_64("ndtr", x))


#: Below this, log_ndtr uses the asymptotic series; above the upper bound, log1p.
_LOG_NDTR_BOUNDS = {"float32": (-10.0, 5.0), "float64": (-20.0, 8.0)}


def log_ndtr(x, series_order=3):
    """The log of the standard normal CDF, accurate far into both tails
    (``jax.scipy.special.log_ndtr``); float32 or float64 only."""
    if isinstance(series_order, bool) or not isinstance(series_order, int):
        raise TypeError("series_order must be a Python integer.")
    if series_order < 0:
        raise ValueError("series_order must be non-negative.")
    if series_order > 30:
        raise ValueError("series_order must be <= 30.")
    dtype = _float32_or_64("log_ndtr", x)
    lower, upper = (np.asarray(b, dtype) for b in _LOG_NDTR_BOUNDS[dtype])
    above = greater(x, upper)
    cdf = _ndtr(where(above, negative(x), maximum(x, lower)), dtype)
    middle = where(greater(x, lower), log(cdf), _log_ndtr_lower(minimum(x, lower), series_order))
    return where(above, negative(cdf), middle)


def _log_ndtr_lower(x: object, series_order: int) -> object:
    """``log(ndtr(x))`` for very negative ``x``: ``-x**2/2 - log(-x) - log(2 pi)/2 +
    log(series)``."""
    x_2 = square(x)
    log_scale = subtract(
        subtract(multiply(-0.5, x_2), log(negative(x))), 0.5 * math.log(2.0 * math.pi)
    )
    return add(log_scale, log(_asymptotic_series(x, x_2, series_order)))


def _asymptotic_series(x: object, x_2: object, series_order: int) -> object:
    """``1 + sum_n (-1)**n (2n - 1)!! / x**(2n)``."""
    if series_order <= 0:
        return 1.0
    total, power = 1.0, x_2
    for n in range(1, series_order + 1):
        term = divide(float(math.prod(range(2 * n - 1, 0, -2))), power)
        total = subtract(total, term) if n % 2 else add(total, term)
        power = multiply(power, x_2)
    return total
