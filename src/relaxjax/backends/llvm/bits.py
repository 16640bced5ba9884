"""Intrinsics that work on the bits of a value: the integer bit operations and ``nextafter``.

Integer intrinsics (operands ints or bools of one dtype, registers ``iN``):
``bitwise_and/or/xor/not`` are LLVM's ``and or xor`` (``not`` is ``xor -1``);
``shift_left`` and ``shift_right`` give XLA's result for an amount outside ``[0, N)``
(0, or the sign fill for an arithmetic right shift) instead of LLVM's poison, by
selecting; ``popcount`` is ``llvm.ctpop``. All of them vectorise.

``nextafter(x, y)`` steps the bits of ``x`` by one unit of *its dtype* toward ``y``: a
float16 in its ``half`` register, a bfloat16 in the high half of its ``float`` register
(a step of ``1 << 16``), so the result is the neighbour in that dtype, as numpy and
ml_dtypes compute it (not the float32 neighbour).
"""

from __future__ import annotations

from collections.abc import Sequence

from llvmlite import ir

from ... import dtypes
from ...errors import LoweringError
from .numeric import F16, F32, F64

__all__ = ["BIT_FUNCTIONS", "emit_bit_function", "emit_nextafter"]

BIT_FUNCTIONS: frozenset[str] = frozenset(
    {"bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "shift_left"}
    | {"shift_right", "popcount"}
)
"""Functions of one int (or bool) dtype on the two's complement bits."""

_INT_OF_FLOAT = {F16: ir.IntType(16), F32: ir.IntType(32), F64: ir.IntType(64)}


def emit_bit_function(
    builder: ir.IRBuilder, name: str, args: Sequence[ir.Value], dtype: str
) -> ir.Value:
    """Apply the bit function ``name`` to register values of the int or bool ``dtype``."""
    if not (dtypes.is_integer(dtype) or dtypes.is_bool(dtype)):
        raise LoweringError(f"math function {name!r} needs int or bool arguments, got {dtype}")
    arity = 1 if name in ("bitwise_not", "popcount") else 2
    if len(args) != arity:
        raise LoweringError(f"math function {name!r} takes {arity} argument(s), given {len(args)}")
    if name == "bitwise_and":
        return builder.and_(*args)
    if name == "bitwise_or":
        return builder.or_(*args)
    if name == "bitwise_xor":
        return builder.xor(*args)
    if name == "bitwise_not":
        return builder.not_(args[0])
    if name == "popcount":
        ctpop = builder.module.declare_intrinsic("llvm.ctpop", [args[0].type])
        return builder.call(ctpop, [args[0]])
    return _shift(builder, name, args[0], args[1], signed=dtypes.is_signed(dtype))


def _shift(builder: ir.IRBuilder, name: str, x: ir.Value, y: ir.Value, signed: bool) -> ir.Value:
    type_ = x.type
    zero = ir.Constant(type_, 0)
    # An unsigned comparison also sends negative amounts out of range.
    valid = builder.icmp_unsigned("<", y, ir.Constant(type_, type_.width))
    amount = builder.select(valid, y, zero)
    if name == "shift_left":
        return builder.select(valid, builder.shl(x, amount), zero)
    if signed:
        fill = builder.ashr(x, ir.Constant(type_, type_.width - 1))
        return builder.select(valid, builder.ashr(x, amount), fill)
    return builder.select(valid, builder.lshr(x, amount), zero)


def emit_nextafter(builder: ir.IRBuilder, x: ir.Value, y: ir.Value, dtype: str) -> ir.Value:
    """The next value of ``dtype`` after ``x`` toward ``y`` (registers of ``dtype``).

    NaN in either operand gives NaN; ``x == y`` gives ``y``; from zero the step is the
    smallest subnormal with the sign of ``y``; otherwise the magnitude bits of ``x`` move
    one unit up (away from zero) or down.
    """
    int_type = _INT_OF_FLOAT[x.type]
    step = ir.Constant(int_type, 1 << 16 if dtype == "bfloat16" else 1)
    sign_mask = ir.Constant(int_type, 1 << (int_type.width - 1))
    x_bits, y_bits = builder.bitcast(x, int_type), builder.bitcast(y, int_type)
    zero = ir.Constant(x.type, 0.0)
    away = builder.icmp_unsigned(
        "==", builder.fcmp_ordered("<", x, y), builder.fcmp_ordered(">", x, zero)
    )
    stepped = builder.select(away, builder.add(x_bits, step), builder.sub(x_bits, step))
    from_zero = builder.or_(builder.and_(y_bits, sign_mask), step)
    is_zero = builder.fcmp_ordered("==", x, zero)
    bits = builder.select(is_zero, from_zero, stepped)
    result = builder.bitcast(bits, x.type)
    result = builder.select(builder.fcmp_ordered("==", x, y), y, result)
    unordered = builder.fcmp_unordered("uno", x, y)
    return builder.select(unordered, builder.fadd(x, y), result)
