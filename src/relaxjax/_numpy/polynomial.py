"""Polynomials and 1-d convolutions with jax.numpy's names and semantics: ``convolve
correlate`` (one op), ``polyval polyadd polysub polymul polyder polyint polydiv poly
vander polyfit`` (``polyfit`` is ``lstsq`` of a scaled ``vander`` matrix, a LAPACK call).

Coefficients are highest degree first, as numpy's. Lengths may be symbolic: ``polyval``
of a polynomial of symbolic length sums ``p[k] * x ** (n - 1 - k)`` (a static length is
Horner's rule, unrolled, as jax's scan computes it), ``polyadd`` pads the shorter operand
with leading zeros to ``max(n, m)`` coefficients. ``polydiv`` and ``poly`` loop over the
coefficients, so they need static lengths, as in jax.
"""

from __future__ import annotations

import numpy as np

from relaxjax import arith, dtypes
from relaxjax._numpy.arraylike import (
    array_operand,
    astype,
    converted,
    dtype_of,
    ndim_of,
    reshaped,
    shape_of,
    static_index,
)
from relaxjax._numpy.core import arange, asarray, maximum, multiply, ones, power, sqrt, zeros
from relaxjax._numpy.entries import trim_mask, trim_zeros
from relaxjax._numpy.factorizations import inv, lstsq
from relaxjax._numpy.manipulation import atleast_1d, broadcast_shapes, flip
from relaxjax._numpy.mask import take_masked
from relaxjax._numpy.reduction import prod as _prod
from relaxjax._numpy.reduction import sum as _sum
from relaxjax._numpy.shape import broadcast_to, concatenate, expand_dims, stack
from relaxjax.errors import TraceError
from relaxjax.ops.base import to_inexact
from relaxjax.ops.correlate import MODES, CorrelateAttrs
from relaxjax.trace import emit

Dim = arith.Dim

__all__ = [
    "convolve",
    "correlate",
    "poly",
    "polyadd",
    "polyder",
    "polydiv",
    "polyfit",
    "polyint",
    "polymul",
    "polysub",
    "polyval",
    "vander",
]

#: The longest static polynomial whose ``polyval`` is unrolled Horner (longer ones sum powers).
HORNER_UNROLL_LIMIT = 64


def _inexact(*xs: object) -> list:
    """jax's ``promote_dtypes_inexact``."""
    return converted(*xs, inexact=True)


def _promoted(*xs: object) -> list:
    """jax's ``promote_dtypes``."""
    return converted(*xs)


def _length(x: object) -> Dim:
    return shape_of(x)[0]


def _static_length(name: str, x: object) -> int:
    length = _length(x)
    if not isinstance(length, int):
        raise TraceError(
            f"{name} loops over the coefficients: their number must be static, got {length}"
        )
    return length


# --------------------------------------------------------------------------- convolution


def _conv(name, a, v, mode, convolve_, preferred_element_type):
    a, v = array_operand(a), array_operand(v)
    if ndim_of(a) != 1 or ndim_of(v) != 1:
        raise ValueError(f"{name}() only support 1-dimensional inputs.")
    if mode not in MODES:
        raise ValueError("mode must be one of ['full', 'same', 'valid']")
    for x in (a, v):
        if isinstance(_length(x), int) and _length(x) == 0:
            raise ValueError(
                f"{name}: inputs cannot be empty, got shapes {shape_of(a)} and {shape_of(v)}."
            )
    if preferred_element_type is not None:
        dtype = dtypes.canonical(preferred_element_type)
        result = emit(
            "correlate", (astype(a, dtype), astype(v, dtype)), CorrelateAttrs(mode, convolve_)
        )
        return astype(result, dtype)
    return emit("correlate", (a, v), CorrelateAttrs(mode, convolve_))


def convolve(a, v, mode="full", *, precision=None, preferred_element_type=None):
    """``jnp.convolve``: the discrete convolution of two 1-d arrays (``full``, ``same``
    or ``valid``), in their promoted inexact dtype."""
    del precision
    return _conv("convolve", a, v, mode, True, preferred_element_type)


def correlate(a, v, mode="valid", *, precision=None, preferred_element_type=None):
    """``jnp.correlate``: the cross-correlation of two 1-d arrays (``valid`` by default)."""
    del precision
    return _conv("correlate", a, v, mode, False, preferred_element_type)


# --------------------------------------------------------------------------- evaluation


