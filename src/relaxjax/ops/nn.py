"""Neural-network ops: activations, ``softmax``/``log_softmax``, ``one_hot`` and the
last-axis normalisations ``layer_norm`` and ``rms_norm``.

Each is a dedicated op rather than a composition, so the printed graph shows one
readable binding and fusion sees one memory-bound kernel. Dtypes follow jax.nn with
64-bit types enabled.
"""

from __future__ import annotations

import math
from abc import abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from relaxjax import arith, dtypes, tir
from relaxjax.ir import Check, StructInfo, TensorInfo
from relaxjax.ir.struct_info import format_dims
from relaxjax.ops.axes import ReducedAxes
from relaxjax.ops.base import (
    Dim,
    InferContext,
    Op,
    as_tensor_info,
    compute_dtype,
    fail,
    normalize_axis,
    operand_type,
    register,
    tensor_args,
    to_inexact,
    unsupported_dtype,
    value_type,
    with_dtype,
)
from relaxjax.ops.kernel import KernelDims, convert, placeholders, single_input
from relaxjax.ops.transcendental import erf_reference
from relaxjax.ops.unary import FloatOnlyUnaryOp, FloatUnaryOp, OperandType, UnaryOp
from relaxjax.tir import PrimExpr, PrimFunc, te

# --------------------------------------------------------------------------- activations


@register
class Relu(UnaryOp):
    """``max(x, 0)``; bool promotes to int64 as in jax (``maximum(x, 0)``)."""

    name = "relu"

    def input_dtype(self, x: OperandType) -> str:
        return dtypes.result_type(x, dtypes.Weak("int"))

    def promotion_operands(self, x: OperandType) -> tuple[OperandType, ...]:
        return (x, dtypes.Weak("int"))  # relu(bool) is a weak int64, as maximum(x, 0)

    def compute(self, x: np.ndarray, attrs: object) -> np.ndarray:
        return np.maximum(x, 0)

    def scalar(self, x: PrimExpr, attrs: object) -> PrimExpr:
        return tir.max(x, tir.const(0, x.dtype))


@register
class Sigmoid(FloatOnlyUnaryOp):
    """``1 / (1 + exp(-x))``."""

    name = "sigmoid"

    def compute(self, x: np.ndarray, attrs: object) -> np.ndarray:
        return 1 / (1 + np.exp(-x))

    def scalar(self, x: PrimExpr, attrs: object) -> PrimExpr:
        return tir.sigmoid(x)


@register
class Silu(FloatOnlyUnaryOp):
    """``x * sigmoid(x)``."""

    name = "silu"

    def compute(self, x: np.ndarray, attrs: object) -> np.ndarray:
        return x / (1 + np.exp(-x))

    def scalar(self, x: PrimExpr, attrs: object) -> PrimExpr:
        return x * tir.sigmoid(x)


@dataclass(frozen=True, slots=True)
class GeluAttrs:
    """``approximate=True``: the tanh formula; ``False``: the exact erf form."""

    approximate: bool = True

    def __post_init__(self) -> None:
        if not isinstance(self.approximate, bool):
            raise TypeError(f"gelu: approximate must be a bool, got {self.approximate!r}")


