"""``min`` and ``max`` of dims in canonical form.

``min_``/``max_`` flatten nested extrema (also through added terms and positive
factors: ``min(min(x, y) * 2 + t, z) -> min(x * 2 + t, y * 2 + t, z)``), drop operands
that another provably dominates (``min(n, n + 1) -> n``), take out per monomial the
smallest coefficient (absent counts as 0) and a common positive factor, and sort what
remains, so the operands keep non-negative coefficients and share no term:
``min(n + 3, 5) -> min(2, n) + 3``, ``min(2n, 2m) -> min(m, n) * 2``,
``min(-n, -m) -> min(m, n) - m - n``.
"""

from __future__ import annotations

from math import gcd

from relaxjax.arith import bounds as _bounds
from relaxjax.arith.algebra import add, as_dim, close, floordiv, mul, sub
from relaxjax.arith.expr import Dim, Max, Min, Poly, dim_key
from relaxjax.arith.terms import content, to_terms


def min_(a: Dim, b: Dim, *rest: Dim) -> Dim:
    """The minimum of dims (public as ``relax.min``); ints are accepted."""
    return _extremum(Min, tuple(as_dim(x) for x in (a, b, *rest)))


def max_(a: Dim, b: Dim, *rest: Dim) -> Dim:
    """The maximum of dims (public as ``relax.max``); ints are accepted."""
    return _extremum(Max, tuple(as_dim(x) for x in (a, b, *rest)))


def _extremum(kind: type[Min] | type[Max], args: tuple[Dim, ...]) -> Dim:
    pick = min if kind is Min else max
    if all(isinstance(arg, int) for arg in args):
        return pick(args)
    # Shared terms come out first, so that min(x + t, y + t) stays min(x, y) + t even
    # when t is itself an extremum that flattening would distribute.
    common = _common_part(args)
    flat = [part for arg in args for part in _flatten(kind, sub(arg, common))]
    constants = [arg for arg in flat if isinstance(arg, int)]
    unique = sorted({arg for arg in flat if not isinstance(arg, int)}, key=dim_key)
    if constants:
        unique.insert(0, pick(constants))
    kept = _undominated(unique, kind is Min)
    if len(kept) == 1:
        return add(kept[0], common)
    return add(_normalised_extremum(kind, kept), common)


def _flatten(kind: type[Min] | type[Max], arg: Dim) -> list[Dim]:
    """Operands of nested extrema, also through a positive factor and added terms:
    ``min(min(x, y) * 2 + t, z) -> min(x * 2 + t, y * 2 + t, z)``."""
    if isinstance(arg, kind):
        return [flat for inner in arg.args for flat in _flatten(kind, inner)]
    if isinstance(arg, Poly):
        for monomial, coeff in arg.terms:
            atom = monomial[0][0]
            if coeff > 0 and len(monomial) == 1 and monomial[0][1] == 1 and isinstance(atom, kind):
                rest = sub(arg, mul(coeff, atom))
                return [
                    flat
                    for inner in atom.args
                    for flat in _flatten(kind, add(mul(coeff, inner), rest))
                ]
    return [arg]


def _undominated(args: list[Dim], is_min: bool) -> list[Dim]:
    """The operands that no other provably beats; of equal ones the first stays."""
    kept: list[Dim] = []
    for arg in args:
        if any(_beats(other, arg, is_min) for other in kept):
            continue
        kept = [other for other in kept if not _beats(arg, other, is_min)]
        kept.append(arg)
    return kept


def _beats(x: Dim, y: Dim, is_min: bool) -> bool:
    """``x <= y`` (for min) or ``x >= y`` (for max) for every value of the symbols."""
    diff = sub(x, y)
    return _bounds.upper(diff) <= 0 if is_min else _bounds.lower(diff) >= 0


def _normalised_extremum(kind: type[Min] | type[Max], args: list[Dim]) -> Dim:
    """``kind(args)`` with shared terms and a common positive factor taken out; the
    operands that remain have non-negative coefficients and no shared term."""
    common = _common_part(args)
    shifted = [sub(arg, common) for arg in args]
    factor = 0
    for arg in shifted:
        factor = gcd(factor, content(to_terms(arg)))
    if factor > 1:
        shifted = [floordiv(arg, factor) for arg in shifted]
    shifted.sort(key=dim_key)
    return add(mul(kind.make(tuple(shifted)), max(factor, 1)), common)


def _common_part(args: list[Dim]) -> Dim:
    """Per monomial, the smallest coefficient among the operands (absent counts as 0).

    Taking it out of every operand is exact (``min(x + t, y + t) == min(x, y) + t``)
    and makes operands that differ only by shared terms canonical:
    ``min(n * 2, n + q) -> min(n, q) + n``, ``min(n + 3, 5) -> min(2, n) + 3``.
    """
    opened = [to_terms(arg) for arg in args]
    monomials = {monomial for terms in opened for monomial in terms}
    shared = {mono: min(terms.get(mono, 0) for terms in opened) for mono in monomials}
    return close(shared)
