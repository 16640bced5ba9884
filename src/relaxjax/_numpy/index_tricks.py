"""Diagonals, triangles and index arrays with jax.numpy's names and semantics: ``diagonal``
(one op), ``diag diagflat trace``, ``tril_indices triu_indices`` (and ``_from``),
``diag_indices`` (and ``_from``), ``mask_indices``, ``ix_``, ``ravel_multi_index``,
``unravel_index`` and the index objects ``s_ index_exp r_ c_ mgrid ogrid``.

Sizes may be symbolic: ``tril_indices(n)`` has ``n * (n + 1) // 2`` indices (jax's
closed form, with ``min``/``max`` for offsets), ``mgrid[0:n, 0:m]`` is ``(2, n, m)``.
With static sizes the index arrays are numpy constants, as jax computes them.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from relaxjax import arith, dtypes
from relaxjax._numpy.arraylike import (
    array_operand,
    astype,
    converted,
    dtype_of,
    is_weak,
    ndim_of,
    promoted,
    reshaped,
    shape_of,
    static_index,
)
from relaxjax._numpy.core import arange, asarray, ones, where, zeros
from relaxjax._numpy.datadep import nonzero
from relaxjax._numpy.manipulation import at_least_rank, ravel
from relaxjax._numpy.reduction import sum as _sum
from relaxjax._numpy.shape import broadcast_to, concatenate, expand_dims, pad, transpose
from relaxjax.errors import TraceError
from relaxjax.ops.diagonal import DiagonalAttrs
from relaxjax.ops.elementwise import ClipAttrs
from relaxjax.trace import Tracer, emit

Dim = arith.Dim

__all__ = [
    "c_",
    "diag",
    "diag_indices",
    "diag_indices_from",
    "diagflat",
    "diagonal",
    "index_exp",
    "ix_",
    "mask_indices",
    "mgrid",
    "ogrid",
    "r_",
    "ravel_multi_index",
    "s_",
    "trace",
    "tril_indices",
    "tril_indices_from",
    "triu_indices",
    "triu_indices_from",
    "unravel_index",
]

#: numpy's index-expression builders (jax.numpy exports these very objects).
s_ = np.s_
index_exp = np.index_exp


# --------------------------------------------------------------------------- diagonals


def diagonal(a, offset=0, axis1=0, axis2=1):
    """``jnp.diagonal``: the diagonal ``offset`` of the plane ``(axis1, axis2)`` as the
    last axis (the two axes removed)."""
    a = array_operand(a)
    if ndim_of(a, "diagonal") < 2:
        raise ValueError("diagonal requires an array of at least two dimensions.")
    attrs = DiagonalAttrs(
        static_index(offset, "'offset' argument of jnp.diagonal()"),
        static_index(axis1, "diagonal axis1"),
        static_index(axis2, "diagonal axis2"),
    )
    result = emit("diagonal", (a,), attrs)
    shape = shape_of(a)
    if (
        is_weak(a)
        and len(shape) == 2
        and attrs.offset == 0
        and dtype_of(a) != "bool"
        and arith.compare(shape[0], "==", shape[1]) is True
    ):
        return astype(result, dtype_of(a))  # jax sums with a strong identity matrix there
    return result


def trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    """``jnp.trace``: the sum of ``diagonal(a, offset, axis1, axis2)`` (in ``dtype``)."""
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.trace is not supported.")
    return _sum(diagonal(a, offset, axis1, axis2), axis=-1, dtype=dtype)


def diag(v, k=0):
    """``jnp.diag``: the diagonal ``k`` of a matrix, or the square matrix with a vector
    on diagonal ``k`` (size ``len(v) + abs(k)``)."""
    v = array_operand(v)
    k = static_index(k, "diag k")
    ndim = ndim_of(v, "diag")
    if ndim == 2:
        return diagonal(v, k)
    if ndim != 1:
        raise ValueError("diag input must be 1d or 2d")
    size = shape_of(v)[0] + abs(k)
    padded = pad(v, ((max(0, -k), max(0, k)),))
    rows = reshaped(arange(size), (size, 1))
    on_diagonal = reshaped(arange(size), (1, size)) - rows == k
    zero = astype(0, dtype_of(v))
    return where(on_diagonal, reshaped(padded, (size, 1)), zero)


def diagflat(v, k=0):
    """``jnp.diagflat``: ``diag`` of the flattened ``v``."""
    return diag(ravel(array_operand(v)), k)


# --------------------------------------------------------------------------- triangles


def _triu_size(n: Dim, m: Dim, k: int) -> Dim:
    """The number of positions ``j >= i + k`` of an ``n x m`` grid (jax's closed form)."""
    if k < 0:
        return n * m - _triu_size(m, n, 1 - k)
    mk = arith.max_(0, arith.min_(n, m - k))
    return arith.floordiv(mk * (mk + 1), 2) + mk * (m - k - mk)


def _triangle_indices(name: str, n: object, k: object, m: object, lower: bool):
    n = _size_arg(f"n argument of jnp.{name}", n)
    k = static_index(k, f"k argument of jnp.{name}")
    m = n if m is None else _size_arg(f"m argument of jnp.{name}", m)
    if isinstance(n, int) and isinstance(m, int):
        rows, columns = (np.tril_indices if lower else np.triu_indices)(n, k, m)
        return asarray(rows.astype(np.int64)), asarray(columns.astype(np.int64))
    offsets = reshaped(arange(m), (1, m)) - reshaped(arange(n), (n, 1))
    mask = offsets <= k if lower else offsets >= k
    count = _triu_size(m, n, -k) if lower else _triu_size(n, m, k)
    return nonzero(mask, size=count)


def _size_arg(what: str, value: object) -> Dim:
    if isinstance(value, arith.Expr):
        return value
    value = static_index(value, what)
    if value < 0:
        raise ValueError(f"{what} must be non-negative, got {value}")
    return value


def tril_indices(n, k=0, m=None):
    """``jnp.tril_indices``: the row and column indices of the positions on and below
    diagonal ``k`` of an ``n x m`` array (sizes may be symbolic)."""
    return _triangle_indices("tril_indices", n, k, m, lower=True)


def triu_indices(n, k=0, m=None):
    """``jnp.triu_indices``: the indices of the positions on and above diagonal ``k``."""
    return _triangle_indices("triu_indices", n, k, m, lower=False)


def _matrix_shape(name: str, arr: object) -> tuple[Dim, Dim]:
    shape = tuple(getattr(arr, "shape", ())) if not isinstance(arr, Tracer) else shape_of(arr)
    if len(shape) != 2:
        raise ValueError(f"jnp.{name} requires a 2-dimensional array, got shape {shape}")
    return shape


def tril_indices_from(arr, k=0):
    """``jnp.tril_indices_from``: ``tril_indices`` of a 2-d array's shape."""
    rows, columns = _matrix_shape("tril_indices_from", arr)
    return tril_indices(rows, k, columns)


def triu_indices_from(arr, k=0):
    """``jnp.triu_indices_from``: ``triu_indices`` of a 2-d array's shape."""
    rows, columns = _matrix_shape("triu_indices_from", arr)
    return triu_indices(rows, k, columns)


def diag_indices(n, ndim=2):
    """``jnp.diag_indices``: ``ndim`` copies of ``arange(n)`` (int64)."""
    n = _size_arg("n argument to diag_indices", n)
    ndim = static_index(ndim, "'ndim' argument of jnp.diag_indices()")
    if ndim < 0:
        raise ValueError(f"ndim argument to diag_indices must be nonnegative, got {ndim}")
    return (arange(n),) * ndim


def diag_indices_from(arr):
    """``jnp.diag_indices_from``: the main diagonal's indices of an array whose axes all
    have one length (at least 2-d)."""
    shape = tuple(getattr(arr, "shape", ())) if not isinstance(arr, Tracer) else shape_of(arr)
    if len(shape) < 2:
        raise ValueError("input array must be at least 2-d")
    if any(arith.compare(d, "==", shape[0]) is not True for d in shape[1:]):
        raise ValueError("All dimensions of input must be of equal length")
    return diag_indices(shape[0], len(shape))


def mask_indices(n, mask_func, k=0, *, size=None):
    """``jnp.mask_indices``: the indices where ``mask_func(ones((n, n)), k)`` is nonzero
    (a data-dependent count unless ``size``)."""
    mask = mask_func(ones((_size_arg("n", n), _size_arg("n", n))), k)
    return nonzero(mask, size=size)


# --------------------------------------------------------------------------- index arrays


def ix_(*args):
    """``jnp.ix_``: 1-d integer arrays reshaped to broadcast against each other as an
    open mesh (array ``i`` along axis ``i``)."""
    count = len(args)
    output = []
    for i, a in enumerate(args):
        a = array_operand(a)
        shape = shape_of(a)
        if len(shape) != 1:
            raise ValueError(f"Arguments to jax.numpy.ix_ must be 1-dimensional, got shape {shape}")
        if dtype_of(a) == "bool":
            raise NotImplementedError("Boolean arguments to jax.numpy.ix_ are not implemented")
        target = tuple(shape[0] if j == i else 1 for j in range(count))
        if isinstance(shape[0], int) and shape[0] == 0:
            output.append(zeros(target, "int64"))
        else:
            output.append(reshaped(a, target))
    return tuple(output)


def ravel_multi_index(multi_index, dims, mode="raise", order="C", *, dtype=None):
    """``jnp.ravel_multi_index``: flat indices of the index arrays ``multi_index`` into an
    array of shape ``dims`` (ints or symbolic dims). ``mode`` ``"clip"`` or ``"wrap"``
    handles out-of-range indices; ``"raise"`` needs the indices known while tracing."""
    if len(multi_index) != len(dims):
        raise ValueError(f"len(multi_index)={len(multi_index)} != len(dims)={len(dims)}")
    dims = tuple(_size_arg("dims of ravel_multi_index", d) for d in dims)
    indices = [array_operand(i) for i in multi_index]
    dtype = promoted(0, *indices) if dtype is None else dtypes.canonical(dtype)
    if not dtypes.is_integer(dtype):
        raise ValueError(f"dtype={dtype} is not an integer type.")
    for index in indices:
        if not dtypes.is_integer(dtype_of(index)):
            raise TypeError("only int indices permitted")
    if mode == "raise":
        _check_in_range(indices, dims)
    elif mode == "clip":
        indices = [
            emit("clip", (i, 0, d - 1), ClipAttrs(has_min=True, has_max=True))
            for i, d in zip(indices, dims)
        ]
    elif mode == "wrap":
        indices = [i % d for i, d in zip(indices, dims)]
    elif mode != "ignore":
        raise ValueError(f"invalid mode={mode!r}. Expected 'raise', 'wrap', 'clip', or 'ignore'.")
    if order not in ("C", "F"):
        raise ValueError(f"invalid order={order!r}. Expected 'C' or 'F'")
    strides = _strides(dims, order)
    result = astype(0, dtype)
    for index, stride in zip(indices, strides):
        result = result + astype(index, dtype) * stride
    return result


def _check_in_range(indices: Sequence[object], dims: Sequence[Dim]) -> None:
    for index, dim in zip(indices, dims):
        if isinstance(index, Tracer):
            raise TraceError(
                "ravel_multi_index with mode='raise' needs the indices known while tracing; "
                "use mode='wrap' or mode='clip' instead"
            )
        if not isinstance(dim, int):
            continue
        values = np.asarray(index)
        if np.any((values < 0) | (values >= dim)):
            raise ValueError("invalid entry in coordinates array")


def _strides(dims: Sequence[Dim], order: str) -> list[Dim]:
    strides: list[Dim] = []
    stride: Dim = 1
    for dim in reversed(dims) if order == "C" else dims:
        strides.append(stride)
        stride = stride * dim
    return strides[::-1] if order == "C" else strides


def unravel_index(indices, shape):
    """``jnp.unravel_index``: the index arrays into ``shape`` (ints or symbolic dims) of
    flat ``indices``; out-of-range ones are clamped to the first or last element."""
    indices = array_operand(indices)
    shape = list(shape) if isinstance(shape, Sequence) else [shape]
    shape = [_size_arg("unravel_index shape", s) for s in shape]
    out: list[object] = [0] * len(shape)
    rest = indices
    for i in range(len(shape) - 1, -1, -1):
        out[i] = rest % shape[i]
        rest = rest // shape[i]
    above = rest > 0
    below = rest < -1 if not dtypes.is_unsigned(dtype_of(indices)) else None
    result = []
    for s, index in zip(shape, out):
        clamped = index if below is None else where(below, 0, index)
        result.append(where(above, s - 1, clamped))
    return tuple(result)


# --------------------------------------------------------------------------- index objects


def _grid_1d(item: slice, name: str) -> object:
    """The 1-d grid of a slice: ``arange(start, stop, step)``, or ``linspace`` with
    ``abs(step)`` points when the step is imaginary."""
    start = 0 if item.start is None else item.start
    stop, step = item.stop, 1 if item.step is None else item.step
    for bound in (start, stop, step):
        if isinstance(bound, Tracer):
            raise TraceError(f"jnp.{name}: slice bounds must be static, got a traced value")
    if isinstance(step, complex):
        count = int(abs(step))
        if count == 1:
            return asarray(np.asarray([float(start)]))
        fractions = arange(count) * ((stop - start) / max(count - 1, 1))
        return astype(fractions + start, "float64")
    return arange(start, stop, step)


class _Grid:
    """``mgrid[...]`` (dense) and ``ogrid[...]`` (open): the index grids of slices."""

    def __init__(self, name: str, sparse: bool) -> None:
        self._name = name
        self._sparse = sparse

    def __getitem__(self, key: slice | tuple[slice, ...]) -> object:
        if isinstance(key, slice):
            return _grid_1d(key, self._name)
        axes = [_grid_1d(k, self._name) for k in key]
        if not axes:
            return [] if self._sparse else arange(0)
        axes = converted(*axes)
        lengths = tuple(shape_of(a)[0] for a in axes)
        count = len(axes)
        opened = [
            reshaped(a, tuple(n if j == i else 1 for j in range(count)))
            for i, (a, n) in enumerate(zip(axes, lengths))
        ]
        if self._sparse:
            return opened
        return _stack([broadcast_to(o, lengths) for o in opened])

    def __repr__(self) -> str:
        return f"relaxjax.numpy.{self._name}"


def _stack(arrays: list) -> object:
    return concatenate([expand_dims(a, 0) for a in arrays], axis=0)


mgrid = _Grid("mgrid", sparse=False)
ogrid = _Grid("ogrid", sparse=True)


class _AxisConcat:
    """``r_[...]`` and ``c_[...]``: concatenate slices (as grids), scalars and arrays,
    with numpy's string directives (``"axis,ndmin,trans1d"``, ``"r"``, ``"c"``)."""

    def __init__(self, name: str, axis: int, ndmin: int, trans1d: int) -> None:
        self._name = name
        self._params = (axis, ndmin, trans1d)

    def __getitem__(self, key: object) -> object:
        items = key if isinstance(key, tuple) else (key,)
        axis, ndmin, trans1d, matrix = self._directive(items[0])
        if isinstance(items[0], str):
            items = items[1:]
        output = []
        for item in items:
            if isinstance(item, str):
                raise ValueError("string directive must be placed at the beginning")
            if isinstance(item, slice):
                value, item_ndim = _grid_1d(item, self._name), 0
            else:
                value = _strong(array_operand(item))
                item_ndim = ndim_of(value)
            value = at_least_rank(value, ndmin)
            if trans1d != -1 and ndmin - item_ndim > 0:
                order = tuple(range(ndmin))
                shifts = ndmin - abs(ndmin + trans1d + 1) % ndmin
                value = transpose(value, order[shifts:] + order[:shifts])
            output.append(value)
        result = concatenate(converted(*output), axis=axis)
        if matrix != -1 and ndim_of(result) == 1:
            result = expand_dims(result, matrix)
        return result

    def _directive(self, first: object) -> tuple[int, int, int, int]:
        axis, ndmin, trans1d = self._params
        if not isinstance(first, str):
            return axis, ndmin, trans1d, -1
        if first in ("r", "c"):
            return axis, ndmin, trans1d, 0 if first == "r" else 1
        fields = first.split(",")
        defaults = [axis, ndmin, trans1d]
        fields = fields[:3] + [str(d) for d in defaults[len(fields) :]]
        try:
            return (*map(int, fields), -1)
        except ValueError as err:
            raise ValueError(f"could not understand directive {first!r}") from err

    def __len__(self) -> int:
        return 0

    def __repr__(self) -> str:
        return f"relaxjax.numpy.{self._name}"


def _strong(value: object) -> object:
    """A Python scalar as the array jax's ``array()`` makes of it (int64, float64, bool)."""
    if isinstance(value, (bool, int, float)):
        return asarray(value)
    return value


r_ = _AxisConcat("r_", 0, 1, -1)
c_ = _AxisConcat("c_", -1, 2, 0)
