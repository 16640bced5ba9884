"""Element types in LLVM, and the arithmetic whose semantics need care.

Representation of each dtype (in registers / in memory):

========== ============= ==========
dtype      register      memory
========== ============= ==========
bool       i1            i8 (0 or 1)
int8/uint8 i8            i8
int16      i16           i16
int32      i32           i32
int64      i64           i64
float16    half          half
bfloat16   float (*)     i16 (the top half of the float32 bits)
float32    float         float
float64    double        double
========== ============= ==========

(*) A bfloat16 value lives in a ``float`` register that always holds a value
exactly representable in bfloat16: every operation producing a bfloat16 rounds
its float32 result to nearest-even (as ``ml_dtypes`` does), so storing it is a
plain truncation of the bits.

Division and modulo follow numpy: integer ``//`` and ``%`` floor (Python
semantics), division by zero gives 0 and ``INT_MIN // -1`` wraps (x86 ``idiv``
would trap on both); float ``//`` and ``%`` follow ``npy_divmod``.
Float-to-integer casts truncate toward zero; out of range (undefined in TIR) they
saturate at 32/64 bits and wrap below that, like numpy on x86, never poison.
"""

from __future__ import annotations

from llvmlite import ir

from ... import dtypes
from .dialect import declare, dialect_of

__all__ = [
    "F32",
    "I1",
    "I8",
    "I32",
    "I64",
    "cast",
    "constant",
    "floordiv_float",
    "floordiv_int",
    "is_bf16",
    "load",
    "mod_float",
    "mod_int",
    "register_type",
    "round_to_dtype",
    "storage_type",
    "store",
]

I1 = ir.IntType(1)
I8 = ir.IntType(8)
I16 = ir.IntType(16)
I32 = ir.IntType(32)
I64 = ir.IntType(64)
F16 = ir.HalfType()
F32 = ir.FloatType()
F64 = ir.DoubleType()

_REGISTER = {
    "bool": I1,
    "int8": I8,
    "uint8": I8,
    "int16": I16,
    "int32": I32,
    "int64": I64,
    "float16": F16,
    "bfloat16": F32,
    "float32": F32,
    "float64": F64,
}
_STORAGE = {**_REGISTER, "bool": I8, "bfloat16": I16}
_FLOAT_BITS = {F16: 16, F32: 32, F64: 64}


def register_type(dtype: str) -> ir.Type:
    """The LLVM type holding a value of ``dtype`` in registers."""
    return _REGISTER[dtype]


def storage_type(dtype: str) -> ir.Type:
    """The LLVM type of one element of ``dtype`` in memory."""
    return _STORAGE[dtype]


def is_bf16(dtype: str) -> bool:
    """True for bfloat16, the one dtype computed in a wider register type."""
    return dtype == "bfloat16"


def constant(value: bool | int | float, dtype: str) -> ir.Constant:
    """An LLVM constant of ``dtype`` (register representation) for a Python scalar."""
    if dtypes.is_bool(dtype):
        return ir.Constant(I1, int(bool(value)))
    if dtypes.is_integer(dtype):
        bits = register_type(dtype).width
        return ir.Constant(register_type(dtype), int(value) & ((1 << bits) - 1))
    if is_bf16(dtype):
        return ir.Constant(F32, float(dtypes.to_numpy("bfloat16").type(value)))
    return ir.Constant(register_type(dtype), float(value))


def load(builder: ir.IRBuilder, pointer: ir.Value, dtype: str) -> ir.Value:
    """Load one element of ``dtype`` from ``pointer`` into its register type."""
    raw = builder.load(pointer, align=dtypes.itemsize(dtype))
    if dtypes.is_bool(dtype):
        return builder.icmp_unsigned("!=", raw, ir.Constant(I8, 0))
    if is_bf16(dtype):
        wide = builder.shl(builder.zext(raw, I32), ir.Constant(I32, 16))
        return builder.bitcast(wide, F32)
    return raw


