"""Elementwise ops: unary math, broadcasting binary arithmetic, comparisons, logic,
``where``, ``clip`` and ``astype``.

Shapes broadcast as in numpy (see :func:`relaxjax.ops.base.broadcast_shapes`);
dtypes follow jax.numpy with 64-bit types enabled, Python scalars weakly typed.
Each op's dtype rule is one method, ``result_dtype(types)``, shared by ``infer``
and by the numpy ``reference`` so the two can never disagree.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from relaxjax import dtypes, tir
from relaxjax.ir import StructInfo
from relaxjax.ops.base import (
    InferContext,
    Op,
    as_tensor_info,
    broadcast_infos,
    compute_dtype,
    operand_type,
    register,
    tensor_args,
    to_inexact,
    value_type,
    with_dtype,
)
from relaxjax.ops.kernel import (
    KernelDims,
    as_bool,
    broadcast_kernel,
    convert,
    placeholders,
)
from relaxjax.tir import PrimExpr, PrimFunc, te

OperandType = dtypes.Operand


def _reject(op_name: str, dtype: str, accepted: str) -> TypeError:
    return TypeError(f"{op_name} does not accept dtype {dtype}; expected {accepted}")


def _cast(value: object, dtype: str) -> np.ndarray:
    return np.asarray(value).astype(compute_dtype(dtype))


# --------------------------------------------------------------------------- unary


class UnaryOp(Op):
    """``f(x)`` applied to every element; the shape is unchanged."""

    pattern = "elementwise"
    num_inputs = 1

    def input_dtype(self, x: OperandType) -> str:
        """The dtype the operand is converted to before the computation."""
        return dtypes.result_type(x)

    def result_dtype(self, x: OperandType) -> str:
        """The dtype of the result (raises ``TypeError`` for an unsupported dtype)."""
        return self.input_dtype(x)

    def compute(self, x: np.ndarray, attrs: object) -> np.ndarray:
        """The numpy computation on the converted operand."""
        raise NotImplementedError

    def scalar(self, x: PrimExpr, attrs: object) -> PrimExpr:
        """The loop-level computation of one element (operand already converted)."""
        raise NotImplementedError

    def infer(self, args: Sequence[StructInfo], attrs: object, ctx: InferContext) -> StructInfo:
        (x,) = tensor_args(self.name, args, 1)
        return with_dtype(x, self.result_dtype(operand_type(args[0])))

    def lower(
        self, arg_infos: Sequence[StructInfo], attrs: object, out_info: StructInfo
    ) -> PrimFunc:
        """``out[i] = scalar(x[i])``; the result has the operand's (kernel) shape."""
        work = self.input_dtype(operand_type(arg_infos[0]))
        out_dtype = as_tensor_info(out_info).dtype
        (x,) = placeholders(KernelDims(), arg_infos[:1], ("x",))

        def body(*i: object) -> PrimExpr:
            return convert(self.scalar(convert(x[i], work), attrs), out_dtype)

        out = te.compute(x.shape, body, name=self.name)
        return te.create_prim_func([x, out], name=self.name)

    def reference(self, *arrays: object, attrs: object = None) -> np.ndarray:
        (x,) = arrays
        kind = value_type(x)
        out = self.result_dtype(kind)
        with np.errstate(all="ignore"):
            result = self.compute(_cast(x, self.input_dtype(kind)), attrs)
        return np.asarray(result).astype(dtypes.to_numpy(out))


class FloatUnaryOp(UnaryOp):
    """A transcendental function: integer and bool operands are converted to float."""

    def input_dtype(self, x: OperandType) -> str:
        return to_inexact(dtypes.result_type(x))


class SignedUnaryOp(UnaryOp):
    """An arithmetic unary op that rejects bool (as jax does)."""

    def input_dtype(self, x: OperandType) -> str:
        dtype = dtypes.result_type(x)
        if dtypes.is_bool(dtype):
            raise _reject(self.name, dtype, "an integer or floating dtype")
        return dtype


@register
class Negative(SignedUnaryOp):
    """``-x`` (unsigned integers wrap around)."""

    name = "negative"

    def compute(self, x: np.ndarray, attrs: object) -> np.ndarray:
        return np.negative(x)

    def scalar(self, x: PrimExpr, attrs: object) -> PrimExpr:
        return -x


@register
class Abs(UnaryOp):
    """``|x|``; bool stays bool."""

    name = "abs"

    def compute(self, x: np.ndarray, attrs: object) -> np.ndarray:
        return np.abs(x)

    def scalar(self, x: PrimExpr, attrs: object) -> PrimExpr:
        return x if x.dtype == "bool" else tir.abs(x)


