"""Double buffering of shared-memory tiles in a finished GPU kernel: the next step's
tiles load while the threads compute on the current ones, one barrier per step.

A loop of the form the matmul rule leaves (``finish_gpu`` placed the barriers)::

    for k_0 in range(K0):                        A_shared[0, ...] = A[<k_0 = 0>]
        syncthreads()                            syncthreads()
        A_shared[...] = A[<k_0>]         ->      for k_0 in range(K0):
        syncthreads()                                if k_0 + 1 < K0:
        ... = A_shared[...]                              A_shared[(k_0 + 1) % 2, ...] = A[<k_0 + 1>]
                                                     ... = A_shared[k_0 % 2, ...]
                                                     syncthreads()

Each tile gets a leading stage axis of 2. Why one barrier suffices: step ``k`` writes
stage ``(k + 1) % 2`` while the threads read stage ``k % 2``; the barrier at the end
of step ``k`` orders the reads of stage ``k % 2`` before step ``k + 1`` overwrites it,
and the writes of stage ``(k + 1) % 2`` before step ``k + 1`` reads them. The
condition is the same for every thread, so no barrier sits where threads diverge.
The prologue's loads are guarded as in the loop (zero-padded tiles), so it is safe
when ``K0 == 0``. A kernel whose doubled tiles exceed the shared-memory limit, or
whose loop has another form, is returned as it is.
"""

from __future__ import annotations

from relaxjax import dtypes
from relaxjax.schedule.gpu.checks import check_launches
from relaxjax.schedule.gpu.limits import GpuLimits
from relaxjax.schedule.tree import Namer, names_in, renamed_copy
from relaxjax.tir.buffer import Buffer
from relaxjax.tir.expr import BufferLoad, IndexExpr, PrimExpr, binop
from relaxjax.tir.function import PrimFunc
from relaxjax.tir.functor import StmtMutator, StmtVisitor, substitute
from relaxjax.tir.simt import is_barrier, syncthreads
from relaxjax.tir.stmt import Allocate, BufferStore, For, IfThenElse, SeqStmt, Stmt, seq

__all__ = ["double_buffer"]

STAGES = 2


def _written(stmts) -> set[str]:
    names: set[str] = set()

    class _Find(StmtVisitor):
        def visit_BufferStore(self, stmt: BufferStore) -> None:
            names.add(stmt.buffer.name)
            super().visit_BufferStore(stmt)

    for stmt in stmts:
        _Find().visit_stmt(stmt)
    return names


def _parts(loop: For, tiles: set[str]):
    """``(copies, compute)`` of a step loop ``sync; copies; sync; compute``, or None."""
    if not isinstance(loop.body, SeqStmt) or loop.start != 0:
        return None
    stmts = loop.body.stmts
    barriers = [i for i, s in enumerate(stmts) if is_barrier(s)]
    if len(barriers) != 2 or barriers[0] != 0:
        return None
    copies, compute = stmts[1 : barriers[1]], stmts[barriers[1] + 1 :]
    if not copies or not compute:
        return None
    if _written(copies) - tiles or not _written(copies) or _written(compute) & tiles:
        return None
    return copies, compute


class _Stage(StmtMutator):
    """Accesses of the tiles with the stage index in front."""

    def __init__(self, staged: dict[str, Buffer], stage):
        self.staged, self.stage = staged, stage

    def visit_BufferLoad(self, expr: BufferLoad) -> PrimExpr:
        new = self.staged.get(expr.buffer.name)
        if new is None:
            return super().visit_BufferLoad(expr)
        indices = tuple(self.visit_index(i) for i in expr.indices)
        return BufferLoad(new, (self.stage,) + indices)

    def visit_BufferStore(self, stmt: BufferStore) -> Stmt:
        new = self.staged.get(stmt.buffer.name)
        if new is None:
            return super().visit_BufferStore(stmt)
        indices = tuple(self.visit_index(i) for i in stmt.indices)
        return BufferStore(new, self.visit_expr(stmt.value), (self.stage,) + indices)


def _pipelined(loop: For, copies, compute, staged: dict[str, Buffer], namer: Namer) -> Stmt:
    k = loop.var
    loads = _Stage(staged, k % STAGES).visit_stmt(seq(*copies))
    reads = _Stage(staged, k % STAGES).visit_stmt(seq(*compute))
    prologue, _ = renamed_copy(substitute(loads, {k: 0}), namer, "first")
    following = substitute(loads, {k: k + 1})
    more = binop("<", IndexExpr(k + 1), IndexExpr(loop.extent))
    body = seq(IfThenElse(more, following), reads, syncthreads())
    steps = For(k, loop.start, loop.extent, loop.kind, body, loop.annotations, loop.thread_tag)
    return seq(prologue, syncthreads(), steps)


class _DoubleBuffer(StmtMutator):
    def __init__(self, tiles: set[str], namer: Namer):
        self.tiles, self.namer = tiles, namer
        self.staged: dict[str, Buffer] = {}
        self.done = False

    def visit_Allocate(self, stmt: Allocate) -> Stmt:
        if stmt.buffer.name not in self.tiles:
            return super().visit_Allocate(stmt)
        old = stmt.buffer
        new = Buffer(old.name, (STAGES,) + old.shape, old.dtype, None, old.scope)
        self.staged[old.name] = new
        body = self.visit_stmt(stmt.body)
        return Allocate(new if self.done else old, body)

    def visit_For(self, stmt: For) -> Stmt:
        parts = _parts(stmt, set(self.staged))
        if parts is None or self.done:
            return super().visit_For(stmt)
        self.done = True
        return _pipelined(stmt, *parts, self.staged, self.namer)


def _bytes(buffers) -> int:
    return sum(b.size() * dtypes.itemsize(b.dtype) for b in buffers)


def double_buffer(func: PrimFunc, tiles: set[str], limits: GpuLimits) -> PrimFunc:
    """``func`` (finished, one launch staging ``tiles`` through shared memory in a step
    loop) with the tiles double-buffered (see the module doc)."""
    mutator = _DoubleBuffer(tiles, Namer(names_in(func)))
    body = mutator.visit_stmt(func.body)
    if not mutator.done or set(mutator.staged) != tiles:
        return func
    sizes = [b.size() for b in mutator.staged.values()]
    if not all(isinstance(s, int) for s in sizes):
        return func
    if _bytes(mutator.staged.values()) > limits.max_shared_bytes:
        return func
    staged = func.with_body(body)
    check_launches(staged, limits)  # limits and races as for every finished kernel
    return staged
