"""Set operations and counting of ``relaxjax.numpy``: ``isin``, ``intersect1d``,
``union1d``, ``setdiff1d``, ``setxor1d``, the array-API ``unique_all``,
``unique_counts``, ``unique_inverse``, ``unique_values``, and ``bincount``,
``histogram``, ``histogram_bin_edges``.

Compositions of ``unique`` (a sort and a count of runs), the ``sort`` and
``searchsorted`` ops and boolean masks; nothing compares every pair (``isin`` is a
binary search in the sorted test elements: ``O((n + m) log m)``). Results whose length
depends on the data are fresh symbols with bounds, as for ``unique``
(``intersect1d(a, b)`` of lengths ``n``, ``m`` has length ``k`` with ``0 <= k <=
...``); with ``size=`` they have that length, padded as jax pads them.

>>> import relaxjax as relax, relaxjax.numpy as rnp
>>> relax.eval_shape(lambda x, y: rnp.isin(x, y), relax.Tensor(("n", 2), "int32"),
...                  relax.Tensor(("m",), "int32"))
Tensor((n, 2), "bool")
"""

from __future__ import annotations

import math
import operator
from typing import NamedTuple

import numpy as np

from relaxjax import arith, dtypes
from relaxjax._numpy import core as _core
from relaxjax._numpy import reduction as _reduction
from relaxjax._numpy.datadep import _size, unique
from relaxjax._numpy.mask import take_masked
from relaxjax._numpy.reduction import dtype_of, shape_of
from relaxjax._numpy.shape import _rank, _static_scalar, broadcast_to, concatenate, getitem, reshape
from relaxjax._numpy.sorting import searchsorted
from relaxjax.ops.base import to_inexact
from relaxjax.ops.counting import BincountAttrs, BincountLengthAttrs
from relaxjax.ops.search import SearchAttrs
from relaxjax.ops.sort import SortKeysAttrs
from relaxjax.trace import Tracer, data_dependent_size, emit

__all__ = [
    "bincount",
    "histogram",
    "histogram_bin_edges",
    "intersect1d",
    "isin",
    "setdiff1d",
    "setxor1d",
    "union1d",
    "unique_all",
    "unique_counts",
    "unique_inverse",
    "unique_values",
]

Dim = arith.Dim


# --------------------------------------------------------------------------- helpers


def _ravel(x: object) -> object:
    return reshape(x, (-1,))


def _length(x: object) -> Dim:
    return shape_of(x)[0]


def _promoted(a: object, b: object) -> tuple[object, object]:
    """``a`` and ``b`` in their common dtype (jax's ``promote_dtypes``)."""
    dtype = dtypes.result_type(_operand(a), _operand(b))
    return _as(a, dtype), _as(b, dtype)


def _as(x: object, dtype: str) -> object:
    """``x`` converted to ``dtype`` (kept as it is, weak type included, when it has it)."""
    return (
        x
        if dtype_of(x) == dtype and not isinstance(x, (bool, int, float))
        else (_core.astype(x, dtype))
    )


def _operand(x: object) -> object:
    return dtypes.weak_of(x) if isinstance(x, (bool, int, float)) else dtype_of(x)


def _array(x: object) -> object:
    return x if isinstance(x, Tracer) else np.asarray(x)


def _pad(values: object, size: Dim, fill: object, keep_weak: bool = False) -> object:
    """The first ``size`` entries of 1-d ``values``, then ``fill`` (a scalar); the filler
    is ``full_like(values)`` (weakly typed with ``values``) when ``keep_weak``."""
    if keep_weak:
        filler = _core.full_like(values, fill, shape=(size,))
    else:
        filler = broadcast_to(_core.astype(fill, dtype_of(values)), (size,))
    return getitem(concatenate([values, filler]), slice(None, size))


def _smallest_or_zero(values: object) -> object:
    """jax's padding of a sized set result without ``fill_value``: the smallest value,
    or 0 when there is none."""
    dtype = dtype_of(values)
    if dtypes.is_floating(dtype):
        highest: bool | int | float = math.inf
    elif dtypes.is_bool(dtype):
        highest = True
    else:
        highest = int(np.iinfo(dtypes.to_numpy(dtype)).max)
    smallest = _reduction.min(values, initial=highest)
    return _core.where(emit("greater", (_length(values), 0)), smallest, 0)


def _sized(values: object, size: object, fill_value: object) -> object:
    """``values`` padded (or cut) to ``size`` entries, as jax's ``size=`` variants."""
    if size is None:
        return values
    size = _size("set operation", size, values)
    fill = _smallest_or_zero(values) if fill_value is None else _fill(fill_value)
    return _pad(values, size, fill)


