"""Staging a buffer through a small local copy inside a loop (on lowered kernels).

``stage(func, loop, buffer)`` makes every access of ``buffer`` under ``loop`` use a
copy holding just the part one iteration touches, like ``cache_read`` /
``cache_write`` followed by ``compute_at`` and buffer compaction. It works on a
kernel whose blocks are lowered (:func:`~.flatten.lower_blocks`), where the copy's
indices may mix outer loop variables with inner ones::

    for i_0 in range(m // 6):                 for i_0 in range(m // 6):
        for k_1 in range(k):                      with allocate((6, 32), "float32",
            for i_1 in unrolled(6):                             scope="local") as C_local:
                for j_1 in vectorized(32):            for k_1 in range(k):
                    C[i_0 * 6 + i_1, j_1] = ...  ->       ...C_local[i_1, j_1] = ...
                                                      for ax0 in range(6):    # copy out
                                                          for ax1 in vectorized(32):
                                                              C[i_0 * 6 + ax0, ax1] = ...

A register tile (a constant-size local copy) is what lets LLVM keep accumulators in
registers; a packed panel of an operand is what keeps its reads in cache.

Soundness: each axis of every access must be ``base + v`` for one loop variable
``v`` inside ``loop`` (or just ``base``), with ``base`` the same for every access and
invariant in the loop's iteration, so the copy covers exactly the elements the
iteration touches (no other thread's elements are ever written back). The copy is
filled from the buffer first unless the first statement that touches it writes all
of it without reading it, and written back when the iteration stores into it. A
temporary buffer accessed only under ``loop`` simply shrinks to the part one
iteration uses when every iteration writes that part before reading it.
Anything else raises :class:`~relaxjax.errors.ScheduleError` saying why.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from relaxjax import arith
from relaxjax.errors import ScheduleError
from relaxjax.tir.buffer import SCOPES, Buffer
from relaxjax.tir.expr import BufferLoad, IndexExpr, PrimExpr, binop
from relaxjax.tir.function import PrimFunc
from relaxjax.tir.functor import StmtMutator, StmtVisitor
from relaxjax.tir.math import logical_and, logical_or
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

__all__ = ["stage"]

Dim = arith.Dim


def _fail(message: str) -> ScheduleError:
    return ScheduleError(f"stage: {message}")


@dataclass(frozen=True, slots=True)
class _Access:
    """One load or store of the staged buffer, with the loops around it inside ``loop``."""

    indices: tuple[Dim, ...]
    is_write: bool
    loops: tuple[For, ...]
    guarded: bool


class _Collector(StmtVisitor):
    """Accesses of ``buffer`` in a statement, with their enclosing loops."""

    def __init__(self, buffer: Buffer):
        self.buffer = buffer
        self.loops: list[For] = []
        self.guards = 0
        self.accesses: list[_Access] = []
        self.binders: set[str] = set()

    def _record(self, indices: Sequence[object], is_write: bool) -> None:
        if any(isinstance(i, PrimExpr) for i in indices):
            raise _fail(f"buffer {self.buffer.name} has a data-dependent index {list(indices)}")
        access = _Access(tuple(indices), is_write, tuple(self.loops), self.guards > 0)
        self.accesses.append(access)

    def visit_BufferLoad(self, expr: BufferLoad) -> None:
        if expr.buffer == self.buffer:
            self._record(expr.indices, False)
        super().visit_BufferLoad(expr)

    def visit_BufferStore(self, stmt: BufferStore) -> None:
        self.visit_expr(stmt.value)
        for index in stmt.indices:
            self.visit_index(index)
        if stmt.buffer == self.buffer:
            self._record(stmt.indices, True)

    def visit_For(self, stmt: For) -> None:
        self.binders.add(stmt.var.name)
        self.loops.append(stmt)
        super().visit_For(stmt)
        self.loops.pop()

    def visit_IfThenElse(self, stmt: IfThenElse) -> None:
        self.visit_expr(stmt.condition)
        self.guards += 1
        self.visit_stmt(stmt.then_case)
        if stmt.else_case is not None:
            self.visit_stmt(stmt.else_case)
        self.guards -= 1

    def visit_LetStmt(self, stmt: LetStmt) -> None:
        if isinstance(stmt.var, arith.Sym):
            self.binders.add(stmt.var.name)
        super().visit_LetStmt(stmt)


def _accesses(stmt: Stmt, buffer: Buffer) -> tuple[list[_Access], set[str]]:
    collector = _Collector(buffer)
    collector.visit_stmt(stmt)
    return collector.accesses, collector.binders


@dataclass(frozen=True, slots=True)
class _Hull:
    """The part of the buffer one iteration touches: ``[base, base + extent)`` per axis."""

    base: tuple[Dim, ...]
    extent: tuple[Dim, ...]


def _axis_range(index: Dim, loops: Sequence[For], buffer: Buffer) -> tuple[Dim, Dim, list[str]]:
    """``(base, extent, loop names)`` of one axis: ``index = base + sum(c_t * v_t)`` where
    the loops form a dense mixed radix (steps 1, e_1, e_1 * e_2, ...) or no loop at all."""
    used = [lp for lp in loops if lp.var in arith.free_symbols(index)]
    steps = []
    for loop in used:
        step = arith.subs(index, {loop.var: loop.var + 1}) - index
        if not (isinstance(step, int) and step >= 1):
            raise _fail(f"index {index} of {buffer.name} is not affine along loop {loop.var}")
        steps.append((step, loop))
    steps.sort(key=lambda pair: pair[0])
    expected: Dim = 1
    for step, loop in steps:
        if arith.compare(step, "==", expected) is not True:
            raise _fail(
                f"index {index} of {buffer.name} skips elements: loop {loop.var} steps by "
                f"{step} where {expected} would be dense"
            )
        expected = step * loop.extent
    base = arith.subs(index, {loop.var: loop.start for loop in used})
    return base, expected, [loop.var.name for loop in used]


def _hull(access: _Access, buffer: Buffer, binders: set[str]) -> _Hull:
    bases, extents, seen = [], [], set()
    for index in access.indices:
        base, extent, loop_names = _axis_range(index, access.loops, buffer)
        for name in loop_names:
            if name in seen:
                raise _fail(f"loop {name} indexes two axes of {buffer.name}")
            seen.add(name)
        for dim in (base, extent):
            inner = {s.name for s in arith.free_symbols(dim)} & binders
            if inner:
                raise _fail(
                    f"the part of {buffer.name} one iteration touches depends on the inner "
                    f"variable(s) {', '.join(sorted(inner))}"
                )
        bases.append(base)
        extents.append(extent)
    return _Hull(tuple(bases), tuple(extents))


def _same_hull(a: _Hull, b: _Hull) -> bool:
    return all(arith.prove_equal(x, y) for x, y in zip(a.base + a.extent, b.base + b.extent))


def _runs(access: _Access) -> PrimExpr | None:
    """When the access's loops all run at least once: None if provably always."""
    condition: PrimExpr | None = None
    for lp in access.loops:
        if arith.compare(lp.extent, ">=", 1) is True:
            continue
        term = binop(">", IndexExpr(lp.extent), 0)
        condition = term if condition is None else logical_and(condition, term)
    return condition


