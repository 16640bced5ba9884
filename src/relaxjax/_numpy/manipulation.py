"""Array manipulation with jax.numpy's names and semantics: reversing, rolling and rotating
(``flip roll rot90``), repeating (``repeat tile resize``), moving axes (``moveaxis rollaxis
permute_dims matrix_transpose ravel``), joining and splitting (``hstack vstack dstack
column_stack concat block append array_split hsplit vsplit dsplit unstack``), broadcasting
(``broadcast_arrays broadcast_shapes atleast_1d atleast_2d atleast_3d``) and inserting or
deleting entries (``insert delete trim_zeros``).

Each is a composition of the existing ops (strided slices, gathers, reshapes,
broadcasts, concatenations) that keeps symbolic dims exact: ``roll`` of ``(n, 4)`` is
``(n, 4)``, ``repeat(x, 3, axis=0)`` is ``(n * 3, 4)``, ``array_split`` of ``n`` rows
into 3 has pieces ``(n + 2) // 3``, ``(n + 1) // 3`` and ``n // 3``. Sizes that depend on
the data (``repeat`` by traced counts, ``trim_zeros``, ``delete`` of traced indices)
are fresh bounded symbols, as for ``nonzero`` (see :mod:`relaxjax._numpy.datadep`).

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
    astype,
    dtype_of,
    is_static,
    ndim_of,
    promoted,
    reshaped,
    shape_of,
    size_of,
    static_index,
)
from relaxjax._numpy.core import arange, asarray, where, zeros
from relaxjax._numpy.datadep import compress
from relaxjax._numpy.mask import take_masked
from relaxjax._numpy.reduction import max as _max
from relaxjax._numpy.shape import (
    broadcast_to,
    concatenate,
    expand_dims,
    getitem,
    split,
    transpose,
)
from relaxjax.errors import TraceError
from relaxjax.ir import TensorInfo
from relaxjax.ops.axes import normalize_axes
from relaxjax.ops.base import normalize_axis
from relaxjax.ops.index import StridedSliceAttrs, TakeAttrs
from relaxjax.ops.linalg import common_size
from relaxjax.ops.pad import PadAttrs
from relaxjax.ops.repeat import RepeatAttrs
from relaxjax.trace import Tracer, current, data_dependent_size, emit, match_cast

Dim = arith.Dim

__all__ = [
    "append",
    "array_split",
    "atleast_1d",
    "atleast_2d",
    "atleast_3d",
    "block",
    "broadcast_arrays",
    "broadcast_shapes",
    "column_stack",
    "concat",
    "delete",
    "dsplit",
    "dstack",
    "flip",
    "fliplr",
    "flipud",
    "hsplit",
    "hstack",
    "insert",
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
    "trim_zeros",
    "unstack",
    "vsplit",
    "vstack",
]


# --------------------------------------------------------------------------- helpers


def _axes(op_name: str, axis: object, ndim: int) -> tuple[int, ...]:
    """``axis`` (an int or a sequence of ints) normalised, in the order given."""
    if isinstance(axis, Sequence) and not isinstance(axis, str):
        axes = tuple(static_index(a, f"{op_name} axis") for a in axis)
    else:
        axes = (static_index(axis, f"{op_name} axis"),)
    return normalize_axes(op_name, axes, ndim)


def _axis(op_name: str, axis: object, ndim: int) -> int:
    return normalize_axis(op_name, static_index(axis, f"{op_name} axis"), ndim)


def _index_along(x: object, axis: int, index: object) -> object:
    """``x[..., index, ...]`` with ``index`` (an int, a slice or an index array) at ``axis``."""
    return getitem(x, (slice(None),) * axis + (index,))


def _take(x: object, indices: object, axis: int, mode: str = "index") -> object:
    return emit("take", (x, indices), TakeAttrs(axis, mode))


def _sequence(op_name: str, arrays: object) -> list:
    """The operands of a joining function: a sequence, or an array's slices along axis 0."""
    if isinstance(arrays, (Tracer, np.ndarray)):
        if ndim_of(arrays) == 0:
            raise ValueError(f"{op_name}: expected a sequence of arrays, got a 0-d array")
        return list(arrays)
    if not isinstance(arrays, Sequence) or isinstance(arrays, str):
        raise TypeError(f"{op_name}: expected a sequence of arrays, got {arrays!r}")
    if not arrays:
        raise ValueError(f"{op_name}: need at least one array to concatenate")
    return _weak_scalars_converted([array_operand(a) for a in arrays])


def _weak_scalars_converted(operands: list) -> list:
    """Python scalars among joined operands as 0-d arrays of the promoted dtype: they
    promote weakly, as jax's weakly typed scalar arrays do."""
    if not any(isinstance(a, (bool, int, float)) for a in operands):
        return operands
    dtype = promoted(*operands)
    return [astype(a, dtype) if isinstance(a, (bool, int, float)) else a for a in operands]


