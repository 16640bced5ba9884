"""The scan ``cumsum``: inclusive running sums along one axis (or of the flattened
array), jax.numpy semantics: bool sums to int64, other dtypes are kept."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from relaxjax import dtypes
from relaxjax.ir import StructInfo, TensorInfo
from relaxjax.ops.attr_checks import check_int, optional_dtype
from relaxjax.ops.axes import unravel
from relaxjax.ops.base import (
    InferContext,
    Op,
    as_tensor_info,
    normalize_axis,
    num_elements,
    reference_input,
    register,
    tensor_args,
)
from relaxjax.ops.kernel import convert, single_input
from relaxjax.ops.reduction import accumulator_dtype, in_accumulator
from relaxjax.tir import PrimExpr, PrimFunc, te


@dataclass(frozen=True, slots=True)
class CumsumAttrs:
    """Attributes of ``cumsum``: the scanned axis (None: the flattened array) and dtype."""

    axis: int | None = None
    dtype: str | None = None

    def __post_init__(self) -> None:
        if self.axis is not None:
            check_int("CumsumAttrs", "axis", self.axis)
        object.__setattr__(self, "dtype", optional_dtype("CumsumAttrs", self.dtype))


def cumsum_dtype(dtype: str, requested: str | None) -> str:
    """The dtype of ``cumsum``: ``requested``, else bool -> int64 and others unchanged."""
    if requested is not None:
        return requested
    return "int64" if dtypes.is_bool(dtype) else dtype


@register
class Cumsum(Op):
    """``jnp.cumsum``: inclusive running sums along one axis (None: of the flattened array)."""

    name = "cumsum"
    Attrs = CumsumAttrs
    pattern = "opaque"
    num_inputs = 1

    def infer(self, args: Sequence[StructInfo], attrs, ctx: InferContext) -> StructInfo:
        (x,) = tensor_args(self.name, args, 1)
        dtype = cumsum_dtype(x.dtype, attrs.dtype)
        if attrs.axis is None:
            if x.shape is None:
                return TensorInfo(dtype=dtype, ndim=1)
            return TensorInfo((num_elements(x.shape),), dtype)
        if x.ndim is None:
            return TensorInfo(dtype=dtype)
        normalize_axis(self.name, attrs.axis, x.ndim)
        return TensorInfo(x.shape, dtype, x.ndim)

    def lower(self, arg_infos: Sequence[StructInfo], attrs, out_info: StructInfo) -> PrimFunc:
        """``out[..., i, ...] = sum over k <= i of x[..., k, ...]`` (a masked reduction,
        quadratic in the axis length); ``axis=None`` scans the row-major flattening."""
        _, x = single_input(arg_infos)
        out = as_tensor_info(out_info).dtype
        work = accumulator_dtype(out).name
        if attrs.axis is None:
            shape, size = (num_elements(x.shape),), num_elements(x.shape)

            def element(i: Sequence[object], k: object) -> PrimExpr:
                return x[unravel(k, x.shape)]

            position = 0
        else:
            position = normalize_axis(self.name, attrs.axis, x.ndim)
            shape, size = x.shape, x.shape[position]

            def element(i: Sequence[object], k: object) -> PrimExpr:
                return x[tuple(k if a == position else j for a, j in enumerate(i))]

        name = self.name if work == out else "acc"

        def body(*i: object) -> object:
            k = te.reduce_axis(size, "k")
            value = convert(convert(element(i, k), out), work)
            return te.sum(value, axis=k, where=k <= i[position])

        stage = te.compute(shape, body, name=name)
        if work == out:
            return te.create_prim_func([x, stage], name=self.name)
        result = te.compute(shape, lambda *i: convert(stage[i], out), name=self.name)
        return te.create_prim_func([x, result], name=self.name)

    def reference(self, *arrays: object, attrs=None) -> np.ndarray:
        attrs = self.Attrs() if attrs is None else attrs
        x = reference_input(arrays[0])
        out = cumsum_dtype(dtypes.canonical(x.dtype), attrs.dtype)
        if attrs.axis is None:
            x, axis = x.reshape(-1), 0
        else:
            axis = normalize_axis(self.name, attrs.axis, x.ndim)
        with np.errstate(all="ignore"):
            result = np.cumsum(in_accumulator(x, out), axis=axis)
        return result.astype(dtypes.to_numpy(out))


__all__ = ["CumsumAttrs", "cumsum_dtype"]
