"""Selecting and placing elements with jax.numpy's names and semantics:
``take_along_axis`` (one op), ``choose``, ``select``, ``piecewise`` (chains of ``where``),
``extract`` (``compress`` of the flattened arrays: a data-dependent length) and the
functional updates ``place`` and ``fill_diagonal`` (``inplace=False``, as jax requires).

``place`` and ``fill_diagonal`` are gathers, not scatters: the ``k``-th selected position
reads ``vals[k % len(vals)]`` (the rank ``k`` is a running count of the mask), so they
need no write conflicts resolved and keep symbolic shapes.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from relaxjax import arith, dtypes
from relaxjax._numpy.arraylike import (
    array_operand,
    astype,
    converted,
    dtype_of,
    ndim_of,
    reshaped,
    shape_of,
    size_of,
)
from relaxjax._numpy.core import arange, where
from relaxjax._numpy.datadep import compress
from relaxjax._numpy.manipulation import broadcast_arrays, ravel
from relaxjax._numpy.shape import _static_scalar, cumsum
from relaxjax.errors import TraceError
from relaxjax.ir import TensorInfo
from relaxjax.ops.base import normalize_axis
from relaxjax.ops.elementwise import ClipAttrs
from relaxjax.ops.index import TakeAttrs
from relaxjax.trace import Tracer, current, emit, match_cast

Dim = arith.Dim

__all__ = [
    "choose",
    "extract",
    "fill_diagonal",
    "piecewise",
    "place",
    "select",
    "take_along_axis",
]


def _integer(dtype: str) -> bool:
    return dtypes.is_integer(dtype)


def take_along_axis(
    arr, indices, axis=-1, mode=None, fill_value=None, *, wrap_negative_indices=None
):
    """``jnp.take_along_axis``: ``arr``'s elements at ``indices`` along ``axis`` (of the
    flattened ``arr`` when None, with 1-d ``indices``); the other axes broadcast.

    ``mode`` is ``"fill"`` (the default: out-of-range indices give ``fill_value``,
    default NaN / the smallest int / True) or ``"clip"``. Negative indices count from the
    end unless ``wrap_negative_indices=False``, which makes them out of range.
    """
    arr, indices = array_operand(arr), array_operand(indices)
    if not _integer(dtype_of(indices)):
        raise TypeError(f"take_along_axis indices must be of integer type, got {dtype_of(indices)}")
    if axis is None:
        if ndim_of(indices) != 1:
            raise ValueError(
                f"take_along_axis indices must be 1D if axis=None, got shape {shape_of(indices)}"
            )
        arr, axis = ravel(arr), 0
    mode = "fill" if mode is None else mode
    if mode not in ("fill", "clip"):
        raise ValueError(f"take_along_axis: mode must be 'fill' or 'clip', got {mode!r}")
    if ndim_of(arr) != ndim_of(indices):
        raise ValueError(
            "indices and arr must have the same number of dimensions; "
            f"{ndim_of(indices)} vs. {ndim_of(arr)}"
        )
    axis = normalize_axis("take_along_axis", _axis_int(axis), ndim_of(arr))
    if wrap_negative_indices is False:
        outside = 0 if mode == "clip" else shape_of(arr)[axis]
        indices = where(indices < 0, outside, indices)
    fill = _static_scalar("take_along_axis fill_value", fill_value)
    return emit("take_along_axis", (arr, indices), TakeAttrs(axis, mode, fill))


def _axis_int(axis: object) -> int:
    if isinstance(axis, (bool, np.bool_)) or not isinstance(axis, (int, np.integer)):
        raise TypeError(f"axis must be an int or None, got {axis!r}")
    return int(axis)


def choose(a, choices, out=None, mode="raise"):
    """``jnp.choose``: ``choices[a[i]][i]`` (all broadcast); ``mode`` ``"wrap"`` or
    ``"clip"`` handles out-of-range ``a``; ``"raise"`` needs ``a`` known while tracing."""
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.choose is not supported.")
    a = array_operand(a)
    if isinstance(choices, (Tracer, np.ndarray)):
        choices = list(choices)
    choices = [array_operand(c) for c in choices]
    if not _integer(dtype_of(a)):
        raise ValueError("`a` array must be integer typed")
    count = len(choices)
    if mode == "raise":
        if isinstance(a, Tracer):
            raise TraceError(
                "jnp.choose with mode='raise' needs `a` known while tracing; use "
                "mode='wrap' or mode='clip' instead"
            )
        if np.any((np.asarray(a) < 0) | (np.asarray(a) >= count)):
            raise ValueError("invalid entry in choice array")
    elif mode == "wrap":
        a = a % count
    elif mode == "clip":
        a = emit("clip", (a, 0, count - 1), ClipAttrs(has_min=True, has_max=True))
    else:
        raise ValueError(f"mode={mode!r} not understood. Must be 'raise', 'wrap', or 'clip'")
    a, *choices = broadcast_arrays(a, *converted(*choices))
    result = choices[-1]
    for k in range(count - 2, -1, -1):
        result = where(a == k, choices[k], result)
    return result


def select(condlist, choicelist, default=0):
    """``jnp.select``: per element, the choice of the first true condition, else
    ``default`` (all broadcast; nonzero conditions are true)."""
    if len(condlist) != len(choicelist):
        raise ValueError(
            f"condlist must have length equal to choicelist ({len(condlist)} vs {len(choicelist)})"
        )
    if len(condlist) == 0:
        raise ValueError("condlist must be non-empty")
    result, *choices = converted(default, *choicelist)
    for condition, choice in reversed(list(zip(condlist, choices))):
        condition = array_operand(condition)
        if dtype_of(condition) != "bool":
            condition = condition != 0
        result = where(condition, choice, result)
    return result


def piecewise(x, condlist, funclist, *args, **kw):
    """``jnp.piecewise``: ``funclist[i](x, *args, **kw)`` where ``condlist[i]`` holds (the
    last true condition wins), else the extra last function (or 0); constants stand for
    constant functions. Every function runs on all of ``x``; the result has ``x``'s dtype."""
    x = array_operand(x)
    if isinstance(condlist, (Tracer, np.ndarray)) and ndim_of(condlist) == ndim_of(x):
        condlist = [condlist]
    conditions = list(condlist)
    nc, nf = len(conditions), len(funclist)
    if nf == nc + 1:
        default, funcs = funclist[-1], list(funclist[:-1])
    elif nf == nc:
        default, funcs = 0, list(funclist)
    else:
        raise ValueError(
            f"with {nc} condition(s), either {nc} or {nc + 1} functions are expected; got {nf}"
        )
    dtype = dtype_of(x)
    result = _piece(default, x, dtype, args, kw)
    for condition, func in zip(conditions, funcs):
        condition = array_operand(condition)
        if dtype_of(condition) != "bool":
            condition = condition != 0
        result = where(condition, _piece(func, x, dtype, args, kw), result)
    return astype(result, dtype)


