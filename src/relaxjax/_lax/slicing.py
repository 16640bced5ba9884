"""``relaxjax.lax``'s windows at run-time offsets: ``dynamic_slice`` and
``dynamic_update_slice`` (and their ``_in_dim`` / index forms).

Each records one op (:mod:`relaxjax.ops.dynamic_slice`); the starts are run-time integers
(traced scalars, Python ints, symbolic dims), clamped as jax clamps them. An update of a
value nothing reads afterwards is compiled in place (``passes.inplace_updates``).
"""

import builtins

from relaxjax import arith
from relaxjax.ops.dynamic_slice import DynamicSliceAttrs, DynamicUpdateSliceAttrs
from relaxjax.ops.manipulate import ExpandDimsAttrs, SqueezeAttrs
from relaxjax.trace.tracer import Tracer, emit

__all__ = [
    "dynamic_index_in_dim",
    "dynamic_slice",
    "dynamic_slice_in_dim",
    "dynamic_update_index_in_dim",
    "dynamic_update_slice",
    "dynamic_update_slice_in_dim",
]


def _ndim(x):
    if isinstance(x, Tracer):
        return x.ndim
    return builtins.len(getattr(x, "shape", ()))


def _shape(x):
    if isinstance(x, Tracer):
        return x.shape
    return tuple(getattr(x, "shape", ()))


def _flags(allow_negative_indices, count):
    if isinstance(allow_negative_indices, bool):
        return (allow_negative_indices,) * count
    flags = tuple(builtins.bool(f) for f in allow_negative_indices)
    if builtins.len(flags) != count:
        raise ValueError(
            f"allow_negative_indices must have one flag per axis ({count}), got {len(flags)}"
        )
    return flags


def _starts(start_indices, ndim, api):
    if isinstance(start_indices, Tracer):
        if start_indices.ndim != 1:
            raise ValueError(
                f"{api}: slice indices must be a 1D sequence, got {start_indices.shape}"
            )
        starts = [start_indices[k] for k in range(start_indices.shape[0])]
    else:
        starts = list(start_indices)
    if builtins.len(starts) != ndim:
        raise ValueError(
            f"{api}: length of slice indices must match number of operand dimensions "
            f"({len(starts)} vs {ndim})"
        )
    return starts


def _size(value, api):
    if isinstance(value, arith.Expr):
        return value
    if isinstance(value, bool) or not hasattr(value, "__index__"):
        raise TypeError(f"{api}: slice sizes must be ints or symbolic dims, got {value!r}")
    size = int(value)
    if size < 0:
        raise ValueError(f"{api}: slice sizes must be non-negative, got {size}")
    return size


def dynamic_slice(operand, start_indices, slice_sizes, *, allow_negative_indices=True):
    """``jax.lax.dynamic_slice``: the window of ``slice_sizes`` starting at
    ``start_indices`` (run-time integers; negative ones count from the end when allowed),
    each start clamped so the window lies inside ``operand``."""
    ndim = _ndim(operand)
    starts = _starts(start_indices, ndim, "dynamic_slice")
    sizes = tuple(_size(s, "dynamic_slice") for s in slice_sizes)
    attrs = DynamicSliceAttrs(sizes, _flags(allow_negative_indices, ndim))
    return emit("dynamic_slice", (operand, *starts), attrs)


def dynamic_update_slice(operand, update, start_indices, *, allow_negative_indices=True):
    """``jax.lax.dynamic_update_slice``: ``operand`` with the window at ``start_indices``
    (clamped as in :func:`dynamic_slice`) replaced by ``update``.

    Compiled in place when ``operand`` is a value the function computed and nothing reads
    it afterwards (a KV-cache write costs the update's size); a function parameter is
    never modified (the first update of one copies it, later ones are in place)."""
    ndim = _ndim(operand)
    starts = _starts(start_indices, ndim, "dynamic_update_slice")
    attrs = DynamicUpdateSliceAttrs(_flags(allow_negative_indices, ndim))
    return emit("dynamic_update_slice", (operand, update, *starts), attrs)


def dynamic_slice_in_dim(operand, start_index, slice_size, axis=0, *, allow_negative_indices=True):
    """``jax.lax.dynamic_slice_in_dim``: :func:`dynamic_slice` along one axis."""
    shape = _shape(operand)
    axis = _axis(axis, builtins.len(shape), "dynamic_slice_in_dim")
    starts = [0] * builtins.len(shape)
    starts[axis] = start_index
    sizes = list(shape)
    sizes[axis] = slice_size
    return dynamic_slice(operand, starts, sizes, allow_negative_indices=allow_negative_indices)


def dynamic_index_in_dim(operand, index, axis=0, keepdims=True, *, allow_negative_indices=True):
    """``jax.lax.dynamic_index_in_dim``: the slice at ``index`` along ``axis`` (that axis
    kept with size 1 when ``keepdims``)."""
    result = dynamic_slice_in_dim(
        operand, index, 1, axis, allow_negative_indices=allow_negative_indices
    )
    if keepdims:
        return result
    axis = _axis(axis, _ndim(operand), "dynamic_index_in_dim")
    return emit("squeeze", (result,), SqueezeAttrs((axis,)))


def dynamic_update_slice_in_dim(operand, update, start_index, axis, *, allow_negative_indices=True):
    """``jax.lax.dynamic_update_slice_in_dim``: :func:`dynamic_update_slice` along one axis."""
    ndim = _ndim(operand)
    axis = _axis(axis, ndim, "dynamic_update_slice_in_dim")
    starts = [0] * ndim
    starts[axis] = start_index
    return dynamic_update_slice(
        operand, update, starts, allow_negative_indices=allow_negative_indices
    )


def dynamic_update_index_in_dim(operand, update, index, axis, *, allow_negative_indices=True):
    """``jax.lax.dynamic_update_index_in_dim``: write ``update`` (with or without the
    size-1 ``axis``) at ``index`` along ``axis``."""
    ndim = _ndim(operand)
    axis = _axis(axis, ndim, "dynamic_update_index_in_dim")
    if _ndim(update) == ndim - 1:
        update = emit("expand_dims", (update,), ExpandDimsAttrs((axis,)))
    return dynamic_update_slice_in_dim(
        operand, update, index, axis, allow_negative_indices=allow_negative_indices
    )


def _axis(axis, ndim, api):
    if isinstance(axis, bool) or not isinstance(axis, int):
        raise TypeError(f"{api}: axis must be an int, got {axis!r}")
    if not -ndim <= axis < ndim:
        raise ValueError(f"{api}: axis {axis} is out of bounds for rank {ndim}")
    return axis % ndim
