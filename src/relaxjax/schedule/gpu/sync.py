"""Barriers: ``syncthreads()`` wherever a thread may touch what another thread of its
block touched since the last barrier, one of them writing (TVM's ThreadSync).

In a launch (:mod:`.launch`) every statement runs in every thread. The loop form it
came from ran each thread loop for all threads before the next statement, so a
value written by one thread and read by another (through shared or global memory)
was there in time; on the GPU a barrier must separate them. ``insert_barriers``
walks each launch's per-thread code in order, keeping the accesses since the last
barrier, and puts a barrier before a statement that conflicts with one of them:
same buffer (shared or global; local buffers are per thread), at least one write,
and not provably the same thread (for every thread axis, the two indices move apart
when it changes, or both run only where it has one value, ``if threadIdx_x == 0``).
Loops are walked twice, so that what one iteration leaves pending meets the next
(a barrier at the end of a tile loop before its buffer is refilled)::

    for k_0 in range(...):                      for k_0 in range(...):
        A_shared[...] = A[...]                      A_shared[...] = A[...]
        ... = A_shared[...]             ->          syncthreads()
                                                    ... = A_shared[...]
                                                    syncthreads()

A barrier needed where threads diverge (under a condition on the threads, or in a
loop whose range depends on them) cannot be placed: ``ScheduleError``.
"""

from __future__ import annotations

from dataclasses import dataclass

from relaxjax import arith
from relaxjax.arith import Dim
from relaxjax.arith.expr import Mod
from relaxjax.schedule.dependence import apart
from relaxjax.schedule.gpu.launch import launch_parts, rebuild_launch
from relaxjax.schedule.itermap import determines
from relaxjax.schedule.step import fail
from relaxjax.tir.analysis import free_symbols
from relaxjax.tir.buffer import Buffer
from relaxjax.tir.expr import BinOp, BufferLoad, IndexExpr, PrimExpr
from relaxjax.tir.function import PrimFunc
from relaxjax.tir.functor import StmtMutator, StmtVisitor
from relaxjax.tir.simt import is_barrier, syncthreads
from relaxjax.tir.stmt import (
    Allocate,
    BufferStore,
    For,
    IfThenElse,
    LetStmt,
    SeqStmt,
    Stmt,
    seq,
)

__all__ = ["insert_barriers"]

PRIMITIVE = "finish_gpu"
LoopRange = tuple[arith.Sym, Dim, Dim]


@dataclass(frozen=True, slots=True)
class _Pin:
    """A condition around an access restricting thread variable ``name``: to the value
    ``rest`` (``step == 0``), or to ``step * lane + rest`` for a new variable ``lane``
    (``threadIdx_x % 32 == 0``), which replaces it in the access's indices."""

    name: str
    step: int
    rest: int
    lane: arith.Sym | None


@dataclass(frozen=True, slots=True)
class _Access:
    buffer: Buffer
    indices: tuple[Dim | PrimExpr, ...]
    is_write: bool
    loops: tuple[LoopRange, ...]
    pins: tuple[_Pin, ...]


@dataclass(frozen=True, slots=True)
class _Threads:
    ranges: tuple[LoopRange, ...]  # the thread variables (more than one value each)

    @property
    def names(self) -> set[str]:
        return {v.name for v, _, _ in self.ranges}

    def extent(self, name: str) -> Dim:
        return next(e for v, _, e in self.ranges if v.name == name)


def _pins(condition: PrimExpr, threads: _Threads) -> list[_Pin]:
    """Thread variables restricted by ``condition`` (conjuncts ``v == r``, ``v % c == r``)."""
    if isinstance(condition, BinOp) and condition.op == "and":
        return _pins(condition.a, threads) + _pins(condition.b, threads)
    if not (
        isinstance(condition, BinOp)
        and condition.op == "=="
        and isinstance(condition.a, IndexExpr)
        and isinstance(condition.b, IndexExpr)
        and isinstance(condition.b.dim, int)
    ):
        return []
    dim, rest = condition.a.dim, condition.b.dim
    if isinstance(dim, arith.Sym) and dim.name in threads.names:
        return [_Pin(dim.name, 0, rest, None)]
    if isinstance(dim, Mod):
        var, step = dim.children()
        extent = (
            threads.extent(var.name)
            if isinstance(var, arith.Sym) and var.name in threads.names
            else None
        )
        if isinstance(step, int) and step > 0 and isinstance(extent, int) and 0 <= rest < step:
            return [_Pin(var.name, step, rest, arith.Sym(f"{var.name}_lane{step}_{rest}"))]
    return []