def store(builder: ir.IRBuilder, value: ir.Value, pointer: ir.Value, dtype: str) -> None:
    """Store a register value of ``dtype`` to ``pointer``."""
    if dtypes.is_bool(dtype):
        value = builder.zext(value, I8)
    elif is_bf16(dtype):
        bits = builder.lshr(builder.bitcast(value, I32), ir.Constant(I32, 16))
        value = builder.trunc(bits, I16)
    builder.store(value, pointer, align=dtypes.itemsize(dtype))


def round_to_dtype(builder: ir.IRBuilder, value: ir.Value, dtype: str) -> ir.Value:
    """Round a float32 register value to ``dtype``'s precision (a no-op except bfloat16).

    bfloat16: round to nearest, ties to even, on the float32 bits; NaN stays a quiet NaN.
    """
    if not is_bf16(dtype):
        return value
    bits = builder.bitcast(value, I32)
    lsb = builder.and_(builder.lshr(bits, ir.Constant(I32, 16)), ir.Constant(I32, 1))
    bias = builder.add(lsb, ir.Constant(I32, 0x7FFF))
    rounded = builder.and_(builder.add(bits, bias), ir.Constant(I32, 0xFFFF0000))
    quiet_nan = builder.or_(
        builder.and_(bits, ir.Constant(I32, 0xFFFF0000)), ir.Constant(I32, 0x00400000)
    )
    is_nan = builder.fcmp_unordered("uno", value, value)
    return builder.bitcast(builder.select(is_nan, quiet_nan, rounded), F32)


def cast(builder: ir.IRBuilder, value: ir.Value, source: str, dest: str) -> ir.Value:
    """Convert a register value from dtype ``source`` to dtype ``dest`` (jax's semantics).

    bfloat16 results are rounded through float32, as ``ml_dtypes`` does; float to
    integer truncates toward zero and saturates at the target's range, NaN giving 0
    (jax's rule); anything to bool tests ``!= 0``.
    """
    if source == dest:
        return value
    if dtypes.is_bool(dest):
        if dtypes.is_floating(source):
            return builder.fcmp_unordered("!=", value, ir.Constant(value.type, 0.0))
        return builder.icmp_unsigned("!=", value, ir.Constant(value.type, 0))
    if dtypes.is_floating(dest):
        return _to_float(builder, value, source, dest)
    return _to_integer(builder, value, source, dest)


def _to_float(builder: ir.IRBuilder, value: ir.Value, source: str, dest: str) -> ir.Value:
    target = register_type(dest)
    if dtypes.is_bool(source) or dtypes.is_unsigned(source):
        converted = builder.uitofp(value, target)
    elif dtypes.is_integer(source):
        converted = builder.sitofp(value, target)
    elif value.type == target:
        converted = value
    elif value.type == F64 and target == F16:
        converted = builder.fptrunc(_to_float_rounding_to_odd(builder, value), F16)
    elif _FLOAT_BITS[value.type] > _FLOAT_BITS[target]:
        converted = builder.fptrunc(value, target)
    else:
        converted = widen(builder, value, target)
    return round_to_dtype(builder, converted, dest)


def widen(builder: ir.IRBuilder, value: ir.Value, target: ir.Type) -> ir.Value:
    """``value`` (a float register) extended exactly to the wider float ``target``;
    half goes through the module's dialect (:meth:`Dialect.widen_half`)."""
    if value.type == F16:
        value = dialect_of(builder.module).widen_half(builder, value)
    return value if value.type == target else builder.fpext(value, target)