@register
class Exp(FloatUnaryOp):
    """``e ** x``."""

    name = "exp"

    def compute(self, x: np.ndarray, attrs: object) -> np.ndarray:
        return np.exp(x)

    def scalar(self, x: PrimExpr, attrs: object) -> PrimExpr:
        return tir.exp(x)


@register
class Log(FloatUnaryOp):
    """The natural logarithm."""

    name = "log"

    def compute(self, x: np.ndarray, attrs: object) -> np.ndarray:
        return np.log(x)

    def scalar(self, x: PrimExpr, attrs: object) -> PrimExpr:
        return tir.log(x)


@register
class Sqrt(FloatUnaryOp):
    """The square root."""

    name = "sqrt"

    def compute(self, x: np.ndarray, attrs: object) -> np.ndarray:
        return np.sqrt(x)

    def scalar(self, x: PrimExpr, attrs: object) -> PrimExpr:
        return tir.sqrt(x)


@register
class Rsqrt(UnaryOp):
    """``1 / sqrt(x)`` with ``jax.lax.rsqrt`` semantics: floating operands only."""

    name = "rsqrt"

    def input_dtype(self, x: OperandType) -> str:
        dtype = dtypes.result_type(x)
        if not dtypes.is_floating(dtype):
            raise _reject(self.name, dtype, "a floating dtype")
        return dtype

    def compute(self, x: np.ndarray, attrs: object) -> np.ndarray:
        return 1 / np.sqrt(x)

    def scalar(self, x: PrimExpr, attrs: object) -> PrimExpr:
        return tir.rsqrt(x)


@register
class Tanh(FloatUnaryOp):
    """The hyperbolic tangent."""

    name = "tanh"

    def compute(self, x: np.ndarray, attrs: object) -> np.ndarray:
        return np.tanh(x)

    def scalar(self, x: PrimExpr, attrs: object) -> PrimExpr:
        return tir.tanh(x)


@register
class Sin(FloatUnaryOp):
    """The sine."""

    name = "sin"

    def compute(self, x: np.ndarray, attrs: object) -> np.ndarray:
        return np.sin(x)

    def scalar(self, x: PrimExpr, attrs: object) -> PrimExpr:
        return tir.sin(x)


@register
class Cos(FloatUnaryOp):
    """The cosine."""

    name = "cos"

    def compute(self, x: np.ndarray, attrs: object) -> np.ndarray:
        return np.cos(x)

    def scalar(self, x: PrimExpr, attrs: object) -> PrimExpr:
        return tir.cos(x)


@register
class LogicalNot(UnaryOp):
    """``not x`` (nonzero is true); the result is bool."""

    name = "logical_not"

    def input_dtype(self, x: OperandType) -> str:
        return "bool"

    def compute(self, x: np.ndarray, attrs: object) -> np.ndarray:
        return np.logical_not(x)

    def scalar(self, x: PrimExpr, attrs: object) -> PrimExpr:
        return tir.logical_not(x)


@dataclass(frozen=True, slots=True)
class AstypeAttrs:
    """The target dtype of ``astype`` (canonical name)."""

    dtype: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "dtype", dtypes.canonical(self.dtype))


@register
class Astype(UnaryOp):
    """Convert to ``attrs.dtype`` (floats to ints truncate toward zero; nonzero -> True)."""

    name = "astype"
    Attrs = AstypeAttrs

    def infer(self, args: Sequence[StructInfo], attrs: object, ctx: InferContext) -> StructInfo:
        (x,) = tensor_args(self.name, args, 1)
        return with_dtype(x, attrs.dtype)

    def reference(self, *arrays: object, attrs: object = None) -> np.ndarray:
        (x,) = arrays
        source = np.asarray(x).astype(dtypes.to_numpy(dtypes.result_type(value_type(x))))
        if dtypes.is_bool(attrs.dtype):
            return source != 0
        return source.astype(dtypes.to_numpy(attrs.dtype))

    def scalar(self, x: PrimExpr, attrs: object) -> PrimExpr:
        return x


# --------------------------------------------------------------------------- n-ary


