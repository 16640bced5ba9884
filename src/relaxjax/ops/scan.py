"""The scans ``cumsum`` and ``cumprod``: inclusive running sums (products) along one axis,
or of the flattened array, with jax.numpy's dtypes (bool gives int64, other dtypes are
kept unless ``dtype`` is given: int8 sums wrap in int8, as jax).

The kernel is linear: with ``x`` seen as ``(outer, n, inner)`` around the scanned axis,
the outer positions run in parallel and each walks its ``n`` rows in order, combining
the previous running row with the next one (the inner positions are contiguous)::

    for o in parallel(outer):
        for k in range(n):
            for i in range(inner):
                acc[i] = x[o, 0, i] if k == 0 else acc[i] + x[o, k, i]
                out[o, k, i] = acc[i]

``acc`` is the output itself, except for float16/bfloat16 (which accumulate in float32)
and bool results (int64), which keep a row of running values of their own.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from relaxjax import arith, dtypes
from relaxjax.ir import StructInfo, TensorInfo
from relaxjax.ops.attr_checks import check_int, optional_dtype
from relaxjax.ops.axes import unravel_loop
from relaxjax.ops.base import (
    InferContext,
    Op,
    as_tensor_info,
    normalize_axis,
    num_elements,
    reference_input,
    register,
    tensor_args,
)
from relaxjax.ops.kernel import KernelDims, convert, placeholders
from relaxjax.ops.reduction import accumulator_dtype, in_accumulator
from relaxjax.ops.serial import seq, when
from relaxjax.tir import Allocate, Buffer, BufferStore, For, PrimExpr, PrimFunc, Stmt, eq, te
from relaxjax.tir.expr import as_expr

Dim = arith.Dim


@dataclass(frozen=True, slots=True)
class CumsumAttrs:
    """Attributes of the scans (``cumsum``, ``cumprod``): the scanned axis (None: the
    flattened array) and the dtype the input is converted to first."""

    axis: int | None = None
    dtype: str | None = None

    def __post_init__(self) -> None:
        if self.axis is not None:
            check_int("CumsumAttrs", "axis", self.axis)
        object.__setattr__(self, "dtype", optional_dtype("CumsumAttrs", self.dtype))


def cumsum_dtype(dtype: str, requested: str | None) -> str:
    """The dtype of a scan: ``requested``, else bool -> int64 and others unchanged."""
    if requested is not None:
        return requested
    return "int64" if dtypes.is_bool(dtype) else dtype


class ScanOp(Op):
    """An inclusive scan along one axis (None: of the flattened array); subclasses give
    the combining function."""

    Attrs = CumsumAttrs
    pattern = "opaque"
    num_inputs = 1
    #: numpy's scan (``np.cumsum``)
    numpy_function: Callable[..., np.ndarray]

    def combine(self, a: PrimExpr, b: PrimExpr) -> PrimExpr:
        raise NotImplementedError

    def infer(self, args: Sequence[StructInfo], attrs, ctx: InferContext) -> StructInfo:
        (x,) = tensor_args(self.name, args, 1)
        dtype = cumsum_dtype(x.dtype, attrs.dtype)
        if attrs.axis is None:
            if x.shape is None:
                return TensorInfo(dtype=dtype, ndim=1)
            return TensorInfo((num_elements(x.shape),), dtype)
        if x.ndim is None:
            return TensorInfo(dtype=dtype)
        normalize_axis(self.name, attrs.axis, x.ndim)
        return TensorInfo(x.shape, dtype, x.ndim)

    def lower(self, arg_infos: Sequence[StructInfo], attrs, out_info: StructInfo) -> PrimFunc:
        """Outer positions in parallel, each a serial walk along the axis (module doc)."""
        dims = KernelDims()
        (x,) = placeholders(dims, arg_infos[:1], ("x",))
        out_dtype = as_tensor_info(out_info).dtype
        out = te.placeholder(dims.output_shape(out_info), out_dtype, self.name).buffer
        work = accumulator_dtype(out_dtype).name
        if dtypes.is_integer(out_dtype):
            work = out_dtype  # integer sums wrap the same in their own type
        if attrs.axis is None:
            outer, count, inner = (), num_elements(x.shape), ()

            def source(o: tuple, k: Dim, i: tuple) -> tuple:
                return unravel_loop(k, x.shape)

            def target(o: tuple, k: Dim, i: tuple) -> tuple:
                return (k,)
        else:
            axis = normalize_axis(self.name, attrs.axis, x.ndim)
            outer, count, inner = x.shape[:axis], x.shape[axis], x.shape[axis + 1 :]

            def source(o: tuple, k: Dim, i: tuple) -> tuple:
                return o + (k,) + i

            target = source
        o_var, k = arith.sym("o"), arith.sym("k")
        i_first, i_var = arith.sym("i0"), arith.sym("i")
        o = unravel_loop(o_var, outer)
        inner_count = num_elements(inner)
        acc = out if work == out_dtype else Buffer("acc", (inner_count,), work, scope="local")

        def update(i_sym: arith.Sym, combine: bool) -> Stmt:
            i = unravel_loop(i_sym, inner)

            def running(kk: Dim) -> tuple:
                return target(o, kk, i) if acc is out else (i_sym,)

            value = convert(convert(x[source(o, k, i)], out_dtype), work)
            if combine:
                value = self.combine(acc[running(k - 1)], value)
            stores = [BufferStore(acc, value, running(k))]
            if acc is not out:
                result = convert(acc[running(k)], out_dtype)
                stores.append(BufferStore(out, result, target(o, k, i)))
            return For(i_sym, 0, inner_count, "serial", seq(*stores))

        row = when(eq(as_expr(k), 0), update(i_first, False), update(i_var, True))
        walk = For(k, 0, count, "serial", row)
        if acc is not out:
            walk = Allocate(acc, walk)
        nest = For(o_var, 0, num_elements(outer), "parallel", walk)
        return PrimFunc(self.name, (x.buffer, out), nest)

    def reference(self, *arrays: object, attrs=None) -> np.ndarray:
        attrs = self.Attrs() if attrs is None else attrs
        x = reference_input(arrays[0])
        out = cumsum_dtype(dtypes.canonical(x.dtype), attrs.dtype)
        if attrs.axis is None:
            x, axis = x.reshape(-1), 0
        else:
            axis = normalize_axis(self.name, attrs.axis, x.ndim)
        with np.errstate(all="ignore"):
            result = type(self).numpy_function(in_accumulator(x, out), axis=axis)
        return result.astype(dtypes.to_numpy(out))


@register
class Cumsum(ScanOp):
    """``jnp.cumsum``: inclusive running sums."""

    name = "cumsum"
    numpy_function = np.cumsum

    def combine(self, a: PrimExpr, b: PrimExpr) -> PrimExpr:
        return a + b


@register
class Cumprod(ScanOp):
    """``jnp.cumprod``: inclusive running products."""

    name = "cumprod"
    numpy_function = np.cumprod

    def combine(self, a: PrimExpr, b: PrimExpr) -> PrimExpr:
        return a * b


__all__ = ["CumsumAttrs", "ScanOp", "cumsum_dtype"]
