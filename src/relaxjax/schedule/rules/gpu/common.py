"""Steps the GPU rules share: loop nests at the top of a kernel, binding a loop to
blocks and threads, and single-thread launches for what cannot be spread."""

from __future__ import annotations

from relaxjax import arith
from relaxjax.errors import ScheduleError
from relaxjax.schedule.gpu import finish_gpu
from relaxjax.schedule.handles import LoopRV
from relaxjax.schedule.rules.gpu.target import GpuParams
from relaxjax.schedule.rules.patterns import root_block
from relaxjax.schedule.schedule import Schedule
from relaxjax.schedule.scope import instances_under
from relaxjax.schedule.tree import Namer, flatten, names_in
from relaxjax.tir.buffer import Buffer
from relaxjax.tir.expr import BufferLoad
from relaxjax.tir.function import PrimFunc
from relaxjax.tir.functor import StmtMutator, StmtVisitor
from relaxjax.tir.stmt import Allocate, Block, BlockRealize, BufferStore, For, Stmt, seq

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
    inner: arith.Dim = 1
    for loop in loops[1:]:
        inner = inner * sch.get_loop_node(loop).extent
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


class _Rescope(StmtMutator):
    def __init__(self, new: dict[str, Buffer]):
        self.new = new

    def visit_buffer(self, buffer: Buffer) -> Buffer:
        return self.new.get(buffer.name, buffer)

    def visit_buffer_def(self, buffer: Buffer) -> Buffer:
        return self.new.get(buffer.name, buffer)


class _Hoist(StmtMutator):
    """Drops the allocations of temporaries of no constant size (not global) whose shape
    uses only ``outer`` symbols, wherever they are nested; ``moved`` holds them as
    global buffers."""

    def __init__(self, outer: frozenset[str]):
        self.outer = outer
        self.moved: dict[str, Buffer] = {}

    def visit_Allocate(self, stmt: Allocate) -> Stmt:
        buffer = stmt.buffer
        size = buffer.size()
        if (
            buffer.scope != "global"
            and not isinstance(size, int)
            and {s.name for s in arith.free_symbols(size)} <= self.outer
            and self.moved.get(buffer.name, buffer).shape == buffer.shape
        ):
            self.moved[buffer.name] = Buffer(
                buffer.name, buffer.shape, buffer.dtype, buffer.strides
            )
            return self.visit_stmt(stmt.body)
        return super().visit_Allocate(stmt)


def _serial_launch(body: Stmt, namer: Namer, outer: frozenset[str]) -> Stmt:
    """``body`` run by one thread; its temporaries of no constant size (a scratch of
    ``n`` elements, also one allocated inside a loop) move to global memory,
    allocated around the launch: one thread runs the loops in order, so one copy
    serves every iteration. A temporary sized by a loop variable stays (and the
    launch is refused for it)."""
    hoist = _Hoist(outer)
    body = hoist.visit_stmt(body)
    launch: Stmt = For(
        namer.fresh_sym("serial_block"), 0, 1, "thread_binding", body, thread_tag="blockIdx.x"
    )
    for buffer in reversed(list(hoist.moved.values())):
        launch = Allocate(buffer, launch)
    return _Rescope(hoist.moved).visit_stmt(launch) if hoist.moved else launch


def _is_launch(stmt: Stmt) -> bool:
    return isinstance(stmt, For) and stmt.kind == "thread_binding"


def wrap_unbound(func: PrimFunc) -> PrimFunc:
    """``func`` with every top-level statement that is not thread-bound run by one
    thread (``for u in thread_binding(1, thread="blockIdx.x")``): correct, serial. A
    kernel without a root block (written as plain loops) runs on one thread whole."""
    root = func.body
    namer = Namer(names_in(func))
    outer = frozenset(s.name for s in func.symbols())
    if not (isinstance(root, BlockRealize) and not root.block.iter_vars):
        if _has_launch(root) or not _has_effects(root):
            return func
        return func.with_body(_serial_launch(root, namer, outer))
    stmts = []
    changed = False
    for stmt in flatten(root.block.body):
        if _is_launch(stmt) or not _has_effects(stmt):
            stmts.append(stmt)
            continue
        stmts.append(_serial_launch(stmt, namer, outer))
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
    """The scheduled kernel as GPU launches (what is left unbound runs on one thread)."""
    return finish_gpu(wrap_unbound(sch.func), params.limits)


def attempt(sch: Schedule, step) -> Schedule | None:
    """``step(copy)`` on a copy of ``sch``: the copy when every primitive held, else None."""
    trial = sch.copy()
    try:
        step(trial)
    except ScheduleError:
        return None
    return trial
