"""One kernel, two schedules, chosen at run time by a condition on the symbols.

A kernel compiled once for every value of its symbols sometimes wants a different
loop structure for different values: a matrix product with one row is a
matrix-vector product, bound by reading the matrix once, while one with hundreds of
rows wants register tiles and packed panels. Both schedules of the same kernel mean
the same, so ``if cond: first else: second`` means the same too::

    if m >= 6:
        for j_0 in parallel(n // 32): ...        # tiled
    else:
        for i_v in range(m): ...                 # row by row

``choose(condition, first, second)`` builds that kernel from two lowered kernels of
one signature, renaming the second one's loops and buffers where they clash.
"""

from __future__ import annotations

from relaxjax import arith
from relaxjax.errors import ScheduleError
from relaxjax.tir.buffer import Buffer
from relaxjax.tir.expr import PrimExpr
from relaxjax.tir.function import PrimFunc
from relaxjax.tir.functor import StmtMutator, StmtVisitor, substitute
from relaxjax.tir.stmt import Allocate, For, IfThenElse, LetStmt, Stmt

__all__ = ["choose"]


class _Binders(StmtVisitor):
    def __init__(self):
        self.syms: dict[str, arith.Sym] = {}
        self.buffers: dict[str, Buffer] = {}

    def visit_For(self, stmt: For) -> None:
        self.syms[stmt.var.name] = stmt.var
        super().visit_For(stmt)

    def visit_LetStmt(self, stmt: LetStmt) -> None:
        if isinstance(stmt.var, arith.Sym):
            self.syms[stmt.var.name] = stmt.var
        super().visit_LetStmt(stmt)

    def visit_Allocate(self, stmt: Allocate) -> None:
        self.buffers[stmt.buffer.name] = stmt.buffer
        super().visit_Allocate(stmt)


def _binders(stmt: Stmt) -> _Binders:
    found = _Binders()
    found.visit_stmt(stmt)
    return found


class _RenameBuffers(StmtMutator):
    def __init__(self, mapping: dict[Buffer, Buffer]):
        self.mapping = mapping

    def visit_buffer(self, buffer: Buffer) -> Buffer:
        return self.mapping.get(buffer, buffer)

    def visit_buffer_def(self, buffer: Buffer) -> Buffer:
        return self.mapping.get(buffer, buffer)


def _fresh(name: str, taken: set[str]) -> str:
    count = 1
    while f"{name}_{count}" in taken:
        count += 1
    taken.add(f"{name}_{count}")
    return f"{name}_{count}"


def _renamed(stmt: Stmt, clashing: set[str]) -> Stmt:
    """``stmt`` with the loops, symbols and buffers it binds under a name in
    ``clashing`` renamed to names used nowhere in either."""
    found = _binders(stmt)
    taken = clashing | set(found.syms) | set(found.buffers)
    syms = {
        sym: arith.sym(_fresh(name, taken)) for name, sym in found.syms.items() if name in clashing
    }
    if syms:
        stmt = substitute(stmt, syms)
        found = _binders(stmt)  # buffers whose shapes named a renamed symbol are new objects
    buffers = {
        buf: Buffer(_fresh(name, taken), buf.shape, buf.dtype, buf.strides, buf.scope)
        for name, buf in found.buffers.items()
        if name in clashing
    }
    return _RenameBuffers(buffers).visit_stmt(stmt) if buffers else stmt


def choose(condition: PrimExpr, first: PrimFunc, second: PrimFunc) -> PrimFunc:
    """``if condition: first.body else: second.body`` as one kernel (see the module doc).

    Both kernels must have the same signature and no blocks left; ``ScheduleError``
    otherwise.
    """
    if (first.params, first.num_outputs, first.scalar_params) != (
        second.params,
        second.num_outputs,
        second.scalar_params,
    ):
        raise ScheduleError(
            f"choose: kernels {first.name} and {second.name} have different signatures"
        )
    found = _binders(first.body)
    taken = set(found.syms) | set(found.buffers) | {p.name for p in first.params}
    taken |= {s.name for s in first.symbols()}
    body = IfThenElse(condition, first.body, _renamed(second.body, taken))
    return first.with_body(body)
