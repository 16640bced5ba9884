"""A stable bottom-up merge sort written as TIR statements: the one sort every sorting op
lowers to (``sort`` along an axis, ``top_k``, ``lexsort``, and ``unique``'s
``sort_permutation``).

:class:`MergeSort` builds the statements sorting one row of ``count`` positions. The
row lives in *lanes*: the arrays the sort moves together (keys, original positions),
each a pair of buffers ``(a, b)`` used in turn as source and destination of a pass.
The row starts in the ``a`` buffers; pass ``p`` merges adjacent sorted runs of
``2**p`` positions from one buffer of each pair into the other::

    width = 1; flip = 0
    for level in range(64):              # the most passes an int64-indexed row needs
        if width < count:
            for each block [lo, hi) of 2 * width positions, mid = min(lo + width, count):
                i, j = lo, mid
                for o in range(lo, hi):  # take from the right run only when strictly before
                    if i >= mid or (j < hi and before(j, i)):  dst[o] = src[j]; j += 1
                    else:                                      dst[o] = src[i]; i += 1
            flip = 1 - flip; width = width * 2

so the sort is stable and takes ``ceil(log2 count)`` linear passes. The sorted row is in
the ``b`` buffers when ``flip`` is 1 at the end (:meth:`MergeSort.result`). A block
whose runs are already in order (the last of the left run does not sort after the
first of the right run) is copied without comparisons, so sorted input costs one
comparison per block and pass.

The comparison is the caller's: ``before(source, j, i)`` returns the statements to run
first (or None) and the bool expression "the element at position ``j`` sorts strictly
before the one at ``i``", reading lanes through ``source(lane, position)``. The
statements use :class:`~relaxjax.ops.serial.Scalars` for their state, so the row can run
inside a parallel loop over rows (the scalars are allocated inside its body).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from relaxjax import arith, dtypes
from relaxjax.ops.serial import Scalars, let_index, seq, when
from relaxjax.tir import (
    Buffer,
    BufferStore,
    For,
    PrimExpr,
    Stmt,
    cast,
    eq,
    if_then_else,
    isnan,
    logical_and,
    logical_not,
    logical_or,
    select,
)
from relaxjax.tir.expr import as_expr

__all__ = ["MERGE_LEVELS", "SCALARS", "Lane", "MergeSort", "order_less", "order_same"]

Dim = arith.Dim

#: The most merge passes an int64-indexed row needs (widths 1, 2, 4, ... 2**62).
MERGE_LEVELS = 64

#: The int64 scalars the sort keeps (callers add their own to the same :class:`Scalars`).
SCALARS = ("width", "flip", "i", "j", "less")


@dataclass(frozen=True)
class Lane:
    """One array the sort moves: its two buffers, and how a row position indexes them."""

    a: Buffer
    b: Buffer
    at: Callable[[object], tuple[object, ...]]


Source = Callable[[int, object], PrimExpr]
Before = Callable[[Source, PrimExpr, PrimExpr], tuple[Stmt | None, PrimExpr]]


class MergeSort:
    """The statements of a stable merge sort of one row (see the module doc)."""

    def __init__(
        self, count: Dim, lanes: Sequence[Lane], before: Before, state: Scalars, prefix: str
    ) -> None:
        self.count = count
        self.lanes = tuple(lanes)
        self.before = before
        self.state = state
        self._names = (f"{prefix}{k}" for k in itertools.count())

    def _name(self) -> str:
        return next(self._names)

    def sort(self) -> Stmt:
        """The passes: the row, which starts in the ``a`` buffers, ends sorted in the
        buffers :meth:`result` says."""
        state = self.state
        level = arith.sym(self._name())
        flipped = eq(state.load("flip"), 1)
        forward = self._merge_pass(lambda lane: lane.a, lambda lane: lane.b)
        backward = self._merge_pass(lambda lane: lane.b, lambda lane: lane.a)
        step = when(
            state.load("width") < as_expr(self.count),
            seq(
                when(flipped, backward, forward),
                state.set("flip", as_expr(1, "int64") - state.load("flip")),
                state.set("width", state.load("width") * 2),
            ),
        )
        return seq(
            state.set("width", 1),
            state.set("flip", 0),
            For(level, 0, MERGE_LEVELS, "serial", step),
        )

    def result(self, lane: int, position: object) -> PrimExpr:
        """The sorted row's element at ``position`` of ``lane`` (after :meth:`sort`)."""
        chosen = self.lanes[lane]
        index = chosen.at(position)
        return select(eq(self.state.load("flip"), 1), chosen.b[index], chosen.a[index])

    def _merge_pass(self, source_of, target_of) -> Stmt:
        """Merge each pair of adjacent sorted runs of ``width`` positions."""
        state = self.state
        count = self.count

        def read(lane: int, position: object) -> PrimExpr:
            chosen = self.lanes[lane]
            return source_of(chosen)[chosen.at(position)]

        def move(from_position: PrimExpr, to_position: object) -> Stmt:
            return seq(
                *(
                    BufferStore(
                        target_of(lane),
                        source_of(lane)[lane.at(from_position)],
                        lane.at(to_position),
                    )
                    for lane in self.lanes
                )
            )

        def with_width(w: arith.Sym) -> Stmt:
            block = arith.sym(self._name())
            blocks = (count + w * 2 - 1) // (w * 2)
            lo = block * w * 2
            mid = arith.min_(lo + w, count)
            hi = arith.min_(lo + w * 2, count)
            o = arith.sym(self._name())

            def step(i: arith.Sym, j: arith.Sym) -> Stmt:
                # branchless: both runs are read, the flag picks (a lane holds one spare
                # element past the row, so reading at j == hi stays in bounds)
                left, right = i, j
                prelude, j_first = self.before(read, as_expr(right), as_expr(left))
                take = logical_or(
                    as_expr(i) >= as_expr(mid), logical_and(as_expr(j) < as_expr(hi), j_first)
                )
                flag = state.load("less")

                def store(k: arith.Sym) -> Stmt:
                    return seq(
                        *(
                            BufferStore(
                                target_of(lane), source_of(lane)[lane.at(k)], lane.at(lo + o)
                            )
                            for lane in self.lanes
                        )
                    )

                # the position taken (a select: no branch to mispredict)
                taken = select(eq(flag, 1), as_expr(j), as_expr(i))
                return seq(
                    prelude,
                    state.set("less", _flag(take)),
                    let_index(self._name(), taken, store),
                    state.add("j", flag),
                    state.add("i", as_expr(1, "int64") - flag),
                )

            merge_one = let_index(
                self._name(),
                state.load("i"),
                lambda i: let_index(self._name(), state.load("j"), lambda j: step(i, j)),
            )
            copy = arith.sym(self._name())
            copied = For(copy, 0, hi - lo, "serial", move(as_expr(lo + copy), lo + copy))
            # runs already in order (or no right run) are copied without comparisons
            check_prelude, out_of_order = self.before(read, as_expr(mid), as_expr(mid - 1))
            merged = seq(
                state.set("i", lo),
                state.set("j", mid),
                For(o, 0, hi - lo, "serial", merge_one),
            )
            body = seq(
                state.set("less", 0),
                when(
                    as_expr(mid) < as_expr(hi),
                    seq(check_prelude, state.set("less", _flag(out_of_order))),
                ),
                when(eq(state.load("less"), 1), merged, copied),
            )
            return For(block, 0, blocks, "serial", body)

        return let_index(self._name(), state.load("width"), with_width)


