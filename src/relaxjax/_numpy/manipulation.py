"""Array manipulation with jax.numpy's names and semantics: reversing, rolling and rotating
(``flip fliplr flipud roll rot90``), repeating (``repeat tile resize``), moving axes
(``moveaxis rollaxis permute_dims matrix_transpose ravel``) and broadcasting
(``broadcast_arrays broadcast_shapes atleast_1d atleast_2d atleast_3d``). Joining and
splitting are in :mod:`relaxjax._numpy.joining`, inserting and deleting entries in
:mod:`relaxjax._numpy.entries`.

Each is a composition of the existing ops (strided slices, gathers, reshapes,
broadcasts) that keeps symbolic dims exact: ``roll`` of ``(n, 4)`` is ``(n, 4)``,
``repeat(x, 3, axis=0)`` is ``(n * 3, 4)``. ``repeat`` by traced counts has a
data-dependent length, a fresh symbol as for ``nonzero`` (see
:mod:`relaxjax._numpy.datadep`).

>>> import relaxjax as relax, relaxjax.numpy as rnp
>>> relax.eval_shape(lambda x: rnp.repeat(x, 3, axis=0), relax.Tensor(("n", 4), "float32"))
Tensor((n * 3, 4), "float32")
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from relaxjax import arith
from relaxjax._numpy.arraylike import (
    array_operand,
    dtype_of,
    joined_operands,
    ndim_of,
    reshaped,
    shape_of,
    size_of,
    static_index,
)
from relaxjax._numpy.core import arange, asarray, zeros
from relaxjax._numpy.shape import (
    broadcast_to,
    expand_dims,
    getitem,
    transpose,
)
from relaxjax.errors import TraceError
from relaxjax.ops.axes import normalize_axes
from relaxjax.ops.base import normalize_axis
from relaxjax.ops.index import StridedSliceAttrs, TakeAttrs
from relaxjax.ops.linalg import common_size
from relaxjax.ops.pad import PadAttrs
from relaxjax.ops.repeat import RepeatAttrs
from relaxjax.trace import Tracer, data_dependent_size, emit

Dim = arith.Dim

__all__ = [
    "atleast_1d",
    "atleast_2d",
    "atleast_3d",
    "broadcast_arrays",
    "broadcast_shapes",
    "flip",
    "fliplr",
    "flipud",
    "matrix_transpose",
    "moveaxis",
    "permute_dims",
    "ravel",
    "repeat",
    "resize",
    "roll",
    "rollaxis",
    "rot90",
    "tile",
]


# --------------------------------------------------------------------------- helpers


def axes_arg(op_name: str, axis: object, ndim: int) -> tuple[int, ...]:
    """``axis`` (an int or a sequence of ints) normalised, in the order given."""
    if isinstance(axis, Sequence) and not isinstance(axis, str):
        axes = tuple(static_index(a, f"{op_name} axis") for a in axis)
    else:
        axes = (static_index(axis, f"{op_name} axis"),)
    return normalize_axes(op_name, axes, ndim)


def single_axis(op_name: str, axis: object, ndim: int) -> int:
    return normalize_axis(op_name, static_index(axis, f"{op_name} axis"), ndim)


def index_along(x: object, axis: int, index: object) -> object:
    """``x[..., index, ...]`` with ``index`` (an int, a slice or an index array) at ``axis``."""
    return getitem(x, (slice(None),) * axis + (index,))


def gather(x: object, indices: object, axis: int, mode: str = "index") -> object:
    return emit("take", (x, indices), TakeAttrs(axis, mode))


def array_sequence(op_name: str, arrays: object) -> list:
    """The operands of a joining function: a sequence, or an array's slices along axis 0."""
    if isinstance(arrays, (Tracer, np.ndarray)):
        if ndim_of(arrays) == 0:
            raise ValueError(f"{op_name}: expected a sequence of arrays, got a 0-d array")
        return list(arrays)
    if not isinstance(arrays, Sequence) or isinstance(arrays, str):
        raise TypeError(f"{op_name}: expected a sequence of arrays, got {arrays!r}")
    if not arrays:
        raise ValueError(f"{op_name}: need at least one array to concatenate")
    return joined_operands(arrays)


