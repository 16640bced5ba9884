"""The cases of tests/op_cases.py for the ops of the elementwise math, creation and nn
families of issue 10 (``math_op_cases``), in the same form: ``fn(np_like, nn_like, *args)``
on arguments of ``specs``."""

from __future__ import annotations

import jax.scipy.special as jsp

import relaxjax.scipy.special as rsp
from op_cases import B, Case, F, I


def _special(name: str):
    """A case function calling ``name`` of scipy.special (relaxjax's or jax's)."""

    def fn(m, nn, a):
        return getattr(rsp if m.__name__.startswith("relaxjax") else jsp, name)(a)

    return fn


def math_op_cases(width: int) -> list[Case]:
    """Every op of the math family on (n, width) operands."""
    x, row_i = (("n", width), F), ((width,), I)

    def unary(op, low=-2.0, high=2.0, dtype=F, call=None):
        name = call or op
        return Case(op, lambda m, nn, a: getattr(m, name)(a), ((("n", width), dtype),), low, high)

    def binary(op, low=-2.0, high=2.0, dtype=F):
        specs = ((("n", width), dtype), ((width,), dtype))
        return Case(op, lambda m, nn, a, b: getattr(m, op)(a, b), specs, low, high)

    return [
        *(unary(op) for op in ("tan", "arctan", "sinh", "cosh", "arcsinh", "exp2", "expm1")),
        *(unary(op) for op in ("cbrt", "fabs", "deg2rad", "rad2deg", "sinc", "i0", "floor")),
        *(unary(op) for op in ("ceil", "trunc", "rint", "sign", "square", "reciprocal")),
        *(unary(op) for op in ("isnan", "isinf", "isfinite", "isposinf", "isneginf")),
        *(unary(op) for op in ("signbit", "spacing", "frexp")),
        unary("arcsin", -1.0, 1.0),
        unary("arccos", -1.0, 1.0),
        unary("arctanh", -0.99, 0.99),
        unary("arccosh", 1.0, 4.0),
        *(unary(op, 0.1, 4.0) for op in ("log2", "log10", "log1p")),
        Case("round", lambda m, nn, a: m.round(a, 1), (x,)),
        Case("erf", _special("erf"), (x,)),
        Case("erfc", _special("erfc"), (x,)),
        Case("i0e", _special("i0e"), (x,)),
        *(binary(op) for op in ("arctan2", "copysign", "hypot", "nextafter", "logaddexp")),
        *(binary(op) for op in ("logaddexp2", "heaviside", "fmax", "fmin")),
        binary("fmod", 0.5, 3.0),
        binary("float_power", 0.5, 2.0),
        binary("logical_xor", dtype=B),
        Case("ldexp", lambda m, nn, a, e: m.ldexp(a, e), (x, row_i), -3, 3),
        *(binary(op, -50, 50, I) for op in ("bitwise_and", "bitwise_or", "bitwise_xor")),
        *(binary(op, 0, 40, I) for op in ("left_shift", "right_shift", "gcd", "lcm")),
        unary("invert", -50, 50, I),
        unary("bitwise_count", -50, 50, I),
        Case("linspace", lambda m, nn, a: m.linspace(0.0, a, a.shape[0], axis=1), ((("n",), F),)),
        Case("logsumexp", lambda m, nn, a: nn.logsumexp(a, axis=1), (x,)),
    ]
