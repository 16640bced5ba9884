"""Solving dims for their symbols: the linear case, and the order to solve many dims.

A value given for a dim ``a * n + b`` (``a`` non-zero and ``a``, ``b`` free of ``n``)
determines ``n`` as ``(value - b) / a`` when that is an integer. Nothing else is
inverted: ``n * n``, ``n // 2``, ``n % 4`` and ``min(n, 4)`` do not determine ``n``,
nor does ``n * m`` while ``m`` is unknown too (as in ``jax.export``); once ``m`` is
known, ``n * m`` is linear in ``n`` with the coefficient ``m``.

>>> from relaxjax.arith.symbols import sym
>>> n, m = sym("n"), sym("m")
>>> linear_in(n * 2 + m + 1, n)
(2, m + 1)
>>> linear_in(n * m + n, n)
(m + 1, 0)
>>> linear_in(n * n, n) is None
True
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from relaxjax.arith.expr import Dim, Expr, Sym
from relaxjax.arith.terms import from_terms, to_terms

__all__ = ["SolveStep", "linear_in", "solve_order"]


def linear_in(dim: Dim, symbol: Sym) -> tuple[Dim, Dim] | None:
    """``(a, b)`` with ``dim == a * symbol + b``, ``a != 0`` and both free of ``symbol``;
    None when ``dim`` is not of that form (or does not use ``symbol``)."""
    if not isinstance(dim, Expr) or symbol not in dim.symbols:
        return None
    coefficient = {}
    rest = {}
    for monomial, coeff in to_terms(dim).items():
        others = tuple(factor for factor in monomial if factor != (symbol, 1))
        if len(others) == len(monomial) - 1 and all(symbol not in a.symbols for a, _ in others):
            coefficient[others] = coeff  # a term symbol * (a monomial free of it)
        elif any(symbol in atom.symbols for atom, _ in monomial):
            return None  # n * n, n // 2, min(n, 4), ...
        else:
            rest[monomial] = coeff
    a = from_terms(coefficient)
    if a == 0:
        return None
    return a, from_terms(rest)


@dataclass(frozen=True, slots=True)
class SolveStep:
    """Solve ``symbol = (value of dims[index] - rest) / coeff``."""

    index: int
    symbol: Sym
    coeff: Dim
    rest: Dim


def _step(index: int, dim: Dim, known: Collection[str], constant: bool) -> SolveStep | None:
    if isinstance(dim, int):
        return None
    unknown = [s for s in dim.symbols if s.name not in known]
    if len(unknown) != 1:
        return None
    linear = linear_in(dim, unknown[0])
    if linear is None or (constant and not isinstance(linear[0], int)):
        return None
    return SolveStep(index, unknown[0], *linear)


def solve_order(
    dims: Sequence[Dim], known: Collection[str] = ()
) -> tuple[tuple[SolveStep, ...], tuple[Sym, ...]]:
    """Which of ``dims`` (given values) determine which symbols, and in what order.

    ``known`` names the symbols with values already. Repeats until nothing changes:
    the earliest dim linear in its one unknown symbol with a constant coefficient is
    solved first; a symbolic coefficient (``n * m`` once ``m`` is known) only when no
    constant one is left, since it determines nothing when it is 0. Returns the steps,
    in order, and the symbols no dim determines, sorted by name.

    >>> from relaxjax.arith.symbols import syms
    >>> n, m = syms("n m")
    >>> steps, undetermined = solve_order([n * m, m + 1, n * 2])
    >>> [(s.index, s.symbol.name) for s in steps], undetermined
    ([(1, 'm'), (2, 'n')], ())
    """
    known = set(known)
    pending = dict(enumerate(dims))
    steps: list[SolveStep] = []
    while True:
        step = None
        for constant in (True, False):
            step = next(
                (s for i, d in pending.items() if (s := _step(i, d, known, constant))), None
            )
            if step is not None:
                break
        if step is None:
            break
        steps.append(step)
        known.add(step.symbol.name)
        del pending[step.index]
    left = {s.name: s for d in pending.values() if isinstance(d, Expr) for s in d.symbols}
    undetermined = tuple(left[name] for name in sorted(left) if name not in known)
    return tuple(steps), undetermined
