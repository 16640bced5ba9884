"""Counting of ``relaxjax.numpy``: ``bincount``, ``histogram``, ``histogram2d``,
``histogramdd``, ``histogram_bin_edges``.

``bincount`` is one op (:mod:`relaxjax.ops.counting`: a serial scatter-add, its length
from the data a fresh symbol when ``length`` is not given); the histograms are jax's
compositions of it: bin edges (evenly spaced by jax's ``linspace`` formula, or given),
``searchsorted`` of the samples in them, and a ``bincount`` of the (combined) bin indices.

>>> import relaxjax as relax, relaxjax.numpy as rnp
>>> relax.eval_shape(lambda x: rnp.histogram(x, bins=4), relax.Tensor(("n",), "float32"))
(Tensor((4,), "float32"), Tensor((5,), "float32"))
"""

from __future__ import annotations

import builtins
import math
import operator
from collections.abc import Sequence

import numpy as np

from relaxjax import arith, dtypes
from relaxjax._numpy import core as _core
from relaxjax._numpy import reduction as _reduction
from relaxjax._numpy.operands import array_of, leading_dim, ravel
from relaxjax._numpy.reduction import dtype_of, shape_of
from relaxjax._numpy.shape import _rank, concatenate, getitem, reshape, stack
from relaxjax._numpy.sorting import searchsorted
from relaxjax.ops.base import to_inexact
from relaxjax.ops.counting import BincountAttrs, BincountLengthAttrs
from relaxjax.ops.elementwise import ClipAttrs
from relaxjax.trace import Tracer, data_dependent_size, emit

__all__ = ["bincount", "histogram", "histogram2d", "histogram_bin_edges", "histogramdd"]

Dim = arith.Dim


def bincount(x, weights=None, minlength=0, *, length=None):
    """``jnp.bincount``: per bin ``0 .. length - 1``, the count (or the sum of
    ``weights``) of the elements of the 1-d integer ``x`` equal to it; negative
    elements count into bin 0, elements past the last bin are dropped. Without
    ``length`` it is ``max(minlength, max(x) + 1)``: a fresh symbol while tracing."""
    x = array_of(x)
    if dtype_of(x) == "bool":
        x = _core.astype(x, "int32")
    if not dtypes.is_integer(dtype_of(x)):
        raise TypeError(f"x argument to bincount must have an integer type; got {dtype_of(x)}")
    if _rank(x) != 1:
        raise ValueError("only 1-dimensional input supported.")
    minlength = operator.index(minlength)
    if minlength < 0:
        raise ValueError(f"minlength must be non-negative, got {minlength}")
    if length is None:
        dtype = dtype_of(x)
        bound = int(np.iinfo(dtypes.to_numpy(dtype)).max)  # max(x) + 1 at most
        attrs = BincountLengthAttrs(minlength)
        length = data_dependent_size("bincount_length", (x,), attrs, max(bound, minlength), "b")
    elif not isinstance(length, arith.Expr):
        length = operator.index(length)
    operands = (x,)
    if weights is not None:
        weights = array_of(weights)
        if (
            _rank(weights) != 1
            or arith.compare(leading_dim(weights), "==", leading_dim(x)) is False
        ):
            raise ValueError(
                "type of weights must match type of x. Got "
                f"shape {tuple(shape_of(x))} and shape {tuple(shape_of(weights))}"
            )
        operands = (x, weights)
    return emit("bincount", operands, BincountAttrs(length))


def histogram_bin_edges(a, bins=10, range=None, weights=None):  # noqa: A002 - jax's name
    """``jnp.histogram_bin_edges``: ``bins`` (a 1-d array) as the inexact dtype of
    ``a``, or ``bins + 1`` evenly spaced edges over ``range`` (default: ``a``'s
    minimum and maximum; an empty range is widened by 0.5 on each side)."""
    del weights  # jax ignores them too (no string bins)
    if isinstance(bins, str):
        raise NotImplementedError("string values for `bins` not implemented.")
    a = array_of(a)
    dtype = to_inexact(dtype_of(a))
    if np.ndim(bins) == 1 or (isinstance(bins, Tracer) and bins.ndim == 1):
        return _core.astype(array_of(bins), dtype)
    count = operator.index(bins)
    if range is None:
        low, high = _reduction.min(a), _reduction.max(a)
    else:
        low, high = _bounds(range)
    low, high = _core.astype(low, dtype), _core.astype(high, dtype)
    empty = emit("equal", (emit("subtract", (high, low)), 0))
    low = _core.where(empty, emit("subtract", (low, 0.5)), low)
    high = _core.where(empty, emit("add", (high, 0.5)), high)
    return _even_edges(low, high, count, dtype)


