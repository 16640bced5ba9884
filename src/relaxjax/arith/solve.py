"""Solving a dim for one of its symbols: the linear case the runtime inverts.

A size given for a dim ``a * n + b`` (``a`` a non-zero int, ``b`` free of ``n``)
determines ``n`` as ``(size - b) / a`` when that is an integer. Nothing else is
inverted: ``n * n``, ``n // 2``, ``n % 4``, ``min(n, 4)`` and ``n * m`` (for an
unknown ``m``) do not determine ``n``, as in ``jax.export``.

>>> from relaxjax.arith.symbols import sym
>>> n, m = sym("n"), sym("m")
>>> linear_in(n * 2 + m + 1, n)
(2, m + 1)
>>> linear_in(n * m, n) is None
True
"""

from __future__ import annotations

from relaxjax.arith.expr import Dim, Expr, Sym
from relaxjax.arith.terms import to_terms

__all__ = ["linear_in"]


def linear_in(dim: Dim, symbol: Sym) -> tuple[int, Dim] | None:
    """``(a, b)`` with ``dim == a * symbol + b``, ``a != 0`` an int and ``b`` free of
    ``symbol``; None when ``dim`` is not of that form (or does not use ``symbol``)."""
    if not isinstance(dim, Expr) or symbol not in dim.symbols:
        return None
    coefficient = 0
    for monomial, coeff in to_terms(dim).items():
        if monomial == ((symbol, 1),):
            coefficient = coeff
        elif any(symbol in atom.symbols for atom, _ in monomial):
            return None  # n * n, n * m, n // 2, min(n, 4), ...
    if coefficient == 0:
        return None
    return coefficient, dim - coefficient * symbol