def _fill(fill_value: object) -> object:
    if isinstance(fill_value, Tracer):
        return fill_value
    return np.asarray(_static_scalar("fill_value", fill_value))


# --------------------------------------------------------------------------- isin


def _member(elements: object, tests: object) -> object:
    """Whether each of ``elements`` equals one of the 1-d ``tests`` (same dtype)."""
    ordered = emit("sort", (tests,), SortKeysAttrs(0))
    return emit("searchsorted", (ordered, elements), SearchAttrs(member=True))


def isin(element, test_elements, assume_unique=False, invert=False, *, method="auto"):
    """``jnp.isin``: whether each element of ``element`` equals one of
    ``test_elements`` (NaN never does), in ``element``'s shape; ``invert`` negates.
    Every ``method`` gives these values (here: a binary search in the sorted test
    elements)."""
    if method not in ("auto", "compare_all", "binary_search", "sort"):
        raise ValueError(
            f"method={method!r} is not implemented; options are 'compare_all', "
            "'binary_search', 'sort', and 'auto'"
        )
    element, test_elements = _promoted(_array(element), _array(test_elements))
    found = _member(element, _ravel(test_elements))
    return emit("logical_not", (found,)) if invert else found


# --------------------------------------------------------------------------- set operations


def union1d(ar1, ar2, *, size=None, fill_value=None):
    """``jnp.union1d``: the sorted distinct elements of both arrays (flattened)."""
    joined = concatenate([_array(ar1), _array(ar2)], axis=None)
    return unique(joined, size=size, fill_value=fill_value)


def setdiff1d(ar1, ar2, assume_unique=False, *, size=None, fill_value=None):
    """``jnp.setdiff1d``: the sorted distinct elements of ``ar1`` not in ``ar2`` (with
    ``assume_unique``, ``ar1``'s elements in their order); with ``size``, padded with
    ``fill_value`` (default 0)."""
    ar1, ar2 = _promoted(_ravel(_array(ar1)), _ravel(_array(ar2)))
    if not assume_unique:
        ar1 = unique(ar1)
    kept = take_masked(ar1, emit("logical_not", (_member(ar1, ar2),)), 0)
    if size is None:
        return kept
    fill = _fill(0 if fill_value is None else fill_value)
    return _pad(kept, _size("setdiff1d", size, kept), fill, keep_weak=True)  # jax's full_like


def setxor1d(ar1, ar2, assume_unique=False, *, size=None, fill_value=None):
    """``jnp.setxor1d``: the sorted elements in exactly one of the arrays (NaNs, never
    equal, always are); with ``size``, padded with ``fill_value`` (default: the
    smallest result, 0 without one)."""
    ar1, ar2 = _promoted(_ravel(_array(ar1)), _ravel(_array(ar2)))
    if not assume_unique:
        ar1, ar2 = unique(ar1), unique(ar2)
    values, counts = unique(concatenate([ar1, ar2]), return_counts=True, equal_nan=False)
    return _sized(take_masked(values, emit("equal", (counts, 1)), 0), size, fill_value)


def intersect1d(ar1, ar2, assume_unique=False, return_indices=False, *, size=None, fill_value=None):
    """``jnp.intersect1d``: the sorted distinct elements in both arrays and, with
    ``return_indices``, the position of each one's first occurrence in each array
    (flattened). With ``size``, values are padded with ``fill_value`` (default: the
    smallest one, 0 without one) and positions with the arrays' sizes."""
    ar1, ar2 = _promoted(_ravel(_array(ar1)), _ravel(_array(ar2)))
    n1, n2 = _length(ar1), _length(ar2)
    first1 = first2 = None
    if not assume_unique:
        if return_indices:
            ar1, first1 = unique(ar1, return_index=True)
            ar2, first2 = unique(ar2, return_index=True)
        else:
            ar1, ar2 = unique(ar1), unique(ar2)
    joined = concatenate([ar1, ar2])
    if return_indices:
        attrs = SortKeysAttrs(0, indices=True, index_dtype=dtypes.default_int())
        ordered, order = emit("sort", (joined,), attrs)
    else:
        ordered, order = emit("sort", (joined,), SortKeysAttrs(0)), None
    head, tail = getitem(ordered, slice(None, -1)), getitem(ordered, slice(1, None))
    pairs = emit("equal", (tail, head))
    values = take_masked(head, pairs, 0)
    if not return_indices:
        return _sized(values, size, fill_value)
    in1 = take_masked(getitem(order, slice(None, -1)), pairs, 0)
    in2 = emit("subtract", (take_masked(getitem(order, slice(1, None)), pairs, 0), _length(ar1)))
    if first1 is not None:
        in1, in2 = getitem(first1, in1), getitem(first2, in2)
    if size is None:
        return values, in1, in2
    length = _size("intersect1d", size, values)
    return (
        _sized(values, length, fill_value),
        _pad(in1, length, _core.astype(n1, dtype_of(in1))),
        _pad(in2, length, _core.astype(n2, dtype_of(in2))),
    )


