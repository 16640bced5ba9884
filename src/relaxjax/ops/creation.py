"""Creation ops: ``zeros``, ``ones``, ``full``, ``arange`` and the ``*_like`` family.

Shapes are attributes (tuples of dims, symbolic allowed); a dim that may be negative
for some symbol values is checked at run time. ``arange`` accepts symbolic integer
bounds: its length ``max(ceil((stop - start) / step), 0)`` is built with arith.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from relaxjax import arith, dtypes, tir
from relaxjax.ir import Check, StructInfo, TensorInfo
from relaxjax.ir.struct_info import format_dims
from relaxjax.ops.base import (
    Dim,
    InferContext,
    Op,
    as_tensor_info,
    broadcast_to_shape,
    fail,
    operand_type,
    register,
    tensor_args,
    value_type,
)
from relaxjax.ops.kernel import (
    KernelDims,
    broadcast_indices,
    broadcast_kernel,
    convert,
    index_dims,
    placeholders,
)
from relaxjax.tir import PrimExpr, PrimFunc, te


def _canonical_shape(shape: Sequence[Dim]) -> tuple[Dim, ...]:
    dims = tuple(shape)
    for dim in dims:
        if isinstance(dim, bool) or not isinstance(dim, (int, arith.Expr)):
            raise TypeError(f"a shape must hold ints or symbolic dims, got {dim!r} in {shape!r}")
    return dims


def _optional_dtype(dtype: object) -> str | None:
    return None if dtype is None else dtypes.canonical(dtype)


def _shape_info(
    ctx: object, op_name: str, shape: Sequence[Dim], dtype: str, weak: bool = False
) -> TensorInfo:
    """A tensor of ``shape``; every dim must be >= 0 (checked at run time when symbolic)."""
    for axis, dim in enumerate(shape):
        message = (
            f"{op_name}: negative dimensions are not allowed: axis {axis} of shape "
            f"{format_dims(shape)} has size {dim}"
        )
        ctx.require(Check("nonneg", (dim,), message))
    return TensorInfo(shape, dtype, weak=weak)


def _identity(value: PrimExpr) -> PrimExpr:
    return value


def _constant_kernel(
    name: str, inputs: Sequence[te.Tensor], shape: Sequence[Dim], fill: int, dtype: str
) -> PrimFunc:
    """The kernel ``[*inputs, out]`` (inputs unread) writing ``fill`` to every element."""
    value = convert(tir.const(fill, "int64"), dtype)
    out = te.compute(shape, lambda *i: value, name=name)
    return te.create_prim_func([*inputs, out], name=name)


def as_dtype(info: StructInfo) -> str:
    """The dtype of a tensor (or scalar) info."""
    return as_tensor_info(info).dtype


def _no_arrays(op_name: str, arrays: Sequence[object]) -> None:
    if arrays:
        raise TypeError(f"{op_name} takes no array arguments, got {len(arrays)}")


def _concrete_shape(op_name: str, shape: Sequence[Dim]) -> tuple[int, ...]:
    if not all(isinstance(d, int) for d in shape):
        raise TypeError(f"{op_name}: the reference needs concrete dims, got {format_dims(shape)}")
    if any(d < 0 for d in shape):
        raise ValueError(f"{op_name}: negative dimensions are not allowed: {format_dims(shape)}")
    return tuple(shape)


@dataclass(frozen=True, slots=True)
class ShapeDtypeAttrs:
    """The shape (dims, symbolic allowed) and dtype of a created array."""

    shape: tuple[Dim, ...]
    dtype: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "shape", _canonical_shape(self.shape))
        object.__setattr__(self, "dtype", dtypes.canonical(self.dtype))


class ConstantFill(Op):
    """An array of ``attrs.shape`` and ``attrs.dtype`` filled with ``fill``."""

    pattern = "injective"
    num_inputs = 0
    Attrs = ShapeDtypeAttrs
    fill = 0

    def infer(self, args: Sequence[StructInfo], attrs: object, ctx: InferContext) -> StructInfo:
        tensor_args(self.name, args, 0)
        return _shape_info(ctx, self.name, attrs.shape, attrs.dtype)

    def reference(self, *arrays: object, attrs: object = None) -> np.ndarray:
        _no_arrays(self.name, arrays)
        shape = _concrete_shape(self.name, attrs.shape)
        return np.full(shape, self.fill, dtype=dtypes.to_numpy(attrs.dtype))

    def lower(
        self, arg_infos: Sequence[StructInfo], attrs: object, out_info: StructInfo
    ) -> PrimFunc:
        """A kernel with no inputs writing ``fill`` everywhere."""
        shape = KernelDims().output_shape(out_info)
        return _constant_kernel(self.name, [], shape, self.fill, attrs.dtype)


@register
class Zeros(ConstantFill):
    """``zeros(shape, dtype)``."""

    name = "zeros"
    fill = 0


@register
class Ones(ConstantFill):
    """``ones(shape, dtype)``."""

    name = "ones"
    fill = 1


@dataclass(frozen=True, slots=True)
class FullAttrs:
    """The shape of ``full`` and its dtype (None: the fill value's dtype)."""

    shape: tuple[Dim, ...]
    dtype: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "shape", _canonical_shape(self.shape))
        object.__setattr__(self, "dtype", _optional_dtype(self.dtype))