def _empty_when_skipped(access: _Access) -> bool:
    """True when every loop of the access that may run no iteration indexes an axis: the
    hull is then empty whenever the access does not run, and no read needs its data."""
    used: set[arith.Sym] = set()
    for index in access.indices:
        used |= arith.free_symbols(index) if not isinstance(index, int) else set()
    return all(arith.compare(lp.extent, ">=", 1) is True or lp.var in used for lp in access.loops)


def _any_runs(accesses: Sequence[_Access]) -> PrimExpr | None:
    """A guard true when some access runs (None: one provably always runs)."""
    condition: PrimExpr | None = None
    for access in accesses:
        runs = _runs(access)
        if runs is None:
            return None
        condition = runs if condition is None else logical_or(condition, runs)
    return condition


def _first_statement_writes_all(body: Stmt, buffer: Buffer, hull: _Hull) -> bool:
    """True when the first statement of ``body`` that touches ``buffer`` is a plain loop
    nest storing the whole hull without reading ``buffer`` (a loop that may run no
    iteration indexes an axis, so the hull is empty then)."""
    while isinstance(body, Allocate):
        body = body.body
    parts = body.stmts if isinstance(body, SeqStmt) else (body,)
    for part in parts:
        accesses, _ = _accesses(part, buffer)
        if not accesses:
            continue
        stmt, loops = part, []
        while isinstance(stmt, For):
            loops.append(stmt)
            stmt = stmt.body
        if not isinstance(stmt, BufferStore) or stmt.buffer != buffer:
            return False
        if len(accesses) != 1 or not accesses[0].is_write or not _empty_when_skipped(accesses[0]):
            return False
        return len(loops) == len(accesses[0].loops)
    return False