def at_least_rank(x: object, ndim: int) -> object:
    """``x`` with leading size-1 axes up to rank ``ndim``."""
    x = array_operand(x)
    shape = shape_of(x)
    if len(shape) >= ndim:
        return x
    return reshaped(x, (1,) * (ndim - len(shape)) + shape)


def _one_or_list(results: list) -> object:
    return results[0] if len(results) == 1 else results


# --------------------------------------------------------------------------- reversing


def flip(m, axis=None):
    """``jnp.flip``: reverse the order of the elements along ``axis`` (all axes if None)."""
    m = array_operand(m)
    ndim = ndim_of(m, "flip")
    axes = tuple(range(ndim)) if axis is None else axes_arg("flip", axis, ndim)
    if not axes:
        return m
    count = len(axes)
    attrs = StridedSliceAttrs(axes, (None,) * count, (None,) * count, (-1,) * count)
    return emit("strided_slice", (m,), attrs)


def fliplr(m):
    """``jnp.fliplr``: reverse axis 1 (the array must be at least 2-d)."""
    m = array_operand(m)
    if ndim_of(m, "fliplr") < 2:
        raise ValueError(
            f"fliplr requires an array of at least 2 dimensions, got shape {shape_of(m)}"
        )
    return flip(m, 1)


def flipud(m):
    """``jnp.flipud``: reverse axis 0 (the array must be at least 1-d)."""
    m = array_operand(m)
    if ndim_of(m, "flipud") < 1:
        raise ValueError(
            f"flipud requires an array of at least 1 dimension, got shape {shape_of(m)}"
        )
    return flip(m, 0)


def roll(a, shift, axis=None):
    """``jnp.roll``: shift the elements along ``axis`` cyclically by ``shift``.

    ``shift`` is an int, a symbolic dim, a sequence of them (one per axis of ``axis``) or
    a traced integer scalar or 1-d array (jax's dynamic roll). ``axis=None`` rolls the
    flattened array. Each axis is one gather of ``(arange(n) - shift) mod n``.
    """
    a = array_operand(a)
    if axis is None:
        return reshaped(roll(ravel(a), shift, 0), shape_of(a))
    ndim = ndim_of(a, "roll")
    axes = axes_arg("roll", axis, ndim)
    shifts = _roll_shifts(shift, len(axes))
    if len(shifts) != len(axes):
        if len(axes) != 1:
            raise ValueError("'shift' and 'axis' arguments to roll must be scalars or 1D arrays")
        axes = axes * len(shifts)
    for ax, amount in zip(axes, shifts):
        n = shape_of(a)[ax]
        if isinstance(amount, int) and isinstance(n, int) and (n == 0 or amount % n == 0):
            continue
        a = gather(a, arange(n) - amount, ax, "wrap")
    return a


def _roll_shifts(shift: object, count: int) -> list:
    """The shift of each rolled axis: Python ints and dims, or traced scalars."""
    if isinstance(shift, Tracer):
        if shift.ndim == 0:
            return [shift] * count
        if shift.ndim != 1 or not isinstance(shift.shape[0], int):
            raise ValueError(
                "'shift' and 'axis' arguments to roll must be scalars or 1D arrays of a "
                f"static length, got shape {shift.shape}"
            )
        return [shift[i] for i in range(shift.shape[0])]
    if isinstance(shift, (int, np.integer, arith.Expr)) and not isinstance(shift, bool):
        return [shift if isinstance(shift, arith.Expr) else int(shift)] * count
    values = list(np.asarray(shift).ravel()) if not isinstance(shift, Sequence) else list(shift)
    result = []
    for value in values:
        if isinstance(value, (Tracer, arith.Expr)):
            result.append(value)
        else:
            result.append(static_index(value, "roll shift"))
    if len(result) == 1:
        return result * count
    return result


