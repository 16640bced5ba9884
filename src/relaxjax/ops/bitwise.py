"""Bit operations on integers and bools: ``bitwise_and bitwise_or bitwise_xor invert
left_shift right_shift bitwise_count``, and ``gcd``/``lcm``.

Float operands are rejected (``TypeError``), as in jax. Bools are logical for and/or/xor
and invert; shifts compute bools in int32. A shift amount outside ``[0, bits)`` gives 0
(or -1 for a negative number shifted right), jax's (XLA's) definition; ``right_shift``
is arithmetic for signed dtypes and logical for ``uint8``. ``bitwise_count`` counts the
set bits of ``|x|`` as a uint8 (jax's ``population_count(abs(x))``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from relaxjax import arith, dtypes, tir
from relaxjax.ir import StructInfo
from relaxjax.ops.base import as_tensor_info, operand_type, register, unsupported_dtype
from relaxjax.ops.binary import BroadcastOp
from relaxjax.ops.binary_math import strong
from relaxjax.ops.kernel import KernelDims, broadcast_indices, convert, placeholders
from relaxjax.ops.serial import Scalars, loop_nest, seq, when
from relaxjax.ops.unary import OperandType, UnaryOp
from relaxjax.tir import For, PrimExpr, PrimFunc


def _integer_or_bool(op_name: str, dtype: str) -> str:
    if dtypes.is_floating(dtype):
        raise unsupported_dtype(op_name, dtype, "an integer or bool dtype")
    return dtype


class BitwiseOp(BroadcastOp):
    """A bitwise connective of integer or bool operands (jax's promotion)."""

    def input_dtype(self, types: Sequence[OperandType]) -> str:
        return _integer_or_bool(self.name, dtypes.result_type(*types))


@register
class BitwiseAnd(BitwiseOp):
    """``x1 & x2``."""

    name = "bitwise_and"
    numpy_function = staticmethod(np.bitwise_and)
    tir_function = staticmethod(tir.bitwise_and)


@register
class BitwiseOr(BitwiseOp):
    """``x1 | x2``."""

    name = "bitwise_or"
    numpy_function = staticmethod(np.bitwise_or)
    tir_function = staticmethod(tir.bitwise_or)


@register
class BitwiseXor(BitwiseOp):
    """``x1 ^ x2``."""

    name = "bitwise_xor"
    numpy_function = staticmethod(np.bitwise_xor)
    tir_function = staticmethod(tir.bitwise_xor)


class _Shift(BitwiseOp):
    """A shift of promoted integers (bools compute in int32)."""

    def input_dtype(self, types: Sequence[OperandType]) -> str:
        dtype = super().input_dtype(types)
        return "int32" if dtypes.is_bool(dtype) else dtype

    def compute(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        bits = x.dtype.itemsize * 8
        valid = (y >= 0) & (y < bits)
        shifted = self.numpy_function(x, np.where(valid, y, 0).astype(x.dtype))
        return np.where(valid, shifted, self.beyond(x))

    def beyond(self, x: np.ndarray) -> np.ndarray:
        """The result of shifting by an amount outside ``[0, bits)``."""
        return np.zeros_like(x)


@register
class LeftShift(_Shift):
    """``x1 << x2``."""

    name = "left_shift"
    numpy_function = staticmethod(np.left_shift)
    tir_function = staticmethod(tir.shift_left)


@register
class RightShift(_Shift):
    """``x1 >> x2``: arithmetic for signed dtypes, logical for unsigned."""

    name = "right_shift"
    numpy_function = staticmethod(np.right_shift)
    tir_function = staticmethod(tir.shift_right)

    def beyond(self, x: np.ndarray) -> np.ndarray:
        return np.where(x < 0, -1, 0).astype(x.dtype)


@register
class Invert(UnaryOp):
    """``~x`` (``not`` on bools)."""

    name = "invert"
    numpy_function = staticmethod(np.invert)
    tir_function = staticmethod(tir.bitwise_not)

    def input_dtype(self, x: OperandType) -> str:
        return _integer_or_bool(self.name, dtypes.result_type(x))


@register
class BitwiseCount(UnaryOp):
    """The number of set bits of ``|x|``, as uint8 (``jnp.bitwise_count``)."""

    name = "bitwise_count"

    def input_dtype(self, x: OperandType) -> str:
        dtype = _integer_or_bool(self.name, dtypes.result_type(x))
        return "int32" if dtypes.is_bool(dtype) else dtype

    def result_dtype(self, x: OperandType) -> str:
        self.input_dtype(x)
        return "uint8"

    def compute(self, x: np.ndarray, attrs: object) -> np.ndarray:
        return np.bitwise_count(x)

    def scalar(self, x: PrimExpr, attrs: object) -> PrimExpr:
        magnitude = x if dtypes.is_unsigned(x.dtype) else tir.abs(x)
        return tir.popcount(magnitude)


class _Divisors(BitwiseOp):
    """An op of integer operands computed with Euclid's algorithm on ``|x1|``, ``|x2|``."""

    def input_dtype(self, types: Sequence[OperandType]) -> str:
        dtype = dtypes.result_type(*types)
        if not dtypes.is_integer(dtype):
            raise unsupported_dtype(self.name, dtype, "an integer dtype")
        return dtype

    def promotion_operands(self, types: Sequence[OperandType]) -> Sequence[OperandType]:
        return strong(types)  # jax's while loop over arrays: strongly typed

    def lower(
        self, arg_infos: Sequence[StructInfo], attrs: object, out_info: StructInfo
    ) -> PrimFunc:
        """A serial kernel: per element, ``(a, b) = (b, a % b)`` while ``b != 0``, for at
        most the number of steps Euclid needs in this dtype (Lame's bound)."""
        dtype = self.input_dtype([operand_type(a) for a in arg_infos])
        dims = KernelDims()
        x, y = placeholders(dims, arg_infos, self.operand_names)
        out_shape = dims.broadcast_shape(out_info, [x.shape, y.shape])
        out = tir.Buffer(self.name, out_shape, as_tensor_info(out_info).dtype)
        state = Scalars({"a": dtype, "b": dtype, "rest": dtype})
        a, b = state.load("a"), state.load("b")
        zero = tir.const(0, dtype)
        step = seq(state.set("rest", a % b), state.set("a", b), state.set("b", state.load("rest")))
        euclid = For(
            arith.sym("step"), 0, _euclid_steps(dtype), "serial", when(tir.ne(b, zero), step)
        )

        def element(i: tuple) -> tir.Stmt:
            first = _magnitude(convert(x[broadcast_indices(x.shape, out_shape, i)], dtype))
            second = _magnitude(convert(y[broadcast_indices(y.shape, out_shape, i)], dtype))
            result = self.finish(first, second, a)
            return seq(
                state.set("a", first),
                state.set("b", second),
                euclid,
                tir.BufferStore(out, convert(result, out.dtype), i),
            )

        body = state.allocate(loop_nest(out_shape, "i", element))
        return PrimFunc(self.name, (x.buffer, y.buffer, out), body)

    def finish(self, x: PrimExpr, y: PrimExpr, divisor: PrimExpr) -> PrimExpr:
        """The result from ``|x1|``, ``|x2|`` and their greatest common divisor."""
        return divisor


def _magnitude(value: PrimExpr) -> PrimExpr:
    return value if dtypes.is_unsigned(value.dtype) else tir.abs(value)


def _euclid_steps(dtype: str) -> int:
    """Euclid needs at most k steps when the smaller operand is below Fibonacci(k + 1)."""
    limit, (a, b), steps = 2 ** (dtypes.itemsize(dtype) * 8), (1, 1), 0
    while b < limit:
        a, b, steps = b, a + b, steps + 1
    return steps + 1


@register
class Gcd(_Divisors):
    """The greatest common divisor of ``|x1|`` and ``|x2|`` (``gcd(0, 0) == 0``)."""

    name = "gcd"
    numpy_function = staticmethod(np.gcd)


@register
class Lcm(_Divisors):
    """The least common multiple of ``|x1|`` and ``|x2|`` (0 if either is 0)."""

    name = "lcm"
    numpy_function = staticmethod(np.lcm)

    def finish(self, x: PrimExpr, y: PrimExpr, divisor: PrimExpr) -> PrimExpr:
        zero = tir.const(0, divisor.dtype)
        safe = tir.select(tir.eq(divisor, zero), tir.const(1, divisor.dtype), divisor)
        return tir.select(tir.eq(divisor, zero), zero, x * (y // safe))


__all__ = ["BitwiseOp"]
