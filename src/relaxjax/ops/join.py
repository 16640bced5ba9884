"""Joining and splitting arrays: ``concatenate``, ``stack`` and ``split``, with
jax.numpy semantics.

``concatenate`` and ``stack`` promote their operands' dtypes; ``split`` keeps its
input's. Relations that cannot be proven for every value of the symbols become run-time
checks (other axes that may differ, a split that may not divide evenly); relations
that are false for every value raise ``ShapeError``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from relaxjax import arith, dtypes, tir
from relaxjax.errors import ShapeError
from relaxjax.ir import Check, StructInfo, TensorInfo, TupleInfo
from relaxjax.ir.struct_info import format_dims
from relaxjax.ops.attr_checks import check_int
from relaxjax.ops.base import (
    InferContext,
    Op,
    as_tensor_info,
    info_text,
    normalize_axis,
    promote_weak,
    reference_input,
    register,
    require_equal,
    tensor_args,
    value_type,
)
from relaxjax.ops.kernel import KernelDims, convert, index_dims, placeholders, single_input
from relaxjax.tir import PrimExpr, PrimFunc, te
from relaxjax.tir.expr import as_expr

Dim = arith.Dim


# --------------------------------------------------------------------------- concatenate, stack


@dataclass(frozen=True, slots=True)
class AxisAttrs:
    """Attributes of ``concatenate`` and ``stack``: the joined (or new) axis."""

    axis: int = 0

    def __post_init__(self) -> None:
        check_int("AxisAttrs", "axis", self.axis)


@dataclass(frozen=True, slots=True)
class _Joined:
    """The operands of a join, their promoted dtype (weakly typed where jax's is) and
    their common rank (None: unknown)."""

    infos: tuple[TensorInfo, ...]
    dtype: str
    weak: bool
    ndim: int | None

    def result(self, shape: Sequence[Dim] | None = None, ndim: int | None = None) -> TensorInfo:
        """The joined result of ``shape`` (or rank ``ndim``) in the promoted dtype."""
        return TensorInfo(shape, self.dtype, ndim, self.weak)


def _joined(op_name: str, args: Sequence[StructInfo]) -> _Joined:
    infos = tensor_args(op_name, args)
    if not infos:
        raise ValueError(f"{op_name}: need at least one array, got none")
    dtype, weak = promote_weak(op_name, args)
    ranks = {i.ndim for i in infos if i.ndim is not None}
    if len(ranks) > 1:
        shapes = ", ".join(info_text(i) for i in infos)
        raise ShapeError(f"{op_name}: arrays must have the same number of dimensions, got {shapes}")
    return _Joined(infos, dtype, weak, next(iter(ranks), None))


def _promoted_arrays(arrays: Sequence[object]) -> list[np.ndarray]:
    """The reference inputs of a join, converted to their promoted dtype."""
    out = dtypes.result_type(*(value_type(a) for a in arrays))
    return [np.asarray(a).astype(dtypes.to_numpy(out)) for a in arrays]


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
        joined = _joined(self.name, args)
        infos, ndim = joined.infos, joined.ndim
        if ndim == 0:
            ctx.fail("zero-dimensional arrays cannot be concatenated")
        if ndim is None:
            return joined.result()
        axis = normalize_axis(self.name, attrs.axis, ndim)
        if any(i.shape is None for i in infos):
            return joined.result(ndim=ndim)
        _require_same(ctx, infos, axis, f"arrays must match except on axis {axis}")
        size = sum((i.shape[axis] for i in infos), start=0)
        return joined.result(infos[0].shape[:axis] + (size,) + infos[0].shape[axis + 1 :])

    def reference(self, *arrays: object, attrs=None) -> np.ndarray:
        return np.concatenate(_promoted_arrays(arrays), axis=0 if attrs is None else attrs.axis)

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
        joined = _joined(self.name, args)
        infos, ndim = joined.infos, joined.ndim
        if ndim is None:
            return joined.result()
        axis = normalize_axis(self.name, attrs.axis, ndim + 1)
        if any(i.shape is None for i in infos):
            return joined.result(ndim=ndim + 1)
        _require_same(ctx, infos, None, "all input arrays must have the same shape")
        shape = infos[0].shape
        return joined.result(shape[:axis] + (len(infos),) + shape[axis:])

    def reference(self, *arrays: object, attrs=None) -> np.ndarray:
        return np.stack(_promoted_arrays(arrays), axis=0 if attrs is None else attrs.axis)

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
            check_int("SplitAttrs", "sections", self.sections)
            if self.sections < 1:
                raise ValueError(f"split: number of sections must be >= 1, got {self.sections}")
        if self.indices is not None:
            if not isinstance(self.indices, tuple):
                raise TypeError(f"SplitAttrs.indices must be a tuple, got {self.indices!r}")
            for index in self.indices:
                if not isinstance(index, arith.Expr):
                    check_int("SplitAttrs", "indices", index)
        check_int("SplitAttrs", "axis", self.axis)

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
            return TupleInfo([TensorInfo(dtype=x.dtype, weak=x.weak)] * attrs.count)
        axis = normalize_axis(self.name, attrs.axis, x.ndim)
        if x.shape is None:
            return TupleInfo([TensorInfo(dtype=x.dtype, ndim=x.ndim, weak=x.weak)] * attrs.count)
        pieces = []
        for size in split_sizes(ctx, x, attrs, axis):
            pieces.append(
                TensorInfo(x.shape[:axis] + (size,) + x.shape[axis + 1 :], x.dtype, weak=x.weak)
            )
        return TupleInfo(pieces)

    def reference(self, *arrays: object, attrs=None) -> tuple[np.ndarray, ...]:
        x = reference_input(arrays[0])
        if attrs.sections is not None:
            return tuple(np.split(x, attrs.sections, axis=attrs.axis))
        return tuple(np.split(x, [int(i) for i in attrs.indices], axis=attrs.axis))

    def lower(self, arg_infos: Sequence[StructInfo], attrs, out_info: StructInfo) -> PrimFunc:
        """One output per piece: ``piece[..., i, ...] = x[..., start + i, ...]``."""
        dims, x = single_input(arg_infos)
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


__all__ = ["AxisAttrs", "SplitAttrs", "split_sizes"]
