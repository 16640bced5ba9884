"""Elementwise ops that select or convert: ``where``, ``clip`` and ``astype``.

``where`` and ``clip`` broadcast their operands like the binary ops of
:mod:`relaxjax.ops.binary`; ``astype`` converts every element like a unary op of
:mod:`relaxjax.ops.unary`. Dtypes follow jax.numpy with 64-bit types enabled.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from relaxjax import dtypes, tir
from relaxjax.ir import StructInfo
from relaxjax.ops.base import (
    InferContext,
    in_compute_dtype,
    operand_type,
    reference_input,
    register,
    tensor_args,
    value_type,
    with_dtype,
)
from relaxjax.ops.binary import BroadcastOp, maximum_expr, minimum_expr
from relaxjax.ops.kernel import as_bool, broadcast_kernel, convert
from relaxjax.ops.unary import OperandType, UnaryOp
from relaxjax.tir import PrimExpr, PrimFunc


@dataclass(frozen=True, slots=True)
class AstypeAttrs:
    """The target dtype of ``astype`` (canonical name)."""

    dtype: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "dtype", dtypes.canonical(self.dtype))


@register
class Astype(UnaryOp):
    """Convert to ``attrs.dtype`` by jax's rules (``dtypes.convert``: floats to ints
    truncate toward zero and saturate, NaN gives 0; nonzero -> True)."""

    name = "astype"
    Attrs = AstypeAttrs

    def infer(self, args: Sequence[StructInfo], attrs: object, ctx: InferContext) -> StructInfo:
        (x,) = tensor_args(self.name, args, 1)
        return with_dtype(x, attrs.dtype)

    def reference(self, *arrays: object, attrs: object = None) -> np.ndarray:
        (x,) = arrays
        return dtypes.convert(reference_input(x), attrs.dtype)

    def scalar(self, x: PrimExpr, attrs: object) -> PrimExpr:
        return x


@register
class Where(BroadcastOp):
    """``where(condition, x, y)``: all three broadcast; the dtype promotes ``x`` and ``y``."""

    name = "where"
    num_inputs = 3

    def input_dtype(self, types: Sequence[OperandType]) -> str:
        return dtypes.result_type(*types[1:])

    def promotion_operands(self, types: Sequence[OperandType]) -> Sequence[OperandType]:
        return types[1:]

    def reference(self, *arrays: object, attrs: object = None) -> np.ndarray:
        condition, x, y = arrays
        kinds = [value_type(a) for a in arrays]
        out = self.result_dtype(kinds)
        chosen = np.where(
            np.asarray(condition) != 0, in_compute_dtype(x, out), in_compute_dtype(y, out)
        )
        return chosen.astype(dtypes.to_numpy(out))

    operand_names = ("condition", "x", "y")

    def lower(
        self, arg_infos: Sequence[StructInfo], attrs: object, out_info: StructInfo
    ) -> PrimFunc:
        dtype = self.result_dtype([operand_type(a) for a in arg_infos])

        def scalar(condition: PrimExpr, x: PrimExpr, y: PrimExpr) -> PrimExpr:
            return tir.select(as_bool(condition), convert(x, dtype), convert(y, dtype))

        return broadcast_kernel(self.name, arg_infos, out_info, self.operand_names, scalar)


@dataclass(frozen=True, slots=True)
class ClipAttrs:
    """Which bounds ``clip`` was given; the given ones follow ``x`` as arguments."""

    has_min: bool
    has_max: bool


@register
class Clip(BroadcastOp):
    """``minimum(maximum(x, min), max)`` as ``jnp.clip``: bounds broadcast and promote."""

    name = "clip"
    Attrs = ClipAttrs
    num_inputs = None

    def infer(self, args: Sequence[StructInfo], attrs: object, ctx: InferContext) -> StructInfo:
        return self.result_info(ctx, args, 1 + attrs.has_min + attrs.has_max)

    def reference(self, *arrays: object, attrs: object = None) -> np.ndarray:
        if len(arrays) != 1 + attrs.has_min + attrs.has_max:
            raise TypeError(f"clip with {attrs} takes {1 + attrs.has_min + attrs.has_max} arrays")
        kinds = [value_type(a) for a in arrays]
        out = self.result_dtype(kinds)
        x, *bounds = (in_compute_dtype(a, out) for a in arrays)
        if attrs.has_min:
            x = np.maximum(bounds.pop(0), x)
        if attrs.has_max:
            x = np.minimum(bounds.pop(0), x)
        return np.asarray(x).astype(dtypes.to_numpy(out))

    def lower(
        self, arg_infos: Sequence[StructInfo], attrs: object, out_info: StructInfo
    ) -> PrimFunc:
        dtype = self.result_dtype([operand_type(a) for a in arg_infos])
        names = ("x",) + ("low",) * attrs.has_min + ("high",) * attrs.has_max

        def scalar(x: PrimExpr, *bounds: PrimExpr) -> PrimExpr:
            value, rest = convert(x, dtype), [convert(b, dtype) for b in bounds]
            if attrs.has_min:
                value = maximum_expr(rest.pop(0), value)
            if attrs.has_max:
                value = minimum_expr(rest.pop(0), value)
            return value

        return broadcast_kernel(self.name, arg_infos, out_info, names, scalar)


__all__ = [
    "AstypeAttrs",
    "ClipAttrs",
]
