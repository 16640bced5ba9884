"""``correlate``: 1-d convolution and cross-correlation with jax.numpy semantics
(``jnp.convolve`` and ``jnp.correlate``, modes ``full``, ``same`` and ``valid``).

For ``a`` of length ``n`` and ``v`` of length ``m`` (both at least 1) the full results
have ``n + m - 1`` entries::

    convolve:  full[p] = sum_j a[j] * v[p - j]
    correlate: full[p] = sum_j a[j] * v[j - p + m - 1]

and the modes are windows of them: ``same`` has ``max(n, m)`` entries from ``M - 1 -
M // 2`` (``M = min(n, m)``; a correlation with ``n < m`` starts at ``M // 2``, since
jax swaps the operands and reverses the result), ``valid`` has ``max(n, m) - M + 1``
from ``M - 1``. With symbolic lengths these are arith expressions (``min``/``max``), so
one kernel serves either order of the lengths. The dtype is
``inexact(promote(a, v))``; half precisions accumulate in float32.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from relaxjax import arith, dtypes, tir
from relaxjax.ir import Check, StructInfo, TensorInfo
from relaxjax.ops.attr_checks import check_flag
from relaxjax.ops.base import (
    InferContext,
    Op,
    as_tensor_info,
    compute_dtype,
    fail,
    promote_weak,
    register,
    tensor_args,
    to_inexact,
    value_type,
)
from relaxjax.ops.kernel import KernelDims, convert, placeholders
from relaxjax.ops.reduction import accumulator_dtype
from relaxjax.tir import PrimFunc, te

Dim = arith.Dim

MODES = ("full", "same", "valid")


@dataclass(frozen=True, slots=True)
class CorrelateAttrs:
    """Attributes of ``correlate``: the ``mode`` and whether it convolves (``v``
    reversed) or correlates."""

    mode: str = "full"
    convolve: bool = False

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {list(MODES)}, got {self.mode!r}")
        check_flag("CorrelateAttrs", "convolve", self.convolve)


def _window(n: Dim, m: Dim, attrs: CorrelateAttrs) -> tuple[Dim, Dim]:
    """``(start, length)`` of the mode's window into the full result."""
    shorter, longer = arith.min_(n, m), arith.max_(n, m)
    if attrs.mode == "full":
        return 0, n + m - 1
    if attrs.mode == "valid":
        return shorter - 1, longer - shorter + 1
    start = shorter - 1 - arith.floordiv(shorter, 2)
    if not attrs.convolve:  # jax reverses a correlation of a shorter `a`: start at M // 2
        swapped = arith.min_(arith.max_(m - n, 0), 1)  # 1 exactly when n < m
        start = start + swapped * (arith.floordiv(shorter, 2) - start)
    return start, longer


@register
class Correlate(Op):
    """``jnp.convolve`` / ``jnp.correlate`` of two 1-d arrays."""

    name = "correlate"
    Attrs = CorrelateAttrs
    pattern = "opaque"
    num_inputs = 2

    def infer(self, args: Sequence[StructInfo], attrs, ctx: InferContext) -> StructInfo:
        a, v = tensor_args(self.name, args, 2)
        dtype, weak = promote_weak(self.name, args)
        dtype = to_inexact(dtype)
        what = "convolve" if attrs.convolve else "correlate"
        if any(i.ndim is not None and i.ndim != 1 for i in (a, v)):
            fail(self.name, f"{what}() only support 1-dimensional inputs.")
        if a.shape is None or v.shape is None:
            return TensorInfo(dtype=dtype, ndim=1, weak=weak)
        (n,), (m,) = a.shape, v.shape
        for length, name in ((n, "a"), (m, "v")):
            message = f"{self.name}: {what}: inputs cannot be empty, got {name} of length {length}"
            ctx.require(Check("le", (1, length), message))
        return TensorInfo((_window(n, m, attrs)[1],), dtype, weak=weak)

    def reference(self, *arrays: object, attrs=None) -> np.ndarray:
        attrs = CorrelateAttrs() if attrs is None else attrs
        out = to_inexact(dtypes.result_type(*(value_type(x) for x in arrays)))
        work = compute_dtype(out)
        a, v = (np.asarray(x).astype(dtypes.to_numpy(out)).astype(work) for x in arrays)
        if a.size == 0 or v.size == 0:
            fail(self.name, "inputs cannot be empty")
        numpy_op = np.convolve if attrs.convolve else np.correlate
        return numpy_op(a, v, mode=attrs.mode).astype(dtypes.to_numpy(out))

    def lower(self, arg_infos: Sequence[StructInfo], attrs, out_info: StructInfo) -> PrimFunc:
        """``out[k] = sum_j a[j] * v[index(k + start, j)]`` over the ``j`` whose index is
        within ``v`` (one reduction stage, then a conversion for half precisions)."""
        a, v = placeholders(KernelDims(), arg_infos, ("a", "v"))
        out = as_tensor_info(out_info).dtype
        work = accumulator_dtype(out).name
        (n,), (m,) = a.shape, v.shape
        start, length = _window(n, m, attrs)

        def body(k: object) -> object:
            j = te.reduce_axis(n, "j")
            position = k.index_dim + start
            index = position - j.index_dim if attrs.convolve else j.index_dim - position + m - 1
            inside = (tir.expr.as_expr(index) >= 0) & (tir.expr.as_expr(index) < m)
            clamped = arith.min_(arith.max_(index, 0), m - 1)
            product = convert(a[(j.index_dim,)], work) * convert(v[(clamped,)], work)
            return te.sum(product, axis=j, where=inside)

        name = self.name if work == out else "acc"
        stage = te.compute((length,), body, name=name)
        if work != out:
            stage = te.compute((length,), lambda k: convert(stage[(k,)], out), name=self.name)
        return te.create_prim_func([a, v, stage], name=self.name)


__all__ = ["CorrelateAttrs", "MODES"]
