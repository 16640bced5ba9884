"""Repeating elements by counts known only at run time: ``repeat_total`` and
``repeat_indices``, behind ``jnp.repeat(a, repeats)`` with a traced ``repeats``.

``repeat_total`` sums the counts (negative ones count 0) to an int64 scalar; the tracer
binds it to a fresh symbol ``r0 >= 0`` (see :mod:`relaxjax.trace.sizes`), the length of
``repeat_indices``::

    lv0: Prim("int64") = repeat_total(counts)
    lv1: Prim("int64", value=r0) = match_cast(lv0, Prim("int64", value=r0))
    lv2: Tensor((r0,), "int64") = repeat_indices(counts, size=r0)
    lv3: Tensor((r0, 4), "float32") = take(x, lv2, axis=0, mode="index", fill_value=None)

``repeat_indices`` lists position ``i`` ``counts[i]`` times, in order (``np.repeat(
arange(n), counts)``); with a ``size`` other than the total (jax's
``total_repeat_length``) the list is truncated, or padded with the last position ``n - 1``
as jax's scatter-and-cumsum formulation gives.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from relaxjax import arith, dtypes
from relaxjax.ir import PrimInfo, StructInfo, TensorInfo
from relaxjax.ops.attr_checks import check_dim
from relaxjax.ops.base import InferContext, Op, fail, reference_input, register, tensor_args
from relaxjax.ops.kernel import KernelDims, placeholders
from relaxjax.ops.manipulate import require_nonneg
from relaxjax.ops.nonzero import CountAttrs
from relaxjax.ops.reduction import AxesReduction
from relaxjax.ops.serial import Scalars, let_index, loop_nest, seq, when
from relaxjax.tir import BufferStore, For, PrimExpr, PrimFunc, te
from relaxjax.tir.expr import as_expr, binop, cast

Dim = arith.Dim


def _check_counts(op_name: str, counts: TensorInfo) -> None:
    if counts.ndim is not None and counts.ndim != 1:
        fail(op_name, f"the counts must be 1-d, got rank {counts.ndim}")
    if not (dtypes.is_integer(counts.dtype) or dtypes.is_bool(counts.dtype)):
        raise TypeError(f"{op_name}: the counts must be integers, got {counts.dtype}")


def _nonneg(count: PrimExpr, dtype: str) -> PrimExpr:
    """A count as ``dtype``, negative counts as 0."""
    return binop("max", cast(count, dtype), as_expr(0, dtype))


def _clamped(counts: np.ndarray) -> np.ndarray:
    return np.maximum(np.asarray(counts).astype(np.int64), 0)


@register
class RepeatTotal(AxesReduction):
    """The total of the repeat counts (negative counts are 0) as an int64 scalar."""

    name = "repeat_total"
    Attrs = None

    def result_dtype(self, dtype: str, attrs) -> str:
        return "int64"

    def infer(self, args: Sequence[StructInfo], attrs, ctx: InferContext) -> StructInfo:
        (counts,) = tensor_args(self.name, args, 1)
        _check_counts(self.name, counts)
        return PrimInfo("int64")

    def compute(self, x, axes, attrs, out):
        return np.sum(_clamped(x), axis=axes, keepdims=True)

    def work_dtype(self, out: str) -> str:
        return "int64"

    def reduce_stage(self, x, axes, attrs, out, work, name):
        return axes.reduce(te.sum, lambda i: _nonneg(x[i], work), name)

    def reference(self, *arrays: object, attrs=None) -> np.ndarray:
        return np.asarray(_clamped(reference_input(arrays[0])).sum(), np.int64)

    def lower(self, arg_infos: Sequence[StructInfo], attrs, out_info: StructInfo) -> PrimFunc:
        return super().lower(arg_infos, CountAttrs(), TensorInfo((), "int64"))


@dataclass(frozen=True, slots=True)
class RepeatAttrs:
    """Attributes of ``repeat_indices``: the result length (an int or a symbol)."""

    size: Dim

    def __post_init__(self) -> None:
        check_dim("RepeatAttrs", "size", self.size)


@register
class RepeatIndices(Op):
    """Position ``i`` listed ``counts[i]`` times, truncated or padded to ``size``."""

    name = "repeat_indices"
    Attrs = RepeatAttrs
    pattern = "opaque"
    num_inputs = 1

    def infer(self, args: Sequence[StructInfo], attrs, ctx: InferContext) -> StructInfo:
        (counts,) = tensor_args(self.name, args, 1)
        _check_counts(self.name, counts)
        require_nonneg(ctx, (attrs.size,), f"the result length {attrs.size}")
        return TensorInfo((attrs.size,), "int64")

    def reference(self, *arrays: object, attrs=None) -> np.ndarray:
        counts = _clamped(reference_input(arrays[0]))
        size = int(attrs.size)
        positions = np.repeat(np.arange(counts.size, dtype=np.int64), counts)[:size]
        padded = np.full(size, max(counts.size - 1, 0), np.int64)
        padded[: positions.size] = positions
        return padded

    def lower(self, arg_infos: Sequence[StructInfo], attrs, out_info: StructInfo) -> PrimFunc:
        """``out[:] = n - 1; pos = 0``; then for each ``i`` and each of its ``counts[i]``
        repetitions, ``out[pos] = i`` while ``pos < size``, ``pos += 1`` (serial)."""
        dims = KernelDims()
        (counts,) = placeholders(dims, arg_infos, ("counts",))
        (size,) = dims.output_shape(out_info)
        out = te.placeholder((size,), "int64", "out")
        n = counts.shape[0]
        state = Scalars({"pos": "int64"})
        pos = state.load("pos")
        j, r = arith.sym("j"), arith.sym("r")
        last = arith.max_(n - 1, 0)
        padding = For(j, 0, size, "serial", BufferStore(out.buffer, as_expr(last, "int64"), (j,)))

        def visit(index: tuple[arith.Sym, ...]) -> object:
            (i,) = index
            write = when(
                pos < as_expr(size, "int64"), BufferStore(out.buffer, as_expr(i, "int64"), (pos,))
            )
            repeat = lambda count: For(r, 0, count, "serial", seq(write, state.add("pos", 1)))  # noqa: E731
            return let_index("c", _nonneg(counts[index], "int64"), repeat)

        body = seq(padding, state.set("pos", 0), loop_nest((n,), "i", visit))
        return PrimFunc(self.name, (counts.buffer, out.buffer), state.allocate(body))


__all__ = ["RepeatAttrs"]
