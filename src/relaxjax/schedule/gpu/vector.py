"""Vectorized loops in GPU launches: which accesses move with the lanes, and the loops
the CUDA backend may emit as vector loads and stores.

In a finished kernel every ``vectorized`` loop satisfies :func:`is_vector_loop`: a
constant extent whose lanes span at most 16 bytes of every buffer it touches, a body
of stores and value lets only (no loops, conditions or allocations), and every access
either *contiguous* (its innermost index moves by one element per lane from a start
that is a multiple of the lane count, every other stride of the buffer a multiple of
it: one aligned vector access, given buffers aligned to 16 bytes) or *uniform* (the
same element for every lane). ``finish_gpu`` first moves guards that are the same for
every lane out of the loop, then turns any other vectorized loop into a serial one
(``demote_vectors``), so a backend never needs to scalarise one.
"""

from __future__ import annotations

from relaxjax import arith, dtypes
from relaxjax.tir.analysis import collect_accesses, free_symbols
from relaxjax.tir.buffer import Buffer
from relaxjax.tir.expr import PrimExpr
from relaxjax.tir.function import PrimFunc
from relaxjax.tir.functor import StmtMutator, StmtVisitor
from relaxjax.tir.stmt import Allocate, For, IfThenElse, Stmt

__all__ = ["VECTOR_BYTES", "demote_vectors", "is_vector_loop", "vector_access"]

#: The widest vector access (128 bits).
VECTOR_BYTES = 16


def vector_access(buffer: Buffer, indices, var: arith.Sym, lanes: int) -> str:
    """How an access behaves across the lanes of a vectorized loop over ``var``:
    ``"contiguous"`` (its innermost index is ``var`` plus terms free of it, every other
    stride of the buffer is a multiple of ``lanes`` and does not move with ``var``),
    ``"uniform"`` (does not move with ``var``), or ``"other"``."""
    uses = [
        isinstance(i, PrimExpr) or (not isinstance(i, int) and var in arith.free_symbols(i))
        for i in indices
    ]
    if not any(uses):
        return "uniform"
    if any(uses[:-1]) or isinstance(indices[-1], PrimExpr):
        return "other"
    last = indices[-1]
    if arith.subs(last, {var: var + 1}) - last != 1:
        return "other"
    strides = buffer.strides_or_default()
    if strides[-1] != 1:
        return "other"
    for stride in strides[:-1]:
        if arith.compare(stride % lanes, "==", 0) is not True:
            return "other"
    start = arith.subs(last, {var: 0})
    if arith.compare(start % lanes, "==", 0) is not True:
        return "other"
    return "contiguous"


class _Shape(StmtVisitor):
    def __init__(self):
        self.plain = True

    def visit_For(self, stmt: For) -> None:
        self.plain = False

    def visit_IfThenElse(self, stmt: IfThenElse) -> None:
        self.plain = False

    def visit_Allocate(self, stmt: Allocate) -> None:
        self.plain = False


def is_vector_loop(loop: For) -> bool:
    """Whether a ``vectorized`` loop is one a backend emits as vector accesses (see the
    module doc)."""
    lanes = loop.extent
    if not isinstance(lanes, int) or lanes < 1 or not isinstance(loop.start, int):
        return False
    shape = _Shape()
    shape.visit_stmt(loop.body)
    if not shape.plain:
        return False
    accesses = collect_accesses(loop.body)
    for access in accesses:
        if lanes * dtypes.itemsize(access.buffer.dtype) > VECTOR_BYTES:
            return False
        indices = [
            i
            if isinstance(i, (int, PrimExpr))
            else arith.subs(i, {loop.var: loop.var + loop.start})
            for i in access.indices
        ]
        if vector_access(access.buffer, indices, loop.var, lanes) == "other":
            return False
    return True


def _hoisted(loop: For) -> Stmt:
    """``for v in vectorized(L): if c: S`` -> ``if c: for v in vectorized(L): S`` when
    ``c`` is the same for every lane (a tail guard of the threads)."""
    body = loop.body
    if (
        isinstance(body, IfThenElse)
        and body.else_case is None
        and loop.var not in free_symbols(body.condition)
    ):
        inner = For(loop.var, loop.start, loop.extent, loop.kind, body.then_case, loop.annotations)
        return IfThenElse(body.condition, _hoisted(inner))
    return loop


class _Demote(StmtMutator):
    def visit_For(self, stmt: For) -> Stmt:
        new = super().visit_For(stmt)
        if not (isinstance(new, For) and new.kind == "vectorized"):
            return new
        new = _hoisted(new)
        loop = new
        while isinstance(loop, IfThenElse):
            loop = loop.then_case
        if is_vector_loop(loop):
            return new
        return For(stmt.var, stmt.start, stmt.extent, "serial", stmt.body, stmt.annotations)


def demote_vectors(func: PrimFunc) -> PrimFunc:
    """``func`` with lane-independent guards moved out of vectorized loops, and every
    vectorized loop that is not then a vector loop made serial."""
    body = _Demote().visit_stmt(func.body)
    return func if body is func.body else func.with_body(body)