def polyval(p, x, *, unroll=16):
    """``jnp.polyval``: ``p[0] * x ** (n - 1) + ... + p[n - 1]`` (``p`` of shape ``(n,
    ...)`` broadcasts its other axes against ``x``). ``unroll`` (jax's scan hint) is
    accepted and has no effect on the result."""
    del unroll
    p, x = _promoted(p, x)
    if ndim_of(p) == 0:
        raise ValueError("polyval: p must be at least 1-dimensional")
    rest = shape_of(p)[1:]
    n = _length(p)
    zero = broadcast_to(astype(0, dtype_of(x)), broadcast_shapes(rest, shape_of(x)))
    if isinstance(n, int) and n <= HORNER_UNROLL_LIMIT:
        y = zero
        for k in range(n):
            y = y * x + p[k]
        return y
    rank = max(len(rest), ndim_of(x))
    coefficients = reshaped(p, (n,) + (1,) * (rank - len(rest)) + rest)
    exponents = reshaped(n - 1 - arange(n), (n,) + (1,) * rank)
    if dtypes.is_integer(dtype_of(x)):
        exponents = astype(exponents, dtype_of(x))
    terms = coefficients * power(expand_dims(x, 0), exponents)
    return _sum(terms, axis=0, dtype=dtype_of(zero)) + zero


def vander(x, N=None, increasing=False):  # noqa: N803 - jax's name
    """``jnp.vander``: the columns ``x ** (N - 1), ..., x ** 0`` (increasing powers when
    ``increasing``); ``N`` defaults to ``len(x)`` and may be symbolic."""
    x = array_operand(x)
    if ndim_of(x) != 1:
        raise ValueError("x must be a one-dimensional array")
    n = _length(x) if N is None else (N if isinstance(N, arith.Expr) else static_index(N, "N"))
    if isinstance(n, int) and n < 0:
        raise ValueError("N must be nonnegative")
    exponents = arange(n)
    if not increasing:
        exponents = flip(exponents)
    return power(expand_dims(x, 1), astype(reshaped(exponents, (1, n)), dtype_of(x)))


# --------------------------------------------------------------------------- arithmetic


def _front_padded(a: object, length: Dim) -> object:
    """``a`` with leading zero coefficients up to ``length``."""
    n = _length(a)
    if n == length:
        return a
    return concatenate([zeros((length - n,) + shape_of(a)[1:], dtype_of(a)), a])


def polyadd(a1, a2):
    """``jnp.polyadd``: the sum of two polynomials (``max(n, m)`` coefficients)."""
    a1, a2 = _promoted(a1, a2)
    length = arith.max_(_length(a1), _length(a2))
    return _front_padded(a1, length) + _front_padded(a2, length)


def polysub(a1, a2):
    """``jnp.polysub``: the difference of two polynomials."""
    a1, a2 = _promoted(a1, a2)
    return polyadd(a1, -a2)


def polymul(a1, a2, *, trim_leading_zeros=False):
    """``jnp.polymul``: the product of two polynomials (their full convolution), in the
    inexact dtype; ``trim_leading_zeros`` drops leading zeros first (a data-dependent
    length)."""
    a1, a2 = _inexact(a1, a2)
    if trim_leading_zeros and not (_length(a1) == 1 and _length(a2) == 1):
        a1, a2 = trim_zeros(a1, trim="f"), trim_zeros(a2, trim="f")
    if _length(a1) == 0:
        a1 = zeros((1,), dtype_of(a2))
    if _length(a2) == 0:
        a2 = zeros((1,), dtype_of(a1))
    return convolve(a1, a2, mode="full")


def polyder(p, m=1):
    """``jnp.polyder``: the ``m``-th derivative (``n - m`` coefficients)."""
    (p,) = _inexact(p)
    m = static_index(m, "'m' argument of jnp.polyder")
    if m < 0:
        raise ValueError("Order of derivative must be positive")
    if m == 0:
        return p
    n = _length(p)
    powers = arange(m, n)  # the degrees of the kept coefficients, lowest first
    coefficient = ones(shape_of(powers), dtype_of(p))
    for k in range(m):
        coefficient = coefficient * astype(powers - k, dtype_of(p))
    return p[:-m] * flip(coefficient)


def polyint(p, m=1, k=None):
    """``jnp.polyint``: the ``m``-th antiderivative, integration constants ``k`` (a
    scalar, or one per integration)."""
    m = static_index(m, "'m' argument of jnp.polyint")
    p, k = _inexact(p, 0 if k is None else k)
    if m < 0:
        raise ValueError("Order of integral must be positive (see polyder)")
    k = atleast_1d(k)
    if _length(k) == 1:
        k = broadcast_to(reshaped(k, (1,)), (m,))
    if shape_of(k) != (m,):
        raise ValueError("k must be a scalar or a rank-1 array of length 1 or m.")
    if m == 0:
        return p
    n = _length(p)
    grid = reshaped(arange(n + m), (1, n + m)) - reshaped(arange(m), (m, 1))
    coefficient = flip(_prod(maximum(grid, 1), axis=0))
    return concatenate([p, k]) / astype(coefficient, dtype_of(p))