def _fill_type(fill: dtypes.Operand, dtype: str | None) -> tuple[str, bool]:
    """The dtype of ``full``'s result and whether it is weakly typed: the fill's (weak for
    a Python scalar, as ``jnp.full((2,), 1)``), or the requested dtype (strong)."""
    return (dtype, False) if dtype is not None else dtypes.result_type_weak(fill)


def _fill_info(
    ctx: object, op_name: str, fill: TensorInfo, shape: Sequence[Dim], dtype: str, weak: bool
) -> TensorInfo:
    """The result of filling ``shape`` with ``fill`` (which broadcasts to it)."""
    info = _shape_info(ctx, op_name, shape, dtype, weak)
    if fill.shape is not None:
        broadcast_to_shape(ctx, fill.shape, shape, "fill_value")
    elif fill.ndim is not None and fill.ndim > len(shape):
        fail(
            op_name,
            f"cannot broadcast fill_value of rank {fill.ndim} to shape {format_dims(shape)}",
        )
    elif fill.ndim is None or fill.ndim > 0:
        # Unknown fill dims: the result is only as precise as a run-time re-deduction.
        return TensorInfo(dtype=dtype, ndim=len(shape), weak=weak)
    return info


def _fill_reference(fill: object, shape: tuple[int, ...], dtype: str) -> np.ndarray:
    values = dtypes.convert(fill, dtype)
    return np.array(np.broadcast_to(values, shape))


@register
class Full(Op):
    """``full(shape, fill_value, dtype)``: ``fill_value`` broadcasts to ``shape``."""

    name = "full"
    pattern = "broadcast"
    num_inputs = 1
    Attrs = FullAttrs

    def infer(self, args: Sequence[StructInfo], attrs: object, ctx: InferContext) -> StructInfo:
        (fill,) = tensor_args(self.name, args, 1)
        dtype, weak = _fill_type(operand_type(args[0]), attrs.dtype)
        return _fill_info(ctx, self.name, fill, attrs.shape, dtype, weak)

    def reference(self, *arrays: object, attrs: object = None) -> np.ndarray:
        (fill,) = arrays
        shape = _concrete_shape(self.name, attrs.shape)
        return _fill_reference(fill, shape, _fill_type(value_type(fill), attrs.dtype)[0])

    def lower(
        self, arg_infos: Sequence[StructInfo], attrs: object, out_info: StructInfo
    ) -> PrimFunc:
        """``out[i] = fill[broadcast i]`` converted to the result's dtype."""
        return broadcast_kernel(self.name, arg_infos, out_info, ("fill",), _identity)


@dataclass(frozen=True, slots=True)
class LikeAttrs:
    """Overrides of a ``*_like`` op: dtype and shape (None: those of the operand)."""

    dtype: str | None = None
    shape: tuple[Dim, ...] | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "dtype", _optional_dtype(self.dtype))
        if self.shape is not None:
            object.__setattr__(self, "shape", _canonical_shape(self.shape))


def _like_type(attrs: LikeAttrs, like: dtypes.Operand) -> tuple[str, bool]:
    """The dtype of a ``*_like`` result and whether it is weakly typed: the override
    (strong), else the operand's (weak when the operand is, as ``jnp.zeros_like``)."""
    if attrs.dtype is not None:
        return attrs.dtype, False
    return dtypes.result_type_weak(like)