def _bounds(range_: object) -> tuple[object, object]:  # noqa: A002
    """The two ends of a histogram ``range`` (a pair of scalars, or a 2-element array)."""
    if isinstance(range_, Tracer):
        if tuple(range_.shape) != (2,):
            raise ValueError(f"`range` must be either None or a sequence of scalars, got {range_}")
        return getitem(range_, 0), getitem(range_, 1)
    if isinstance(range_, np.ndarray) or not isinstance(range_, (tuple, list)):
        range_ = np.asarray(range_)
        if range_.shape != (2,):
            raise ValueError(f"`range` must be either None or a sequence of scalars, got {range_}")
    if len(range_) != 2 or any(not isinstance(r, Tracer) and np.ndim(r) != 0 for r in range_):
        raise ValueError(f"`range` must be either None or a sequence of scalars, got {range_}")
    return array_of(range_[0]), array_of(range_[1])


def _even_edges(low: object, high: object, count: int, dtype: str) -> object:
    """``count + 1`` edges from ``low`` to ``high`` (0-d), as jax's ``linspace``:
    ``low * (1 - t) + high * t`` for ``t = i / count``, then ``high`` itself."""
    if count < 0:
        raise ValueError(f"Number of samples, {count + 1}, must be non-negative.")
    last = reshape(high, (1,))
    if count == 0:
        return last
    step = np.arange(count, dtype=dtypes.to_numpy(dtype)) / np.asarray(
        count, dtypes.to_numpy(dtype)
    )
    step = step.astype(dtypes.to_numpy(dtype))
    inner = emit("add", (emit("multiply", (low, 1 - step)), emit("multiply", (high, step))))
    return concatenate([inner, last])


def histogram(a, bins=10, range=None, weights=None, density=None):  # noqa: A002
    """``jnp.histogram``: the (weighted) counts of ``a``'s elements in each bin and the
    bin edges; bins are closed on the left except the last (closed on both sides);
    ``density`` divides by the bin widths and the total. NaNs are not counted."""
    a = array_of(a)
    if weights is None:
        a = _core.astype(a, to_inexact(dtype_of(a)))
        weights = _core.ones_like(a)
    else:
        weights = array_of(weights)
        if not _same_shape(shape_of(a), shape_of(weights)):
            raise ValueError("weights should have the same shape as a.")
        dtype = to_inexact(dtypes.promote(dtype_of(a), dtype_of(weights)))
        a, weights = _core.astype(a, dtype), _core.astype(weights, dtype)
    edges = histogram_bin_edges(a, bins, range)
    count = leading_dim(edges)
    flat = ravel(a)
    index = searchsorted(edges, flat, side="right")
    last = emit("equal", (flat, getitem(edges, -1)))
    index = _core.where(last, emit("subtract", (count, 1)), index)
    counts = emit("bincount", (index, ravel(weights)), BincountAttrs(count))
    counts = getitem(counts, slice(1, None))
    if density:
        widths = emit("subtract", (getitem(edges, slice(1, None)), getitem(edges, slice(None, -1))))
        counts = emit("divide", (emit("divide", (counts, widths)), _reduction.sum(counts)))
    return counts, edges


def _same_shape(a, b) -> bool:
    return len(a) == len(b) and all(arith.compare(x, "==", y) is not False for x, y in zip(a, b))


# --------------------------------------------------------------------------- several dims


