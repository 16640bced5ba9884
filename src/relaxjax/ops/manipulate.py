"""Shape manipulation: ``reshape transpose swapaxes expand_dims squeeze broadcast_to
concatenate stack split tril triu pad``, with jax.numpy semantics.

Each op moves or copies elements without arithmetic, so its dtype is its input's
(``concatenate`` and ``stack`` promote their operands). Shape relations that cannot be
proven for every value of the symbols become run-time checks: a reshape whose element
counts may differ, a concatenation whose other axes may differ, a split that may not
divide evenly. Relations that are false for every value raise ``ShapeError``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from relaxjax import arith, dtypes, tir
from relaxjax.errors import LoweringError, ShapeError
from relaxjax.ir import Check, StructInfo, TensorInfo, TupleInfo
from relaxjax.ir.struct_info import format_dims
from relaxjax.ops.base import (
    InferContext,
    Op,
    as_tensor_info,
    info_text,
    normalize_axis,
    num_elements,
    promote_types,
    register,
    require_equal,
    tensor_args,
    value_type,
)
from relaxjax.ops.kernel import KernelDims, broadcast_indices, convert, index_dims, placeholders
from relaxjax.ops.reduction import linear_index, normalize_axes, unravel
from relaxjax.tir import PrimExpr, PrimFunc, te
from relaxjax.tir.expr import as_expr

Dim = arith.Dim


# --------------------------------------------------------------------------- helpers


def _check_int(owner: str, name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{owner}.{name} must be an int, got {value!r}")


def _check_ints(owner: str, name: str, values: object) -> None:
    if not isinstance(values, tuple):
        raise TypeError(f"{owner}.{name} must be a tuple of ints, got {values!r}")
    for value in values:
        _check_int(owner, name, value)


def check_dim(owner: str, name: str, value: object, allow_negative_one: bool = False) -> None:
    """Validate a dim attribute: an int (``>= 0``, or ``-1`` where allowed) or an Expr."""
    if isinstance(value, arith.Expr):
        return
    _check_int(owner, name, value)
    if value < (-1 if allow_negative_one else 0):
        allowed = "-1 or a size >= 0" if allow_negative_one else "a size >= 0"
        raise ValueError(f"{owner}.{name} must hold {allowed}, got {value}")


def require_nonneg(ctx: InferContext, dims: Sequence[Dim], what: str) -> None:
    """Require every symbolic dim of a requested shape to be ``>= 0``."""
    for dim in dims:
        if isinstance(dim, arith.Expr):
            message = f"{ctx.op_name}: {what} has size {dim}, expected >= 0"
            ctx.require(Check("nonneg", (dim,), message))


def require_one_or(ctx: InferContext, dim: Dim, target: Dim, message: str) -> None:
    """Require ``dim == 1 or dim == target`` (one-sided broadcasting of ``dim`` to ``target``)."""
    if arith.compare(dim, "==", 1) is True or arith.compare(dim, "==", target) is True:
        return
    if arith.compare(dim, "!=", 1) is True:
        ctx.require(Check("eq", (dim, target), f"{ctx.op_name}: {message}"))
        return
    # (dim - 1) * (dim - target) == 0 holds exactly when dim is 1 or target
    ctx.require(Check("eq", ((dim - 1) * (dim - target), 0), f"{ctx.op_name}: {message}"))


def divide_exactly(total: Dim, factors: Sequence[Dim]) -> Dim:
    """``total // prod(factors)`` where the caller requires ``prod(factors) >= 1`` and
    ``prod(factors) | total`` at run time.

    arith cancels a symbolic divisor only when it is provably nonzero. Dims are
    non-negative, so when their product is required to be ``>= 1`` every factor is
    ``>= 1``: the division is done with the factors that are bare symbols re-declared
    with lower bound 1, and the original symbols are put back afterwards.
    """
    rebound: dict[str, Dim] = {}
    originals: dict[str, Dim] = {}
    for factor in factors:
        if isinstance(factor, arith.Sym) and factor.lower == 0:
            rebound[factor.name] = arith.sym(factor.name, lower=1, upper=factor.upper)
            originals[factor.name] = factor
    divisor = num_elements([arith.subs(f, rebound) for f in factors])
    quotient = arith.floordiv(arith.subs(total, rebound), divisor)
    return arith.subs(quotient, originals)


def _as_input(value: object) -> np.ndarray:
    return np.asarray(value, dtype=dtypes.to_numpy(dtypes.result_type(value_type(value))))


def gather_kernel(name: str, x: te.Tensor, shape: Sequence[Dim], source) -> PrimFunc:
    """The one-stage kernel ``[x, out]`` with ``out[i] = x[source(i)]`` (a copy)."""
    out = te.compute(shape, lambda *i: x[tuple(source(index_dims(i)))], name=name)
    return te.create_prim_func([x, out], name=name)


def _one_input(arg_infos: Sequence[StructInfo]) -> tuple[KernelDims, te.Tensor]:
    dims = KernelDims()
    (x,) = placeholders(dims, arg_infos[:1], ("x",))
    return dims, x


def _known_shape(dims: KernelDims, info: StructInfo, name: str) -> tuple[Dim, ...]:
    return dims.output_shape(info, f"result of {name}")


# --------------------------------------------------------------------------- reshape


@dataclass(frozen=True, slots=True)
class ReshapeAttrs:
    """Attributes of ``reshape``: the new shape; at most one entry is ``-1`` (inferred)."""

    shape: tuple[Dim, ...]

    def __post_init__(self) -> None:
        if not isinstance(self.shape, tuple):
            raise TypeError(f"ReshapeAttrs.shape must be a tuple of dims, got {self.shape!r}")
        for dim in self.shape:
            check_dim("ReshapeAttrs", "shape", dim, allow_negative_one=True)
        unknown = [d for d in self.shape if isinstance(d, int) and d == -1]
        if len(unknown) > 1:
            raise ValueError(
                f"reshape: can only specify one unknown axis size with -1, got {self.shape}"
            )


def _has_fill(shape: Sequence[Dim]) -> bool:
    return any(isinstance(d, int) and d == -1 for d in shape)


@register
class Reshape(Op):
    """``jnp.reshape`` (C order): same elements, new shape; ``-1`` is inferred."""

    name = "reshape"
    Attrs = ReshapeAttrs
    pattern = "injective"
    num_inputs = 1

    def infer(self, args: Sequence[StructInfo], attrs, ctx: InferContext) -> StructInfo:
        (x,) = tensor_args(self.name, args, 1)
        new = attrs.shape
        require_nonneg(ctx, new, f"the new shape {format_dims(new)}")
        if x.shape is None:
            return TensorInfo(dtype=x.dtype, ndim=len(new))
        size = num_elements(x.shape)
        text = f"cannot reshape {info_text(x)} (size {size}) into {format_dims(new)}"
        if not _has_fill(new):
            require_equal(ctx, size, num_elements(new), f"{text} (size {num_elements(new)})")
            return TensorInfo(new, x.dtype)
        factors = [d for d in new if not (isinstance(d, int) and d == -1)]
        known = num_elements(factors)
        ctx.require(
            Check("le", (1, known), f"{self.name}: {text}: the other axes have size {known}")
        )
        ctx.require(
            Check("divides", (known, size), f"{self.name}: {text}: {known} does not divide {size}")
        )
        fill = divide_exactly(size, factors)
        shape = tuple(fill if isinstance(d, int) and d == -1 else d for d in new)
        return TensorInfo(shape, x.dtype)

    def reference(self, *arrays: object, attrs=None) -> np.ndarray:
        x = _as_input(arrays[0])
        return np.reshape(x, tuple(int(d) for d in attrs.shape))

    def lower(self, arg_infos: Sequence[StructInfo], attrs, out_info: StructInfo) -> PrimFunc:
        """``out[i] = x[unravel(ravel(i))]`` (row-major positions are preserved)."""
        dims, x = _one_input(arg_infos)
        shape = _known_shape(dims, out_info, self.name)
        return gather_kernel(
            self.name, x, shape, lambda i: unravel(linear_index(shape, i), x.shape)
        )


# --------------------------------------------------------------------------- transpose


@dataclass(frozen=True, slots=True)
class TransposeAttrs:
    """Attributes of ``transpose``: the permutation (None: reverse the axes)."""

    axes: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        if self.axes is not None:
            _check_ints("TransposeAttrs", "axes", self.axes)


def permutation(op_name: str, axes: Sequence[int] | None, ndim: int) -> tuple[int, ...]:
    """``axes`` as a permutation of ``range(ndim)`` (None: reversed); ``ShapeError``
    unless it is one."""
    if axes is None:
        return tuple(range(ndim - 1, -1, -1))
    if len(axes) != ndim:
        raise ShapeError(
            f"{op_name}: axes {tuple(axes)} are not a permutation of the axes of an array "
            f"of rank {ndim} (expected {ndim} axes, got {len(axes)})"
        )
    try:
        return normalize_axes(op_name, axes, ndim)
    except ShapeError as err:
        raise ShapeError(
            f"{op_name}: axes {tuple(axes)} are not a permutation of the axes of an array "
            f"of rank {ndim} ({err.message})"
        ) from None


def _transposed(x: TensorInfo, perm: tuple[int, ...]) -> TensorInfo:
    if x.shape is None:
        return TensorInfo(dtype=x.dtype, ndim=len(perm))
    return TensorInfo(tuple(x.shape[p] for p in perm), x.dtype)


@register
class Transpose(Op):
    """``jnp.transpose``: permute the axes (``out.shape[i] == x.shape[axes[i]]``)."""

    name = "transpose"
    Attrs = TransposeAttrs
    pattern = "injective"
    num_inputs = 1

    def infer(self, args: Sequence[StructInfo], attrs, ctx: InferContext) -> StructInfo:
        (x,) = tensor_args(self.name, args, 1)
        if x.ndim is None:
            ndim = None if attrs.axes is None else len(attrs.axes)
            return TensorInfo(dtype=x.dtype, ndim=ndim)
        return _transposed(x, permutation(self.name, attrs.axes, x.ndim))

    def reference(self, *arrays: object, attrs=None) -> np.ndarray:
        x = _as_input(arrays[0])
        axes = None if attrs is None else attrs.axes
        return np.transpose(x, permutation(self.name, axes, x.ndim))

    def lower(self, arg_infos: Sequence[StructInfo], attrs, out_info: StructInfo) -> PrimFunc:
        """``out[i] = x[j]`` with ``j[axes[a]] = i[a]``."""
        _, x = _one_input(arg_infos)
        return permute_kernel(self.name, x, permutation(self.name, attrs.axes, x.ndim))


def permute_kernel(name: str, x: te.Tensor, perm: Sequence[int]) -> PrimFunc:
    """The kernel of a transpose by ``perm``."""
    inverse = [perm.index(a) for a in range(len(perm))]
    shape = tuple(x.shape[p] for p in perm)
    return gather_kernel(name, x, shape, lambda i: tuple(i[inverse[a]] for a in range(len(perm))))


@dataclass(frozen=True, slots=True)
class SwapaxesAttrs:
    """Attributes of ``swapaxes``: the two axes exchanged."""

    axis1: int
    axis2: int

    def __post_init__(self) -> None:
        _check_int("SwapaxesAttrs", "axis1", self.axis1)
        _check_int("SwapaxesAttrs", "axis2", self.axis2)


def swap_permutation(op_name: str, axis1: int, axis2: int, ndim: int) -> tuple[int, ...]:
    """The permutation exchanging two axes of a rank-``ndim`` array."""
    a = normalize_axis(op_name, axis1, ndim)
    b = normalize_axis(op_name, axis2, ndim)
    perm = list(range(ndim))
    perm[a], perm[b] = b, a
    return tuple(perm)


@register
class Swapaxes(Op):
    """``jnp.swapaxes``: exchange two axes (an op of its own so the rank may be unknown)."""

    name = "swapaxes"
    Attrs = SwapaxesAttrs
    pattern = "injective"
    num_inputs = 1

    def infer(self, args: Sequence[StructInfo], attrs, ctx: InferContext) -> StructInfo:
        (x,) = tensor_args(self.name, args, 1)
        if x.ndim is None:
            return TensorInfo(dtype=x.dtype)
        return _transposed(x, swap_permutation(self.name, attrs.axis1, attrs.axis2, x.ndim))

    def reference(self, *arrays: object, attrs=None) -> np.ndarray:
        x = _as_input(arrays[0])
        return np.transpose(x, swap_permutation(self.name, attrs.axis1, attrs.axis2, x.ndim))

    def lower(self, arg_infos: Sequence[StructInfo], attrs, out_info: StructInfo) -> PrimFunc:
        """A transpose exchanging the two axes."""
        _, x = _one_input(arg_infos)
        perm = swap_permutation(self.name, attrs.axis1, attrs.axis2, x.ndim)
        return permute_kernel(self.name, x, perm)


# --------------------------------------------------------------------------- expand/squeeze


@dataclass(frozen=True, slots=True)
class ExpandDimsAttrs:
    """Attributes of ``expand_dims``: positions of the new size-1 axes in the result."""

    axis: tuple[int, ...]

    def __post_init__(self) -> None:
        _check_ints("ExpandDimsAttrs", "axis", self.axis)


def expanded_shape(op_name: str, shape: Sequence[Dim], axis: Sequence[int]) -> tuple[Dim, ...]:
    """``shape`` with size-1 axes inserted at result positions ``axis``."""
    out_ndim = len(shape) + len(axis)
    positions = set(normalize_axes(op_name, axis, out_ndim))
    dims = iter(shape)
    return tuple(1 if i in positions else next(dims) for i in range(out_ndim))


@register
class ExpandDims(Op):
    """``jnp.expand_dims``: insert size-1 axes."""

    name = "expand_dims"
    Attrs = ExpandDimsAttrs
    pattern = "injective"
    num_inputs = 1

    def infer(self, args: Sequence[StructInfo], attrs, ctx: InferContext) -> StructInfo:
        (x,) = tensor_args(self.name, args, 1)
        if x.ndim is None:
            return TensorInfo(dtype=x.dtype)
        if x.shape is None:
            out_ndim = x.ndim + len(attrs.axis)
            normalize_axes(self.name, attrs.axis, out_ndim)
            return TensorInfo(dtype=x.dtype, ndim=out_ndim)
        return TensorInfo(expanded_shape(self.name, x.shape, attrs.axis), x.dtype)

    def reference(self, *arrays: object, attrs=None) -> np.ndarray:
        x = _as_input(arrays[0])
        return np.reshape(x, expanded_shape(self.name, x.shape, attrs.axis))

    def lower(self, arg_infos: Sequence[StructInfo], attrs, out_info: StructInfo) -> PrimFunc:
        """``out[i] = x[i without the new axes]``."""
        _, x = _one_input(arg_infos)
        shape = expanded_shape(self.name, x.shape, attrs.axis)
        new = set(normalize_axes(self.name, attrs.axis, len(shape)))
        return gather_kernel(
            self.name, x, shape, lambda i: tuple(j for a, j in enumerate(i) if a not in new)
        )


@dataclass(frozen=True, slots=True)
class SqueezeAttrs:
    """Attributes of ``squeeze``: the removed axes (None: every axis of size 1)."""

    axis: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        if self.axis is not None:
            _check_ints("SqueezeAttrs", "axis", self.axis)


@register
class Squeeze(Op):
    """``jnp.squeeze``: remove size-1 axes (each named axis must have size 1)."""

    name = "squeeze"
    Attrs = SqueezeAttrs
    pattern = "injective"
    num_inputs = 1

    def infer(self, args: Sequence[StructInfo], attrs, ctx: InferContext) -> StructInfo:
        (x,) = tensor_args(self.name, args, 1)
        if x.ndim is None or (attrs.axis is None and x.shape is None):
            return TensorInfo(dtype=x.dtype)
        if attrs.axis is None:
            ones = [arith.compare(d, "==", 1) for d in x.shape]
            if any(one is None for one in ones):
                return TensorInfo(dtype=x.dtype)
            return TensorInfo(tuple(d for d, one in zip(x.shape, ones) if not one), x.dtype)
        axes = normalize_axes(self.name, attrs.axis, x.ndim)
        if x.shape is None:
            return TensorInfo(dtype=x.dtype, ndim=x.ndim - len(axes))
        for a in axes:
            message = (
                f"cannot squeeze axis {a} of shape {info_text(x)}: "
                f"its size is {x.shape[a]}, expected 1"
            )
            require_equal(ctx, x.shape[a], 1, message)
        return TensorInfo(tuple(d for i, d in enumerate(x.shape) if i not in axes), x.dtype)

    def reference(self, *arrays: object, attrs=None) -> np.ndarray:
        x = _as_input(arrays[0])
        axis = None if attrs is None or attrs.axis is None else attrs.axis
        return np.squeeze(x, axis=axis)

    def lower(self, arg_infos: Sequence[StructInfo], attrs, out_info: StructInfo) -> PrimFunc:
        """``out[i] = x[i with 0 at the removed axes]``."""
        _, x = _one_input(arg_infos)
        if attrs.axis is not None:
            axes = set(normalize_axes(self.name, attrs.axis, x.ndim))
        else:
            ones = [arith.compare(d, "==", 1) for d in x.shape]
            if any(one is None for one in ones):
                raise LoweringError(
                    f"squeeze(axis=None) of shape {format_dims(x.shape)}: which axes have "
                    "size 1 is not known"
                )
            axes = {a for a, one in enumerate(ones) if one}
        shape = tuple(d for a, d in enumerate(x.shape) if a not in axes)

        def source(i: Sequence[Dim]) -> tuple[Dim, ...]:
            kept = iter(i)
            return tuple(0 if a in axes else next(kept) for a in range(x.ndim))

        return gather_kernel(self.name, x, shape, source)


# --------------------------------------------------------------------------- broadcast_to


@dataclass(frozen=True, slots=True)
class BroadcastToAttrs:
    """Attributes of ``broadcast_to``: the target shape."""

    shape: tuple[Dim, ...]

    def __post_init__(self) -> None:
        if not isinstance(self.shape, tuple):
            raise TypeError(f"BroadcastToAttrs.shape must be a tuple of dims, got {self.shape!r}")
        for dim in self.shape:
            check_dim("BroadcastToAttrs", "shape", dim)


@register
class BroadcastTo(Op):
    """``jnp.broadcast_to``: repeat size-1 (and missing leading) axes to the target shape."""

    name = "broadcast_to"
    Attrs = BroadcastToAttrs
    pattern = "broadcast"
    num_inputs = 1

    def infer(self, args: Sequence[StructInfo], attrs, ctx: InferContext) -> StructInfo:
        (x,) = tensor_args(self.name, args, 1)
        target = attrs.shape
        require_nonneg(ctx, target, f"the target shape {format_dims(target)}")
        if x.ndim is not None and x.ndim > len(target):
            ctx.fail(
                f"cannot broadcast {info_text(x)} to {format_dims(target)}: "
                f"the target has fewer dimensions ({len(target)} < {x.ndim})"
            )
        if x.shape is None:
            return TensorInfo(dtype=x.dtype, ndim=len(target))
        lead = len(target) - len(x.shape)
        for axis, dim in enumerate(x.shape):
            want = target[lead + axis]
            message = (
                f"cannot broadcast {info_text(x)} to {format_dims(target)}: "
                f"axis {axis} has size {dim}, expected 1 or {want}"
            )
            require_one_or(ctx, dim, want, message)
        return TensorInfo(target, x.dtype)

    def reference(self, *arrays: object, attrs=None) -> np.ndarray:
        x = _as_input(arrays[0])
        return np.broadcast_to(x, tuple(int(d) for d in attrs.shape)).copy()

    def lower(self, arg_infos: Sequence[StructInfo], attrs, out_info: StructInfo) -> PrimFunc:
        """``out[i] = x[i broadcast]`` (size-1 axes read index 0)."""
        dims, x = _one_input(arg_infos)
        shape = _known_shape(dims, out_info, self.name)
        return gather_kernel(self.name, x, shape, lambda i: broadcast_indices(x.shape, shape, i))


# --------------------------------------------------------------------------- concatenate, stack


@dataclass(frozen=True, slots=True)
class AxisAttrs:
    """Attributes of ``concatenate`` and ``stack``: the joined (or new) axis."""

    axis: int = 0

    def __post_init__(self) -> None:
        _check_int("AxisAttrs", "axis", self.axis)


def _joined(op_name: str, args: Sequence[StructInfo]) -> tuple[tuple[TensorInfo, ...], str]:
    infos = tensor_args(op_name, args)
    if not infos:
        raise ValueError(f"{op_name}: need at least one array, got none")
    dtype = promote_types(op_name, args)
    ranks = {i.ndim for i in infos if i.ndim is not None}
    if len(ranks) > 1:
        shapes = ", ".join(info_text(i) for i in infos)
        raise ShapeError(f"{op_name}: arrays must have the same number of dimensions, got {shapes}")
    return infos, dtype


def _require_same(
    ctx: InferContext, infos: Sequence[TensorInfo], skip: int | None, what: str
) -> None:
    first = infos[0]
    shapes = ", ".join(info_text(i) for i in infos)
    for position, info in enumerate(infos[1:], start=1):
        for axis, (a, b) in enumerate(zip(first.shape, info.shape)):
            if axis != skip:
                message = (
                    f"{what}, got {shapes}: axis {axis} of array {position} "
                    f"has size {b}, expected {a}"
                )
                require_equal(ctx, b, a, message)


@register
class Concatenate(Op):
    """``jnp.concatenate``: join arrays along an existing axis (dtypes promote)."""

    name = "concatenate"
    Attrs = AxisAttrs
    pattern = "injective"
    num_inputs = None

    def infer(self, args: Sequence[StructInfo], attrs, ctx: InferContext) -> StructInfo:
        infos, dtype = _joined(self.name, args)
        ndim = next((i.ndim for i in infos if i.ndim is not None), None)
        if ndim == 0:
            ctx.fail("zero-dimensional arrays cannot be concatenated")
        if ndim is None:
            return TensorInfo(dtype=dtype)
        axis = normalize_axis(self.name, attrs.axis, ndim)
        if any(i.shape is None for i in infos):
            return TensorInfo(dtype=dtype, ndim=ndim)
        _require_same(ctx, infos, axis, f"arrays must match except on axis {axis}")
        joined = sum((i.shape[axis] for i in infos), start=0)
        return TensorInfo(infos[0].shape[:axis] + (joined,) + infos[0].shape[axis + 1 :], dtype)

    def reference(self, *arrays: object, attrs=None) -> np.ndarray:
        out = dtypes.result_type(*(value_type(a) for a in arrays))
        inputs = [np.asarray(a).astype(dtypes.to_numpy(out)) for a in arrays]
        return np.concatenate(inputs, axis=0 if attrs is None else attrs.axis)

    def lower(self, arg_infos: Sequence[StructInfo], attrs, out_info: StructInfo) -> PrimFunc:
        """``out[..., i, ...]`` reads the input whose range along the axis holds ``i``."""
        inputs = _joined_inputs(arg_infos)
        dtype = as_tensor_info(out_info).dtype
        axis = normalize_axis(self.name, attrs.axis, inputs[0].ndim)
        offsets = [0]
        for tensor in inputs:
            offsets.append(offsets[-1] + tensor.shape[axis])
        shape = inputs[0].shape[:axis] + (offsets[-1],) + inputs[0].shape[axis + 1 :]

        def load(k: int, i: tuple[Dim, ...]) -> PrimExpr:
            index = i[:axis] + (i[axis] - offsets[k],) + i[axis + 1 :]
            return convert(inputs[k][index], dtype)

        def body(*indices: object) -> PrimExpr:
            i = index_dims(indices)
            value = load(len(inputs) - 1, i)
            for k in range(len(inputs) - 2, -1, -1):
                value = tir.if_then_else(as_expr(i[axis]) < offsets[k + 1], load(k, i), value)
            return value

        out = te.compute(shape, body, name=self.name)
        return te.create_prim_func([*inputs, out], name=self.name)


def _joined_inputs(arg_infos: Sequence[StructInfo]) -> list[te.Tensor]:
    names = [f"x{k}" for k in range(len(arg_infos))]
    return placeholders(KernelDims(), arg_infos, names)


@register
class Stack(Op):
    """``jnp.stack``: join arrays of one shape along a new axis (dtypes promote)."""

    name = "stack"
    Attrs = AxisAttrs
    pattern = "injective"
    num_inputs = None

    def infer(self, args: Sequence[StructInfo], attrs, ctx: InferContext) -> StructInfo:
        infos, dtype = _joined(self.name, args)
        ndim = next((i.ndim for i in infos if i.ndim is not None), None)
        if ndim is None:
            return TensorInfo(dtype=dtype)
        axis = normalize_axis(self.name, attrs.axis, ndim + 1)
        if any(i.shape is None for i in infos):
            return TensorInfo(dtype=dtype, ndim=ndim + 1)
        _require_same(ctx, infos, None, "all input arrays must have the same shape")
        shape = infos[0].shape
        return TensorInfo(shape[:axis] + (len(infos),) + shape[axis:], dtype)

    def reference(self, *arrays: object, attrs=None) -> np.ndarray:
        out = dtypes.result_type(*(value_type(a) for a in arrays))
        inputs = [np.asarray(a).astype(dtypes.to_numpy(out)) for a in arrays]
        return np.stack(inputs, axis=0 if attrs is None else attrs.axis)

    def lower(self, arg_infos: Sequence[StructInfo], attrs, out_info: StructInfo) -> PrimFunc:
        """``out[..., k, ...] = inputs[k][...]``."""
        inputs = _joined_inputs(arg_infos)
        dtype = as_tensor_info(out_info).dtype
        axis = normalize_axis(self.name, attrs.axis, inputs[0].ndim + 1)
        first = inputs[0].shape
        shape = first[:axis] + (len(inputs),) + first[axis:]

        def body(*indices: object) -> PrimExpr:
            i = index_dims(indices)
            rest = i[:axis] + i[axis + 1 :]
            value = convert(inputs[-1][rest], dtype)
            for k in range(len(inputs) - 2, -1, -1):
                chosen = convert(inputs[k][rest], dtype)
                value = tir.if_then_else(tir.eq(as_expr(i[axis]), k), chosen, value)
            return value

        out = te.compute(shape, body, name=self.name)
        return te.create_prim_func([*inputs, out], name=self.name)


# --------------------------------------------------------------------------- split


@dataclass(frozen=True, slots=True)
class SplitAttrs:
    """Attributes of ``split``: either ``sections`` (equal parts) or ``indices`` (the
    boundaries, as in jax: nondecreasing, within the axis), and the axis."""

    sections: int | None = None
    indices: tuple[Dim, ...] | None = None
    axis: int = 0

    def __post_init__(self) -> None:
        if (self.sections is None) == (self.indices is None):
            raise ValueError("SplitAttrs needs exactly one of sections and indices")
        if self.sections is not None:
            _check_int("SplitAttrs", "sections", self.sections)
            if self.sections < 1:
                raise ValueError(f"split: number of sections must be >= 1, got {self.sections}")
        if self.indices is not None:
            if not isinstance(self.indices, tuple):
                raise TypeError(f"SplitAttrs.indices must be a tuple, got {self.indices!r}")
            for index in self.indices:
                if not isinstance(index, arith.Expr):
                    _check_int("SplitAttrs", "indices", index)
        _check_int("SplitAttrs", "axis", self.axis)

    @property
    def count(self) -> int:
        """The number of pieces."""
        return self.sections if self.sections is not None else len(self.indices) + 1


def split_sizes(ctx: InferContext, x: TensorInfo, attrs: SplitAttrs, axis: int) -> list[Dim]:
    """The sizes of the pieces along ``axis``, with the checks that make them valid."""
    size = x.shape[axis]
    if attrs.sections is not None:
        message = (
            f"{ctx.op_name}: array split does not result in an equal division: "
            f"axis {axis} of {info_text(x)} has size {size}, not divisible by {attrs.sections}"
        )
        ctx.require(Check("divides", (attrs.sections, size), message))
        return [arith.floordiv(size, attrs.sections)] * attrs.sections
    bounds = (0, *attrs.indices, size)
    for lo, hi in zip(bounds, bounds[1:]):
        message = (
            f"{ctx.op_name}: split indices {format_dims(attrs.indices)} of axis {axis} of "
            f"{info_text(x)} must be nondecreasing within [0, {size}]: {lo} > {hi}"
        )
        ctx.require(Check("le", (lo, hi), message))
    return [hi - lo for lo, hi in zip(bounds, bounds[1:])]


@register
class Split(Op):
    """``jnp.split``: a tuple of consecutive pieces along an axis."""

    name = "split"
    Attrs = SplitAttrs
    pattern = "injective"
    num_inputs = 1

    def infer(self, args: Sequence[StructInfo], attrs, ctx: InferContext) -> StructInfo:
        (x,) = tensor_args(self.name, args, 1)
        if x.ndim is None:
            return TupleInfo([TensorInfo(dtype=x.dtype)] * attrs.count)
        axis = normalize_axis(self.name, attrs.axis, x.ndim)
        if x.shape is None:
            return TupleInfo([TensorInfo(dtype=x.dtype, ndim=x.ndim)] * attrs.count)
        pieces = []
        for size in split_sizes(ctx, x, attrs, axis):
            pieces.append(TensorInfo(x.shape[:axis] + (size,) + x.shape[axis + 1 :], x.dtype))
        return TupleInfo(pieces)

    def reference(self, *arrays: object, attrs=None) -> tuple[np.ndarray, ...]:
        x = _as_input(arrays[0])
        if attrs.sections is not None:
            return tuple(np.split(x, attrs.sections, axis=attrs.axis))
        return tuple(np.split(x, [int(i) for i in attrs.indices], axis=attrs.axis))

    def lower(self, arg_infos: Sequence[StructInfo], attrs, out_info: StructInfo) -> PrimFunc:
        """One output per piece: ``piece[..., i, ...] = x[..., start + i, ...]``."""
        dims, x = _one_input(arg_infos)
        axis = normalize_axis(self.name, attrs.axis, x.ndim)
        size = x.shape[axis]
        if attrs.sections is not None:
            step = arith.floordiv(size, attrs.sections)
            bounds = [k * step for k in range(attrs.sections + 1)]
        else:
            bounds = [0, *(dims.value(i) for i in attrs.indices), size]
        pieces = []
        for k, (lo, hi) in enumerate(zip(bounds, bounds[1:])):
            shape = x.shape[:axis] + (hi - lo,) + x.shape[axis + 1 :]

            def body(*indices: object, lo: Dim = lo) -> PrimExpr:
                i = index_dims(indices)
                return x[i[:axis] + (i[axis] + lo,) + i[axis + 1 :]]

            pieces.append(te.compute(shape, body, name=f"{self.name}_{k}"))
        return te.create_prim_func([x, *pieces], name=self.name)


# --------------------------------------------------------------------------- tril, triu


@dataclass(frozen=True, slots=True)
class TriangleAttrs:
    """Attributes of ``tril``/``triu``: the diagonal offset ``k`` (positive: above)."""

    k: int = 0

    def __post_init__(self) -> None:
        _check_int("TriangleAttrs", "k", self.k)


class _Triangle(Op):
    Attrs = TriangleAttrs
    pattern = "injective"
    num_inputs = 1

    def infer(self, args: Sequence[StructInfo], attrs, ctx: InferContext) -> StructInfo:
        (x,) = tensor_args(self.name, args, 1)
        if x.ndim is not None and x.ndim < 2:
            ctx.fail(f"argument must be at least 2-D, got shape {info_text(x)}")
        return x

    def keeps(self, row: PrimExpr, column: PrimExpr, k: int) -> PrimExpr:
        """Whether element ``(row, column)`` of the last two axes is kept."""
        raise NotImplementedError

    def lower(self, arg_infos: Sequence[StructInfo], attrs, out_info: StructInfo) -> PrimFunc:
        """``out[..., r, c] = x[..., r, c]`` where kept, else 0."""
        _, x = _one_input(arg_infos)
        zero = as_expr(0, x.dtype) if x.dtype != "bool" else as_expr(False)

        def body(*i: object) -> PrimExpr:
            return tir.select(self.keeps(i[-2], i[-1], attrs.k), x[i], zero)

        out = te.compute(x.shape, body, name=self.name)
        return te.create_prim_func([x, out], name=self.name)


@register
class Tril(_Triangle):
    """``jnp.tril``: zero the elements above diagonal ``k`` of the last two axes."""

    name = "tril"

    def reference(self, *arrays: object, attrs=None) -> np.ndarray:
        return np.tril(_as_input(arrays[0]), 0 if attrs is None else attrs.k)

    def keeps(self, row: PrimExpr, column: PrimExpr, k: int) -> PrimExpr:
        return column - row <= k


@register
class Triu(_Triangle):
    """``jnp.triu``: zero the elements below diagonal ``k`` of the last two axes."""

    name = "triu"

    def reference(self, *arrays: object, attrs=None) -> np.ndarray:
        return np.triu(_as_input(arrays[0]), 0 if attrs is None else attrs.k)

    def keeps(self, row: PrimExpr, column: PrimExpr, k: int) -> PrimExpr:
        return column - row >= k


# --------------------------------------------------------------------------- pad


@dataclass(frozen=True, slots=True)
class PadAttrs:
    """Attributes of ``pad`` (constant mode): ``(before, after)`` per axis (one pair: the
    same for every axis) and the fill value, converted to the array's dtype."""

    pad_width: tuple[tuple[int, int], ...]
    constant_value: bool | int | float = 0

    def __post_init__(self) -> None:
        widths = self.pad_width
        if not isinstance(widths, tuple) or not widths:
            raise TypeError(
                f"PadAttrs.pad_width must be a non-empty tuple of pairs, got {widths!r}"
            )
        for pair in widths:
            if not isinstance(pair, tuple) or len(pair) != 2:
                raise TypeError(f"PadAttrs.pad_width must hold (before, after) pairs, got {pair!r}")
            for width in pair:
                _check_int("PadAttrs", "pad_width", width)
                if width < 0:
                    raise ValueError(f"pad: pad widths must be >= 0, got {widths}")
        if not isinstance(self.constant_value, (bool, int, float)):
            raise TypeError(
                f"PadAttrs.constant_value must be a Python scalar, got {self.constant_value!r}"
            )

    def widths(self, op_name: str, ndim: int) -> tuple[tuple[int, int], ...]:
        """One ``(before, after)`` pair per axis of a rank-``ndim`` array."""
        if len(self.pad_width) == 1:
            return self.pad_width * ndim
        if len(self.pad_width) != ndim:
            raise ShapeError(
                f"{op_name}: pad_width has {len(self.pad_width)} pairs for an array of "
                f"rank {ndim} (expected 1 or {ndim})"
            )
        return self.pad_width