def _like_info(
    ctx: object, op_name: str, like: StructInfo, attrs: LikeAttrs, dtype: str, weak: bool
) -> TensorInfo:
    (info,) = tensor_args(op_name, [like], 1)
    if attrs.shape is not None:
        return _shape_info(ctx, op_name, attrs.shape, dtype, weak)
    return TensorInfo(info.shape, dtype, info.ndim, weak)


def _like_shape(op_name: str, like: object, attrs: LikeAttrs) -> tuple[int, ...]:
    if attrs.shape is not None:
        return _concrete_shape(op_name, attrs.shape)
    return np.shape(like)


class ConstantLike(Op):
    """An array shaped and typed like the operand (or per the overrides), filled with ``fill``."""

    pattern = "injective"
    num_inputs = 1
    Attrs = LikeAttrs
    fill = 0

    def infer(self, args: Sequence[StructInfo], attrs: object, ctx: InferContext) -> StructInfo:
        tensor_args(self.name, args, 1)
        dtype, weak = _like_type(attrs, operand_type(args[0]))
        return _like_info(ctx, self.name, args[0], attrs, dtype, weak)

    def reference(self, *arrays: object, attrs: object = None) -> np.ndarray:
        (like,) = arrays
        dtype = _like_type(attrs, value_type(like))[0]
        shape = _like_shape(self.name, like, attrs)
        return np.full(shape, self.fill, dtype=dtypes.to_numpy(dtype))

    def lower(
        self, arg_infos: Sequence[StructInfo], attrs: object, out_info: StructInfo
    ) -> PrimFunc:
        """The operand is an (unread) input, so its shape can give the result's."""
        dims = KernelDims()
        (like,) = placeholders(dims, arg_infos, ("a",))
        shape = like.shape if attrs.shape is None else dims.output_shape(out_info)
        return _constant_kernel(self.name, [like], shape, self.fill, as_dtype(out_info))


@register
class ZerosLike(ConstantLike):
    """``zeros_like(a, dtype=None, shape=None)``."""

    name = "zeros_like"
    fill = 0


@register
class OnesLike(ConstantLike):
    """``ones_like(a, dtype=None, shape=None)``."""

    name = "ones_like"
    fill = 1


@register
class FullLike(Op):
    """``full_like(a, fill_value, dtype=None, shape=None)``; the dtype defaults to ``a``'s."""

    name = "full_like"
    pattern = "broadcast"
    num_inputs = 2
    Attrs = LikeAttrs

    def infer(self, args: Sequence[StructInfo], attrs: object, ctx: InferContext) -> StructInfo:
        _, fill = tensor_args(self.name, args, 2)
        dtype, weak = _like_type(attrs, operand_type(args[0]))
        like = _like_info(ctx, self.name, args[0], attrs, dtype, weak)
        if like.shape is None:
            return like
        return _fill_info(ctx, self.name, fill, like.shape, dtype, weak)

    def reference(self, *arrays: object, attrs: object = None) -> np.ndarray:
        like, fill = arrays
        dtype = _like_type(attrs, value_type(like))[0]
        return _fill_reference(fill, _like_shape(self.name, like, attrs), dtype)

    def lower(
        self, arg_infos: Sequence[StructInfo], attrs: object, out_info: StructInfo
    ) -> PrimFunc:
        """``out[i] = fill[broadcast i]``; ``a`` is an (unread) input."""
        dims = KernelDims()
        like, fill = placeholders(dims, arg_infos, ("a", "fill"))
        shape = like.shape if attrs.shape is None else dims.output_shape(out_info)
        dtype = as_dtype(out_info)

        def body(*i: object) -> PrimExpr:
            return convert(fill[broadcast_indices(fill.shape, shape, i)], dtype)

        out = te.compute(shape, body, name=self.name)
        return te.create_prim_func([like, fill, out], name=self.name)


# --------------------------------------------------------------------------- arange

Bound = Dim | float