def _piece(func: object, x: object, dtype: str, args: tuple, kw: dict) -> object:
    if isinstance(func, Callable):
        return astype(array_operand(func(x, *args, **kw)), dtype)
    return astype(array_operand(func), dtype)


def extract(condition, arr, *, size=None, fill_value=0):
    """``jnp.extract``: the elements of the flattened ``arr`` where the flattened
    ``condition`` is nonzero: a data-dependent length, or ``size`` (padded with
    ``fill_value``)."""
    return compress(
        ravel(array_operand(condition)), ravel(array_operand(arr)), size=size, fill_value=fill_value
    )


def place(arr, mask, vals, *, inplace=True):
    """``jnp.place(..., inplace=False)``: ``arr`` with its elements where ``mask`` holds
    replaced, in row-major order, by ``vals`` repeated cyclically."""
    if inplace:
        raise ValueError(
            "jax.numpy.place cannot modify arrays in-place, because JAX arrays are immutable. "
            "Pass inplace=False to instead return an updated array."
        )
    arr, mask, vals = array_operand(arr), array_operand(mask), ravel(array_operand(vals))
    if arith.compare(size_of(arr), "==", size_of(mask)) is False:
        raise ValueError("place: arr and mask must be the same size")
    count = shape_of(vals)[0]
    if isinstance(count, int) and count == 0:
        raise ValueError("Cannot place values from an empty array")
    flat_mask = ravel(mask)
    if dtype_of(flat_mask) != "bool":
        flat_mask = flat_mask != 0
    flat = ravel(arr)
    if shape_of(flat_mask) != shape_of(flat):
        flat_mask = (
            match_cast(flat_mask, TensorInfo(shape_of(flat), "bool")) if current() else flat_mask
        )
    rank = cumsum(flat_mask) - 1
    values = emit(
        "take", (astype(vals, dtype_of(arr)), rank % arith.max_(count, 1)), TakeAttrs(0, "index")
    )
    return reshaped(where(flat_mask, values, flat), shape_of(arr))


def fill_diagonal(a, val, wrap=False, *, inplace=True):
    """``jnp.fill_diagonal(..., inplace=False)``: ``a`` with its main diagonal (the
    positions whose indices are all equal) set to ``val`` (a scalar, or values repeated
    cyclically), converted to ``a``'s dtype."""
    if inplace:
        raise NotImplementedError("JAX arrays are immutable, must use inplace=False")
    if wrap:
        raise NotImplementedError("wrap=True is not implemented, must use wrap=False")
    a, val = array_operand(a), array_operand(val)
    ndim = ndim_of(a, "fill_diagonal")
    if ndim < 2:
        raise ValueError("array must be at least 2-d")
    shape = shape_of(a)
    if ndim > 2:
        if any(arith.compare(d, "==", shape[0]) is False for d in shape[1:]):
            raise ValueError("All dimensions of input must be of equal length")
        if any(arith.compare(d, "==", shape[0]) is not True for d in shape[1:]) and current():
            a = match_cast(a, TensorInfo((shape[0],) * ndim, dtype_of(a)))
            shape = shape_of(a)
    rows = arange(shape[0])
    on_diagonal = None
    for axis in range(1, ndim):
        same = _along(rows, 0, ndim) == _along(arange(shape[axis]), axis, ndim)
        on_diagonal = same if on_diagonal is None else on_diagonal & same
    values = astype(val, dtype_of(a))
    if ndim_of(values) > 0:
        flat = ravel(values)
        count = shape_of(flat)[0]
        if isinstance(count, int) and count == 0:
            raise ValueError("fill_diagonal: val must not be empty")
        picked = emit("take", (flat, rows % arith.max_(count, 1)), TakeAttrs(0, "index"))
        values = _along(picked, 0, ndim)
    return where(on_diagonal, values, a)


def _along(vector: object, axis: int, ndim: int) -> object:
    """A 1-d array as the ``axis`` of a rank-``ndim`` broadcastable array."""
    n = shape_of(vector)[0]
    return reshaped(vector, tuple(n if a == axis else 1 for a in range(ndim)))
