"""Reductions: ``sum mean max min prod argmax argmin var`` and the scan ``cumsum``.

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
an error, so their shape rule requires the reduced size to be at least 1.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from relaxjax import arith, dtypes
from relaxjax.errors import LoweringError, ShapeError
from relaxjax.ir import Check, StructInfo, TensorInfo
from relaxjax.ops.base import (
    InferContext,
    Op,
    as_tensor_info,
    compute_dtype,
    info_text,
    normalize_axis,
    num_elements,
    register,
    tensor_args,
    to_inexact,
    value_type,
)
from relaxjax.ops.kernel import KernelDims, convert, placeholders
from relaxjax.tir import PrimExpr, PrimFunc, te
from relaxjax.tir import math as tmath
from relaxjax.tir.expr import as_expr

Dim = arith.Dim


# --------------------------------------------------------------------------- attributes


def _check_flag(owner: str, name: str, value: object) -> None:
    if not isinstance(value, bool):
        raise TypeError(f"{owner}.{name} must be a bool, got {value!r}")


def _check_int(owner: str, name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{owner}.{name} must be an int, got {value!r}")


def _check_axes(owner: str, axis: object) -> None:
    if axis is None:
        return
    if not isinstance(axis, tuple):
        raise TypeError(f"{owner}.axis must be a tuple of ints or None, got {axis!r}")
    for a in axis:
        _check_int(owner, "axis", a)
    if len(set(axis)) != len(axis):
        raise ShapeError(f"{owner}: duplicate value in axis {axis}")


def _canonical_dtype(owner: str, value: object) -> str | None:
    if value is None:
        return None
    try:
        return dtypes.canonical(value)
    except TypeError as err:
        raise TypeError(f"{owner}.dtype: {err}") from None


@dataclass(frozen=True, slots=True)
class ReduceAttrs:
    """Attributes of ``max`` and ``min``: the reduced axes (None: all) and ``keepdims``."""

    axis: tuple[int, ...] | None = None
    keepdims: bool = False

    def __post_init__(self) -> None:
        _check_axes("ReduceAttrs", self.axis)
        _check_flag("ReduceAttrs", "keepdims", self.keepdims)


@dataclass(frozen=True, slots=True)
class AccumulateAttrs:
    """Attributes of ``sum``, ``prod`` and ``mean``: axes, ``keepdims`` and ``dtype``
    (the accumulation and result dtype; None: the jax.numpy default)."""

    axis: tuple[int, ...] | None = None
    keepdims: bool = False
    dtype: str | None = None

    def __post_init__(self) -> None:
        _check_axes("AccumulateAttrs", self.axis)
        _check_flag("AccumulateAttrs", "keepdims", self.keepdims)
        object.__setattr__(self, "dtype", _canonical_dtype("AccumulateAttrs", self.dtype))


@dataclass(frozen=True, slots=True)
class VarAttrs:
    """Attributes of ``var``: axes, ``keepdims``, ``dtype`` and ``ddof`` (the divisor is
    ``count - ddof``)."""

    axis: tuple[int, ...] | None = None
    keepdims: bool = False
    dtype: str | None = None
    ddof: int = 0

    def __post_init__(self) -> None:
        _check_axes("VarAttrs", self.axis)
        _check_flag("VarAttrs", "keepdims", self.keepdims)
        _check_int("VarAttrs", "ddof", self.ddof)
        object.__setattr__(self, "dtype", _canonical_dtype("VarAttrs", self.dtype))


@dataclass(frozen=True, slots=True)
class ArgReduceAttrs:
    """Attributes of ``argmax``/``argmin``: one axis (None: the flattened array)."""

    axis: int | None = None
    keepdims: bool = False

    def __post_init__(self) -> None:
        if self.axis is not None:
            _check_int("ArgReduceAttrs", "axis", self.axis)
        _check_flag("ArgReduceAttrs", "keepdims", self.keepdims)


@dataclass(frozen=True, slots=True)
class CumsumAttrs:
    """Attributes of ``cumsum``: the scanned axis (None: the flattened array) and dtype."""

    axis: int | None = None
    dtype: str | None = None

    def __post_init__(self) -> None:
        if self.axis is not None:
            _check_int("CumsumAttrs", "axis", self.axis)
        object.__setattr__(self, "dtype", _canonical_dtype("CumsumAttrs", self.dtype))


# --------------------------------------------------------------------------- shape rules


def normalize_axes(op_name: str, axes: Sequence[int], ndim: int) -> tuple[int, ...]:
    """``axes`` in ``[0, ndim)``, in the given order; ``ShapeError`` when out of range or
    repeated (``(0, -2)`` on a matrix names axis 0 twice)."""
    normalised = tuple(normalize_axis(op_name, a, ndim) for a in axes)
    if len(set(normalised)) != len(normalised):
        raise ShapeError(
            f"{op_name}: duplicate value in axis {tuple(axes)} for an array of rank {ndim}"
        )
    return normalised


def reduced_axes(op_name: str, axis: tuple[int, ...] | None, ndim: int) -> tuple[int, ...]:
    """The sorted, non-negative axes a reduction over ``axis`` removes."""
    if axis is None:
        return tuple(range(ndim))
    return tuple(sorted(normalize_axes(op_name, axis, ndim)))


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


class ReducedAxes:
    """Index bookkeeping for a reduction of ``shape`` over ``axes`` in a kernel: the kept
    axes index the reduced stage, each reduced axis becomes a ``te.reduce_axis``."""

    def __init__(self, shape: Sequence[Dim], axes: Sequence[int]) -> None:
        self.shape = tuple(shape)
        self.axes = tuple(axes)
        self.kept_shape = tuple(d for a, d in enumerate(self.shape) if a not in self.axes)
        self.count = num_elements([self.shape[a] for a in self.axes])

    def kept(self, indices: Sequence[object]) -> tuple[object, ...]:
        """The kept axes' entries of full-rank ``indices``."""
        return tuple(i for a, i in enumerate(indices) if a not in self.axes)

    def full(self, kept: Sequence[object], reduced: Sequence[object]) -> tuple[object, ...]:
        """Full-rank indices from the kept indices and one index per reduced axis."""
        kept_iter, reduced_iter = iter(kept), iter(reduced)
        return tuple(
            next(reduced_iter) if a in self.axes else next(kept_iter)
            for a in range(len(self.shape))
        )

    def reduce(self, reducer, value, name: str, index=None):
        """A stage over the kept axes reducing ``value(full indices)`` over the others.

        With ``index(reduced iterators)`` the reduction is over ``(value, index)`` pairs
        (argmax/argmin) and the stage's two tensors are returned.
        """
        if not self.axes:
            return te.compute(self.kept_shape, lambda *i: value(i), name=name)
        ks = [te.reduce_axis(self.shape[a], f"k{a}") for a in self.axes]

        def body(*i: object) -> object:
            source = value(self.full(i, ks))
            if index is None:
                return reducer(source, axis=ks)
            return reducer((source, index(ks)), axis=ks)

        return te.compute(self.kept_shape, body, name=name)

    def out_shape(self, keepdims: bool) -> tuple[Dim, ...]:
        """The result shape: the kept dims, with the reduced ones as 1 under keepdims."""
        if not keepdims:
            return self.kept_shape
        return tuple(1 if a in self.axes else d for a, d in enumerate(self.shape))


