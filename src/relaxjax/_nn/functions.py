"""The rest of ``jax.nn``'s activations and functions in ``relaxjax.nn``: ``celu elu glu
hard_sigmoid hard_silu hard_swish hard_tanh identity leaky_relu log1mexp log_sigmoid
logmeanexp logsumexp mish relu6 selu soft_sign softplus sparse_plus sparse_sigmoid
squareplus standardize tanh``.

Each is jax's own formula over ``relaxjax.numpy`` functions, so values and dtypes are
jax's; the elementwise chains fuse into one kernel. The numerically delicate pieces are
ops of their own: ``softplus`` is ``logaddexp(x, 0)`` (``max(x, 0) + log1p(exp(-|x|))``:
no overflow for large ``x``, and ``log_sigmoid = -softplus(-x)`` stays accurate for very
negative ``x``), ``log1mexp`` uses ``expm1``/``log1p``, and ``logsumexp`` is one
reduction kernel (composed with ``where``, ``b`` or ``return_sign``, as jax does).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from relaxjax._nn.activations import sigmoid
from relaxjax._numpy import arraylike
from relaxjax._numpy.arraylike import dtype_of, shape_of
from relaxjax._numpy.core import (
    abs,
    add,
    asarray,
    clip,
    divide,
    exp,
    greater,
    greater_equal,
    less,
    less_equal,
    log,
    maximum,
    minimum,
    multiply,
    negative,
    rsqrt,
    sqrt,
    subtract,
    where,
)
from relaxjax._numpy.core import where as _select
from relaxjax._numpy.reduction import max as _max
from relaxjax._numpy.reduction import mean as _mean
from relaxjax._numpy.reduction import sum as _sum
from relaxjax._numpy.shape import broadcast_to, split, squeeze
from relaxjax._numpy.ufuncs import expm1, isfinite, log1p, logaddexp
from relaxjax._numpy.ufuncs import sign as _sign
from relaxjax._numpy.ufuncs import square as _square
from relaxjax.ops.axes import reduced_axes
from relaxjax.ops.logsumexp import LogSumExpAttrs
from relaxjax.trace import emit

__all__ = [
    "celu",
    "elu",
    "glu",
    "hard_sigmoid",
    "hard_silu",
    "hard_swish",
    "hard_tanh",
    "identity",
    "leaky_relu",
    "log1mexp",
    "log_sigmoid",
    "logmeanexp",
    "logsumexp",
    "mish",
    "relu6",
    "selu",
    "soft_sign",
    "softplus",
    "sparse_plus",
    "sparse_sigmoid",
    "squareplus",
    "standardize",
    "tanh",
]


def identity(x):
    """``x`` itself, as an array (``jax.nn.identity``)."""
    return asarray(x)


def relu6(x):
    """``min(max(x, 0), 6)`` (``jax.nn.relu6``)."""
    return minimum(maximum(x, 0), 6.0)


def hard_sigmoid(x):
    """``relu6(x + 3) / 6`` (``jax.nn.hard_sigmoid``)."""
    return divide(relu6(add(x, 3.0)), 6.0)


def hard_silu(x):
    """``x * hard_sigmoid(x)`` (``jax.nn.hard_silu``, also ``hard_swish``)."""
    return multiply(x, hard_sigmoid(x))


hard_swish = hard_silu


def hard_tanh(x):
    """``x`` clipped to ``[-1, 1]`` (``jax.nn.hard_tanh``)."""
    return where(greater(x, 1), 1, where(less(x, -1), -1, x))


def leaky_relu(x, negative_slope=0.01):
    """``x`` for ``x >= 0``, ``negative_slope * x`` below (``jax.nn.leaky_relu``)."""
    return where(greater_equal(x, 0), x, multiply(negative_slope, x))


def elu(x, alpha=1.0):
    """``x`` for ``x > 0``, ``alpha * (exp(x) - 1)`` below (``jax.nn.elu``)."""
    positive = greater(x, 0)
    return where(positive, x, multiply(alpha, expm1(where(positive, 0.0, x))))


def celu(x, alpha=1.0):
    """``max(x, 0) + alpha * expm1(min(x, 0) / alpha)`` (``jax.nn.celu``)."""
    return add(maximum(x, 0.0), multiply(alpha, expm1(divide(minimum(x, 0.0), alpha))))


def selu(x):
    """``scale * elu(x, alpha)`` with the self-normalising constants (``jax.nn.selu``)."""
    alpha, scale = 1.6732632423543772, 1.0507009873554805
    return multiply(scale, elu(x, alpha))


def soft_sign(x):
    """``x / (|x| + 1)`` (``jax.nn.soft_sign``)."""
    return divide(x, add(abs(x), 1))


def softplus(x):
    """``log(1 + exp(x))`` as ``logaddexp(x, 0)``: exact for large ``x`` (``jax.nn.softplus``)."""
    return logaddexp(x, 0)


def log_sigmoid(x):
    """``log(sigmoid(x)) = -softplus(-x)``, accurate for very negative ``x``
    (``jax.nn.log_sigmoid``)."""
    return negative(softplus(negative(x)))


def mish(x):
    """``x * tanh(softplus(x))`` (``jax.nn.mish``)."""
    return multiply(x, tanh(softplus(x)))


def squareplus(x, b=4):
    """``(x + sqrt(x ** 2 + b)) / 2`` (``jax.nn.squareplus``)."""
    return divide(add(x, sqrt(add(_square(x), b))), 2)


def sparse_plus(x):
    """0 for ``x <= -1``, ``x`` for ``x >= 1``, ``(x + 1) ** 2 / 4`` between
    (``jax.nn.sparse_plus``)."""
    middle = divide(emit("power", (add(x, 1.0), 2)), 4)
    return where(less_equal(x, -1.0), 0.0, where(greater_equal(x, 1.0), x, middle))


def sparse_sigmoid(x):
    """``clip(x + 1, 0, 2) / 2`` (``jax.nn.sparse_sigmoid``)."""
    return multiply(0.5, clip(add(x, 1.0), 0.0, 2.0))


def log1mexp(x):
    """``log(1 - exp(-x))`` for ``x > 0``, accurate near 0 and for large ``x``
    (``jax.nn.log1mexp``)."""
    small = less(x, math.log(2.0))
    return where(small, log(negative(expm1(negative(x)))), log1p(negative(exp(negative(x)))))


def glu(x, axis=-1):
    """The gated linear unit (``jax.nn.glu``): the two halves ``a, b`` of ``x`` along
    ``axis``, ``a * sigmoid(b)``; the axis must have an even size (checked at run time
    when it is symbolic)."""
    size = shape_of(x)[axis]
    if isinstance(size, int) and size % 2:
        raise ValueError(f"glu: axis size must be divisible by 2, got {size}")
    first, second = split(x, 2, axis)
    return multiply(first, sigmoid(second))


def tanh(x):
    """The hyperbolic tangent (``jax.nn.tanh``, ``jnp.tanh``)."""
    return emit("tanh", (x,))


# --------------------------------------------------------------------------- reductions


def _axes(x: object, axis: object) -> tuple[int, ...]:
    """``axis`` (None, an int or a tuple) as sorted non-negative axes of ``x``."""
    if axis is None:
        given = None
    elif isinstance(axis, Sequence):
        given = tuple(int(a) for a in axis)
    else:
        given = (int(axis),)
    return reduced_axes("logsumexp", given, len(shape_of(x)))


def logsumexp(a, axis=None, b=None, keepdims=False, return_sign=False, where=None):
    """``log(sum(b * exp(a)))`` over ``axis`` without overflow (``jax.nn.logsumexp``,
    ``jax.scipy.special.logsumexp``): ``b`` scales the terms, ``where`` selects them,
    ``return_sign`` also returns the sign of the sum (whose log is then of ``|sum|``).
    A negative sum without ``return_sign`` gives NaN."""
    axes = _axes(a, axis)
    if b is None and where is None and not return_sign:
        return emit("logsumexp", (a,), LogSumExpAttrs(axes, bool(keepdims)))
    if where is not None:
        a = _select(where, a, 0)
    if b is not None:
        a, b = arraylike.converted(a, b, inexact=True)
        a = _select(emit("not_equal", (b, 0)), a, -np.inf)
    else:
        (a,) = arraylike.converted(a, inexact=True)
    peak = _max(a, axes, keepdims=True, where=where, initial=-np.inf)
    peak = _select(isfinite(peak), peak, 0)
    terms = exp(subtract(a, peak))
    if b is not None:
        terms = multiply(terms, b)
    total = _sum(terms, axes, keepdims=keepdims, where=where)
    sign = _sign(total)
    if not keepdims:
        peak = squeeze(peak, axes)
    result = add(log(abs(total)), peak)
    if return_sign:
        return result, sign
    if b is not None:
        result = _select(less(sign, 0), np.nan, result)
    return result


def logmeanexp(x, axis=None, where=None, keepdims=False):
    """``log(mean(exp(x)))`` over ``axis`` without overflow (``jax.nn.logmeanexp``):
    ``logsumexp`` minus the log of the number of (selected) elements."""
    total = logsumexp(x, axis=axis, keepdims=keepdims, where=where)
    dtype = dtype_of(total)
    if where is None:
        count = 1
        for a in _axes(x, axis):
            count = count * shape_of(x)[a]
        count = arraylike.astype(count, dtype)
    else:
        mask = broadcast_to(where, shape_of(x))
        count = _sum(mask, _axes(x, axis), dtype=dtype, keepdims=keepdims)
    return subtract(total, log(count))


def standardize(
    x, axis=-1, mean=None, variance=None, epsilon=1e-5, where=None, *, algorithm="fast"
):
    """``(x - mean) / sqrt(variance + epsilon)`` over ``axis`` (``jax.nn.standardize``);
    ``mean`` and ``variance`` default to those of ``x`` (over the ``where`` selection),
    the variance as ``E[x**2] - mean**2`` clipped at 0 (``algorithm='fast'``) or as
    ``E[(x - mean)**2]`` (``'stable'``)."""
    axes = _axes(x, axis)
    average = _mean
    if mean is None:
        mean = average(x, axes, keepdims=True, where=where)
    if variance is None:
        if algorithm == "stable":
            variance = average(_square(subtract(x, mean)), axes, keepdims=True, where=where)
        elif algorithm == "fast":
            variance = subtract(
                average(_square(x), axes, keepdims=True, where=where), _square(mean)
            )
            variance = clip(variance, 0)
        else:
            raise ValueError(f"Unknown algorithm '{algorithm}'. Expected 'fast' or 'stable'.")
    return multiply(subtract(x, mean), rsqrt(add(variance, epsilon)))
