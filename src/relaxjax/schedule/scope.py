"""Blocks within their scope: the statements of the enclosing block, what each block
reads and writes in loop terms, and moving statements around.

The *scope* of a block is its innermost enclosing block (the root block for the
kernels the compute builder makes); its body is a sequence of top-level statements
(usually one loop nest per stage).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from relaxjax import arith
from relaxjax.arith import Dim
from relaxjax.schedule.step import fail
from relaxjax.schedule.tree import Site, child_realizes, flatten, replace
from relaxjax.tir.analysis import collect_accesses, relax_dim
from relaxjax.tir.buffer import Buffer
from relaxjax.tir.expr import IndexExpr, PrimExpr, binop
from relaxjax.tir.functor import StmtMutator, StmtVisitor
from relaxjax.tir.stmt import Block, BlockRealize, Evaluate, For, SeqStmt, Stmt, seq

LoopRange = tuple[arith.Sym, Dim, Dim]


@dataclass(frozen=True, slots=True)
class Access:
    """A load or store of a block instance in loop terms: ``indices`` use the loops
    above the block; ``inner`` are the loops inside the block (for relaxing)."""

    block: str
    buffer: Buffer
    indices: tuple[Dim | PrimExpr, ...]
    is_write: bool
    inner: tuple[LoopRange, ...]


def scope_block(site: Site) -> Block:
    """The block enclosing ``site`` (a kernel body always has the root block)."""
    scope = site.scope()
    if scope is None:
        raise fail("schedule", "the kernel body is not inside a root block")
    return scope


def top_statement(site: Site) -> Stmt:
    """The statement of the scope's body that contains ``site``."""
    scope = scope_block(site)
    chain = list(site.ancestors) + [site.node]
    index = next(k for k, s in enumerate(chain) if s is scope)
    body = scope.body
    for stmt in chain[index + 1 :]:
        if isinstance(stmt, SeqStmt):
            continue
        if any(stmt is s for s in flatten(body)):
            return stmt
    raise fail("schedule", "internal: statement not found in its scope")


def top_statements(scope: Block) -> tuple[Stmt, ...]:
    """The statements of a scope's body, in order."""
    return flatten(scope.body)


@dataclass(frozen=True, slots=True)
class Placement:
    """Where a block and a loop of one scope meet: ``statements``, the innermost
    sequence holding both; ``mine`` and ``target``, its elements holding the block and
    the loop; ``outer``, the loops of the scope around that sequence (outermost first);
    ``top``, the scope's top-level statement holding both (None when ``statements`` is
    the scope's body itself).

    For a block ``B`` and a loop ``j`` of ``C`` both under ``i_0``::

        for i_0 in range(...):      # outer = (i_0,), top = this loop
            for ax in range(...):   # mine
                with block("B"): ...
            for j in range(...):    # target
                with block("C"): ...
    """

    statements: tuple[Stmt, ...]
    mine: Stmt
    target: Stmt
    outer: tuple[For, ...]
    top: Stmt | None

    def index(self, stmt: Stmt) -> int:
        """The position of ``stmt`` (an element, by identity) in ``statements``."""
        return next(k for k, s in enumerate(self.statements) if s is stmt)


def placement(primitive: str, block_site: Site, loop_site: Site) -> Placement:
    """The innermost statement sequence holding the block at ``block_site`` and the loop
    at ``loop_site`` (same scope; the loop does not enclose the block)."""
    scope = scope_block(block_site)
    mine_chain = list(block_site.ancestors) + [block_site.node]
    loop_chain = list(loop_site.ancestors) + [loop_site.node]
    start = max(k for k, s in enumerate(mine_chain) if s is scope)
    common = start
    while (
        common + 1 < min(len(mine_chain), len(loop_chain))
        and mine_chain[common + 1] is loop_chain[common + 1]
    ):
        common += 1
    meeting = mine_chain[common]
    if not isinstance(meeting, SeqStmt):
        raise fail(
            primitive,
            f"block {block_site.node.block.name!r} and loop {loop_site.node.var.name} are not "
            "in one sequence of statements",
        )
    outer = tuple(s for s in mine_chain[start + 1 : common] if isinstance(s, For))
    top = None if meeting is scope.body else top_statement(loop_site)
    return Placement(meeting.stmts, mine_chain[common + 1], loop_chain[common + 1], outer, top)


def exclusive_root(site: Site) -> Stmt:
    """The outermost statement around the block at ``site`` that holds no other block."""
    root: Stmt = site.node
    for stmt in reversed(site.ancestors):
        if isinstance(stmt, (Block, SeqStmt)):
            break
        if len(child_realizes(stmt)) != 1:
            break
        root = stmt
    return root