def rot90(m, k=1, axes=(0, 1)):
    """``jnp.rot90``: rotate by 90 degrees ``k`` times in the plane of ``axes``."""
    m = array_operand(m)
    ndim = ndim_of(m, "rot90")
    if ndim < 2:
        raise ValueError(
            "rot90 requires its first argument to have ndim at least two, but got first "
            f"argument of shape {shape_of(m)}, which has ndim {ndim}"
        )
    if len(axes) != 2:
        raise ValueError(f"rot90: axes must be a pair of axes, got {axes!r}")
    ax1, ax2 = (single_axis("rot90", a, ndim) for a in axes)
    if ax1 == ax2:
        raise ValueError("Axes must be different")
    k = static_index(k, "rot90 k") % 4
    if k == 0:
        return m
    if k == 2:
        return flip(m, (ax1, ax2))
    perm = list(range(ndim))
    perm[ax1], perm[ax2] = perm[ax2], perm[ax1]
    if k == 1:
        return transpose(flip(m, ax2), perm)
    return flip(transpose(m, perm), ax2)


# --------------------------------------------------------------------------- repeating


def tile(A, reps):
    """``jnp.tile``: ``A`` repeated ``reps[i]`` times along each axis (``reps`` ints or
    symbolic dims; a shorter ``A`` gets leading axes, shorter ``reps`` leading 1s)."""
    A = array_operand(A)
    reps = _dims_tuple("tile reps", reps)
    shape = shape_of(A)
    rank = max(len(shape), len(reps))
    shape = (1,) * (rank - len(shape)) + shape
    reps = (1,) * (rank - len(reps)) + reps
    A = reshaped(A, shape)
    if all(isinstance(r, int) and r == 1 for r in reps):
        return A
    interleaved = tuple(d for pair in zip((1,) * rank, shape) for d in pair)
    target = tuple(d for pair in zip(reps, shape) for d in pair)
    tiled = broadcast_to(reshaped(A, interleaved), target)
    return reshaped(tiled, tuple(r * d for r, d in zip(reps, shape)))


def _dims_tuple(what: str, value: object) -> tuple[Dim, ...]:
    if isinstance(value, (int, np.integer, arith.Expr)) and not isinstance(value, bool):
        value = (value,)
    if isinstance(value, Tracer) or not isinstance(value, (Sequence, np.ndarray)):
        raise TypeError(f"{what} must be ints or symbolic dims, got {value!r}")
    return tuple(d if isinstance(d, arith.Expr) else static_index(d, what) for d in value)


def repeat(a, repeats, axis=None, *, total_repeat_length=None):
    """``jnp.repeat``: each element (slice along ``axis``; of the flattened array when
    None) repeated ``repeats`` times.

    ``repeats`` is an int or a symbolic dim (one reshape of a broadcast), or one count per
    element: a static array (one gather of constant indices) or a traced one, whose total
    is data-dependent: a fresh symbol bound at run time, as for ``nonzero``. With
    ``total_repeat_length`` the result has that length, truncated or padded with the
    last element as in jax. Negative counts repeat 0 times.
    """
    a = array_operand(a)
    if axis is None:
        a, axis = ravel(a), 0
    if ndim_of(a, "repeat") == 0:
        a = reshaped(a, (1,))
    axis = single_axis("repeat", axis, ndim_of(a))
    n = shape_of(a)[axis]
    total = None if total_repeat_length is None else _static_dim(total_repeat_length)
    if isinstance(repeats, (int, np.integer, arith.Expr)) and not isinstance(repeats, bool):
        if total is None:
            return _repeat_each(a, repeats, axis)
        repeats = np.asarray([repeats]) if not isinstance(repeats, arith.Expr) else repeats
        if isinstance(repeats, arith.Expr):
            raise ValueError(
                "jnp.repeat with a non-constant `repeats` is supported only when "
                "`total_repeat_length` is None"
            )
    if isinstance(repeats, Tracer):
        return _repeat_traced(a, repeats, axis, n, total)
    counts = np.ravel(np.asarray(repeats))
    if counts.dtype.kind not in "iub" and counts.size:
        raise TypeError(f"repeat: repeats must be integers, got dtype {counts.dtype}")
    counts = np.maximum(counts.astype(np.int64), 0)
    if counts.size == 1:
        if total is None:
            return _repeat_each(a, int(counts[0]), axis)
        counts = np.broadcast_to(counts, (n,)) if isinstance(n, int) else counts
    if not isinstance(n, int):
        if counts.size != 1:
            raise TraceError(
                f"repeat: {counts.size} static counts for an axis of symbolic size {n}; "
                "pass them as a traced array (or one count)"
            )
        return _repeat_traced(a, asarray(counts), axis, n, total)
    if counts.size != n:
        raise ValueError(f"repeat: {counts.size} repeats for an axis of size {n}")
    indices = _static_repeat_indices(counts, total)
    return gather(a, indices, axis)


