"""``diagonal``: the diagonal ``offset`` of the plane of two axes, with jax.numpy semantics
(``jnp.diagonal``): the two axes are removed and the diagonal becomes the last axis, of
length ``max(0, min(d1 + min(offset, 0), d2 - max(offset, 0)))``::

    out[..., k] = x[..., k + max(-offset, 0), ..., k + max(offset, 0), ...]

The dtype (and weak type) is the input's. ``trace`` sums it, ``diag`` of a matrix is it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from relaxjax import arith
from relaxjax.ir import StructInfo, TensorInfo
from relaxjax.ops.attr_checks import check_int
from relaxjax.ops.base import (
    InferContext,
    Op,
    fail,
    normalize_axis,
    reference_input,
    register,
    tensor_args,
)
from relaxjax.ops.kernel import gather_kernel, single_input
from relaxjax.tir import PrimFunc

Dim = arith.Dim


@dataclass(frozen=True, slots=True)
class DiagonalAttrs:
    """Attributes of ``diagonal``: the ``offset`` (positive: above the main diagonal) and
    the two axes of the plane."""

    offset: int = 0
    axis1: int = 0
    axis2: int = 1

    def __post_init__(self) -> None:
        for name in ("offset", "axis1", "axis2"):
            check_int("DiagonalAttrs", name, getattr(self, name))


def diagonal_axes(op_name: str, attrs: DiagonalAttrs, ndim: int) -> tuple[int, int]:
    """The two normalised axes; ``ShapeError`` for a rank below 2 or equal axes."""
    if ndim < 2:
        fail(op_name, f"diagonal requires an array of at least two dimensions, got rank {ndim}")
    axis1 = normalize_axis(op_name, attrs.axis1, ndim)
    axis2 = normalize_axis(op_name, attrs.axis2, ndim)
    if axis1 == axis2:
        fail(op_name, f"axis1 and axis2 cannot be the same, got {attrs.axis1} and {attrs.axis2}")
    return axis1, axis2


def diagonal_length(rows: Dim, columns: Dim, offset: int) -> Dim:
    """The length of diagonal ``offset`` of a ``rows x columns`` plane."""
    return arith.max_(0, arith.min_(rows + min(offset, 0), columns - max(offset, 0)))


@register
class Diagonal(Op):
    """``jnp.diagonal(a, offset, axis1, axis2)``."""

    name = "diagonal"
    Attrs = DiagonalAttrs
    pattern = "injective"
    num_inputs = 1

    def infer(self, args: Sequence[StructInfo], attrs, ctx: InferContext) -> StructInfo:
        (x,) = tensor_args(self.name, args, 1)
        if x.ndim is None:
            return TensorInfo(dtype=x.dtype, weak=x.weak)
        axis1, axis2 = diagonal_axes(self.name, attrs, x.ndim)
        if x.shape is None:
            return TensorInfo(dtype=x.dtype, ndim=x.ndim - 1, weak=x.weak)
        rest = tuple(d for a, d in enumerate(x.shape) if a not in (axis1, axis2))
        length = diagonal_length(x.shape[axis1], x.shape[axis2], attrs.offset)
        return TensorInfo(rest + (length,), x.dtype, weak=x.weak)

    def reference(self, *arrays: object, attrs=None) -> np.ndarray:
        attrs = DiagonalAttrs() if attrs is None else attrs
        x = reference_input(arrays[0])
        axis1, axis2 = diagonal_axes(self.name, attrs, x.ndim)
        return np.diagonal(x, attrs.offset, axis1, axis2).copy()

    def lower(self, arg_infos: Sequence[StructInfo], attrs, out_info: StructInfo) -> PrimFunc:
        """``out[..., k] = x[..., k + max(-offset, 0), ..., k + max(offset, 0), ...]``."""
        _, x = single_input(arg_infos)
        axis1, axis2 = diagonal_axes(self.name, attrs, x.ndim)
        rest = [a for a in range(x.ndim) if a not in (axis1, axis2)]
        length = diagonal_length(x.shape[axis1], x.shape[axis2], attrs.offset)
        shape = tuple(x.shape[a] for a in rest) + (length,)

        def source(i: Sequence[Dim]) -> tuple[Dim, ...]:
            k = i[-1]
            index = dict(zip(rest, i[:-1]))
            index[axis1] = k + max(-attrs.offset, 0)
            index[axis2] = k + max(attrs.offset, 0)
            return tuple(index[a] for a in range(x.ndim))

        return gather_kernel(self.name, x, shape, source)


__all__ = ["DiagonalAttrs", "diagonal_axes", "diagonal_length"]
