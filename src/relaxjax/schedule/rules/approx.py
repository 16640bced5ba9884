"""A vectorisable float32 ``tanh``: the activation functions' hot spot.

LLVM lowers ``tanh`` to a call of the C library's ``tanhf`` per element, which no
loop vectoriser can widen; a kernel like ``gelu`` then runs at a fraction of the
memory bandwidth. The rules replace every float32 ``tanh(x)`` by a rational function
that needs only multiplies, adds, one divide and two clamps, all of which vectorise::

    t = min(max(x, -10), 10)
    tanh(x) ~= min(max(t * K(t * t) / H(t * t), -1), 1)

``K / H`` is the 12th convergent of Lambert's continued fraction
``tanh(x) = x / (1 + x^2 / (3 + x^2 / (5 + ...)))``; its integer coefficients are
derived here from the convergent recurrence. Over ``[-10, 10]`` its error is below
4e-7 relative (a few float32 ulps). At ``|x| = 10`` it is exactly +-1 in float32 (with
or without fused multiply-adds), as the C library's ``tanhf`` is from there on: the
result saturates, so ``1 + tanh(x)`` is exactly 0 for ``x <= -10`` (the tanh ``gelu`` of
a large negative ``x`` is -0, not ``x`` times an ulp). The second clamp keeps
``|tanh| <= 1`` whatever the rounding. NaN propagates through both clamps
(``min``/``max`` propagate NaN).
"""

from __future__ import annotations

import functools

from relaxjax.tir.expr import Call, FloatImm, PrimExpr, binop
from relaxjax.tir.function import PrimFunc
from relaxjax.tir.functor import StmtMutator

__all__ = ["TANH_CLAMP", "approximate_tanh", "tanh_coefficients"]

#: ``|x|`` from which float32 ``tanh(x)`` is +-1, and the rational function evaluates to +-1.
TANH_CLAMP = 10.0
_DEPTH = 12


def _poly_add(a: list[int], b: list[int]) -> list[int]:
    size = max(len(a), len(b))
    return [(a[i] if i < len(a) else 0) + (b[i] if i < len(b) else 0) for i in range(size)]


@functools.cache
def tanh_coefficients(depth: int = _DEPTH) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """``(K, H)``: polynomial coefficients in ``y = x^2`` (lowest first) with
    ``tanh(x) ~= x * K(y) / H(y)``, the ``depth``-th convergent of Lambert's fraction.

    With partial denominators ``b_i = 2 i + 1`` and numerators ``y``, the convergent
    numerators and denominators follow ``P_i = b_i P_{i-1} + y P_{i-2}``.
    """
    h_before, h = [1], [1]
    k_before, k = [0], [1]
    for i in range(1, depth + 1):
        b = 2 * i + 1
        h_before, h = h, _poly_add([b * c for c in h], [0, *h_before])
        k_before, k = k, _poly_add([b * c for c in k], [0, *k_before])
    return tuple(k), tuple(h)


def _horner(coefficients: tuple[int, ...], y: PrimExpr) -> PrimExpr:
    acc: PrimExpr = FloatImm(float(coefficients[-1]), "float32")
    for c in reversed(coefficients[:-1]):
        acc = binop("+", binop("*", acc, y), FloatImm(float(c), "float32"))
    return acc


def tanh_float32(x: PrimExpr) -> PrimExpr:
    """The rational approximation of ``tanh(x)`` for a float32 expression."""
    low, high = FloatImm(-TANH_CLAMP, "float32"), FloatImm(TANH_CLAMP, "float32")
    t = binop("min", binop("max", x, low), high)
    y = binop("*", t, t)
    numerator, denominator = tanh_coefficients()
    ratio = binop("/", binop("*", t, _horner(numerator, y)), _horner(denominator, y))
    one = FloatImm(1.0, "float32")
    return binop("min", binop("max", ratio, FloatImm(-1.0, "float32")), one)


class _Tanh(StmtMutator):
    def visit_Call(self, expr: Call) -> PrimExpr:
        new = super().visit_Call(expr)
        if isinstance(new, Call) and new.intrinsic == "tanh" and new.dtype == "float32":
            return tanh_float32(new.args[0])
        return new


def approximate_tanh(func: PrimFunc) -> PrimFunc:
    """``func`` with every float32 ``tanh`` replaced by :func:`tanh_float32`."""
    body = _Tanh().visit_stmt(func.body)
    return func if body is func.body else func.with_body(body)