def _comparable(value: PrimExpr) -> PrimExpr:
    """Bools compare as int8 in kernels."""
    return cast(value, "int8") if value.dtype == "bool" else value


def order_less(a: PrimExpr, b: PrimExpr, total: bool = False) -> PrimExpr:
    """``a`` sorts strictly before ``b``: NaN after every number; ``-0.0`` equal to
    ``0.0``, or before it in the ``total`` order."""
    a, b = _comparable(a), _comparable(b)
    if not dtypes.is_floating(a.dtype):
        return a < b
    less = logical_or(a < b, logical_and(isnan(b), logical_not(isnan(a))))
    if not total:
        return less
    zero = as_expr(0, a.dtype)
    both_zero = logical_and(eq(a, zero), eq(b, zero))
    one = as_expr(1, a.dtype)
    # 1 / -0.0 is -inf: the sign of a zero decides
    return if_then_else(both_zero, one / a < one / b, less)


def order_same(a: PrimExpr, b: PrimExpr, total: bool = False) -> PrimExpr:
    """``a`` and ``b`` are equal in the order (NaNs are equal to each other)."""
    a, b = _comparable(a), _comparable(b)
    if not dtypes.is_floating(a.dtype):
        return eq(a, b)
    same = logical_or(eq(a, b), logical_and(isnan(a), isnan(b)))
    if not total:
        return same
    return logical_and(same, logical_not(order_less(a, b, True)))


def _flag(condition: PrimExpr) -> PrimExpr:
    """1 (int64) where ``condition`` holds, else 0."""
    return select(condition, as_expr(1, "int64"), as_expr(0, "int64"))