def when_nonempty(count: Dim, value: PrimExpr, identity: PrimExpr) -> PrimExpr:
    """``value`` of a reduction over ``count`` elements, or its ``identity`` when the
    reduction may be empty (a block's init runs with its first reduction step, so an
    empty reduction leaves its buffer unwritten)."""
    if arith.compare(count, ">=", 1) is True:
        return value
    return tmath.if_then_else(as_expr(count) > 0, value, identity)


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


def linear_index(shape: Sequence[Dim], indices: Sequence[object]) -> Dim:
    """The row-major flat position of ``indices`` in ``shape``."""
    flat: Dim = 0
    for dim, index in zip(shape, indices):
        flat = flat * dim + _dim_of(index)
    return flat


def unravel(flat: object, shape: Sequence[Dim]) -> tuple[Dim, ...]:
    """The row-major indices of flat position ``flat`` in ``shape``."""
    position = _dim_of(flat)
    indices: list[Dim] = []
    for axis in range(len(shape) - 1, -1, -1):
        if axis == 0:
            indices.append(position)
        else:
            indices.append(position % shape[axis])
            position = position // shape[axis]
    return tuple(reversed(indices))


def _dim_of(index: object) -> Dim:
    if isinstance(index, (int, arith.Expr)):
        return index
    dim = getattr(index, "index_dim", None)
    if dim is None:
        raise LoweringError(f"expected an index, got {index!r}")
    return dim


def _reduction_input(arg_infos: Sequence[StructInfo]) -> te.Tensor:
    (x,) = placeholders(KernelDims(), arg_infos[:1], ("x",))
    return x


