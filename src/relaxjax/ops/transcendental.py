"""Transcendental unary ops: trigonometric and hyperbolic functions and their inverses,
exponentials and logarithms in other bases, ``cbrt``, ``erf``/``erfc``, ``sinc``,
``i0``, the angle conversions, ``reciprocal`` and ``fabs``.

Every one computes in floating point as ``jax.numpy`` does: ints and bools convert to
:func:`~relaxjax.ops.base.to_inexact` of their dtype (``int32 -> float32``,
``int64 -> float64``), float16 and bfloat16 compute in float32 and round the result.
Each applies one loop-level intrinsic (``log1p`` and ``expm1`` are libm's, accurate near
0, never ``log(1 + x)``), or a short formula of intrinsics that jax uses too.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from relaxjax import dtypes, tir
from relaxjax.ir import StructInfo
from relaxjax.ops.base import as_tensor_info, reference_input, register, value_type
from relaxjax.ops.kernel import single_input
from relaxjax.ops.serial import Scalars, loop_nest, seq, when
from relaxjax.ops.unary import FloatUnaryOp
from relaxjax.tir import PrimExpr, PrimFunc

_ERF = np.frompyfunc(math.erf, 1, 1)
_ERFC = np.frompyfunc(math.erfc, 1, 1)


def erf_reference(x: np.ndarray) -> np.ndarray:
    """``erf`` of a float array in float64 (numpy has none), in ``x``'s dtype."""
    values = np.asarray(x)
    return np.asarray(_ERF(values.astype(np.float64)), dtype=np.float64).astype(values.dtype)


def erfc_reference(x: np.ndarray) -> np.ndarray:
    """``erfc`` of a float array in float64, in ``x``'s dtype."""
    values = np.asarray(x)
    return np.asarray(_ERFC(values.astype(np.float64)), dtype=np.float64).astype(values.dtype)


@register
class Tan(FloatUnaryOp):
    """The tangent."""

    name = "tan"
    numpy_function = staticmethod(np.tan)
    tir_function = staticmethod(tir.tan)


@register
class Arcsin(FloatUnaryOp):
    """The inverse sine (NaN outside [-1, 1])."""

    name = "arcsin"
    numpy_function = staticmethod(np.arcsin)
    tir_function = staticmethod(tir.asin)


@register
class Arccos(FloatUnaryOp):
    """The inverse cosine (NaN outside [-1, 1])."""

    name = "arccos"
    numpy_function = staticmethod(np.arccos)
    tir_function = staticmethod(tir.acos)


@register
class Arctan(FloatUnaryOp):
    """The inverse tangent."""

    name = "arctan"
    numpy_function = staticmethod(np.arctan)
    tir_function = staticmethod(tir.atan)


@register
class Sinh(FloatUnaryOp):
    """The hyperbolic sine."""

    name = "sinh"
    numpy_function = staticmethod(np.sinh)
    tir_function = staticmethod(tir.sinh)


@register
class Cosh(FloatUnaryOp):
    """The hyperbolic cosine."""

    name = "cosh"
    numpy_function = staticmethod(np.cosh)
    tir_function = staticmethod(tir.cosh)


@register
class Arcsinh(FloatUnaryOp):
    """The inverse hyperbolic sine."""

    name = "arcsinh"
    numpy_function = staticmethod(np.arcsinh)
    tir_function = staticmethod(tir.asinh)


@register
class Arccosh(FloatUnaryOp):
    """The inverse hyperbolic cosine (NaN below 1)."""

    name = "arccosh"
    numpy_function = staticmethod(np.arccosh)
    tir_function = staticmethod(tir.acosh)


@register
class Arctanh(FloatUnaryOp):
    """The inverse hyperbolic tangent (NaN outside [-1, 1])."""

    name = "arctanh"
    numpy_function = staticmethod(np.arctanh)
    tir_function = staticmethod(tir.atanh)


@register
class Exp2(FloatUnaryOp):
    """``2 ** x``."""

    name = "exp2"
    numpy_function = staticmethod(np.exp2)
    tir_function = staticmethod(tir.exp2)


@register
class Expm1(FloatUnaryOp):
    """``exp(x) - 1``, accurate near 0."""

    name = "expm1"
    numpy_function = staticmethod(np.expm1)
    tir_function = staticmethod(tir.expm1)


@register
class Log2(FloatUnaryOp):
    """The base-2 logarithm."""

    name = "log2"
    keeps_weak = False  # jax computes it from log with an array constant
    numpy_function = staticmethod(np.log2)
    tir_function = staticmethod(tir.log2)


@register
class Log10(FloatUnaryOp):
    """The base-10 logarithm."""

    name = "log10"
    keeps_weak = False  # jax computes it from log with an array constant
    numpy_function = staticmethod(np.log10)
    tir_function = staticmethod(tir.log10)


@register
class Log1p(FloatUnaryOp):
    """``log(1 + x)``, accurate near 0."""

    name = "log1p"
    numpy_function = staticmethod(np.log1p)
    tir_function = staticmethod(tir.log1p)