class BroadcastOp(Op):
    """An elementwise op over broadcast operands (numpy broadcasting, jax promotion)."""

    pattern = "broadcast"
    num_inputs = 2

    def input_dtype(self, types: Sequence[OperandType]) -> str:
        """The dtype every operand is converted to before the computation."""
        return dtypes.result_type(*types)

    def result_dtype(self, types: Sequence[OperandType]) -> str:
        """The dtype of the result (raises ``TypeError`` for unsupported dtypes)."""
        return self.input_dtype(types)

    #: Names of the kernel's input buffers.
    operand_names: tuple[str, ...] = ("x", "y")

    def compute(self, *operands: np.ndarray) -> np.ndarray:
        """The numpy computation on the converted operands."""
        raise NotImplementedError

    def scalar(self, *operands: PrimExpr) -> PrimExpr:
        """The loop-level computation of one element (operands already converted)."""
        raise NotImplementedError

    def lower(
        self, arg_infos: Sequence[StructInfo], attrs: object, out_info: StructInfo
    ) -> PrimFunc:
        """One stage over the broadcast result: ``out[i] = scalar(x[...], y[...])``."""
        work = self.input_dtype([operand_type(a) for a in arg_infos])

        def scalar(*loads: PrimExpr) -> PrimExpr:
            return self.scalar(*(convert(v, work) for v in loads))

        names = self.operand_names[: len(arg_infos)]
        return broadcast_kernel(self.name, arg_infos, out_info, names, scalar)

    def infer(self, args: Sequence[StructInfo], attrs: object, ctx: InferContext) -> StructInfo:
        infos = tensor_args(self.name, args, self.num_inputs)
        dtype = self.result_dtype([operand_type(a) for a in args])
        return broadcast_infos(ctx, infos, dtype)

    def reference(self, *arrays: object, attrs: object = None) -> np.ndarray:
        if len(arrays) != self.num_inputs:
            raise TypeError(f"{self.name} takes {self.num_inputs} argument(s), got {len(arrays)}")
        kinds = [value_type(a) for a in arrays]
        out = self.result_dtype(kinds)
        work = self.input_dtype(kinds)
        with np.errstate(all="ignore"):
            result = self.compute(*(_cast(a, work) for a in arrays))
        return np.asarray(result).astype(dtypes.to_numpy(out))