@register
class Gelu(FloatUnaryOp):
    """The Gaussian error linear unit, as ``jax.nn.gelu``; integers compute in float."""

    name = "gelu"
    Attrs = GeluAttrs
    keeps_weak = False  # jax.nn.gelu multiplies by array constants

    def compute(self, x: np.ndarray, attrs: object) -> np.ndarray:
        if attrs.approximate:
            inner = math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)
            return 0.5 * x * (1 + np.tanh(inner))
        return 0.5 * x * (1 + erf_reference(x / math.sqrt(2)))

    def scalar(self, x: PrimExpr, attrs: object) -> PrimExpr:
        half, one = tir.const(0.5, x.dtype), tir.const(1.0, x.dtype)
        if attrs.approximate:
            cube = tir.const(0.044715, x.dtype) * x * x * x
            inner = tir.const(math.sqrt(2 / math.pi), x.dtype) * (x + cube)
            return half * x * (one + tir.tanh(inner))
        return half * x * (one + tir.erf(x * tir.const(1 / math.sqrt(2), x.dtype)))


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
            raise unsupported_dtype(self.name, dtype, "an integer or floating dtype")
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

    @abstractmethod
    def normalize(self, shifted: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
        """The result from ``x - max(x)`` over ``axes``."""

    def lower(
        self, arg_infos: Sequence[StructInfo], attrs: object, out_info: StructInfo
    ) -> PrimFunc:
        """Three stages: the max over the axes, the sum of ``exp(x - max)``, the result.

        Half precisions accumulate in float32.
        """
        _, x = single_input(arg_infos)
        out_dtype = as_tensor_info(out_info).dtype
        work = compute_dtype(out_dtype).name
        axes = normalize_axes(self.name, attrs.axes, x.ndim)
        rows = ReducedAxes(x.shape, axes)

        def value(indices: Sequence[object]) -> PrimExpr:
            return convert(x[tuple(indices)], work)

        peak = rows.reduce(te.max, value, f"{self.name}_max")

        def shifted(i: Sequence[object]) -> PrimExpr:
            return value(i) - peak[rows.kept(i)]

        total = rows.reduce(te.sum, lambda i: tir.exp(shifted(i)), f"{self.name}_sum")

        def body(*i: object) -> PrimExpr:
            return convert(self.finish(shifted(i), total[rows.kept(i)]), out_dtype)

        out = te.compute(x.shape, body, name=self.name)
        return te.create_prim_func([x, out], name=self.name)

    @abstractmethod
    def finish(self, shifted: PrimExpr, total: PrimExpr) -> PrimExpr:
        """The result from ``x - max`` and ``sum(exp(x - max))``."""


@register
class Softmax(SoftmaxLike):
    """``exp(x - max) / sum(exp(x - max))`` over the axes (default: the last)."""

    name = "softmax"

    def normalize(self, shifted: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
        exps = np.exp(shifted)
        return exps / np.sum(exps, axis=axes, keepdims=True)

    def finish(self, shifted: PrimExpr, total: PrimExpr) -> PrimExpr:
        return tir.exp(shifted) / total


@register
class LogSoftmax(SoftmaxLike):
    """``x - max - log(sum(exp(x - max)))`` over the axes (default: the last)."""

    name = "log_softmax"

    def normalize(self, shifted: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
        return shifted - np.log(np.sum(np.exp(shifted), axis=axes, keepdims=True))

    def finish(self, shifted: PrimExpr, total: PrimExpr) -> PrimExpr:
        return shifted - tir.log(total)


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

    def lower(
        self, arg_infos: Sequence[StructInfo], attrs: object, out_info: StructInfo
    ) -> PrimFunc:
        """``out[..., c, ...] = (x[...] == c)`` with ``c`` at the new axis."""
        dims, x = single_input(arg_infos)
        axis = normalize_axis(self.name, attrs.axis, x.ndim + 1)
        classes = dims.output_shape(out_info)[axis]
        shape = x.shape[:axis] + (classes,) + x.shape[axis:]

        def body(*i: object) -> PrimExpr:
            value = x[i[:axis] + i[axis + 1 :]]
            if dtypes.is_floating(value.dtype):
                hot = tir.eq(value, tir.cast(i[axis], value.dtype))
            else:
                hot = tir.eq(tir.cast(value, "int64"), i[axis])
            return convert(hot, attrs.dtype)

        out = te.compute(shape, body, name=self.name)
        return te.create_prim_func([x, out], name=self.name)


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
        with np.errstate(all="ignore"):  # an empty feature axis gives an empty result
            result = self.normalize(x, params, attrs.eps)
        return result.astype(dtypes.to_numpy(out))

    @abstractmethod
    def normalize(self, x: np.ndarray, params: list[np.ndarray], eps: float) -> np.ndarray:
        """The numpy computation in the result's compute dtype."""

    def lower(
        self, arg_infos: Sequence[StructInfo], attrs: object, out_info: StructInfo
    ) -> PrimFunc:
        """Reductions over the last axis (one or two stages), then the scaled result.

        Half precisions accumulate in float32.
        """
        dims = KernelDims()
        x, *params = placeholders(dims, arg_infos, ("x", *self.param_names))
        out_dtype = as_tensor_info(out_info).dtype
        norm = LastAxis(x, compute_dtype(out_dtype).name, attrs.eps)
        body = self.stages(norm, [Param(p, norm.work) for p in params])
        out = te.compute(x.shape, lambda *i: convert(body(i), out_dtype), name=self.name)
        return te.create_prim_func([x, *params, out], name=self.name)

    @abstractmethod
    def stages(self, norm: LastAxis, params: list[Param]):
        """Build the reduction stages; return the function of the result's indices."""


class LastAxis:
    """The input of a last-axis normalisation, read in the working dtype."""

    def __init__(self, x: te.Tensor, work: str, eps: float) -> None:
        self.x = x
        self.work = work
        self.rows = ReducedAxes(x.shape, (x.ndim - 1,))
        self.eps = tir.const(eps, work)
        self.features = tir.cast(tir.IndexExpr(x.shape[-1]), work)

    def value(self, indices: Sequence[object]) -> PrimExpr:
        return convert(self.x[tuple(indices)], self.work)

    def mean(self, stage: te.Tensor, indices: Sequence[object]) -> PrimExpr:
        """``stage`` (a sum over the last axis) divided by the feature count."""
        return stage[self.rows.kept(indices)] / self.features


class Param:
    """A per-feature parameter read at the last index, in the working dtype."""

    def __init__(self, tensor: te.Tensor, work: str) -> None:
        self.tensor = tensor
        self.work = work

    def __call__(self, indices: Sequence[object]) -> PrimExpr:
        return convert(self.tensor[indices[-1]], self.work)


def _mean(x: np.ndarray) -> np.ndarray:
    """The mean over the last axis, kept (NaN, silently, for an empty axis)."""
    return np.sum(x, axis=-1, keepdims=True) / x.dtype.type(x.shape[-1])


@register
class LayerNorm(LastAxisNorm):
    """``(x - mean) / sqrt(var + eps) * gamma + beta`` over the last axis (biased var)."""

    name = "layer_norm"
    num_inputs = 3
    param_names = ("gamma", "beta")

    def normalize(self, x: np.ndarray, params: list[np.ndarray], eps: float) -> np.ndarray:
        gamma, beta = params
        centered = x - _mean(x)
        var = _mean(centered * centered)
        return centered / np.sqrt(var + x.dtype.type(eps)) * gamma + beta

    def stages(self, norm: LastAxis, params: list[Param]):
        gamma, beta = params
        total = norm.rows.reduce(te.sum, norm.value, "layer_norm_sum")

        def centered(i: Sequence[object]) -> PrimExpr:
            return norm.value(i) - norm.mean(total, i)

        square = norm.rows.reduce(te.sum, lambda i: centered(i) * centered(i), "layer_norm_var")

        def body(i: Sequence[object]) -> PrimExpr:
            scale = tir.rsqrt(norm.mean(square, i) + norm.eps)
            return centered(i) * scale * gamma(i) + beta(i)

        return body


@register
class RmsNorm(LastAxisNorm):
    """``x / sqrt(mean(x ** 2) + eps) * weight`` over the last axis."""

    name = "rms_norm"
    num_inputs = 2
    param_names = ("weight",)

    def normalize(self, x: np.ndarray, params: list[np.ndarray], eps: float) -> np.ndarray:
        (weight,) = params
        mean_square = _mean(x * x)
        return x / np.sqrt(mean_square + x.dtype.type(eps)) * weight

    def stages(self, norm: LastAxis, params: list[Param]):
        (weight,) = params
        square = norm.rows.reduce(
            te.sum, lambda i: norm.value(i) * norm.value(i), "rms_norm_square"
        )

        def body(i: Sequence[object]) -> PrimExpr:
            return norm.value(i) * tir.rsqrt(norm.mean(square, i) + norm.eps) * weight(i)

        return body


__all__ = [
    "AxesAttrs",
    "GeluAttrs",
    "NormAttrs",
    "OneHotAttrs",
    "normalize_axes",
]
