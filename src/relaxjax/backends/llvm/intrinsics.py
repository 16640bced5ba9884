"""Math functions of TIR ``Call`` nodes, as LLVM intrinsics or libm calls.

float32 ``exp`` (also inside ``sigmoid``, and for float16/bfloat16, which compute in
float32) and float32 ``log`` are emitted inline by :mod:`.vector_math` so that loops
using them vectorise.
Elsewhere, where LLVM has an intrinsic that the x86 backend lowers (inline or to the libm
function of the same name: ``llvm.exp.f32`` -> ``expf``), it is used so the
optimiser knows its semantics; ``erf``, ``erfc``, ``log1p``, ``expm1``, ``asinh``,
``acosh``, ``atanh``, ``cbrt`` and ``hypot`` have none and call libm (``erff``/``erf``)
directly; ``fmod`` is LLVM's ``frem`` and ``ldexp`` is ``llvm.ldexp`` with the exponent
truncated to ``i32`` (clamped to +-65536 first, which cannot change the result). Every
one resolves in the JIT from the C library already loaded in the process (a test links
each). ``fma`` is
``a * b + c`` computed in double and rounded once for narrower floats (as the
reference interpreter does), unfused for double, and ``llvm.fmuladd`` under
fast-math.

float16 and bfloat16 compute in float32 and round the result, as numpy and
ml_dtypes do, except ``nextafter``, which steps in the operands' own dtype, and the
integer bit functions (:mod:`.bits`).
"""

from __future__ import annotations

from collections.abc import Sequence

from llvmlite import ir

from ... import dtypes
from ...errors import LoweringError
from .bits import BIT_FUNCTIONS, emit_bit_function, emit_nextafter
from .dialect import declare, dialect_of
from .numeric import F16, F32, F64, I1, I32, cast, round_to_dtype, widen
from .vector_math import emit_exp_f32, emit_log_f32

__all__ = ["FLOAT_FUNCTIONS", "INTEGER_FUNCTIONS", "PREDICATES", "declare", "emit_math"]

# name -> (LLVM intrinsic base or None, libm base name or None, arity)
_FLOAT_TABLE: dict[str, tuple[str | None, str | None, int]] = {
    "exp": ("llvm.exp", None, 1),
    "exp2": ("llvm.exp2", None, 1),
    "log": ("llvm.log", None, 1),
    "log2": ("llvm.log2", None, 1),
    "log10": ("llvm.log10", None, 1),
    "sqrt": ("llvm.sqrt", None, 1),
    "sin": ("llvm.sin", None, 1),
    "cos": ("llvm.cos", None, 1),
    "tan": ("llvm.tan", None, 1),
    "asin": ("llvm.asin", None, 1),
    "acos": ("llvm.acos", None, 1),
    "atan": ("llvm.atan", None, 1),
    "sinh": ("llvm.sinh", None, 1),
    "cosh": ("llvm.cosh", None, 1),
    "tanh": ("llvm.tanh", None, 1),
    "floor": ("llvm.floor", None, 1),
    "ceil": ("llvm.ceil", None, 1),
    "trunc": ("llvm.trunc", None, 1),
    "round": ("llvm.roundeven", None, 1),
    "abs": ("llvm.fabs", None, 1),
    "pow": ("llvm.pow", None, 2),
    "atan2": ("llvm.atan2", None, 2),
    "copysign": ("llvm.copysign", None, 2),
    "erf": (None, "erf", 1),
    "erfc": (None, "erfc", 1),
    "log1p": (None, "log1p", 1),
    "expm1": (None, "expm1", 1),
    "asinh": (None, "asinh", 1),
    "acosh": (None, "acosh", 1),
    "atanh": (None, "atanh", 1),
    "cbrt": (None, "cbrt", 1),
    "hypot": (None, "hypot", 2),
}
_DERIVED = ("rsqrt", "sigmoid", "fma", "fmod", "ldexp", "nextafter")
#: The largest exponent ldexp passes on: beyond it every result is 0 or inf already.
_LDEXP_LIMIT = 65536.0

FLOAT_FUNCTIONS: frozenset[str] = frozenset(_FLOAT_TABLE) | frozenset(_DERIVED)
"""Math functions accepted for floating-point arguments."""

INTEGER_FUNCTIONS: frozenset[str] = frozenset({"abs"}) | BIT_FUNCTIONS
"""Math functions accepted for integer arguments (the bit functions also for bools)."""

PREDICATES: frozenset[str] = frozenset({"isnan", "isinf", "isfinite"})
"""Functions of a float returning bool (true for integers: isfinite; false otherwise)."""

_SUFFIX = {F16: "f16", F32: "f32", F64: "f64"}


def emit_math(
    builder: ir.IRBuilder,
    name: str,
    args: Sequence[ir.Value],
    dtype: str,
    flags: tuple[str, ...] = (),
) -> ir.Value:
    """Apply math function ``name`` to register values of ``dtype``.

    Returns a value of ``dtype`` (``bool`` for the predicates ``isnan``/``isinf``/``isfinite``).

    Raises:
        LoweringError: unknown function, wrong number of arguments, or not defined for ``dtype``.
    """
    if name in PREDICATES:
        _check_arity(name, args, 1)
        return _predicate(builder, name, args[0], dtype)
    if name in BIT_FUNCTIONS:
        return emit_bit_function(builder, name, args, dtype)
    if dtypes.is_floating(dtype):
        if name not in FLOAT_FUNCTIONS:
            raise LoweringError(_unknown(name, dtype, FLOAT_FUNCTIONS | PREDICATES))
        return _float_function(builder, name, args, dtype, flags)
    if dtypes.is_integer(dtype) and name in INTEGER_FUNCTIONS:
        _check_arity(name, args, 1)
        return _integer_function(builder, name, args[0], dtype)
    raise LoweringError(_unknown(name, dtype, INTEGER_FUNCTIONS | PREDICATES))