def _static_dim(value: object) -> Dim:
    if isinstance(value, arith.Expr):
        return value
    return static_index(value, "total_repeat_length")


def _repeat_each(a: object, count: Dim, axis: int) -> object:
    """Every slice along ``axis`` repeated ``count`` times: a broadcast of a new axis
    after ``axis``, merged into it."""
    if isinstance(count, int) and count < 0:
        raise ValueError(f"repeat: repeats must be non-negative, got {count}")
    shape = shape_of(a)
    expanded = expand_dims(a, axis + 1)
    target = shape[: axis + 1] + (count,) + shape[axis + 1 :]
    merged = shape[:axis] + (shape[axis] * count,) + shape[axis + 1 :]
    return reshaped(broadcast_to(expanded, target), merged)


def _static_repeat_indices(counts: np.ndarray, total: Dim | None) -> np.ndarray:
    """The gathered positions for static ``counts``: ``np.repeat``'s, or jax's with
    ``total_repeat_length`` (truncated, or padded with the last position)."""
    positions = np.repeat(np.arange(counts.size, dtype=np.int64), counts)
    if total is None:
        return positions
    if not isinstance(total, int):
        raise TraceError("repeat: a symbolic total_repeat_length needs traced repeats")
    padded = np.full(total, max(counts.size - 1, 0), np.int64)
    padded[: min(total, positions.size)] = positions[:total]
    return padded


def _repeat_traced(a: object, repeats: object, axis: int, n: Dim, total: Dim | None) -> object:
    """Repeats by counts known at run time: the total is a fresh symbol (or
    ``total_repeat_length``); the positions come from ``repeat_indices``."""
    counts = ravel(repeats)
    if dtype_of(counts) not in ("int8", "int16", "int32", "int64", "uint8", "bool"):
        raise TypeError(f"repeat: repeats must be integers, got dtype {dtype_of(counts)}")
    counts = broadcast_to(counts, (n,))
    if total is None:
        total = data_dependent_size("repeat_total", (counts,), None, None, "r")
    indices = emit("repeat_indices", (counts,), RepeatAttrs(total))
    return gather(a, indices, axis)


def resize(a, new_shape):
    """``jnp.resize``: the flattened ``a`` repeated cyclically to fill ``new_shape``
    (zeros when ``a`` is empty)."""
    a = array_operand(a)
    new_shape = _dims_tuple("resize new_shape", new_shape)
    if any(isinstance(d, int) and d < 0 for d in new_shape):
        raise ValueError("all elements of `new_shape` must be non-negative")
    flat = ravel(a)
    size = shape_of(flat)[0]
    new_size = math.prod(new_shape, start=1)
    if isinstance(size, int) and size == 0 or isinstance(new_size, int) and new_size == 0:
        return zeros(new_shape, dtype_of(a))
    padded = flat
    if not (isinstance(size, int) or arith.compare(size, ">=", 1) is True):
        padded = emit("pad", (flat,), PadAttrs(((0, 1),), 0))  # an empty `a` reads 0
    positions = arange(new_size) % arith.max_(size, 1)
    return reshaped(gather(padded, positions, 0), new_shape)


# --------------------------------------------------------------------------- axes


def moveaxis(a, source, destination):
    """``jnp.moveaxis``: move axes ``source`` to positions ``destination``."""
    a = array_operand(a)
    ndim = ndim_of(a, "moveaxis")
    src = axes_arg("moveaxis", source, ndim)
    dst = axes_arg("moveaxis", destination, ndim)
    if len(src) != len(dst):
        raise ValueError(f"Inconsistent number of elements: {len(src)} vs {len(dst)}")
    if len(set(src)) != len(src) or len(set(dst)) != len(dst):
        raise ValueError(f"moveaxis: repeated axis in source {source} or destination {destination}")
    perm = [i for i in range(ndim) if i not in src]
    for d, s in sorted(zip(dst, src)):
        perm.insert(d, s)
    if perm == list(range(ndim)):
        return a
    return transpose(a, perm)