def _input_dtype(value: object) -> str:
    """The dtype of a reference input: a Python scalar takes its weak default dtype."""
    return dtypes.result_type(value_type(value))


def _as_input(value: object) -> np.ndarray:
    return np.asarray(value, dtype=dtypes.to_numpy(_input_dtype(value)))


def _np_axis(axis: tuple[int, ...] | None, ndim: int) -> tuple[int, ...]:
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


class _AxesReduction(Op):
    """A reduction over a set of axes; subclasses give the dtype rule and the numpy code."""

    pattern = "reduction"
    num_inputs = 1
    nonempty = False

    def result_dtype(self, dtype: str, attrs) -> str:
        """The result dtype for an input of ``dtype``."""
        raise NotImplementedError

    def infer(self, args: Sequence[StructInfo], attrs, ctx: InferContext) -> StructInfo:
        (x,) = tensor_args(self.name, args, 1)
        dtype = self.result_dtype(x.dtype, attrs)
        return reduce_info(ctx, x, attrs.axis, attrs.keepdims, dtype, self.nonempty)

    def compute(self, x: np.ndarray, axes: tuple[int, ...], attrs, out: str) -> np.ndarray:
        """The numpy reduction of the converted input over ``axes`` (keepdims=True)."""
        raise NotImplementedError

    def work_dtype(self, out: str) -> str:
        """The dtype the kernel reduces in, for a result of dtype ``out``."""
        return compute_dtype(out).name

    def reduce_stage(self, x, axes: ReducedAxes, attrs, out: str, work: str, name: str):
        """The kernel stage holding the reduction (in ``work``) over the kept axes."""
        raise NotImplementedError

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
        x = _reduction_input(arg_infos)
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
        x = _as_input(value)
        out = self.result_dtype(_input_dtype(value), attrs)
        axes = _np_axis(attrs.axis, x.ndim)
        with np.errstate(all="ignore"):
            result = self.compute(x, axes, attrs, out)
        if not attrs.keepdims:
            result = np.squeeze(result, axis=axes)
        return np.asarray(result).astype(dtypes.to_numpy(out))


@register
class Sum(_AxesReduction):
    """``jnp.sum``: the sum over axes."""

    name = "sum"
    Attrs = AccumulateAttrs

    def result_dtype(self, dtype: str, attrs) -> str:
        return accumulate_dtype(self.name, dtype, attrs.dtype)

    def compute(self, x, axes, attrs, out):
        return np.sum(_converted(x, out), axis=axes, keepdims=True)

    def work_dtype(self, out: str) -> str:
        return accumulator_dtype(out).name

    def reduce_stage(self, x, axes, attrs, out, work, name):
        return axes.reduce(te.sum, lambda i: convert(convert(x[i], out), work), name)


@register
class Prod(_AxesReduction):
    """``jnp.prod``: the product over axes."""

    name = "prod"
    Attrs = AccumulateAttrs

    def result_dtype(self, dtype: str, attrs) -> str:
        return accumulate_dtype(self.name, dtype, attrs.dtype)

    def compute(self, x, axes, attrs, out):
        return np.prod(_converted(x, out), axis=axes, keepdims=True)

    def work_dtype(self, out: str) -> str:
        return accumulator_dtype(out).name

    def reduce_stage(self, x, axes, attrs, out, work, name):
        return axes.reduce(te.prod, lambda i: convert(convert(x[i], out), work), name)

    def identity(self, work: str) -> PrimExpr:
        return as_expr(1, work)


@register
class Mean(_AxesReduction):
    """``jnp.mean``: the sum over axes divided by the number of reduced elements."""

    name = "mean"
    Attrs = AccumulateAttrs

    def result_dtype(self, dtype: str, attrs) -> str:
        return float_result_dtype(self.name, dtype, attrs.dtype)

    def compute(self, x, axes, attrs, out):
        x = x.astype(compute_dtype(out))
        count = math.prod(x.shape[a] for a in axes)
        return np.sum(x, axis=axes, keepdims=True) / x.dtype.type(count)

    def reduce_stage(self, x, axes, attrs, out, work, name):
        return axes.reduce(te.sum, lambda i: convert(x[i], work), name)

    def finish(self, axes, attrs, work):
        count = convert(as_expr(axes.count), work)
        return lambda total, kept: total / count