def _copy_nest(
    local: Buffer, buffer: Buffer, hull: _Hull, into_local: bool, prefix: str, names: set[str]
) -> Stmt:
    loop_vars = []
    for axis in range(len(hull.extent)):
        name = _fresh(f"{prefix}{axis}", names)
        loop_vars.append(arith.sym(name))
    global_index = tuple(b + v for b, v in zip(hull.base, loop_vars))
    local_index = tuple(loop_vars)
    if into_local:
        stmt: Stmt = BufferStore(local, buffer[global_index], local_index)
    else:
        stmt = BufferStore(buffer, local[local_index], global_index)
    for axis in reversed(range(len(loop_vars))):
        kind = "vectorized" if axis == len(loop_vars) - 1 else "serial"
        stmt = For(loop_vars[axis], 0, hull.extent[axis], kind, stmt)
    return stmt


def _fresh(base: str, names: set[str]) -> str:
    name, count = base, 0
    while name in names:
        count += 1
        name = f"{base}_{count}"
    names.add(name)
    return name


class _Names(StmtVisitor):
    """Every loop, let and buffer name used in a kernel."""

    def __init__(self):
        self.names: set[str] = set()

    def visit_For(self, stmt: For) -> None:
        self.names.add(stmt.var.name)
        super().visit_For(stmt)

    def visit_LetStmt(self, stmt: LetStmt) -> None:
        self.names.add(stmt.var.name)
        super().visit_LetStmt(stmt)

    def visit_buffer(self, buffer: Buffer) -> None:
        self.names.add(buffer.name)

    def visit_buffer_def(self, buffer: Buffer) -> None:
        self.names.add(buffer.name)


def _kernel_names(func: PrimFunc) -> set[str]:
    finder = _Names()
    finder.visit_stmt(func.body)
    names = finder.names | {p.name for p in func.params}
    return names | {s.name for s in func.symbols()}


class _Redirect(StmtMutator):
    """Accesses of ``old`` become accesses of ``new`` at ``index - base``."""

    def __init__(self, old: Buffer, new: Buffer, base: tuple[Dim, ...]):
        self.old, self.new, self.base = old, new, base

    def _shift(self, indices: Sequence[Dim]) -> tuple[Dim, ...]:
        return tuple(i - b for i, b in zip(indices, self.base))

    def visit_BufferLoad(self, expr: BufferLoad) -> PrimExpr:
        if expr.buffer != self.old:
            return super().visit_BufferLoad(expr)
        return BufferLoad(self.new, self._shift(expr.indices))

    def visit_BufferStore(self, stmt: BufferStore) -> Stmt:
        if stmt.buffer != self.old:
            return super().visit_BufferStore(stmt)
        return BufferStore(self.new, self.visit_expr(stmt.value), self._shift(stmt.indices))


class _ReplaceLoop(StmtMutator):
    def __init__(self, name: str, make):
        self.name, self.make, self.found = name, make, False

    def visit_For(self, stmt: For) -> Stmt:
        if stmt.var.name == self.name:
            self.found = True
            return self.make(stmt)
        return super().visit_For(stmt)