class _Collect(StmtVisitor):
    """The shared and global accesses of a statement, with their loops and pins."""

    def __init__(self, threads: _Threads, loops, pins):
        self.threads = threads
        self.loops: list[LoopRange] = list(loops)
        self.pins: list[_Pin] = list(pins)
        self.found: list[_Access] = []

    def _add(self, buffer: Buffer, indices, is_write: bool) -> None:
        if buffer.scope == "local":
            return
        subst = {p.name: p.step * p.lane + p.rest for p in self.pins if p.lane is not None}
        if subst:
            indices = [
                i if isinstance(i, (int, PrimExpr)) else arith.subs(i, subst) for i in indices
            ]
        lanes = tuple(
            (p.lane, 0, -(-(self.threads.extent(p.name) - p.rest) // p.step))
            for p in self.pins
            if p.lane is not None
        )
        self.found.append(
            _Access(buffer, tuple(indices), is_write, tuple(self.loops) + lanes, tuple(self.pins))
        )

    def visit_BufferLoad(self, expr: BufferLoad) -> None:
        self._add(expr.buffer, expr.indices, False)
        super().visit_BufferLoad(expr)

    def visit_BufferStore(self, stmt: BufferStore) -> None:
        self.visit_expr(stmt.value)
        for index in stmt.indices:
            self.visit_index(index)
        self._add(stmt.buffer, stmt.indices, True)

    def visit_For(self, stmt: For) -> None:
        self.loops.append((stmt.var, stmt.start, stmt.extent))
        super().visit_For(stmt)
        self.loops.pop()

    def visit_LetStmt(self, stmt: LetStmt) -> None:
        self.visit_expr(stmt.value)
        if isinstance(stmt.var, arith.Sym):
            self.loops.append((stmt.var, 0, None))
            self.visit_stmt(stmt.body)
            self.loops.pop()
        else:
            self.visit_stmt(stmt.body)

    def visit_IfThenElse(self, stmt: IfThenElse) -> None:
        self.visit_expr(stmt.condition)
        pins = _pins(stmt.condition, self.threads)
        self.pins.extend(pins)
        self.visit_stmt(stmt.then_case)
        del self.pins[len(self.pins) - len(pins) :]
        if stmt.else_case is not None:
            self.visit_stmt(stmt.else_case)


def same_thread(a: _Access, b: _Access, threads: _Threads) -> bool:
    """Whether two accesses to one element are always made by one thread: along every
    thread axis either both are pinned to one value, or the indices tell it (the same
    indices determining it, or some axis moving apart whenever it changes)."""
    pins_a = {p.name: p for p in a.pins}
    pins_b = {p.name: p for p in b.pins}
    for var, _, _ in threads.ranges:
        name = var.name
        pin = pins_a.get(name)
        others = tuple(r for r in threads.ranges if r[0].name != name)
        scope = threads.ranges
        if pin is not None and pin == pins_b.get(name):
            if pin.lane is None:
                continue
            var, scope = pin.lane, others
        if a.indices == b.indices and _determined(a, var.name, scope):
            continue
        relax, unknown = _split_known(others + a.loops + b.loops)
        if not any(
            _comparable(x, unknown) and _comparable(y, unknown) and apart(x, y, var, relax)
            for x, y in zip(a.indices, b.indices)
        ):
            return False
    return True


def _split_known(ranges) -> tuple[tuple[LoopRange, ...], set[str]]:
    """The ranges with a known extent, and the names of the others (lets of index
    values read from memory: ``m4 = i[0]``)."""
    known = tuple(r for r in ranges if None not in (r[1], r[2]))
    return known, {r[0].name for r in ranges if None in (r[1], r[2])}


def _comparable(index, unknown: set[str]) -> bool:
    """An index whose range analysis can bound: a dim over no let of unknown range."""
    if isinstance(index, PrimExpr):
        return False
    return not any(s.name in unknown for s in arith.free_symbols(index))


def _determined(access: _Access, name: str, threads) -> bool:
    """The access's indices determine variable ``name`` (a thread variable or a lane of
    one), whatever the other threads and loops are."""
    if any(isinstance(i, PrimExpr) for i in access.indices):
        return False
    ranges = tuple(threads) + access.loops
    if any(extent is None or start != 0 for _, start, extent in ranges):
        return False
    extents = {v.name: e for v, _, e in ranges}
    return name in extents and determines(access.indices, name, extents)


def _conflict(pending: list[_Access], new: list[_Access], threads: _Threads) -> _Access | None:
    for b in new:
        for a in pending:
            if a.buffer.name != b.buffer.name or not (a.is_write or b.is_write):
                continue
            if not same_thread(a, b, threads):
                return b
    return None


class _Sync:
    def __init__(self, threads: _Threads):
        self.threads = threads

    def accesses(self, stmt: Stmt, loops, pins) -> list[_Access]:
        collect = _Collect(self.threads, loops, pins)
        collect.visit_stmt(stmt)
        return collect.found

    def divergent(self, expr_or_dim) -> bool:
        if isinstance(expr_or_dim, PrimExpr):
            names = {s.name for s in free_symbols(expr_or_dim)}
        elif isinstance(expr_or_dim, int):
            names = set()
        else:
            names = {s.name for s in arith.free_symbols(expr_or_dim)}
        return bool(names & self.threads.names)

    def visit(self, stmt: Stmt, pending: list[_Access], loops, pins, where: str | None):
        """``(new statement, accesses pending after it)``; ``where`` names the condition
        on the threads around (no barrier may go there)."""
        if isinstance(stmt, SeqStmt):
            return self.sequence(stmt.stmts, pending, loops, pins, where)
        if isinstance(stmt, For):
            return self.loop(stmt, pending, loops, pins, where)
        if isinstance(stmt, IfThenElse):
            return self.branch(stmt, pending, loops, pins, where)
        if isinstance(stmt, Allocate):
            body, out = self.visit(stmt.body, pending, loops, pins, where)
            return Allocate(stmt.buffer, body), out
        if isinstance(stmt, LetStmt):
            inner = loops + ((stmt.var, 0, None),) if isinstance(stmt.var, arith.Sym) else loops
            body, out = self.visit(stmt.body, pending, inner, pins, where)
            return LetStmt(stmt.var, stmt.value, body), out
        if is_barrier(stmt):
            if where is not None:
                raise _diverges(where)
            return stmt, []
        return stmt, pending + self.accesses(stmt, loops, pins)

    def sequence(self, stmts, pending, loops, pins, where):
        out: list[Stmt] = []
        for stmt in stmts:
            if _conflict(pending, self.accesses(stmt, loops, pins), self.threads) is not None:
                if where is not None:
                    raise _diverges(where)
                out.append(syncthreads())
                pending = []
            new, pending = self.visit(stmt, pending, loops, pins, where)
            out.append(new)
        return seq(*out), pending

    def loop(self, stmt: For, pending, loops, pins, where):
        if self.divergent(stmt.extent) or self.divergent(stmt.start):
            where = where or f"the range of loop {stmt.var.name}"
        inner = loops + ((stmt.var, stmt.start, stmt.extent),)
        _, carried = self.visit(stmt.body, pending, inner, pins, where)
        body, out = self.visit(stmt.body, _merge(pending, carried), inner, pins, where)
        new = For(
            stmt.var, stmt.start, stmt.extent, stmt.kind, body, stmt.annotations, stmt.thread_tag
        )
        return new, _merge(pending, out)

    def branch(self, stmt: IfThenElse, pending, loops, pins, where):
        if self.divergent(stmt.condition):
            where = where or repr(stmt.condition)
        added = tuple(_pins(stmt.condition, self.threads))
        then, out = self.visit(stmt.then_case, pending, loops, pins + added, where)
        other, out_else = None, pending
        if stmt.else_case is not None:
            other, out_else = self.visit(stmt.else_case, pending, loops, pins, where)
        return IfThenElse(stmt.condition, then, other), _merge(out, out_else)


def _merge(a: list[_Access], b: list[_Access]) -> list[_Access]:
    seen = {id(x) for x in a}
    return a + [x for x in b if id(x) not in seen]


def _diverges(where: str):
    return fail(
        PRIMITIVE,
        f"threads must synchronise (one reads or writes what another wrote) where they "
        f"diverge, under {where}: give the loops of each threadIdx axis equal extents, or "
        "move the statement out of the condition",
    )


class _Launches(StmtMutator):
    def visit_For(self, stmt: For) -> Stmt:
        if stmt.kind != "thread_binding":
            return super().visit_For(stmt)
        return _sync_launch(stmt)


def _sync_launch(stmt: For) -> Stmt:
    parts = launch_parts(stmt)
    ranges = tuple(
        (lp.var, lp.start, lp.extent)
        for lp in parts.threads
        if arith.compare(lp.extent, "<=", 1) is not True
    )
    if not ranges:
        return stmt
    body, _ = _Sync(_Threads(ranges)).visit(parts.body, [], (), (), None)
    return rebuild_launch(parts, body)


def insert_barriers(func: PrimFunc) -> PrimFunc:
    """``func`` (launches, :mod:`.launch`) with the barriers its threads need."""
    body = _Launches().visit_stmt(func.body)
    return func if body is func.body else func.with_body(body)
