"""Reductions over a set of axes: ``sum prod max min``, and the machinery every
reduction shares (the shape rule, the kernel's final stage, accumulation dtypes).
``mean``/``var`` are in :mod:`relaxjax.ops.statistics`, ``argmax``/``argmin`` in
:mod:`relaxjax.ops.arg_reduction`, ``cumsum`` in :mod:`relaxjax.ops.scan`.

Axes follow jax.numpy: ``None`` reduces every axis, an int or a tuple of ints
(negative ones count from the end) reduces those, ``keepdims`` keeps them as size 1.
Dtypes follow jax.numpy with 64-bit types enabled:

====================  ==================================================================
op                    result dtype (without ``dtype=``)
====================  ==================================================================
sum, prod             bool and signed ints -> int64, floats unchanged (uint8 -> uint64,
                      which relaxjax does not support: pass ``dtype=``)
mean, var             floats unchanged, int64 -> float64, other ints and bool -> float32
max, min              unchanged
argmax, argmin        int64
cumsum                bool -> int64, others unchanged
====================  ==================================================================

``max``, ``min``, ``argmax`` and ``argmin`` have no identity: reducing an empty axis is
an error, so their shape rule requires the reduced size to be at least 1. ``max`` and
``min`` take jax's ``initial`` (a scalar already converted to the input's dtype by the
wrapper): it joins the reduced elements, so empty axes then give ``initial``.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from relaxjax import arith, dtypes
from relaxjax.ir import Check, StructInfo, TensorInfo
from relaxjax.ops.attr_checks import check_axes, check_flag, optional_dtype
from relaxjax.ops.axes import ReducedAxes, reduced_axes
from relaxjax.ops.base import (
    InferContext,
    Op,
    as_tensor_info,
    compute_dtype,
    info_text,
    num_elements,
    reference_dtype,
    reference_input,
    register,
    tensor_args,
)
from relaxjax.ops.kernel import convert, single_input
from relaxjax.tir import PrimExpr, PrimFunc, te
from relaxjax.tir import math as tmath
from relaxjax.tir.expr import as_expr

Dim = arith.Dim


# --------------------------------------------------------------------------- attributes


@dataclass(frozen=True, slots=True)
class ReduceAttrs:
    """Attributes of ``max`` and ``min``: the reduced axes (None: all), ``keepdims`` and
    ``initial`` (None, or a Python scalar that takes part in the reduction: the result is
    ``max(initial, max(x))``, and an empty reduction gives ``initial``)."""

    axis: tuple[int, ...] | None = None
    keepdims: bool = False
    initial: bool | int | float | None = None

    def __post_init__(self) -> None:
        check_axes("ReduceAttrs", self.axis)
        check_flag("ReduceAttrs", "keepdims", self.keepdims)
        if self.initial is not None and not isinstance(self.initial, (bool, int, float)):
            raise TypeError(
                f"ReduceAttrs.initial must be a bool, int, float or None, got {self.initial!r}"
            )


@dataclass(frozen=True, slots=True)
class AccumulateAttrs:
    """Attributes of ``sum``, ``prod`` and ``mean``: axes, ``keepdims`` and ``dtype``
    (the accumulation and result dtype; None: the jax.numpy default)."""

    axis: tuple[int, ...] | None = None
    keepdims: bool = False
    dtype: str | None = None

    def __post_init__(self) -> None:
        check_axes("AccumulateAttrs", self.axis)
        check_flag("AccumulateAttrs", "keepdims", self.keepdims)
        object.__setattr__(self, "dtype", optional_dtype("AccumulateAttrs", self.dtype))


# --------------------------------------------------------------------------- shape rules


def reduce_info(
    ctx: InferContext,
    x: TensorInfo,
    axis: tuple[int, ...] | None,
    keepdims: bool,
    dtype: str,
    nonempty: bool = False,
) -> TensorInfo:
    """The result of reducing ``x`` over ``axis``; ``nonempty`` requires the reduced size
    to be at least 1 (for reductions without an identity)."""
    if x.ndim is None:
        if axis is None and not keepdims:
            return TensorInfo((), dtype)
        return TensorInfo(dtype=dtype)
    axes = reduced_axes(ctx.op_name, axis, x.ndim)
    out_ndim = x.ndim if keepdims else x.ndim - len(axes)
    if x.shape is None:
        return TensorInfo(dtype=dtype, ndim=out_ndim)
    if nonempty:
        size = num_elements([x.shape[a] for a in axes])
        message = (
            f"{ctx.op_name}: zero-size array to a reduction without identity: "
            f"shape {info_text(x)} reduced over axes {axes} has {size} elements, expected >= 1"
        )
        ctx.require(Check("le", (1, size), message))
    if keepdims:
        shape = tuple(1 if i in axes else d for i, d in enumerate(x.shape))
    else:
        shape = tuple(d for i, d in enumerate(x.shape) if i not in axes)
    return TensorInfo(shape, dtype)


# --------------------------------------------------------------------------- kernels


def when_nonempty(count: Dim, value: PrimExpr, identity: PrimExpr) -> PrimExpr:
    """``value`` of a reduction over ``count`` elements, or its ``identity`` when the
    reduction may be empty (a block's init runs with its first reduction step, so an
    empty reduction leaves its buffer unwritten)."""
    if arith.compare(count, ">=", 1) is True:
        return value
    return tmath.if_then_else(as_expr(count) > 0, value, identity)


def nonempty_stage(
    name: str, stage: te.Tensor, count: Dim, identity: PrimExpr, dtype: str
) -> te.Tensor:
    """The stage ``out[i] = stage[i]`` converted to ``dtype``, or ``identity`` where the
    reduction behind ``stage`` (over ``count`` elements) is empty."""

    def finish(*i: object) -> PrimExpr:
        return convert(when_nonempty(count, stage[i], identity), dtype)

    return te.compute(stage.shape, finish, name=name)


def finish_reduction(
    name: str,
    x: te.Tensor,
    axes: ReducedAxes,
    reduced: te.Tensor,
    keepdims: bool,
    dtype: str,
    finish=None,
    identity: PrimExpr | None = None,
) -> PrimFunc:
    """The kernel ``[x, out]`` where ``out`` is ``finish(reduced value)`` (default: the
    value) converted to ``dtype``, with size-1 axes under ``keepdims``; an ``identity``
    stands for the value of an empty reduction. The reduced stage is the output itself
    when nothing remains to be done."""
    guard = identity is not None and arith.compare(axes.count, ">=", 1) is not True
    if finish is None and not guard and not keepdims and reduced.dtype == dtype and axes.axes:
        return te.create_prim_func([x, reduced], name=name)

    def body(*i: object) -> PrimExpr:
        kept = axes.kept(i) if keepdims else i
        value = reduced[tuple(kept)]
        if guard:
            value = when_nonempty(axes.count, value, identity)
        return convert(value if finish is None else finish(value, kept), dtype)

    out = te.compute(axes.out_shape(keepdims), body, name=name)
    return te.create_prim_func([x, out], name=name)


def _np_axes(axis: tuple[int, ...] | None, ndim: int) -> tuple[int, ...]:
    return tuple(range(ndim)) if axis is None else tuple(a % ndim for a in axis)


# --------------------------------------------------------------------------- accumulations


def accumulate_dtype(op_name: str, dtype: str, requested: str | None) -> str:
    """The dtype ``sum``/``prod`` accumulate in and return (jax.numpy, x64)."""
    if requested is not None:
        return requested
    if dtypes.is_unsigned(dtype):
        raise TypeError(
            f"{op_name} of {dtype} gives uint64 in jax.numpy, which relaxjax does not support; "
            f"pass dtype= (e.g. dtype='int64')"
        )
    if dtypes.is_bool(dtype) or dtypes.is_integer(dtype):
        return "int64"
    return dtype


class AxesReduction(Op):
    """A reduction over a set of axes; subclasses give the dtype rule and the numpy code."""

    pattern = "reduction"
    num_inputs = 1
    nonempty = False

    @abstractmethod
    def result_dtype(self, dtype: str, attrs) -> str:
        """The result dtype for an input of ``dtype``."""

    def infer(self, args: Sequence[StructInfo], attrs, ctx: InferContext) -> StructInfo:
        (x,) = tensor_args(self.name, args, 1)
        dtype = self.result_dtype(x.dtype, attrs)
        return reduce_info(ctx, x, attrs.axis, attrs.keepdims, dtype, self.nonempty)

    @abstractmethod
    def compute(self, x: np.ndarray, axes: tuple[int, ...], attrs, out: str) -> np.ndarray:
        """The numpy reduction of the converted input over ``axes`` (keepdims=True)."""

    def work_dtype(self, out: str) -> str:
        """The dtype the kernel reduces in, for a result of dtype ``out``."""
        return compute_dtype(out).name

    @abstractmethod
    def reduce_stage(self, x, axes: ReducedAxes, attrs, out: str, work: str, name: str):
        """The kernel stage holding the reduction (in ``work``) over the kept axes."""

    def finish(self, axes: ReducedAxes, attrs, work: str):
        """``f(reduced value, kept indices)`` computing the result, or None."""
        return None

    def identity(self, work: str) -> PrimExpr | None:
        """The value of an empty reduction (None: reducing nothing is an error)."""
        return as_expr(0, work)

    def lower(self, arg_infos: Sequence[StructInfo], attrs, out_info: StructInfo) -> PrimFunc:
        """One reduction stage (plus a stage for a final step, a dtype conversion,
        ``keepdims`` or possibly empty axes); half precisions accumulate in float32,
        integers in int64."""
        _, x = single_input(arg_infos)
        out = as_tensor_info(out_info).dtype
        axes = ReducedAxes(x.shape, reduced_axes(self.name, attrs.axis, x.ndim))
        work = self.work_dtype(out)
        finish = self.finish(axes, attrs, work)
        identity = self.identity(work)
        empty = identity is not None and arith.compare(axes.count, ">=", 1) is not True
        direct = not (attrs.keepdims or empty or finish) and bool(axes.axes) and work == out
        stage = self.reduce_stage(x, axes, attrs, out, work, self.name if direct else "acc")
        return finish_reduction(self.name, x, axes, stage, attrs.keepdims, out, finish, identity)

    def reference(self, *arrays: object, attrs=None) -> np.ndarray:
        attrs = self.Attrs() if attrs is None else attrs
        (value,) = arrays
        x = reference_input(value)
        out = self.result_dtype(reference_dtype(value), attrs)
        axes = _np_axes(attrs.axis, x.ndim)
        with np.errstate(all="ignore"):
            result = self.compute(x, axes, attrs, out)
        if not attrs.keepdims:
            result = np.squeeze(result, axis=axes)
        return np.asarray(result).astype(dtypes.to_numpy(out))


class _Accumulation(AxesReduction):
    """``sum`` or ``prod``: integers and bool accumulate in int64 (see
    :func:`accumulate_dtype`); ``numpy_reduce`` and ``reducer`` name the reduction."""

    Attrs = AccumulateAttrs
    numpy_reduce: Callable[..., np.ndarray]
    reducer: Callable[..., object]

    def result_dtype(self, dtype: str, attrs) -> str:
        return accumulate_dtype(self.name, dtype, attrs.dtype)

    def compute(self, x, axes, attrs, out):
        return self.numpy_reduce(in_accumulator(x, out), axis=axes, keepdims=True)

    def work_dtype(self, out: str) -> str:
        return accumulator_dtype(out).name

    def reduce_stage(self, x, axes, attrs, out, work, name):
        return axes.reduce(self.reducer, lambda i: convert(convert(x[i], out), work), name)


@register
class Sum(_Accumulation):
    """``jnp.sum``: the sum over axes."""

    name = "sum"
    numpy_reduce = staticmethod(np.sum)
    reducer = staticmethod(te.sum)


@register
class Prod(_Accumulation):
    """``jnp.prod``: the product over axes."""

    name = "prod"
    numpy_reduce = staticmethod(np.prod)
    reducer = staticmethod(te.prod)

    def identity(self, work: str) -> PrimExpr:
        return as_expr(1, work)


class _Extremum(AxesReduction):
    """``max`` or ``min``: no identity, so empty axes are an error unless ``initial`` is
    given; ``numpy_reduce``, ``reducer`` and ``combine`` name the reduction."""

    Attrs = ReduceAttrs
    numpy_reduce: Callable[..., np.ndarray]
    reducer: Callable[..., object]
    combine: Callable[[PrimExpr, PrimExpr], PrimExpr]

    def infer(self, args: Sequence[StructInfo], attrs, ctx: InferContext) -> StructInfo:
        (x,) = tensor_args(self.name, args, 1)
        nonempty = attrs.initial is None
        return reduce_info(ctx, x, attrs.axis, attrs.keepdims, x.dtype, nonempty)

    def result_dtype(self, dtype: str, attrs) -> str:
        return dtype

    def compute(self, x, axes, attrs, out):
        if attrs.initial is None:
            return self.numpy_reduce(x, axis=axes, keepdims=True)
        initial = initial_value(attrs.initial, out)
        return self.numpy_reduce(x, axis=axes, keepdims=True, initial=initial)

    def work_dtype(self, out: str) -> str:
        return extremum_dtype(out)

    def identity(self, work: str) -> None:
        return None

    def reduce_stage(self, x, axes, attrs, out, work, name):
        return axes.reduce(self.reducer, lambda i: convert(x[i], work), name)

    def lower(self, arg_infos: Sequence[StructInfo], attrs, out_info: StructInfo) -> PrimFunc:
        """Without ``initial``, one reduction stage; with it, the reduction then
        ``combine(value, initial)``, and ``initial`` where the reduction is empty."""
        if attrs.initial is None:
            return super().lower(arg_infos, attrs, out_info)
        _, x = single_input(arg_infos)
        out = as_tensor_info(out_info).dtype
        axes = ReducedAxes(x.shape, reduced_axes(self.name, attrs.axis, x.ndim))
        work = self.work_dtype(out)
        initial = as_expr(initial_value(attrs.initial, work).item(), work)
        stage = self.reduce_stage(x, axes, attrs, out, work, "acc")

        def finish(value: PrimExpr, kept: object) -> PrimExpr:
            return self.combine(value, initial)

        return finish_reduction(self.name, x, axes, stage, attrs.keepdims, out, finish, initial)


def initial_value(initial: bool | int | float, dtype: str) -> np.ndarray:
    """``initial`` as a 0-d array of ``dtype`` (the wrapper converted it already, so this
    is exact; bool ``True``/``False`` compare as 1/0 in int8 kernels)."""
    return dtypes.convert(initial, dtype)


@register
class Max(_Extremum):
    """``jnp.max``: the largest element over axes (NaN wins); empty axes are an error."""

    name = "max"
    numpy_reduce = staticmethod(np.max)
    reducer = staticmethod(te.max)
    combine = staticmethod(tmath.max)


@register
class Min(_Extremum):
    """``jnp.min``: the smallest element over axes (NaN wins); empty axes are an error."""

    name = "min"
    numpy_reduce = staticmethod(np.min)
    reducer = staticmethod(te.min)
    combine = staticmethod(tmath.min)


def extremum_dtype(dtype: str) -> str:
    """Kernels compare bools as int8 (TIR has no max/min on bool)."""
    return "int8" if dtypes.is_bool(dtype) else dtype


def in_accumulator(x: np.ndarray, dtype: str) -> np.ndarray:
    """``x`` converted to ``dtype`` (as jax does first) and widened to its accumulator."""
    return x.astype(dtypes.to_numpy(dtype)).astype(accumulator_dtype(dtype))


def accumulator_dtype(dtype: str) -> np.dtype:
    """The numpy dtype a sum or product of ``dtype`` is computed in: integer sums wrap
    identically in int64, and bool sums are logical ors of nonzero int64 sums."""
    if dtypes.is_bool(dtype) or dtypes.is_integer(dtype):
        return np.dtype("int64")
    return compute_dtype(dtype)


__all__ = [
    "AccumulateAttrs",
    "AxesReduction",
    "ReduceAttrs",
    "accumulate_dtype",
    "accumulator_dtype",
    "extremum_dtype",
    "finish_reduction",
    "in_accumulator",
    "initial_value",
    "nonempty_stage",
    "reduce_info",
    "when_nonempty",
]