@register
class Var(_AxesReduction):
    """``jnp.var``: the mean squared deviation from the mean, divided by ``count - ddof``
    (NaN when that is not positive)."""

    name = "var"
    Attrs = VarAttrs

    def result_dtype(self, dtype: str, attrs) -> str:
        return float_result_dtype(self.name, dtype, attrs.dtype)

    def compute(self, x, axes, attrs, out):
        x = x.astype(compute_dtype(out))
        count = math.prod(x.shape[a] for a in axes)
        mean = np.sum(x, axis=axes, keepdims=True) / x.dtype.type(count)
        squares = np.sum(np.square(x - mean), axis=axes, keepdims=True)
        divisor = count - attrs.ddof
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


@register
class Max(_AxesReduction):
    """``jnp.max``: the largest element over axes (NaN wins); empty axes are an error."""

    name = "max"
    Attrs = ReduceAttrs
    nonempty = True

    def result_dtype(self, dtype: str, attrs) -> str:
        return dtype

    def compute(self, x, axes, attrs, out):
        return np.max(x, axis=axes, keepdims=True)

    def work_dtype(self, out: str) -> str:
        return _extremum_dtype(out)

    def identity(self, work: str) -> None:
        return None

    def reduce_stage(self, x, axes, attrs, out, work, name):
        return axes.reduce(te.max, lambda i: convert(x[i], work), name)


@register
class Min(_AxesReduction):
    """``jnp.min``: the smallest element over axes (NaN wins); empty axes are an error."""

    name = "min"
    Attrs = ReduceAttrs
    nonempty = True

    def result_dtype(self, dtype: str, attrs) -> str:
        return dtype

    def compute(self, x, axes, attrs, out):
        return np.min(x, axis=axes, keepdims=True)

    def work_dtype(self, out: str) -> str:
        return _extremum_dtype(out)

    def identity(self, work: str) -> None:
        return None

    def reduce_stage(self, x, axes, attrs, out, work, name):
        return axes.reduce(te.min, lambda i: convert(x[i], work), name)


def _extremum_dtype(dtype: str) -> str:
    """Kernels compare bools as int8 (TIR has no max/min on bool)."""
    return "int8" if dtypes.is_bool(dtype) else dtype


def _converted(x: np.ndarray, dtype: str) -> np.ndarray:
    """``x`` converted to ``dtype`` (as jax does first) and widened to its accumulator."""
    return x.astype(dtypes.to_numpy(dtype)).astype(accumulator_dtype(dtype))


def accumulator_dtype(dtype: str) -> np.dtype:
    """The numpy dtype a sum or product of ``dtype`` is computed in: integer sums wrap
    identically in int64, and bool sums are logical ors of nonzero int64 sums."""
    if dtypes.is_bool(dtype) or dtypes.is_integer(dtype):
        return np.dtype("int64")
    return compute_dtype(dtype)


# --------------------------------------------------------------------------- arg reductions


class _ArgReduction(Op):
    """The index of the extreme element along one axis (first one on ties; NaN wins)."""

    pattern = "reduction"
    num_inputs = 1
    Attrs = ArgReduceAttrs

    def infer(self, args: Sequence[StructInfo], attrs, ctx: InferContext) -> StructInfo:
        (x,) = tensor_args(self.name, args, 1)
        axis = None if attrs.axis is None else (attrs.axis,)
        return reduce_info(ctx, x, axis, attrs.keepdims, "int64", nonempty=True)

    def pick(self, x: np.ndarray, axis: int | None) -> np.ndarray:
        """numpy's argmax or argmin."""
        raise NotImplementedError

    reducer = None  # te.argmax or te.argmin

    def lower(self, arg_infos: Sequence[StructInfo], attrs, out_info: StructInfo) -> PrimFunc:
        """A reduction over (value, flat index) pairs: the first extreme wins, NaN first."""
        x = _reduction_input(arg_infos)
        axis = None if attrs.axis is None else (attrs.axis,)
        axes = ReducedAxes(x.shape, reduced_axes(self.name, axis, x.ndim))
        work = _extremum_dtype(x.dtype)
        reduced_shape = [x.shape[a] for a in axes.axes]

        def index(ks: Sequence[object]) -> PrimExpr:
            return as_expr(linear_index(reduced_shape, ks))

        name = self.name if not attrs.keepdims else "acc"
        if not axes.axes:  # a 0-d array: index 0
            stage = te.compute((), lambda: as_expr(0), name=name)
        else:
            _, stage = axes.reduce(self.reducer, lambda i: convert(x[i], work), name, index)
        return finish_reduction(self.name, x, axes, stage, attrs.keepdims, "int64")

    def reference(self, *arrays: object, attrs=None) -> np.ndarray:
        attrs = self.Attrs() if attrs is None else attrs
        x = _as_input(arrays[0])
        if attrs.axis is None:
            result = self.pick(x.reshape(-1), 0)
            if attrs.keepdims:
                result = np.reshape(result, (1,) * x.ndim)
        else:
            result = self.pick(x, attrs.axis % max(x.ndim, 1))
            if attrs.keepdims:
                result = np.expand_dims(result, attrs.axis % max(x.ndim, 1))
        return np.asarray(result, dtype=np.int64)


