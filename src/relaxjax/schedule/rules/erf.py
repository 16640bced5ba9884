"""A vectorisable float32 ``erf``: the exact ``gelu``'s hot spot.

LLVM lowers ``erf`` to a call of the C library's ``erff`` per element, which no loop
vectoriser can widen. The rules replace every float32 ``erf(x)`` by a rational
function of multiplies, adds, one divide and clamps, all of which vectorise::

    t = min(max(x, -4), 4)
    erf(x) ~= min(max(t * (P(t * t) / Q(t * t)), -1), 1)

``P`` (degree 6) and ``Q`` (degree 4) are the minimax coefficients Eigen and XLA use
for float32 ``erf`` (so results agree closely with ``jax.scipy.special.erf``). The
ratio is taken before the multiply by ``t``, so that tiny and subnormal ``x`` round
once, in that multiply.

Accuracy (measured against float64 ``erf`` rounded to float32, on 3 million random
points over ``[-5, 5]``, a normal distribution and magnitudes from 1e-39 to 7, and the
edge values; tests/schedule/test_rules_erf.py): at most **7 ulp**, most results
exact or 1 ulp off; ``erf(+-0) = +-0``; subnormal inputs give ``2 x / sqrt(pi)``
correctly rounded to within that bound; at ``|x| = 4`` the function is exactly
``+-1`` in float32 (float32 ``erf`` is 1 to within half an ulp from about 3.92), so
``1 + erf(x)`` is exactly 0 for ``x <= -4`` (the exact ``gelu`` of a large negative
``x`` is -0, as in jax); ``erf(+-inf) = +-1``; NaN propagates through the clamps
(``min``/``max`` propagate NaN).
"""

from __future__ import annotations

from relaxjax.tir.expr import Call, FloatImm, PrimExpr, binop
from relaxjax.tir.function import PrimFunc
from relaxjax.tir.functor import StmtMutator

__all__ = ["ERF_CLAMP", "ERF_DENOMINATOR", "ERF_NUMERATOR", "approximate_erf", "erf_float32"]

#: ``|x|`` from which the approximation is clamped (exactly +-1 in float32 there).
ERF_CLAMP = 4.0
#: ``P``: coefficients in ``y = x^2``, lowest first.
ERF_NUMERATOR = (
    -1.60960333262415e-02,
    -2.95459980854025e-03,
    -7.34990630326855e-04,
    -5.69250639462346e-05,
    -2.10102402082508e-06,
    2.77068142495902e-08,
    -2.72614225801306e-10,
)
#: ``Q``: coefficients in ``y = x^2``, lowest first.
ERF_DENOMINATOR = (
    -1.42647390514189e-02,
    -7.37332916720468e-03,
    -1.68282697438203e-03,
    -2.13374055278905e-04,
    -1.45660718464996e-05,
)


def _f32(value: float) -> FloatImm:
    return FloatImm(value, "float32")


def _horner(coefficients: tuple[float, ...], y: PrimExpr) -> PrimExpr:
    acc: PrimExpr = _f32(coefficients[-1])
    for c in reversed(coefficients[:-1]):
        acc = binop("+", binop("*", acc, y), _f32(c))
    return acc


def erf_float32(x: PrimExpr) -> PrimExpr:
    """The rational approximation of ``erf(x)`` for a float32 expression."""
    t = binop("min", binop("max", x, _f32(-ERF_CLAMP)), _f32(ERF_CLAMP))
    y = binop("*", t, t)
    ratio = binop("/", _horner(ERF_NUMERATOR, y), _horner(ERF_DENOMINATOR, y))
    value = binop("*", t, ratio)
    return binop("min", binop("max", value, _f32(-1.0)), _f32(1.0))


class _Erf(StmtMutator):
    def visit_Call(self, expr: Call) -> PrimExpr:
        new = super().visit_Call(expr)
        if isinstance(new, Call) and new.intrinsic == "erf" and new.dtype == "float32":
            return erf_float32(new.args[0])
        return new


def approximate_erf(func: PrimFunc) -> PrimFunc:
    """``func`` with every float32 ``erf`` replaced by :func:`erf_float32`."""
    body = _Erf().visit_stmt(func.body)
    return func if body is func.body else func.with_body(body)
