"""Classifying and decomposing floats: ``isnan isinf isfinite isposinf isneginf signbit``
(bool results for any operand dtype, as ``jax.numpy``: integers are finite and never
NaN), ``spacing`` and ``frexp``.

``signbit`` reads the sign bit (true for ``-0.0`` and negative NaNs); ``spacing`` and
``frexp`` work in the operand's own dtype: a float16 spacing is a float16 ulp.
"""

from __future__ import annotations

from collections.abc import Sequence

import ml_dtypes
import numpy as np

from relaxjax import dtypes, tir
from relaxjax.ir import StructInfo, TupleInfo
from relaxjax.ops.base import (
    InferContext,
    Op,
    operand_type,
    reference_input,
    register,
    tensor_args,
    to_inexact,
    value_type,
    with_dtype,
)
from relaxjax.ops.kernel import single_input
from relaxjax.ops.unary import FloatUnaryOp, OperandType, UnaryOp
from relaxjax.tir import PrimExpr, PrimFunc, te


class _Predicate(UnaryOp):
    """A test of every element; the result is bool whatever the operand's dtype."""

    #: The result for integer and bool operands.
    otherwise: bool = False

    def result_dtype(self, x: OperandType) -> str:
        self.input_dtype(x)
        return "bool"

    def compute(self, x: np.ndarray, attrs: object) -> np.ndarray:
        if x.dtype.kind == "f":
            return self.numpy_function(x)
        return np.full(x.shape, self.otherwise)

    def scalar(self, x: PrimExpr, attrs: object) -> PrimExpr:
        if dtypes.is_floating(x.dtype):
            return self.tir_function(x)
        return tir.const(self.otherwise, "bool")


@register
class IsNan(_Predicate):
    """``x`` is NaN."""

    name = "isnan"
    numpy_function = staticmethod(np.isnan)
    tir_function = staticmethod(tir.isnan)


@register
class IsInf(_Predicate):
    """``x`` is +inf or -inf."""

    name = "isinf"
    numpy_function = staticmethod(np.isinf)
    tir_function = staticmethod(tir.isinf)


@register
class IsFinite(_Predicate):
    """``x`` is neither infinite nor NaN (always true for integers)."""

    name = "isfinite"
    otherwise = True
    numpy_function = staticmethod(np.isfinite)
    tir_function = staticmethod(tir.isfinite)


def _equals(value: float):
    def tir_function(x: PrimExpr) -> PrimExpr:
        return tir.eq(x, tir.const(value, x.dtype))

    return tir_function


@register
class IsPosInf(_Predicate):
    """``x == +inf``."""

    name = "isposinf"
    numpy_function = staticmethod(np.isposinf)
    tir_function = staticmethod(_equals(np.inf))


@register
class IsNegInf(_Predicate):
    """``x == -inf``."""

    name = "isneginf"
    numpy_function = staticmethod(np.isneginf)
    tir_function = staticmethod(_equals(-np.inf))


@register
class SignBit(_Predicate):
    """The sign bit of ``x``: true for negative values, ``-0.0`` and negative NaNs;
    ``x < 0`` for integers, false for bools."""

    name = "signbit"
    numpy_function = staticmethod(np.signbit)

    def compute(self, x: np.ndarray, attrs: object) -> np.ndarray:
        if x.dtype.kind == "i":
            return x < 0
        return super().compute(x, attrs)

    def scalar(self, x: PrimExpr, attrs: object) -> PrimExpr:
        if dtypes.is_floating(x.dtype):
            one = tir.const(1.0, x.dtype)
            return tir.copysign(one, x) < tir.const(0.0, x.dtype)
        if dtypes.is_signed(x.dtype):
            return x < tir.const(0, x.dtype)
        return tir.const(False, "bool")


def _smallest_subnormal(dtype: str) -> float:
    return float(ml_dtypes.finfo(dtypes.to_numpy(dtype)).smallest_subnormal)