class _Remover(StmtMutator):
    def __init__(self, target: Stmt):
        self.target = target

    def visit_SeqStmt(self, stmt: SeqStmt) -> Stmt:
        kept = [self.visit_stmt(s) for s in stmt.stmts if s is not self.target]
        if len(kept) == len(stmt.stmts) and all(a is b for a, b in zip(kept, stmt.stmts)):
            return stmt
        return seq(*kept)

    def visit_Block(self, stmt: Block) -> Stmt:
        if stmt.body is self.target:
            return Block(
                stmt.name,
                stmt.iter_vars,
                stmt.reads,
                stmt.writes,
                stmt.init,
                Evaluate(IndexExpr(0)),
                stmt.alloc_buffers,
                stmt.annotations,
            )
        return super().visit_Block(stmt)


def remove(body: Stmt, target: Stmt) -> Stmt:
    """``body`` without ``target`` (an element of a sequence or a block's whole body)."""
    return _Remover(target).visit_stmt(body)


def insert_before(body: Stmt, anchor: Stmt, new: Stmt) -> Stmt:
    """``body`` with ``new`` placed right before ``anchor``."""
    return replace(body, anchor, seq(new, anchor))


def insert_after(body: Stmt, anchor: Stmt, new: Stmt) -> Stmt:
    """``body`` with ``new`` placed right after ``anchor``."""
    return replace(body, anchor, seq(anchor, new))


def with_allocs(realize: BlockRealize, allocs: Sequence[Buffer]) -> BlockRealize:
    """The realize of a scope block whose ``alloc_buffers`` are ``allocs``."""
    block = realize.block
    new = Block(
        block.name,
        block.iter_vars,
        block.reads,
        block.writes,
        block.init,
        block.body,
        tuple(allocs),
        block.annotations,
    )
    return BlockRealize(realize.iter_values, realize.predicate, new)


# --- accesses in loop terms ----------------------------------------------------------


def _subs(dim, binding):
    if isinstance(dim, (int, PrimExpr)):
        return dim
    return arith.subs(dim, binding)


def instance_accesses(realize: BlockRealize) -> list[Access]:
    """The loads and stores of a block, with its iterators replaced by their values."""
    block = realize.block
    binding = {iv.var.name: v for iv, v in zip(block.iter_vars, realize.iter_values)}
    result = []
    for access in collect_accesses(block):
        indices = tuple(_subs(i, binding) for i in access.indices)
        inner = tuple((v, _subs(s, binding), _subs(e, binding)) for v, s, e in access.loops)
        result.append(Access(block.name, access.buffer, indices, access.is_write, inner))
    return result


class _Instances(StmtVisitor):
    def __init__(self):
        self.loops: list[LoopRange] = []
        self.found: list[tuple[BlockRealize, tuple[LoopRange, ...]]] = []

    def visit_For(self, stmt: For) -> None:
        self.loops.append((stmt.var, stmt.start, stmt.extent))
        self.visit_stmt(stmt.body)
        self.loops.pop()

    def visit_BlockRealize(self, stmt: BlockRealize) -> None:
        self.found.append((stmt, tuple(self.loops)))


def instances_under(stmt: Stmt) -> list[tuple[BlockRealize, tuple[LoopRange, ...]]]:
    """The top-level block realizes under ``stmt`` with the loops between (inside
    ``stmt``, ``stmt`` itself included when it is a loop), in program order."""
    finder = _Instances()
    finder.visit_stmt(stmt)
    return finder.found


def relaxed_region(
    accesses: Sequence[tuple[Access, tuple[LoopRange, ...]]], buffer: Buffer, relax=relax_dim
) -> tuple[tuple[Dim, Dim], ...]:
    """Per axis ``(low, high)`` (inclusive) covering ``accesses`` of ``buffer`` while the
    loops listed with each access take any value; an index ``relax`` cannot bound (by
    default :func:`relaxjax.tir.analysis.relax_dim`: a non-affine one) covers the axis."""
    lows: list[Dim | None] = [None] * buffer.ndim
    highs: list[Dim | None] = [None] * buffer.ndim
    for access, loops in accesses:
        for axis, index in enumerate(access.indices):
            bounds = None
            if not isinstance(index, PrimExpr):
                bounds = relax(index, tuple(loops) + access.inner)
            low, high = bounds if bounds is not None else (0, buffer.shape[axis] - 1)
            lows[axis] = low if lows[axis] is None else arith.min_(lows[axis], low)
            highs[axis] = high if highs[axis] is None else arith.max_(highs[axis], high)
    return tuple(zip(lows, highs))


def conjunction(conditions: Sequence[PrimExpr]) -> PrimExpr | None:
    """``a and b and ...`` (None for no condition)."""
    result = None
    for condition in conditions:
        result = condition if result is None else binop("and", result, condition)
    return result


def buffers_touched(stmt: Stmt) -> tuple[set[str], set[str]]:
    """Names of the buffers written and read by the blocks under ``stmt``."""
    written: set[str] = set()
    read: set[str] = set()
    for realize, _ in instances_under(stmt):
        for access in instance_accesses(realize):
            (written if access.is_write else read).add(access.buffer.name)
    return written, read
