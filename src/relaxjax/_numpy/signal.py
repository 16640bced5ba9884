"""Differences, integrals, interpolation, covariances and windows with jax.numpy's names
and semantics: ``diff ediff1d gradient trapezoid interp cov corrcoef bartlett blackman
hamming hanning kaiser``.

All are compositions of slices, elementwise ops and reductions; lengths may be symbolic
(``diff`` of ``n`` samples has ``n - 1``, ``hamming(n)`` is ``(n,)``). ``interp`` finds
each point's interval by counting the sample points at or below it (a comparison per
pair of points: quadratic, where jax's binary search is ``n log m``).
"""

from __future__ import annotations

import numpy as np

from relaxjax import arith, dtypes
from relaxjax._numpy.arraylike import (
    array_operand,
    asserted_shape,
    astype,
    converted,
    dtype_of,
    joined_operands,
    ndim_of,
    reshaped,
    shape_of,
    static_index,
)
from relaxjax._numpy.core import abs as _abs
from relaxjax._numpy.core import arange, asarray, clip, cos, full, less_equal, sqrt, where
from relaxjax._numpy.index_tricks import diag
from relaxjax._numpy.manipulation import atleast_2d, moveaxis, ravel
from relaxjax._numpy.reduction import sum as _sum
from relaxjax._numpy.shape import broadcast_to, concatenate, expand_dims, getitem, squeeze
from relaxjax._numpy.ufuncs import i0
from relaxjax.ops.base import normalize_axis
from relaxjax.ops.index import TakeAttrs
from relaxjax.trace import emit

Dim = arith.Dim

__all__ = [
    "bartlett",
    "blackman",
    "corrcoef",
    "cov",
    "diff",
    "ediff1d",
    "gradient",
    "hamming",
    "hanning",
    "interp",
    "kaiser",
    "trapezoid",
]


def _inexact(*xs: object) -> list:
    """jax's ``promote_dtypes_inexact``."""
    return converted(*xs, inexact=True)


def _slice(x: object, axis: int, start: Dim | None = None, stop: Dim | None = None) -> object:
    return getitem(x, (slice(None),) * axis + (slice(start, stop),))


# --------------------------------------------------------------------------- differences


def diff(a, n=1, axis=-1, prepend=None, append=None):
    """``jnp.diff``: the ``n``-th discrete difference along ``axis`` (``!=`` for bool),
    after joining ``prepend`` and ``append`` (scalars broadcast to one slice)."""
    arr = array_operand(a)
    n = static_index(n, "'n' argument of jnp.diff")
    axis = static_index(axis, "'axis' argument of jnp.diff")
    if n == 0:
        return arr
    if n < 0:
        raise ValueError(f"order must be non-negative but got {n}")
    if ndim_of(arr) == 0:
        raise ValueError(f"diff requires input that is at least one dimensional; got {a}")
    axis = normalize_axis("diff", axis, ndim_of(arr))
    position = 0 if prepend is None else 1
    pieces = joined_operands([x for x in (prepend, arr, append) if x is not None])
    arr = pieces[position]  # scalars join weakly, as in jax
    pieces = [p if k == position else _edge(p, arr, axis) for k, p in enumerate(pieces)]
    if len(pieces) > 1:
        arr = concatenate(pieces, axis)
    for _ in range(n):
        length = shape_of(arr)[axis]
        later, earlier = _slice(arr, axis, 1), _slice(arr, axis, None, -1)
        target = shape_of(later)
        arr = (later != earlier) if dtype_of(arr) == "bool" else later - earlier
        arr = asserted_shape(arr, target[:axis] + (arith.max_(length - 1, 0),) + target[axis + 1 :])
    return arr


def _edge(value: object, arr: object, axis: int) -> object | None:
    if value is None:
        return None
    value = array_operand(value)
    if ndim_of(value) == 0:
        shape = list(shape_of(arr))
        shape[axis] = 1
        value = broadcast_to(value, tuple(shape))
    return value


def ediff1d(ary, to_end=None, to_begin=None):
    """``jnp.ediff1d``: differences of the flattened array, with ``to_begin`` and
    ``to_end`` (converted to its dtype) around them."""
    arr = ravel(array_operand(ary))
    length = shape_of(arr)[0]
    result = asserted_shape(
        _slice(arr, 0, 1) - _slice(arr, 0, None, -1), (arith.max_(length - 1, 0),)
    )
    dtype = dtype_of(result)
    if to_begin is not None:
        result = concatenate([ravel(astype(array_operand(to_begin), dtype)), result])
    if to_end is not None:
        result = concatenate([result, ravel(astype(array_operand(to_end), dtype))])
    return result


