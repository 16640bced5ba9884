"""Math functions emitted inline as plain arithmetic, so that loops using them vectorise.

LLVM lowers ``llvm.exp.f32`` to a call of the C library's ``expf`` per element, and
no loop vectoriser can widen a call it has no vector variant for: a softmax or an
exact gelu then runs one element at a time. :func:`emit_exp_f32` computes the same
function from multiplies, adds, a rounding and integer bit operations, all of which
LLVM widens to full SIMD registers.

float32 ``exp(x)``:

1. ``x`` is clamped to ``[-104, 89]`` (beyond those ``exp`` rounds to 0 or overflows
   to ``inf`` in float32 anyway; the clamp keeps the integer steps in range). NaN is
   replaced by a number here and returned unchanged at the end.
2. Range reduction: ``k = roundeven(x / ln 2)``, ``r = x - k ln 2`` with ``ln 2`` split
   in two (Cody and Waite): ``LN2_HI`` has 9 significant bits, so ``k * LN2_HI`` and
   the first subtraction are exact for ``|k| <= 150``; ``|r| <= ln(2) / 2`` (+ a few ulp).
3. ``exp(r)`` by its Taylor polynomial of degree 7 in Horner form (truncation error
   below ``6e-9`` relative on ``|r| <= 0.35``; the rounding of the Horner steps
   dominates, about one ulp).
4. ``exp(x) = exp(r) * 2^k``: ``2^k`` is built from the exponent bits in two halves
   (``k = h + (k - h)``, ``h = k >> 1``), so ``k = 128`` (``x`` just below the overflow
   threshold) and results in the subnormal range (``k`` down to -150) round once,
   correctly, in the final multiply.

Accuracy (tests compare with float64 ``numpy.exp`` rounded to float32 on 5 million
points spanning the whole float32 range): at most 1 ulp (about 4% of results are 1
ulp off), subnormal results included; exact ``inf``/``0`` beyond the thresholds,
NaN in -> NaN out, ``exp(-inf) = 0``, ``exp(inf) = inf``.

float32 ``log(x)``: :func:`emit_log_f32` (exponent and mantissa from the bits, Cephes'
polynomial; at most 1 ulp with fused multiply-adds, see its docstring).
"""

from __future__ import annotations

import math

from llvmlite import ir

from .dialect import declare
from .numeric import F32, I32

__all__ = ["EXP_F32_HIGH", "EXP_F32_LOW", "LOG_F32_POLYNOMIAL", "emit_exp_f32", "emit_log_f32"]

#: float32 ``exp`` overflows to ``inf`` above about 88.7228; inputs are clamped to this.
EXP_F32_HIGH = 89.0
#: float32 ``exp`` rounds to 0 below about -103.972; inputs are clamped to this.
EXP_F32_LOW = -104.0

_LOG2_E = 1.0 / math.log(2.0)
_LN2_HI = 0.693359375  # 355 / 512: 9 significant bits
_LN2_LO = math.log(2.0) - _LN2_HI
_TAYLOR_DEGREE = 7
_FLOAT32_BIAS = 127
_FLOAT32_MANTISSA_BITS = 23


def _f32(value: float) -> ir.Constant:
    return ir.Constant(F32, value)


def _i32(value: int) -> ir.Constant:
    return ir.Constant(I32, value)


def _intrinsic(builder: ir.IRBuilder, name: str, arity: int) -> ir.Function:
    return declare(builder.module, name, F32, [F32] * arity)


def _mul_add(builder: ir.IRBuilder, a: ir.Value, b: ir.Value, c: ir.Value) -> ir.Value:
    """``a * b + c``, fused where the target has FMA (``llvm.fmuladd``)."""
    return builder.call(_intrinsic(builder, "llvm.fmuladd.f32", 3), [a, b, c])


def _power_of_two(builder: ir.IRBuilder, exponent: ir.Value) -> ir.Value:
    """``2.0 ** exponent`` for an i32 exponent in the normal range [-126, 127]."""
    biased = builder.add(exponent, _i32(_FLOAT32_BIAS))
    return builder.bitcast(builder.shl(biased, _i32(_FLOAT32_MANTISSA_BITS)), F32)


