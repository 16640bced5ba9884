"""``argmax`` and ``argmin``: the int64 index of the extreme element along one axis
(or of the flattened array), the first one on ties, NaN winning (jax.numpy semantics).
An empty reduction is an error."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from relaxjax.ir import StructInfo
from relaxjax.ops.attr_checks import check_flag, check_int
from relaxjax.ops.axes import ReducedAxes, linear_index, reduced_axes
from relaxjax.ops.base import InferContext, Op, reference_input, register, tensor_args
from relaxjax.ops.kernel import convert, single_input
from relaxjax.ops.reduction import extremum_dtype, finish_reduction, reduce_info
from relaxjax.tir import PrimExpr, PrimFunc, te
from relaxjax.tir.expr import as_expr


@dataclass(frozen=True, slots=True)
class ArgReduceAttrs:
    """Attributes of ``argmax``/``argmin``: one axis (None: the flattened array)."""

    axis: int | None = None
    keepdims: bool = False

    def __post_init__(self) -> None:
        if self.axis is not None:
            check_int("ArgReduceAttrs", "axis", self.axis)
        check_flag("ArgReduceAttrs", "keepdims", self.keepdims)


class _ArgReduction(Op):
    """The index of the extreme element along one axis (first one on ties; NaN wins)."""

    pattern = "reduction"
    num_inputs = 1
    Attrs = ArgReduceAttrs

    def infer(self, args: Sequence[StructInfo], attrs, ctx: InferContext) -> StructInfo:
        (x,) = tensor_args(self.name, args, 1)
        axis = None if attrs.axis is None else (attrs.axis,)
        return reduce_info(ctx, x, axis, attrs.keepdims, "int64", nonempty=True)

    @abstractmethod
    def pick(self, x: np.ndarray, axis: int | None) -> np.ndarray:
        """numpy's argmax or argmin."""

    reducer = None  # te.argmax or te.argmin

    def lower(self, arg_infos: Sequence[StructInfo], attrs, out_info: StructInfo) -> PrimFunc:
        """A reduction over (value, flat index) pairs: the first extreme wins, NaN first."""
        _, x = single_input(arg_infos)
        axis = None if attrs.axis is None else (attrs.axis,)
        axes = ReducedAxes(x.shape, reduced_axes(self.name, axis, x.ndim))
        work = extremum_dtype(x.dtype)
        reduced_shape = [x.shape[a] for a in axes.axes]

        def index(ks: Sequence[object]) -> PrimExpr:
            return as_expr(linear_index(reduced_shape, ks))

        name = self.name if not attrs.keepdims else "acc"
        if not axes.axes:  # a 0-d array: index 0
            stage = te.compute((), lambda: as_expr(0), name=name)
        else:
            _, stage = axes.reduce(self.reducer, lambda i: convert(x[i], work), name, index)
        return finish_reduction(self.name, x, axes, stage, attrs.keepdims, "int64")

    def reference(self, *arrays: object, attrs=None) -> np.ndarray:
        attrs = self.Attrs() if attrs is None else attrs
        x = reference_input(arrays[0])
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
    reducer = te.argmax

    def pick(self, x: np.ndarray, axis: int | None) -> np.ndarray:
        return np.argmax(x, axis=axis)


@register
class Argmin(_ArgReduction):
    """``jnp.argmin``: int64 indices of the smallest elements."""

    name = "argmin"
    reducer = te.argmin

    def pick(self, x: np.ndarray, axis: int | None) -> np.ndarray:
        return np.argmin(x, axis=axis)


__all__ = ["ArgReduceAttrs"]