def gradient(f, *varargs, axis=None, edge_order=None):
    """``jnp.gradient``: central differences inside, one-sided ones at the edges, with a
    scalar spacing or the sample coordinates per axis (one array per axis of ``axis``,
    or a list of them)."""
    if edge_order is not None:
        raise NotImplementedError("The 'edge_order' argument to jnp.gradient is not supported.")
    a, *spacing = _inexact(f, *varargs)
    ndim = ndim_of(a, "gradient")
    if axis is None:
        axes = tuple(range(ndim))
    else:
        raw = axis if isinstance(axis, (tuple, list)) else (axis,)
        axes = tuple(
            normalize_axis("gradient", static_index(x, "gradient axis"), ndim) for x in raw
        )
    if not axes:
        return []
    if any(isinstance(shape_of(a)[x], int) and shape_of(a)[x] < 2 for x in axes):
        raise ValueError(
            "Shape of array too small to calculate a numerical gradient, at least 2 "
            "elements are required."
        )
    if len(spacing) == 0:
        steps = [1.0] * len(axes)
    elif len(spacing) == 1:
        steps = spacing * len(axes)
    elif len(spacing) == len(axes):
        steps = spacing
    else:
        raise TypeError(f"Invalid number of spacing arguments {len(spacing)} for axis={axis}")
    grads = [asserted_shape(_gradient_along(a, h, x), shape_of(a)) for x, h in zip(axes, steps)]
    return grads[0] if len(axes) == 1 else grads


def _gradient_along(a: object, h: object, axis: int) -> object:
    def sliced(start, stop):
        return _slice(a, axis, start, stop)

    upper = sliced(1, 2) - sliced(0, 1)
    lower = sliced(-1, None) - sliced(-2, -1)
    if ndim_of(h) == 0:
        inner = (sliced(2, None) - sliced(None, -2)) * 0.5 / h
        return concatenate([upper / h, inner, lower / h], axis=axis)
    if ndim_of(h) != 1:
        raise ValueError("Spacing arrays must be 1D arrays or scalars.")
    length = shape_of(a)[axis]
    if arith.compare(shape_of(h)[0], "==", length) is False:
        raise ValueError(
            "Spacing arrays must have the same length as the dimension along which the "
            "gradient is calculated."
        )
    h = reshaped(h, tuple(length if i == axis else 1 for i in range(ndim_of(a))))

    def spaced(start, stop):
        return _slice(h, axis, start, stop)

    dx1 = spaced(1, -1) - spaced(0, -2)
    dx2 = spaced(2, None) - spaced(1, -1)
    inner = (
        -dx2 / (dx1 * (dx1 + dx2)) * sliced(0, -2)
        + (dx2 - dx1) / (dx1 * dx2) * sliced(1, -1)
        + dx1 / (dx2 * (dx1 + dx2)) * sliced(2, None)
    )
    upper = upper / (spaced(1, 2) - spaced(0, 1))
    lower = lower / (spaced(-1, None) - spaced(-2, -1))
    return concatenate([upper, inner, lower], axis=axis)


def trapezoid(y, x=None, dx=1.0, axis=-1):
    """``jnp.trapezoid``: the integral of ``y`` along ``axis`` by the trapezoidal rule,
    with sample points ``x`` or a spacing ``dx``."""
    if x is None:
        (y,) = _inexact(y)
        step = array_operand(dx)
        if ndim_of(step) > 0:
            step = moveaxis(
                reshaped(step, (1,) * (ndim_of(y) - ndim_of(step)) + shape_of(step)), axis, -1
            )
    else:
        y, x = _inexact(y, x)
        step = diff(x) if ndim_of(x) == 1 else moveaxis(diff(x, axis=axis), axis, -1)
    y = moveaxis(y, axis, -1)
    if ndim_of(step) == 0 or shape_of(step)[-1] == 1:
        constant = step if ndim_of(step) == 0 else step[..., 0]
        return constant * (_sum(y, axis=-1) - 0.5 * (y[..., 0] + y[..., -1]))
    return 0.5 * _sum(step * (y[..., 1:] + y[..., :-1]), axis=-1)


# --------------------------------------------------------------------------- interpolation


