"""``bincount`` (and ``histogram``, built on it): sums of weights into integer bins.

``bincount(x, weights)`` adds ``weights[i]`` (1 without weights) into bin ``x[i]`` of a
result of ``length`` bins, as jax's ``zeros(length).at[clip(x, 0)].add(weights)``:
negative ``x`` count into bin 0 and ``x >= length`` are dropped. One serial kernel
(the additions would race in parallel), linear in ``len(x) + length``::

    out[b] = 0 for every bin b
    for i in range(n):
        b = max(x[i], 0)
        if b < length: out[b] += weights[i]

Without ``length`` the result's length is ``max(minlength, max(x) + 1)`` (``minlength``
for an empty ``x``): the op ``bincount_length`` computes it as an int64 scalar that the
tracer binds to a fresh symbol (data-dependent, like ``nonzero``'s count).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from relaxjax import arith, dtypes
from relaxjax.ir import PrimInfo, StructInfo, TensorInfo
from relaxjax.ops.attr_checks import check_dim, check_int
from relaxjax.ops.base import (
    InferContext,
    Op,
    fail,
    reference_input,
    register,
    require_equal,
    tensor_args,
)
from relaxjax.ops.kernel import KernelDims, placeholders
from relaxjax.ops.serial import Scalars, let_index, seq, when
from relaxjax.tir import BufferStore, For, PrimFunc, cast, te
from relaxjax.tir import math as tmath
from relaxjax.tir.expr import as_expr

__all__ = ["BincountAttrs", "BincountLengthAttrs"]

Dim = arith.Dim


@dataclass(frozen=True, slots=True)
class BincountLengthAttrs:
    """Attributes of ``bincount_length``: the least length ``minlength``."""

    minlength: int = 0

    def __post_init__(self) -> None:
        check_int("BincountLengthAttrs", "minlength", self.minlength)


@dataclass(frozen=True, slots=True)
class BincountAttrs:
    """Attributes of ``bincount``: the number of bins ``length`` (an int, or the
    symbol ``bincount_length`` was bound to)."""

    length: Dim

    def __post_init__(self) -> None:
        check_dim("BincountAttrs", "length", self.length)


def _check_x(op_name: str, x: TensorInfo) -> None:
    if not dtypes.is_integer(x.dtype):
        fail(op_name, f"x must have an integer type, got {x.dtype}")
    if x.ndim not in (None, 1):
        fail(op_name, f"only 1-dimensional input supported, got {x!r}")


@register
class BincountLength(Op):
    """``max(minlength, max(x) + 1)`` (``minlength`` for an empty ``x``) as an int64
    scalar: the length of ``bincount`` without ``length=``."""

    name = "bincount_length"
    Attrs = BincountLengthAttrs
    pattern = "opaque"
    num_inputs = 1

    def infer(self, args: Sequence[StructInfo], attrs, ctx: InferContext) -> StructInfo:
        (x,) = tensor_args(self.name, args, 1)
        _check_x(self.name, x)
        return PrimInfo("int64")

    def reference(self, *arrays: object, attrs=None) -> np.ndarray:
        attrs = BincountLengthAttrs() if attrs is None else attrs
        x = reference_input(arrays[0]).astype(np.int64)
        largest = max(0, int(x.max())) + 1 if x.size else 0
        return np.asarray(max(attrs.minlength, largest), np.int64)

    def lower(self, arg_infos: Sequence[StructInfo], attrs, out_info: StructInfo) -> PrimFunc:
        """A serial maximum over ``x``."""
        (x,) = placeholders(KernelDims(), arg_infos[:1], ("x",))
        out = te.placeholder((), "int64", "out").buffer
        state = Scalars({"length": "int64"})
        i = arith.sym("i")
        bin_of = tmath.max(cast(x[i], "int64"), as_expr(0, "int64")) + 1
        body = seq(
            state.set("length", attrs.minlength),
            For(
                i,
                0,
                x.shape[0],
                "serial",
                state.set("length", tmath.max(state.load("length"), bin_of)),
            ),
            BufferStore(out, state.load("length"), ()),
        )
        return PrimFunc(self.name, (x.buffer, out), state.allocate(body))


@register
class Bincount(Op):
    """Per bin, the sum of the weights (the count without weights) of the elements of
    ``x`` in it (see the module doc); the result has the weights' dtype (int64
    without weights)."""

    name = "bincount"
    Attrs = BincountAttrs
    pattern = "opaque"
    num_inputs = None

    def infer(self, args: Sequence[StructInfo], attrs, ctx: InferContext) -> StructInfo:
        if len(args) not in (1, 2):
            raise TypeError(f"bincount takes x and optional weights, got {len(args)} operands")
        infos = tensor_args(self.name, args)
        x = infos[0]
        _check_x(self.name, x)
        dtype = "int64"
        if len(infos) == 2:
            weights = infos[1]
            dtype = weights.dtype
            if dtypes.is_bool(dtype):
                fail(self.name, "weights must be numbers, got bool")
            if weights.ndim not in (None, 1):
                fail(self.name, f"weights must have x's shape, got {weights!r}")
            if x.shape is not None and weights.shape is not None:
                require_equal(ctx, x.shape[0], weights.shape[0], "weights must have x's shape")
        return TensorInfo((attrs.length,), dtype)

    def reference(self, *arrays: object, attrs=None) -> np.ndarray:
        x = reference_input(arrays[0]).astype(np.int64)
        length = int(attrs.length)
        if len(arrays) == 2:
            weights = reference_input(arrays[1])
        else:
            weights = np.ones(x.shape, np.int64)
        out = np.zeros(length, weights.dtype)
        bins = np.maximum(x, 0)
        kept = bins < length
        np.add.at(out, bins[kept], weights[kept])
        return out

    def lower(self, arg_infos: Sequence[StructInfo], attrs, out_info: StructInfo) -> PrimFunc:
        """Zero the bins, then one serial pass adding each weight into its bin."""
        dims = KernelDims()
        names = ("x", "weights")[: len(arg_infos)]
        inputs = placeholders(dims, arg_infos, names)
        x = inputs[0]
        dtype = out_info.dtype  # type: ignore[union-attr]
        out = te.placeholder(dims.output_shape(out_info), dtype, "bins").buffer
        length = out.shape[0]
        b, i = arith.sym("b"), arith.sym("i")

        def add(k: arith.Sym):
            weight = inputs[1][i] if len(inputs) == 2 else as_expr(1, dtype)
            return when(as_expr(k) < as_expr(length), BufferStore(out, out[k] + weight, (k,)))

        body = seq(
            For(b, 0, length, "serial", BufferStore(out, as_expr(0, dtype), (b,))),
            For(
                i,
                0,
                x.shape[0],
                "serial",
                let_index("k", tmath.max(cast(x[i], "int64"), as_expr(0, "int64")), add),
            ),
        )
        return PrimFunc(self.name, (*(t.buffer for t in inputs), out), body)
