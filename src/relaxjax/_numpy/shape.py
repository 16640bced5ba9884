"""The jax.numpy-named wrappers of the reduction, linear-algebra, shape-manipulation and
indexing ops (re-exported by :mod:`relaxjax.numpy`); ``x[key]`` (:func:`getitem`,
re-exported here) is in :mod:`relaxjax._numpy.index`.

Every wrapper normalises its Python-level arguments (axis tuples, negative axes
when the rank is known, ``pad_width`` forms, ``axis=None`` flattening) into the op's
attributes and records one op (or a short composition) through
:func:`relaxjax.trace.emit`.

>>> import relaxjax as relax, relaxjax.numpy as rnp
>>> relax.eval_shape(lambda x: rnp.sum(x, axis=-1), relax.Tensor(("n", 4), "float32"))
Tensor((n,), "float32")
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from relaxjax import arith, dtypes
from relaxjax._numpy.index import getitem
from relaxjax.errors import ShapeError
from relaxjax.ir import PrimInfo, TensorInfo
from relaxjax.ops import attention as _attention  # noqa: F401 - registers the op
from relaxjax.ops.arg_reduction import ArgReduceAttrs
from relaxjax.ops.axes import normalize_axes
from relaxjax.ops.base import as_tensor_info
from relaxjax.ops.elementwise import AstypeAttrs
from relaxjax.ops.index import TakeAttrs
from relaxjax.ops.join import AxisAttrs, SplitAttrs
from relaxjax.ops.linalg import EinsumAttrs
from relaxjax.ops.manipulate import (
    BroadcastToAttrs,
    ExpandDimsAttrs,
    ReshapeAttrs,
    SqueezeAttrs,
    SwapaxesAttrs,
    TransposeAttrs,
    size_one_axes,
    swap_permutation,
)
from relaxjax.ops.pad import PadAttrs
from relaxjax.ops.scan import CumsumAttrs
from relaxjax.ops.triangle import TriangleAttrs
from relaxjax.trace import Tracer, emit

__all__ = [
    "argmax",
    "argmin",
    "broadcast_to",
    "concatenate",
    "cumsum",
    "dot",
    "einsum",
    "expand_dims",
    "getitem",
    "matmul",
    "pad",
    "reshape",
    "split",
    "squeeze",
    "stack",
    "swapaxes",
    "take",
    "transpose",
    "tril",
    "triu",
]

Dim = arith.Dim


# --------------------------------------------------------------------------- helpers


def _rank(x: object) -> int | None:
    """The rank of an operand, or None when it is not known at trace time."""
    if isinstance(x, Tracer):
        info = x.info
        if isinstance(info, PrimInfo):
            return 0
        return info.ndim if isinstance(info, TensorInfo) else None
    if isinstance(x, (bool, int, float, arith.Expr)):
        return 0
    return np.ndim(x)


def _int(value: object, what: str) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{what} must be an int, got {value!r}")
    return int(value)


def _axis_tuple(op_name: str, axis: object, ndim: int | None) -> tuple[int, ...]:
    """``axis`` (an int or a sequence of ints) as a tuple, normalised and sorted when the
    rank is known."""
    if isinstance(axis, Sequence) and not isinstance(axis, str):
        axes = tuple(_int(a, f"{op_name} axis") for a in axis)
    else:
        axes = (_int(axis, f"{op_name} axis"),)
    if ndim is None:
        return axes
    return tuple(sorted(normalize_axes(op_name, axes, ndim)))


def _axes_or_none(op_name: str, axis: object, ndim: int | None) -> tuple[int, ...] | None:
    return None if axis is None else _axis_tuple(op_name, axis, ndim)


def _single_axis(op_name: str, axis: object, ndim: int | None) -> int | None:
    if axis is None:
        return None
    (value,) = _axis_tuple(op_name, _int(axis, f"{op_name} axis"), ndim)
    return value


def _no_out(op_name: str, out: object) -> None:
    if out is not None:
        raise NotImplementedError(f"The 'out' argument to {op_name} is not supported.")


def _dtype(dtype: object) -> str | None:
    return None if dtype is None else dtypes.canonical(dtype)


def _dim(value: object, what: str) -> Dim:
    if isinstance(value, arith.Expr):
        return value
    return _int(value, what)


def _shape_arg(shape: object, what: str) -> tuple[Dim, ...]:
    if isinstance(shape, (int, np.integer, arith.Expr)) and not isinstance(shape, bool):
        return (_dim(shape, what),)
    if not isinstance(shape, Sequence) or isinstance(shape, str):
        raise TypeError(f"{what} must be an int, a dim or a sequence of them, got {shape!r}")
    return tuple(_dim(d, what) for d in shape)


# --------------------------------------------------------------------------- reductions


def argmax(a, axis=None, out=None, keepdims=None):
    """``jnp.argmax``: int64 indices (of the flattened array when ``axis`` is None)."""
    _no_out("jnp.argmax", out)
    attrs = ArgReduceAttrs(_single_axis("argmax", axis, _rank(a)), bool(keepdims))
    return emit("argmax", (a,), attrs)


def argmin(a, axis=None, out=None, keepdims=None):
    """``jnp.argmin``: int64 indices (of the flattened array when ``axis`` is None)."""
    _no_out("jnp.argmin", out)
    attrs = ArgReduceAttrs(_single_axis("argmin", axis, _rank(a)), bool(keepdims))
    return emit("argmin", (a,), attrs)


def cumsum(a, axis=None, dtype=None, out=None):
    """``jnp.cumsum``: running sums along ``axis`` (of the flattened array when None)."""
    _no_out("jnp.cumsum", out)
    attrs = CumsumAttrs(_single_axis("cumsum", axis, _rank(a)), _dtype(dtype))
    return emit("cumsum", (a,), attrs)


# --------------------------------------------------------------------------- linear algebra


def matmul(a, b):
    """``jnp.matmul`` (``a @ b``): batched matrix products, 1-D operands as vectors."""
    return emit("matmul", (a, b))


def dot(a, b):
    """``jnp.dot``: contract the last axis of ``a`` with the second-to-last of ``b``."""
    return emit("dot", (a, b))


def einsum(subscripts, /, *operands, out=None, optimize="auto"):
    """``jnp.einsum`` with numpy subscripts (``"ij,jk->ik"``, ``"...ij,...jk"``).

    ``optimize`` (jax's contraction-order hint) is accepted and has no effect on the
    result: the op contracts all operands at once.
    """
    _no_out("jnp.einsum", out)
    del optimize
    return emit("einsum", tuple(operands), EinsumAttrs(subscripts))


# --------------------------------------------------------------------------- shapes


def reshape(a, shape, order="C", *, copy=None):
    """``jnp.reshape``: dims may be ints, symbolic dims and one ``-1``.

    ``copy`` is accepted for jax's signature: values are immutable, so whether the
    result shares memory with ``a`` is not observable.
    """
    if copy not in (None, True, False):
        raise TypeError(f"reshape: copy must be None, True or False, got {copy!r}")
    if order != "C":
        raise NotImplementedError(f"reshape: only order='C' is supported, got order={order!r}")
    return emit("reshape", (a,), ReshapeAttrs(_shape_arg(shape, "reshape shape")))


def transpose(a, axes=None):
    """``jnp.transpose``: permute the axes (reverse them when ``axes`` is None)."""
    if axes is not None:
        axes = tuple(_int(x, "transpose axes") for x in axes)
        ndim = _rank(a)
        if ndim is not None and len(axes) == ndim:
            axes = normalize_axes("transpose", axes, ndim)
    return emit("transpose", (a,), TransposeAttrs(axes))


def swapaxes(a, axis1, axis2):
    """``jnp.swapaxes``: exchange two axes."""
    axis1, axis2 = _int(axis1, "swapaxes axis1"), _int(axis2, "swapaxes axis2")
    ndim = _rank(a)
    if ndim is None:
        return emit("swapaxes", (a,), SwapaxesAttrs(axis1, axis2))
    perm = swap_permutation("swapaxes", axis1, axis2, ndim)
    return emit("transpose", (a,), TransposeAttrs(perm))


def expand_dims(a, axis):
    """``jnp.expand_dims``: insert size-1 axes at ``axis`` (positions in the result)."""
    ndim = _rank(a)
    out_ndim = None if ndim is None else ndim + len(_axis_tuple("expand_dims", axis, None))
    return emit("expand_dims", (a,), ExpandDimsAttrs(_axis_tuple("expand_dims", axis, out_ndim)))


def squeeze(a, axis=None):
    """``jnp.squeeze``: remove size-1 axes (all of them when ``axis`` is None).

    ``axis=None`` is decided while tracing, so the result's rank is known: a dim proven 1
    is removed, one proven not 1 (a constant, or a symbol bounded off 1) is kept, and a
    dim that may or may not be 1 raises ``InconclusiveShapeError`` asking for ``axis=``
    (jax refuses it the same way).
    """
    if axis is None and isinstance(a, Tracer):
        axis = size_one_axes("squeeze", as_tensor_info(a.info, "squeeze"))
    return emit("squeeze", (a,), SqueezeAttrs(_axes_or_none("squeeze", axis, _rank(a))))


def broadcast_to(array, shape):
    """``jnp.broadcast_to``: repeat size-1 and missing leading axes to ``shape``."""
    return emit("broadcast_to", (array,), BroadcastToAttrs(_shape_arg(shape, "broadcast_to shape")))


def _arrays(op_name: str, arrays: object) -> tuple:
    """The operands of concatenate/stack: a sequence, or an array split along axis 0."""
    if isinstance(arrays, (Tracer, np.ndarray)):
        if _rank(arrays) == 0:
            raise ShapeError(f"{op_name}: expected a sequence of arrays, got a 0-d array")
        return tuple(arrays)
    if not isinstance(arrays, Sequence):
        raise TypeError(f"{op_name}: expected a sequence of arrays, got {arrays!r}")
    return tuple(arrays)


def _astype(x, dtype):
    return x if dtype is None else emit("astype", (x,), AstypeAttrs(dtypes.canonical(dtype)))


def concatenate(arrays, axis=0, dtype=None):
    """``jnp.concatenate``: join along an existing axis (``axis=None`` flattens first)."""
    arrays = _arrays("concatenate", arrays)
    if axis is None:
        arrays = tuple(reshape(a, (-1,)) for a in arrays)
        axis = 0
    axis = _int(axis, "concatenate axis")
    ndim = next((r for r in map(_rank, arrays) if r is not None), None)
    if ndim:
        axis = normalize_axes("concatenate", (axis,), ndim)[0]
    return _astype(emit("concatenate", arrays, AxisAttrs(axis)), dtype)


def stack(arrays, axis=0, out=None, dtype=None):
    """``jnp.stack``: join arrays of one shape along a new axis."""
    _no_out("jnp.stack", out)
    arrays = _arrays("stack", arrays)
    axis = _int(axis, "stack axis")
    ndim = next((r for r in map(_rank, arrays) if r is not None), None)
    if ndim is not None:
        axis = normalize_axes("stack", (axis,), ndim + 1)[0]
    return _astype(emit("stack", arrays, AxisAttrs(axis)), dtype)


def split(ary, indices_or_sections, axis=0):
    """``jnp.split``: a list of pieces, ``sections`` equal ones or cut at ``indices``."""
    axis = _int(axis, "split axis")
    ndim = _rank(ary)
    if ndim is not None:
        axis = normalize_axes("split", (axis,), ndim)[0]
    if isinstance(indices_or_sections, (int, np.integer)) and not isinstance(
        indices_or_sections, bool
    ):
        attrs = SplitAttrs(sections=int(indices_or_sections), axis=axis)
    else:
        indices = tuple(_dim(i, "split index") for i in indices_or_sections)
        attrs = SplitAttrs(indices=indices, axis=axis)
    return list(emit("split", (ary,), attrs))


def tril(m, k=0):
    """``jnp.tril``: keep the elements on and below diagonal ``k`` of the last two axes."""
    return emit("tril", (m,), TriangleAttrs(_int(k, "tril k")))


def triu(m, k=0):
    """``jnp.triu``: keep the elements on and above diagonal ``k`` of the last two axes."""
    return emit("triu", (m,), TriangleAttrs(_int(k, "triu k")))


def _pad_pairs(pad_width: object, ndim: int | None) -> tuple[tuple[int, int], ...]:
    """jax's ``pad_width`` forms (``w``, ``(w,)``, ``(lo, hi)``, ``((lo, hi),)``, one pair
    per axis) as one pair per axis, or one pair for every axis when the rank is unknown."""
    widths = np.asarray(pad_width)
    if widths.dtype.kind not in "iu":
        raise TypeError(f"pad: pad_width must hold ints, got {pad_width!r}")
    if widths.ndim == 0 or (widths.ndim == 1 and widths.size == 1):
        widths = np.repeat(widths.reshape(1, 1), 2, axis=1)
    elif widths.ndim == 1 and widths.size == 2:
        widths = widths.reshape(1, 2)
    if widths.ndim != 2 or widths.shape[1] != 2:
        raise ShapeError(f"pad: pad_width must be an int or (before, after) pairs, got {pad_width}")
    if ndim is not None and len(widths) not in (1, ndim):
        raise ShapeError(
            f"pad: pad_width has {len(widths)} pairs for an array of rank {ndim} "
            f"(expected 1 or {ndim})"
        )
    if ndim is not None:
        widths = np.broadcast_to(widths, (ndim, 2))
    return tuple((int(lo), int(hi)) for lo, hi in widths)


def pad(array, pad_width, mode="constant", **kwargs):
    """``jnp.pad`` in constant mode: ``constant_values`` must be a scalar."""
    if mode != "constant":
        raise NotImplementedError(f"pad: only mode='constant' is supported, got {mode!r}")
    value = kwargs.pop("constant_values", 0)
    if kwargs:
        raise TypeError(f"pad: unexpected keyword arguments {sorted(kwargs)}")
    if isinstance(value, (np.generic, np.ndarray)) and np.ndim(value) == 0:
        value = value.item()
    if not isinstance(value, (bool, int, float)):
        raise NotImplementedError(f"pad: constant_values must be a scalar, got {value!r}")
    pairs = _pad_pairs(pad_width, _rank(array))
    return emit("pad", (array,), PadAttrs(pairs, value))


# --------------------------------------------------------------------------- indexing


def take(
    a,
    indices,
    axis=None,
    out=None,
    mode=None,
    unique_indices=False,
    indices_are_sorted=False,
    fill_value=None,
):
    """``jnp.take``: gather along ``axis`` (of the flattened array when None).

    ``mode`` is ``"fill"`` (the default: out-of-range indices give ``fill_value``
    converted to the array's dtype, by default NaN for floats, the smallest value for
    signed ints, the largest for unsigned ones and True for bool; negative indices
    count from the end), ``"clip"`` or ``"wrap"`` (which ignore ``fill_value``).
    ``unique_indices`` and ``indices_are_sorted`` are jax's performance hints: they do
    not change the result.
    """
    _no_out("jnp.take", out)
    del unique_indices, indices_are_sorted
    mode = "fill" if mode is None else mode
    if mode not in ("fill", "clip", "wrap"):
        raise ValueError(f"take: invalid mode {mode!r} (expected 'fill', 'clip' or 'wrap')")
    fill = _static_scalar("take fill_value", fill_value) if mode == "fill" else None
    if axis is None:
        a, axis = reshape(a, (-1,)), 0
    axis = _int(axis, "take axis")
    ndim = _rank(a)
    if ndim:
        axis = normalize_axes("take", (axis,), ndim)[0]
    return emit("take", (a, _index_array(indices)), TakeAttrs(axis, mode, fill))


def _static_scalar(what: str, value: object) -> bool | int | float | None:
    """A static scalar argument (a Python or numpy scalar, or a 0-d array) as a Python
    value; traced values and arrays are refused."""
    if value is None:
        return None
    if isinstance(value, Tracer):
        raise TypeError(f"{what} must be a static scalar, got a traced value")
    if np.ndim(value) != 0:
        raise ValueError(f"{what} must be a scalar, got an array of shape {np.shape(value)}")
    item = np.asarray(value).item()
    if not isinstance(item, (bool, int, float)):
        raise TypeError(f"{what} must be a bool, int or float, got {value!r}")
    return item


def _index_array(indices: object) -> object:
    if isinstance(indices, (Tracer, np.ndarray, bool, int, np.integer)):
        return np.asarray(indices) if isinstance(indices, np.integer) else indices
    return np.asarray(indices)
