"""``pad`` in constant mode: surround an array with a constant, with jax.numpy
semantics (the dtype is the input's; the constant is converted to it)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from relaxjax import dtypes, tir
from relaxjax.errors import ShapeError
from relaxjax.ir import StructInfo, TensorInfo
from relaxjax.ops.attr_checks import check_int
from relaxjax.ops.base import InferContext, Op, reference_input, register, tensor_args
from relaxjax.ops.kernel import index_dims, single_input
from relaxjax.tir import PrimExpr, PrimFunc, te
from relaxjax.tir.expr import as_expr


@dataclass(frozen=True, slots=True)
class PadAttrs:
    """Attributes of ``pad`` (constant mode): ``(before, after)`` per axis (one pair: the
    same for every axis) and the fill value, converted to the array's dtype."""

    pad_width: tuple[tuple[int, int], ...]
    constant_value: bool | int | float = 0

    def __post_init__(self) -> None:
        widths = self.pad_width
        if not isinstance(widths, tuple) or not widths:
            raise TypeError(
                f"PadAttrs.pad_width must be a non-empty tuple of pairs, got {widths!r}"
            )
        for pair in widths:
            if not isinstance(pair, tuple) or len(pair) != 2:
                raise TypeError(f"PadAttrs.pad_width must hold (before, after) pairs, got {pair!r}")
            for width in pair:
                check_int("PadAttrs", "pad_width", width)
                if width < 0:
                    raise ValueError(f"pad: pad widths must be >= 0, got {widths}")
        if not isinstance(self.constant_value, (bool, int, float)):
            raise TypeError(
                f"PadAttrs.constant_value must be a Python scalar, got {self.constant_value!r}"
            )

    def widths(self, op_name: str, ndim: int) -> tuple[tuple[int, int], ...]:
        """One ``(before, after)`` pair per axis of a rank-``ndim`` array."""
        if len(self.pad_width) == 1:
            return self.pad_width * ndim
        if len(self.pad_width) != ndim:
            raise ShapeError(
                f"{op_name}: pad_width has {len(self.pad_width)} pairs for an array of "
                f"rank {ndim} (expected 1 or {ndim})"
            )
        return self.pad_width


@register
class Pad(Op):
    """``jnp.pad`` in constant mode: surround the array with a constant."""

    name = "pad"
    Attrs = PadAttrs
    pattern = "injective"
    num_inputs = 1

    def infer(self, args: Sequence[StructInfo], attrs, ctx: InferContext) -> StructInfo:
        (x,) = tensor_args(self.name, args, 1)
        if x.ndim is None:
            return TensorInfo(dtype=x.dtype, weak=x.weak)
        widths = attrs.widths(self.name, x.ndim)
        if x.shape is None:
            return TensorInfo(dtype=x.dtype, ndim=x.ndim, weak=x.weak)
        return TensorInfo(
            tuple(d + lo + hi for d, (lo, hi) in zip(x.shape, widths)), x.dtype, weak=x.weak
        )

    def reference(self, *arrays: object, attrs=None) -> np.ndarray:
        x = reference_input(arrays[0])
        if x.ndim == 0:
            return x.copy()
        fill = np.asarray(attrs.constant_value).astype(x.dtype)
        return np.pad(x, attrs.widths(self.name, x.ndim), constant_values=fill)

    def lower(self, arg_infos: Sequence[StructInfo], attrs, out_info: StructInfo) -> PrimFunc:
        """``out[i] = x[i - before]`` inside the original extent, the constant outside."""
        _, x = single_input(arg_infos)
        widths = attrs.widths(self.name, x.ndim)
        shape = tuple(d + lo + hi for d, (lo, hi) in zip(x.shape, widths))
        value = dtypes.convert(attrs.constant_value, x.dtype).item()
        fill = as_expr(value, x.dtype)

        def body(*indices: object) -> PrimExpr:
            i = index_dims(indices)
            inside = as_expr(True)
            for index, dim, (lo, _) in zip(i, x.shape, widths):
                if lo:
                    inside = inside & (as_expr(index) >= lo)
                inside = inside & (as_expr(index) < dim + lo)
            source = tuple(index - lo for index, (lo, _) in zip(i, widths))
            return tir.if_then_else(inside, x[source], fill)

        out = te.compute(shape, body, name=self.name)
        return te.create_prim_func([x, out], name=self.name)


__all__ = ["PadAttrs"]