class _DropAllocate(StmtMutator):
    def __init__(self, buffer: Buffer):
        self.buffer = buffer

    def visit_Allocate(self, stmt: Allocate) -> Stmt:
        if stmt.buffer == self.buffer:
            return self.visit_stmt(stmt.body)
        return super().visit_Allocate(stmt)


def _find_buffer(func: PrimFunc, name: str) -> tuple[Buffer, bool]:
    """The buffer called ``name`` and whether it is a temporary (an ``Allocate``)."""
    for param in func.params:
        if param.name == name:
            return param, False
    found: list[Buffer] = []

    class _Find(StmtVisitor):
        def visit_Allocate(self, stmt: Allocate) -> None:
            if stmt.buffer.name == name:
                found.append(stmt.buffer)
            super().visit_Allocate(stmt)

    _Find().visit_stmt(func.body)
    if not found:
        raise _fail(f"kernel {func.name} has no parameter or allocated buffer called {name!r}")
    return found[0], True


def stage(func: PrimFunc, loop: str, buffer: str, scope: str = "local") -> PrimFunc:
    """Make the accesses of ``buffer`` under loop ``loop`` go through a local copy of
    the part one iteration touches (see the module doc); returns the new kernel."""
    if scope not in SCOPES:
        raise _fail(f"scope must be one of {SCOPES}, got {scope!r}")
    target, temporary = _find_buffer(func, buffer)
    names = _kernel_names(func)
    all_accesses, _ = _accesses(func.body, target)

    def make(node: For) -> Stmt:
        accesses, binders = _accesses(node.body, target)
        if not accesses:
            raise _fail(f"loop {loop} does not access {buffer}")
        if any(a.guarded for a in accesses):
            raise _fail(f"an access of {buffer} under loop {loop} is under a condition")
        hulls = [_hull(a, target, binders) for a in accesses]
        hull = hulls[0]
        if not all(_same_hull(hull, h) for h in hulls[1:]):
            raise _fail(f"the accesses of {buffer} under loop {loop} touch different parts")
        shape = tuple(_storage_extent(extent) for extent in hull.extent)
        local = Buffer(_fresh(f"{buffer}_{scope}", names), shape, target.dtype, None, scope)
        body = _Redirect(target, local, hull.base).visit_stmt(node.body)
        writes = [a for a in accesses if a.is_write]
        private = temporary and len(all_accesses) == len(accesses)
        covered = _first_statement_writes_all(node.body, target, hull)
        if private and not covered:
            raise _fail(
                f"temporary {buffer} is read under loop {loop} before the iteration writes "
                "all of the part it uses"
            )
        stmts: list[Stmt] = []
        guard = _any_runs(accesses)
        if not covered:
            stmts.append(_guarded(_copy_nest(local, target, hull, True, "ax", names), guard))
        stmts.append(body)
        if writes and not private:
            copy_out = _copy_nest(local, target, hull, False, "ax", names)
            stmts.append(_guarded(copy_out, _any_runs(writes)))
        return For(
            node.var,
            node.start,
            node.extent,
            node.kind,
            Allocate(local, seq(*stmts)),
            node.annotations,
            node.thread_tag,
        )

    replacer = _ReplaceLoop(loop, make)
    body = replacer.visit_stmt(func.body)
    if not replacer.found:
        raise _fail(f"kernel {func.name} has no loop {loop}")
    if temporary and not _accesses(body, target)[0]:
        body = _DropAllocate(target).visit_stmt(body)
    return func.with_body(body)


def _storage_extent(extent: Dim) -> Dim:
    """A constant upper bound of ``extent`` when there is one (a fixed-size buffer,
    ``min(256, k - k_0 * 256)`` -> 256), else ``extent`` itself."""
    if isinstance(extent, int):
        return extent
    high = arith.bounds(extent)[1]
    return high if isinstance(high, int) and high >= 0 else extent


def _guarded(stmt: Stmt, condition: PrimExpr | None) -> Stmt:
    return stmt if condition is None else IfThenElse(condition, stmt)
