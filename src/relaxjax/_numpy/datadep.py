"""The jax.numpy functions whose result size depends on the data: ``nonzero``,
``argwhere``, ``flatnonzero``, ``compress``, ``unique`` (and ``count_nonzero``,
whose shape is static), re-exported by :mod:`relaxjax.numpy`.

Without ``size=``, the data-dependent length is a fresh symbol with bounds, ``k0``
with ``0 <= k0 <= n`` for ``n`` candidate elements, bound at run time once a kernel
counted it (see :mod:`relaxjax.ops.nonzero`); everything downstream is deduced and
compiled with it, once for every input::

    >>> import relaxjax as relax, relaxjax.numpy as rnp
    >>> spec = relax.eval_shape(lambda x: rnp.nonzero(x)[0], relax.Tensor(("n", 4), "float32"))
    >>> spec, spec.shape[0].upper
    (Tensor((k0,), "int64"), n * 4)

With ``size=`` (an int, or a symbolic dim) the result has that length, truncated or
padded with ``fill_value`` as in jax. Arrays known while tracing (numpy constants) give
static sizes, as in jax.
"""

from __future__ import annotations

import numpy as np

from relaxjax import arith
from relaxjax._numpy.mask import count_size, take_masked
from relaxjax._numpy.shape import _axes_or_none, _int, _no_out, _rank, _static_scalar, getitem
from relaxjax.errors import TraceError
from relaxjax.ir import PrimInfo
from relaxjax.ops.index import TakeAttrs
from relaxjax.ops.manipulate import ReshapeAttrs
from relaxjax.ops.nonzero import CountAttrs, NonzeroAttrs, index_dtype
from relaxjax.ops.unique import SortAttrs, UniqueAttrs, UniqueCountAttrs
from relaxjax.trace import Tracer, data_dependent_size, emit

__all__ = ["argwhere", "compress", "count_nonzero", "flatnonzero", "nonzero", "unique"]

Dim = arith.Dim
Scalar = bool | int | float


# --------------------------------------------------------------------------- helpers


def _shape(a: object) -> tuple[Dim, ...]:
    if isinstance(a, Tracer):
        return () if isinstance(a.info, PrimInfo) else a.shape
    return tuple(np.shape(a))


def _count(a: object) -> Dim:
    size: Dim = 1
    for dim in _shape(a):
        size = size * dim
    return size


def _size(op_name: str, size: object, a: object) -> Dim:
    """The result length: ``size`` (an int >= 0 or a dim), or the data-dependent count."""
    if size is None:
        return count_size(a, _count(a))
    if isinstance(size, arith.Expr):
        return size
    if isinstance(size, Tracer):
        raise TypeError(
            f"{op_name}: size must be a static int or a symbolic dim, not a traced value"
        )
    value = _int(size, f"{op_name} size")
    if value < 0:
        raise ValueError(f"{op_name}: size must be >= 0, got {value}")
    return value


def _fills(op_name: str, fill_value: object, columns: int) -> tuple[Scalar, ...]:
    """``fill_value`` (a scalar or a tuple of one per column) as a tuple of Python scalars;
    ``()`` for the default (zeros)."""
    if fill_value is None:
        return ()
    values = fill_value if isinstance(fill_value, tuple) else (fill_value,) * columns
    if len(values) != columns or any(np.ndim(v) != 0 for v in values if not isinstance(v, Tracer)):
        raise ValueError(
            f"{op_name}: fill_value must be a scalar or a tuple of length {columns}; got "
            f"{fill_value}"
        )
    return tuple(_static_scalar(f"{op_name} fill_value", v) for v in values)  # type: ignore[misc]


def _ndim(op_name: str, a: object) -> int:
    ndim = _rank(a)
    if ndim is None:
        raise TraceError(
            f"{op_name} needs the rank of its argument; give it one with relax.match_cast"
        )
    return ndim


def _indices(op_name: str, a: object, size: object, fill_value: object, columns: int):
    fills = _fills(op_name, fill_value, columns)
    length = _size(op_name, size, a)
    attrs = NonzeroAttrs(length, fills, index_dtype(fills, _shape(a)))
    return emit(op_name, (a,), attrs)


# --------------------------------------------------------------------------- wrappers


def count_nonzero(a, axis=None, keepdims=False):
    """``jnp.count_nonzero``: the number of nonzero elements over ``axis`` (int64)."""
    axes = _axes_or_none("count_nonzero", axis, _rank(a))
    return emit("count_nonzero", (a,), CountAttrs(axes, keepdims))


def nonzero(a, *, size=None, fill_value=None):
    """``jnp.nonzero``: one int64 index array per axis, of the data-dependent length ``k``
    (a fresh symbol, ``0 <= k <= a.size``), or of length ``size`` (truncated, or padded
    with ``fill_value``: a scalar or one per axis, default 0)."""
    return _indices("nonzero", a, size, fill_value, _ndim("nonzero", a))