@register
class Cbrt(FloatUnaryOp):
    """The real cube root (negative for negative ``x``)."""

    name = "cbrt"
    numpy_function = staticmethod(np.cbrt)
    tir_function = staticmethod(tir.cbrt)


@register
class Fabs(FloatUnaryOp):
    """``|x|`` in floating point (``jnp.fabs``)."""

    name = "fabs"
    numpy_function = staticmethod(np.abs)
    tir_function = staticmethod(tir.abs)


@register
class Erf(FloatUnaryOp):
    """The error function."""

    name = "erf"
    numpy_function = staticmethod(erf_reference)
    tir_function = staticmethod(tir.erf)


@register
class Erfc(FloatUnaryOp):
    """``1 - erf(x)``, accurate where it is tiny."""

    name = "erfc"
    numpy_function = staticmethod(erfc_reference)
    tir_function = staticmethod(tir.erfc)


@register
class Reciprocal(FloatUnaryOp):
    """``1 / x``."""

    name = "reciprocal"
    numpy_function = staticmethod(np.reciprocal)

    def scalar(self, x: PrimExpr, attrs: object) -> PrimExpr:
        return tir.const(1.0, x.dtype) / x


class _Scaled(FloatUnaryOp):
    """``x * factor`` with the factor rounded to ``x``'s dtype first (as jax does: the
    constant is an array, so the result is strongly typed)."""

    factor: float = 1.0
    keeps_weak = False

    def compute(self, x: np.ndarray, attrs: object) -> np.ndarray:
        return x * np.asarray(self.factor, dtype=x.dtype)

    def scalar(self, x: PrimExpr, attrs: object) -> PrimExpr:
        return x * tir.const(self.factor, x.dtype)


@register
class Deg2rad(_Scaled):
    """Degrees to radians: ``x * (pi / 180)``."""

    name = "deg2rad"
    factor = math.pi / 180


@register
class Rad2deg(_Scaled):
    """Radians to degrees: ``x * (180 / pi)``."""

    name = "rad2deg"
    factor = 180 / math.pi


@register
class Sinc(FloatUnaryOp):
    """``sin(pi x) / (pi x)``, and 1 at 0 (the normalised sinc, as ``jnp.sinc``)."""

    name = "sinc"
    keeps_weak = False  # jax's formula multiplies by an array constant

    def reference(self, *arrays: object, attrs: object = None) -> np.ndarray:
        # In the result's own dtype, as the kernel and jax compute it: ``pi * x`` is
        # rounded to float16 first, which moves the zeros at the integers.
        (x,) = arrays
        out = dtypes.to_numpy(self.result_dtype(value_type(x)))
        with np.errstate(all="ignore"):
            return self.compute(np.asarray(reference_input(x)).astype(out), attrs).astype(out)

    def compute(self, x: np.ndarray, attrs: object) -> np.ndarray:
        pi_x = x * np.asarray(math.pi, dtype=x.dtype)
        safe = np.where(x == 0, np.ones_like(x), pi_x)
        return np.where(x == 0, np.ones_like(x), np.sin(safe) / safe)

    def scalar(self, x: PrimExpr, attrs: object) -> PrimExpr:
        one = tir.const(1.0, x.dtype)
        zero = tir.eq(x, tir.const(0.0, x.dtype))
        safe = tir.select(zero, one, tir.const(math.pi, x.dtype) * x)
        return tir.select(zero, one, tir.sin(safe) / safe)


# Cephes' Chebyshev coefficients of exp(-x) i0(x), the ones jax's bessel_i0e evaluates:
# for |x| <= 8 in x / 2 - 2, above in 32 / x - 2 (the result divided by sqrt(x)).
_I0E_LOW_64 = (
    -4.41534164647933937950e-18, 3.33079451882223809783e-17, -2.43127984654795469359e-16,
    1.71539128555513303061e-15, -1.16853328779934516808e-14, 7.67618549860493561688e-14,
    -4.85644678311192946090e-13, 2.95505266312963983461e-12, -1.72682629144155570723e-11,
    9.67580903537323691224e-11, -5.18979560163526290666e-10, 2.65982372468238665035e-9,
    -1.30002500998624804212e-8, 6.04699502254191894932e-8, -2.67079385394061173391e-7,
    1.11738753912010371815e-6, -4.41673835845875056359e-6, 1.64484480707288970893e-5,
    -5.75419501008210370398e-5, 1.88502885095841655729e-4, -5.76375574538582365885e-4,
    1.63947561694133579842e-3, -4.32430999505057594430e-3, 1.05464603945949983183e-2,
    -2.37374148058994688156e-2, 4.93052842396707084878e-2, -9.49010970480476444210e-2,
    1.71620901522208775349e-1, -3.04682672343198398683e-1, 6.76795274409476084995e-1,
)  # fmt: skip
_I0E_HIGH_64 = (
    -7.23318048787475395456e-18, -4.83050448594418207126e-18, 4.46562142029675999901e-17,
    3.46122286769746109310e-17, -2.82762398051658348494e-16, -3.42548561967721913462e-16,
    1.77256013305652638360e-15, 3.81168066935262242075e-15, -9.55484669882830764870e-15,
    -4.15056934728722208663e-14, 1.54008621752140982691e-14, 3.85277838274214270114e-13,
    7.18012445138366623367e-13, -1.79417853150680611778e-12, -1.32158118404477131188e-11,
    -3.14991652796324136454e-11, 1.18891471078464383424e-11, 4.94060238822496958910e-10,
    3.39623202570838634515e-9, 2.26666899049817806459e-8, 2.04891858946906374183e-7,
    2.89137052083475648297e-6, 6.88975834691682398426e-5, 3.36911647825569408990e-3,
    8.04490411014108831608e-1,
)  # fmt: skip
# float32 keeps the terms that matter in single precision (Cephes' i0ef).
_I0E_LOW_32 = _I0E_LOW_64[12:]
_I0E_HIGH_32 = _I0E_HIGH_64[18:]


