"""The one store of a matrix product's result element, with the kernel's epilogue.

A matrix-product kernel is ``acc (+)= f(A, B)`` and, optionally, an elementwise nest
that turns the accumulator into the output (a cast to float16, a bias, an
activation, a residual). The GPU kernels that hold the sums in registers store each
element once: :func:`output_store` is that store, the epilogue's expression with the
accumulator's element replaced by the sum held in registers.
"""

from __future__ import annotations

from relaxjax import arith
from relaxjax.schedule.rules.patterns import MatmulMatch
from relaxjax.tir.buffer import Buffer
from relaxjax.tir.expr import BufferLoad, PrimExpr
from relaxjax.tir.functor import StmtMutator
from relaxjax.tir.stmt import BufferStore, Stmt

__all__ = ["output_store"]


class _Epilogue(StmtMutator):
    """The epilogue's value at one output element, the accumulator read as ``total``."""

    def __init__(self, mapping: dict, accumulator: Buffer, total: PrimExpr):
        self.mapping, self.accumulator, self.total = mapping, accumulator, total

    def visit_BufferLoad(self, expr: BufferLoad) -> PrimExpr:
        if expr.buffer == self.accumulator:
            return self.total
        return BufferLoad(expr.buffer, tuple(arith.subs(i, self.mapping) for i in expr.indices))


def output_store(match: MatmulMatch, where: dict, total: PrimExpr) -> Stmt:
    """The store of the output element at ``where`` (the update block's spatial
    iterators -> dims): the epilogue's (on ``total``), or ``total`` itself."""
    spatial = [iv.var for iv in match.update.block.iter_vars if iv.kind == "spatial"]
    if match.epilogue is None:
        return BufferStore(match.output, total, tuple(arith.subs(s, where) for s in spatial))
    eblock = match.epilogue.block
    evars = [iv.var for iv in eblock.iter_vars]
    mapping = {e: arith.subs(u, where) for e, u in zip(evars, spatial)}
    store = eblock.body
    value = _Epilogue(mapping, match.output, total).visit_expr(store.value)
    indices = tuple(arith.subs(i, mapping) for i in store.indices)
    return BufferStore(store.buffer, value, indices)