def histogramdd(sample, bins=10, range=None, weights=None, density=None):  # noqa: A002
    """``jnp.histogramdd``: the ``(N, D)`` samples counted (or weighted) in a
    ``D``-dimensional grid of bins, and the list of each dimension's edges. ``bins`` is
    one int or array for every dimension, or one per dimension; ``range`` a pair (or
    None) per dimension; ``density`` divides by the total and the bin volumes. Each
    dimension's bins are closed on the left except the last, as :func:`histogram`."""
    sample = array_of(sample)
    if _rank(sample) != 2:
        raise ValueError(f"histogramdd: sample must be a 2-d (N, D) array, got {sample!r}")
    count, dims = shape_of(sample)
    if isinstance(dims, arith.Expr):
        raise TypeError("histogramdd: the number of dimensions D must be static")
    if weights is None:
        sample = _core.astype(sample, to_inexact(dtype_of(sample)))
    else:
        weights = array_of(weights)
        if _rank(weights) != 1 or arith.compare(leading_dim(weights), "==", count) is False:
            raise ValueError("should have one weight for each sample.")
        dtype = to_inexact(dtypes.promote(dtype_of(sample), dtype_of(weights)))
        sample, weights = _core.astype(sample, dtype), _core.astype(weights, dtype)
    if range is not None and (
        len(range) != dims or any(r is not None and np.shape(r)[0] != 2 for r in range)
    ):
        raise ValueError(
            f"For sample.shape={(count, dims)}, range must be a sequence of {dims} pairs or "
            f"Nones; got range={range}"
        )
    per_dim = _bins_per_dimension(bins, dims)
    indices, edges = [], []
    for d in builtins.range(dims):
        column = getitem(sample, (slice(None), d))
        edge = histogram_bin_edges(column, per_dim[d], None if range is None else range[d])
        index = searchsorted(edge, column, side="right")
        on_last = emit("equal", (column, getitem(edge, -1)))
        indices.append(_core.where(on_last, emit("subtract", (index, 1)), index))
        edges.append(edge)
    sizes = tuple(leading_dim(e) + 1 for e in edges)
    flat = _ravel_clipped(indices, sizes)
    total = math.prod(sizes)
    operands = (flat,) if weights is None else (flat, weights)
    hist = reshape(emit("bincount", operands, BincountAttrs(total)), sizes)
    hist = getitem(hist, (slice(1, -1),) * dims)
    if density:
        hist = _core.astype(hist, dtype_of(sample))
        hist = emit("divide", (hist, _reduction.sum(hist)))
        for d, edge in enumerate(edges):
            width = emit(
                "subtract", (getitem(edge, slice(1, None)), getitem(edge, slice(None, -1)))
            )
            placed = tuple(-1 if k == d else 1 for k in builtins.range(dims))
            hist = emit("divide", (hist, reshape(width, placed)))
    return hist, edges


def _bins_per_dimension(bins: object, dims: int) -> list:
    """One ``bins`` argument per dimension, as jax: an int is used for every dimension,
    anything else is iterated (an array of ``D`` ints, or a list of ints and edges)."""
    if isinstance(bins, (int, np.integer)) or (
        isinstance(bins, (Tracer, np.ndarray)) and _rank(bins) == 0
    ):
        return [bins] * dims
    per_dim = list(bins)
    if len(per_dim) != dims:
        raise ValueError("should be a bin for each dimension.")
    return per_dim


def _ravel_clipped(indices: Sequence[object], sizes: Sequence[Dim]) -> object:
    """The row-major flat index of per-dimension indices, each clipped into its size
    (jax's ``ravel_multi_index(mode="clip")``)."""
    flat: object = None
    for index, size in zip(indices, sizes):
        attrs = ClipAttrs(has_min=True, has_max=True)
        clipped = emit("clip", (index, 0, emit("subtract", (size, 1))), attrs)
        flat = clipped if flat is None else emit("add", (emit("multiply", (flat, size)), clipped))
    return flat


def histogram2d(x, y, bins=10, range=None, weights=None, density=None):  # noqa: A002
    """``jnp.histogram2d``: :func:`histogramdd` of the samples ``(x[i], y[i])``; returns
    the counts and the two dimensions' edges. ``bins`` is an int or array for both, or a
    pair."""
    x, y = array_of(x), array_of(y)
    try:
        pairs = len(bins)
    except TypeError:
        pairs = 1
    if pairs not in (1, 2):
        bins = [bins, bins]
    dtype = dtypes.promote(dtype_of(x), dtype_of(y))
    sample = stack([_core.astype(x, dtype), _core.astype(y, dtype)], axis=1)
    hist, (x_edges, y_edges) = histogramdd(sample, bins, range, weights, density)
    return hist, x_edges, y_edges
