"""Set operations of ``relaxjax.numpy``: ``isin``, ``intersect1d``, ``union1d``,
``setdiff1d``, ``setxor1d`` and the array-API ``unique_all``, ``unique_counts``,
``unique_inverse``, ``unique_values``.

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
from typing import NamedTuple

import numpy as np

from relaxjax import arith, dtypes
from relaxjax._numpy import core as _core
from relaxjax._numpy import reduction as _reduction
from relaxjax._numpy.datadep import _size, unique
from relaxjax._numpy.mask import take_masked
from relaxjax._numpy.operands import array_of, leading_dim, promoted, ravel
from relaxjax._numpy.reduction import dtype_of
from relaxjax._numpy.shape import _static_scalar, broadcast_to, concatenate, getitem
from relaxjax.ops.search import SearchAttrs
from relaxjax.ops.sort import SortKeysAttrs
from relaxjax.trace import Tracer, emit

__all__ = [
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
    return _core.where(emit("greater", (leading_dim(values), 0)), smallest, 0)


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
    element, test_elements = promoted(array_of(element), array_of(test_elements))
    found = _member(element, ravel(test_elements))
    return emit("logical_not", (found,)) if invert else found


# --------------------------------------------------------------------------- set operations


def union1d(ar1, ar2, *, size=None, fill_value=None):
    """``jnp.union1d``: the sorted distinct elements of both arrays (flattened)."""
    joined = concatenate([array_of(ar1), array_of(ar2)], axis=None)
    return unique(joined, size=size, fill_value=fill_value)


def setdiff1d(ar1, ar2, assume_unique=False, *, size=None, fill_value=None):
    """``jnp.setdiff1d``: the sorted distinct elements of ``ar1`` not in ``ar2`` (with
    ``assume_unique``, ``ar1``'s elements in their order); with ``size``, padded with
    ``fill_value`` (default 0)."""
    ar1, ar2 = promoted(ravel(array_of(ar1)), ravel(array_of(ar2)))
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
    ar1, ar2 = promoted(ravel(array_of(ar1)), ravel(array_of(ar2)))
    if not assume_unique:
        ar1, ar2 = unique(ar1), unique(ar2)
    values, counts = unique(concatenate([ar1, ar2]), return_counts=True, equal_nan=False)
    return _sized(take_masked(values, emit("equal", (counts, 1)), 0), size, fill_value)


def intersect1d(ar1, ar2, assume_unique=False, return_indices=False, *, size=None, fill_value=None):
    """``jnp.intersect1d``: the sorted distinct elements in both arrays and, with
    ``return_indices``, the position of each one's first occurrence in each array
    (flattened). With ``size``, values are padded with ``fill_value`` (default: the
    smallest one, 0 without one) and positions with the arrays' sizes."""
    ar1, ar2 = promoted(ravel(array_of(ar1)), ravel(array_of(ar2)))
    n1, n2 = leading_dim(ar1), leading_dim(ar2)
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
    in2 = emit(
        "subtract", (take_masked(getitem(order, slice(1, None)), pairs, 0), leading_dim(ar1))
    )
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
