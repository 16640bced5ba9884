"""``logsumexp``: ``log(sum(exp(x)))`` over axes, computed stably in one kernel.

As jax computes it: ``m = max(x)`` over the axes (``-inf`` for an empty reduction),
replaced by 0 where it is not finite, then ``log(sum(exp(x - m))) + m``; so a row of
``-inf`` gives ``-inf``, one ``+inf`` gives ``+inf``, a NaN gives NaN, and nothing
overflows. Integers and bools compute in ``to_inexact`` of their dtype; float16 and
bfloat16 accumulate in float32.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from relaxjax import dtypes, tir
from relaxjax.ir import StructInfo
from relaxjax.ops.attr_checks import check_axes, check_flag
from relaxjax.ops.axes import ReducedAxes, reduced_axes
from relaxjax.ops.base import (
    InferContext,
    Op,
    as_tensor_info,
    compute_dtype,
    operand_type,
    reference_input,
    register,
    tensor_args,
    to_inexact,
    value_type,
)
from relaxjax.ops.kernel import convert, single_input
from relaxjax.ops.reduction import reduce_info, when_nonempty
from relaxjax.ops.unary import OperandType
from relaxjax.tir import PrimExpr, PrimFunc, te


@dataclass(frozen=True, slots=True)
class LogSumExpAttrs:
    """The reduced axes (None: all) and whether they are kept with size 1."""

    axis: tuple[int, ...] | None = None
    keepdims: bool = False

    def __post_init__(self) -> None:
        check_axes("LogSumExpAttrs", self.axis)
        check_flag("LogSumExpAttrs", "keepdims", self.keepdims)


@register
class LogSumExp(Op):
    """``log(sum(exp(x)))`` over ``attrs.axis`` (``jax.nn.logsumexp`` without ``b``,
    ``where`` or ``return_sign``, which the wrapper composes from other ops)."""

    name = "logsumexp"
    pattern = "reduction"
    num_inputs = 1
    Attrs = LogSumExpAttrs

    def result_dtype(self, x: OperandType) -> str:
        return to_inexact(dtypes.result_type(x))

    def infer(self, args: Sequence[StructInfo], attrs: object, ctx: InferContext) -> StructInfo:
        (x,) = tensor_args(self.name, args, 1)
        dtype = self.result_dtype(operand_type(args[0]))
        return reduce_info(ctx, x, attrs.axis, attrs.keepdims, dtype)

    def reference(self, *arrays: object, attrs: object = None) -> np.ndarray:
        (x,) = arrays
        out = self.result_dtype(value_type(x))
        values = np.asarray(reference_input(x)).astype(compute_dtype(out))
        axes = reduced_axes(self.name, attrs.axis, values.ndim)
        with np.errstate(all="ignore"):
            peak = np.max(values, axis=axes, keepdims=True, initial=-np.inf)
            peak = np.where(np.isfinite(peak), peak, 0)
            total = np.sum(np.exp(values - peak), axis=axes, keepdims=True)
            result = np.log(total) + peak
        if not attrs.keepdims:
            result = np.squeeze(result, axis=axes)
        return np.asarray(result).astype(dtypes.to_numpy(out))

    def lower(
        self, arg_infos: Sequence[StructInfo], attrs: object, out_info: StructInfo
    ) -> PrimFunc:
        """Three stages: the max over the axes, the sum of ``exp(x - max)``, the result;
        empty reductions give ``-inf`` (the max) and 0 (the sum)."""
        _, x = single_input(arg_infos)
        out_dtype = as_tensor_info(out_info).dtype
        work = compute_dtype(out_dtype).name
        rows = ReducedAxes(x.shape, reduced_axes(self.name, attrs.axis, x.ndim))

        def value(indices: Sequence[object]) -> PrimExpr:
            return convert(x[tuple(indices)], work)

        peak_stage = rows.reduce(te.max, value, f"{self.name}_max")

        def peak(kept: Sequence[object]) -> PrimExpr:
            largest = when_nonempty(rows.count, peak_stage[tuple(kept)], tir.min_value(work))
            return tir.select(tir.isfinite(largest), largest, tir.const(0.0, work))

        def shifted(i: Sequence[object]) -> PrimExpr:
            return tir.exp(value(i) - peak(rows.kept(i)))

        total = rows.reduce(te.sum, shifted, f"{self.name}_sum")

        def body(*i: object) -> PrimExpr:
            kept = rows.kept(i) if attrs.keepdims else i
            summed = when_nonempty(rows.count, total[tuple(kept)], tir.const(0.0, work))
            return convert(tir.log(summed) + peak(kept), out_dtype)

        out = te.compute(rows.out_shape(attrs.keepdims), body, name=self.name)
        return te.create_prim_func([x, out], name=self.name)


__all__ = ["LogSumExpAttrs"]
