"""Neural-network ops: activations, ``softmax``/``log_softmax``, ``one_hot`` and the
last-axis normalisations ``layer_norm`` and ``rms_norm``.

Each is a dedicated op rather than a composition, so the printed graph shows one
readable binding and fusion sees one memory-bound kernel. Dtypes follow jax.nn with
64-bit types enabled.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from relaxjax import arith, dtypes
from relaxjax.ir import Check, StructInfo, TensorInfo
from relaxjax.ir.struct_info import format_dims
from relaxjax.ops.base import (
    Dim,
    InferContext,
    Op,
    compute_dtype,
    fail,
    normalize_axis,
    operand_type,
    register,
    tensor_args,
    to_inexact,
    value_type,
    with_dtype,
)
from relaxjax.ops.elementwise import OperandType, UnaryOp

_ERF = np.frompyfunc(math.erf, 1, 1)


def _erf(x: np.ndarray) -> np.ndarray:
    return _ERF(x.astype(np.float64)).astype(np.float64).astype(x.dtype)


def _reject(op_name: str, dtype: str, accepted: str) -> TypeError:
    return TypeError(f"{op_name} does not accept dtype {dtype}; expected {accepted}")


# --------------------------------------------------------------------------- activations


@register
class Relu(UnaryOp):
    """``max(x, 0)``; bool promotes to int64 as in jax (``maximum(x, 0)``)."""

    name = "relu"

    def input_dtype(self, x: OperandType) -> str:
        return dtypes.result_type(x, dtypes.Weak("int"))

    def compute(self, x: np.ndarray, attrs: object) -> np.ndarray:
        return np.maximum(x, 0)


class FloatOnlyUnary(UnaryOp):
    """An activation defined on floating operands only (as jax's ``logistic``)."""

    def input_dtype(self, x: OperandType) -> str:
        dtype = dtypes.result_type(x)
        if not dtypes.is_floating(dtype):
            raise _reject(self.name, dtype, "a floating dtype")
        return dtype


@register
class Sigmoid(FloatOnlyUnary):
    """``1 / (1 + exp(-x))``."""

    name = "sigmoid"

    def compute(self, x: np.ndarray, attrs: object) -> np.ndarray:
        return 1 / (1 + np.exp(-x))


@register
class Silu(FloatOnlyUnary):
    """``x * sigmoid(x)``."""

    name = "silu"

    def compute(self, x: np.ndarray, attrs: object) -> np.ndarray:
        return x / (1 + np.exp(-x))


@dataclass(frozen=True, slots=True)
class GeluAttrs:
    """``approximate=True``: the tanh formula; ``False``: the exact erf form."""

    approximate: bool = True

    def __post_init__(self) -> None:
        if not isinstance(self.approximate, bool):
            raise TypeError(f"gelu: approximate must be a bool, got {self.approximate!r}")


@register
class Gelu(UnaryOp):
    """The Gaussian error linear unit, as ``jax.nn.gelu``; integers compute in float."""

    name = "gelu"
    Attrs = GeluAttrs

    def input_dtype(self, x: OperandType) -> str:
        return to_inexact(dtypes.result_type(x))

    def compute(self, x: np.ndarray, attrs: object) -> np.ndarray:
        if attrs.approximate:
            inner = math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)
            return 0.5 * x * (1 + np.tanh(inner))
        return 0.5 * x * (1 + _erf(x / math.sqrt(2)))


# --------------------------------------------------------------------------- softmax


@dataclass(frozen=True, slots=True)
class AxesAttrs:
    """The axes an op reduces over: ints (non-negative once the rank is known), or None
    for every axis."""

    axes: tuple[int, ...] | None = (-1,)

    def __post_init__(self) -> None:
        if self.axes is None:
            return
        axes = tuple(self.axes)
        if not all(isinstance(a, int) and not isinstance(a, bool) for a in axes):
            raise TypeError(f"axes must be ints, got {self.axes!r}")
        object.__setattr__(self, "axes", axes)


def normalize_axes(op_name: str, axes: tuple[int, ...] | None, ndim: int) -> tuple[int, ...]:
    """Axes in ``[0, ndim)``, sorted; None means every axis; duplicates raise."""
    if axes is None:
        return tuple(range(ndim))
    normalized = [normalize_axis(op_name, a, ndim) for a in axes]
    if len(set(normalized)) != len(normalized):
        fail(op_name, f"duplicate axes in {axes} for an array of rank {ndim}")
    return tuple(sorted(normalized))


