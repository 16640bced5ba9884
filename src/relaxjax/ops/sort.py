"""``sort``: a stable sort of the rows along one axis, by one or more keys (jax's
``lax.sort`` with ``num_keys``), returning the sorted operands and/or the positions.

Behind ``jnp.sort``, ``jnp.argsort``, ``jnp.lexsort``, ``lax.top_k`` (``size=k``,
descending, total order) and the compositions built on them (``partition``,
quantiles, the set operations). The kernel sorts every row (one per position of the
other axes) in parallel, each with the merge sort of :mod:`relaxjax.ops.merge_sort`
on per-row buffers of its keys (and positions)::

    for r in parallel(rows):
        key_a[p] = x[row r, position p]; pos_a[p] = p      # for every p
        merge sort (ceil(log2 n) stable passes between key_a/pos_a and key_b/pos_b)
        values[row r, p] = sorted key; indices[row r, p] = sorted position   # the window

Orders:

- the default is numpy's and jax's ``sort``: NaN after every number, ``-0.0`` equal to
  ``0.0`` (stable, so they keep their order), bool as ``False < True``;
- ``total_order`` is ``lax.top_k``'s: also ``-0.0 < 0.0`` (every NaN is the largest);
- ``descending`` reverses the comparison, equal keys keeping their order (jax's stable
  descending ``argsort``; ``jnp.sort(descending=True)`` reverses the ascending sort
  instead, which the wrapper does).

Several keys compare lexicographically, the first key first (``lexsort`` passes its
keys reversed); operands past ``num_keys`` are not compared, only moved along (the
weights of a weighted quantile).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from relaxjax import arith, dtypes
from relaxjax.ir import Check, StructInfo, TensorInfo, TupleInfo
from relaxjax.ops.attr_checks import check_dim, check_flag, check_int
from relaxjax.ops.axes import unravel_loop
from relaxjax.ops.base import (
    InferContext,
    Op,
    fail,
    normalize_axis,
    num_elements,
    reference_input,
    register,
    require_equal,
    tensor_args,
)
from relaxjax.ops.kernel import KernelDims, placeholders
from relaxjax.ops.merge_sort import SCALARS, Lane, MergeSort, order_less, order_same
from relaxjax.ops.serial import Scalars, seq
from relaxjax.tir import (
    Allocate,
    Buffer,
    BufferStore,
    For,
    PrimExpr,
    PrimFunc,
    cast,
    logical_and,
    logical_or,
    te,
)
from relaxjax.tir.expr import as_expr

Dim = arith.Dim

__all__ = ["SortKeysAttrs", "reference_order"]


# --------------------------------------------------------------------------- orders


def _lexicographic(pairs: Sequence[tuple[PrimExpr, PrimExpr]], total: bool) -> PrimExpr:
    """The first pair's ``a`` sorts before its ``b``, or they are the same and the rest
    decide."""
    (a, b), rest = pairs[0], pairs[1:]
    first = order_less(a, b, total)
    if not rest:
        return first
    return logical_or(first, logical_and(order_same(a, b, total), _lexicographic(rest, total)))


# --------------------------------------------------------------------------- attributes


@dataclass(frozen=True, slots=True)
class SortKeysAttrs:
    """Attributes of ``sort``: the axis, how many operands are keys (``num_keys``, None:
    all), the order (``descending``, ``total_order``), which results to return
    (``values``: every operand in sorted order, ``indices``: the
    positions, as ``index_dtype``, weakly typed with a weak first key when
    ``weak_indices``: ``lax.top_k``'s rule) and the window of the sorted axis returned:
    ``size`` positions (None: to the end) from ``start`` (``top_k``'s ``k`` is ``size=k``)."""

    axis: int
    descending: bool = False
    total_order: bool = False
    values: bool = True
    indices: bool = False
    index_dtype: str = "int64"
    size: Dim | None = None
    start: Dim = 0
    num_keys: int | None = None
    weak_indices: bool = False

    def __post_init__(self) -> None:
        check_int("SortKeysAttrs", "axis", self.axis)
        if self.num_keys is not None:
            check_int("SortKeysAttrs", "num_keys", self.num_keys)
            if self.num_keys < 1:
                raise ValueError(f"SortKeysAttrs.num_keys must be >= 1, got {self.num_keys}")
        for name in ("descending", "total_order", "values", "indices", "weak_indices"):
            check_flag("SortKeysAttrs", name, getattr(self, name))
        if not (self.values or self.indices):
            raise ValueError("SortKeysAttrs: one of values and indices must be returned")
        index_dtype = dtypes.canonical(self.index_dtype)
        if not dtypes.is_integer(index_dtype):
            raise TypeError(
                f"SortKeysAttrs.index_dtype must be an integer dtype, got {self.index_dtype!r}"
            )
        object.__setattr__(self, "index_dtype", index_dtype)
        if self.size is not None:
            check_dim("SortKeysAttrs", "size", self.size)
        check_dim("SortKeysAttrs", "start", self.start)


# --------------------------------------------------------------------------- reference


def _reference_keys(key: np.ndarray, total: bool) -> list[np.ndarray]:
    """numpy lexsort keys (least significant first) giving the order of one key."""
    if key.dtype.kind != "f":
        return [key.astype(np.int64) if key.dtype == np.bool_ else key]
    wide = key.astype(np.float64)
    nan = np.isnan(wide)
    keys = [np.where(nan, 0.0, wide), nan]
    if total:
        keys.insert(0, ~np.signbit(wide))  # -0.0 before 0.0
    return keys


def reference_order(
    keys: Sequence[np.ndarray], axis: int, descending: bool = False, total: bool = False
) -> np.ndarray:
    """The stable permutation (int64, along ``axis``) sorting ``keys`` lexicographically."""
    moved = [np.moveaxis(np.asarray(k), axis, -1) for k in keys]
    if descending:  # jax's stable descending: reverse, sort ascending, reverse back
        moved = [k[..., ::-1] for k in moved]
    lex = [part for key in reversed(moved) for part in _reference_keys(key, total)]
    shape = moved[0].shape
    if shape[-1] == 0 or not lex:
        order = np.broadcast_to(np.arange(shape[-1]), shape)
    else:
        order = np.lexsort(lex, axis=-1)
    if descending:
        order = (shape[-1] - 1 - order)[..., ::-1]
    return np.moveaxis(np.ascontiguousarray(order).astype(np.int64), -1, axis)


# --------------------------------------------------------------------------- the op


def _axis(op_name: str, keys: Sequence[TensorInfo], attrs: SortKeysAttrs) -> int | None:
    ndims = {k.ndim for k in keys}
    if None in ndims:
        return None
    if len(ndims) != 1:
        fail(op_name, f"every key must have the same rank, got {[k.ndim for k in keys]}")
    ndim = keys[0].ndim
    if ndim == 0:
        fail(op_name, "cannot sort a 0-d array along an axis")
    return normalize_axis(op_name, attrs.axis, ndim)


def _window(ctx: InferContext, attrs: SortKeysAttrs, count: Dim) -> Dim:
    """The length of the returned window of a sorted axis of ``count`` positions."""
    name = "sort"
    ctx.require(Check("nonneg", (attrs.start,), f"{name}: the window must start at >= 0"))
    if attrs.size is None:
        ctx.require(Check("le", (attrs.start, count), f"{name}: the window must start in the axis"))
        return count - attrs.start
    ctx.require(Check("nonneg", (attrs.size,), f"{name}: k must be >= 0"))
    message = f"{name}: k must be at most the size of the sorted axis"
    ctx.require(Check("le", (attrs.start + attrs.size, count), message))
    return attrs.size


@register
class Sort(Op):
    """A stable sort along ``axis`` by the first ``num_keys`` operands (the first most
    significant): the operands in sorted order and/or the sorting positions (see the
    module doc)."""

    name = "sort"
    Attrs = SortKeysAttrs
    pattern = "opaque"
    num_inputs = None

    def infer(self, args: Sequence[StructInfo], attrs, ctx: InferContext) -> StructInfo:
        if not args:
            raise TypeError("sort takes at least one key")
        keys = tensor_args(self.name, args)
        if attrs.num_keys is not None and attrs.num_keys > len(keys):
            fail(self.name, f"num_keys={attrs.num_keys} but only {len(keys)} operand(s)")
        axis = _axis(self.name, keys, attrs)
        known = [k.shape for k in keys if k.shape is not None]
        results = []
        if axis is None or len(known) < len(keys):
            shape = None
        else:
            for other in keys[1:]:
                for a, (d0, d1) in enumerate(zip(keys[0].shape, other.shape)):
                    require_equal(ctx, d0, d1, f"every key must have the same shape (axis {a})")
            shape = list(keys[0].shape)
            shape[axis] = _window(ctx, attrs, shape[axis])
        ndim = keys[0].ndim
        if attrs.values:  # each keeps its operand's weak type, as jax's sort
            results.extend(TensorInfo(shape, k.dtype, ndim, k.weak) for k in keys)
        if attrs.indices:
            weak = attrs.weak_indices and keys[0].weak
            results.append(TensorInfo(shape, attrs.index_dtype, ndim, weak))
        return results[0] if len(results) == 1 else TupleInfo(tuple(results))

    def reference(self, *arrays: object, attrs=None) -> object:
        keys = [reference_input(a) for a in arrays]
        axis = normalize_axis(self.name, attrs.axis, keys[0].ndim)
        compared = keys[: attrs.num_keys]
        order = reference_order(compared, axis, attrs.descending, attrs.total_order)
        start = int(attrs.start)
        stop = order.shape[axis] if attrs.size is None else start + int(attrs.size)
        order = np.take(order, np.arange(start, stop), axis=axis)
        results = []
        if attrs.values:
            results.extend(np.take_along_axis(k, order, axis=axis) for k in keys)
        if attrs.indices:
            results.append(order.astype(dtypes.to_numpy(attrs.index_dtype)))
        return results[0] if len(results) == 1 else tuple(results)

    def lower(self, arg_infos: Sequence[StructInfo], attrs, out_info: StructInfo) -> PrimFunc:
        """Rows in parallel, each merge-sorted in its own buffers (see the module doc)."""
        dims = KernelDims()
        keys = placeholders(dims, arg_infos, [f"x{k}" for k in range(len(arg_infos))])
        shape = tuple(keys[0].shape)
        axis = attrs.axis % len(shape)
        fields = out_info.fields if isinstance(out_info, TupleInfo) else (out_info,)
        names = [f"values{k}" for k in range(len(keys))] if attrs.values else []
        names += ["indices"] if attrs.indices else []
        outs = [
            te.placeholder(dims.output_shape(f), f.dtype, n).buffer for f, n in zip(fields, names)
        ]
        count = shape[axis]
        size = outs[0].shape[axis]
        start = dims.value(attrs.start)
        others = shape[:axis] + shape[axis + 1 :]
        row = arith.sym("row")
        outer = unravel_loop(row, others)

        def at(position: object) -> tuple[object, ...]:
            return outer[:axis] + (position,) + outer[axis:]

        def local(name: str, dtype: str) -> Buffer:
            return Buffer(name, (count + 1,), dtype, scope="local")

        lanes = [
            Lane(local(f"key{k}_a", x.dtype), local(f"key{k}_b", x.dtype), lambda p: (p,))
            for k, x in enumerate(keys)
        ]
        if attrs.indices:
            lanes.append(Lane(local("pos_a", "int64"), local("pos_b", "int64"), lambda p: (p,)))
        state = Scalars(dict.fromkeys(SCALARS, "int64"))

        def before(read, j: PrimExpr, i: PrimExpr):
            compared = range(len(keys) if attrs.num_keys is None else attrs.num_keys)
            pairs = [(read(k, j), read(k, i)) for k in compared]
            if attrs.descending:
                pairs = [(b, a) for a, b in pairs]
            return None, _lexicographic(pairs, attrs.total_order)

        sorter = MergeSort(count, lanes, before, state, "m")
        p, q = arith.sym("p"), arith.sym("q")
        loads = [BufferStore(lane.a, x[at(p)], (p,)) for lane, x in zip(lanes, keys)]
        if attrs.indices:
            loads.append(BufferStore(lanes[-1].a, as_expr(p), (p,)))
        stores = []
        if attrs.values:
            stores.extend(
                BufferStore(outs[k], sorter.result(k, start + q), at(q)) for k in range(len(keys))
            )
        if attrs.indices:
            position = cast(sorter.result(len(lanes) - 1, start + q), attrs.index_dtype)
            stores.append(BufferStore(outs[-1], position, at(q)))
        spares = [BufferStore(b, as_expr(0, b.dtype), (count,)) for l in lanes for b in (l.a, l.b)]
        body = seq(
            *spares,
            For(p, 0, count, "serial", seq(*loads)),
            sorter.sort(),
            For(q, 0, size, "serial", seq(*stores)),
        )
        body = state.allocate(body)
        for lane in reversed(lanes):
            body = Allocate(lane.a, Allocate(lane.b, body))
        nest = For(row, 0, num_elements(others), "parallel", body)
        buffers = [x.buffer for x in keys] + outs
        return PrimFunc(self.name, tuple(buffers), nest, num_outputs=len(outs))