def _atleast(x: object, ndim: int) -> object:
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
    axes = tuple(range(ndim)) if axis is None else _axes("flip", axis, ndim)
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
    axes = _axes("roll", axis, ndim)
    shifts = _roll_shifts(shift, len(axes))
    if len(shifts) != len(axes):
        if len(axes) != 1:
            raise ValueError("'shift' and 'axis' arguments to roll must be scalars or 1D arrays")
        axes = axes * len(shifts)
    for ax, amount in zip(axes, shifts):
        n = shape_of(a)[ax]
        if isinstance(amount, int) and isinstance(n, int) and (n == 0 or amount % n == 0):
            continue
        a = _take(a, arange(n) - amount, ax, "wrap")
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
    ax1, ax2 = (_axis("rot90", a, ndim) for a in axes)
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
    axis = _axis("repeat", axis, ndim_of(a))
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
    return _take(a, indices, axis)


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
    return _take(a, indices, axis)


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
    return reshaped(_take(padded, positions, 0), new_shape)


# --------------------------------------------------------------------------- axes


def moveaxis(a, source, destination):
    """``jnp.moveaxis``: move axes ``source`` to positions ``destination``."""
    a = array_operand(a)
    ndim = ndim_of(a, "moveaxis")
    src = _axes("moveaxis", source, ndim)
    dst = _axes("moveaxis", destination, ndim)
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
    axis = _axis("rollaxis", axis, ndim)
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


# --------------------------------------------------------------------------- joining


def concat(arrays, /, *, axis=0):
    """``jnp.concat`` (the array API's ``concatenate``)."""
    return concatenate(_sequence("concat", arrays), axis=axis)


def hstack(tup, dtype=None):
    """``jnp.hstack``: join along axis 1 (axis 0 for 1-d arrays)."""
    arrays = [_atleast(x, 1) for x in _sequence("hstack", tup)]
    return concatenate(arrays, axis=0 if ndim_of(arrays[0]) == 1 else 1, dtype=dtype)


def vstack(tup, dtype=None):
    """``jnp.vstack``: join along axis 0 after making every array at least 2-d."""
    return concatenate([_atleast(x, 2) for x in _sequence("vstack", tup)], axis=0, dtype=dtype)


def dstack(tup, dtype=None):
    """``jnp.dstack``: join along axis 2 after making every array at least 3-d."""
    return concatenate([atleast_3d(x) for x in _sequence("dstack", tup)], axis=2, dtype=dtype)


def column_stack(tup):
    """``jnp.column_stack``: 1-d arrays become columns, then join along axis 1."""
    arrays = []
    for x in _sequence("column_stack", tup):
        arrays.append(reshaped(x, (shape_of(x)[0], 1)) if ndim_of(x) == 1 else _atleast(x, 2))
    return concatenate(arrays, axis=1)


def append(arr, values, axis=None):
    """``jnp.append``: ``values`` after ``arr`` along ``axis`` (both flattened when None)."""
    arr, values = _weak_scalars_converted([array_operand(arr), array_operand(values)])
    if axis is None:
        return concatenate([ravel(arr), ravel(values)], axis=0)
    return concatenate([arr, values], axis=axis)


def block(arrays):
    """``jnp.block``: assemble an array from nested lists of blocks (the innermost lists
    join along the last axis, the next ones along the one before, ...)."""
    result, _, _ = _block(arrays)
    return result


def _block(xs: object) -> tuple[object, int, int]:
    """``(joined, list depth, rank)`` of a nested list of blocks."""
    if isinstance(xs, tuple):
        raise ValueError(f"jax.numpy.block does not allow tuples, got {xs}")
    if not isinstance(xs, list):
        x = array_operand(xs)
        return x, 0, ndim_of(x)
    if not xs:
        raise ValueError("jax.numpy.block does not allow empty list arguments")
    parts = [_block(x) for x in xs]
    depths = {depth for _, depth, _ in parts}
    if len(depths) != 1:
        raise ValueError("Mismatched list depths in jax.numpy.block")
    depth = depths.pop() + 1
    rank = max(depth, *(r for _, _, r in parts))
    joined = concatenate([_atleast(x, rank) for x, _, _ in parts], axis=-depth)
    return joined, depth, rank


# --------------------------------------------------------------------------- splitting


