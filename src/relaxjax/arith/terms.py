"""Polynomials as term dictionaries: the arithmetic under the canonical form.

A term dictionary maps a :data:`Monomial` (sorted ``(atom, power)`` pairs; ``()``
for the constant) to its non-zero integer coefficient. :func:`to_terms` opens a
dim into one, :func:`from_terms` closes one into the canonical dim.
"""

from __future__ import annotations

import functools
from math import gcd

from relaxjax.arith.expr import Dim, Expr, Monomial, Poly

Terms = dict[Monomial, int]

CONSTANT: Monomial = ()


def to_terms(value: Dim) -> Terms:
    """The term dictionary of a canonical dim (a fresh dict the caller may mutate)."""
    if isinstance(value, int):
        return {CONSTANT: value} if value else {}
    if isinstance(value, Poly):
        terms = dict(value.terms)
        if value.const:
            terms[CONSTANT] = value.const
        return terms
    return {((value, 1),): 1}


@functools.lru_cache(maxsize=16384)
def monomial_key(monomial: Monomial) -> tuple:
    """Canonical term order: higher degree first, then factors in atom order."""
    factors = tuple(atom.sort_key() for atom, power in monomial for _ in range(power))
    return (-len(factors), factors)


def from_terms(terms: Terms) -> Dim:
    """The canonical dim of a term dictionary (zero coefficients are dropped)."""
    const = terms.get(CONSTANT, 0)
    kept = [(m, c) for m, c in terms.items() if c and m != CONSTANT]
    if not kept:
        return const
    if len(kept) == 1 and const == 0:
        monomial, coeff = kept[0]
        if coeff == 1 and len(monomial) == 1 and monomial[0][1] == 1:
            return monomial[0][0]
    kept.sort(key=lambda item: monomial_key(item[0]))
    return Poly.make(tuple(kept), const)


def add_into(target: Terms, terms: Terms, scale: int = 1) -> Terms:
    """``target += scale * terms`` in place; returns ``target``."""
    for monomial, coeff in terms.items():
        total = target.get(monomial, 0) + scale * coeff
        if total:
            target[monomial] = total
        else:
            target.pop(monomial, None)
    return target


def scaled(terms: Terms, scale: int) -> Terms:
    """``scale * terms`` as a new dictionary."""
    if scale == 0:
        return {}
    return {monomial: scale * coeff for monomial, coeff in terms.items()}


def multiply_monomials(left: Monomial, right: Monomial) -> Monomial:
    """The product of two monomials, in canonical factor order."""
    if not left:
        return right
    if not right:
        return left
    powers: dict[Expr, int] = dict(left)
    for atom, power in right:
        powers[atom] = powers.get(atom, 0) + power
    return tuple(sorted(powers.items(), key=lambda item: item[0].sort_key()))


def multiply(left: Terms, right: Terms) -> Terms:
    """The product of two term dictionaries."""
    product: Terms = {}
    for lm, lc in left.items():
        for rm, rc in right.items():
            monomial = multiply_monomials(lm, rm)
            total = product.get(monomial, 0) + lc * rc
            if total:
                product[monomial] = total
            else:
                product.pop(monomial, None)
    return product


def content(terms: Terms) -> int:
    """The gcd of all coefficients (0 for the zero polynomial)."""
    result = 0
    for coeff in terms.values():
        result = gcd(result, coeff)
    return result


def split_constant(terms: Terms) -> tuple[Terms, int]:
    """``(terms without the constant, the constant)``."""
    rest = dict(terms)
    return rest, rest.pop(CONSTANT, 0)


def exact_quotient(dividend: Terms, divisor: Terms) -> Terms | None:
    """``q`` with ``dividend == q * divisor`` as polynomials over the integers (the atoms
    taken as independent indeterminates), or ``None`` when there is none.

    Multivariate division by the divisor's leading term in a graded lexicographic order:
    for a single divisor it is complete (when ``q`` exists, ``lead(dividend) ==
    lead(q) * lead(divisor)``, so every leading term met divides) and exact (the
    remainder must vanish). The identity holds for every value of the atoms, so
    ``dividend // divisor == q`` wherever the divisor is non-zero. Gives up (``None``)
    after :data:`DIVISION_STEPS` steps.
    """
    if not divisor:
        return None
    if not dividend:
        return {}
    order = _graded_order(dividend, divisor)
    lead, lead_coeff = max(divisor.items(), key=lambda item: order(item[0]))
    remainder = dict(dividend)
    quotient: Terms = {}
    for _ in range(DIVISION_STEPS):
        if not remainder:
            return quotient
        monomial, coeff = max(remainder.items(), key=lambda item: order(item[0]))
        factor = _divide_monomial(monomial, lead)
        if factor is None or coeff % lead_coeff:
            return None
        step = {factor: coeff // lead_coeff}
        add_into(quotient, step)
        add_into(remainder, multiply(step, divisor), -1)
    return None


#: The most leading terms :func:`exact_quotient` cancels before giving up.
DIVISION_STEPS = 256


def _graded_order(*polynomials: Terms):
    """A monomial order over the atoms of ``polynomials``: total degree, then the
    exponents of the atoms in canonical atom order (compatible with products, so the
    leading term of a product is the product of the leading terms)."""
    atoms = sorted(
        {atom for terms in polynomials for monomial in terms for atom, _ in monomial},
        key=lambda atom: atom.sort_key(),
    )

    def key(monomial: Monomial) -> tuple:
        powers = dict(monomial)
        exponents = tuple(powers.get(atom, 0) for atom in atoms)
        return (sum(exponents), exponents)

    return key


def _divide_monomial(monomial: Monomial, divisor: Monomial) -> Monomial | None:
    powers = dict(monomial)
    for atom, power in divisor:
        left = powers.get(atom, 0) - power
        if left < 0:
            return None
        if left:
            powers[atom] = left
        else:
            del powers[atom]
    return tuple(sorted(powers.items(), key=lambda item: item[0].sort_key()))