def rollaxis(a, axis, start=0):
    """``jnp.rollaxis``: move ``axis`` to come before position ``start``."""
    a = array_operand(a)
    ndim = ndim_of(a, "rollaxis")
    axis = single_axis("rollaxis", axis, ndim)
    start = static_index(start, "rollaxis start")
    if not -ndim <= start <= ndim:
        raise ValueError(f"start={start} must satisfy {-ndim}<=start<={ndim}")
    if start < 0:
        start += ndim
    if start > axis:
        start -= 1
    return moveaxis(a, axis, start)


def permute_dims(a, /, axes):
    """``jnp.permute_dims`` (the array API's ``transpose``)."""
    return transpose(array_operand(a), axes)


def matrix_transpose(x, /):
    """``jnp.matrix_transpose``: exchange the last two axes."""
    x = array_operand(x)
    ndim = ndim_of(x, "matrix_transpose")
    if ndim < 2:
        raise ValueError(
            f"x must be at least two-dimensional for matrix_transpose; got ndim={ndim}"
        )
    perm = list(range(ndim))
    perm[-2], perm[-1] = perm[-1], perm[-2]
    return transpose(x, perm)


def ravel(a, order="C"):
    """``jnp.ravel``: the elements as a 1-d array in row-major (``"C"``) or column-major
    (``"F"``) order."""
    a = array_operand(a)
    if order == "F":
        a = transpose(a)
    elif order != "C":
        raise NotImplementedError(f"ravel: order={order!r} is not supported (only 'C' and 'F')")
    return reshaped(a, (size_of(a),))


# --------------------------------------------------------------------------- broadcasting


def broadcast_shapes(*shapes):
    """``jnp.broadcast_shapes``: the shape the given shapes broadcast to (ints and
    symbolic dims; an axis whose sizes are not proven compatible is their common size
    ``a * b // max(min(a, b), 1)``, which the ops using it check at run time)."""
    shapes = [
        _dims_tuple("broadcast_shapes", s)
        if not isinstance(s, tuple)
        else tuple(d if isinstance(d, arith.Expr) else static_index(d, "a shape") for d in s)
        for s in shapes
    ]
    if not shapes:
        return ()
    ndim = max(len(s) for s in shapes)
    padded = [(1,) * (ndim - len(s)) + s for s in shapes]
    result = []
    for axis in range(ndim):
        dims = [p[axis] for p in padded]
        static = {d for d in dims if isinstance(d, int) and d != 1}
        if len(static) > 1:
            raise ValueError(f"Incompatible shapes for broadcasting: shapes={list(shapes)}")
        result.append(common_size(dims))
    return tuple(result)


def broadcast_arrays(*args):
    """``jnp.broadcast_arrays``: every argument broadcast to their common shape (a list)."""
    arrays = [array_operand(a) for a in args]
    target = broadcast_shapes(*(shape_of(a) for a in arrays))
    return [a if shape_of(a) == target else broadcast_to(a, target) for a in arrays]


def atleast_1d(*arys):
    """``jnp.atleast_1d``: 0-d arrays become ``(1,)`` (one array, or a list of them)."""
    return _one_or_list([at_least_rank(x, 1) for x in arys])


def atleast_2d(*arys):
    """``jnp.atleast_2d``: leading size-1 axes up to rank 2."""
    return _one_or_list([at_least_rank(x, 2) for x in arys])


def atleast_3d(*arys):
    """``jnp.atleast_3d``: ``(n,)`` becomes ``(1, n, 1)`` and ``(n, m)`` ``(n, m, 1)``."""
    results = []
    for x in arys:
        x = array_operand(x)
        shape = shape_of(x)
        if len(shape) == 0:
            x = reshaped(x, (1, 1, 1))
        elif len(shape) == 1:
            x = reshaped(x, (1, shape[0], 1))
        elif len(shape) == 2:
            x = reshaped(x, shape + (1,))
        results.append(x)
    return _one_or_list(results)