def emit_exp_f32(builder: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """``exp(x)`` for a float32 register value, as vectorisable inline arithmetic."""
    high = builder.select(builder.fcmp_ordered(">", x, _f32(EXP_F32_HIGH)), _f32(EXP_F32_HIGH), x)
    # Unordered: NaN also becomes the low bound, so the integer steps below see a number.
    low = builder.fcmp_unordered("<", high, _f32(EXP_F32_LOW))
    clamped = builder.select(low, _f32(EXP_F32_LOW), high)
    scaled = builder.fmul(clamped, _f32(_LOG2_E))
    k = builder.call(_intrinsic(builder, "llvm.roundeven.f32", 1), [scaled])
    reduced = _mul_add(builder, k, _f32(-_LN2_HI), clamped)
    reduced = _mul_add(builder, k, _f32(-_LN2_LO), reduced)
    polynomial = _f32(1.0 / math.factorial(_TAYLOR_DEGREE))
    for power in range(_TAYLOR_DEGREE - 1, -1, -1):
        polynomial = _mul_add(builder, polynomial, reduced, _f32(1.0 / math.factorial(power)))
    exponent = builder.fptosi(k, I32)
    half = builder.ashr(exponent, _i32(1))
    rest = builder.sub(exponent, half)
    partial = builder.fmul(polynomial, _power_of_two(builder, half))
    result = builder.fmul(partial, _power_of_two(builder, rest))
    return builder.select(builder.fcmp_unordered("uno", x, x), x, result)


# -- log ------------------------------------------------------------------------------

#: float32 ``log``: the coefficients of ``log(1 + f) - f + f^2 / 2 ~= f^3 P(f)`` on
#: ``sqrt(1/2) - 1 <= f <= sqrt(2) - 1`` (Cephes ``logf``), highest power first.
LOG_F32_POLYNOMIAL = (
    7.0376836292e-2,
    -1.1514610310e-1,
    1.1676998740e-1,
    -1.2420140846e-1,
    1.4249322787e-1,
    -1.6668057665e-1,
    2.0000714765e-1,
    -2.4999993993e-1,
    3.3333331174e-1,
)
_SMALLEST_NORMAL_F32 = 1.1754943508222875e-38
_TWO_POW_23 = 8388608.0
_LN2_TAIL = -2.12194440e-4  # ln 2 - 0.693359375


def emit_log_f32(builder: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """``log(x)`` for a float32 register value, as vectorisable inline arithmetic.

    ``x = m * 2^e`` with ``m`` in ``[sqrt(1/2), sqrt(2))`` read from the bits (a
    subnormal ``x`` is scaled by ``2^23`` first); ``log(x) = e ln 2 + log(1 + f)``,
    ``f = m - 1``, the latter by Cephes' polynomial, ``ln 2`` split in two. Accuracy
    (tests/backends/test_llvm_vector_math.py, against float64 ``numpy.log`` rounded to
    float32 on 2 million points over the whole positive range, subnormals included): at
    most 1 ulp with fused multiply-adds; ``log(+-0) = -inf``, ``log(x < 0) = NaN``,
    ``log(inf) = inf``, NaN in -> NaN out.
    """
    subnormal = builder.fcmp_ordered("<", x, _f32(_SMALLEST_NORMAL_F32))
    scaled = builder.select(subnormal, builder.fmul(x, _f32(_TWO_POW_23)), x)
    bits = builder.bitcast(scaled, I32)
    exponent = builder.sub(builder.ashr(bits, _i32(_FLOAT32_MANTISSA_BITS)), _i32(_FLOAT32_BIAS))
    exponent = builder.sub(exponent, builder.select(subnormal, _i32(23), _i32(0)))
    mantissa_bits = builder.or_(builder.and_(bits, _i32(0x7FFFFF)), _i32(0x3F800000))
    mantissa = builder.bitcast(mantissa_bits, F32)
    big = builder.fcmp_ordered(">", mantissa, _f32(math.sqrt(2.0)))
    mantissa = builder.select(big, builder.fmul(mantissa, _f32(0.5)), mantissa)
    exponent = builder.add(exponent, builder.zext(big, I32))
    f = builder.fsub(mantissa, _f32(1.0))
    e = builder.sitofp(exponent, F32)
    z = builder.fmul(f, f)
    y = _f32(LOG_F32_POLYNOMIAL[0])
    for coefficient in LOG_F32_POLYNOMIAL[1:]:
        y = _mul_add(builder, y, f, _f32(coefficient))
    y = builder.fmul(builder.fmul(y, f), z)
    y = _mul_add(builder, e, _f32(_LN2_TAIL), y)
    y = _mul_add(builder, z, _f32(-0.5), y)
    result = _mul_add(builder, e, _f32(_LN2_HI), builder.fadd(f, y))
    zero = builder.fcmp_ordered("==", x, _f32(0.0))
    result = builder.select(zero, _f32(-math.inf), result)
    negative = builder.fcmp_ordered("<", x, _f32(0.0))
    result = builder.select(negative, _f32(math.nan), result)
    infinite = builder.fcmp_ordered("==", x, _f32(math.inf))
    result = builder.select(infinite, x, result)
    return builder.select(builder.fcmp_unordered("uno", x, x), x, result)
