"""Sorting and searching wrappers of ``relaxjax.numpy``: ``sort``, ``argsort``,
``lexsort``, ``partition``, ``argpartition``, ``searchsorted``, ``digitize``; and
``top_k`` (``jax.lax.top_k``, for ``relaxjax.lax`` to re-export, not ``relaxjax.numpy``).

All record the ``sort`` op (:mod:`relaxjax.ops.sort`): a stable merge sort of every
row along one axis, rows in parallel, ``O(n log n)``. Orders are jax's: NaN last and
``-0.0`` equal to ``0.0`` for ``sort``/``argsort``/``lexsort``; ``top_k`` and the
partitions, which jax builds on ``top_k``, also order ``-0.0`` before ``0.0``.

>>> import relaxjax as relax, relaxjax.numpy as rnp
>>> relax.eval_shape(lambda x: rnp.argsort(x, axis=0), relax.Tensor(("n", 3), "float32"))
Tensor((n, 3), "int64")
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from relaxjax import arith, dtypes
from relaxjax._numpy.operands import promoted
from relaxjax._numpy.reduction import dtype_of, shape_of
from relaxjax._numpy.shape import _int, _rank, concatenate, getitem, reshape
from relaxjax.ops.base import normalize_axis
from relaxjax.ops.creation import LikeAttrs
from relaxjax.ops.elementwise import AstypeAttrs
from relaxjax.ops.search import SearchAttrs
from relaxjax.ops.sort import SortKeysAttrs
from relaxjax.trace import Tracer, emit

__all__ = [
    "argpartition",
    "argsort",
    "digitize",
    "lexsort",
    "partition",
    "searchsorted",
    "sort",
]

Dim = arith.Dim


# --------------------------------------------------------------------------- helpers


def _check_kind(op_name: str, kind: object, order: object) -> None:
    if kind is not None:
        raise TypeError(
            f"'kind' argument to {op_name} is not supported. Use stable=True or stable=False "
            "to specify sort stability."
        )
    if order is not None:
        raise TypeError(f"'order' argument to {op_name} is not supported.")


def _sort_axis(op_name: str, a: object, axis: object) -> tuple[object, int]:
    """``a`` (flattened when ``axis`` is None) and the sorted axis, non-negative when the
    rank is known."""
    if axis is None:
        return reshape(a, (-1,)), 0
    axis = _int(axis, f"{op_name} axis")
    ndim = _rank(a)
    return a, axis if ndim is None else normalize_axis(op_name, axis, ndim)


def _flip(x: object, axis: int) -> object:
    """``x`` reversed along ``axis``."""
    ndim = _rank(x)
    if axis < 0 and ndim is not None:
        axis += ndim
    if axis < 0:
        return getitem(x, (Ellipsis, slice(None, None, -1)) + (slice(None),) * (-axis - 1))
    return getitem(x, (slice(None),) * axis + (slice(None, None, -1),))


# --------------------------------------------------------------------------- sort, argsort


def sort(a, axis=-1, *, kind=None, order=None, stable=True, descending=False):
    """``jnp.sort``: the sorted copy along ``axis`` (None: of the flattened array); NaN
    last, ``-0.0`` and ``0.0`` equal (kept in order). ``descending`` reverses the
    ascending result, as jax; ``stable`` is accepted (every sort here is stable)."""
    _check_kind("sort", kind, order)
    a, axis = _sort_axis("sort", a, axis)
    result = emit("sort", (a,), SortKeysAttrs(axis))
    return _flip(result, axis) if descending else result


def argsort(a, axis=-1, *, kind=None, order=None, stable=True, descending=False, dtype=None):
    """``jnp.argsort``: the positions sorting ``a`` along ``axis`` (int64, or ``dtype``).
    Stable: equal elements keep their order, also when ``descending`` (with
    ``stable=False`` a descending sort is the reversed ascending one, as jax)."""
    _check_kind("argsort", kind, order)
    index_dtype = dtypes.default_int() if dtype is None else dtypes.canonical(dtype)
    a, axis = _sort_axis("argsort", a, axis)
    if descending and not stable:
        attrs = SortKeysAttrs(axis, values=False, indices=True, index_dtype=index_dtype)
        return _flip(emit("sort", (a,), attrs), axis)
    attrs = SortKeysAttrs(
        axis, descending=bool(descending), values=False, indices=True, index_dtype=index_dtype
    )
    return emit("sort", (a,), attrs)


def lexsort(keys, axis=-1):
    """``jnp.lexsort``: the positions sorting by several keys, the last one first (ties
    broken by the one before, ...). ``keys`` is a sequence of same-shape arrays (or an
    array, its rows the keys); 0-d keys give ``0``."""
    if isinstance(keys, (Tracer, np.ndarray, Sequence)) and not isinstance(keys, str):
        keys = tuple(keys)
    else:
        raise TypeError(f"lexsort: keys must be a sequence of arrays, got {keys!r}")
    if not keys:
        raise TypeError("need sequence of keys with len > 0 in lexsort")
    shapes = [shape_of(k) for k in keys]
    ranks = {len(s) for s in shapes}
    if len(ranks) > 1 or any(
        arith.compare(d0, "==", d1) is False for s in shapes[1:] for d0, d1 in zip(shapes[0], s)
    ):
        raise ValueError("all keys need to be the same shape")
    if len(shapes[0]) == 0:
        return np.int64(0)
    axis = normalize_axis("lexsort", _int(axis, "lexsort axis"), len(shapes[0]))
    attrs = SortKeysAttrs(axis, values=False, indices=True, index_dtype=dtypes.default_int())
    return emit("sort", tuple(reversed(keys)), attrs)


# --------------------------------------------------------------------------- partitions


def _kth(op_name: str, a: object, kth: object, axis: object) -> tuple[int, Dim, Dim]:
    """The partitioned axis, its length and ``kth`` within it (``-n <= kth < n``; checked
    at run time when the length is symbolic)."""
    ndim = _rank(a)
    if ndim is None:
        raise TypeError(f"{op_name} needs the rank of its argument")
    if ndim == 0:
        raise ValueError(f"axis {axis} is out of bounds for array of dimension 0")
    axis = normalize_axis(op_name, _int(axis, f"{op_name} axis"), ndim)
    if dtype_of(a) == "bool":
        raise TypeError(
            "neg does not accept dtype bool. Accepted dtypes are subtypes of integer, "
            "floating, complexfloating."
        )
    kth = _int(kth, f"{op_name} kth")
    length = shape_of(a)[axis]
    if isinstance(length, int) and not -length <= kth < length:
        raise ValueError(f"axis {kth} is out of bounds for array of dimension {length}")
    return axis, length, (kth + length if kth < 0 else kth)


def partition(a, kth, axis=-1):
    """``jnp.partition``: along ``axis``, the ``kth + 1`` smallest elements in ascending
    order, then the others in descending order (jax's layout, from ``top_k``); ``-0.0``
    sorts before ``0.0``. A negative ``kth`` counts from the end; bool raises as in jax."""
    axis, length, kth = _kth("partition", a, kth, axis)
    bottom = emit("sort", (a,), SortKeysAttrs(axis, total_order=True, size=kth + 1))
    high = SortKeysAttrs(axis, descending=True, total_order=True, size=length - kth - 1)
    return concatenate([bottom, emit("sort", (a,), high)], axis=axis)


def argpartition(a, kth, axis=-1):
    """``jnp.argpartition``: the positions of :func:`partition`'s ``kth + 1`` smallest
    (in ascending order of value, ties by position), then the others' positions in
    ascending order (jax's layout; int32 as jax's ``top_k`` gives)."""
    axis, length, kth = _kth("argpartition", a, kth, axis)

    def window(start: Dim, size: Dim) -> SortKeysAttrs:
        return SortKeysAttrs(
            axis,
            total_order=True,
            values=False,
            indices=True,
            index_dtype="int32",
            size=size,
            start=start,
            weak_indices=True,  # jax's come from top_k
        )

    bottom = emit("sort", (a,), window(0, kth + 1))
    rest = emit("sort", (a,), window(kth + 1, length - kth - 1))
    return concatenate([bottom, emit("sort", (rest,), SortKeysAttrs(axis))], axis=axis)


# --------------------------------------------------------------------------- top_k


def top_k(operand, k, *, axis=-1):
    """``jax.lax.top_k``: the ``k`` largest elements along ``axis`` in descending order and
    their positions (int32), ties by position; NaN is the largest, ``0.0`` before
    ``-0.0``. ``k`` is an int or a symbolic dim (at most the axis length, checked at run
    time when unproven)."""
    ndim = _rank(operand)
    if ndim == 0:
        raise ValueError("top_k operand must have >= 1 dimension, got 0")
    axis = _int(axis, "top_k axis")
    if ndim is not None:
        axis = normalize_axis("top_k", axis, ndim)
    if not isinstance(k, arith.Expr):
        k = _int(k, "top_k k")
        if k < 0:
            raise ValueError(f"k argument to top_k must be nonnegative, got {k}")
        length = shape_of(operand)[axis] if ndim is not None else None
        if isinstance(length, int) and k > length:
            raise ValueError(
                "k argument to top_k must be no larger than size along axis; got "
                f"k={k} with shape={list(shape_of(operand))} and axis={axis}"
            )
    attrs = SortKeysAttrs(
        axis,
        descending=True,
        total_order=True,
        indices=True,
        index_dtype="int32",
        size=k,
        weak_indices=True,
    )
    return emit("sort", (operand,), attrs)


# --------------------------------------------------------------------------- searching


def searchsorted(a, v, side="left", sorter=None, *, method="scan"):
    """``jnp.searchsorted``: where each element of ``v`` would be inserted into the sorted
    1-d ``a`` (before equal elements with ``side="left"``, after with ``"right"``), as
    int32 (jax's type); ``sorter`` gives the permutation sorting ``a``. ``method`` is
    accepted (every method gives the same positions; here one binary search per
    query)."""
    if method not in ("scan", "scan_unrolled", "sort", "compare_all"):
        raise ValueError(
            f"method={method!r} not recognized; expected one of 'scan', 'scan_unrolled', "
            "'sort', 'compare_all'"
        )
    if side not in ("left", "right"):
        raise ValueError(f"side={side!r} not recognized; expected 'left' or 'right'")
    if _rank(a) != 1:
        raise ValueError("a should be 1-dimensional")
    a, v = promoted(a, v)
    if sorter is not None:
        a = getitem(a, sorter)
    return emit("searchsorted", (a, v), SearchAttrs(side, "int32"))


def digitize(x, bins, right=False, *, method=None):
    """``jnp.digitize``: the index of the bin of each element of ``x`` (int32): ``bins``
    is 1-d, increasing or decreasing; ``right`` makes bins closed on the right."""
    if _rank(bins) != 1:
        raise ValueError(f"digitize: bins must be a 1-dimensional array; got bins={bins}")
    count = shape_of(bins)[0]
    if count == 0:
        return emit("zeros_like", (x,), LikeAttrs("int32", None))
    side = "left" if right else "right"
    kwargs = {} if method is None else {"method": method}
    # the ends, read from bins and one more element: in bounds even when bins turns out
    # empty at run time (then both searches give 0)
    padded = concatenate([bins, np.zeros(1, dtypes.to_numpy(dtype_of(bins)))])
    last = getitem(padded, count - 1 if isinstance(count, int) else arith.max_(count - 1, 0))
    increasing = emit("greater_equal", (last, getitem(padded, 0)))
    up = searchsorted(bins, x, side=side, **kwargs)
    down = emit("subtract", (count, searchsorted(_flip(bins, 0), x, side=side, **kwargs)))
    return emit("where", (increasing, up, emit("astype", (down,), AstypeAttrs("int32"))))