def argwhere(a, *, size=None, fill_value=None):
    """``jnp.argwhere``: the indices of the nonzero elements as the rows of a ``(k, ndim)``
    matrix (``size``/``fill_value`` as in :func:`nonzero`)."""
    return _indices("argwhere", a, size, fill_value, _ndim("argwhere", a))


def flatnonzero(a, *, size=None, fill_value=None):
    """``jnp.flatnonzero``: the row-major flat indices of the nonzero elements."""
    return _indices("flatnonzero", a, size, fill_value, 1)


def compress(condition, a, axis=None, *, size=None, fill_value=0, out=None):
    """``jnp.compress``: the slices of ``a`` along ``axis`` (None: of the flattened array)
    where ``condition`` (1-d, nonzero is true) holds. Entries of ``condition`` beyond the
    axis are ignored (jax under jit; eagerly a true one raises), and the axis beyond
    ``condition`` is dropped. With ``size``, the first ``size`` slices, then slices of
    ``fill_value``."""
    _no_out("compress", out)
    if _rank(condition) != 1:
        raise ValueError("condition must be a 1D array")
    if axis is None:
        a, axis = emit("reshape", (a,), ReshapeAttrs((-1,))), 0
    else:
        axis = _axes_or_none("compress", axis, _ndim("compress", a))[0]  # type: ignore[index]
    length = _shape(a)[axis]
    available = _shape(condition)[0]
    if arith.compare(available, ">=", length) is not True:  # only the first len(condition)
        a = _prefix(a, axis, available)
    if arith.compare(available, "<=", length) is not True:
        if not isinstance(condition, Tracer) and np.any(np.asarray(condition)[length:]):
            raise ValueError("condition contains entries that are out of bounds")
        condition = _prefix(condition, 0, length)
    if _dtype(condition) != "bool":
        condition = emit("not_equal", (condition, 0))
    if size is None:
        return take_masked(a, condition, axis)
    kept = _shape(condition)[0]
    length = _size("compress", size, condition)
    if arith.compare(length, ">", kept) is True:
        raise ValueError(
            "size must be positive and not greater than the size of the array axis; got "
            f"size={length} for a.shape[axis]={kept}"
        )
    fill = _static_scalar("compress fill_value", fill_value)
    # positions past the last selected slice point outside the axis: take fills them
    outside = (np.iinfo(np.int64).max,)
    positions = emit("flatnonzero", (condition,), NonzeroAttrs(length, outside, "int64"))
    return emit("take", (a, positions), TakeAttrs(axis, "fill", fill))


def _dtype(x: object) -> str:
    if isinstance(x, Tracer):
        return x.dtype
    return str(np.asarray(x).dtype)


def _prefix(a: object, axis: int, stop: Dim) -> object:
    """``a[..., :stop, ...]`` along ``axis``."""
    return getitem(a, (slice(None),) * axis + (slice(None, stop),))


def unique(
    ar,
    return_index=False,
    return_inverse=False,
    return_counts=False,
    axis=None,
    *,
    equal_nan=True,
    size=None,
    fill_value=None,
    sorted=True,  # noqa: A002 - jax.numpy's name (unused there too)
):
    """``jnp.unique``: the sorted distinct elements (``axis=None``, of the flattened
    array) or slices along ``axis``, and optionally the ``index`` of each one's first
    occurrence, the ``inverse`` (each element's position among them: ``ar``'s shape for
    ``axis=None``, as jax 0.10) and the ``counts``. NaNs sort last and are one value with
    ``equal_nan``. Without ``size`` their number is a fresh symbol ``0 <= k <= n``; with
    it, the first ``size`` are kept, padded with ``fill_value`` (default: the smallest
    value), indices with the smallest value's index and counts with 0."""
    ndim = _ndim("unique", ar)
    shape = _shape(ar)  # binds names for the dims of a rank-only tensor
    if axis is not None:
        axis = _axes_or_none("unique", axis, ndim)[0]  # type: ignore[index]
    count = _count(ar) if axis is None else shape[axis]
    fill = _static_scalar("unique fill_value", fill_value)
    if size is not None:
        size = _size("unique", size, ar)
        if count == 0 and arith.compare(size, ">", 0) is True and fill is None:
            raise ValueError(
                "jnp.unique: for zero-sized input with nonzero size argument, fill_value "
                "must be specified"
            )
    perm = emit("sort_permutation", (ar,), SortAttrs(axis))
    if size is None:
        attrs = UniqueCountAttrs(axis, equal_nan)
        size = data_dependent_size("unique_count", (ar, perm), attrs, count)
    flags = (bool(return_index), bool(return_inverse), bool(return_counts))
    attrs = UniqueAttrs(size, axis, equal_nan, fill, *flags)
    result = emit("unique", (ar, perm), attrs)
    return result[0] if not any(flags) else tuple(result)
