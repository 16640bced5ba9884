"""Canonicalising constructors: every arithmetic operation on dims goes through here.

Each function takes canonical dims and returns the canonical dim of the result,
a plain ``int`` whenever the result is constant. Rules, each exact for every
integer value of the symbols (Python floor semantics):

- sums and products expand into the polynomial normal form (:mod:`.terms`), then
  each linear group ``k * x + f * (x // c) + m * (x % c)`` takes one canonical
  spelling (:func:`_normalise_pair`): ``n - (n // 2) * 2 -> n % 2``;
- ``a // c`` and ``a % c`` for a constant ``c > 0``: each coefficient ``k`` of ``a``
  splits as ``k = c * (k // c) + k % c``, so ``a = c * q + r`` and
  ``a // c = q + r // c``, ``a % c = r % c``; a common factor ``g`` of ``r`` and
  ``c`` cancels (``(g*x) // (g*d) = x // d``, ``(g*x) % (g*d) = g * (x % d)``);
  ``r // c`` is a constant when ``r``'s bounds fall in one multiple of ``c``
  (``(n % 8) // 8 -> 0``), ``r % c`` is ``r`` when ``0 <= r < c``;
  ``(p + x // d) // c -> (d*p + x) // (d*c)`` and ``(x % (k*c)) % c -> x % c``.
  A negative constant divisor is made positive: ``a // -c = (-a) // c`` and
  ``a % -c = -((-a) % c)``.
- a symbolic divisor ``b`` is resolved only when ``b`` is provably non-zero and
  ``a`` is a polynomial multiple of it, or ``0 <= a < b`` is provable;
- :func:`exact_div` divides polynomials exactly, for callers whose run-time checks
  exclude a zero divisor (``a // b`` must hold for every value, so it cannot);
- ``min``/``max`` live in :mod:`.extremum`.
"""

from __future__ import annotations

import numbers
from math import gcd

from relaxjax.arith import bounds as _bounds
from relaxjax.arith.expr import (
    Dim,
    Expr,
    FloorDiv,
    Mod,
    render_operand,
)
from relaxjax.arith.terms import (
    Terms,
    add_into,
    content,
    exact_quotient,
    from_terms,
    multiply,
    scaled,
    split_constant,
    to_terms,
)


def as_dim_or_none(value: object) -> Dim | None:
    """``value`` as a dim (ints, numpy integers, Exprs), or ``None`` if it is not one."""
    if type(value) is int or isinstance(value, Expr):
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    return None


def as_dim(value: object) -> Dim:
    """``value`` as a dim; ``TypeError`` naming it otherwise."""
    dim = as_dim_or_none(value)
    if dim is None:
        raise TypeError(
            f"expected an int or a symbolic dim, got {value!r} ({type(value).__name__})"
        )
    return dim


def close(terms: Terms) -> Dim:
    """The canonical dim of a term dictionary (consumed), after normalising every
    quotient/remainder pair (see :func:`_normalise_pair`)."""
    if len(terms) > 1:
        for _ in range(_PAIR_ROUNDS):
            if not any(_normalise_pair(terms, x, c) for x, c in _divmod_pairs(terms)):
                break
    return from_terms(terms)


_PAIR_ROUNDS = 8


def _divmod_pairs(terms: Terms) -> list[tuple[Dim, int]]:
    """The ``(x, c)`` of every linear ``x // c`` or ``x % c`` term (constant ``c``)."""
    pairs: dict[tuple[Dim, int], None] = {}
    for monomial in terms:
        if len(monomial) == 1 and monomial[0][1] == 1:
            atom = monomial[0][0]
            if isinstance(atom, FloorDiv | Mod) and isinstance(atom.b, int):
                pairs[(atom.a, atom.b)] = None
    return list(pairs)


