"""Binary float math: ``arctan2 copysign hypot nextafter float_power logaddexp
logaddexp2 heaviside`` (computed in ``to_inexact`` of the promoted dtype), ``fmod``,
``fmax``/``fmin`` (NaN-ignoring), ``ldexp`` and ``logical_xor``.

Shapes broadcast and dtypes promote as the arithmetic ops of
:mod:`relaxjax.ops.binary`. ``logaddexp`` never overflows: ``max + log1p(exp(-|x -
y|))``, as jax computes it.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from typing import ClassVar

import numpy as np

from relaxjax import dtypes, tir
from relaxjax.ir import StructInfo
from relaxjax.ops.base import (
    InferContext,
    broadcast_infos,
    operand_type,
    register,
    tensor_args,
    to_inexact,
    unsupported_dtype,
    value_type,
)
from relaxjax.ops.binary import BroadcastOp, IntegerResultOp, LogicalOp
from relaxjax.ops.kernel import broadcast_kernel
from relaxjax.ops.unary import OperandType
from relaxjax.tir import PrimExpr, PrimFunc


def strong(types: Sequence[OperandType]) -> list[OperandType]:
    """The operands' types with weak kinds made strong: for ops whose jax formula mixes in
    array constants, so that their results are never weakly typed."""
    return [t.dtype if isinstance(t, dtypes.Weak) else t for t in types]


class InexactBinaryOp(BroadcastOp):
    """A binary op computing in ``to_inexact`` of the promoted dtype (ints -> floats)."""

    #: Whether weakly typed operands give a weakly typed result (jax's ``lax`` functions);
    #: False for jax's compositions with array constants.
    keeps_weak: ClassVar[bool] = True

    def input_dtype(self, types: Sequence[OperandType]) -> str:
        return to_inexact(dtypes.result_type(*types))

    def promotion_operands(self, types: Sequence[OperandType]) -> Sequence[OperandType]:
        return types if self.keeps_weak else strong(types)


@register
class Arctan2(InexactBinaryOp):
    """The angle of the point ``(x2, x1)``: ``arctan2(x1, x2)``."""

    name = "arctan2"
    numpy_function = staticmethod(np.arctan2)
    tir_function = staticmethod(tir.atan2)


@register
class Copysign(InexactBinaryOp):
    """``|x1|`` with the sign bit of ``x2``."""

    name = "copysign"
    numpy_function = staticmethod(np.copysign)
    tir_function = staticmethod(tir.copysign)


@register
class Hypot(InexactBinaryOp):
    """``sqrt(x1 ** 2 + x2 ** 2)`` without intermediate overflow; inf if either is inf."""

    name = "hypot"
    keeps_weak = False
    numpy_function = staticmethod(np.hypot)
    tir_function = staticmethod(tir.hypot)


@register
class Nextafter(InexactBinaryOp):
    """The next value of the dtype after ``x1`` toward ``x2`` (``x2`` when equal)."""

    name = "nextafter"

    def reference(self, *arrays: object, attrs: object = None) -> np.ndarray:
        # In the result's own dtype (a float16 step is not a float32 one).
        out = dtypes.to_numpy(self.result_dtype([value_type(a) for a in arrays]))
        x, y = (np.asarray(a).astype(out) for a in arrays)
        return np.where(x == y, y, np.nextafter(x, y)).astype(out)

    tir_function = staticmethod(tir.nextafter)


@register
class FloatPower(InexactBinaryOp):
    """``x1 ** x2`` in floating point (``jnp.float_power``)."""

    name = "float_power"
    numpy_function = staticmethod(np.power)
    tir_function = staticmethod(tir.pow)


class _LogAddExp(InexactBinaryOp):
    """``log(b ** x1 + b ** x2) / log(b)`` as ``max + log1p(b ** -|x1 - x2|) / log(b)``;
    a NaN difference (NaN operand, or infinities of one sign) gives ``x1 + x2``."""

    #: The base of the exponentials; ``e`` or 2.
    base: float = math.e

    def compute(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        delta = x - y
        peak = np.maximum(x, y)
        if self.base == 2:
            tail = np.log1p(np.exp2(-np.abs(delta))) * np.asarray(1 / math.log(2), x.dtype)
        else:
            tail = np.log1p(np.exp(-np.abs(delta)))
        return np.where(np.isnan(delta), x + y, peak + tail)

    def scalar(self, x: PrimExpr, y: PrimExpr) -> PrimExpr:
        delta = x - y
        if self.base == 2:
            scale = tir.const(1 / math.log(2), x.dtype)
            tail = scale * tir.log1p(tir.exp2(-tir.abs(delta)))
        else:
            tail = tir.log1p(tir.exp(-tir.abs(delta)))
        return tir.select(tir.isnan(delta), x + y, tir.max(x, y) + tail)


@register
class LogAddExp(_LogAddExp):
    """``log(exp(x1) + exp(x2))`` without overflow."""

    name = "logaddexp"


@register
class LogAddExp2(_LogAddExp):
    """``log2(2 ** x1 + 2 ** x2)`` without overflow."""

    name = "logaddexp2"
    base = 2.0
    keeps_weak = False


@register
class Heaviside(InexactBinaryOp):
    """0 for ``x1 < 0``, 1 for ``x1 > 0``, ``x2`` where ``x1 == 0`` (NaN stays NaN)."""

    name = "heaviside"
    keeps_weak = False

    def compute(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        zero, one = np.zeros_like(x), np.ones_like(x)
        return np.where(x < 0, zero, np.where(x > 0, one, np.where(np.isnan(x), x, y)))

    def scalar(self, x: PrimExpr, y: PrimExpr) -> PrimExpr:
        zero, one = tir.const(0.0, x.dtype), tir.const(1.0, x.dtype)
        rest = tir.select(tir.isnan(x), x, y)
        return tir.select(x < zero, zero, tir.select(x > zero, one, rest))


@register
class Fmod(IntegerResultOp):
    """C's remainder: ``x1 - trunc(x1 / x2) * x2``, the sign of ``x1``; an integer
    remainder by 0 is 0 (as jax)."""

    name = "fmod"

    def compute(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        if x.dtype.kind == "f":
            return np.fmod(x, y)
        return np.fmod(x, np.where(y == 0, np.ones_like(y), y))

    def scalar(self, x: PrimExpr, y: PrimExpr) -> PrimExpr:
        if dtypes.is_floating(x.dtype):
            return tir.fmod(x, y)
        zero = tir.const(0, x.dtype)
        floor_mod = x % tir.select(tir.eq(y, zero), tir.const(1, x.dtype), y)
        if dtypes.is_unsigned(x.dtype):
            return floor_mod
        # The floor remainder has the sign of y; the truncated one the sign of x.
        differ = tir.logical_and(tir.ne(floor_mod, zero), tir.ne(x < zero, y < zero))
        return tir.select(differ, floor_mod - y, floor_mod)


class _NanIgnoringExtremum(BroadcastOp):
    """``x1`` where it wins the comparison or ``x2`` is NaN, else ``x2``."""

    def compute(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        wins = self.numpy_function(x, y)
        if x.dtype.kind == "f":
            wins = wins | np.isnan(y)
        return np.where(wins, x, y)

    def scalar(self, x: PrimExpr, y: PrimExpr) -> PrimExpr:
        if x.dtype == "bool":
            x8, y8 = tir.cast(x, "int8"), tir.cast(y, "int8")
            return tir.select(self.tir_function(x8, y8), x, y)
        wins = self.tir_function(x, y)
        if dtypes.is_floating(x.dtype):
            wins = tir.logical_or(wins, tir.isnan(y))
        return tir.select(wins, x, y)


@register
class Fmax(_NanIgnoringExtremum):
    """The elementwise maximum ignoring NaN (NaN only where both are NaN)."""

    name = "fmax"
    numpy_function = staticmethod(np.greater)
    tir_function = staticmethod(operator.gt)


@register
class Fmin(_NanIgnoringExtremum):
    """The elementwise minimum ignoring NaN (NaN only where both are NaN)."""

    name = "fmin"
    numpy_function = staticmethod(np.less)
    tir_function = staticmethod(operator.lt)


@register
class LogicalXor(LogicalOp):
    """``x1 != x2`` as truth values (nonzero is true); the result is bool."""

    name = "logical_xor"
    numpy_function = staticmethod(np.logical_xor)
    tir_function = staticmethod(tir.ne)


@register
class Ldexp(BroadcastOp):
    """``x1 * 2 ** x2`` exactly (rounded once), ``x2`` an integer or bool array; the
    result has ``to_inexact(x1)``'s dtype, whatever ``x2``'s (``jnp.ldexp``)."""

    name = "ldexp"
    operand_names = ("x", "exponent")

    def input_dtype(self, types: Sequence[OperandType]) -> str:
        base, exponent = types
        kind = dtypes.result_type(exponent)
        if dtypes.is_floating(kind):
            raise unsupported_dtype(self.name, kind, "an integer or bool exponent")
        return to_inexact(dtypes.result_type(base))

    def infer(self, args: Sequence[StructInfo], attrs: object, ctx: InferContext) -> StructInfo:
        infos = tensor_args(self.name, args, 2)
        return broadcast_infos(ctx, infos, self.result_dtype([operand_type(a) for a in args]))

    def reference(self, *arrays: object, attrs: object = None) -> np.ndarray:
        x, e = arrays
        out = dtypes.to_numpy(self.result_dtype([value_type(x), value_type(e)]))
        work = np.float64 if out == np.float64 else np.float32
        exponent = np.clip(np.asarray(e).astype(np.int64), -(2**16), 2**16).astype(np.int32)
        return np.ldexp(np.asarray(x).astype(out).astype(work), exponent).astype(out)

    def lower(
        self, arg_infos: Sequence[StructInfo], attrs: object, out_info: StructInfo
    ) -> PrimFunc:
        dtype = self.result_dtype([operand_type(a) for a in arg_infos])

        def scalar(x: PrimExpr, e: PrimExpr) -> PrimExpr:
            wide = tir.cast(e, "int64")
            bounded = tir.min(tir.max(wide, tir.const(-(2**16), "int64")), 2**16)
            return tir.ldexp(tir.cast(x, dtype), tir.cast(bounded, dtype))

        return broadcast_kernel(self.name, arg_infos, out_info, self.operand_names, scalar)


__all__ = ["InexactBinaryOp"]