def array_split(ary, indices_or_sections, axis=0):
    """``jnp.array_split``: like ``split``, but ``sections`` need not divide the axis: the
    first ``size % sections`` pieces are one longer (piece ``i`` of a symbolic size ``n``
    has ``(n + sections - 1 - i) // sections`` entries)."""
    ary = array_operand(ary)
    ndim = ndim_of(ary, "array_split")
    axis = _axis("array_split", axis, ndim)
    if isinstance(indices_or_sections, arith.Expr):
        raise ValueError(
            "jax.numpy.array_split with a symbolic number of sections is not supported"
        )
    if isinstance(indices_or_sections, (int, np.integer)) and not isinstance(
        indices_or_sections, bool
    ):
        sections = int(indices_or_sections)
        if sections <= 0:
            raise ValueError("number sections must be larger than 0.")
        size = shape_of(ary)[axis]
        lengths = [arith.floordiv(size + sections - 1 - i, sections) for i in range(sections)]
        bounds = [sum(lengths[: i + 1], start=0) for i in range(sections - 1)]
        pieces = split(ary, bounds, axis=axis)
        return pieces[:-1] + [_with_length(pieces[-1], axis, lengths[-1])]
    return split(ary, indices_or_sections, axis=axis)


def _with_length(piece: object, axis: int, length: Dim) -> object:
    """``piece`` asserted to have ``length`` entries along ``axis``: the last piece of
    ``array_split`` is ``size - bound``, which arith does not simplify to its formula."""
    shape = list(shape_of(piece))
    if shape[axis] == length or current() is None:
        return piece
    shape[axis] = length
    return match_cast(piece, TensorInfo(tuple(shape), dtype_of(piece)))


def hsplit(ary, indices_or_sections):
    """``jnp.hsplit``: ``split`` along axis 1 (axis 0 for 1-d arrays)."""
    ary = array_operand(ary)
    ndim = ndim_of(ary, "hsplit")
    if ndim == 0:
        raise ValueError("hsplit only works on arrays of 1 or more dimensions")
    return split(ary, indices_or_sections, axis=1 if ndim > 1 else 0)


def vsplit(ary, indices_or_sections):
    """``jnp.vsplit``: ``split`` along axis 0 of an array of at least 2 dimensions."""
    ary = array_operand(ary)
    if ndim_of(ary, "vsplit") < 2:
        raise ValueError("vsplit only works on arrays of 2 or more dimensions")
    return split(ary, indices_or_sections, axis=0)


def dsplit(ary, indices_or_sections):
    """``jnp.dsplit``: ``split`` along axis 2 of an array of at least 3 dimensions."""
    ary = array_operand(ary)
    if ndim_of(ary, "dsplit") < 3:
        raise ValueError("dsplit only works on arrays of 3 or more dimensions")
    return split(ary, indices_or_sections, axis=2)


def unstack(x, /, *, axis=0):
    """``jnp.unstack``: the slices along ``axis`` as a tuple (the axis must be static)."""
    x = array_operand(x)
    ndim = ndim_of(x, "unstack")
    if ndim == 0:
        raise ValueError(
            "Unstack requires arrays with rank > 0, however a scalar array was passed."
        )
    axis = _axis("unstack", axis, ndim)
    count = shape_of(x)[axis]
    if not isinstance(count, int):
        raise TraceError(
            f"unstack: axis {axis} has the symbolic size {count}; a tuple needs a static length"
        )
    return tuple(_index_along(x, axis, i) for i in range(count))


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
    return _one_or_list([_atleast(x, 1) for x in arys])


def atleast_2d(*arys):
    """``jnp.atleast_2d``: leading size-1 axes up to rank 2."""
    return _one_or_list([_atleast(x, 2) for x in arys])


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
    axis = _axis("delete", axis, ndim_of(a, "delete"))
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
        return _take(a, np.flatnonzero(keep).astype(np.int64), axis)
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
    if not _provably_distinct(normalized) or current() is None:
        return result
    shape = list(shape_of(result))
    shape[axis] = n - len(normalized)
    return match_cast(result, TensorInfo(tuple(shape), dtype_of(result)))


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
        return _take(a, np.flatnonzero(keep).astype(np.int64), axis)
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
    axis = _axis("insert", axis, ndim)
    n = shape_of(a)[axis]
    scalar = not isinstance(obj, slice) and np.ndim(obj) == 0
    points, raw = _insert_indices(obj, n)
    values = astype(_atleast(array_operand(values), ndim), dtype_of(a))
    if len(points) == 1:
        if scalar:
            values = moveaxis(values, 0, axis) if ndim_of(values) > 0 else values
            values = _atleast(values, ndim)
        count = shape_of(values)[axis]
        if not isinstance(count, int):
            raise TraceError(f"insert: the number of inserted values {count} must be static")
        points, raw = points * count, raw * count
    target = list(shape_of(a))
    target[axis] = len(points)
    values = broadcast_to(values, tuple(target))
    positions = _insert_positions(points, _insertion_order(points, raw, n), n)
    return _take(concatenate([a, values], axis=axis), positions, axis)


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
    axes = tuple(range(ndim)) if axis is None else _axes("trim_zeros", axis, ndim)
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
