"""``dynamic_slice`` and ``dynamic_update_slice``: windows at run-time offsets (jax.lax).

The window's size is static (ints or symbolic dims); its start along each axis is a
run-time integer scalar (a traced value, a Python int or a symbolic dim). As in jax (and
XLA), a negative start counts from the end when ``allow_negative`` is set for its axis,
then every start is clamped to ``[0, dim - size]`` so the window always lies inside the
operand::

    dynamic_slice(x, (i,), (3,))               out[j] = x[clamp(i, 0, n - 3) + j]
    dynamic_update_slice(x, u, (i,))           x with x[s:s + 3] = u, s = clamp(i, 0, n - 3)

``dynamic_update_slice`` has two lowerings: the functional one (a fresh result: the
operand copied with the window replaced, one pass over it) and an in-place one used when
the operand is dead afterwards (``passes.inplace``): a kernel that writes only the
window into the operand's own buffer, whose cost is the update's size, not the
operand's (the KV-cache write). :attr:`Op.inplace_operand` names the operand it updates.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from relaxjax import arith, dtypes, tir
from relaxjax.errors import ShapeError
from relaxjax.ir import Check, StructInfo, TensorInfo
from relaxjax.ops.attr_checks import check_dims
from relaxjax.ops.base import InferContext, Op, as_tensor_info, reference_input, register
from relaxjax.ops.kernel import KernelDims, convert, index_dims, placeholders
from relaxjax.tir import Buffer, BufferLoad, BufferStore, For, LetStmt, PrimExpr, PrimFunc, te

Dim = arith.Dim

__all__ = ["DynamicSliceAttrs", "DynamicUpdateSliceAttrs", "clamped_starts"]


def _check_flags(owner: str, flags: object) -> None:
    if not isinstance(flags, tuple) or not all(isinstance(f, bool) for f in flags):
        raise TypeError(f"{owner}.allow_negative must be a tuple of bools, got {flags!r}")


@dataclass(frozen=True, slots=True)
class DynamicSliceAttrs:
    """The window's size per axis and, per axis, whether a negative start counts from the
    end (jax's ``allow_negative_indices``)."""

    slice_sizes: tuple[Dim, ...]
    allow_negative: tuple[bool, ...]

    def __post_init__(self) -> None:
        check_dims("DynamicSliceAttrs", "slice_sizes", self.slice_sizes)
        _check_flags("DynamicSliceAttrs", self.allow_negative)
        if len(self.allow_negative) != len(self.slice_sizes):
            raise ValueError(
                "DynamicSliceAttrs: one allow_negative flag per axis, got "
                f"{len(self.allow_negative)} for {len(self.slice_sizes)} axes"
            )


@dataclass(frozen=True, slots=True)
class DynamicUpdateSliceAttrs:
    """Per axis, whether a negative start counts from the end."""

    allow_negative: tuple[bool, ...]

    def __post_init__(self) -> None:
        _check_flags("DynamicUpdateSliceAttrs", self.allow_negative)


def _starts(op: str, args: Sequence[StructInfo], ndim: int | None) -> None:
    """The start operands: one integer scalar per axis of the operand."""
    for position, info in enumerate(args):
        tensor = as_tensor_info(info, op, position)
        if not dtypes.is_integer(tensor.dtype) or tensor.ndim != 0:
            raise TypeError(f"{op}: start index {position} must be an integer scalar, got {info!r}")
    if ndim is not None and len(args) != ndim:
        raise TypeError(
            f"{op}: one start index per axis of the operand: got {len(args)} for rank {ndim}"
        )


def _window_fits(ctx: InferContext, sizes: Sequence[Dim], operand: TensorInfo, what: str) -> None:
    assert operand.shape is not None
    for axis, (size, dim) in enumerate(zip(sizes, operand.shape)):
        message = f"{ctx.op_name}: the {what} ({size}) must fit axis {axis} of the operand ({dim})"
        ctx.require(Check("le", (size, dim), message))


def _reference_start(start: object, dim: int, size: int, allow_negative: bool) -> int:
    value = int(np.asarray(start))
    if (
        allow_negative
        and value < 0
        and not dtypes.is_unsigned(dtypes.canonical(np.asarray(start).dtype))
    ):
        value += dim
    return min(max(value, 0), dim - size)


def clamped_starts(
    starts: Sequence[PrimExpr], dims: Sequence[Dim], sizes: Sequence[Dim], flags: Sequence[bool]
) -> list[PrimExpr]:
    """Each start as an int64 index in ``[0, dim - size]`` (negative ones from the end
    first, where flagged and signed), as jax clamps them."""
    result = []
    for start, dim, size, flag in zip(starts, dims, sizes, flags):
        value = convert(start, "int64")
        extent = tir.as_expr(dim)
        if flag and not dtypes.is_unsigned(start.dtype):
            value = tir.select(value < 0, value + extent, value)
        result.append(tir.max(tir.min(value, tir.as_expr(dim - size)), 0))
    return result


@register
class DynamicSlice(Op):
    """``lax.dynamic_slice(x, starts, sizes)``: a window of static size at clamped starts."""

    name = "dynamic_slice"
    Attrs = DynamicSliceAttrs
    pattern = "injective"

    def infer(self, args: Sequence[StructInfo], attrs, ctx: InferContext) -> StructInfo:
        if not args:
            raise TypeError("dynamic_slice takes an operand and start indices")
        operand = as_tensor_info(args[0], self.name)
        sizes = attrs.slice_sizes
        if operand.ndim is not None and len(sizes) != operand.ndim:
            raise TypeError(
                f"dynamic_slice: slice_sizes {tuple(sizes)} must have one size per axis of "
                f"the operand (rank {operand.ndim})"
            )
        _starts(self.name, args[1:], len(sizes))
        if operand.shape is not None:
            _window_fits(ctx, sizes, operand, "slice size")
        return TensorInfo(tuple(sizes), operand.dtype, weak=operand.weak)

    def reference(self, *arrays: object, attrs=None) -> np.ndarray:
        x = reference_input(arrays[0])
        sizes = [int(s) for s in attrs.slice_sizes]
        starts = [
            _reference_start(s, d, z, f)
            for s, d, z, f in zip(arrays[1:], x.shape, sizes, attrs.allow_negative)
        ]
        window = tuple(slice(s, s + z) for s, z in zip(starts, sizes))
        return np.array(x[window])

    def lower(self, arg_infos: Sequence[StructInfo], attrs, out_info: StructInfo) -> PrimFunc:
        """``out[j] = x[start + j]`` with each start clamped (read once per element)."""
        dims = KernelDims()
        names = ("x", *(f"start{k}" for k in range(len(arg_infos) - 1)))
        x, *starts = placeholders(dims, arg_infos, names)
        shape = dims.output_shape(out_info)

        def body(*loops: object) -> PrimExpr:
            loads = [s[()] for s in starts]
            begins = clamped_starts(loads, x.shape, shape, attrs.allow_negative)
            return x[tuple(b + i for b, i in zip(begins, index_dims(loops)))]

        out = te.compute(shape, body, name=self.name)
        return te.create_prim_func([x, *starts, out], name=self.name)


@register
class DynamicUpdateSlice(Op):
    """``lax.dynamic_update_slice(x, update, starts)``: ``x`` with a window replaced."""

    name = "dynamic_update_slice"
    Attrs = DynamicUpdateSliceAttrs
    pattern = "injective"
    #: The operand an in-place lowering (:meth:`lower_inplace`) writes into.
    inplace_operand = 0

    def infer(self, args: Sequence[StructInfo], attrs, ctx: InferContext) -> StructInfo:
        if len(args) < 2:
            raise TypeError("dynamic_update_slice takes an operand, an update and start indices")
        operand = as_tensor_info(args[0], self.name)
        update = as_tensor_info(args[1], self.name, 1)
        if update.dtype != operand.dtype:
            raise TypeError(
                f"dynamic_update_slice: the update has dtype {update.dtype} but the operand "
                f"{operand.dtype}"
            )
        if operand.ndim is not None and update.ndim is not None and operand.ndim != update.ndim:
            raise ShapeError(
                f"dynamic_update_slice: the update has rank {update.ndim} but the operand "
                f"rank {operand.ndim}"
            )
        _starts(self.name, args[2:], operand.ndim)
        if len(attrs.allow_negative) != len(args) - 2:
            raise TypeError("dynamic_update_slice: one allow_negative flag per start index")
        if operand.shape is not None and update.shape is not None:
            _window_fits(ctx, update.shape, operand, "update's size")
        return operand

    def reference(self, *arrays: object, attrs=None) -> np.ndarray:
        x = np.array(reference_input(arrays[0]))
        update = np.asarray(arrays[1], x.dtype)
        starts = [
            _reference_start(s, d, z, f)
            for s, d, z, f in zip(arrays[2:], x.shape, update.shape, attrs.allow_negative)
        ]
        x[tuple(slice(s, s + z) for s, z in zip(starts, update.shape))] = update
        return x

    def lower(self, arg_infos: Sequence[StructInfo], attrs, out_info: StructInfo) -> PrimFunc:
        """A fresh result: ``out[i] = update[i - start]`` inside the window, else ``x[i]``."""
        dims = KernelDims()
        names = ("x", "update", *(f"start{k}" for k in range(len(arg_infos) - 2)))
        x, update, *starts = placeholders(dims, arg_infos, names)
        flags = attrs.allow_negative

        def body(*loops: object) -> PrimExpr:
            begins = clamped_starts([s[()] for s in starts], x.shape, update.shape, flags)
            i = index_dims(loops)
            inside = None
            for b, index, size in zip(begins, i, update.shape):
                here = (tir.as_expr(index) >= b) & (tir.as_expr(index) < b + tir.as_expr(size))
                inside = here if inside is None else inside & here
            if inside is None:  # a 0-d operand: the update replaces it
                return update[()]
            shifted = tuple(tir.as_expr(index) - b for index, b in zip(i, begins))
            return tir.if_then_else(inside, update[shifted], x[i])

        out = te.compute(x.shape, body, name=self.name)
        return te.create_prim_func([x, update, *starts, out], name=self.name)

    def lower_inplace(
        self, arg_infos: Sequence[StructInfo], attrs, out_info: StructInfo
    ) -> PrimFunc:
        """Params ``(update, starts..., x)`` with ``x`` the output, updated in place: only
        the window is written (``x[start + j] = update[j]``)."""
        dims = KernelDims()
        x_info, update_info, *start_infos = arg_infos
        x_shape = dims.input_shape(x_info)
        update = Buffer("update", dims.input_shape(update_info), as_tensor_info(update_info).dtype)
        starts = [
            Buffer(f"start{k}", (), as_tensor_info(info).dtype)
            for k, info in enumerate(start_infos)
        ]
        out = Buffer("x", x_shape, as_tensor_info(x_info).dtype)
        loads = [BufferLoad(s, ()) for s in starts]
        begins = clamped_starts(loads, x_shape, update.shape, attrs.allow_negative)
        offsets = [arith.sym(f"s{k}") for k in range(len(begins))]
        loops = [arith.sym(f"j{k}") for k in range(update.ndim)]
        stmt: object = BufferStore(
            out, BufferLoad(update, tuple(loops)), tuple(o + j for o, j in zip(offsets, loops))
        )
        for loop, extent in reversed(list(zip(loops, update.shape))):
            stmt = For(loop, 0, extent, "serial", stmt)
        for offset, begin in reversed(list(zip(offsets, begins))):
            stmt = LetStmt(offset, begin, stmt)
        name = f"{self.name}_inplace"
        return PrimFunc(name, (update, *starts, out), stmt, num_outputs=1)
