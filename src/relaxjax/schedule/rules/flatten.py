"""Blocks to plain loops: the last step of a schedule rule before code generation.

A block isolates its body from the enclosing loops (only its iterators are visible
inside), which is what makes schedule primitives checkable; once a rule has chosen
the loop structure, the blocks are no longer needed and get in the way of buffer
staging, whose indices mix outer loop variables with inner ones. ``lower_blocks``
replaces every ``BlockRealize`` by what it means:

    with block("C"):                         if i_0 * 6 + i_1 < m:          # predicate
        v_i = axis.spatial(m, i_0 * 6 + i_1)     if k_1 == 0:               # init
        v_k = axis.reduce(k, k_1)                    C[i_0 * 6 + i_1] = 0.0
        where(i_0 * 6 + i_1 < m)     ->          C[i_0 * 6 + i_1] = C[i_0 * 6 + i_1] + A[...]
        with init():
            C[v_i] = float32(0.0)
        C[v_i] = C[v_i] + A[v_i, v_k]

Block-local buffers (``alloc_buffers``, including the root block's) become
``Allocate`` statements around the block's body. The kernel means the same: the
reference interpreter and the LLVM backend run both forms.
"""

from __future__ import annotations

from relaxjax import arith
from relaxjax.tir.expr import IndexExpr, IntImm, PrimExpr
from relaxjax.tir.function import PrimFunc
from relaxjax.tir.functor import StmtMutator, substitute
from relaxjax.tir.math import eq, logical_and
from relaxjax.tir.stmt import Allocate, Block, BlockRealize, IfThenElse, Stmt, seq

__all__ = ["has_blocks", "lower_blocks", "lower_realize"]


def _is_true(predicate: PrimExpr) -> bool:
    return isinstance(predicate, IntImm) and predicate.dtype == "bool" and predicate.value == 1


def _init_condition(block: Block, values: tuple[arith.Dim, ...]) -> PrimExpr | None:
    """``every reduce iterator value == 0``; None when that always holds."""
    condition: PrimExpr | None = None
    for iter_var, value in zip(block.iter_vars, values):
        if iter_var.kind != "reduce" or (isinstance(value, int) and value == 0):
            continue
        term = eq(IndexExpr(value), 0)
        condition = term if condition is None else logical_and(condition, term)
    return condition


class _Lower(StmtMutator):
    def visit_BlockRealize(self, stmt: BlockRealize) -> Stmt:
        block = stmt.block
        mapping = {iv.var: value for iv, value in zip(block.iter_vars, stmt.iter_values)}
        body = self.visit_stmt(substitute(block.body, mapping) if mapping else block.body)
        if block.init is not None:
            init = self.visit_stmt(substitute(block.init, mapping) if mapping else block.init)
            condition = _init_condition(block, stmt.iter_values)
            body = seq(init if condition is None else IfThenElse(condition, init), body)
        for buffer in reversed(block.alloc_buffers):
            body = Allocate(buffer, body)
        if not _is_true(stmt.predicate):
            body = IfThenElse(stmt.predicate, body)
        return body


def has_blocks(func: PrimFunc) -> bool:
    """True when ``func``'s body still holds a block (it has not been lowered)."""
    found = []

    class _Find(StmtMutator):
        def visit_BlockRealize(self, stmt: BlockRealize) -> Stmt:
            found.append(stmt)
            return stmt

    _Find().visit_stmt(func.body)
    return bool(found)


def lower_blocks(func: PrimFunc) -> PrimFunc:
    """``func`` with every block replaced by plain statements (see the module doc)."""
    body = _Lower().visit_stmt(func.body)
    return func if body is func.body else func.with_body(body)


def lower_realize(realize: BlockRealize) -> Stmt:
    """One block instance (and the blocks inside it) as plain statements."""
    return _Lower().visit_stmt(realize)