def _to_float_rounding_to_odd(builder: ir.IRBuilder, value: ir.Value) -> ir.Value:
    """double -> float rounding to odd, so a second rounding to half is exact (RNE).

    Rounding to odd (truncate, then set the last bit if anything was lost) into a
    format with at least 2 more bits than the final one makes double rounding
    correct; float has 24 bits, half 11. This avoids ``__truncdfhf2``, which the
    process may not provide.
    """
    nearest = builder.fptrunc(value, F32)
    exact = builder.fcmp_unordered("==", builder.fpext(nearest, F64), value)
    bits = builder.bitcast(nearest, I32)
    magnitude = _intrinsic(builder, "llvm.fabs.f64", F64, [F64])
    overshoot = builder.fcmp_ordered(
        ">",
        builder.call(magnitude, [builder.fpext(nearest, F64)]),
        builder.call(magnitude, [value]),
    )
    toward_zero = builder.select(overshoot, builder.sub(bits, ir.Constant(I32, 1)), bits)
    odd = builder.bitcast(builder.or_(toward_zero, ir.Constant(I32, 1)), F32)
    return builder.select(exact, nearest, odd)


def _to_integer(builder: ir.IRBuilder, value: ir.Value, source: str, dest: str) -> ir.Value:
    target = register_type(dest)
    if dtypes.is_floating(source):
        # As jax (XLA's convert): truncate toward zero, saturate at the target's range,
        # NaN gives 0 (numpy wraps narrow integers instead).
        if value.type == F16:  # LLVM's half saturation gets NaN wrong for i16 on x86
            value = widen(builder, value, F32)
        sign = "u" if dtypes.is_unsigned(dest) else "s"
        name = f"llvm.fpto{sign}i.sat.i{target.width}.{_float_suffix(value.type)}"
        return builder.call(_intrinsic(builder, name, target, [value.type]), [value])
    width, new_width = value.type.width, target.width
    if new_width == width:
        return value
    if new_width < width:
        return builder.trunc(value, target)
    if dtypes.is_bool(source) or dtypes.is_unsigned(source):
        return builder.zext(value, target)
    return builder.sext(value, target)


def _float_suffix(type_: ir.Type) -> str:
    return {F16: "f16", F32: "f32", F64: "f64"}[type_]


def _intrinsic(builder: ir.IRBuilder, name: str, ret: ir.Type, args: list[ir.Type]) -> ir.Function:
    return declare(builder.module, name, ret, args)


def floordiv_int(builder: ir.IRBuilder, a: ir.Value, b: ir.Value, signed: bool) -> ir.Value:
    """``a // b`` for integers: floor semantics; ``x // 0 == 0``; ``INT_MIN // -1`` wraps."""
    return _divmod_int(builder, a, b, signed)[0]


def mod_int(builder: ir.IRBuilder, a: ir.Value, b: ir.Value, signed: bool) -> ir.Value:
    """``a % b`` for integers: the sign of ``b`` (Python semantics); ``x % 0 == 0``."""
    return _divmod_int(builder, a, b, signed)[1]


def _divmod_int(
    builder: ir.IRBuilder, a: ir.Value, b: ir.Value, signed: bool
) -> tuple[ir.Value, ir.Value]:
    zero, one = ir.Constant(a.type, 0), ir.Constant(a.type, 1)
    if isinstance(b, ir.Constant) and isinstance(b.constant, int):
        value = b.constant if not signed else _signed_value(b.constant, b.type.width)
        if value > 0 or (not signed and value != 0):
            return _floor_adjusted(builder, a, b, signed, known_positive=True)
    if not signed:
        is_zero = builder.icmp_unsigned("==", b, zero)
        safe = builder.select(is_zero, one, b)
        q, r = builder.udiv(a, safe), builder.urem(a, safe)
        return builder.select(is_zero, zero, q), builder.select(is_zero, zero, r)
    is_zero = builder.icmp_signed("==", b, zero)
    is_minus_one = builder.icmp_signed("==", b, ir.Constant(a.type, -1))
    safe = builder.select(builder.or_(is_zero, is_minus_one), one, b)
    q, r = _floor_adjusted(builder, a, safe, signed=True, known_positive=False)
    q = builder.select(is_minus_one, builder.sub(zero, a), q)
    q = builder.select(is_zero, zero, q)
    r = builder.select(builder.or_(is_zero, is_minus_one), zero, r)
    return q, r


