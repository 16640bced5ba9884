"""The math intrinsics a TIR :class:`~relaxjax.tir.expr.Call` may name, with their type rules.

Semantics every backend implements (the reference interpreter is the executable spec):

- float16 and bfloat16 operations compute in float32 and round each result back
  (round to nearest even);
- ``rsqrt(x) = 1 / sqrt(x)``, ``sigmoid(x) = 1 / (1 + exp(-x))``, ``round`` rounds half
  to even, ``fma(a, b, c) = a * b + c`` (fused or not);
- ``nextafter(x, y)`` is the next value of the operands' own dtype after ``x`` toward
  ``y`` (a float16 or bfloat16 step, not a float32 one); ``ldexp(x, e) = x * 2 ** e``
  exactly, rounded once, for an integral ``e`` given in ``x``'s dtype (a fraction is
  truncated toward zero; ``e`` must not be NaN); ``fmod`` is C's (the sign of ``x``);
- the integer intrinsics take ints or bools of one dtype: ``bitwise_and/or/xor/not``
  (logical on bool), ``shift_left``, ``shift_right`` (arithmetic for signed dtypes,
  logical for unsigned) and ``popcount`` (of the two's complement bits). A shift by an
  amount outside ``[0, bits)`` gives 0, or -1 for a negative value shifted right
  arithmetically (as XLA and ``jax.lax`` define it);
- ``if_then_else(cond, a, b)`` evaluates only the selected operand (unlike ``Select``,
  which evaluates both): use it to guard loads that would be out of bounds.

GPU intrinsics (:data:`GPU_INTRINSICS`) synchronise the threads of a kernel; they are
only meaningful inside a ``thread_binding`` nest over ``threadIdx`` (see
:mod:`relaxjax.tir.simt` for their exact semantics, which the interpreter runs):

- ``syncthreads()``: a barrier of the thread block (``__syncthreads``); used as a
  statement, ``Evaluate(syncthreads())``; its value is an unused ``int32`` 0;
- ``shfl_xor(value, lane_mask)``: the ``value`` of lane ``lane ^ lane_mask`` of the
  same warp (``__shfl_xor_sync`` with the mask of the warp's threads);
- ``shfl_down(value, offset)``: the ``value`` of lane ``lane + offset``, or the
  thread's own ``value`` when that lane is past the end of the warp
  (``__shfl_down_sync``).

- ``mma_m16n8k16(q, a0..a7, b0..b3, c0..c3)``: the tensor-core product of the warp
  (``mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}.{f16,bf16}.f32``): each lane
  holds its fragments of a 16x16 ``A``, a 16x8 ``B`` (float16 or bfloat16) and a 16x8
  float32 ``C`` in the PTX ISA's layout; the value is element ``q`` (0..3) of the
  lane's fragment of ``D = A @ B + C``.

- ``ldmatrix_x4(trans, q, v0..v7)``: the warp's load of four 8x8 matrices of 16-bit
  elements from shared memory (``ldmatrix.sync.aligned.m8n8.x4[.trans].shared.b16``):
  lane ``L`` gives row ``L % 8`` of matrix ``L // 8`` (``v0..v7``: eight consecutive
  elements of one shared buffer, 16-byte aligned); the value is element ``q`` (0..7)
  of what the lane receives, ``q % 2`` of register ``q // 2``: element ``(L // 4,
  2 * (L % 4) + q % 2)`` of matrix ``q // 2``, transposed with ``trans``.

A warp is 32 threads of consecutive linear ids ``x + X * (y + Y * z)``.
"""

from __future__ import annotations

from dataclasses import dataclass

OPERAND_KINDS: tuple[str, ...] = ("float", "numeric", "integer")
RESULT_KINDS: tuple[str, ...] = ("same", "bool")


@dataclass(frozen=True, slots=True)
class Intrinsic:
    """The signature of an intrinsic: operand count and kind, and the result dtype rule.

    ``operands`` is ``"float"`` (all operands one floating dtype), ``"numeric"`` (one
    int or float dtype) or ``"integer"`` (one int or bool dtype); ``result`` is
    ``"same"`` (the operands' dtype) or ``"bool"``.
    """

    name: str
    arity: int
    operands: str
    result: str

    def __post_init__(self) -> None:
        if self.operands not in OPERAND_KINDS or self.result not in RESULT_KINDS:
            raise ValueError(f"bad intrinsic signature {self}")


def _table(*entries: Intrinsic) -> dict[str, Intrinsic]:
    return {entry.name: entry for entry in entries}


_FLOAT_UNARY = (
    ("exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "rsqrt")
    + ("sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh")
    + ("asinh", "acosh", "atanh", "cbrt", "erf", "erfc", "sigmoid")
    + ("floor", "ceil", "trunc", "round")
)
_FLOAT_BINARY = ("pow", "atan2", "hypot", "copysign", "fmod", "nextafter", "ldexp")
_INTEGER_BINARY = ("bitwise_and", "bitwise_or", "bitwise_xor", "shift_left", "shift_right")

INTRINSICS: dict[str, Intrinsic] = _table(
    *(Intrinsic(name, 1, "float", "same") for name in _FLOAT_UNARY),
    Intrinsic("abs", 1, "numeric", "same"),
    Intrinsic("isnan", 1, "float", "bool"),
    Intrinsic("isinf", 1, "float", "bool"),
    Intrinsic("isfinite", 1, "float", "bool"),
    *(Intrinsic(name, 2, "float", "same") for name in _FLOAT_BINARY),
    Intrinsic("fma", 3, "float", "same"),
    *(Intrinsic(name, 2, "integer", "same") for name in _INTEGER_BINARY),
    Intrinsic("bitwise_not", 1, "integer", "same"),
    Intrinsic("popcount", 1, "integer", "same"),
)

# ``if_then_else(cond, a, b)``: a lazy select; its rule is special (bool, T, T -> T).
LAZY_SELECT = "if_then_else"

#: The barrier of a thread block (a statement: ``Evaluate(Call(SYNCTHREADS, ()))``).
SYNCTHREADS = "syncthreads"
#: Warp shuffles: ``(value, lane operand)`` -> the value's dtype.
SHUFFLES: tuple[str, ...] = ("shfl_xor", "shfl_down")
#: The warp's tensor-core multiply-accumulate: ``(q, a0..a7, b0..b3, c0..c3)`` -> float32.
MMA = "mma_m16n8k16"
#: Operand dtypes of :data:`MMA` (``a`` and ``b``; ``c`` and the result are float32).
MMA_DTYPES: tuple[str, ...] = ("float16", "bfloat16")
#: The warp's load of four 8x8 matrices: ``(trans, q, v0..v7)`` -> the elements' dtype.
LDMATRIX = "ldmatrix_x4"
#: Intrinsics that synchronise the threads of a GPU kernel (see the module doc).
GPU_INTRINSICS: frozenset[str] = frozenset((SYNCTHREADS, *SHUFFLES, MMA, LDMATRIX))

INTRINSIC_NAMES: frozenset[str] = frozenset(INTRINSICS) | {LAZY_SELECT} | GPU_INTRINSICS
