"""Moments over a set of axes: ``mean`` and ``var`` (jax.numpy semantics; integer and
bool inputs give floats, see :func:`float_result_dtype`)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from relaxjax import dtypes
from relaxjax.ops.attr_checks import check_axes, check_flag, check_int, optional_dtype
from relaxjax.ops.base import compute_dtype, register, to_inexact
from relaxjax.ops.kernel import convert
from relaxjax.ops.reduction import AccumulateAttrs, AxesReduction
from relaxjax.tir import PrimExpr, te
from relaxjax.tir import math as tmath
from relaxjax.tir.expr import as_expr


@dataclass(frozen=True, slots=True)
class VarAttrs:
    """Attributes of ``var``: axes, ``keepdims``, ``dtype`` and ``ddof`` (the divisor is
    ``count - ddof``)."""

    axis: tuple[int, ...] | None = None
    keepdims: bool = False
    dtype: str | None = None
    ddof: int = 0

    def __post_init__(self) -> None:
        check_axes("VarAttrs", self.axis)
        check_flag("VarAttrs", "keepdims", self.keepdims)
        check_int("VarAttrs", "ddof", self.ddof)
        object.__setattr__(self, "dtype", optional_dtype("VarAttrs", self.dtype))


def float_result_dtype(op_name: str, dtype: str, requested: str | None) -> str:
    """The dtype of ``mean``/``var``: a floating ``requested`` dtype, else ``to_inexact``."""
    if requested is None:
        return to_inexact(dtype)
    if not dtypes.is_floating(requested):
        raise TypeError(
            f"{op_name}: dtype must be a floating dtype, got {requested} "
            f"(integer means and variances are not supported)"
        )
    return requested


class _Moment(AxesReduction):
    """A moment: floats are kept, integers and bool give floats (see
    :func:`float_result_dtype`); the reference computes in the result's compute dtype."""

    def result_dtype(self, dtype: str, attrs) -> str:
        return float_result_dtype(self.name, dtype, attrs.dtype)


def _mean(x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    """The mean of ``x`` over ``axes``, kept as size-1 axes."""
    count = math.prod(x.shape[a] for a in axes)
    return np.sum(x, axis=axes, keepdims=True) / x.dtype.type(count)


@register
class Mean(_Moment):
    """``jnp.mean``: the sum over axes divided by the number of reduced elements."""

    name = "mean"
    Attrs = AccumulateAttrs

    def compute(self, x, axes, attrs, out):
        return _mean(x.astype(compute_dtype(out)), axes)

    def reduce_stage(self, x, axes, attrs, out, work, name):
        return axes.reduce(te.sum, lambda i: convert(x[i], work), name)

    def finish(self, axes, attrs, work):
        count = convert(as_expr(axes.count), work)
        return lambda total, kept: total / count


@register
class Var(_Moment):
    """``jnp.var``: the mean squared deviation from the mean, divided by ``count - ddof``
    (NaN when that is not positive)."""

    name = "var"
    Attrs = VarAttrs

    def compute(self, x, axes, attrs, out):
        x = x.astype(compute_dtype(out))
        squares = np.sum(np.square(x - _mean(x, axes)), axis=axes, keepdims=True)
        divisor = math.prod(x.shape[a] for a in axes) - attrs.ddof
        if divisor <= 0:
            return np.full_like(squares, np.nan)
        return squares / x.dtype.type(divisor)

    def reduce_stage(self, x, axes, attrs, out, work, name):
        count = convert(as_expr(axes.count), work)
        total = axes.reduce(te.sum, lambda i: convert(x[i], work), "total")
        mean = te.compute(axes.kept_shape, lambda *i: total[i] / count, name="mean")

        def square(i: Sequence[object]) -> PrimExpr:
            centered = convert(x[i], work) - mean[axes.kept(i)]
            return centered * centered

        return axes.reduce(te.sum, square, name)

    def finish(self, axes, attrs, work):
        divisor = as_expr(axes.count - attrs.ddof)
        nan = as_expr(float("nan"), work)

        def divide(squares: PrimExpr, kept) -> PrimExpr:
            return tmath.select(divisor > 0, squares / convert(divisor, work), nan)

        return divide


__all__ = ["VarAttrs", "float_result_dtype"]
