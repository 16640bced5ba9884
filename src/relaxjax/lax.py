"""``relaxjax.lax``: jax.lax's control flow and dynamic slicing, compiled as graph control flow.

Use it as ``import relaxjax.lax as lax``, with jax.lax's signatures and semantics::

    @relax.jit
    def power_sum(x: relax.Tensor(("n",), "float32")):
        # one executable for every n; the loop runs n times at run time
        return lax.fori_loop(0, x.shape[0], lambda i, acc: acc + x ** i, rnp.zeros_like(x))

- branches: :func:`cond`, :func:`switch` (index clamped into range);
- loops: :func:`fori_loop` (bounds may be ints, symbolic dims or traced integers),
  :func:`while_loop`, :func:`scan` (over a leading axis that may be symbolic);
- windows at run-time offsets: :func:`dynamic_slice`, :func:`dynamic_update_slice`
  (in place when the operand is dead afterwards), and their ``_in_dim`` / index forms;
- math: :func:`rsqrt`.

Each branch or loop body is traced once into a function of the compiled module and
called at run time: nothing is unrolled, and the trip counts and predicates are run-time
values. Loop carries keep their structure, shapes and dtypes, as in jax (a ``TypeError``
names the carry a body changes).
"""

import builtins as _builtins

from relaxjax import arith as _arith
from relaxjax import dtypes as _dtypes
from relaxjax.ops.dynamic_slice import DynamicSliceAttrs as _SliceAttrs
from relaxjax.ops.dynamic_slice import DynamicUpdateSliceAttrs as _UpdateAttrs
from relaxjax.trace import control as _control
from relaxjax.trace.tracer import Tracer as _Tracer
from relaxjax.trace.tracer import emit as _emit

__all__ = [
    "cond",
    "dynamic_index_in_dim",
    "dynamic_slice",
    "dynamic_slice_in_dim",
    "dynamic_update_index_in_dim",
    "dynamic_update_slice",
    "dynamic_update_slice_in_dim",
    "fori_loop",
    "rsqrt",
    "scan",
    "switch",
    "while_loop",
]

cond = _control.cond
switch = _control.switch
while_loop = _control.while_loop
fori_loop = _control.fori_loop
scan = _control.scan


def _ndim(x):
    if isinstance(x, _Tracer):
        return x.ndim
    return _builtins.len(getattr(x, "shape", ()))


def _shape(x):
    if isinstance(x, _Tracer):
        return x.shape
    return tuple(getattr(x, "shape", ()))


def _flags(allow_negative_indices, count):
    if isinstance(allow_negative_indices, bool):
        return (allow_negative_indices,) * count
    flags = tuple(_builtins.bool(f) for f in allow_negative_indices)
    if _builtins.len(flags) != count:
        raise ValueError(
            f"allow_negative_indices must have one flag per axis ({count}), got {len(flags)}"
        )
    return flags


def _starts(start_indices, ndim, api):
    if isinstance(start_indices, _Tracer):
        if start_indices.ndim != 1:
            raise ValueError(
                f"{api}: slice indices must be a 1D sequence, got {start_indices.shape}"
            )
        starts = [start_indices[k] for k in range(start_indices.shape[0])]
    else:
        starts = list(start_indices)
    if _builtins.len(starts) != ndim:
        raise ValueError(
            f"{api}: length of slice indices must match number of operand dimensions "
            f"({len(starts)} vs {ndim})"
        )
    return starts


def _size(value, api):
    if isinstance(value, _arith.Expr):
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
    attrs = _SliceAttrs(sizes, _flags(allow_negative_indices, ndim))
    return _emit("dynamic_slice", (operand, *starts), attrs)


def dynamic_update_slice(operand, update, start_indices, *, allow_negative_indices=True):
    """``jax.lax.dynamic_update_slice``: ``operand`` with the window at ``start_indices``
    (clamped as in :func:`dynamic_slice`) replaced by ``update``.

    Compiled in place when ``operand`` is a value the function computed and nothing reads
    it afterwards (a KV-cache write costs the update's size); a function parameter is
    never modified (the first update of one copies it, later ones are in place)."""
    ndim = _ndim(operand)
    starts = _starts(start_indices, ndim, "dynamic_update_slice")
    attrs = _UpdateAttrs(_flags(allow_negative_indices, ndim))
    return _emit("dynamic_update_slice", (operand, update, *starts), attrs)


def dynamic_slice_in_dim(operand, start_index, slice_size, axis=0, *, allow_negative_indices=True):
    """``jax.lax.dynamic_slice_in_dim``: :func:`dynamic_slice` along one axis."""
    shape = _shape(operand)
    axis = _axis(axis, _builtins.len(shape), "dynamic_slice_in_dim")
    starts = [0] * _builtins.len(shape)
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
    return _emit("squeeze", (result,), _squeeze_attrs(axis))


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
        update = _emit("expand_dims", (update,), _expand_attrs(axis))
    return dynamic_update_slice_in_dim(
        operand, update, index, axis, allow_negative_indices=allow_negative_indices
    )


def _axis(axis, ndim, api):
    if isinstance(axis, bool) or not isinstance(axis, int):
        raise TypeError(f"{api}: axis must be an int, got {axis!r}")
    if not -ndim <= axis < ndim:
        raise ValueError(f"{api}: axis {axis} is out of bounds for rank {ndim}")
    return axis % ndim


def _squeeze_attrs(axis):
    from relaxjax.ops.manipulate import SqueezeAttrs

    return SqueezeAttrs((axis,))


def _expand_attrs(axis):
    from relaxjax.ops.manipulate import ExpandDimsAttrs

    return ExpandDimsAttrs((axis,))


def rsqrt(x):
    """``jax.lax.rsqrt``: ``1 / sqrt(x)`` elementwise (floats; integers become floats)."""
    return _emit("rsqrt", (x,))


del _dtypes