class ArithmeticOp(BroadcastOp):
    """Binary arithmetic that rejects bool operands (as jax's ``sub`` does)."""

    def input_dtype(self, types: Sequence[OperandType]) -> str:
        dtype = dtypes.result_type(*types)
        if dtypes.is_bool(dtype):
            raise _reject(self.name, dtype, "an integer or floating dtype")
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

    def compute(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        return np.subtract(x, y)

    def scalar(self, x: PrimExpr, y: PrimExpr) -> PrimExpr:
        return x - y


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

    def compute(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        return np.true_divide(x, y)

    def scalar(self, x: PrimExpr, y: PrimExpr) -> PrimExpr:
        return x / y


@register
class FloorDivide(IntegerResultOp):
    """``x // y`` rounding toward negative infinity (integer division by zero is undefined)."""

    name = "floor_divide"

    def compute(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        return np.floor_divide(x, y)

    def scalar(self, x: PrimExpr, y: PrimExpr) -> PrimExpr:
        return x // y


@register
class Mod(IntegerResultOp):
    """``x % y`` with the sign of ``y`` (Python semantics)."""

    name = "mod"

    def compute(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        return np.mod(x, y)

    def scalar(self, x: PrimExpr, y: PrimExpr) -> PrimExpr:
        return x % y


@register
class Power(IntegerResultOp):
    """``x ** y``. An integer raised to a negative power is only defined for ``|x| == 1``
    (jax's value elsewhere depends on the platform); the reference gives 0 there."""

    name = "power"

    def input_dtype(self, types: Sequence[OperandType]) -> str:
        base, exponent = types
        if isinstance(exponent, dtypes.Weak) and exponent.kind == "int" and base == "bool":
            return "int32"
        return super().input_dtype(types)

    def compute(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        if x.dtype.kind == "f":
            return np.power(x, y)
        return _integer_power(x, y)

    def scalar(self, x: PrimExpr, y: PrimExpr) -> PrimExpr:
        if dtypes.is_floating(x.dtype):
            return tir.pow(x, y)
        # Integers go through float64 pow (exact below 2 ** 53); a negative power of 0
        # gives 0, as the reference does.
        power = tir.cast(tir.pow(tir.cast(x, "float64"), tir.cast(y, "float64")), x.dtype)
        zero = tir.const(0, x.dtype)
        return tir.select(tir.logical_and(tir.eq(x, zero), y < zero), zero, power)


def _maximum(x: PrimExpr, y: PrimExpr) -> PrimExpr:
    return tir.logical_or(x, y) if x.dtype == "bool" else tir.max(x, y)


def _minimum(x: PrimExpr, y: PrimExpr) -> PrimExpr:
    return tir.logical_and(x, y) if x.dtype == "bool" else tir.min(x, y)


def _ordered(x: PrimExpr) -> PrimExpr:
    """Bools compare as 0 and 1."""
    return tir.cast(x, "int8") if x.dtype == "bool" else x


def _integer_power(base: np.ndarray, exponent: np.ndarray) -> np.ndarray:
    negative = exponent < 0
    positive_power = np.power(base, np.where(negative, 0, exponent))
    odd = (exponent % 2) != 0
    one = np.ones_like(positive_power)
    reciprocal = np.where(base == 1, one, 0)
    if base.dtype.kind == "i":
        reciprocal = np.where(base == -1, np.where(odd, -one, one), reciprocal)
    return np.where(negative, reciprocal, positive_power)


@register
class Maximum(BroadcastOp):
    """The elementwise maximum (NaN propagates)."""

    name = "maximum"

    def compute(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        return np.maximum(x, y)

    def scalar(self, x: PrimExpr, y: PrimExpr) -> PrimExpr:
        return _maximum(x, y)


@register
class Minimum(BroadcastOp):
    """The elementwise minimum (NaN propagates)."""

    name = "minimum"

    def compute(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        return np.minimum(x, y)

    def scalar(self, x: PrimExpr, y: PrimExpr) -> PrimExpr:
        return _minimum(x, y)


@register
class Equal(ComparisonOp):
    """``x == y``."""

    name = "equal"

    def compute(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        return np.equal(x, y)

    def scalar(self, x: PrimExpr, y: PrimExpr) -> PrimExpr:
        return tir.eq(x, y)


@register
class NotEqual(ComparisonOp):
    """``x != y``."""

    name = "not_equal"

    def compute(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        return np.not_equal(x, y)

    def scalar(self, x: PrimExpr, y: PrimExpr) -> PrimExpr:
        return tir.ne(x, y)


@register
class Less(ComparisonOp):
    """``x < y``."""

    name = "less"

    def compute(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        return np.less(x, y)

    def scalar(self, x: PrimExpr, y: PrimExpr) -> PrimExpr:
        return _ordered(x) < _ordered(y)


@register
class LessEqual(ComparisonOp):
    """``x <= y``."""

    name = "less_equal"

    def compute(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        return np.less_equal(x, y)

    def scalar(self, x: PrimExpr, y: PrimExpr) -> PrimExpr:
        return _ordered(x) <= _ordered(y)


@register
class Greater(ComparisonOp):
    """``x > y``."""

    name = "greater"

    def compute(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        return np.greater(x, y)

    def scalar(self, x: PrimExpr, y: PrimExpr) -> PrimExpr:
        return _ordered(x) > _ordered(y)


@register
class GreaterEqual(ComparisonOp):
    """``x >= y``."""

    name = "greater_equal"

    def compute(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        return np.greater_equal(x, y)

    def scalar(self, x: PrimExpr, y: PrimExpr) -> PrimExpr:
        return _ordered(x) >= _ordered(y)


@register
class LogicalAnd(LogicalOp):
    """``x and y`` (nonzero is true); the result is bool."""

    name = "logical_and"

    def compute(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        return np.logical_and(x, y)

    def scalar(self, x: PrimExpr, y: PrimExpr) -> PrimExpr:
        return tir.logical_and(x, y)


@register
class LogicalOr(LogicalOp):
    """``x or y`` (nonzero is true); the result is bool."""

    name = "logical_or"

    def compute(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        return np.logical_or(x, y)

    def scalar(self, x: PrimExpr, y: PrimExpr) -> PrimExpr:
        return tir.logical_or(x, y)


@register
class Where(BroadcastOp):
    """``where(condition, x, y)``: all three broadcast; the dtype promotes ``x`` and ``y``."""

    name = "where"
    num_inputs = 3

    def input_dtype(self, types: Sequence[OperandType]) -> str:
        return dtypes.result_type(*types[1:])

    def reference(self, *arrays: object, attrs: object = None) -> np.ndarray:
        condition, x, y = arrays
        kinds = [value_type(a) for a in arrays]
        out = self.result_dtype(kinds)
        chosen = np.where(np.asarray(condition) != 0, _cast(x, out), _cast(y, out))
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
        infos = tensor_args(self.name, args, 1 + attrs.has_min + attrs.has_max)
        dtype = self.result_dtype([operand_type(a) for a in args])
        return broadcast_infos(ctx, infos, dtype)

    def reference(self, *arrays: object, attrs: object = None) -> np.ndarray:
        if len(arrays) != 1 + attrs.has_min + attrs.has_max:
            raise TypeError(f"clip with {attrs} takes {1 + attrs.has_min + attrs.has_max} arrays")
        kinds = [value_type(a) for a in arrays]
        out = self.result_dtype(kinds)
        x, *bounds = (_cast(a, out) for a in arrays)
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
                value = _maximum(rest.pop(0), value)
            if attrs.has_max:
                value = _minimum(rest.pop(0), value)
            return value

        return broadcast_kernel(self.name, arg_infos, out_info, names, scalar)


__all__ = [
    "AstypeAttrs",
    "BroadcastOp",
    "ClipAttrs",
    "UnaryOp",
]