def interp(x, xp, fp, left=None, right=None, period=None):
    """``jnp.interp``: piecewise-linear interpolation of the points ``(xp, fp)`` (``xp``
    increasing) at ``x``; ``left``/``right`` give the values outside (default the end
    values; ``"extrapolate"`` continues the end segments)."""
    x, xp, fp = array_operand(x), array_operand(xp), array_operand(fp)
    if shape_of(xp) != shape_of(fp) or ndim_of(xp) != 1:
        raise ValueError("xp and fp must be one-dimensional arrays of equal size")
    x, xp = _inexact(x, xp)
    (fp,) = _inexact(fp)
    extrapolate_left = _extrapolates("left", left)
    extrapolate_right = _extrapolates("right", right)
    if period is not None:
        raise NotImplementedError(
            "interp: period= needs the sample points sorted modulo the period, which is not "
            "supported"
        )
    count = shape_of(xp)[0]
    below = _sum(less_equal(expand_dims(xp, 0), expand_dims(ravel(x), 1)), axis=1)
    i = reshaped(clip(below, 1, arith.max_(count - 1, 1)), shape_of(x))
    previous = _take(fp, i - 1)
    df = _take(fp, i) - previous
    dx = _take(xp, i) - _take(xp, i - 1)
    delta = x - _take(xp, i - 1)
    epsilon = float(np.spacing(np.finfo(dtypes.to_numpy(dtype_of(xp))).eps))
    tiny = _abs(dx) <= epsilon
    f = where(tiny, previous, previous + (delta / where(tiny, 1, dx)) * df)
    if not extrapolate_left:
        f = where(x < xp[0], fp[0] if left is None else left, f)
    if not extrapolate_right:
        f = where(x > xp[-1], fp[-1] if right is None else right, f)
    return f


def _take(values: object, indices: object) -> object:
    return emit("take", (values, indices), TakeAttrs(0, "index"))


def _extrapolates(which: str, value: object) -> bool:
    if not isinstance(value, str):
        return False
    if value != "extrapolate":
        raise ValueError(
            f"the only valid string value of `{which}` is 'extrapolate', but got: {value!r}"
        )
    return True


# --------------------------------------------------------------------------- covariance


def cov(m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None, dtype=None):
    """``jnp.cov``: the covariance matrix of the variables in the rows (columns when not
    ``rowvar``) of ``m`` (and ``y``), with frequency and analytic weights. The result is
    squeezed of the axes provably of size 1 (jax squeezes a ``(1, 1)`` result; with a
    symbolic number of variables it stays 2-d)."""
    operands = _inexact(m) if y is None else _inexact(m, y)
    m = operands[0]
    if y is not None and ndim_of(operands[1]) > 2:
        raise ValueError("y has more than 2 dimensions")
    if ndim_of(m) > 2:
        raise ValueError("m has more than 2 dimensions")
    if dtype is not None and not dtypes.is_floating(dtypes.canonical(dtype)):
        raise ValueError(f"cov: dtype must be a subclass of float or complex; got dtype={dtype}")
    X = atleast_2d(m)  # noqa: N806 - numpy's name
    if not rowvar and ndim_of(m) != 1:
        X = X.T  # noqa: N806
    rows = shape_of(X)[0]
    if isinstance(rows, int) and rows == 0:
        return asarray(np.zeros((0, 0), dtypes.to_numpy(dtype_of(X))))
    if y is not None:
        other = atleast_2d(operands[1])
        if not rowvar and shape_of(other)[0] != 1:
            other = other.T
        X = concatenate([X, other], axis=0)  # noqa: N806
    samples = shape_of(X)[1]
    if isinstance(samples, int) and samples == 0:
        count = shape_of(X)[0]
        return full(() if count == 1 else (count, count), np.nan, dtype_of(X))
    ddof = (1 if not bias else 0) if ddof is None else ddof
    weights = _weights(X, fweights, aweights)
    if dtype is not None:
        X = astype(X, dtypes.canonical(dtype))  # noqa: N806
        weights = None if weights is None else astype(weights, dtypes.canonical(dtype))
    if weights is None:
        average = _sum(X, axis=1) / samples
        factor = samples - ddof
        weighted = X - expand_dims(average, 1)
        product = weighted @ weighted.T
    else:
        total = _sum(weights)
        average = _sum(X * weights, axis=1) / total
        if ddof == 0:
            factor = total
        elif aweights is None:
            factor = total - ddof
        else:
            factor = total - ddof * _sum(weights * _abs(array_operand(aweights))) / total
        centered = X - expand_dims(average, 1)
        product = centered @ (centered * weights).T
    result = product / factor
    ones = tuple(a for a, d in enumerate(shape_of(result)) if isinstance(d, int) and d == 1)
    return squeeze(result, ones) if ones else result


