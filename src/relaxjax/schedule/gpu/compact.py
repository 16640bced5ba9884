"""Shared and local buffers of GPU launches: where they live and how big they are.

A buffer of scope ``"shared"`` or ``"local"`` in a scheduled kernel is usually as
large as the tensor it stages (``cache_read`` copies the whole of ``A``); what one
thread block (shared) or one thread (local) uses of it is much smaller.
``compact`` gives each such buffer the region its launch touches:

- shared: per thread block, relaxed over the threads and over the loops inside its
  *anchor* (the innermost serial loop whose iterations the buffer is private to,
  :mod:`relaxjax.schedule.privatize`; all loops when there is none), allocated
  between the ``blockIdx`` loops and the threads;
- local: per thread, relaxed over the loops inside its anchor (thread variables
  fixed), allocated at the top of the thread's code. A local buffer must not carry
  values between threads: it is private to the loops of the threads using it, or
  each thread's part is disjoint from the others'.

Accesses are rebased (``A_shared[i_0 * 16 + ax0, k_0 * 8 + ax1]`` ->
``A_shared[ax0, ax1]``) and the size is the extent's constant upper bound
(``min(16, n - i_0 * 16)`` -> 16). :func:`anchors` computes the anchors on the
scheduled kernel, before its blocks are lowered.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from relaxjax import arith
from relaxjax.arith import Dim
from relaxjax.schedule.gpu.launch import is_block_loop, is_thread_loop
from relaxjax.schedule.privatize import is_private
from relaxjax.schedule.scope import instance_accesses
from relaxjax.schedule.step import fail
from relaxjax.schedule.tree import find_sites
from relaxjax.tir.analysis import relax_dim, relax_index
from relaxjax.tir.buffer import Buffer
from relaxjax.tir.expr import BufferLoad, PrimExpr
from relaxjax.tir.function import PrimFunc
from relaxjax.tir.functor import StmtMutator, StmtVisitor
from relaxjax.tir.stmt import Allocate, Block, BlockRealize, BufferStore, For, LetStmt, Stmt

__all__ = ["Anchors", "anchors", "compact"]

PRIMITIVE = "finish_gpu"
GPU_SCOPES = ("shared", "local")


@dataclass(frozen=True, slots=True)
class Anchors:
    """For each shared/local buffer (by name): the loop variable of its anchor; and the
    local buffers private to the thread loops that use them."""

    loops: Mapping[str, str]
    thread_private: frozenset[str]


def _gpu_buffers(func: PrimFunc) -> list[Buffer]:
    found: list[Buffer] = []

    class _Find(StmtVisitor):
        def visit_Block(self, block: Block) -> None:
            found.extend(b for b in block.alloc_buffers if b.scope in GPU_SCOPES)
            super().visit_Block(block)

        def visit_Allocate(self, stmt: Allocate) -> None:
            if stmt.buffer.scope in GPU_SCOPES:
                found.append(stmt.buffer)
            super().visit_Allocate(stmt)

    _Find().visit_stmt(func.body)
    return found


def _common_ancestors(sites) -> list[Stmt]:
    chains = [list(site.ancestors) + [site.node] for site in sites]
    common: list[Stmt] = []
    for nodes in zip(*chains):
        if not all(n is nodes[0] for n in nodes):
            break
        common.append(nodes[0])
    return common


class _PerThread(StmtVisitor):
    """Local buffers allocated inside ``threadIdx`` loops, with no ``threadIdx`` loop
    inside the allocation: each thread has its own (kernels written as plain loops)."""

    def __init__(self):
        self.depth = 0
        self.found: set[str] = set()

    def visit_For(self, stmt: For) -> None:
        self.depth += is_thread_loop(stmt)
        super().visit_For(stmt)
        self.depth -= is_thread_loop(stmt)

    def visit_Allocate(self, stmt: Allocate) -> None:
        if stmt.buffer.scope == "local" and self.depth and not _has_thread_loop(stmt.body):
            self.found.add(stmt.buffer.name)
        super().visit_Allocate(stmt)


def _has_thread_loop(stmt: Stmt) -> bool:
    found = []

    class _Find(StmtVisitor):
        def visit_For(self, loop: For) -> None:
            if is_thread_loop(loop):
                found.append(loop)
            super().visit_For(loop)

    _Find().visit_stmt(stmt)
    return bool(found)


def anchors(func: PrimFunc) -> Anchors:
    """The anchors of the shared and local buffers of a scheduled kernel (block form;
    in loop form, local buffers allocated per thread are private to the threads)."""
    loops: dict[str, str] = {}
    per_thread = _PerThread()
    per_thread.visit_stmt(func.body)
    private: set[str] = set(per_thread.found)
    for buffer in _gpu_buffers(func):
        sites = find_sites(
            func.body,
            lambda s, b=buffer: (
                isinstance(s, BlockRealize)
                and any(a.buffer.name == b.name for a in instance_accesses(s))
            ),
        )
        if not sites:
            continue
        common = _common_ancestors(sites)
        scope = next((s for s in reversed(common) if isinstance(s, Block)), None)
        if scope is None:
            continue
        chain = [s for s in common if isinstance(s, For)]
        for loop in reversed(chain):
            if is_block_loop(loop):
                break
            if not is_private(scope.body, loop, buffer):
                continue
            if is_thread_loop(loop):
                if buffer.scope == "local":
                    private.add(buffer.name)
                continue
            if buffer.name not in loops:
                loops[buffer.name] = loop.var.name
        if buffer.scope == "local" and any(
            is_thread_loop(lp) and is_private(scope.body, lp, buffer) for lp in chain
        ):
            private.add(buffer.name)
    return Anchors(loops, frozenset(private))


# --- on launches ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Use:
    indices: tuple[Dim | PrimExpr, ...]
    loops: tuple[For, ...]  # every loop from the launch's outermost one to the access
    lets: frozenset[str]  # index symbols bound by lets around the access in the launch


class _Uses(StmtVisitor):
    def __init__(self):
        self.loops: list[For] = []
        self.lets: list[str] = []
        self.uses: dict[str, list[_Use]] = {}

    def _add(self, buffer: Buffer, indices) -> None:
        if buffer.scope in GPU_SCOPES:
            use = _Use(tuple(indices), tuple(self.loops), frozenset(self.lets))
            self.uses.setdefault(buffer.name, []).append(use)

    def visit_LetStmt(self, stmt: LetStmt) -> None:
        if not isinstance(stmt.var, arith.Sym):
            super().visit_LetStmt(stmt)
            return
        self.visit_expr(stmt.value)
        self.lets.append(stmt.var.name)
        self.visit_stmt(stmt.body)
        self.lets.pop()

    def visit_For(self, stmt: For) -> None:
        self.loops.append(stmt)
        super().visit_For(stmt)
        self.loops.pop()

    def visit_BufferLoad(self, expr: BufferLoad) -> None:
        self._add(expr.buffer, expr.indices)
        super().visit_BufferLoad(expr)

    def visit_BufferStore(self, stmt: BufferStore) -> None:
        self._add(stmt.buffer, stmt.indices)
        super().visit_BufferStore(stmt)


def _relaxed_loops(use: _Use, buffer: Buffer, anchor: str | None):
    """The loops an access is relaxed over (see the module doc)."""
    names = [lp.var.name for lp in use.loops]
    inside = use.loops
    if anchor is not None and anchor in names:
        inside = use.loops[names.index(anchor) + 1 :]
    ranges = []
    for lp in inside:
        if is_block_loop(lp):
            continue
        if is_thread_loop(lp) and buffer.scope == "local":
            continue
        ranges.append((lp.var, lp.start, lp.extent))
    if buffer.scope == "shared":
        threads = [lp for lp in use.loops if is_thread_loop(lp)]
        outside = [lp for lp in threads if all(lp is not x for x in inside)]
        ranges = [(lp.var, lp.start, lp.extent) for lp in outside] + ranges
    return tuple(ranges)


def _region(buffer: Buffer, uses: list[_Use], anchor: str | None):
    lows: list[Dim | None] = [None] * buffer.ndim
    highs: list[Dim | None] = [None] * buffer.ndim
    for use in uses:
        ranges = _relaxed_loops(use, buffer, anchor)
        for axis, index in enumerate(use.indices):
            # An index through a let (``acc[m4]`` with ``m4 = i[0]``): any element.
            unknown = isinstance(index, PrimExpr) or any(
                s.name in use.lets for s in arith.free_symbols(index)
            )
            bounds = None if unknown else relax_index(index, ranges)
            low, high = bounds if bounds is not None else (0, buffer.shape[axis] - 1)
            lows[axis] = low if lows[axis] is None else arith.min_(lows[axis], low)
            highs[axis] = high if highs[axis] is None else arith.max_(highs[axis], high)
    return lows, highs


def _storage(extent: Dim, size: Dim) -> Dim:
    """A constant upper bound of ``extent`` (at most the buffer's own size), else it."""
    if isinstance(extent, int):
        return max(extent, 0)
    high = arith.bounds(extent)[1]
    if isinstance(high, int):
        if isinstance(size, int):
            high = min(high, size)
        return max(high, 0)
    if arith.compare(size, "<=", extent) is True:
        return size
    return extent


class _Rebase(StmtMutator):
    def __init__(self, new: dict[str, tuple[Buffer, tuple[Dim, ...]]]):
        self.new = new

    def _indices(self, name: str, indices):
        buffer, base = self.new[name]
        moved = tuple(i if isinstance(i, PrimExpr) else i - b for i, b in zip(indices, base))
        return buffer, moved

    def visit_BufferLoad(self, expr: BufferLoad) -> PrimExpr:
        if expr.buffer.name not in self.new:
            return super().visit_BufferLoad(expr)
        indices = tuple(self.visit_index(i) for i in expr.indices)
        return BufferLoad(*self._indices(expr.buffer.name, indices))

    def visit_BufferStore(self, stmt: BufferStore) -> Stmt:
        if stmt.buffer.name not in self.new:
            return super().visit_BufferStore(stmt)
        indices = tuple(self.visit_index(i) for i in stmt.indices)
        buffer, moved = self._indices(stmt.buffer.name, indices)
        return BufferStore(buffer, self.visit_expr(stmt.value), moved)


class _DropAllocates(StmtMutator):
    def __init__(self):
        self.dropped: dict[str, Buffer] = {}

    def visit_Allocate(self, stmt: Allocate) -> Stmt:
        if stmt.buffer.scope in GPU_SCOPES:
            self.dropped[stmt.buffer.name] = stmt.buffer
            return self.visit_stmt(stmt.body)
        return super().visit_Allocate(stmt)


def _thread_disjoint(buffer: Buffer, uses: list[_Use], lows, extents) -> bool:
    """Each thread's part of a local buffer is disjoint from every other thread's: for
    every thread variable, some axis moves by at least the part's extent plus the
    spread the other threads add."""
    threads = {}
    for use in uses:
        for lp in use.loops:
            if is_thread_loop(lp) and arith.compare(lp.extent, "<=", 1) is not True:
                threads[lp.var.name] = lp
    for name, loop in threads.items():
        others = tuple((lp.var, lp.start, lp.extent) for n, lp in threads.items() if n != name)
        if not any(
            _moves_apart(low, extent, loop.var, others) for low, extent in zip(lows, extents)
        ):
            return False
    return True


def _moves_apart(low: Dim, extent: Dim, var: arith.Sym, others) -> bool:
    if isinstance(low, int) or var not in arith.free_symbols(low):
        return False
    step = arith.subs(low, {var: var + 1}) - low
    if not isinstance(step, int) or step == 0:
        return False
    rest = low - var * step
    if not isinstance(rest, int) and var in arith.free_symbols(rest):
        return False
    spread = relax_dim(rest, others)
    if spread is None:
        return False
    return arith.compare(abs(step), ">=", spread[1] - spread[0] + extent) is True


def _compact_launch(launch: For, found: Anchors, internal: frozenset[str], buffers) -> Stmt:
    uses = _Uses()
    uses.visit_stmt(launch)
    new: dict[str, tuple[Buffer, tuple[Dim, ...]]] = {}
    shared: list[Buffer] = []
    local: list[Buffer] = []
    for name, found_uses in uses.uses.items():
        buffer = buffers[name]
        anchor = found.loops.get(name)
        lows, highs = _region(buffer, found_uses, anchor)
        extents = [h - lo + 1 for lo, h in zip(lows, highs)]
        if (
            buffer.scope == "local"
            and name not in internal
            and name not in found.thread_private
            and not _thread_disjoint(buffer, found_uses, lows, extents)
        ):
            raise fail(
                PRIMITIVE,
                f"local buffer {name} carries values between threads (a thread reads what "
                "another wrote): give it scope 'shared'",
            )
        shape = tuple(_storage(e, s) for e, s in zip(extents, buffer.shape))
        compacted = Buffer(name, shape, buffer.dtype, None, buffer.scope)
        new[name] = (compacted, tuple(lows))
        (shared if buffer.scope == "shared" else local).append(compacted)
    body = _Rebase(new).visit_stmt(launch)
    return _place(body, shared, local)


def _place(launch: Stmt, shared: list[Buffer], local: list[Buffer]) -> Stmt:
    """Shared buffers between the blockIdx loops and the threads; local ones inside."""
    if is_block_loop(launch):
        inner = _place(launch.body, shared, local)
        return For(
            launch.var,
            launch.start,
            launch.extent,
            launch.kind,
            inner,
            launch.annotations,
            launch.thread_tag,
        )
    body = _place_local(launch, local)
    for buffer in reversed(shared):
        body = Allocate(buffer, body)
    return body


def _place_local(stmt: Stmt, local: list[Buffer]) -> Stmt:
    if is_thread_loop(stmt):
        inner = _place_local(stmt.body, local)
        return For(
            stmt.var, stmt.start, stmt.extent, stmt.kind, inner, stmt.annotations, stmt.thread_tag
        )
    for buffer in reversed(local):
        stmt = Allocate(buffer, stmt)
    return stmt


class _Launches(StmtMutator):
    def __init__(self, found: Anchors, internal: frozenset[str], buffers):
        self.found, self.internal, self.buffers = found, internal, buffers
        self.seen: dict[str, str] = {}

    def visit_For(self, stmt: For) -> Stmt:
        if stmt.kind != "thread_binding":
            return super().visit_For(stmt)
        uses = _Uses()
        uses.visit_stmt(stmt)
        for name in uses.uses:
            if name in self.seen:
                raise fail(
                    PRIMITIVE,
                    f"{self.buffers[name].scope} buffer {name} is used by two GPU kernels "
                    f"(loops {self.seen[name]} and {stmt.var.name}): it lives in one launch",
                )
            self.seen[name] = stmt.var.name
        return _compact_launch(stmt, self.found, self.internal, self.buffers)


def compact(func: PrimFunc, found: Anchors, internal: frozenset[str] = frozenset()) -> PrimFunc:
    """``func`` (launches) with its shared and local buffers placed and shrunk (see the
    module doc); ``internal`` names local buffers private to each thread by
    construction (the partial results of cross-thread reductions)."""
    dropper = _DropAllocates()
    body = dropper.visit_stmt(func.body)
    body = _Launches(found, internal, dropper.dropped).visit_stmt(body)
    return func.with_body(body)