@register
class Spacing(FloatUnaryOp):
    """The distance from ``x`` to the next value of its dtype away from zero, with the
    sign of ``x`` (``jnp.spacing``; float16 steps toward +inf, as jax does)."""

    name = "spacing"
    keeps_weak = False  # jax's formula subtracts from nextafter of array constants

    def reference(self, *arrays: object, attrs: object = None) -> np.ndarray:
        # In the result's own dtype: a float16 step is not a float32 step.
        (x,) = arrays
        out = dtypes.to_numpy(self.result_dtype(value_type(x)))
        value = np.asarray(reference_input(x)).astype(out)
        inf = np.asarray(np.inf, out)
        with np.errstate(all="ignore"):
            if out == np.float16:
                return np.nextafter(value, inf) - value
            step = np.nextafter(value, np.copysign(inf, value)) - value
            tiny = np.copysign(np.asarray(_smallest_subnormal(out.name), out), value)
            return np.where(step == 0, tiny, step).astype(out)

    def scalar(self, x: PrimExpr, attrs: object) -> PrimExpr:
        inf = tir.const(np.inf, x.dtype)
        if x.dtype == "float16":
            return tir.nextafter(x, inf) - x
        step = tir.nextafter(x, tir.copysign(inf, x)) - x
        tiny = tir.copysign(tir.const(_smallest_subnormal(x.dtype), x.dtype), x)
        return tir.select(tir.eq(step, tir.const(0.0, x.dtype)), tiny, step)


@register
class Frexp(Op):
    """``(mantissa, exponent)`` with ``x == mantissa * 2 ** exponent``, ``0.5 <=
    |mantissa| < 1``; zeros, infinities and NaN give ``(x, 0)``. The mantissa has
    ``to_inexact(x)``'s dtype, the exponent is int32 (as ``jnp.frexp``)."""

    name = "frexp"
    pattern = "injective"
    num_inputs = 1

    def result_dtype(self, x: OperandType) -> str:
        return to_inexact(dtypes.result_type(x))

    def infer(self, args: Sequence[StructInfo], attrs: object, ctx: InferContext) -> StructInfo:
        (x,) = tensor_args(self.name, args, 1)
        dtype = self.result_dtype(operand_type(args[0]))
        return TupleInfo((with_dtype(x, dtype), with_dtype(x, "int32")))

    def reference(self, *arrays: object, attrs: object = None) -> tuple[np.ndarray, np.ndarray]:
        (x,) = arrays
        out = dtypes.to_numpy(self.result_dtype(value_type(x)))
        value = np.asarray(reference_input(x)).astype(out)
        mantissa, exponent = np.frexp(value.astype(np.float64 if out == np.float64 else np.float32))
        return mantissa.astype(out), exponent.astype(np.int32)

    def lower(
        self, arg_infos: Sequence[StructInfo], attrs: object, out_info: StructInfo
    ) -> PrimFunc:
        """``e = floor(log2 |x|) + 1``, ``m = ldexp(x, -e)``, then one correction each
        way for a rounded ``log2``; halves work in float32 (exactly)."""
        _, x = single_input(arg_infos)
        dtype = out_info.fields[0].dtype

        def body(*i: object) -> tuple[PrimExpr, PrimExpr]:
            return _frexp(tir.cast(x[i], dtype))

        mantissa, exponent = te.compute(x.shape, body, name=self.name)
        return te.create_prim_func([x, mantissa, exponent], name=self.name)


def _frexp(value: PrimExpr) -> tuple[PrimExpr, PrimExpr]:
    dtype = value.dtype
    work = "float64" if dtype == "float64" else "float32"
    v = tir.cast(value, work)

    def const(c: float) -> PrimExpr:
        return tir.const(c, work)

    special = tir.logical_or(tir.logical_or(tir.isnan(v), tir.isinf(v)), tir.eq(v, const(0.0)))
    e = tir.floor(tir.log2(tir.abs(v))) + const(1.0)
    e = tir.select(special, const(0.0), e)
    m = tir.ldexp(v, -e)
    big = tir.abs(m) >= const(1.0)
    m, e = tir.select(big, m * const(0.5), m), tir.select(big, e + const(1.0), e)
    small = tir.abs(m) < const(0.5)
    m, e = tir.select(small, m * const(2.0), m), tir.select(small, e - const(1.0), e)
    mantissa = tir.cast(tir.select(special, v, m), dtype)
    return mantissa, tir.cast(tir.select(special, const(0.0), e), "int32")


__all__: list[str] = []
