"""Rounding and sign: ``floor ceil trunc rint round sign square``.

Dtypes follow ``jax.numpy`` (x64): ``floor``/``ceil``/``trunc`` return integer and bool
operands unchanged; ``rint`` converts them to the default float (float64, whatever the
integer width); ``round`` returns integers unchanged and rejects bools; ``sign``
rejects bools; ``square`` computes bools in int32. Floats round half to even.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import ml_dtypes
import numpy as np

from relaxjax import dtypes, tir
from relaxjax.ir import StructInfo
from relaxjax.ops.attr_checks import check_int
from relaxjax.ops.base import (
    InferContext,
    reference_input,
    register,
    unsupported_dtype,
    value_type,
    with_dtype,
)
from relaxjax.ops.unary import OperandType, SignedUnaryOp, UnaryOp
from relaxjax.tir import PrimExpr


class _FloatRounding(UnaryOp):
    """A rounding of floats that leaves integers and bools as they are."""

    def compute(self, x: np.ndarray, attrs: object) -> np.ndarray:
        return self.numpy_function(x) if x.dtype.kind == "f" else x

    def scalar(self, x: PrimExpr, attrs: object) -> PrimExpr:
        return self.tir_function(x) if dtypes.is_floating(x.dtype) else x


@register
class Floor(_FloatRounding):
    """Round toward -inf."""

    name = "floor"
    numpy_function = staticmethod(np.floor)
    tir_function = staticmethod(tir.floor)


@register
class Ceil(_FloatRounding):
    """Round toward +inf."""

    name = "ceil"
    numpy_function = staticmethod(np.ceil)
    tir_function = staticmethod(tir.ceil)


@register
class Trunc(_FloatRounding):
    """Round toward 0."""

    name = "trunc"
    numpy_function = staticmethod(np.trunc)
    tir_function = staticmethod(tir.trunc)


@register
class Rint(_FloatRounding):
    """Round to the nearest integer, half to even; integers and bools become float64."""

    name = "rint"
    numpy_function = staticmethod(np.rint)
    tir_function = staticmethod(tir.round)

    def input_dtype(self, x: OperandType) -> str:
        dtype = dtypes.result_type(x)
        return dtype if dtypes.is_floating(dtype) else dtypes.default_float()

    def promotion_operands(self, x: OperandType) -> tuple[OperandType, ...]:
        # integers are converted to float64: a strongly typed result, as jax's
        return (x,) if dtypes.is_floating(dtypes.result_type(x)) else (self.input_dtype(x),)


@dataclass(frozen=True, slots=True)
class RoundAttrs:
    """The number of decimals (negative: tens, hundreds, ...)."""

    decimals: int = 0

    def __post_init__(self) -> None:
        check_int("RoundAttrs", "decimals", self.decimals)


@register
class Round(_FloatRounding):
    """``round(x * 10**decimals) / 10**decimals``, half to even (``jnp.round``);
    float16 computes in float32, integers are returned unchanged, bools are rejected."""

    name = "round"
    Attrs = RoundAttrs

    def input_dtype(self, x: OperandType) -> str:
        dtype = dtypes.result_type(x)
        if dtypes.is_bool(dtype):
            raise unsupported_dtype(self.name, dtype, "an integer or floating dtype")
        return dtype

    def infer(self, args: Sequence[StructInfo], attrs: object, ctx: InferContext) -> StructInfo:
        info = super().infer(args, attrs, ctx)
        if attrs.decimals == 0 or not dtypes.is_floating(info.dtype):
            return info
        return with_dtype(info, info.dtype)  # scaled by array constants: strongly typed

    def reference(self, *arrays: object, attrs: object = None) -> np.ndarray:
        (x,) = arrays
        dtype = self.result_dtype(value_type(x))
        if dtypes.is_floating(dtype) and _beyond_precision(dtype, attrs.decimals):
            return np.asarray(reference_input(x)).astype(dtypes.to_numpy(dtype))
        return super().reference(x, attrs=attrs)

    def compute(self, x: np.ndarray, attrs: object) -> np.ndarray:
        if x.dtype.kind != "f":
            return x
        if attrs.decimals == 0:
            return np.rint(x)
        factor = np.asarray(10.0**attrs.decimals, dtype=x.dtype)
        return np.rint(x * factor) / factor

    def scalar(self, x: PrimExpr, attrs: object) -> PrimExpr:
        if not dtypes.is_floating(x.dtype) or _beyond_precision(x.dtype, attrs.decimals):
            return x
        if attrs.decimals == 0:
            return tir.round(x)
        work = "float32" if x.dtype == "float16" else x.dtype
        value = tir.cast(x, work)
        factor = tir.const(10.0**attrs.decimals, work)
        return tir.cast(tir.round(value * factor) / factor, x.dtype)


def _beyond_precision(dtype: object, decimals: int) -> bool:
    """jax returns the operand when ``10**decimals`` exceeds the dtype's largest value."""
    largest = float(ml_dtypes.finfo(dtypes.to_numpy(dtypes.canonical(dtype))).max)
    return decimals > np.log10(largest)


@register
class Sign(SignedUnaryOp):
    """-1, 0 or 1 by the sign of ``x`` (``jnp.sign``); a float zero keeps its sign, NaN
    stays NaN; bools are rejected."""

    name = "sign"

    def compute(self, x: np.ndarray, attrs: object) -> np.ndarray:
        if x.dtype.kind == "f":
            return np.where(x > 0, 1, np.where(x < 0, -1, x)).astype(x.dtype)
        return np.sign(x)

    def scalar(self, x: PrimExpr, attrs: object) -> PrimExpr:
        one, zero = tir.const(1, x.dtype), tir.const(0, x.dtype)
        rest = x if dtypes.is_floating(x.dtype) else zero
        if dtypes.is_unsigned(x.dtype):
            return tir.select(x > zero, one, zero)
        return tir.select(x > zero, one, tir.select(x < zero, tir.const(-1, x.dtype), rest))


@register
class Square(UnaryOp):
    """``x * x``; bools compute in int32 (as jax)."""

    name = "square"

    def input_dtype(self, x: OperandType) -> str:
        dtype = dtypes.result_type(x)
        return "int32" if dtypes.is_bool(dtype) else dtype

    def compute(self, x: np.ndarray, attrs: object) -> np.ndarray:
        return x * x

    def scalar(self, x: PrimExpr, attrs: object) -> PrimExpr:
        return x * x


__all__ = ["RoundAttrs"]
