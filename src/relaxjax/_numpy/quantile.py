"""Order statistics of ``relaxjax.numpy``: ``quantile``, ``nanquantile``, ``percentile``,
``nanpercentile``, ``median``, ``nanmedian``.

jax.numpy's algorithm, as compositions: the array is sorted along the reduced axis (a
tuple of axes is moved last and merged; ``axis=None`` flattens) by the ``sort`` op, and
the quantile ``q`` of ``n`` sorted values sits at ``q * (n - 1)``, between positions
``floor`` and ``ceil`` of it. ``method`` picks the value: ``linear`` interpolates (in
``q``'s dtype), ``lower``/``higher`` take one side, ``midpoint`` averages both,
``nearest`` the closer (the lower on a tie), and ``inverted_cdf`` the first value whose
cumulative weight reaches ``q`` times the total (the only method taking ``weights``).

- ``quantile``: a row holding a NaN gives NaN; the positions are the same for every row,
  so the values are a ``take`` along the axis;
- ``nanquantile``: NaNs are ignored: each row counts its numbers (NaNs sort last), so
  each row has its own positions, read by a one-hot ``max`` along the axis (linear in
  the row length).

Results have ``q``'s shape in front (0-d or 1-d ``q``), then the reduced shape (with
the reduced axes kept as 1 under ``keepdims``), in the input's inexact dtype.

>>> import relaxjax as relax, relaxjax.numpy as rnp
>>> relax.eval_shape(lambda x: rnp.median(x, axis=-1), relax.Tensor(("n", 5), "int32"))
Tensor((n,), "float32")
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from relaxjax import arith, dtypes
from relaxjax._numpy import core as _core
from relaxjax._numpy import reduction as _reduction
from relaxjax._numpy.operands import array_of
from relaxjax._numpy.reduction import dtype_of, shape_of
from relaxjax._numpy.shape import (
    _int,
    _rank,
    broadcast_to,
    cumsum,
    expand_dims,
    getitem,
    reshape,
    take,
    transpose,
)
from relaxjax._numpy.statistics import _isnan
from relaxjax._numpy.statistics import any as any_
from relaxjax.ops.axes import normalize_axes
from relaxjax.ops.base import normalize_axis, to_inexact
from relaxjax.ops.sort import SortKeysAttrs
from relaxjax.trace import emit

__all__ = [
    "median",
    "nanmedian",
    "nanpercentile",
    "nanquantile",
    "percentile",
    "quantile",
]

Dim = arith.Dim

METHODS = ("linear", "lower", "higher", "midpoint", "nearest", "inverted_cdf")


# --------------------------------------------------------------------------- helpers


def _floor(x: object, dtype: str) -> object:
    """``floor(x)`` of float ``x`` (exact below ``2**63``)."""
    whole = _core.astype(_core.astype(x, "int64"), dtype)
    return emit("subtract", (whole, _core.astype(emit("greater", (whole, x)), dtype)))


def _ceil(x: object, dtype: str) -> object:
    """``ceil(x)`` of float ``x`` (exact below ``2**63``)."""
    whole = _core.astype(_core.astype(x, "int64"), dtype)
    return emit("add", (whole, _core.astype(emit("less", (whole, x)), dtype)))


def _dim_value(dim: Dim, dtype: str) -> object:
    """The dim ``dim`` as a 0-d value of ``dtype``."""
    if isinstance(dim, int):
        return np.asarray(dim, dtypes.to_numpy(dtype))
    return _core.astype(dim, dtype)


def _prepare(op_name: str, a, axis, weights, keepdims: bool):
    """``a`` (and ``weights``) with the reduced axes as one axis: ``(a, weights, axis,
    keepdim)``, ``keepdim`` the result shape without ``q``'s axis under ``keepdims`` when
    a reshape is needed at the end (None otherwise)."""
    ndim = _rank(a)
    if ndim is None:
        raise TypeError(f"{op_name} needs the rank of its argument")
    shape = shape_of(a)
    if weights is not None and not _same_shape(shape_of(weights), shape):
        weights = _weights_like(weights, shape, axis, ndim)
    if axis is None:
        keepdim = (1,) * ndim if keepdims else None
        a = reshape(a, (-1,))
        weights = None if weights is None else reshape(weights, (-1,))
        return a, weights, 0, keepdim
    if isinstance(axis, Sequence) and not isinstance(axis, str):
        axes = tuple(_int(x, f"{op_name} axis") for x in axis)
        try:
            axes = normalize_axes(op_name, axes, ndim)
        except ValueError as error:
            if "duplicate" in str(error):
                raise ValueError("repeated axis") from None
            raise
        keepdim = tuple(1 if i in axes else d for i, d in enumerate(shape))
        kept = tuple(i for i in range(ndim) if i not in axes)
        merged = tuple(shape[i] for i in kept) + (math.prod(shape[i] for i in axes),)
        a = reshape(transpose(a, kept + axes), merged)
        if weights is not None:
            weights = reshape(transpose(weights, kept + axes), merged)
        return a, weights, len(kept), keepdim if keepdims else None
    return a, weights, normalize_axis(op_name, _int(axis, f"{op_name} axis"), ndim), None


def _same_shape(a: Sequence[Dim], b: Sequence[Dim]) -> bool:
    return len(a) == len(b) and all(arith.compare(x, "==", y) is True for x, y in zip(a, b))


def _weights_like(weights, shape, axis, ndim: int):
    """Weights of the reduced axes' shape broadcast to ``a``'s shape (jax's rule)."""
    if axis is None:
        raise ValueError("Weights shape must match 'a' shape when axis is None.")
    axes = (axis,) if not isinstance(axis, Sequence) else tuple(axis)
    axes = normalize_axes("quantile", tuple(_int(x, "quantile axis") for x in axes), ndim)
    reduced = tuple(shape[ax] for ax in axes)
    if not _same_shape(shape_of(weights), reduced):
        raise ValueError(
            f"Weights shape {tuple(shape_of(weights))} must match reduction axes {reduced}"
        )
    order = tuple(int(i) for i in np.argsort(axes))
    weights = transpose(weights, order) if order != tuple(range(len(axes))) else weights
    placed = tuple(shape[i] if i in axes else 1 for i in range(ndim))
    return broadcast_to(reshape(weights, placed), shape)


def _sorted(a, weights, axis: int):
    """``a`` sorted along ``axis`` (NaNs last), with ``weights`` moved along (or None)."""
    if weights is None:
        return emit("sort", (a,), SortKeysAttrs(axis)), None
    return emit("sort", (a, weights), SortKeysAttrs(axis, num_keys=1))


def _positions(qn: object, limit: object, dtype: str):
    """The floor and ceil of ``qn`` clamped to ``[0, limit]`` (int64), and the weight
    of the ceil (``qn - floor(qn)``)."""
    low, high = _floor(qn, dtype), _ceil(qn, dtype)
    high_weight = emit("subtract", (qn, low))

    def clamp(x):
        return _core.astype(emit("maximum", (emit("minimum", (x, limit)), 0)), "int64")

    return clamp(low), clamp(high), high_weight


def _pick(s, index, axis: int, q_ndim: int, keepdims: bool):
    """``s[..., index, ...]`` along ``axis`` where ``index`` (``q``'s dims, then the
    reduced shape) differs per row: the one-hot ``max`` over the axis."""
    n = shape_of(s)[axis]
    if not keepdims:
        index = expand_dims(index, q_ndim + axis)
    rank = q_ndim + len(shape_of(s))
    positions = reshape(_core.arange(n), tuple(n if d == q_ndim + axis else 1 for d in range(rank)))
    values = reshape(s, (1,) * q_ndim + tuple(shape_of(s)))
    chosen = _core.where(emit("equal", (positions, index)), values, -math.inf)
    picked = _reduction.max(chosen, axis=q_ndim + axis, keepdims=keepdims, initial=-math.inf)
    if arith.compare(n, ">", 0) is True:
        return picked
    return _core.where(emit("greater", (n, 0)), picked, math.nan)  # an empty row: NaN


def _take(s, index, axis: int, q_ndim: int, keepdims: bool):
    """``s[..., index, ...]`` along ``axis`` for an ``index`` of ``q``'s shape, shared by
    every row: ``take``, with ``q``'s axis moved to the front."""
    taken = take(s, index, axis=axis)
    if q_ndim == 1:
        rank = len(shape_of(taken))
        taken = transpose(taken, (axis,) + tuple(d for d in range(rank) if d != axis))
    return expand_dims(taken, q_ndim + axis) if keepdims else taken


def _combine(method: str, low_value, high_value, high_weight, q_dtype: str):
    if method == "lower":
        return low_value
    if method == "higher":
        return high_value
    if method == "nearest":
        return _core.where(emit("less_equal", (high_weight, 0.5)), low_value, high_value)
    if method == "midpoint":
        return emit("multiply", (emit("add", (low_value, high_value)), 0.5))
    low_weight = emit("subtract", (1, high_weight))
    low_part = emit("multiply", (_core.astype(low_value, q_dtype), low_weight))
    high_part = emit("multiply", (_core.astype(high_value, q_dtype), high_weight))
    return emit("add", (low_part, high_part))


def _row_weights(weight, q_ndim: int, rank: int):
    """A weight of ``q``'s shape broadcast against values of ``rank`` dims."""
    if q_ndim == 0:
        return weight
    return reshape(weight, (shape_of(weight)[0],) + (1,) * (rank - 1))


# --------------------------------------------------------------------------- methods


def _interpolated(method, a, q, axis, keepdims, squash: bool):
    """Every method but ``inverted_cdf`` (jax's two paths: NaN-ignoring or not)."""
    q_dtype, q_ndim = dtype_of(q), _rank(q)
    if squash:
        s, _ = _sorted(a, None, axis)
        present = emit("logical_not", (_isnan(s),))
        counts = _reduction.sum(present, axis=axis, dtype=q_dtype, keepdims=keepdims)
        counts = reshape(counts, (1,) * q_ndim + tuple(shape_of(counts)))
        q = reshape(q, tuple(shape_of(q)) + (1,) * (len(shape_of(counts)) - q_ndim))
        limit = emit("subtract", (counts, 1))
        low, high, high_weight = _positions(emit("multiply", (q, limit)), limit, q_dtype)
        low_value = _pick(s, low, axis, q_ndim, keepdims)
        high_value = _pick(s, high, axis, q_ndim, keepdims)
    else:
        nan_rows = any_(_isnan(a), axis=axis, keepdims=True)
        s, _ = _sorted(_core.where(nan_rows, math.nan, a), None, axis)
        limit = emit("subtract", (_dim_value(shape_of(a)[axis], q_dtype), 1))
        low, high, high_weight = _positions(emit("multiply", (q, limit)), limit, q_dtype)
        low_value = _take(s, low, axis, q_ndim, keepdims)
        high_value = _take(s, high, axis, q_ndim, keepdims)
        high_weight = _row_weights(high_weight, q_ndim, len(shape_of(low_value)))
    return _combine(method, low_value, high_value, high_weight, q_dtype)


def _inverted_cdf(a, weights, q, axis, keepdims, squash: bool):
    """The first sorted value whose cumulative weight reaches ``q`` times the total
    (jax's ``inverted_cdf``); NaN for rows with a negative or NaN weight, and for NaN
    rows (``quantile``) or rows without a number (``nanquantile``)."""
    q_dtype, q_ndim = dtype_of(q), _rank(q)
    if weights is None:
        weights = _core.full_like(a, 1.0)
    s, w = _sorted(a, weights, axis)
    bad = emit("logical_or", (emit("less", (w, 0)), _isnan(w)))
    nan_data = _isnan(s)
    clean = _core.where(emit("logical_or", (bad, nan_data)), 0, w)
    cumulative = cumsum(clean, axis=axis)
    last = getitem(cumulative, (slice(None),) * axis + (-1,))
    total = expand_dims(last, axis) if keepdims else last
    front = tuple(range(q_ndim))
    total_f = expand_dims(total, front) if q_ndim else total
    q_f = reshape(q, tuple(shape_of(q)) + (1,) * len(shape_of(total)))
    target = emit("multiply", (q_f, total_f))
    if not keepdims:
        target = expand_dims(target, axis + q_ndim)
    cumulative_f = expand_dims(cumulative, front) if q_ndim else cumulative
    below = _core.astype(emit("less", (cumulative_f, target)), "int64")
    index = _reduction.sum(below, axis=axis + q_ndim, keepdims=keepdims)
    if squash:
        present = emit("logical_not", (nan_data,))
        valid = _reduction.sum(present, axis=axis, dtype=q_dtype, keepdims=keepdims)
    else:
        valid = _core.full_like(total, _dim_value(shape_of(s)[axis], q_dtype), dtype=q_dtype)
    largest = _core.astype(emit("subtract", (valid, 1)), "int64")
    largest = expand_dims(largest, front) if q_ndim else largest
    index = emit("maximum", (emit("minimum", (index, largest)), 0))
    result = _pick(s, index, axis, q_ndim, keepdims)
    no_data = emit("equal", (valid, 0))
    force = emit("logical_or", (any_(bad, axis=axis, keepdims=keepdims), no_data))
    if not squash:
        force = emit("logical_or", (force, any_(nan_data, axis=axis, keepdims=keepdims)))
    force = expand_dims(force, front) if q_ndim else force
    return _core.where(force, math.nan, result)


# --------------------------------------------------------------------------- wrappers


def _quantile(op_name, a, q, axis, method, keepdims, squash, weights):
    if method not in METHODS:
        raise ValueError(
            "method can only be 'linear', 'lower', 'higher', 'midpoint', 'nearest' or "
            "'inverted_cdf'"
        )
    if weights is not None:
        if method != "inverted_cdf":
            raise NotImplementedError(
                f"{method} doesn't support weights. Only method 'inverted_cdf' supports weights."
            )
        dtype = to_inexact(dtypes.promote(dtype_of(a), dtype_of(weights)))
        weights = _core.astype(weights, dtype)
    else:
        dtype = to_inexact(dtype_of(a))
    a = _core.astype(a, dtype)
    q = array_of(q)
    if _rank(q) > 1:
        raise ValueError(f"q must be have rank <= 1, got shape {tuple(shape_of(q))}")
    if not dtypes.is_floating(dtype_of(q)):
        raise TypeError(f"{op_name}: q must be a floating-point value, got {dtype_of(q)}")
    a, weights, axis, keepdim = _prepare(op_name, a, axis, weights, bool(keepdims))
    if method == "inverted_cdf":
        result = _inverted_cdf(a, weights, q, axis, bool(keepdims), squash)
    else:
        result = _interpolated(method, a, q, axis, bool(keepdims), squash)
    if keepdim is not None:
        result = reshape(result, tuple(shape_of(q)) + keepdim)
    return _core.astype(result, dtype)


def _no_overwrite(op_name: str, out: object, overwrite_input: object) -> None:
    if overwrite_input or out is not None:
        raise ValueError(
            f"jax.numpy.{op_name} does not support overwrite_input=True or out != None"
        )


def quantile(
    a,
    q,
    axis=None,
    out=None,
    overwrite_input=False,
    method="linear",
    keepdims=False,
    *,
    weights=None,
):
    """``jnp.quantile``: the ``q``-th quantiles (``q`` in [0, 1], 0-d or 1-d) over
    ``axis`` (an int, a tuple, or None: all); NaN where a reduced row holds a NaN."""
    _no_overwrite("quantile", out, overwrite_input)
    return _quantile("quantile", a, q, axis, method, keepdims, False, weights)


def nanquantile(
    a,
    q,
    axis=None,
    out=None,
    overwrite_input=False,
    method="linear",
    keepdims=False,
    *,
    weights=None,
):
    """``jnp.nanquantile``: :func:`quantile` ignoring NaNs (NaN where a row has none)."""
    _no_overwrite("nanquantile", out, overwrite_input)
    return _quantile("nanquantile", a, q, axis, method, keepdims, True, weights)


def _percent(q: object) -> object:
    """``q / 100`` with ``q`` made inexact (percentiles)."""
    q = array_of(q)
    return emit("divide", (_core.astype(q, to_inexact(dtype_of(q))), 100))


def percentile(
    a,
    q,
    axis=None,
    out=None,
    overwrite_input=False,
    method="linear",
    keepdims=False,
    *,
    weights=None,
):
    """``jnp.percentile``: :func:`quantile` of ``q / 100``."""
    _no_overwrite("percentile", out, overwrite_input)
    return _quantile("percentile", a, _percent(q), axis, method, keepdims, False, weights)


def nanpercentile(
    a,
    q,
    axis=None,
    out=None,
    overwrite_input=False,
    method="linear",
    keepdims=False,
    *,
    weights=None,
):
    """``jnp.nanpercentile``: :func:`nanquantile` of ``q / 100``."""
    _no_overwrite("nanpercentile", out, overwrite_input)
    return _quantile("nanpercentile", a, _percent(q), axis, method, keepdims, True, weights)


def median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """``jnp.median``: the ``midpoint`` 0.5-quantile (NaN where a row holds a NaN)."""
    _no_overwrite("median", out, overwrite_input)
    return _quantile("median", a, 0.5, axis, "midpoint", keepdims, False, None)


def nanmedian(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """``jnp.nanmedian``: :func:`median` ignoring NaNs."""
    _no_overwrite("nanmedian", out, overwrite_input)
    return _quantile("nanmedian", a, 0.5, axis, "midpoint", keepdims, True, None)