def _weights(X: object, fweights: object, aweights: object) -> object | None:  # noqa: N803
    samples = shape_of(X)[1]
    weights = None
    for name, value in (("fweights", fweights), ("aweights", aweights)):
        if value is None:
            continue
        value = array_operand(value)
        if ndim_of(value) > 1:
            raise RuntimeError(f"cannot handle multidimensional {name}")
        if arith.compare(shape_of(value)[0], "==", samples) is False:
            raise RuntimeError(f"incompatible numbers of samples and {name}")
        if name == "fweights" and not dtypes.is_integer(dtype_of(value)):
            raise TypeError("fweights must be integer.")
        value = _abs(value)
        weights = value if weights is None else weights * value
    return None if weights is None else astype(weights, dtype_of(X))


def corrcoef(x, y=None, rowvar=True, dtype=None):
    """``jnp.corrcoef``: the correlation coefficients (``cov`` normalised by the standard
    deviations, clipped to ``[-1, 1]``)."""
    if dtype is not None and not dtypes.is_floating(dtypes.canonical(dtype)):
        raise ValueError(
            f"corrcoef: dtype must be a subclass of float or complex; got dtype={dtype}"
        )
    c = cov(x, y, rowvar, dtype=dtype)
    if ndim_of(c) == 0:
        return c / c
    stddev = sqrt(diag(c))
    c = c / expand_dims(stddev, 1) / expand_dims(stddev, 0)
    return clip(c, -1, 1)


# --------------------------------------------------------------------------- windows


def _window(name: str, M: object, formula) -> object:  # noqa: N803
    """A window of ``M`` points (``M`` an int or a symbolic dim): ``formula(n, M - 1)``
    on float64 positions ``n``, or ones when ``M <= 1``."""
    if isinstance(M, arith.Expr):
        size = M
    else:
        size = static_index(M, f"M argument of jnp.{name}")
        if size <= 1:
            return full((max(size, 0),), 1.0, "float64")
    n = astype(arange(size), "float64")
    values = formula(n, arith.max_(size - 1, 1))
    if isinstance(size, int):
        return values
    return where(less_equal(size, 1), 1.0, values)


def bartlett(M):  # noqa: N803 - jax's name
    """``jnp.bartlett``: the triangular window of ``M`` points (float64)."""
    return _window("bartlett", M, lambda n, d: 1 - _abs(2 * n + 1 - (d + 1)) / d)


def blackman(M):  # noqa: N803
    """``jnp.blackman``: the Blackman window of ``M`` points."""
    return _window(
        "blackman",
        M,
        lambda n, d: 0.42 - 0.5 * cos(2 * np.pi * n / d) + 0.08 * cos(4 * np.pi * n / d),
    )


def hamming(M):  # noqa: N803
    """``jnp.hamming``: the Hamming window of ``M`` points."""
    return _window("hamming", M, lambda n, d: 0.54 - 0.46 * cos(2 * np.pi * n / d))


def hanning(M):  # noqa: N803
    """``jnp.hanning``: the Hann window of ``M`` points."""
    return _window("hanning", M, lambda n, d: 0.5 * (1 - cos(2 * np.pi * n / d)))


def kaiser(M, beta):  # noqa: N803
    """``jnp.kaiser``: the Kaiser window of ``M`` points and shape ``beta``. A static
    ``M`` and ``beta`` give numpy's values as a constant; a symbolic ``M`` or a traced
    ``beta`` compute jax's ``i0(beta * sqrt(1 - ((n - a) / a) ** 2)) / i0(beta)``,
    ``a = (M - 1) / 2`` (ones when ``M <= 1``)."""
    if not isinstance(M, arith.Expr) and isinstance(beta, (int, float, np.number)):
        size = static_index(M, "M argument of jnp.kaiser")
        return asarray(np.kaiser(size, float(beta)).astype(np.float64))
    beta = array_operand(beta)

    def formula(n: object, d: object) -> object:
        return i0(beta * sqrt(1 - ((2 * n - d) / d) ** 2)) / i0(beta)

    return _window("kaiser", M, formula)
