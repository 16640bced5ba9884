"""Loop bounds from guards: ``for v: if v + r < n: body`` -> ``for v in range(n - r): body``.

A split whose factor does not divide the extent guards its blocks with a predicate
(``k_0 * 256 + k_1 < k``); once the blocks are lowered (:mod:`.flatten`) the guard
is an ``if`` around the loop body's innermost statement. Testing it on every
iteration costs little, but it hides the loop's real trip count, and it puts the
accesses under a condition that buffer staging (:mod:`.staging`) cannot see
through. ``tighten_loops`` moves each such condition into the bound of the loop it
constrains::

    for k_1 in range(256):                      for k_1 in range(max(0, min(256, k - k_0 * 256))):
        for j_1 in vectorized(32):      ->          for j_1 in vectorized(32):
            if k_0 * 256 + k_1 < k:                     C[...] = ...
                C[...] = ...

A condition moves only when it is an affine comparison increasing in one loop
variable (so it holds on a prefix of the loop's range), the other loops between
that loop and the ``if`` do not occur in it, and the path from the loop to the
``if`` is a perfect nest (nothing else runs in those loops), so the skipped
iterations did nothing. Other conditions stay where they are.
"""

from __future__ import annotations

from relaxjax import arith
from relaxjax.tir.expr import BinOp, IndexExpr, IntImm, PrimExpr
from relaxjax.tir.function import PrimFunc
from relaxjax.tir.functor import StmtMutator
from relaxjax.tir.math import logical_and
from relaxjax.tir.stmt import For, IfThenElse, Stmt

__all__ = ["tighten_loops"]

Dim = arith.Dim


def _conjuncts(condition: PrimExpr) -> list[PrimExpr]:
    if isinstance(condition, BinOp) and condition.op == "and":
        return _conjuncts(condition.a) + _conjuncts(condition.b)
    return [condition]


def _dim(expr: PrimExpr) -> Dim | None:
    if isinstance(expr, IndexExpr):
        return expr.index_dim
    if isinstance(expr, IntImm) and expr.dtype != "bool":
        return expr.value
    return None


def _negative_part(term: PrimExpr) -> Dim | None:
    """``e`` such that ``term`` is ``e < 0`` (index comparisons only)."""
    if not isinstance(term, BinOp) or term.op not in ("<", "<=", ">", ">="):
        return None
    a, b = _dim(term.a), _dim(term.b)
    if a is None or b is None:
        return None
    if term.op == "<":
        return a - b
    if term.op == "<=":
        return a - b - 1
    if term.op == ">":
        return b - a
    return b - a - 1


def _prefix_stop(term: PrimExpr, loop: For) -> Dim | None:
    """``X`` such that ``term`` holds exactly for ``loop.var < X``, or None."""
    e = _negative_part(term)
    if e is None or loop.var not in arith.free_symbols(e):
        return None
    step = arith.subs(e, {loop.var: loop.var + 1}) - e
    if not isinstance(step, int) or step <= 0:
        return None
    rest = arith.subs(e, {loop.var: 0})
    return (-rest + step - 1) // step


def _tightened_extent(loop: For, stop: Dim) -> Dim:
    return arith.max_(0, arith.min_(loop.extent, stop - loop.start))


def _path_to_guard(loop: For) -> tuple[list[For], IfThenElse | None]:
    """The loops strictly inside ``loop`` down to an ``if`` that is the whole body."""
    inner: list[For] = []
    stmt = loop.body
    while isinstance(stmt, For):
        inner.append(stmt)
        stmt = stmt.body
    if isinstance(stmt, IfThenElse) and stmt.else_case is None:
        return inner, stmt
    return inner, None


def _rebuild(loop: For, inner: list[For], guard: IfThenElse, kept: list[PrimExpr], extent: Dim):
    stmt: Stmt = guard.then_case
    if kept:
        condition = kept[0]
        for term in kept[1:]:
            condition = logical_and(condition, term)
        stmt = IfThenElse(condition, stmt)
    for node in reversed(inner):
        stmt = For(
            node.var, node.start, node.extent, node.kind, stmt, node.annotations, node.thread_tag
        )
    return For(loop.var, loop.start, extent, loop.kind, stmt, loop.annotations, loop.thread_tag)


class _Tighten(StmtMutator):
    def visit_For(self, stmt: For) -> Stmt:
        loop = super().visit_For(stmt)
        if not isinstance(loop, For):
            return loop
        inner, guard = _path_to_guard(loop)
        if guard is None:
            return loop
        between = {node.var for node in inner}
        kept, extent = [], loop.extent
        for term in _conjuncts(guard.condition):
            negative = _negative_part(term)
            stop = None
            if negative is not None and not (arith.free_symbols(negative) & between):
                stop = _prefix_stop(term, loop)
            if stop is None:
                kept.append(term)
            else:
                extent = _tightened_extent(
                    For(loop.var, loop.start, extent, loop.kind, loop.body), stop
                )
        if len(kept) == len(_conjuncts(guard.condition)):
            return loop
        return _rebuild(loop, inner, guard, kept, extent)


def tighten_loops(func: PrimFunc) -> PrimFunc:
    """``func`` with loop guards moved into loop bounds (see the module doc)."""
    body = _Tighten().visit_stmt(func.body)
    return func if body is func.body else func.with_body(body)
