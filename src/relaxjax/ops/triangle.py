"""``tril`` and ``triu``: keep the elements on one side of a diagonal of the last two
axes and zero the others, with jax.numpy semantics (the dtype is the input's)."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from relaxjax import tir
from relaxjax.ir import StructInfo
from relaxjax.ops.attr_checks import check_int
from relaxjax.ops.base import InferContext, Op, info_text, reference_input, register, tensor_args
from relaxjax.ops.kernel import single_input
from relaxjax.tir import PrimExpr, PrimFunc, te
from relaxjax.tir.expr import as_expr


@dataclass(frozen=True, slots=True)
class TriangleAttrs:
    """Attributes of ``tril``/``triu``: the diagonal offset ``k`` (positive: above)."""

    k: int = 0

    def __post_init__(self) -> None:
        check_int("TriangleAttrs", "k", self.k)


class _Triangle(Op):
    Attrs = TriangleAttrs
    pattern = "injective"
    num_inputs = 1

    def infer(self, args: Sequence[StructInfo], attrs, ctx: InferContext) -> StructInfo:
        (x,) = tensor_args(self.name, args, 1)
        if x.ndim is not None and x.ndim < 2:
            ctx.fail(f"argument must be at least 2-D, got shape {info_text(x)}")
        return x

    @abstractmethod
    def keeps(self, row: PrimExpr, column: PrimExpr, k: int) -> PrimExpr:
        """Whether element ``(row, column)`` of the last two axes is kept."""

    def lower(self, arg_infos: Sequence[StructInfo], attrs, out_info: StructInfo) -> PrimFunc:
        """``out[..., r, c] = x[..., r, c]`` where kept, else 0."""
        _, x = single_input(arg_infos)
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
        return np.tril(reference_input(arrays[0]), 0 if attrs is None else attrs.k)

    def keeps(self, row: PrimExpr, column: PrimExpr, k: int) -> PrimExpr:
        return column - row <= k


@register
class Triu(_Triangle):
    """``jnp.triu``: zero the elements below diagonal ``k`` of the last two axes."""

    name = "triu"

    def reference(self, *arrays: object, attrs=None) -> np.ndarray:
        return np.triu(reference_input(arrays[0]), 0 if attrs is None else attrs.k)

    def keeps(self, row: PrimExpr, column: PrimExpr, k: int) -> PrimExpr:
        return column - row >= k


__all__ = ["TriangleAttrs"]
