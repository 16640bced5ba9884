"""Counting and locating nonzero elements: ``count_nonzero``, ``nonzero_count`` and the
index ops ``nonzero``, ``argwhere``, ``flatnonzero`` (jax.numpy semantics, x64).

A result whose length is the number of nonzero elements is data-dependent. The
tracer builds it in three bindings, which the graph program shows::

    lv0: Prim("int64") = nonzero_count(x)
    lv1: Prim("int64", value=k0) = match_cast(lv0, Prim("int64", value=k0))
    lv2: Tensor((k0,), "int64") = flatnonzero(x, size=k0, fill_value=(0,), dtype="int64")

``nonzero_count`` counts (a reduction to a scalar); the ``match_cast`` binds the fresh
symbol ``k0`` (``0 <= k0 <= n``, printed in the function's bounds) once the count is
known — the runtime starts a new segment there; the index op then has a static size.
The same index op is what jax's ``size=`` gives when ``size`` is an int: the first
``size`` indices, padded with ``fill_value`` (default 0) when there are fewer.

Dtypes: counts and indices are int64; a ``fill_value`` promotes the indices as jax's
``where(mask, indices, fill_value)`` does (a Python float gives float64), except that an
array with no elements gives int64 zeros whatever the fill (jax's rule). Zero is
``x == 0``: NaN counts as nonzero, ``-0.0`` does not.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from relaxjax import arith, dtypes
from relaxjax.ir import PrimInfo, StructInfo, TensorInfo, TupleInfo
from relaxjax.ops.attr_checks import check_axes, check_dim, check_flag
from relaxjax.ops.axes import linear_index
from relaxjax.ops.base import (
    InferContext,
    Op,
    fail,
    num_elements,
    reference_input,
    register,
    tensor_args,
)
from relaxjax.ops.kernel import KernelDims, as_bool, convert, placeholders
from relaxjax.ops.reduction import AxesReduction
from relaxjax.ops.serial import Scalars, loop_nest, seq, when
from relaxjax.tir import BufferStore, For, PrimExpr, PrimFunc, select, te
from relaxjax.tir.expr import as_expr

Dim = arith.Dim
Scalar = bool | int | float


# --------------------------------------------------------------------------- counts


@dataclass(frozen=True, slots=True)
class CountAttrs:
    """Attributes of ``count_nonzero``: the counted axes (None: all) and ``keepdims``."""

    axis: tuple[int, ...] | None = None
    keepdims: bool = False

    def __post_init__(self) -> None:
        check_axes("CountAttrs", self.axis)
        check_flag("CountAttrs", "keepdims", self.keepdims)


@register
class CountNonzero(AxesReduction):
    """``jnp.count_nonzero``: the number of nonzero elements over axes, as int64."""

    name = "count_nonzero"
    Attrs = CountAttrs

    def result_dtype(self, dtype: str, attrs) -> str:
        return "int64"

    def compute(self, x, axes, attrs, out):
        return np.count_nonzero(x, axis=axes, keepdims=True)

    def work_dtype(self, out: str) -> str:
        return "int64"

    def reduce_stage(self, x, axes, attrs, out, work, name):
        return axes.reduce(te.sum, lambda i: convert(as_bool(x[i]), work), name)


@register
class NonzeroCount(CountNonzero):
    """The number of nonzero elements of a tensor as an int64 scalar: the size that a
    data-dependent result (``nonzero``, ``x[mask]``, ``compress``) takes, read by the
    runtime once it is computed (see the module doc)."""

    name = "nonzero_count"
    Attrs = None

    def infer(self, args: Sequence[StructInfo], attrs, ctx: InferContext) -> StructInfo:
        tensor_args(self.name, args, 1)
        return PrimInfo("int64")

    def reference(self, *arrays: object, attrs=None) -> np.ndarray:
        return np.asarray(np.count_nonzero(reference_input(arrays[0])), np.int64)

    def lower(self, arg_infos: Sequence[StructInfo], attrs, out_info: StructInfo) -> PrimFunc:
        return super().lower(arg_infos, CountAttrs(), TensorInfo((), "int64"))


# --------------------------------------------------------------------------- indices


@dataclass(frozen=True, slots=True)
class NonzeroAttrs:
    """Attributes of the index ops: the result length ``size`` (an int, or the symbol a
    count was bound to), the ``fill_value`` of padded entries per output column (``()``:
    zeros) and the result ``dtype``."""

    size: Dim
    fill_value: tuple[Scalar, ...] = ()
    dtype: str = "int64"

    def __post_init__(self) -> None:
        check_dim("NonzeroAttrs", "size", self.size)
        if not isinstance(self.fill_value, tuple) or not all(
            isinstance(v, (bool, int, float)) for v in self.fill_value
        ):
            raise TypeError(
                f"NonzeroAttrs.fill_value must be a tuple of Python scalars, got "
                f"{self.fill_value!r}"
            )
        object.__setattr__(self, "dtype", dtypes.canonical(self.dtype))


def index_dtype(fill_value: Sequence[Scalar], shape: Sequence[Dim] | None = None) -> str:
    """The dtype of the indices padded with ``fill_value`` (jax: int64 promoted with the
    fill values; int64 for an array known to be empty)."""
    if shape is not None and num_elements(shape) == 0:
        return "int64"
    return dtypes.result_type("int64", *(dtypes.weak_of(v) for v in fill_value))


class _IndexOp(Op):
    """``nonzero``, ``argwhere`` or ``flatnonzero``: a serial scan of ``x`` in row-major
    order writing each nonzero element's position, then the padding."""

    Attrs = NonzeroAttrs
    pattern = "opaque"
    num_inputs = 1

    def columns(self, ndim: int) -> int:
        """How many index values each nonzero element has."""
        return ndim

    def check_rank(self, ndim: int) -> None:
        """Raise for a rank the op refuses."""

    def result(self, size: Dim, ndim: int | None, dtype: str) -> StructInfo:
        """The struct info of the result for an input of rank ``ndim``."""
        raise NotImplementedError

    def infer(self, args: Sequence[StructInfo], attrs, ctx: InferContext) -> StructInfo:
        (x,) = tensor_args(self.name, args, 1)
        if x.ndim is not None:
            self.check_rank(x.ndim)
            columns = self.columns(x.ndim)
            if attrs.fill_value and len(attrs.fill_value) != columns:
                fail(
                    self.name,
                    f"fill_value must be a scalar or a tuple of length {columns}; got "
                    f"{attrs.fill_value}",
                )
        return self.result(attrs.size, x.ndim, attrs.dtype)

    # -- the numpy reference ----------------------------------------------------------

    def positions(self, x: np.ndarray) -> list[np.ndarray]:
        """One int64 array per output column: the positions of the nonzero elements."""
        raise NotImplementedError

    def pack(self, columns: list[np.ndarray]) -> object:
        """The result from its columns (each of length ``size``)."""
        raise NotImplementedError

    def reference(self, *arrays: object, attrs=None) -> object:
        x = reference_input(arrays[0])
        self.check_rank(x.ndim)
        size = int(attrs.size)
        dtype = dtypes.to_numpy(attrs.dtype)
        fills = attrs.fill_value or (0,) * self.columns(x.ndim)
        if x.size == 0:
            fills = (0,) * len(fills)
        columns = []
        for found, fill in zip(self.positions(x), fills):
            column = np.full(size, np.asarray(fill).astype(dtype), dtype)
            kept = found[:size].astype(dtype)
            column[: len(kept)] = kept
            columns.append(column)
        return self.pack(columns)

    # -- the kernel ---------------------------------------------------------------------

    def outputs(self, dims: KernelDims, out_info: StructInfo, ndim: int) -> list[te.Tensor]:
        """The output buffers, one per column or one matrix."""
        leaves = out_info.fields if isinstance(out_info, TupleInfo) else (out_info,)
        return [
            te.placeholder(dims.output_shape(leaf), leaf.dtype, f"out{i}")
            for i, leaf in enumerate(leaves)
        ]

    def store(self, outputs: Sequence[te.Tensor], row: object, column: int, value: PrimExpr):
        """``out[row]`` of column ``column`` = ``value``."""
        raise NotImplementedError

    def values(self, shape: Sequence[Dim], index: Sequence[Dim]) -> list[Dim]:
        """The column values of the element at ``index``."""
        return list(index)

    def lower(self, arg_infos: Sequence[StructInfo], attrs, out_info: StructInfo) -> PrimFunc:
        """``pos = 0; for each element in row-major order: if x != 0: (if pos < size: write
        its position at pos); pos += 1``, then the entries from ``pos`` to ``size`` get the
        fill values (zeros when ``x`` is empty, as in jax)."""
        dims = KernelDims()
        (x,) = placeholders(dims, arg_infos[:1], ("x",))
        outputs = self.outputs(dims, out_info, x.ndim)
        size = outputs[0].shape[0]
        dtype = outputs[0].dtype
        state = Scalars({"pos": "int64"})
        pos = state.load("pos")

        def visit(index: tuple[arith.Sym, ...]) -> object:
            writes = [
                self.store(outputs, pos, c, as_expr(v, "int64"))
                for c, v in enumerate(self.values(x.shape, index))
            ]
            found = seq(when(pos < size, seq(*writes)) if writes else None, state.add("pos", 1))
            return when(as_bool(x[index]), found)

        fills = attrs.fill_value or (0,) * self.columns(x.ndim)
        total = num_elements(x.shape)
        j = arith.sym("j")
        pads = []
        for column, fill in enumerate(fills):
            value = as_expr(np.asarray(fill).astype(dtypes.to_numpy(dtype)).item(), dtype)
            if arith.compare(total, ">", 0) is not True and fill != 0:
                value = select(as_expr(total) > 0, value, as_expr(0, dtype))
            pads.append(self.store(outputs, j, column, value))
        padding = For(j, 0, size, "serial", when(as_expr(j) >= pos, seq(*pads))) if pads else None
        body = seq(state.set("pos", 0), loop_nest(x.shape, "i", visit), padding)
        buffers = [x.buffer] + [o.buffer for o in outputs]
        return PrimFunc(self.name, tuple(buffers), state.allocate(body), num_outputs=len(outputs))