def _unknown(name: str, dtype: str, known: frozenset[str]) -> str:
    listed = ", ".join(sorted(known))
    return f"math function {name!r} is not supported for {dtype}; supported: {listed}"


def _check_arity(name: str, args: Sequence[ir.Value], arity: int) -> None:
    if len(args) != arity:
        raise LoweringError(f"math function {name!r} takes {arity} argument(s), given {len(args)}")


def _float_function(
    builder: ir.IRBuilder, name: str, args: Sequence[ir.Value], dtype: str, flags: tuple[str, ...]
) -> ir.Value:
    if name == "fma":
        _check_arity(name, args, 3)
        return _fma(builder, args, dtype, flags)
    if name == "nextafter":
        _check_arity(name, args, 2)
        return emit_nextafter(builder, args[0], args[1], dtype)
    # float16 computes in float32 (bfloat16 registers are float32 already).
    wide = [widen(builder, a, F32) if a.type == F16 else a for a in args]
    result = _float_in_register(builder, name, wide, flags)
    if args[0].type == F16:
        result = builder.fptrunc(result, F16)
    return round_to_dtype(builder, result, dtype)


def _fma(
    builder: ir.IRBuilder, args: Sequence[ir.Value], dtype: str, flags: tuple[str, ...]
) -> ir.Value:
    type_ = args[0].type
    if "fast" in flags:
        function = declare(builder.module, f"llvm.fmuladd.{_SUFFIX[type_]}", type_, [type_] * 3)
        return round_to_dtype(builder, builder.call(function, list(args), fastmath=flags), dtype)
    if type_ == F64:
        return builder.fadd(builder.fmul(args[0], args[1]), args[2])
    # Narrower floats: the product is exact in double, so the sum is rounded once to
    # double and then to the dtype, as the reference interpreter computes it.
    wide = [widen(builder, a, F64) for a in args]
    total = builder.fadd(builder.fmul(wide[0], wide[1]), wide[2])
    return cast(builder, total, "float64", dtype)


def _float_in_register(
    builder: ir.IRBuilder, name: str, args: Sequence[ir.Value], flags: tuple[str, ...]
) -> ir.Value:
    type_ = args[0].type
    one = ir.Constant(type_, 1.0)
    if name == "rsqrt":
        _check_arity(name, args, 1)
        root = _float_in_register(builder, "sqrt", args, flags)
        return builder.fdiv(one, root, flags=flags)
    if name == "sigmoid":
        _check_arity(name, args, 1)
        negated = dialect_of(builder.module).negate(builder, args[0], flags)
        denominator = builder.fadd(one, _float_in_register(builder, "exp", [negated], flags), flags)
        return builder.fdiv(one, denominator, flags=flags)
    if name == "fmod":
        _check_arity(name, args, 2)
        return builder.frem(args[0], args[1], flags=flags)
    if name == "ldexp":
        _check_arity(name, args, 2)
        return _ldexp(builder, args[0], args[1])
    intrinsic, libm, arity = _FLOAT_TABLE[name]
    _check_arity(name, args, arity)
    if name == "exp" and type_ == F32 and dialect_of(builder.module).inline_exp:
        return emit_exp_f32(builder, args[0])
    if name == "log" and type_ == F32:
        return emit_log_f32(builder, args[0])
    if intrinsic is not None:
        symbol = f"{intrinsic}.{_SUFFIX[type_]}"
    else:
        symbol = f"{libm}f" if type_ == F32 else libm
    function = declare(builder.module, symbol, type_, [type_] * arity)
    return builder.call(function, list(args), fastmath=flags)


def _ldexp(builder: ir.IRBuilder, x: ir.Value, exponent: ir.Value) -> ir.Value:
    type_ = x.type
    suffix = _SUFFIX[type_]
    low = ir.Constant(type_, -_LDEXP_LIMIT)
    high = ir.Constant(type_, _LDEXP_LIMIT)
    maxnum = declare(builder.module, f"llvm.maxnum.{suffix}", type_, [type_, type_])
    minnum = declare(builder.module, f"llvm.minnum.{suffix}", type_, [type_, type_])
    clamped = builder.call(minnum, [builder.call(maxnum, [exponent, low]), high])
    function = declare(builder.module, f"llvm.ldexp.{suffix}.i32", type_, [type_, I32])
    return builder.call(function, [x, builder.fptosi(clamped, I32)])


def _integer_function(builder: ir.IRBuilder, name: str, value: ir.Value, dtype: str) -> ir.Value:
    if dtypes.is_unsigned(dtype):
        return value
    type_ = value.type
    function = declare(builder.module, f"llvm.abs.i{type_.width}", type_, [type_, I1])
    return builder.call(function, [value, ir.Constant(I1, 0)])


def _predicate(builder: ir.IRBuilder, name: str, value: ir.Value, dtype: str) -> ir.Value:
    if not dtypes.is_floating(dtype):
        return ir.Constant(I1, int(name == "isfinite"))
    infinity = ir.Constant(value.type, float("inf"))
    magnitude = builder.call(
        declare(builder.module, f"llvm.fabs.{_SUFFIX[value.type]}", value.type, [value.type]),
        [value],
    )
    if name == "isnan":
        return builder.fcmp_unordered("uno", value, value)
    if name == "isinf":
        return builder.fcmp_ordered("==", magnitude, infinity)
    return builder.fcmp_ordered("<", magnitude, infinity)