# --------------------------------------------------------------------------- array API unique


class UniqueAllResult(NamedTuple):
    """``unique_all``'s result (jax's field names)."""

    values: object
    indices: object
    inverse_indices: object
    counts: object


class UniqueCountsResult(NamedTuple):
    """``unique_counts``'s result."""

    values: object
    counts: object


class UniqueInverseResult(NamedTuple):
    """``unique_inverse``'s result."""

    values: object
    inverse_indices: object


def unique_all(x, /, *, size=None, fill_value=None):
    """``jnp.unique_all``: values, first indices, inverse indices (``x``'s shape) and
    counts; every NaN is its own value (``equal_nan=False``)."""
    values, indices, inverse, counts = unique(
        x, True, True, True, equal_nan=False, size=size, fill_value=fill_value
    )
    return UniqueAllResult(values, indices, inverse, counts)


def unique_counts(x, /, *, size=None, fill_value=None):
    """``jnp.unique_counts``: values and counts (NaNs distinct)."""
    values, counts = unique(
        x, return_counts=True, equal_nan=False, size=size, fill_value=fill_value
    )
    return UniqueCountsResult(values, counts)


def unique_inverse(x, /, *, size=None, fill_value=None):
    """``jnp.unique_inverse``: values and inverse indices (NaNs distinct)."""
    values, inverse = unique(
        x, return_inverse=True, equal_nan=False, size=size, fill_value=fill_value
    )
    return UniqueInverseResult(values, inverse)


def unique_values(x, /, *, size=None, fill_value=None):
    """``jnp.unique_values``: the sorted distinct values (NaNs distinct)."""
    return unique(x, equal_nan=False, size=size, fill_value=fill_value)


# --------------------------------------------------------------------------- counting


def bincount(x, weights=None, minlength=0, *, length=None):
    """``jnp.bincount``: per bin ``0 .. length - 1``, the count (or the sum of
    ``weights``) of the elements of the 1-d integer ``x`` equal to it; negative
    elements count into bin 0, elements past the last bin are dropped. Without
    ``length`` it is ``max(minlength, max(x) + 1)``: a fresh symbol while tracing."""
    x = _array(x)
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
        weights = _array(weights)
        if _rank(weights) != 1 or arith.compare(_length(weights), "==", _length(x)) is False:
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
    a = _array(a)
    dtype = to_inexact(dtype_of(a))
    if np.ndim(bins) == 1 or (isinstance(bins, Tracer) and bins.ndim == 1):
        return _core.astype(_array(bins), dtype)
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
    return _array(range_[0]), _array(range_[1])


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
    a = _array(a)
    if weights is None:
        a = _core.astype(a, to_inexact(dtype_of(a)))
        weights = _core.ones_like(a)
    else:
        weights = _array(weights)
        if not _same_shape(shape_of(a), shape_of(weights)):
            raise ValueError("weights should have the same shape as a.")
        dtype = to_inexact(dtypes.promote(dtype_of(a), dtype_of(weights)))
        a, weights = _core.astype(a, dtype), _core.astype(weights, dtype)
    edges = histogram_bin_edges(a, bins, range)
    count = _length(edges)
    flat = _ravel(a)
    index = searchsorted(edges, flat, side="right")
    last = emit("equal", (flat, getitem(edges, -1)))
    index = _core.where(last, emit("subtract", (count, 1)), index)
    counts = emit("bincount", (index, _ravel(weights)), BincountAttrs(count))
    counts = getitem(counts, slice(1, None))
    if density:
        widths = emit("subtract", (getitem(edges, slice(1, None)), getitem(edges, slice(None, -1))))
        counts = emit("divide", (emit("divide", (counts, widths)), _reduction.sum(counts)))
    return counts, edges


def _same_shape(a, b) -> bool:
    return len(a) == len(b) and all(arith.compare(x, "==", y) is not False for x, y in zip(a, b))
