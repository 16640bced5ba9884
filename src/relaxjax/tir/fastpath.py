"""Which loops the interpreter may run as whole-array numpy operations, exactly.

Two fast paths, each taken only when it provably gives the same result as running
the iterations in order:

- *elementwise* (:func:`vectorizable`): every buffer written in the loop is accessed
  at one index tuple that is injective in the loop variable, so iterations touch
  disjoint elements; no nested loops, allocations, conditionals or lazy selects; block
  inits do not depend on the loop variable.
- *reduction* (:func:`reduction_pattern`): the body is one block whose update is
  ``W[I] = W[I] op rhs`` (``op`` in ``+ * min max``) with ``I`` independent of the loop
  variable and ``rhs`` not reading ``W``; it becomes a sequential ``ufunc.accumulate``.
"""

from __future__ import annotations

from dataclasses import dataclass

from relaxjax import arith
from relaxjax.arith import Dim
from relaxjax.tir.analysis import collect_accesses, free_symbols, free_vars
from relaxjax.tir.buffer import Buffer
from relaxjax.tir.expr import BinOp, BufferLoad, Call, PrimExpr
from relaxjax.tir.functor import StmtVisitor
from relaxjax.tir.intrinsics import GPU_INTRINSICS, LAZY_SELECT
from relaxjax.tir.stmt import (
    Allocate,
    BlockRealize,
    BufferStore,
    For,
    IfThenElse,
    LetStmt,
    Stmt,
)


class _Shape(StmtVisitor):
    """What a loop body contains, for the vectorization test."""

    def __init__(self):
        self.blocked = False
        self.realizes: list[BlockRealize] = []
        self.binders: set[str] = set()

    def visit_For(self, stmt: For) -> None:
        self.blocked = True

    def visit_Allocate(self, stmt: Allocate) -> None:
        self.blocked = True

    def visit_IfThenElse(self, stmt: IfThenElse) -> None:
        self.blocked = True

    def visit_Call(self, expr: Call) -> None:
        if expr.intrinsic == LAZY_SELECT or expr.intrinsic in GPU_INTRINSICS:
            self.blocked = True
        super().visit_Call(expr)

    def visit_LetStmt(self, stmt: LetStmt) -> None:
        self.binders.add(stmt.var.name)
        super().visit_LetStmt(stmt)

    def visit_BlockRealize(self, stmt: BlockRealize) -> None:
        if stmt.block.alloc_buffers:
            self.blocked = True
        self.realizes.append(stmt)
        super().visit_BlockRealize(stmt)


def depends(node: PrimExpr | Dim, varying: set[str]) -> bool:
    """Whether ``node`` uses a symbol or variable named in ``varying``."""
    if isinstance(node, PrimExpr):
        names = {s.name for s in free_symbols(node)} | {v.name for v in free_vars(node)}
    elif isinstance(node, int):
        return False
    else:
        names = {s.name for s in arith.free_symbols(node)}
    return not names.isdisjoint(varying)


def vectorizable(loop: For) -> bool:
    """Whether running ``loop`` as one numpy step over its iterations is exact."""
    shape = _Shape()
    shape.visit_stmt(loop.body)
    if shape.blocked:
        return False
    v = loop.var.name
    varying = {v} | shape.binders
    binding: dict[str, Dim] = {}
    for realize in shape.realizes:  # outer blocks first: nested values resolve fully
        for iv, value in zip(realize.block.iter_vars, realize.iter_values):
            binding[iv.var.name] = arith.subs(value, binding) if binding else value
            if depends(value, varying):
                varying.add(iv.var.name)
    for realize in shape.realizes:
        predicate_varies = depends(realize.predicate, varying)
        if predicate_varies and realize is not loop.body:
            return False
        for iv, value in zip(realize.block.iter_vars, realize.iter_values):
            if iv.kind == "reduce" and realize.block.init is not None and depends(value, varying):
                return False
    return _disjoint_writes(loop, binding)


def _disjoint_writes(loop: For, binding: dict[str, Dim]) -> bool:
    accesses = collect_accesses(loop.body)
    written = {a.buffer for a in accesses if a.is_write}
    tuples: dict[Buffer, tuple] = {}
    for access in accesses:
        if access.buffer not in written:
            continue
        if any(isinstance(i, PrimExpr) for i in access.indices):
            return False
        indices = tuple(arith.subs(i, binding) if binding else i for i in access.indices)
        previous = tuples.setdefault(access.buffer, indices)
        if previous != indices:
            return False
    for realize in _realizes(loop.body):
        # A predicate that reads a buffer the loop writes would see later iterations.
        if not written.isdisjoint(_loaded_buffers(realize.predicate)):
            return False
    return all(_injective(indices, loop.var) for indices in tuples.values())


def _realizes(stmt: Stmt) -> list[BlockRealize]:
    shape = _Shape()
    shape.visit_stmt(stmt)
    return shape.realizes


class _Loads(StmtVisitor):
    def __init__(self):
        self.buffers: list[Buffer] = []

    def visit_BufferLoad(self, expr: BufferLoad) -> None:
        self.buffers.append(expr.buffer)
        super().visit_BufferLoad(expr)


def _loaded_buffers(expr: PrimExpr) -> set[Buffer]:
    loads = _Loads()
    loads.visit_expr(expr)
    return set(loads.buffers)


def _injective(indices: tuple[Dim, ...], var: arith.Sym) -> bool:
    for index in indices:
        if isinstance(index, int) or var not in arith.free_symbols(index):
            continue
        step = arith.subs(index, {var: var + 1}) - index
        if isinstance(step, int) and step != 0:
            return True
    return False


REDUCE_UFUNCS = {"+": "add", "*": "multiply", "min": "minimum", "max": "maximum"}


@dataclass(frozen=True)
class Reduction:
    """A reduction loop's block: ``store`` is ``W[I] = W[I] op rhs``; ``init`` (or None) is
    the block init's store to ``W[I]``."""

    realize: BlockRealize
    store: BufferStore
    op: str
    rhs: PrimExpr
    init: BufferStore | None


def reduction_pattern(loop: For) -> Reduction | None:
    """The :class:`Reduction` that ``loop`` is, or None."""
    realize = loop.body
    if not isinstance(realize, BlockRealize):
        return None
    block = realize.block
    store = block.body
    if block.alloc_buffers or not isinstance(store, BufferStore):
        return None
    value = store.value
    if not (isinstance(value, BinOp) and value.op in REDUCE_UFUNCS):
        return None
    if value.a != BufferLoad(store.buffer, store.indices):
        return None
    if any(isinstance(i, PrimExpr) for i in store.indices):
        return None
    if store.buffer in _loaded_buffers(value.b) or _has_lazy_select(value.b):
        return None
    v = loop.var.name
    binding = {iv.var.name: val for iv, val in zip(block.iter_vars, realize.iter_values)}
    if any(depends(arith.subs(i, binding), {v}) for i in store.indices):
        return None
    if depends(realize.predicate, {v}):
        return None
    init = block.init
    if init is not None and not (
        isinstance(init, BufferStore)
        and init.buffer == store.buffer
        and init.indices == store.indices
        and store.buffer not in _loaded_buffers(init.value)
    ):
        return None
    return Reduction(realize, store, value.op, value.b, init)


def _has_lazy_select(expr: PrimExpr) -> bool:
    shape = _Shape()
    shape.visit_expr(expr)
    return shape.blocked
