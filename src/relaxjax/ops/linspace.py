"""``linspace``: ``num`` evenly spaced values from ``start`` to ``stop`` along a new axis.

``start`` and ``stop`` are arrays (or scalars) that broadcast; the result has their
broadcast shape with ``num`` inserted at ``axis``. ``num`` may be symbolic. The values
are jax's: ``start * (1 - i / div) + stop * (i / div)`` in the computation dtype
(``to_inexact(dtype)``) with ``div = num - 1`` (``num`` without the endpoint), the
endpoint exactly ``stop``, ``num == 1`` exactly ``start``; integer dtypes take the floor.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from relaxjax import dtypes, tir
from relaxjax.ir import Check, StructInfo, TensorInfo
from relaxjax.ops.attr_checks import check_dim, check_flag, check_int
from relaxjax.ops.base import (
    Dim,
    InferContext,
    Op,
    as_tensor_info,
    broadcast_shapes,
    fail,
    normalize_axis,
    reference_input,
    register,
    tensor_args,
    to_inexact,
)
from relaxjax.ops.kernel import KernelDims, broadcast_indices, convert, placeholders
from relaxjax.tir import PrimExpr, PrimFunc, te


@dataclass(frozen=True, slots=True)
class LinspaceAttrs:
    """The number of values (a dim), whether ``stop`` is the last one, the new axis (in
    the result) and the result dtype."""

    num: Dim
    endpoint: bool = True
    axis: int = 0
    dtype: str = "float64"

    def __post_init__(self) -> None:
        check_dim("LinspaceAttrs", "num", self.num)
        check_flag("LinspaceAttrs", "endpoint", self.endpoint)
        check_int("LinspaceAttrs", "axis", self.axis)
        object.__setattr__(self, "dtype", dtypes.canonical(self.dtype))


def _divisor(attrs: LinspaceAttrs) -> Dim:
    return attrs.num - 1 if attrs.endpoint else attrs.num


@register
class Linspace(Op):
    """``linspace(start, stop, num, endpoint, axis, dtype)`` with array bounds."""

    name = "linspace"
    pattern = "injective"
    num_inputs = 2
    Attrs = LinspaceAttrs

    def infer(self, args: Sequence[StructInfo], attrs: object, ctx: InferContext) -> StructInfo:
        start, stop = tensor_args(self.name, args, 2)
        message = f"{self.name}: the number of samples must be >= 0, got {attrs.num}"
        ctx.require(Check("nonneg", (attrs.num,), message))
        if start.ndim is None or stop.ndim is None:
            return TensorInfo(dtype=attrs.dtype)
        ndim = max(start.ndim, stop.ndim) + 1
        axis = normalize_axis(self.name, attrs.axis, ndim)
        if start.shape is None or stop.shape is None:
            return TensorInfo(dtype=attrs.dtype, ndim=ndim)
        bounds = broadcast_shapes(ctx, [start.shape, stop.shape])
        if bounds is None:
            return TensorInfo(dtype=attrs.dtype, ndim=ndim)
        return TensorInfo((*bounds[:axis], attrs.num, *bounds[axis:]), attrs.dtype)

    def reference(self, *arrays: object, attrs: object = None) -> np.ndarray:
        start, stop = (np.asarray(reference_input(a)) for a in arrays)
        if not isinstance(attrs.num, int):
            raise TypeError(f"{self.name}: the reference needs a concrete num, got {attrs.num}")
        if attrs.num < 0:
            fail(self.name, f"the number of samples must be >= 0, got {attrs.num}")
        work = dtypes.to_numpy(to_inexact(attrs.dtype))
        start, stop = np.broadcast_arrays(start.astype(work), stop.astype(work))
        axis = normalize_axis(self.name, attrs.axis, start.ndim + 1)
        div = _divisor(attrs)
        low, high = np.expand_dims(start, axis), np.expand_dims(stop, axis)
        with np.errstate(all="ignore"):
            position = np.arange(attrs.num, dtype=work) / np.asarray(div, dtype=work)
            position = np.expand_dims(position, tuple(a for a in range(low.ndim) if a != axis))
            values = low * (np.asarray(1, work) - position) + high * position
        index = np.arange(attrs.num).reshape(position.shape)
        if attrs.endpoint:
            values = np.where(index == div, high, values)
        if attrs.num == 1:
            values = np.broadcast_to(low, values.shape)
        if not dtypes.is_floating(attrs.dtype):
            values = np.floor(values)
        return values.astype(dtypes.to_numpy(attrs.dtype))

    def lower(
        self, arg_infos: Sequence[StructInfo], attrs: object, out_info: StructInfo
    ) -> PrimFunc:
        """One stage over the result: the formula, ``stop`` at the endpoint, ``start``
        when ``num == 1``."""
        dims = KernelDims()
        start, stop = placeholders(dims, arg_infos, ("start", "stop"))
        shape = dims.output_shape(out_info)
        axis = normalize_axis(self.name, attrs.axis, len(shape))
        bounds = shape[:axis] + shape[axis + 1 :]
        num = shape[axis]
        div = num - 1 if attrs.endpoint else num
        dtype = as_tensor_info(out_info).dtype
        work = to_inexact(dtype)

        def body(*i: object) -> PrimExpr:
            rest = i[:axis] + i[axis + 1 :]
            low = convert(start[broadcast_indices(start.shape, bounds, rest)], work)
            high = convert(stop[broadcast_indices(stop.shape, bounds, rest)], work)
            index = i[axis]
            position = tir.cast(index, work) / tir.cast(tir.IndexExpr(div), work)
            value = low * (tir.const(1.0, work) - position) + high * position
            if attrs.endpoint:
                value = tir.select(tir.eq(index, tir.IndexExpr(div)), high, value)
            value = tir.select(tir.eq(tir.IndexExpr(num), 1), low, value)
            if not dtypes.is_floating(dtype):
                value = tir.floor(value)
            return convert(value, dtype)

        out = te.compute(shape, body, name=self.name)
        return te.create_prim_func([start, stop, out], name=self.name)


__all__ = ["LinspaceAttrs"]