class SoftmaxLike(Op):
    """A normalisation over ``attrs.axes``; the shape is unchanged, ints compute in float."""

    pattern = "reduction"
    num_inputs = 1
    Attrs = AxesAttrs

    def result_dtype(self, x: OperandType) -> str:
        dtype = dtypes.result_type(x)
        if dtypes.is_bool(dtype):
            raise _reject(self.name, dtype, "an integer or floating dtype")
        return to_inexact(dtype)

    def infer(self, args: Sequence[StructInfo], attrs: object, ctx: InferContext) -> StructInfo:
        (x,) = tensor_args(self.name, args, 1)
        if x.ndim is not None:
            normalize_axes(self.name, attrs.axes, x.ndim)
        return with_dtype(x, self.result_dtype(operand_type(args[0])))

    def reference(self, *arrays: object, attrs: object = None) -> np.ndarray:
        (x,) = arrays
        out = self.result_dtype(value_type(x))
        values = np.asarray(x).astype(compute_dtype(out))
        axes = normalize_axes(self.name, attrs.axes, values.ndim)
        if values.size == 0:
            return values.astype(dtypes.to_numpy(out))
        shifted = values - np.max(values, axis=axes, keepdims=True)
        with np.errstate(all="ignore"):
            result = self.normalize(shifted, axes)
        return result.astype(dtypes.to_numpy(out))

    def normalize(self, shifted: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
        """The result from ``x - max(x)`` over ``axes``."""
        raise NotImplementedError


@register
class Softmax(SoftmaxLike):
    """``exp(x - max) / sum(exp(x - max))`` over the axes (default: the last)."""

    name = "softmax"

    def normalize(self, shifted: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
        exps = np.exp(shifted)
        return exps / np.sum(exps, axis=axes, keepdims=True)


@register
class LogSoftmax(SoftmaxLike):
    """``x - max - log(sum(exp(x - max)))`` over the axes (default: the last)."""

    name = "log_softmax"

    def normalize(self, shifted: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
        return shifted - np.log(np.sum(np.exp(shifted), axis=axes, keepdims=True))


# --------------------------------------------------------------------------- one_hot


@dataclass(frozen=True, slots=True)
class OneHotAttrs:
    """``num_classes`` (symbolic allowed), the result dtype and the new axis."""

    num_classes: Dim
    dtype: str = "float64"
    axis: int = -1

    def __post_init__(self) -> None:
        if isinstance(self.num_classes, bool) or not isinstance(
            self.num_classes, (int, arith.Expr)
        ):
            raise TypeError(
                f"one_hot: num_classes must be an int or a dim, got {self.num_classes!r}"
            )
        if isinstance(self.axis, bool) or not isinstance(self.axis, int):
            raise TypeError(f"one_hot: axis must be an int, got {self.axis!r}")
        object.__setattr__(self, "dtype", dtypes.canonical(self.dtype))


@register
class OneHot(Op):
    """``one_hot(x, num_classes)``: ``x[..., None] == arange(num_classes)`` at ``axis``."""

    name = "one_hot"
    pattern = "injective"
    num_inputs = 1
    Attrs = OneHotAttrs

    def infer(self, args: Sequence[StructInfo], attrs: object, ctx: InferContext) -> StructInfo:
        (x,) = tensor_args(self.name, args, 1)
        classes = attrs.num_classes
        message = f"{self.name}: num_classes must be >= 0, got {classes}"
        ctx.require(Check("nonneg", (classes,), message))
        if x.ndim is None:
            return TensorInfo(dtype=attrs.dtype)
        axis = normalize_axis(self.name, attrs.axis, x.ndim + 1)
        if x.shape is None:
            return TensorInfo(dtype=attrs.dtype, ndim=x.ndim + 1)
        return TensorInfo(x.shape[:axis] + (classes,) + x.shape[axis:], attrs.dtype)

    def reference(self, *arrays: object, attrs: object = None) -> np.ndarray:
        (x,) = arrays
        values = np.asarray(x)
        if not isinstance(attrs.num_classes, int):
            raise TypeError(f"one_hot: the reference needs a concrete num_classes, got {attrs}")
        axis = normalize_axis(self.name, attrs.axis, values.ndim + 1)
        classes = np.arange(attrs.num_classes)
        hot = values[..., None] == classes
        return np.moveaxis(hot, -1, axis).astype(dtypes.to_numpy(attrs.dtype))


# --------------------------------------------------------------------------- norms


@dataclass(frozen=True, slots=True)
class NormAttrs:
    """The ``eps`` added to the variance (or mean square) before the square root."""

    eps: float

    def __post_init__(self) -> None:
        if isinstance(self.eps, bool) or not isinstance(self.eps, (int, float)):
            raise TypeError(f"eps must be a float, got {self.eps!r}")
        object.__setattr__(self, "eps", float(self.eps))


class LastAxisNorm(Op):
    """Normalise over the last axis, then scale (and shift) by per-feature parameters.

    Every parameter must have shape ``x.shape[-1:]``; the result has ``x``'s shape and
    dtype ``promote(to_inexact(x), *params)``.
    """

    pattern = "reduction"
    Attrs = NormAttrs
    param_names: tuple[str, ...] = ()

    def infer(self, args: Sequence[StructInfo], attrs: object, ctx: InferContext) -> StructInfo:
        x, *params = tensor_args(self.name, args, self.num_inputs)
        dtype = self.result_dtype([operand_type(a) for a in args])
        if x.ndim == 0:
            fail(self.name, "x must have at least one axis, got a scalar of shape ()")
        known = True
        for pname, param in zip(self.param_names, params):
            known = self._check_param(ctx, x, pname, param) and known
        if not known or x.shape is None:
            return TensorInfo(dtype=dtype, ndim=x.ndim)
        return TensorInfo(x.shape, dtype)

    def _check_param(self, ctx: object, x: TensorInfo, pname: str, param: TensorInfo) -> bool:
        """Require ``param.shape == x.shape[-1:]``; False when it cannot be checked now."""
        if param.ndim is not None and param.ndim != 1:
            shape = format_dims(param.shape) if param.shape is not None else f"rank {param.ndim}"
            fail(self.name, f"{pname} must have shape x.shape[-1:] (rank 1), got {shape}")
        if param.shape is None or x.shape is None:
            return False
        features = x.shape[-1]
        message = (
            f"{self.name}: {pname} must have shape x.shape[-1:] = ({features},), "
            f"got {format_dims(param.shape)} for x of shape {format_dims(x.shape)}"
        )
        ctx.require(Check("eq", (param.shape[0], features), message))
        return True

    def result_dtype(self, types: Sequence[OperandType]) -> str:
        """``promote(to_inexact(x), *params)``."""
        x, *params = types
        return dtypes.result_type(to_inexact(dtypes.result_type(x)), *params)

    def reference(self, *arrays: object, attrs: object = None) -> np.ndarray:
        if len(arrays) != self.num_inputs:
            raise TypeError(f"{self.name} takes {self.num_inputs} arrays, got {len(arrays)}")
        out = self.result_dtype([value_type(a) for a in arrays])
        x, *params = (np.asarray(a).astype(compute_dtype(out)) for a in arrays)
        if x.ndim == 0 or any(p.shape != x.shape[-1:] for p in params):
            fail(self.name, f"parameters must have shape {x.shape[-1:]}")
        return self.normalize(x, params, attrs.eps).astype(dtypes.to_numpy(out))

    def normalize(self, x: np.ndarray, params: list[np.ndarray], eps: float) -> np.ndarray:
        """The numpy computation in the result's compute dtype."""
        raise NotImplementedError


@register
class LayerNorm(LastAxisNorm):
    """``(x - mean) / sqrt(var + eps) * gamma + beta`` over the last axis (biased var)."""

    name = "layer_norm"
    num_inputs = 3
    param_names = ("gamma", "beta")

    def normalize(self, x: np.ndarray, params: list[np.ndarray], eps: float) -> np.ndarray:
        gamma, beta = params
        centered = x - np.mean(x, axis=-1, keepdims=True)
        var = np.mean(centered * centered, axis=-1, keepdims=True)
        return centered / np.sqrt(var + x.dtype.type(eps)) * gamma + beta


@register
class RmsNorm(LastAxisNorm):
    """``x / sqrt(mean(x ** 2) + eps) * weight`` over the last axis."""

    name = "rms_norm"
    num_inputs = 2
    param_names = ("weight",)

    def normalize(self, x: np.ndarray, params: list[np.ndarray], eps: float) -> np.ndarray:
        (weight,) = params
        mean_square = np.mean(x * x, axis=-1, keepdims=True)
        return x / np.sqrt(mean_square + x.dtype.type(eps)) * weight


__all__ = [
    "AxesAttrs",
    "GeluAttrs",
    "NormAttrs",
    "OneHotAttrs",
    "normalize_axes",
]
