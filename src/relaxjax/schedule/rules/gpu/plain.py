"""Statements the GPU rules leave unbound (kernels written as plain loops: sorts, scans,
binary searches, counts) as launches.

A ``parallel`` loop (the kernel's author declared its iterations independent, as the
CPU backend runs them on threads) becomes one thread per iteration, over blocks of
``threads`` threads, guarded where they do not divide::

    for row in parallel(n):             for row_b in thread_binding((n + 63) // 64, "blockIdx.x"):
        with allocate((m,), ...) as key:    for row_t in thread_binding(64, "threadIdx.x"):
            ... key[p] ...          ->          if row_b * 64 + row_t < n:
                                                    ... key[row_b * 64 + row_t, p] ...

A temporary of no constant size inside it (``key`` above) becomes a global buffer with
a slice per iteration, allocated around the launch (a thread's registers have a
constant size); constant-size ones stay per thread. Anything else runs on one
thread, in order (``for serial_block in thread_binding(1, thread="blockIdx.x")``),
its temporaries of no constant size in global memory, one copy for every iteration
of the loops around them. A temporary sized by a loop variable stays where it is,
and the launch is refused for it.
"""

from __future__ import annotations

from relaxjax import arith
from relaxjax.arith import Dim
from relaxjax.schedule.tree import Namer
from relaxjax.tir.buffer import Buffer
from relaxjax.tir.expr import BufferLoad, IndexExpr, PrimExpr, binop
from relaxjax.tir.functor import StmtMutator, substitute
from relaxjax.tir.stmt import Allocate, BufferStore, For, IfThenElse, Stmt

__all__ = ["is_parallel_nest", "parallel_launch", "serial_launch"]


def _movable(buffer: Buffer, outer: frozenset[str]) -> bool:
    """A temporary of no constant size whose shape uses only ``outer`` symbols."""
    size = buffer.size()
    return (
        buffer.scope != "global"
        and not isinstance(size, int)
        and {s.name for s in arith.free_symbols(size)} <= outer
    )


class _Hoist(StmtMutator):
    """Drops the allocations of movable temporaries wherever they are nested and gives
    them to global memory (``moved``), each with ``lead`` axes in front indexed by
    ``index`` (none for a serial launch)."""

    def __init__(self, outer: frozenset[str], lead: tuple[Dim, ...], index: tuple[Dim, ...]):
        self.outer, self.lead, self.index = outer, lead, index
        self.moved: dict[str, Buffer] = {}

    def visit_Allocate(self, stmt: Allocate) -> Stmt:
        buffer = stmt.buffer
        taken = self.moved.get(buffer.name)
        if _movable(buffer, self.outer) and (
            taken is None or taken.shape[len(self.lead) :] == buffer.shape
        ):
            self.moved[buffer.name] = Buffer(buffer.name, self.lead + buffer.shape, buffer.dtype)
            return self.visit_stmt(stmt.body)
        return super().visit_Allocate(stmt)

    def _indices(self, buffer: Buffer, indices) -> tuple:
        return self.index + tuple(self.visit_index(i) for i in indices)

    def visit_BufferLoad(self, expr: BufferLoad) -> PrimExpr:
        if expr.buffer.name not in self.moved or not _movable(expr.buffer, self.outer):
            return super().visit_BufferLoad(expr)
        return BufferLoad(self.moved[expr.buffer.name], self._indices(expr.buffer, expr.indices))

    def visit_BufferStore(self, stmt: BufferStore) -> Stmt:
        if stmt.buffer.name not in self.moved or not _movable(stmt.buffer, self.outer):
            return super().visit_BufferStore(stmt)
        new = self.moved[stmt.buffer.name]
        indices = self._indices(stmt.buffer, stmt.indices)
        return BufferStore(new, self.visit_expr(stmt.value), indices)


def _around(launch: Stmt, hoist: _Hoist) -> Stmt:
    for buffer in reversed(list(hoist.moved.values())):
        launch = Allocate(buffer, launch)
    return launch


def serial_launch(body: Stmt, namer: Namer, outer: frozenset[str]) -> Stmt:
    """``body`` run by one thread (see the module doc); ``outer`` names the kernel's
    symbols."""
    hoist = _Hoist(outer, (), ())
    body = hoist.visit_stmt(body)
    launch = For(
        namer.fresh_sym("serial_block"), 0, 1, "thread_binding", body, thread_tag="blockIdx.x"
    )
    return _around(launch, hoist)


def is_parallel_nest(stmt: Stmt, outer: frozenset[str]) -> bool:
    """A ``parallel`` loop whose range uses only the kernel's symbols."""
    if not (isinstance(stmt, For) and stmt.kind == "parallel"):
        return False
    names = arith.free_symbols(stmt.start) | arith.free_symbols(stmt.extent)
    return {s.name for s in names} <= outer


def parallel_launch(loop: For, namer: Namer, outer: frozenset[str], threads: int) -> Stmt:
    """The ``parallel`` loop ``loop`` (:func:`is_parallel_nest`) as a thread per
    iteration (see the module doc)."""
    hoist = _Hoist(outer, (loop.extent,), (loop.var - loop.start,))
    body = hoist.visit_stmt(loop.body)
    base = loop.var.name
    lane = namer.fresh_sym(f"{base}_t")
    if isinstance(loop.extent, int) and loop.extent <= threads:
        body = substitute(body, {loop.var: loop.start + lane})
        launch = For(lane, 0, loop.extent, "thread_binding", body, thread_tag="threadIdx.x")
        return _around(launch, hoist)
    block = namer.fresh_sym(f"{base}_b")
    index = block * threads + lane
    guard = binop("<", IndexExpr(index), IndexExpr(loop.extent))
    body = IfThenElse(guard, substitute(body, {loop.var: loop.start + index}))
    inner = For(lane, 0, threads, "thread_binding", body, thread_tag="threadIdx.x")
    blocks = (loop.extent + threads - 1) // threads
    launch = For(block, 0, blocks, "thread_binding", inner, thread_tag="blockIdx.x")
    return _around(launch, hoist)
