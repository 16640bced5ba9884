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
"""

from __future__ import annotations

import math

from llvmlite import ir

from .dialect import declare
from .numeric import F32, I32

__all__ = ["EXP_F32_HIGH", "EXP_F32_LOW", "emit_exp_f32"]

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