def _chebyshev(x, coefficients):
    """Clenshaw's recurrence (Cephes' ``chbevl``) on numpy arrays: ``(b0 - b2) / 2``."""
    b0 = b1 = b2 = np.zeros_like(x)
    for c in coefficients:
        b2, b1 = b1, b0
        b0 = x * b1 - b2 + np.asarray(c, dtype=x.dtype)
    return np.asarray(0.5, dtype=x.dtype) * (b0 - b2)


def _chebyshev_stmt(state: Scalars, argument: PrimExpr, coefficients, result: str) -> tir.Stmt:
    """Clenshaw's recurrence as statements on local scalars (an expression would repeat
    ``b1`` and ``b2`` and double in size with every coefficient); stores into ``result``."""
    dtype = argument.dtype
    steps = [state.set("y", argument), state.set("b0", 0.0), state.set("b1", 0.0)]
    y, b0, b1, b2 = (state.load(n) for n in ("y", "b0", "b1", "b2"))
    for c in coefficients:
        steps += [state.set("b2", b1), state.set("b1", b0)]
        steps.append(state.set("b0", y * b1 - b2 + tir.const(c, dtype)))
    steps.append(state.set(result, tir.const(0.5, dtype) * (b0 - b2)))
    return seq(*steps)


@register
class I0(FloatUnaryOp):
    """The modified Bessel function of the first kind, order 0 (``jnp.i0``):
    ``exp(|x|) * i0e(|x|)`` with Cephes' Chebyshev expansions of ``i0e``; float16 and
    bfloat16 evaluate them in float32."""

    name = "i0"
    #: True for ``i0e``: the result is not multiplied by ``exp(|x|)``.
    scaled = False

    def compute(self, x: np.ndarray, attrs: object) -> np.ndarray:
        low, high = _i0e_coefficients(x.dtype.name)
        t = np.abs(x)
        small = _chebyshev(t * np.asarray(0.5, t.dtype) - np.asarray(2.0, t.dtype), low)
        large = _chebyshev(np.asarray(32.0, t.dtype) / t - np.asarray(2.0, t.dtype), high)
        i0e = np.where(t <= 8, small, large / np.sqrt(t))
        return i0e if self.scaled else np.exp(t) * i0e

    def lower(
        self, arg_infos: Sequence[StructInfo], attrs: object, out_info: StructInfo
    ) -> PrimFunc:
        """A kernel of statements: per element, one of the two Clenshaw recurrences on
        local scalars, by ``|x| <= 8``."""
        _, x = single_input(arg_infos)
        dtype = as_tensor_info(out_info).dtype
        work = "float64" if dtype == "float64" else "float32"
        low, high = _i0e_coefficients(work)
        state = Scalars({name: work for name in ("t", "y", "b0", "b1", "b2", "series")})
        out = tir.Buffer(self.name, x.shape, dtype)

        def const(value: float) -> PrimExpr:
            return tir.const(value, work)

        t = state.load("t")
        series = when(
            t <= const(8.0),
            _chebyshev_stmt(state, t * const(0.5) - const(2.0), low, "series"),
            seq(
                _chebyshev_stmt(state, const(32.0) / t - const(2.0), high, "series"),
                state.set("series", state.load("series") / tir.sqrt(t)),
            ),
        )

        def element(i: tuple) -> tir.Stmt:
            value = state.load("series") if self.scaled else tir.exp(t) * state.load("series")
            return seq(
                state.set("t", tir.abs(tir.cast(x[i], work))),
                series,
                tir.BufferStore(out, tir.cast(value, dtype), i),
            )

        body = state.allocate(loop_nest(x.shape, "ax", element))
        return PrimFunc(self.name, (x.buffer, out), body)


@register
class I0e(I0):
    """The exponentially scaled ``i0``: ``exp(-|x|) * i0(x)``, finite for large ``|x|``
    (``jax.scipy.special.i0e``)."""

    name = "i0e"
    scaled = True


def _i0e_coefficients(dtype: str) -> tuple[tuple[float, ...], tuple[float, ...]]:
    if dtype == "float64":
        return _I0E_LOW_64, _I0E_HIGH_64
    return _I0E_LOW_32, _I0E_HIGH_32


__all__ = ["erf_reference", "erfc_reference"]
