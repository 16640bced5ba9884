"""Broadcasting binary elementwise ops: arithmetic ``add subtract multiply divide
floor_divide mod power maximum minimum``, comparisons ``equal not_equal less less_equal
greater greater_equal`` and logic ``logical_and logical_or``.

Shapes broadcast as in numpy (see :func:`relaxjax.ops.base.broadcast_shapes`); dtypes
follow jax.numpy with 64-bit types enabled, Python scalars weakly typed. Each op's dtype
rule is one method, ``result_dtype(types)``, shared by ``infer`` and by the numpy
``reference``.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from typing import ClassVar

import numpy as np

from relaxjax import dtypes, tir
from relaxjax.ir import PrimInfo, StructInfo
from relaxjax.ops.base import (
    InferContext,
    Op,
    broadcast_infos,
    in_compute_dtype,
    operand_type,
    register,
    tensor_args,
    to_inexact,
    unsupported_dtype,
    value_type,
    weak_result,
)
from relaxjax.ops.kernel import broadcast_kernel, convert
from relaxjax.ops.unary import OperandType
from relaxjax.tir import PrimExpr, PrimFunc


class BroadcastOp(Op):
    """An elementwise op over broadcast operands (numpy broadcasting, jax promotion)."""

    pattern = "broadcast"
    folds_scalars = True
    num_inputs = 2

    def input_dtype(self, types: Sequence[OperandType]) -> str:
        """The dtype every operand is converted to before the computation."""
        return dtypes.result_type(*types)

    def result_dtype(self, types: Sequence[OperandType]) -> str:
        """The dtype of the result (raises ``TypeError`` for unsupported dtypes)."""
        return self.input_dtype(types)

    #: Names of the kernel's input buffers.
    operand_names: tuple[str, ...] = ("x", "y")

    #: The numpy and loop-level functions of the operands that ``compute`` and
    #: ``scalar`` apply, for ops that need nothing else.
    numpy_function: ClassVar[Callable[..., np.ndarray]]
    tir_function: ClassVar[Callable[..., PrimExpr]]

    def compute(self, *operands: np.ndarray) -> np.ndarray:
        """The numpy computation on the converted operands."""
        return self.numpy_function(*operands)

    def scalar(self, *operands: PrimExpr) -> PrimExpr:
        """The loop-level computation of one element (operands already converted)."""
        return self.tir_function(*operands)

    def lower(
        self, arg_infos: Sequence[StructInfo], attrs: object, out_info: StructInfo
    ) -> PrimFunc:
        """One stage over the broadcast result: ``out[i] = scalar(x[...], y[...])``."""
        work = self.work_dtype(arg_infos)

        def scalar(*loads: PrimExpr) -> PrimExpr:
            return self.scalar(*(convert(v, work) for v in loads))

        names = self.operand_names[: len(arg_infos)]
        return broadcast_kernel(self.name, arg_infos, out_info, names, scalar)

    def work_dtype(self, arg_infos: Sequence[StructInfo]) -> str:
        """The dtype the kernel converts every operand to."""
        return self.input_dtype([operand_type(a) for a in arg_infos])

    def promotion_operands(self, types: Sequence[OperandType]) -> Sequence[OperandType]:
        """The operands whose promotion gives the result's dtype (and its weak type)."""
        return types

    def result_info(
        self, ctx: InferContext, args: Sequence[StructInfo], count: int | None
    ) -> StructInfo:
        """The broadcast result of ``count`` operands: its dtype, and weakly typed where
        jax's is (``x_i32 + 2.0`` is a weak float64)."""
        infos = tensor_args(self.name, args, count)
        types = [operand_type(a) for a in args]
        dtype = self.result_dtype(types)
        weak = weak_result(self.promotion_operands(types), dtype)
        return broadcast_infos(ctx, infos, dtype, weak)

    def infer(self, args: Sequence[StructInfo], attrs: object, ctx: InferContext) -> StructInfo:
        return self.result_info(ctx, args, self.num_inputs)

    def reference(self, *arrays: object, attrs: object = None) -> np.ndarray:
        if len(arrays) != self.num_inputs:
            raise TypeError(f"{self.name} takes {self.num_inputs} argument(s), got {len(arrays)}")
        kinds = [value_type(a) for a in arrays]
        out = self.result_dtype(kinds)
        work = self.input_dtype(kinds)
        with np.errstate(all="ignore"):
            result = self.compute(*(in_compute_dtype(a, work) for a in arrays))
        return np.asarray(result).astype(dtypes.to_numpy(out))


class ArithmeticOp(BroadcastOp):
    """Binary arithmetic that rejects bool operands (as jax's ``sub`` does)."""

    def input_dtype(self, types: Sequence[OperandType]) -> str:
        dtype = dtypes.result_type(*types)
        if dtypes.is_bool(dtype):
            raise unsupported_dtype(self.name, dtype, "an integer or floating dtype")
        return dtype