@register
class Argmax(_ArgReduction):
    """``jnp.argmax``: int64 indices of the largest elements."""

    name = "argmax"
    reducer = te.argmax

    def pick(self, x: np.ndarray, axis: int | None) -> np.ndarray:
        return np.argmax(x, axis=axis)


@register
class Argmin(_ArgReduction):
    """``jnp.argmin``: int64 indices of the smallest elements."""

    name = "argmin"
    reducer = te.argmin

    def pick(self, x: np.ndarray, axis: int | None) -> np.ndarray:
        return np.argmin(x, axis=axis)


# --------------------------------------------------------------------------- scans


def cumsum_dtype(dtype: str, requested: str | None) -> str:
    """The dtype of ``cumsum``: ``requested``, else bool -> int64 and others unchanged."""
    if requested is not None:
        return requested
    return "int64" if dtypes.is_bool(dtype) else dtype


@register
class Cumsum(Op):
    """``jnp.cumsum``: inclusive running sums along one axis (None: of the flattened array)."""

    name = "cumsum"
    Attrs = CumsumAttrs
    pattern = "opaque"
    num_inputs = 1

    def infer(self, args: Sequence[StructInfo], attrs, ctx: InferContext) -> StructInfo:
        (x,) = tensor_args(self.name, args, 1)
        dtype = cumsum_dtype(x.dtype, attrs.dtype)
        if attrs.axis is None:
            if x.shape is None:
                return TensorInfo(dtype=dtype, ndim=1)
            return TensorInfo((num_elements(x.shape),), dtype)
        if x.ndim is None:
            return TensorInfo(dtype=dtype)
        normalize_axis(self.name, attrs.axis, x.ndim)
        return TensorInfo(x.shape, dtype, x.ndim)

    def lower(self, arg_infos: Sequence[StructInfo], attrs, out_info: StructInfo) -> PrimFunc:
        """``out[..., i, ...] = sum over k <= i of x[..., k, ...]`` (a masked reduction,
        quadratic in the axis length); ``axis=None`` scans the row-major flattening."""
        x = _reduction_input(arg_infos)
        out = as_tensor_info(out_info).dtype
        work = accumulator_dtype(out).name
        if attrs.axis is None:
            shape, size = (num_elements(x.shape),), num_elements(x.shape)

            def element(i: Sequence[object], k: object) -> PrimExpr:
                return x[unravel(k, x.shape)]

            position = 0
        else:
            position = normalize_axis(self.name, attrs.axis, x.ndim)
            shape, size = x.shape, x.shape[position]

            def element(i: Sequence[object], k: object) -> PrimExpr:
                return x[tuple(k if a == position else j for a, j in enumerate(i))]

        name = self.name if work == out else "acc"

        def body(*i: object) -> object:
            k = te.reduce_axis(size, "k")
            value = convert(convert(element(i, k), out), work)
            return te.sum(value, axis=k, where=k <= i[position])

        stage = te.compute(shape, body, name=name)
        if work == out:
            return te.create_prim_func([x, stage], name=self.name)
        result = te.compute(shape, lambda *i: convert(stage[i], out), name=self.name)
        return te.create_prim_func([x, result], name=self.name)

    def reference(self, *arrays: object, attrs=None) -> np.ndarray:
        attrs = self.Attrs() if attrs is None else attrs
        x = _as_input(arrays[0])
        out = cumsum_dtype(dtypes.canonical(x.dtype), attrs.dtype)
        if attrs.axis is None:
            x, axis = x.reshape(-1), 0
        else:
            axis = normalize_axis(self.name, attrs.axis, x.ndim)
        with np.errstate(all="ignore"):
            result = np.cumsum(_converted(x, out), axis=axis)
        return result.astype(dtypes.to_numpy(out))


__all__ = [
    "AccumulateAttrs",
    "ArgReduceAttrs",
    "CumsumAttrs",
    "ReduceAttrs",
    "VarAttrs",
    "accumulate_dtype",
    "accumulator_dtype",
    "cumsum_dtype",
    "float_result_dtype",
    "normalize_axes",
    "reduce_info",
    "reduced_axes",
]