def _signed_value(raw: int, width: int) -> int:
    raw &= (1 << width) - 1
    return raw - (1 << width) if raw >> (width - 1) else raw


def _floor_adjusted(
    builder: ir.IRBuilder, a: ir.Value, b: ir.Value, signed: bool, known_positive: bool
) -> tuple[ir.Value, ir.Value]:
    if not signed:
        return builder.udiv(a, b), builder.urem(a, b)
    q, r = builder.sdiv(a, b), builder.srem(a, b)
    zero = ir.Constant(a.type, 0)
    if known_positive:
        needs_fix = builder.icmp_signed("<", r, zero)
    else:
        signs_differ = builder.icmp_signed("<", builder.xor(r, b), zero)
        needs_fix = builder.and_(builder.icmp_signed("!=", r, zero), signs_differ)
    q = builder.select(needs_fix, builder.sub(q, ir.Constant(a.type, 1)), q)
    r = builder.select(needs_fix, builder.add(r, b), r)
    return q, r


def floordiv_float(
    builder: ir.IRBuilder, a: ir.Value, b: ir.Value, flags: tuple[str, ...] = ()
) -> ir.Value:
    """``numpy.floor_divide`` for floats of one register type (``npy_divmod``)."""
    return _divmod_float(builder, a, b, flags)[0]


def mod_float(
    builder: ir.IRBuilder, a: ir.Value, b: ir.Value, flags: tuple[str, ...] = ()
) -> ir.Value:
    """``numpy.remainder`` for floats of one register type: the sign of ``b``."""
    return _divmod_float(builder, a, b, flags)[1]


def _divmod_float(
    builder: ir.IRBuilder, a: ir.Value, b: ir.Value, flags: tuple[str, ...]
) -> tuple[ir.Value, ir.Value]:
    type_ = a.type
    zero, one, half = (ir.Constant(type_, v) for v in (0.0, 1.0, 0.5))
    suffix = _float_suffix(type_)
    floor = _intrinsic(builder, f"llvm.floor.{suffix}", type_, [type_])
    copysign = _intrinsic(builder, f"llvm.copysign.{suffix}", type_, [type_, type_])
    fmod = builder.frem(a, b, flags=flags)
    quotient = builder.fdiv(a, b, flags=flags)
    div = builder.fdiv(builder.fsub(a, fmod, flags=flags), b, flags=flags)
    # Python's convention: the remainder takes the sign of the divisor.
    mod_nonzero = builder.fcmp_unordered("!=", fmod, zero)
    signs_differ = builder.xor(
        builder.fcmp_ordered("<", b, zero), builder.fcmp_ordered("<", fmod, zero)
    )
    fix = builder.and_(mod_nonzero, signs_differ)
    mod = builder.select(fix, builder.fadd(fmod, b, flags=flags), fmod)
    div = builder.select(fix, builder.fsub(div, one, flags=flags), div)
    mod = builder.select(mod_nonzero, mod, builder.call(copysign, [zero, b]))
    # Snap the quotient to the nearest integer; a zero quotient takes the sign of a / b.
    floored = builder.call(floor, [div])
    round_up = builder.fcmp_ordered(">", builder.fsub(div, floored, flags=flags), half)
    floored = builder.select(round_up, builder.fadd(floored, one, flags=flags), floored)
    div_nonzero = builder.fcmp_unordered("!=", div, zero)
    floordiv = builder.select(div_nonzero, floored, builder.call(copysign, [zero, quotient]))
    b_is_zero = builder.fcmp_ordered("==", b, zero)
    return builder.select(b_is_zero, quotient, floordiv), builder.select(b_is_zero, fmod, mod)
