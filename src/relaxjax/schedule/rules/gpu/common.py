"""Steps the GPU rules share: loop nests at the top of a kernel, binding a loop to
blocks and threads, and single-thread launches for what cannot be spread."""

from __future__ import annotations

from relaxjax import arith
from relaxjax.errors import ScheduleError, VerifyError
from relaxjax.schedule.gpu import finish_gpu
from relaxjax.schedule.handles import LoopRV
from relaxjax.schedule.rules.gpu.plain import is_parallel_nest, parallel_launch, serial_launch
from relaxjax.schedule.rules.gpu.target import GpuParams
from relaxjax.schedule.rules.patterns import root_block
from relaxjax.schedule.schedule import Schedule
from relaxjax.schedule.scope import instances_under
from relaxjax.schedule.tree import Namer, flatten, names_in
from relaxjax.tir.expr import BufferLoad
from relaxjax.tir.function import PrimFunc
from relaxjax.tir.functor import StmtVisitor
from relaxjax.tir.stmt import Block, BlockRealize, BufferStore, For, Stmt, seq

__all__ = ["attempt", "bind_spread", "block_size", "finish", "top_chains", "wrap_unbound"]


def top_chains(sch: Schedule) -> list[list[LoopRV]]:
    """For each statement of the root block's body: its perfectly nested loops from the
    top (each the whole body of the previous), as handles; [] for a statement that is
    not a loop or holds no block."""
    root = root_block(sch.func)
    if root is None:
        return []
    chains = []
    for stmt in flatten(root.body):
        realizes = instances_under(stmt)
        if not isinstance(stmt, For) or not realizes:
            chains.append([])
            continue
        names = []
        node: Stmt = stmt
        while isinstance(node, For):
            names.append(node.var.name)
            node = node.body
        loops = sch.get_loops(sch.get_block(realizes[0][0].block.name))
        by_name = {lp.name: lp for lp in loops}
        chains.append([by_name[n] for n in names if n in by_name])
    return chains


def block_size(inner: arith.Dim, threads: int, most: int = 1024) -> int:
    """Threads per block for a loop fused from loops whose inner ones span ``inner``
    iterations: a multiple of ``inner`` (or a divisor of it) when it is a constant, so
    that the split keeps the index math exact (``(f_0 * 192 + f_1) // 192 == f_0``)
    and ``bind`` can prove the iterations apart; ``threads`` otherwise."""
    if not isinstance(inner, int) or inner <= 1:
        return threads
    if inner <= most:
        return inner * max(1, threads // inner)
    size = threads
    while size >= 32:
        if inner % size == 0:
            return size
        size //= 2
    return threads


def bind_spread(sch: Schedule, loops: list[LoopRV], threads: int) -> None:
    """Fuse ``loops`` (perfectly nested) and spread them over blocks of about
    ``threads`` threads (one block when they fit)."""
    extents = [sch.get_loop_node(loop).extent for loop in loops]
    lead = next((i for i, e in enumerate(extents) if e != 1), 0)
    inner: arith.Dim = 1
    for extent in extents[lead + 1 :]:  # leading unit loops (a batch of 1) add nothing
        inner = inner * extent
    size = block_size(inner, threads)
    loop = loops[0] if len(loops) == 1 else sch.fuse(*loops)
    extent = sch.get_loop_node(loop).extent
    if arith.compare(extent, "<=", size) is True:
        sch.bind(loop, "threadIdx.x")
        return
    outer, inner_loop = sch.split(loop, factors=[None, size])
    sch.bind(outer, "blockIdx.x")
    sch.bind(inner_loop, "threadIdx.x")


def _has_effects(stmt: Stmt) -> bool:
    found = []

    class _Find(StmtVisitor):
        def visit_BufferStore(self, store: BufferStore) -> None:
            found.append(store)

        def visit_BufferLoad(self, load: BufferLoad) -> None:
            found.append(load)

    _Find().visit_stmt(stmt)
    return bool(found)


def _is_launch(stmt: Stmt) -> bool:
    return isinstance(stmt, For) and stmt.kind == "thread_binding"


def wrap_unbound(func: PrimFunc, threads: int | None = None) -> PrimFunc:
    """``func`` with every top-level statement that is not thread-bound run by one
    thread (``for u in thread_binding(1, thread="blockIdx.x")``): correct, serial. A
    kernel without a root block (written as plain loops) runs statement by statement:
    a ``parallel`` loop as a thread per iteration when ``threads`` (per block) is
    given, anything else on one thread (:mod:`.plain`)."""
    root = func.body
    namer = Namer(names_in(func))
    outer = frozenset(s.name for s in func.symbols())
    if not (isinstance(root, BlockRealize) and not root.block.iter_vars):
        if _has_launch(root) or not _has_effects(root):
            return func
        stmts = [
            stmt
            if not _has_effects(stmt)
            else parallel_launch(stmt, namer, outer, threads)
            if threads is not None and is_parallel_nest(stmt, outer)
            else serial_launch(stmt, namer, outer)
            for stmt in flatten(root)
        ]
        return func.with_body(seq(*stmts))
    stmts = []
    changed = False
    for stmt in flatten(root.block.body):
        if _is_launch(stmt) or not _has_effects(stmt):
            stmts.append(stmt)
            continue
        stmts.append(serial_launch(stmt, namer, outer))
        changed = True
    if not changed:
        return func
    block = root.block
    new = Block(
        block.name,
        block.iter_vars,
        block.reads,
        block.writes,
        block.init,
        seq(*stmts),
        block.alloc_buffers,
        block.annotations,
    )
    return func.with_body(BlockRealize(root.iter_values, root.predicate, new))


def _has_launch(stmt: Stmt) -> bool:
    found = []

    class _Find(StmtVisitor):
        def visit_For(self, loop: For) -> None:
            if _is_launch(loop):
                found.append(loop)
            super().visit_For(loop)

    _Find().visit_stmt(stmt)
    return bool(found)


def finish(sch: Schedule, params: GpuParams) -> PrimFunc:
    """The scheduled kernel as GPU launches (what is left unbound runs on one thread;
    the ``parallel`` loops of a kernel written as plain loops on a thread each, unless
    the launch checks refuse that, then on one thread too)."""
    serial = wrap_unbound(sch.func)
    try:
        spread = wrap_unbound(sch.func, params.loop_threads)
        if str(spread) != str(serial):
            return finish_gpu(spread, params.limits)
    except (ScheduleError, VerifyError):
        pass  # the loops are not independent as the checks see them: serial launches
    return finish_gpu(serial, params.limits)


def attempt(sch: Schedule, step) -> Schedule | None:
    """``step(copy)`` on a copy of ``sch``: the copy when every primitive held, else None."""
    trial = sch.copy()
    try:
        step(trial)
    except ScheduleError:
        return None
    return trial
