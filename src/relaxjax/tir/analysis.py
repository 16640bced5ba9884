"""Read-only analyses of TIR: accesses, block regions, blocks by name, free symbols.

These are the queries the scheduler, the passes and the backends share.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from relaxjax import arith
from relaxjax.arith import Dim
from relaxjax.tir.buffer import Buffer, BufferRegion, Range
from relaxjax.tir.expr import BufferLoad, PrimExpr, Var
from relaxjax.tir.functor import StmtVisitor
from relaxjax.tir.stmt import (
    Allocate,
    Block,
    BlockRealize,
    BufferStore,
    For,
    LetStmt,
    Stmt,
)


@dataclass(frozen=True, slots=True)
class Access:
    """One load or store of ``buffer`` at ``indices``, under the loops ``loops``.

    ``loops`` lists the ``(var, start, extent)`` of the loops (and index lets, with
    extent None) between the analysed root and the access, outermost first.
    """

    buffer: Buffer
    indices: tuple[Dim | PrimExpr, ...]
    is_write: bool
    loops: tuple[tuple[arith.Sym, Dim, Dim | None], ...]


class _AccessCollector(StmtVisitor):
    def __init__(self, enter_blocks: bool):
        self.enter_blocks = enter_blocks
        self.loops: list[tuple[arith.Sym, Dim, Dim | None]] = []
        self.local: list[set[Buffer]] = [set()]
        self.accesses: list[Access] = []

    def _record(self, buffer: Buffer, indices, is_write: bool) -> None:
        if not any(buffer in scope for scope in self.local):
            self.accesses.append(Access(buffer, indices, is_write, tuple(self.loops)))

    def visit_BufferLoad(self, expr: BufferLoad) -> None:
        self._record(expr.buffer, expr.indices, False)
        super().visit_BufferLoad(expr)

    def visit_BufferStore(self, stmt: BufferStore) -> None:
        self._record(stmt.buffer, stmt.indices, True)
        super().visit_BufferStore(stmt)

    def visit_For(self, stmt: For) -> None:
        self.loops.append((stmt.var, stmt.start, stmt.extent))
        super().visit_For(stmt)
        self.loops.pop()

    def visit_LetStmt(self, stmt: LetStmt) -> None:
        if isinstance(stmt.var, arith.Sym):
            self.visit_expr(stmt.value)
            self.loops.append((stmt.var, 0, None))
            self.visit_stmt(stmt.body)
            self.loops.pop()
        else:
            super().visit_LetStmt(stmt)

    def visit_Allocate(self, stmt: Allocate) -> None:
        self.local.append({stmt.buffer})
        super().visit_Allocate(stmt)
        self.local.pop()

    def visit_BlockRealize(self, stmt: BlockRealize) -> None:
        self.visit_expr(stmt.predicate)
        if self.enter_blocks:
            self.visit_stmt(stmt.block)
            return
        # A nested block stands for its declared regions, mapped to the outer variables
        # through its iter values; each region is recorded as its first and last points.
        binding = {iv.var.name: v for iv, v in zip(stmt.block.iter_vars, stmt.iter_values)}
        for regions, is_write in ((stmt.block.reads, False), (stmt.block.writes, True)):
            for region in regions:
                starts = tuple(arith.subs(r.start, binding) for r in region.region)
                lasts = tuple(arith.subs(r.stop - 1, binding) for r in region.region)
                self._record(region.buffer, starts, is_write)
                self._record(region.buffer, lasts, is_write)

    def visit_Block(self, stmt: Block) -> None:
        self.local.append(set(stmt.alloc_buffers))
        super().visit_Block(stmt)
        self.local.pop()


def collect_accesses(stmt: Stmt) -> list[Access]:
    """Every buffer load and store in ``stmt`` in program order (nested blocks included),
    except those of buffers allocated inside ``stmt``."""
    collector = _AccessCollector(enter_blocks=True)
    collector.visit_stmt(stmt)
    return collector.accesses


def relax_dim(dim: Dim, loops: tuple[tuple[arith.Sym, Dim, Dim | None], ...]):
    """``(low, high)`` with ``low <= dim <= high`` while each ``(var, start, extent)`` of
    ``loops`` ranges over ``[start, start + extent)`` (innermost last), or None when
    ``dim`` is not affine in them (or a var has no range: extent None)."""
    low = high = dim
    for var, start, extent in reversed(loops):
        if var not in arith.free_symbols(low) | arith.free_symbols(high):
            continue
        if extent is None:
            return None
        step_low = arith.subs(low, {var: var + 1}) - low
        step_high = arith.subs(high, {var: var + 1}) - high
        if not isinstance(step_low, int) or not isinstance(step_high, int):
            return None
        last = start + extent - 1
        low = arith.subs(low, {var: start if step_low >= 0 else last})
        high = arith.subs(high, {var: last if step_high >= 0 else start})
    return low, high


def relax_index(dim: Dim, loops: tuple[tuple[arith.Sym, Dim, Dim | None], ...]):
    """Like :func:`relax_dim`, and also for indices that are not affine in the loops
    (splits such as ``f // 8``, ``f % 8``) when they separate as ``base + g`` with
    ``base`` free of the loops and ``g`` over loops of constant ranges only: then ``g``
    is bounded by :func:`relaxjax.arith.bounds`. None when neither applies."""
    relaxed = relax_dim(dim, loops)
    if relaxed is not None or isinstance(dim, int):
        return relaxed
    names = {var.name: (start, extent) for var, start, extent in loops}
    used = {s.name for s in arith.free_symbols(dim)} & set(names)
    base = arith.subs(dim, {name: 0 for name in used})
    rest = dim - base
    if not isinstance(rest, int) and {s.name for s in arith.free_symbols(rest)} - used:
        return None
    ranges = {}
    for name in used:
        start, extent = names[name]
        if not isinstance(start, int) or not isinstance(extent, int) or extent <= 0:
            return None
        ranges[name] = (start, start + extent - 1)
    low, high = arith.bounds(rest, ranges)
    if low is None or high is None:
        return None
    return base + low, base + high


def _access_ranges(access: Access) -> tuple[Range, ...]:
    ranges = []
    for axis, index in enumerate(access.indices):
        relaxed = None if isinstance(index, PrimExpr) else relax_dim(index, access.loops)
        if relaxed is None:
            ranges.append(Range(0, access.buffer.shape[axis]))
        else:
            low, high = relaxed
            ranges.append(Range(low, high - low + 1))
    return tuple(ranges)


def _union(buffer: Buffer, a: tuple[Range, ...], b: tuple[Range, ...]) -> tuple[Range, ...]:
    merged = []
    for axis, (ra, rb) in enumerate(zip(a, b)):
        full = Range(0, buffer.shape[axis])
        if ra in (rb, full):
            merged.append(ra)
        elif rb == full:
            merged.append(rb)
        else:
            start = arith.min_(ra.start, rb.start)
            stop = arith.max_(ra.stop, rb.stop)
            merged.append(Range(start, stop - start))
    return tuple(merged)


def _regions(accesses: list[Access]) -> tuple[BufferRegion, ...]:
    by_buffer: dict[Buffer, tuple[Range, ...]] = {}
    for access in accesses:
        ranges = _access_ranges(access)
        previous = by_buffer.get(access.buffer)
        if previous is not None:
            ranges = _union(access.buffer, previous, ranges)
        by_buffer[access.buffer] = ranges
    return tuple(BufferRegion(buffer, ranges) for buffer, ranges in by_buffer.items())


def block_access_regions(block: Block) -> tuple[tuple[BufferRegion, ...], tuple[BufferRegion, ...]]:
    """``(reads, writes)`` of ``block`` computed from its body, in its iterators' terms.

    Loops inside the block are relaxed to their ranges (an index that is not affine in
    them, or data-dependent, covers the whole axis). Buffers the block allocates are
    left out; as in TVM, a block with an ``init`` does not list as read the buffers its
    init writes (the reduction's own accumulator).
    """
    collector = _AccessCollector(enter_blocks=False)
    collector.local.append(set(block.alloc_buffers))
    if block.init is not None:
        collector.visit_stmt(block.init)
    collector.visit_stmt(block.body)
    writes = [a for a in collector.accesses if a.is_write]
    init_written: set[Buffer] = set()
    if block.init is not None:
        init_written = {a.buffer for a in collect_accesses(block.init) if a.is_write}
    reads = [a for a in collector.accesses if not a.is_write and a.buffer not in init_written]
    return _regions(reads), _regions(writes)


def iter_blocks(stmt: Stmt) -> Iterator[BlockRealize]:
    """Every BlockRealize in ``stmt``, outer before inner, in program order."""
    found: list[BlockRealize] = []

    class _Finder(StmtVisitor):
        def visit_BlockRealize(self, realize: BlockRealize) -> None:
            found.append(realize)
            super().visit_BlockRealize(realize)

    _Finder().visit_stmt(stmt)
    return iter(found)


def find_block(stmt: Stmt, name: str) -> BlockRealize:
    """The BlockRealize of the block called ``name`` (``KeyError`` naming the known ones)."""
    matches = [r for r in iter_blocks(stmt) if r.block.name == name]
    if len(matches) != 1:
        names = sorted({r.block.name for r in iter_blocks(stmt)})
        problem = "no" if not matches else f"{len(matches)}"
        raise KeyError(f"{problem} block named {name!r}; blocks: {', '.join(names)}")
    return matches[0]


class _SymbolUses(StmtVisitor):
    """Symbols used in dims, minus those bound inside the visited tree."""

    def __init__(self):
        self.used: set[arith.Sym] = set()
        self.bound: set[arith.Sym] = set()
        self.vars_used: set[Var] = set()
        self.vars_bound: set[Var] = set()

    def visit_dim(self, dim: Dim) -> None:
        if not isinstance(dim, int):
            self.used |= arith.free_symbols(dim)

    def visit_Var(self, expr: Var) -> None:
        self.vars_used.add(expr)

    def visit_For(self, stmt: For) -> None:
        self.bound.add(stmt.var)
        super().visit_For(stmt)

    def visit_Block(self, stmt: Block) -> None:
        self.bound |= {iv.var for iv in stmt.iter_vars}
        super().visit_Block(stmt)

    def visit_LetStmt(self, stmt: LetStmt) -> None:
        if isinstance(stmt.var, arith.Sym):
            self.bound.add(stmt.var)
        else:
            self.vars_bound.add(stmt.var)
        super().visit_LetStmt(stmt)

    def visit_buffer(self, buffer: Buffer) -> None:
        for dim in buffer.shape + (buffer.strides or ()):
            self.visit_dim(dim)


def free_symbols(node: Stmt | PrimExpr) -> frozenset[arith.Sym]:
    """Symbols ``node`` uses (in indices, extents, buffer shapes) that it does not bind."""
    uses = _SymbolUses()
    if isinstance(node, Stmt):
        uses.visit_stmt(node)
    else:
        uses.visit_expr(node)
    return frozenset(uses.used - uses.bound)


def free_vars(node: Stmt | PrimExpr) -> frozenset[Var]:
    """Value variables ``node`` uses that it does not bind."""
    uses = _SymbolUses()
    if isinstance(node, Stmt):
        uses.visit_stmt(node)
    else:
        uses.visit_expr(node)
    return frozenset(uses.vars_used - uses.vars_bound)
