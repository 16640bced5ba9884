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
from relaxjax.errors import ShapeError
from relaxjax.ir import Check, StructInfo, TensorInfo
from relaxjax.ops.base import (
    InferContext,
    Op,
    compute_dtype,
    info_text,
    normalize_axis,
    num_elements,
    register,
    tensor_args,
    to_inexact,
    value_type,
)

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


@register
class Prod(_AxesReduction):
    """``jnp.prod``: the product over axes."""

    name = "prod"
    Attrs = AccumulateAttrs

    def result_dtype(self, dtype: str, attrs) -> str:
        return accumulate_dtype(self.name, dtype, attrs.dtype)

    def compute(self, x, axes, attrs, out):
        return np.prod(_converted(x, out), axis=axes, keepdims=True)


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

    def pick(self, x: np.ndarray, axis: int | None) -> np.ndarray:
        return np.argmax(x, axis=axis)


@register
class Argmin(_ArgReduction):
    """``jnp.argmin``: int64 indices of the smallest elements."""

    name = "argmin"

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