@register
class Pad(Op):
    """``jnp.pad`` in constant mode: surround the array with a constant."""

    name = "pad"
    Attrs = PadAttrs
    pattern = "injective"
    num_inputs = 1

    def infer(self, args: Sequence[StructInfo], attrs, ctx: InferContext) -> StructInfo:
        (x,) = tensor_args(self.name, args, 1)
        if x.ndim is None:
            return TensorInfo(dtype=x.dtype)
        widths = attrs.widths(self.name, x.ndim)
        if x.shape is None:
            return TensorInfo(dtype=x.dtype, ndim=x.ndim)
        return TensorInfo(tuple(d + lo + hi for d, (lo, hi) in zip(x.shape, widths)), x.dtype)

    def reference(self, *arrays: object, attrs=None) -> np.ndarray:
        x = _as_input(arrays[0])
        if x.ndim == 0:
            return x.copy()
        fill = np.asarray(attrs.constant_value).astype(x.dtype)
        return np.pad(x, attrs.widths(self.name, x.ndim), constant_values=fill)

    def lower(self, arg_infos: Sequence[StructInfo], attrs, out_info: StructInfo) -> PrimFunc:
        """``out[i] = x[i - before]`` inside the original extent, the constant outside."""
        _, x = _one_input(arg_infos)
        widths = attrs.widths(self.name, x.ndim)
        shape = tuple(d + lo + hi for d, (lo, hi) in zip(x.shape, widths))
        value = np.asarray(attrs.constant_value).astype(dtypes.to_numpy(x.dtype)).item()
        fill = as_expr(value, x.dtype)

        def body(*indices: object) -> PrimExpr:
            i = index_dims(indices)
            inside = as_expr(True)
            for index, dim, (lo, _) in zip(i, x.shape, widths):
                if lo:
                    inside = inside & (as_expr(index) >= lo)
                inside = inside & (as_expr(index) < dim + lo)
            source = tuple(index - lo for index, (lo, _) in zip(i, widths))
            return tir.if_then_else(inside, x[source], fill)

        out = te.compute(shape, body, name=self.name)
        return te.create_prim_func([x, out], name=self.name)


__all__ = [
    "AxisAttrs",
    "BroadcastToAttrs",
    "ExpandDimsAttrs",
    "PadAttrs",
    "ReshapeAttrs",
    "SplitAttrs",
    "SqueezeAttrs",
    "SwapaxesAttrs",
    "TransposeAttrs",
    "TriangleAttrs",
    "check_dim",
    "divide_exactly",
    "expanded_shape",
    "permutation",
    "require_nonneg",
    "require_one_or",
    "split_sizes",
    "swap_permutation",
]