def _normalise_pair(terms: Terms, x: Dim, c: int) -> bool:
    """Choose one canonical spelling of ``terms`` among those equal through
    ``x == c * (x // c) + x % c``.

    Adding ``t * (x - c * (x // c) - x % c)`` (which is 0) gives the same value for
    every integer ``t``. The best spellings zero at least one of the coefficients
    involved (of ``x // c``, of ``x % c``, of each term of ``x``); among them the
    canonical one has the fewest ``//``/``%`` terms, then the fewest terms in all,
    preferably no ``%`` term, then the smallest ``//`` coefficient (positive first).
    The choice depends only on the value, not on the spelling given:
    ``n - (n // 2) * 2 -> n % 2``, ``(n // 2) * 2 + n % 2 -> n``,
    ``n // 3 + n % 3 -> n - (n // 3) * 2``. Returns whether ``terms`` changed.
    """
    quotient = ((FloorDiv.make(x, c), 1),)
    remainder = ((Mod.make(x, c), 1),)
    f, m = terms.get(quotient, 0), terms.get(remainder, 0)
    x_terms = split_constant(to_terms(x))[0]
    x_coeffs = [(terms.get(mono, 0), coeff) for mono, coeff in x_terms.items()]
    candidates = {m} | {-present // coeff for present, coeff in x_coeffs if present % coeff == 0}
    if f % c == 0:
        candidates.add(f // c)

    def rank(t: int) -> tuple:
        q_coeff, r_coeff = f - c * t, m - t
        x_count = sum(present + t * coeff != 0 for present, coeff in x_coeffs)
        atoms = (q_coeff != 0) + (r_coeff != 0)
        return (atoms, atoms + x_count, r_coeff != 0, abs(q_coeff), q_coeff < 0)

    best = min(candidates, key=rank)
    if best == 0:
        return False
    add_into(terms, to_terms(x), best)
    add_into(terms, {quotient: -c * best})
    add_into(terms, to_terms(mod(x, c)), -best)
    return True


def add(a: Dim, b: Dim) -> Dim:
    """``a + b``."""
    if type(a) is int and type(b) is int:
        return a + b
    return close(add_into(to_terms(a), to_terms(b)))


def sub(a: Dim, b: Dim) -> Dim:
    """``a - b``."""
    if type(a) is int and type(b) is int:
        return a - b
    return close(add_into(to_terms(a), to_terms(b), -1))


def neg(a: Dim) -> Dim:
    """``-a``."""
    return -a if isinstance(a, int) else from_terms(scaled(to_terms(a), -1))


def mul(a: Dim, b: Dim) -> Dim:
    """``a * b`` (expanded)."""
    if type(a) is int:
        return a * b if type(b) is int else close(scaled(to_terms(b), a))
    if type(b) is int:
        return close(scaled(to_terms(a), b))
    return close(multiply(to_terms(a), to_terms(b)))


def power(a: Dim, exponent: int) -> Dim:
    """``a ** exponent`` for a non-negative integer exponent."""
    if exponent < 0:
        raise ValueError(f"a dim can only be raised to a non-negative power, got {exponent}")
    result: Dim = 1
    for _ in range(exponent):
        result = mul(result, a)
    return result


# floor division and modulo ------------------------------------------------------


def floordiv(a: Dim, b: Dim) -> Dim:
    """``a // b`` with Python floor semantics; ``ZeroDivisionError`` for ``b == 0``."""
    if isinstance(b, int):
        if b == 0:
            raise ZeroDivisionError(f"integer division by zero: {render_operand(a, True)} // 0")
        if isinstance(a, int):
            return a // b
        if b < 0:
            return floordiv(neg(a), -b)
        return a if b == 1 else _floordiv_constant(a, b)
    return _floordiv_symbolic(a, b)


def mod(a: Dim, b: Dim) -> Dim:
    """``a % b`` with Python semantics (the result has the divisor's sign)."""
    if isinstance(b, int):
        if b == 0:
            raise ZeroDivisionError(f"integer modulo by zero: {render_operand(a, True)} % 0")
        if isinstance(a, int):
            return a % b
        if b < 0:
            return neg(mod(neg(a), -b))
        return 0 if b == 1 else _mod_constant(a, b)
    return _mod_symbolic(a, b)


def _split(a: Dim, c: int) -> tuple[Dim, Dim, int, int]:
    """``a = c * quotient + g * remainder`` with ``remainder``'s coefficients in ``[0, c/g)``.

    Returns ``(quotient, remainder, g, c // g)``.
    """
    quotient, remainder = {}, {}
    for monomial, coeff in to_terms(a).items():
        q, r = divmod(coeff, c)
        if q:
            quotient[monomial] = q
        if r:
            remainder[monomial] = r
    g = gcd(content(remainder), c)
    return close(quotient), close(scaled_down(remainder, g)), g, c // g


def scaled_down(terms: dict, factor: int) -> dict:
    """``terms / factor`` for a factor that divides every coefficient."""
    return terms if factor == 1 else {m: k // factor for m, k in terms.items()}


def _floordiv_constant(a: Expr, c: int) -> Dim:
    quotient, remainder, _, divisor = _split(a, c)
    return add(quotient, _floordiv_remainder(remainder, divisor))


def _floordiv_remainder(r: Dim, c: int) -> Dim:
    if isinstance(r, int) or c == 1:
        return r // c
    lo, hi = _bounds.interval(r, {})
    if floor_of(lo, c) == floor_of(hi, c) and lo != -_bounds.INF:
        return lo // c
    inner = _inner_quotient(r)
    if inner is not None:
        # (p + x // d) // c == (d * p + x) // (d * c) for d, c > 0 and integer p
        rest, (x, d) = inner
        return floordiv(add(mul(rest, d), x), d * c)
    return FloorDiv.make(r, c)


def _inner_quotient(r: Expr) -> tuple[Dim, tuple[Dim, int]] | None:
    """``(p, (x, d))`` when ``r == p + x // d`` with a constant ``d``, else None."""
    for monomial, coeff in to_terms(r).items():
        if coeff == 1 and len(monomial) == 1 and monomial[0][1] == 1:
            atom = monomial[0][0]
            if isinstance(atom, FloorDiv) and isinstance(atom.b, int):
                return sub(r, atom), (atom.a, atom.b)
    return None


def floor_of(x: float | int, c: int) -> float | int:
    """``floor(x / c)`` for ``c > 0`` with infinite ends."""
    return _bounds.floor_divide(x, c)


def _mod_constant(a: Expr, c: int) -> Dim:
    _, remainder, g, divisor = _split(a, c)
    return mul(g, _mod_remainder(remainder, divisor))


def _mod_remainder(r: Dim, c: int) -> Dim:
    if isinstance(r, int) or c == 1:
        return r % c
    lo, hi = _bounds.interval(r, {})
    if lo != -_bounds.INF and floor_of(lo, c) == floor_of(hi, c):
        return sub(r, c * (lo // c))
    if isinstance(r, Mod) and isinstance(r.b, int) and r.b % c == 0:
        return mod(r.a, c)
    return Mod.make(r, c)


def exact_div(a: Dim, b: Dim) -> Dim | None:
    """The polynomial ``q`` with ``a == q * b`` for every value of the symbols, or None.

    Then ``a // b == q`` wherever ``b != 0`` (and ``a == 0`` wherever ``b == 0``), so an
    op whose run-time checks exclude a zero divisor may use ``q`` for ``a // b``, which
    :func:`floordiv` leaves unresolved unless ``b`` is non-zero for every value:

    >>> from relaxjax.arith.expr import Sym
    >>> a, b, n = Sym("a"), Sym("b"), Sym("n")
    >>> exact_div(a * b * 6, b * 3), exact_div(n * n + n, n + 1), exact_div(n + 1, n)
    (a * 2, n, None)
    """
    if isinstance(b, int) and b == 0:
        return None
    if isinstance(a, int) and isinstance(b, int):
        return a // b if a % b == 0 else None
    quotient = exact_quotient(to_terms(a), to_terms(b))
    return None if quotient is None else close(quotient)


def _provably_nonzero(b: Dim) -> bool:
    lo, hi = _bounds.lower(b), _bounds.upper(b)
    return lo > 0 or hi < 0


def _provably_in_range(a: Dim, b: Dim) -> bool:
    """``0 <= a < b`` for every value of the symbols."""
    return _bounds.lower(a) >= 0 and _bounds.upper(sub(a, b)) < 0


def _floordiv_symbolic(a: Dim, b: Expr) -> Dim:
    if _provably_nonzero(b):
        quotient = exact_quotient(to_terms(a), to_terms(b))
        if quotient is not None:
            return from_terms(quotient)
        if _provably_in_range(a, b):
            return 0
    return FloorDiv.make(a, b)


def _mod_symbolic(a: Dim, b: Expr) -> Dim:
    if _provably_nonzero(b):
        if exact_quotient(to_terms(a), to_terms(b)) is not None:
            return 0
        if _provably_in_range(a, b):
            return a
    return Mod.make(a, b)


__all__ = [
    "add",
    "as_dim",
    "as_dim_or_none",
    "close",
    "exact_div",
    "floordiv",
    "mod",
    "mul",
    "neg",
    "power",
    "sub",
]
