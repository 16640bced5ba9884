"""Finding and replacing loops and blocks in a kernel body, and fresh names.

Loop variables and block names are unique within a kernel (the tir verifier
enforces it), so the scheduler addresses loops by their variable's name and blocks
by their name. A *site* is a node together with its ancestors, root first.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from relaxjax import arith
from relaxjax.errors import ScheduleError
from relaxjax.tir.buffer import Buffer
from relaxjax.tir.expr import Var
from relaxjax.tir.function import PrimFunc
from relaxjax.tir.functor import StmtMutator, StmtVisitor
from relaxjax.tir.stmt import (
    Allocate,
    Block,
    BlockRealize,
    For,
    LetStmt,
    SeqStmt,
    Stmt,
)


@dataclass(frozen=True, slots=True)
class Site:
    """A statement ``node`` and the statements enclosing it (``ancestors``, root first)."""

    node: Stmt
    ancestors: tuple[Stmt, ...]

    def loops(self) -> tuple[For, ...]:
        """The loops around ``node`` inside its innermost enclosing block, outermost first."""
        found: list[For] = []
        for stmt in reversed(self.ancestors):
            if isinstance(stmt, Block):
                break
            if isinstance(stmt, For):
                found.append(stmt)
        return tuple(reversed(found))

    def scope(self) -> Block | None:
        """The innermost block enclosing ``node`` (None at the top of the body)."""
        for stmt in reversed(self.ancestors):
            if isinstance(stmt, Block):
                return stmt
        return None


class _SiteFinder(StmtVisitor):
    def __init__(self, match: Callable[[Stmt], bool]):
        self.match = match
        self.stack: list[Stmt] = []
        self.found: list[Site] = []

    def visit_stmt(self, stmt: Stmt) -> None:
        if self.match(stmt):
            self.found.append(Site(stmt, tuple(self.stack)))
        self.stack.append(stmt)
        super().visit_stmt(stmt)
        self.stack.pop()


def find_sites(body: Stmt, match: Callable[[Stmt], bool]) -> list[Site]:
    """Every statement of ``body`` for which ``match`` holds, in program order."""
    finder = _SiteFinder(match)
    finder.visit_stmt(body)
    return finder.found


def loop_site(body: Stmt, name: str) -> Site | None:
    """The loop whose variable is called ``name`` (None when there is none)."""
    sites = find_sites(body, lambda s: isinstance(s, For) and s.var.name == name)
    return sites[0] if sites else None


def block_site(body: Stmt, name: str) -> Site | None:
    """The BlockRealize of the block called ``name`` (None when there is none)."""
    sites = find_sites(body, lambda s: isinstance(s, BlockRealize) and s.block.name == name)
    return sites[0] if sites else None


def child_realizes(stmt: Stmt) -> list[BlockRealize]:
    """The BlockRealizes under ``stmt`` that are not inside another block, in order.

    ``stmt`` itself counts when it is a BlockRealize; a Block's own body is searched.
    """
    found: list[BlockRealize] = []

    class _Finder(StmtVisitor):
        def visit_BlockRealize(self, realize: BlockRealize) -> None:
            found.append(realize)

    finder = _Finder()
    if isinstance(stmt, Block):
        finder.visit_stmt(stmt.body)
    else:
        finder.visit_stmt(stmt)
    return found


class _Replacer(StmtMutator):
    def __init__(self, old: Stmt, new: Stmt):
        self.old = old
        self.new = new
        self.done = False

    def visit_stmt(self, stmt: Stmt) -> Stmt:
        if stmt is self.old:
            self.done = True
            return self.new
        return super().visit_stmt(stmt)


def replace(body: Stmt, old: Stmt, new: Stmt) -> Stmt:
    """``body`` with the node ``old`` (found by identity) replaced by ``new``."""
    replacer = _Replacer(old, new)
    result = replacer.visit_stmt(body)
    if not replacer.done:
        raise ScheduleError(f"internal: statement to replace not found:\n{old!r}")
    return result


def names_in(func: PrimFunc) -> set[str]:
    """Every name defined in ``func``: buffers, symbols, loop vars, iterators, lets, blocks."""
    names: set[str] = {p.name for p in func.params}
    names |= {s.name for s in func.symbols()}

    class _Names(StmtVisitor):
        def visit_For(self, stmt: For) -> None:
            names.add(stmt.var.name)
            super().visit_For(stmt)

        def visit_Block(self, stmt: Block) -> None:
            names.add(stmt.name)
            names.update(iv.var.name for iv in stmt.iter_vars)
            names.update(b.name for b in stmt.alloc_buffers)
            super().visit_Block(stmt)

        def visit_LetStmt(self, stmt: LetStmt) -> None:
            names.add(stmt.var.name)
            super().visit_LetStmt(stmt)

        def visit_Allocate(self, stmt: Allocate) -> None:
            names.add(stmt.buffer.name)
            super().visit_Allocate(stmt)

    _Names().visit_stmt(func.body)
    return names


class Namer:
    """Hands out names never used before in a schedule (nor in its current kernel)."""

    def __init__(self, used: Iterable[str] = ()):
        self.used: set[str] = set(used)

    def add(self, names: Iterable[str]) -> None:
        """Marks ``names`` as taken."""
        self.used.update(names)

    def fresh(self, base: str) -> str:
        """``base``, or ``base_1``, ``base_2``... : the first name not taken."""
        name, k = base, 0
        while name in self.used:
            k += 1
            name = f"{base}_{k}"
        self.used.add(name)
        return name

    def fresh_sym(self, base: str) -> arith.Sym:
        """A fresh loop variable / iterator named after ``base``."""
        return arith.Sym(self.fresh(base))


class _Renamer(StmtMutator):
    """Gives every binder and block of a copied subtree a fresh name."""

    def __init__(self, namer: Namer, suffix: str):
        self.namer = namer
        self.suffix = suffix
        self.syms: dict[str, arith.Sym] = {}
        self.vars: dict[Var, Var] = {}
        self.buffers: dict[str, Buffer] = {}
        self.blocks: dict[str, str] = {}

    def _sym(self, sym: arith.Sym) -> arith.Sym:
        new = self.namer.fresh_sym(f"{sym.name}_{self.suffix}")
        self.syms[sym.name] = new
        return new

    def visit_dim(self, dim):
        if isinstance(dim, int) or not self.syms:
            return dim
        if not any(s.name in self.syms for s in arith.free_symbols(dim)):
            return dim
        return arith.subs(dim, self.syms)

    def visit_buffer(self, buffer: Buffer) -> Buffer:
        renamed = self.buffers.get(buffer.name)
        shape = tuple(self.visit_dim(d) for d in buffer.shape)
        if renamed is not None:
            return Buffer(renamed.name, shape, buffer.dtype, buffer.strides, buffer.scope)
        if shape == buffer.shape:
            return buffer
        return buffer.with_shape(shape, buffer.strides)

    def visit_buffer_def(self, buffer: Buffer) -> Buffer:
        new = Buffer(
            self.namer.fresh(f"{buffer.name}_{self.suffix}"),
            tuple(self.visit_dim(d) for d in buffer.shape),
            buffer.dtype,
            buffer.strides,
            buffer.scope,
        )
        self.buffers[buffer.name] = new
        return new

    def visit_Var(self, expr: Var):
        return self.vars.get(expr, expr)

    def visit_For(self, stmt: For) -> Stmt:
        start, extent = self.visit_dim(stmt.start), self.visit_dim(stmt.extent)
        var = self._sym(stmt.var)
        body = self.visit_stmt(stmt.body)
        return For(var, start, extent, stmt.kind, body, stmt.annotations, stmt.thread_tag)

    def visit_LetStmt(self, stmt: LetStmt) -> Stmt:
        value = self.visit_expr(stmt.value)
        if isinstance(stmt.var, arith.Sym):
            var = self._sym(stmt.var)
        else:
            var = Var(self.namer.fresh(f"{stmt.var.name}_{self.suffix}"), stmt.var.dtype)
            self.vars[stmt.var] = var
        return LetStmt(var, value, self.visit_stmt(stmt.body))

    def visit_Allocate(self, stmt: Allocate) -> Stmt:
        buffer = self.visit_buffer_def(stmt.buffer)
        return Allocate(buffer, self.visit_stmt(stmt.body))

    def visit_BlockRealize(self, stmt: BlockRealize) -> Stmt:
        values = tuple(self.visit_dim(v) for v in stmt.iter_values)
        predicate = self.visit_expr(stmt.predicate)
        block = stmt.block
        iter_vars = tuple(
            type(iv)(self._sym(iv.var), self.visit_dim(iv.extent), iv.kind)
            for iv in block.iter_vars
        )
        allocs = tuple(self.visit_buffer_def(b) for b in block.alloc_buffers)
        name = self.namer.fresh(f"{block.name}_{self.suffix}")
        self.blocks[block.name] = name
        new_block = Block(
            name,
            iter_vars,
            tuple(self.visit_region(r) for r in block.reads),
            tuple(self.visit_region(r) for r in block.writes),
            None if block.init is None else self.visit_stmt(block.init),
            self.visit_stmt(block.body),
            allocs,
            block.annotations,
        )
        return BlockRealize(values, predicate, new_block)


def renamed_copy(stmt: Stmt, namer: Namer, suffix: str) -> tuple[Stmt, dict[str, str]]:
    """A copy of ``stmt`` whose binders, local buffers and blocks have fresh names.

    Returns the copy and the mapping of block names (old -> new).
    """
    renamer = _Renamer(namer, suffix)
    return renamer.visit_stmt(stmt), renamer.blocks


def flatten(stmt: Stmt) -> tuple[Stmt, ...]:
    """The statements of a sequence (the statement alone otherwise)."""
    return stmt.stmts if isinstance(stmt, SeqStmt) else (stmt,)
