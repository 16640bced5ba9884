"""Shape manipulation of one array: ``reshape transpose swapaxes expand_dims squeeze
broadcast_to``, with jax.numpy semantics.

Each op moves or copies elements without arithmetic, so its dtype is its input's.
Shape relations that cannot be proven for every value of the symbols become run-time
checks (a reshape whose element counts may differ, a broadcast whose size-1 axes may
not be 1); relations that are false for every value raise ``ShapeError``. Joining and
splitting arrays is in :mod:`relaxjax.ops.join`, ``tril``/``triu`` in
:mod:`relaxjax.ops.triangle`, ``pad`` in :mod:`relaxjax.ops.pad`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from relaxjax import arith
from relaxjax.errors import InconclusiveShapeError, LoweringError, ShapeError
from relaxjax.ir import Check, StructInfo, TensorInfo
from relaxjax.ir.struct_info import format_dims
from relaxjax.ops.attr_checks import check_dims, check_int, check_ints
from relaxjax.ops.axes import linear_index, normalize_axes, unravel
from relaxjax.ops.base import (
    InferContext,
    Op,
    info_text,
    nonzero_floordiv,
    normalize_axis,
    num_elements,
    reference_input,
    register,
    require_equal,
    require_one_or,
    tensor_args,
)
from relaxjax.ops.kernel import KernelDims, broadcast_indices, gather_kernel, single_input
from relaxjax.tir import PrimFunc, te

Dim = arith.Dim


# --------------------------------------------------------------------------- helpers


def require_nonneg(ctx: InferContext, dims: Sequence[Dim], what: str) -> None:
    """Require every symbolic dim of a requested shape to be ``>= 0``."""
    for dim in dims:
        if isinstance(dim, arith.Expr):
            message = f"{ctx.op_name}: {what} has size {dim}, expected >= 0"
            ctx.require(Check("nonneg", (dim,), message))


def _known_shape(dims: KernelDims, info: StructInfo, name: str) -> tuple[Dim, ...]:
    return dims.output_shape(info, f"result of {name}")


# --------------------------------------------------------------------------- reshape


@dataclass(frozen=True, slots=True)
class ReshapeAttrs:
    """Attributes of ``reshape``: the new shape; at most one entry is ``-1`` (inferred)."""

    shape: tuple[Dim, ...]

    def __post_init__(self) -> None:
        check_dims("ReshapeAttrs", "shape", self.shape, allow_negative_one=True)
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
            return TensorInfo(dtype=x.dtype, ndim=len(new), weak=x.weak)
        size = num_elements(x.shape)
        text = f"cannot reshape {info_text(x)} (size {size}) into {format_dims(new)}"
        if not _has_fill(new):
            require_equal(ctx, size, num_elements(new), f"{text} (size {num_elements(new)})")
            return TensorInfo(new, x.dtype, weak=x.weak)
        factors = [d for d in new if not (isinstance(d, int) and d == -1)]
        known = num_elements(factors)
        message = (
            f"{self.name}: {text}: the size of -1 is undefined when the other axes hold no "
            f"elements (they have size {known})"
        )
        ctx.require(Check("le", (1, known), message))
        ctx.require(
            Check("divides", (known, size), f"{self.name}: {text}: {known} does not divide {size}")
        )
        fill = nonzero_floordiv(size, known)  # the checks above exclude known == 0
        shape = tuple(fill if isinstance(d, int) and d == -1 else d for d in new)
        return TensorInfo(shape, x.dtype, weak=x.weak)

    def reference(self, *arrays: object, attrs=None) -> np.ndarray:
        x = reference_input(arrays[0])
        return np.reshape(x, tuple(int(d) for d in attrs.shape))

    def lower(self, arg_infos: Sequence[StructInfo], attrs, out_info: StructInfo) -> PrimFunc:
        """``out[i] = x[unravel(ravel(i))]`` (row-major positions are preserved)."""
        dims, x = single_input(arg_infos)
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
            check_ints("TransposeAttrs", "axes", self.axes)


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
        return TensorInfo(dtype=x.dtype, ndim=len(perm), weak=x.weak)
    return TensorInfo(tuple(x.shape[p] for p in perm), x.dtype, weak=x.weak)


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
            return TensorInfo(dtype=x.dtype, ndim=ndim, weak=x.weak)
        return _transposed(x, permutation(self.name, attrs.axes, x.ndim))

    def reference(self, *arrays: object, attrs=None) -> np.ndarray:
        x = reference_input(arrays[0])
        axes = None if attrs is None else attrs.axes
        return np.transpose(x, permutation(self.name, axes, x.ndim))

    def lower(self, arg_infos: Sequence[StructInfo], attrs, out_info: StructInfo) -> PrimFunc:
        """``out[i] = x[j]`` with ``j[axes[a]] = i[a]``."""
        _, x = single_input(arg_infos)
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
        check_int("SwapaxesAttrs", "axis1", self.axis1)
        check_int("SwapaxesAttrs", "axis2", self.axis2)


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
            return TensorInfo(dtype=x.dtype, weak=x.weak)
        return _transposed(x, swap_permutation(self.name, attrs.axis1, attrs.axis2, x.ndim))

    def reference(self, *arrays: object, attrs=None) -> np.ndarray:
        x = reference_input(arrays[0])
        return np.transpose(x, swap_permutation(self.name, attrs.axis1, attrs.axis2, x.ndim))

    def lower(self, arg_infos: Sequence[StructInfo], attrs, out_info: StructInfo) -> PrimFunc:
        """A transpose exchanging the two axes."""
        _, x = single_input(arg_infos)
        perm = swap_permutation(self.name, attrs.axis1, attrs.axis2, x.ndim)
        return permute_kernel(self.name, x, perm)


# --------------------------------------------------------------------------- expand/squeeze


@dataclass(frozen=True, slots=True)
class ExpandDimsAttrs:
    """Attributes of ``expand_dims``: positions of the new size-1 axes in the result."""

    axis: tuple[int, ...]

    def __post_init__(self) -> None:
        check_ints("ExpandDimsAttrs", "axis", self.axis)


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
            return TensorInfo(dtype=x.dtype, weak=x.weak)
        if x.shape is None:
            out_ndim = x.ndim + len(attrs.axis)
            normalize_axes(self.name, attrs.axis, out_ndim)
            return TensorInfo(dtype=x.dtype, ndim=out_ndim, weak=x.weak)
        return TensorInfo(expanded_shape(self.name, x.shape, attrs.axis), x.dtype, weak=x.weak)

    def reference(self, *arrays: object, attrs=None) -> np.ndarray:
        x = reference_input(arrays[0])
        return np.reshape(x, expanded_shape(self.name, x.shape, attrs.axis))

    def lower(self, arg_infos: Sequence[StructInfo], attrs, out_info: StructInfo) -> PrimFunc:
        """``out[i] = x[i without the new axes]``."""
        _, x = single_input(arg_infos)
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
            check_ints("SqueezeAttrs", "axis", self.axis)


def size_one_axes(op_name: str, x: TensorInfo) -> tuple[int, ...]:
    """The axes ``squeeze(axis=None)`` removes: those whose size is proven 1, when every
    other axis is proven not to be 1 (a constant, or a dim its bounds keep off 1, such as
    ``sym("n", lower=2)`` or ``2 * n``).

    Raises :class:`~relaxjax.errors.InconclusiveShapeError` naming the axes whose size
    may or may not be 1 (or saying that the sizes are unknown), and that ``axis=``
    decides it: the rank of the result would depend on the symbols' values.
    """
    if x.shape is None:
        raise InconclusiveShapeError(
            f"{op_name}: which axes of {info_text(x)} have size 1 is not known while tracing "
            "(the sizes are unknown); pass axis= to name the axes to remove"
        )
    ones = [arith.compare(d, "==", 1) for d in x.shape]
    undecided = [
        f"axis {a} has size {d}" for a, (d, one) in enumerate(zip(x.shape, ones)) if one is None
    ]
    if undecided:
        raise InconclusiveShapeError(
            f"{op_name}: which axes of {info_text(x)} have size 1 is not known while tracing: "
            f"{', '.join(undecided)}, which may or may not be 1 for the symbols' values, so "
            "the rank of the result is unknown; pass axis= to name the axes to remove"
        )
    return tuple(a for a, one in enumerate(ones) if one)


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
            return TensorInfo(dtype=x.dtype, weak=x.weak)
        if attrs.axis is None:
            try:
                axes = size_one_axes(self.name, x)
            except InconclusiveShapeError:
                return TensorInfo(dtype=x.dtype, weak=x.weak)  # rnp.squeeze decides before emitting
            return TensorInfo(
                tuple(d for a, d in enumerate(x.shape) if a not in axes), x.dtype, weak=x.weak
            )
        axes = normalize_axes(self.name, attrs.axis, x.ndim)
        if x.shape is None:
            return TensorInfo(dtype=x.dtype, ndim=x.ndim - len(axes), weak=x.weak)
        for a in axes:
            message = (
                f"cannot squeeze axis {a} of shape {info_text(x)}: "
                f"its size is {x.shape[a]}, expected 1"
            )
            require_equal(ctx, x.shape[a], 1, message)
        return TensorInfo(
            tuple(d for i, d in enumerate(x.shape) if i not in axes), x.dtype, weak=x.weak
        )

    def reference(self, *arrays: object, attrs=None) -> np.ndarray:
        x = reference_input(arrays[0])
        axis = None if attrs is None or attrs.axis is None else attrs.axis
        return np.squeeze(x, axis=axis)

    def lower(self, arg_infos: Sequence[StructInfo], attrs, out_info: StructInfo) -> PrimFunc:
        """``out[i] = x[i with 0 at the removed axes]``."""
        _, x = single_input(arg_infos)
        if attrs.axis is not None:
            axes = set(normalize_axes(self.name, attrs.axis, x.ndim))
        else:
            try:
                axes = set(size_one_axes(self.name, TensorInfo(x.shape, x.dtype)))
            except InconclusiveShapeError as err:
                message = f"squeeze(axis=None) of shape {format_dims(x.shape)}: {err.message}"
                raise LoweringError(message) from None
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
        check_dims("BroadcastToAttrs", "shape", self.shape)


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
            return TensorInfo(dtype=x.dtype, ndim=len(target), weak=x.weak)
        lead = len(target) - len(x.shape)
        for axis, dim in enumerate(x.shape):
            want = target[lead + axis]
            message = (
                f"cannot broadcast {info_text(x)} to {format_dims(target)}: "
                f"axis {axis} has size {dim}, expected 1 or {want}"
            )
            require_one_or(ctx, dim, want, message)
        return TensorInfo(target, x.dtype, weak=x.weak)

    def reference(self, *arrays: object, attrs=None) -> np.ndarray:
        x = reference_input(arrays[0])
        return np.broadcast_to(x, tuple(int(d) for d in attrs.shape)).copy()

    def lower(self, arg_infos: Sequence[StructInfo], attrs, out_info: StructInfo) -> PrimFunc:
        """``out[i] = x[i broadcast]`` (size-1 axes read index 0)."""
        dims, x = single_input(arg_infos)
        shape = _known_shape(dims, out_info, self.name)
        return gather_kernel(self.name, x, shape, lambda i: broadcast_indices(x.shape, shape, i))


__all__ = [
    "BroadcastToAttrs",
    "ExpandDimsAttrs",
    "ReshapeAttrs",
    "SqueezeAttrs",
    "SwapaxesAttrs",
    "TransposeAttrs",
    "expanded_shape",
    "permutation",
    "permute_kernel",
    "require_nonneg",
    "size_one_axes",
    "swap_permutation",
]
