"""Index arithmetic that vanishes: simplify a kernel's indices with its loop ranges.

``arith`` canonicalises a dim for every value of its symbols; inside a loop
``for i in range(start, start + extent)`` the loop variable is known to lie in
``[start, start + extent - 1]``, which decides divisions that the symbols alone do
not. :func:`simplify_indices` rewrites every dim of a (block-free) kernel under the
ranges of the loops around it, so the quotient/remainder pairs that fusing and
splitting loops leave behind disappear where they are constant or the identity::

    for f in parallel(d0 * d1 * 12):            for f in parallel(d0 * d1 * 12):
        for i2 in vectorized(64):         ->        for i2 in vectorized(64):
            ... x[((i2 + (f % 12) * 64) // 768 + f // 12) // d1, ...,
                  (i2 + (f % 12) * 64) % 768]        ... x[(f // 12) // d1, ..., i2 + (f % 12) * 64]

(``i2 + (f % 12) * 64`` lies in ``[0, 767]``: its ``// 768`` is 0, its ``% 768`` itself.)
The innermost loop then indexes affinely: no integer division per element, and a
vectorised loop reads contiguous memory instead of gathering. Each rewrite is exact
for every iteration the loop runs (an empty loop runs none); the kernel's symbols keep
their own bounds. A loop whose start is not a constant is left as it is.
"""

from __future__ import annotations

from relaxjax import arith
from relaxjax.tir.function import PrimFunc
from relaxjax.tir.functor import StmtMutator, StmtVisitor, substitute
from relaxjax.tir.stmt import For, Stmt

__all__ = ["simplify_indices"]


class _Ranges(StmtMutator):
    """Substitutes each loop variable by the same symbol carrying the loop's range,
    innermost last, so that ``arith`` re-canonicalises the dims of its body with it."""

    def __init__(self) -> None:
        self.loop_vars: dict[str, arith.Sym] = {}

    def visit_For(self, stmt: For) -> Stmt:
        bounded = _bounded(stmt)
        if bounded is None:
            return super().visit_For(stmt)
        self.loop_vars[stmt.var.name] = stmt.var
        body = self.visit_stmt(substitute(stmt.body, {stmt.var: bounded}))
        if body is stmt.body:
            return stmt
        return For(
            stmt.var, stmt.start, stmt.extent, stmt.kind, body, stmt.annotations, stmt.thread_tag
        )


class _Divides(StmtVisitor):
    """Whether a ``//`` or ``%`` occurs in any dim of a statement."""

    def __init__(self) -> None:
        self.found = False

    def visit_dim(self, dim: arith.Dim) -> None:
        if not self.found and isinstance(dim, arith.Expr):
            self.found = _has_division(dim)


def _has_division(dim: arith.Dim) -> bool:
    if isinstance(dim, (arith.FloorDiv, arith.Mod)):
        return True
    return isinstance(dim, arith.Expr) and any(_has_division(c) for c in dim.children())


def _bounded(loop: For) -> arith.Sym | None:
    """The loop variable with ``start <= var <= start + extent - 1``, when that range
    can be stated (a constant start, an extent that may be positive)."""
    if not isinstance(loop.start, int) or isinstance(loop.start, bool):
        return None
    if isinstance(loop.extent, int) and loop.extent <= 0:
        return None  # the body never runs
    upper = loop.start + loop.extent - 1
    if not isinstance(upper, int) and arith.compare(upper, "<", loop.start) is True:
        return None
    return arith.Sym(loop.var.name, loop.start, upper)


def simplify_indices(func: PrimFunc) -> PrimFunc:
    """``func`` with every index simplified under the ranges of its loops (see the module
    doc); loop variables come back as plain symbols."""
    divides = _Divides()
    divides.visit_stmt(func.body)
    if not divides.found:
        return func  # nothing a range could decide (the common elementwise kernel)
    ranges = _Ranges()
    body = ranges.visit_stmt(func.body)
    if body is func.body:
        return func
    body = substitute(body, {name: var for name, var in ranges.loop_vars.items()})
    return func.with_body(body)
