"""``searchsorted``: binary search of every query in a sorted 1-d array.

``searchsorted(a, v)`` gives, for every element of ``v``, the position where it would
be inserted into ``a`` keeping it sorted: before the equal elements (``side="left"``)
or after them (``"right"``), in the sort order of :mod:`relaxjax.ops.sort` (NaN last,
``-0.0`` equal to ``0.0``). The search is jax's, step for step, so the positions are
jax's even when ``a`` is not sorted::

    low, high = 0, n
    repeat ceil(log2(n + 1)) times:
        mid = (low + high) // 2
        if v <= a[mid] (left) / v < a[mid] (right):  high = mid
        else:                                        low = mid
    result = high

The queries run in parallel. With ``member=True`` the result is instead whether the
query is in ``a`` (``a[position] == v``: NaN is never found, ``-0.0`` finds ``0.0``),
which ``isin`` and the set operations use.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from relaxjax import arith, dtypes
from relaxjax.ir import StructInfo, TensorInfo
from relaxjax.ops.attr_checks import check_flag
from relaxjax.ops.axes import unravel_loop
from relaxjax.ops.base import (
    InferContext,
    Op,
    fail,
    num_elements,
    reference_input,
    register,
    tensor_args,
)
from relaxjax.ops.kernel import KernelDims, placeholders
from relaxjax.ops.merge_sort import order_less
from relaxjax.ops.serial import Scalars, let_index, seq, when
from relaxjax.tir import (
    BufferStore,
    For,
    PrimFunc,
    cast,
    eq,
    if_then_else,
    logical_not,
    select,
    te,
)
from relaxjax.tir.expr import as_expr

__all__ = ["SearchAttrs", "reference_search"]

#: Enough halvings for any int64-indexed array.
SEARCH_LEVELS = 64


@dataclass(frozen=True, slots=True)
class SearchAttrs:
    """Attributes of ``searchsorted``: ``side`` (``"left"``/``"right"``), the result
    ``dtype`` (an integer dtype), or ``member`` (a bool result: whether each query is
    in the array)."""

    side: str = "left"
    dtype: str = "int32"
    member: bool = False

    def __post_init__(self) -> None:
        if self.side not in ("left", "right"):
            raise ValueError(f"side must be 'left' or 'right', got {self.side!r}")
        check_flag("SearchAttrs", "member", self.member)
        dtype = dtypes.canonical(self.dtype)
        if not dtypes.is_integer(dtype):
            raise TypeError(f"SearchAttrs.dtype must be an integer dtype, got {self.dtype!r}")
        object.__setattr__(self, "dtype", dtype)


def _less(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Elementwise ``x`` sorts strictly before ``y`` (NaN last)."""
    if x.dtype.kind != "f":
        return x < y
    return (x < y) | (np.isnan(y) & ~np.isnan(x))


def reference_search(a: np.ndarray, v: np.ndarray, side: str) -> np.ndarray:
    """jax's binary search (int64 positions), for any ``a``."""
    n = len(a)
    low = np.zeros(v.shape, np.int64)
    high = np.full(v.shape, n, np.int64)
    levels = int(np.ceil(np.log2(n + 1))) if n else 0
    for _ in range(levels):
        mid = (low + high) // 2
        probe = a[np.minimum(mid, n - 1)]
        left = ~_less(probe, v) if side == "left" else _less(v, probe)
        low, high = np.where(left, low, mid), np.where(left, mid, high)
    return high


@register
class SearchSorted(Op):
    """The insertion positions of ``v``'s elements in the sorted 1-d ``a`` (or whether
    they are in it, ``member``); see the module doc."""

    name = "searchsorted"
    Attrs = SearchAttrs
    pattern = "opaque"
    num_inputs = 2

    def infer(self, args: Sequence[StructInfo], attrs, ctx: InferContext) -> StructInfo:
        a, v = tensor_args(self.name, args, 2)
        if a.ndim not in (None, 1):
            fail(self.name, f"a should be 1-dimensional, got {a!r}")
        if a.dtype != v.dtype:
            fail(self.name, f"a and v must have one dtype, got {a.dtype} and {v.dtype}")
        dtype = "bool" if attrs.member else attrs.dtype
        return TensorInfo(v.shape, dtype, v.ndim)

    def reference(self, *arrays: object, attrs=None) -> np.ndarray:
        attrs = SearchAttrs() if attrs is None else attrs
        a, v = reference_input(arrays[0]), reference_input(arrays[1])
        positions = reference_search(a, v, attrs.side)
        if not attrs.member:
            return positions.astype(dtypes.to_numpy(attrs.dtype))
        if len(a) == 0:
            return np.zeros(v.shape, bool)
        return (positions < len(a)) & (a[np.minimum(positions, len(a) - 1)] == v)

    def lower(self, arg_infos: Sequence[StructInfo], attrs, out_info: StructInfo) -> PrimFunc:
        """One binary search per query, the queries in parallel."""
        dims = KernelDims()
        a, v = placeholders(dims, arg_infos[:2], ("a", "v"))
        out = te.placeholder(v.shape, "bool" if attrs.member else attrs.dtype, "out").buffer
        n = a.shape[0]
        state = Scalars({"low": "int64", "high": "int64", "span": "int64"})
        flat = arith.sym("e")
        where = unravel_loop(flat, v.shape)
        query = v[where]
        last = arith.max_(n - 1, 0)

        def halve(mid: arith.Sym):
            probe = a[arith.min_(mid, last)]
            if attrs.side == "left":
                left = logical_not(order_less(probe, query))
            else:
                left = order_less(query, probe)
            return seq(
                state.set("low", select(left, state.load("low"), as_expr(mid))),
                state.set("high", select(left, as_expr(mid), state.load("high"))),
            )

        step = when(
            state.load("span") <= as_expr(n),
            seq(
                let_index("mid", (state.load("low") + state.load("high")) // 2, halve),
                state.set("span", state.load("span") * 2),
            ),
        )
        level = arith.sym("level")
        if attrs.member:
            high = state.load("high")
            result = if_then_else(high < as_expr(n), eq(a[high], query), as_expr(False, "bool"))
        else:
            result = cast(state.load("high"), attrs.dtype)
        body = seq(
            state.set("low", 0),
            state.set("high", n),
            state.set("span", 1),
            For(level, 0, SEARCH_LEVELS, "serial", step),
            BufferStore(out, result, where),
        )
        nest = For(flat, 0, num_elements(v.shape), "parallel", state.allocate(body))
        return PrimFunc(self.name, (a.buffer, v.buffer, out), nest)