def polydiv(u, v, *, trim_leading_zeros=False):
    """``jnp.polydiv``: quotient and remainder of polynomial division (static lengths;
    ``trim_leading_zeros`` drops leading remainder coefficients below ``sqrt(eps)``, a
    data-dependent length)."""
    u, v = _inexact(u, v)
    m = _static_length("polydiv", u) - 1
    n = _static_length("polydiv", v) - 1
    scale = 1.0 / v[0]
    quotient = []
    for k in range(m - n + 1):
        d = scale * u[k]
        quotient.append(d)
        updated = u[k : k + n + 1] - d * v
        u = concatenate([u[:k], updated, u[k + n + 1 :]])
    q = stack(quotient) if quotient else zeros((max(m - n + 1, 1),), dtype_of(u))
    if trim_leading_zeros:
        tolerance = float(np.sqrt(np.finfo(dtypes.to_numpy(dtype_of(u))).eps))
        u = take_masked(u, trim_mask(abs(u) > tolerance, 0, front=True, back=False), 0)
    return q, u


def poly(seq_of_zeros):
    """``jnp.poly``: the coefficients of the monic polynomial with the given roots (a
    static number of them; the characteristic polynomial of a matrix needs eigenvalues,
    which relaxjax does not compute)."""
    (roots,) = _inexact(seq_of_zeros)
    roots = atleast_1d(roots)
    shape = shape_of(roots)
    if len(shape) == 2 and shape[0] == shape[1] and shape[0] != 0:
        raise NotImplementedError(
            "poly of a square matrix needs its eigenvalues (eigvals), which relaxjax does "
            "not compute"
        )
    if len(shape) != 1:
        raise ValueError("input must be 1d or non-empty square 2d array.")
    count = _static_length("poly", roots)
    dtype = dtype_of(roots)
    if count == 0:
        return asarray(np.ones((), dtypes.to_numpy(dtype)))
    coefficients = ones((1,), dtype)
    one = reshaped(astype(1, dtype), (1,))
    for k in range(count):
        factor = concatenate([one, reshaped(-roots[k], (1,))])
        coefficients = convolve(coefficients, factor, mode="full")
    return coefficients


def polyfit(x, y, deg, rcond=None, full=False, w=None, cov=False):
    """``jnp.polyfit``: the least-squares polynomial of degree ``deg`` through the points
    ``(x, y)`` (``y`` 1-d, or 2-d for several fits), optionally weighted by ``w``; with
    ``full`` also the residuals, rank, singular values and ``rcond``, with ``cov`` the
    covariance of the coefficients. ``lstsq`` of the column-scaled ``vander`` matrix."""
    x, y = array_operand(x), array_operand(y)
    deg = static_index(deg, "deg")
    order = deg + 1
    if deg < 0:
        raise ValueError("expected deg >= 0")
    if ndim_of(x) != 1:
        raise TypeError("expected 1D vector for x")
    length = _length(x)
    if isinstance(length, int) and length == 0:
        raise TypeError("expected non-empty vector for x")
    if not 1 <= ndim_of(y) <= 2:
        raise TypeError("expected 1D or 2D array for y")
    if arith.compare(length, "==", _length(y)) is False:
        raise TypeError("expected x and y to have same length")
    eps = float(np.finfo(dtypes.to_numpy(to_inexact(dtype_of(x)))).eps)
    if rcond is None:
        rcond = multiply(eps, length)  # a weak float64, as jax's Python float
    lhs, rhs = vander(x, order), y
    if w is not None:
        (w,) = _inexact(w)
        if ndim_of(w) != 1:
            raise TypeError("expected a 1-d array for weights")
        if arith.compare(_length(w), "==", _length(y)) is False:
            raise TypeError("expected w and y to have the same length")
        lhs = lhs * expand_dims(w, 1)
        rhs = rhs * (expand_dims(w, 1) if ndim_of(rhs) == 2 else w)
    scale = sqrt(_sum(lhs * lhs, axis=0))
    lhs = lhs / expand_dims(scale, 0)
    c, resids, rank, singular = lstsq(lhs, rhs, rcond)
    c = c / (expand_dims(scale, 1) if ndim_of(c) > 1 else scale)
    if full:
        return c, resids, rank, singular, multiply(rcond, 1.0)  # weak, as jax's asarray
    if not cov:
        return c
    base = inv(lhs.T @ lhs) / (expand_dims(scale, 1) * expand_dims(scale, 0))
    if cov == "unscaled":
        factor = astype(1.0, dtype_of(base))
    else:
        if isinstance(length, int) and length <= order:
            raise ValueError(
                "the number of data points must exceed order to scale the covariance matrix"
            )
        factor = resids / (length - order)
    factor = atleast_1d(factor)
    if ndim_of(y) == 1:
        return c, base * expand_dims(factor, 0)
    return c, expand_dims(base, 2) * reshaped(factor, (1, 1, _length(factor)))