class IntegerResultOp(BroadcastOp):
    """Integer-valued arithmetic on bool operands computes in int32 (as jax does)."""

    def input_dtype(self, types: Sequence[OperandType]) -> str:
        dtype = dtypes.result_type(*types)
        return "int32" if dtypes.is_bool(dtype) else dtype


class ComparisonOp(BroadcastOp):
    """A comparison of promoted operands; the result is bool."""

    def result_dtype(self, types: Sequence[OperandType]) -> str:
        self.input_dtype(types)
        return "bool"


class OrderedComparisonOp(ComparisonOp):
    """An order comparison: bools compare as 0 and 1."""

    def scalar(self, x: PrimExpr, y: PrimExpr) -> PrimExpr:
        return self.tir_function(_ordered(x), _ordered(y))


class LogicalOp(BroadcastOp):
    """A logical connective of operands converted to bool (nonzero is true)."""

    def input_dtype(self, types: Sequence[OperandType]) -> str:
        return "bool"


@register
class Add(BroadcastOp):
    """``x + y`` (``or`` on bool)."""

    name = "add"

    def compute(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        return np.add(x, y)

    def scalar(self, x: PrimExpr, y: PrimExpr) -> PrimExpr:
        return tir.logical_or(x, y) if x.dtype == "bool" else x + y


@register
class Subtract(ArithmeticOp):
    """``x - y``."""

    name = "subtract"
    numpy_function = staticmethod(np.subtract)
    tir_function = staticmethod(operator.sub)


@register
class Multiply(BroadcastOp):
    """``x * y`` (``and`` on bool)."""

    name = "multiply"

    def compute(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        return np.multiply(x, y)

    def scalar(self, x: PrimExpr, y: PrimExpr) -> PrimExpr:
        return tir.logical_and(x, y) if x.dtype == "bool" else x * y


@register
class Divide(BroadcastOp):
    """True division ``x / y``: integer operands give float (``jnp.true_divide``)."""

    name = "divide"

    def input_dtype(self, types: Sequence[OperandType]) -> str:
        return to_inexact(dtypes.result_type(*types))

    numpy_function = staticmethod(np.true_divide)
    tir_function = staticmethod(operator.truediv)


@register
class FloorDivide(IntegerResultOp):
    """``x // y`` rounding toward negative infinity (integer division by zero is undefined)."""

    name = "floor_divide"
    numpy_function = staticmethod(np.floor_divide)
    tir_function = staticmethod(operator.floordiv)


@register
class Mod(IntegerResultOp):
    """``x % y`` with the sign of ``y`` (Python semantics)."""

    name = "mod"
    numpy_function = staticmethod(np.mod)
    tir_function = staticmethod(operator.mod)


@register
class Power(IntegerResultOp):
    """``x ** y``. Integers use jax's binary exponentiation (``_integer_power_expr``):
    products wrap, a negative exponent counts by its low bits as jax's does.

    As ``jnp.power``, a concrete integer exponent (a Python int or bool, or a symbolic dim:
    a scalar, not an array) keeps the base's dtype (bool becomes int32) and weak type;
    otherwise the operands promote, an integer result is strongly typed, and a float base
    with an integer exponent is weak only when both are.
    """

    name = "power"

    def input_dtype(self, types: Sequence[OperandType], concrete: bool = True) -> str:
        """``concrete``: whether a weak exponent is a scalar (see the class docstring);
        a reference's Python scalars are."""
        base, exponent = types
        if concrete and _is_weak_int(exponent) and base == "bool":
            return "int32"
        return super().input_dtype(types)

    def work_dtype(self, arg_infos: Sequence[StructInfo]) -> str:
        types = [operand_type(a) for a in arg_infos]
        return self.input_dtype(types, isinstance(arg_infos[1], PrimInfo))

    def result_info(
        self, ctx: InferContext, args: Sequence[StructInfo], count: int | None
    ) -> StructInfo:
        infos = tensor_args(self.name, args, count)
        base, exponent = types = [operand_type(a) for a in args]
        concrete = isinstance(args[1], PrimInfo)
        dtype = self.input_dtype(types, concrete)
        if concrete and _is_weak_int(exponent):
            weak = weak_result([base], dtype)  # lax.integer_pow of the base
        elif dtypes.is_integer(dtype):
            weak = False  # integer powers are computed from typed constants
        elif isinstance(exponent, str) and dtypes.is_integer(exponent):
            weak = False  # lax.pow(float base, typed integer exponent)
        else:
            weak = weak_result(types, dtype)
        return broadcast_infos(ctx, infos, dtype, weak)

    def compute(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        if x.dtype.kind == "f":
            return np.power(x, y)
        return _integer_power(x, y)

    def scalar(self, x: PrimExpr, y: PrimExpr) -> PrimExpr:
        if dtypes.is_floating(x.dtype):
            return tir.pow(x, y)
        return _integer_power_expr(x, y)


#: Integer powers square the base this many times, as jax's binary exponentiation:
#: any larger exponent overflows for ``|x| > 1`` (results wrap, as jax's).
_POWER_BITS = 6


def _integer_power_expr(x: PrimExpr, y: PrimExpr) -> PrimExpr:
    """``x ** y`` for integers by jax's rule: the low bits of ``y`` (two's complement,
    so a negative exponent uses ``y mod 64``), products wrapping; ``0 ** 0 == 1``."""
    zero, one = tir.const(0, x.dtype), tir.const(1, x.dtype)
    power = tir.select(tir.logical_and(tir.eq(x, zero), tir.ne(y, zero)), zero, one)
    bits = y % tir.const(2**_POWER_BITS, y.dtype) if dtypes.is_signed(y.dtype) else y
    base = x
    for _ in range(_POWER_BITS):
        odd = tir.ne(bits % tir.const(2, y.dtype), tir.const(0, y.dtype))
        power = tir.select(odd, power * base, power)
        base = base * base
        bits = bits // tir.const(2, y.dtype)
    return power


def _is_weak_int(operand: OperandType) -> bool:
    return isinstance(operand, dtypes.Weak) and operand.kind in ("int", "bool")


def maximum_expr(x: PrimExpr, y: PrimExpr) -> PrimExpr:
    return tir.logical_or(x, y) if x.dtype == "bool" else tir.max(x, y)


def minimum_expr(x: PrimExpr, y: PrimExpr) -> PrimExpr:
    return tir.logical_and(x, y) if x.dtype == "bool" else tir.min(x, y)


def _ordered(x: PrimExpr) -> PrimExpr:
    """Bools compare as 0 and 1."""
    return tir.cast(x, "int8") if x.dtype == "bool" else x


def _integer_power(base: np.ndarray, exponent: np.ndarray) -> np.ndarray:
    """The reference of ``_integer_power_expr`` (products wrap)."""
    base, exponent = np.broadcast_arrays(base, exponent)
    bits = np.mod(exponent, 2**_POWER_BITS) if exponent.dtype.kind == "i" else exponent
    zero = base.dtype.type(0)
    power = np.where((base == 0) & (exponent != 0), zero, base.dtype.type(1))
    with np.errstate(over="ignore"):
        for _ in range(_POWER_BITS):
            power = np.where(bits % 2 != 0, power * base, power)
            base = base * base
            bits = bits // 2
    return power


@register
class Maximum(BroadcastOp):
    """The elementwise maximum (NaN propagates)."""

    name = "maximum"
    numpy_function = staticmethod(np.maximum)
    tir_function = staticmethod(maximum_expr)


@register
class Minimum(BroadcastOp):
    """The elementwise minimum (NaN propagates)."""

    name = "minimum"
    numpy_function = staticmethod(np.minimum)
    tir_function = staticmethod(minimum_expr)


@register
class Equal(ComparisonOp):
    """``x == y``."""

    name = "equal"
    numpy_function = staticmethod(np.equal)
    tir_function = staticmethod(tir.eq)


@register
class NotEqual(ComparisonOp):
    """``x != y``."""

    name = "not_equal"
    numpy_function = staticmethod(np.not_equal)
    tir_function = staticmethod(tir.ne)


@register
class Less(OrderedComparisonOp):
    """``x < y``."""

    name = "less"
    numpy_function = staticmethod(np.less)
    tir_function = staticmethod(operator.lt)


@register
class LessEqual(OrderedComparisonOp):
    """``x <= y``."""

    name = "less_equal"
    numpy_function = staticmethod(np.less_equal)
    tir_function = staticmethod(operator.le)


@register
class Greater(OrderedComparisonOp):
    """``x > y``."""

    name = "greater"
    numpy_function = staticmethod(np.greater)
    tir_function = staticmethod(operator.gt)


@register
class GreaterEqual(OrderedComparisonOp):
    """``x >= y``."""

    name = "greater_equal"
    numpy_function = staticmethod(np.greater_equal)
    tir_function = staticmethod(operator.ge)


@register
class LogicalAnd(LogicalOp):
    """``x and y`` (nonzero is true); the result is bool."""

    name = "logical_and"
    numpy_function = staticmethod(np.logical_and)
    tir_function = staticmethod(tir.logical_and)


@register
class LogicalOr(LogicalOp):
    """``x or y`` (nonzero is true); the result is bool."""

    name = "logical_or"
    numpy_function = staticmethod(np.logical_or)
    tir_function = staticmethod(tir.logical_or)


__all__ = [
    "ArithmeticOp",
    "BroadcastOp",
    "ComparisonOp",
    "IntegerResultOp",
    "LogicalOp",
    "OrderedComparisonOp",
    "maximum_expr",
    "minimum_expr",
]