def _converted_store(buffer, value: PrimExpr, indices: tuple) -> BufferStore:
    return BufferStore(buffer, convert(value, buffer.dtype), indices)


@register
class Nonzero(_IndexOp):
    """``jnp.nonzero(x, size=...)``: one index array per axis (a tuple)."""

    name = "nonzero"

    def check_rank(self, ndim: int) -> None:
        if ndim == 0:
            fail(
                self.name,
                "calling nonzero on 0d arrays is not allowed; use "
                "jnp.atleast_1d(scalar).nonzero() instead",
            )

    def result(self, size: Dim, ndim: int | None, dtype: str) -> StructInfo:
        if ndim is None:
            fail(
                self.name, "the rank of the array must be known (the result has one array per axis)"
            )
        return TupleInfo(tuple(TensorInfo((size,), dtype) for _ in range(ndim)))

    def positions(self, x: np.ndarray) -> list[np.ndarray]:
        return list(np.nonzero(x))

    def pack(self, columns: list[np.ndarray]) -> object:
        return tuple(columns)

    def store(self, outputs, row, column, value):
        return _converted_store(outputs[column].buffer, value, (row,))


@register
class Argwhere(_IndexOp):
    """``jnp.argwhere(x, size=...)``: the indices as the rows of a ``(size, ndim)`` matrix
    (a 0-d array has 0 columns and at most one row)."""

    name = "argwhere"

    def result(self, size: Dim, ndim: int | None, dtype: str) -> StructInfo:
        if ndim is None:
            return TensorInfo(dtype=dtype, ndim=2)
        return TensorInfo((size, ndim), dtype)

    def positions(self, x: np.ndarray) -> list[np.ndarray]:
        found = np.argwhere(x)
        return [found[:, c] for c in range(found.shape[1])]

    def pack(self, columns: list[np.ndarray]) -> object:
        return np.stack(columns, axis=1) if columns else np.zeros((0, 0), np.int64)

    def reference(self, *arrays: object, attrs=None) -> object:
        x = reference_input(arrays[0])
        if x.ndim == 0:  # no column: only the row count depends on the data
            return np.zeros((int(attrs.size), 0), dtypes.to_numpy(attrs.dtype))
        return super().reference(*arrays, attrs=attrs)

    def store(self, outputs, row, column, value):
        return _converted_store(outputs[0].buffer, value, (row, column))


@register
class Flatnonzero(_IndexOp):
    """``jnp.flatnonzero(x, size=...)``: the row-major flat indices of the nonzero elements."""

    name = "flatnonzero"

    def columns(self, ndim: int) -> int:
        return 1

    def result(self, size: Dim, ndim: int | None, dtype: str) -> StructInfo:
        return TensorInfo((size,), dtype)

    def positions(self, x: np.ndarray) -> list[np.ndarray]:
        return [np.flatnonzero(x)]

    def pack(self, columns: list[np.ndarray]) -> object:
        return columns[0]

    def values(self, shape: Sequence[Dim], index: Sequence[Dim]) -> list[Dim]:
        return [linear_index(shape, index)]

    def store(self, outputs, row, column, value):
        return _converted_store(outputs[0].buffer, value, (row,))


__all__ = ["CountAttrs", "NonzeroAttrs", "index_dtype"]
