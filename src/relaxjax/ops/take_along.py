"""``take_along_axis``: gather one element per index along an axis, with jax.numpy
semantics (``jnp.take_along_axis``).

``arr`` and ``indices`` have the same rank; on the other axes they broadcast, and along
``axis`` the result has the indices' length::

    out[i0, ..., ia, ..., ik] = arr[i0, ..., indices[i0, ..., ia, ..., ik], ..., ik]

Negative indices count from the end. Out-of-range indices follow ``mode`` as for
``take`` (:mod:`relaxjax.ops.index`): ``"fill"`` (jax's default) gives ``fill_value``
(default NaN for floats, the smallest signed / largest unsigned int, True), ``"clip"``
clamps. An empty ``axis`` gives zeros, as jax. The dtype (and weak type) is ``arr``'s.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from relaxjax import arith, dtypes, tir
from relaxjax.ir import StructInfo, TensorInfo
from relaxjax.ops.base import (
    InferContext,
    Op,
    broadcast_dim,
    broadcast_result,
    info_text,
    normalize_axis,
    reference_input,
    register,
    tensor_args,
)
from relaxjax.ops.index import TakeAttrs, fill_element
from relaxjax.ops.kernel import KernelDims, broadcast_indices, convert, index_dims, placeholders
from relaxjax.tir import PrimExpr, PrimFunc, te
from relaxjax.tir.expr import as_expr

Dim = arith.Dim

MODES = ("fill", "clip")


@register
class TakeAlongAxis(Op):
    """``jnp.take_along_axis(arr, indices, axis, mode, fill_value)``."""

    name = "take_along_axis"
    Attrs = TakeAttrs
    pattern = "injective"
    num_inputs = 2

    def infer(self, args: Sequence[StructInfo], attrs, ctx: InferContext) -> StructInfo:
        arr, indices = tensor_args(self.name, args, 2)
        if not dtypes.is_integer(indices.dtype):
            raise TypeError(f"take_along_axis indices must be of integer type, got {indices.dtype}")
        if attrs.mode not in MODES:
            raise ValueError(f"take_along_axis: mode must be one of {MODES}, got {attrs.mode!r}")
        if arr.ndim is None or indices.ndim is None:
            return TensorInfo(dtype=arr.dtype, ndim=indices.ndim, weak=arr.weak)
        if arr.ndim != indices.ndim:
            ctx.fail(
                "indices and arr must have the same number of dimensions; "
                f"{indices.ndim} vs. {arr.ndim}"
            )
        axis = normalize_axis(self.name, attrs.axis, arr.ndim)
        if arr.shape is None or indices.shape is None:
            return TensorInfo(dtype=arr.dtype, ndim=arr.ndim, weak=arr.weak)
        text = f"{info_text(arr)} and indices {info_text(indices)}"
        shape: list[Dim | None] = []
        for a, (d, k) in enumerate(zip(arr.shape, indices.shape)):
            shape.append(k if a == axis else broadcast_dim(ctx, d, k, text, a))
        if any(d is None for d in shape):
            return TensorInfo(dtype=arr.dtype, ndim=arr.ndim, weak=arr.weak)
        return TensorInfo(tuple(shape), arr.dtype, weak=arr.weak)

    def reference(self, *arrays: object, attrs=None) -> np.ndarray:
        arr = reference_input(arrays[0])
        indices = np.asarray(arrays[1]).astype(np.int64)
        axis = normalize_axis(self.name, attrs.axis, arr.ndim)
        size = arr.shape[axis]
        shape = list(
            np.broadcast_shapes(_replaced(arr.shape, axis, 1), _replaced(indices.shape, axis, 1))
        )
        shape[axis] = indices.shape[axis]
        if size == 0:
            return np.zeros(shape, arr.dtype)
        arr = np.broadcast_to(arr, _replaced(shape, axis, size))
        indices = np.broadcast_to(indices, shape)
        wrapped = np.where(indices < 0, indices + size, indices)
        if attrs.mode == "clip":
            return np.take_along_axis(arr, np.clip(wrapped, 0, size - 1), axis)
        valid = (wrapped >= 0) & (wrapped < size)
        gathered = np.take_along_axis(arr, np.where(valid, wrapped, 0), axis)
        fill = np.asarray(fill_element(dtypes.canonical(arr.dtype), attrs.fill_value))
        return np.where(valid, gathered, fill.astype(arr.dtype))

    def lower(self, arg_infos: Sequence[StructInfo], attrs, out_info: StructInfo) -> PrimFunc:
        """``out[i] = arr[i with axis -> position(indices[i])]`` (both read broadcast);
        zeros when the axis is empty."""
        dims = KernelDims()
        arr, indices = placeholders(dims, arg_infos, ("arr", "indices"))
        axis = normalize_axis(self.name, attrs.axis, arr.ndim)
        shape = _out_shape(dims, out_info, arr, indices, axis)
        size = arr.shape[axis]

        def body(*loops: object) -> PrimExpr:
            i = index_dims(loops)
            raw = convert(indices[broadcast_indices(indices.shape, shape, i)], "int64")
            outer = broadcast_indices(_replaced(arr.shape, axis, 1), _replaced(shape, axis, 1), i)

            def load(position: PrimExpr) -> PrimExpr:
                return arr[_replaced(outer, axis, position)]

            value = _element(attrs, raw, as_expr(size), load, arr.dtype)
            if arith.compare(size, ">=", 1) is True:
                return value
            zero = as_expr(False) if arr.dtype == "bool" else as_expr(0, arr.dtype)
            return tir.if_then_else(as_expr(size) > 0, value, zero)

        out = te.compute(shape, body, name=self.name)
        return te.create_prim_func([arr, indices, out], name=self.name)


def _element(attrs: TakeAttrs, raw: PrimExpr, size: PrimExpr, load, dtype: str) -> PrimExpr:
    """The element at index ``raw`` (negative ones count from the end) per the mode."""
    wrapped = tir.select(raw < 0, raw + size, raw)
    if attrs.mode == "clip":
        return load(tir.min(tir.max(wrapped, 0), size - 1))
    valid = (wrapped >= 0) & (wrapped < size)
    fill = fill_element(dtype, attrs.fill_value)
    return tir.if_then_else(valid, load(wrapped), as_expr(fill, dtype))


def _replaced(shape: Sequence, axis: int, value: object) -> tuple:
    items = list(shape)
    items[axis] = value
    return tuple(items)


def _out_shape(
    dims: KernelDims, out_info: StructInfo, arr: te.Tensor, indices: te.Tensor, axis: int
) -> tuple[Dim, ...]:
    """The kernel's output shape: the result's dims when known, else the broadcast."""
    info = out_info if isinstance(out_info, TensorInfo) else None
    if info is not None and info.shape is not None:
        return dims.output_shape(info)
    shape = []
    for a, (d, k) in enumerate(zip(arr.shape, indices.shape)):
        dim = k if a == axis else broadcast_result([d, k])
        shape.append(dims.fresh() if dim is None else dim)
    return tuple(shape)


__all__ = ["MODES"]
