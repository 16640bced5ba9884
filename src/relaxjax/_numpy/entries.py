"""Inserting and deleting entries with jax.numpy's names and semantics: ``insert``,
``delete`` and ``trim_zeros``.

``insert`` is one gather from the array joined with the values; ``delete`` compresses
by a mask of the kept positions (its length is static for static indices, ``n - k`` on
a symbolic axis, or data-dependent for traced indices without
``assume_unique_indices``); ``trim_zeros`` keeps a data-dependent range per axis, a fresh
symbol as for ``nonzero`` (jax needs a concrete array).

>>> import relaxjax as relax, relaxjax.numpy as rnp
>>> relax.eval_shape(lambda x: rnp.insert(x, 1, 0.0, axis=0), relax.Tensor(("n", 4), "float32"))
Tensor((n + 1, 4), "float32")
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from relaxjax import arith
from relaxjax._numpy.arraylike import (
    array_operand,
    asserted_shape,
    astype,
    dtype_of,
    is_static,
    ndim_of,
    shape_of,
)
from relaxjax._numpy.core import arange, where
from relaxjax._numpy.datadep import compress
from relaxjax._numpy.manipulation import (
    at_least_rank,
    axes_arg,
    gather,
    moveaxis,
    ravel,
    single_axis,
)
from relaxjax._numpy.mask import take_masked
from relaxjax._numpy.reduction import max as _max
from relaxjax._numpy.shape import broadcast_to, concatenate, expand_dims, getitem
from relaxjax.errors import TraceError
from relaxjax.trace import Tracer, current, emit

Dim = arith.Dim

__all__ = ["delete", "insert", "trim_zeros"]


# --------------------------------------------------------------------------- insert, delete


def delete(arr, obj, axis=None, *, assume_unique_indices=False):
    """``jnp.delete``: ``arr`` without the entries ``obj`` along ``axis`` (of the flattened
    array when None).

    ``obj`` is an int, a slice, a sequence or array of ints (duplicates count once,
    negative ones count from the end) or a bool mask of the axis' length. The kept
    entries are gathered with ``compress``: the result length is static for static
    ``obj`` (``n - 1`` for an int), and ``n - len(obj)`` for traced indices with
    ``assume_unique_indices=True`` (as jax); traced indices without it, or a traced
    mask, give a data-dependent length (jax refuses them).
    """
    a = array_operand(arr)
    if axis is None:
        a, axis = ravel(a), 0
    axis = single_axis("delete", axis, ndim_of(a, "delete"))
    n = shape_of(a)[axis]
    if isinstance(obj, slice):
        return _delete_slice(a, obj, axis, n)
    if isinstance(obj, Tracer):
        return _delete_traced(a, obj, axis, n, assume_unique_indices)
    obj = np.asarray(obj)
    if obj.dtype == np.bool_:
        if obj.shape != (n,) and (obj.ndim != 1 or isinstance(n, int)):
            raise ValueError(
                "np.delete(arr, obj): for boolean indices, obj must be one-dimensional "
                "with length matching specified axis."
            )
        return compress(~obj, a, axis=axis)
    if obj.dtype.kind not in "iu":
        if obj.size:
            raise ValueError(
                f"np.delete(arr, obj): got obj.dtype={obj.dtype}; must be integer or bool."
            )
        obj = obj.astype(np.int64)
    if isinstance(n, int):
        keep = np.ones(n, dtype=bool)
        keep[obj] = False  # numpy's IndexError for an out-of-range index, as jax
        return gather(a, np.flatnonzero(keep).astype(np.int64), axis)
    return _delete_symbolic(a, [int(i) for i in obj.ravel()], axis, n)


def _delete_symbolic(a: object, indices: list[int], axis: int, n: Dim) -> object:
    """Delete static indices from an axis of symbolic size: ``compress`` by a mask of the
    kept positions (one comparison per index). When the positions are provably distinct
    the result is asserted (at run time) to have ``n - count`` entries, which holds when
    every index is in range, as jax requires."""
    positions = arange(n)
    normalized = []
    for index in dict.fromkeys(indices):
        normalized.append(n + index if index < 0 else index)
    keep = None
    for index in normalized:
        kept = positions != index
        keep = kept if keep is None else keep & kept
    if keep is None:
        return a
    result = compress(keep, a, axis=axis)
    if not _provably_distinct(normalized):
        return result
    shape = list(shape_of(result))
    shape[axis] = n - len(normalized)
    return asserted_shape(result, shape)


def _provably_distinct(indices: Sequence[Dim]) -> bool:
    return all(
        arith.compare(index, "!=", other) is True
        for i, index in enumerate(indices)
        for other in indices[:i]
    )


def _delete_slice(a: object, obj: slice, axis: int, n: Dim) -> object:
    if isinstance(n, int):
        keep = np.ones(n, dtype=bool)
        keep[obj] = False
        return gather(a, np.flatnonzero(keep).astype(np.int64), axis)
    removed = getitem(arange(n), obj)  # the deleted positions, in slice order
    count = shape_of(removed)[0]
    positions = arange(n)
    hit = emit("equal", (expand_dims(positions, 1), expand_dims(removed, 0)))
    keep = ~_any_last(hit)
    return compress(keep, a, axis=axis, size=n - count)


def _any_last(x: object) -> object:
    return _max(x, axis=-1, initial=False)


def _delete_traced(a: object, obj: object, axis: int, n: Dim, unique: bool) -> object:
    if obj.dtype == "bool":
        if obj.ndim != 1:
            raise ValueError(
                "np.delete(arr, obj): for boolean indices, obj must be one-dimensional "
                "with length matching specified axis."
            )
        return compress(~obj, a, axis=axis)
    if obj.dtype not in ("int8", "int16", "int32", "int64", "uint8"):
        raise ValueError(
            f"np.delete(arr, obj): got obj.dtype={obj.dtype}; must be integer or bool."
        )
    indices = ravel(obj)
    indices = where(indices < 0, indices + n, indices)
    hit = emit("equal", (expand_dims(arange(n), 1), expand_dims(indices, 0)))
    keep = ~_any_last(hit)
    size = n - shape_of(indices)[0] if unique else None
    return compress(keep, a, axis=axis, size=size)


def insert(arr, obj, values, axis=None):
    """``jnp.insert``: ``values`` inserted before the entries ``obj`` along ``axis`` (of
    the flattened array when None).

    ``obj`` is a static int, slice or sequence of ints (negative ones count from the end,
    out-of-range ones are clipped, as jax); ``values`` broadcast to the inserted slices
    and are converted to ``arr``'s dtype. The result is one gather from ``arr`` joined
    with the values. A traced ``obj`` is not supported.
    """
    a = array_operand(arr)
    if isinstance(obj, Tracer):
        raise TraceError(
            "insert: obj must be static (an int, a slice or a sequence of ints); "
            "a traced obj is not supported"
        )
    if axis is None:
        a, axis = ravel(a), 0
    ndim = ndim_of(a, "insert")
    axis = single_axis("insert", axis, ndim)
    n = shape_of(a)[axis]
    scalar = not isinstance(obj, slice) and np.ndim(obj) == 0
    points, raw = _insert_indices(obj, n)
    values = astype(at_least_rank(array_operand(values), ndim), dtype_of(a))
    if len(points) == 1:
        if scalar:
            values = moveaxis(values, 0, axis) if ndim_of(values) > 0 else values
            values = at_least_rank(values, ndim)
        count = shape_of(values)[axis]
        if not isinstance(count, int):
            raise TraceError(f"insert: the number of inserted values {count} must be static")
        points, raw = points * count, raw * count
    target = list(shape_of(a))
    target[axis] = len(points)
    values = broadcast_to(values, tuple(target))
    positions = _insert_positions(points, _insertion_order(points, raw, n), n)
    return gather(concatenate([a, values], axis=axis), positions, axis)


def _insert_indices(obj: object, n: Dim) -> list[Dim]:
    """The insertion points in stable sorted order of the given ones, negative ones
    wrapped and all clipped to ``[0, n]``, with their positions among the values:
    ``[(point, value index), ...]``."""
    if isinstance(obj, slice):
        if not isinstance(n, int):
            raise TraceError(f"insert: a slice obj needs a static axis size, got {n}")
        raw = list(range(*obj.indices(n)))
    else:
        array = np.asarray(obj)
        if array.ndim > 1:
            raise ValueError(
                "jnp.insert(): obj must be a slice, a one-dimensional array, or a scalar; "
                f"got {obj}"
            )
        if array.dtype.kind not in "iu" and array.size:
            raise ValueError(f"jnp.insert(): index array must be integer typed; got {obj}")
        raw = [int(i) for i in array.ravel().tolist()]
    points = [arith.max_(arith.min_(n + i if i < 0 else i, n), 0) for i in raw]
    return points, raw


def _insertion_order(points: Sequence[Dim], raw: Sequence[int], n: Dim) -> list[int]:
    """The value indices in stable order of their insertion points: by the given indices
    when their signs agree (the points are monotonic in them), else provably."""
    if all(i >= 0 for i in raw) or all(i < 0 for i in raw):
        return sorted(range(len(raw)), key=lambda j: raw[j])
    order = list(range(len(points)))
    for k in range(1, len(order)):  # insertion sort with proven comparisons
        j = k
        while j > 0 and _before(points[order[j]], points[order[j - 1]], n):
            order[j - 1], order[j] = order[j], order[j - 1]
            j -= 1
    return order


def _before(a: Dim, b: Dim, n: Dim) -> bool:
    verdict = arith.compare(a, "<", b)
    if verdict is None:
        raise TraceError(
            f"insert: the insertion points {a} and {b} into an axis of symbolic size {n} "
            "cannot be ordered while tracing; use indices of one sign"
        )
    return verdict


def _insert_positions(points: Sequence[Dim], order: Sequence[int], n: Dim) -> object:
    """The gather positions into ``concatenate([a, values])`` building the result: value
    ``j`` (of rank ``r`` in the stable order) goes to ``points[j] + r``, and the entries
    of ``a`` fill the other positions in order."""
    count = len(points)
    if isinstance(n, int):
        destination = np.empty(count, np.int64)
        destination[list(order)] = np.asarray([points[j] for j in order]) + np.arange(count)
        is_value = np.zeros(n + count, bool)
        is_value[destination] = True
        positions = np.empty(n + count, np.int64)
        positions[~is_value] = np.arange(n)
        positions[destination] = n + np.arange(count)
        return positions
    out = arange(n + count)
    positions = out
    for rank, j in enumerate(order):
        positions = positions - (out > points[j] + rank).astype("int64")
    for rank, j in enumerate(order):
        positions = where(out == points[j] + rank, n + j, positions)
    return positions


# --------------------------------------------------------------------------- trim_zeros


def trim_zeros(filt, trim="fb", axis=None):
    """``jnp.trim_zeros``: drop the leading (``"f"``) and/or trailing (``"b"``) slices that
    are all zero along each axis of ``axis`` (all axes when None). The kept length is
    data-dependent: a fresh symbol per trimmed axis (jax requires a concrete ``filt``)."""
    filt = array_operand(filt)
    ndim = ndim_of(filt, "trim_zeros")
    axes = tuple(range(ndim)) if axis is None else axes_arg("trim_zeros", axis, ndim)
    trim = trim.lower()
    front, back = "f" in trim, "b" in trim
    if not axes or not (front or back):
        return filt
    if not is_static(filt) or current() is not None:
        nonzero_filt = filt != 0
    else:
        nonzero_filt = np.asarray(filt) != 0
    masks = [trim_mask(nonzero_filt, ax, front, back) for ax in axes]
    result = filt
    for ax, mask in zip(axes, masks):
        result = take_masked(result, mask, ax)
    return result


def trim_mask(nonzero_filt: object, axis: int, front: bool, back: bool) -> object:
    """The positions along ``axis`` kept by ``trim_zeros``: from the first (``front``)
    and/or up to the last (``back``) slice holding a true element of the bool array
    ``nonzero_filt`` (all false when there is none)."""
    other = tuple(i for i in range(ndim_of(nonzero_filt)) if i != axis)
    hit = _max(nonzero_filt, axis=other, initial=False) if other else nonzero_filt
    n = shape_of(hit)[0]
    positions = arange(n)
    keep = None
    if front:
        keep = positions >= n - _max(where(hit, n - positions, 0), initial=0)
    if back:
        inside = positions <= _max(where(hit, positions, -1), initial=-1)
        keep = inside if keep is None else keep & inside
    return keep