@dataclass(frozen=True, slots=True)
class ArangeAttrs:
    """``arange(start, stop, step)``: integer (possibly symbolic) or float bounds.

    ``step`` must be a nonzero constant; symbolic bounds need integer bounds throughout.
    """

    start: Bound
    stop: Bound
    step: Bound
    dtype: str

    def __post_init__(self) -> None:
        for field in ("start", "stop", "step"):
            value = getattr(self, field)
            if isinstance(value, bool) or not isinstance(value, (int, float, arith.Expr)):
                raise TypeError(
                    f"arange: {field} must be an int, a float or a symbolic dim, got {value!r}"
                )
        if isinstance(self.step, arith.Expr):
            raise TypeError(f"arange: step must be a constant, got the symbolic {self.step}")
        if self.step == 0:
            raise ValueError("arange: step must not be zero")
        symbolic = any(isinstance(v, arith.Expr) for v in (self.start, self.stop))
        if symbolic and any(isinstance(v, float) for v in (self.start, self.stop, self.step)):
            raise TypeError(
                f"arange: symbolic bounds need integer start, stop and step, got "
                f"start={self.start}, stop={self.stop}, step={self.step}"
            )
        object.__setattr__(self, "dtype", dtypes.canonical(self.dtype))


def arange_length(start: Bound, stop: Bound, step: Bound) -> Dim:
    """The number of elements of ``arange(start, stop, step)``: ``max(ceil(...), 0)``."""
    if any(isinstance(v, float) for v in (start, stop, step)):
        return max(math.ceil((stop - start) / step), 0)
    return arith.max_(-((start - stop) // step), 0)


@register
class Arange(Op):
    """``arange(start, stop, step, dtype)``: evenly spaced values in ``[start, stop)``."""

    name = "arange"
    pattern = "injective"
    num_inputs = 0
    Attrs = ArangeAttrs

    def infer(self, args: Sequence[StructInfo], attrs: object, ctx: InferContext) -> StructInfo:
        tensor_args(self.name, args, 0)
        return TensorInfo((arange_length(attrs.start, attrs.stop, attrs.step),), attrs.dtype)

    def reference(self, *arrays: object, attrs: object = None) -> np.ndarray:
        _no_arrays(self.name, arrays)
        bounds = (attrs.start, attrs.stop, attrs.step)
        if any(isinstance(v, arith.Expr) for v in bounds):
            raise TypeError(f"arange: the reference needs concrete bounds, got {bounds}")
        numpy_dtype = dtypes.to_numpy(attrs.dtype)
        if not dtypes.is_floating(attrs.dtype):
            # As jax: start and step are converted first, the length comes from the bounds.
            start, step = (np.array(v).astype(numpy_dtype) for v in (attrs.start, attrs.step))
            steps = np.arange(arange_length(*bounds), dtype=np.int64)
            return (start + step * steps).astype(numpy_dtype)
        if attrs.dtype == "bfloat16":
            return np.arange(*bounds, dtype=np.float32).astype(numpy_dtype)
        return np.arange(*bounds, dtype=numpy_dtype)

    def lower(
        self, arg_infos: Sequence[StructInfo], attrs: object, out_info: StructInfo
    ) -> PrimFunc:
        """``out[i] = start + step * i``; a symbolic start that is not the length
        becomes a scalar param named as in the graph."""
        reserved = [s.name for v in (attrs.start, attrs.stop) for s in _symbols_of(v)]
        dims = KernelDims(reserved)
        shape = dims.output_shape(out_info)
        integral = all(not isinstance(v, float) for v in (attrs.start, attrs.stop, attrs.step))
        if integral or not dtypes.is_floating(attrs.dtype):
            start = dims.value(attrs.start) if integral else int(attrs.start)
            step = int(attrs.step)

            def body(i: object) -> PrimExpr:
                return convert(tir.IndexExpr(start + step * index_dims((i,))[0]), attrs.dtype)

        else:

            def body(i: object) -> PrimExpr:
                position = tir.cast(i, "float64")
                value = (
                    tir.const(attrs.start, "float64") + tir.const(attrs.step, "float64") * position
                )
                return convert(value, attrs.dtype)

        out = te.compute(shape, body, name=self.name)
        return te.create_prim_func([out], name=self.name)


def _symbols_of(value: Bound) -> frozenset:
    return arith.free_symbols(value) if isinstance(value, arith.Expr) else frozenset()


__all__ = [
    "ArangeAttrs",
    "FullAttrs",
    "LikeAttrs",
    "ShapeDtypeAttrs",
    "arange_length",
]
