"""Canonicalising constructors: every arithmetic operation on dims goes through here.

Each function takes canonical dims and returns the canonical dim of the result,
a plain ``int`` whenever the result is constant. Rules, each exact for every
integer value of the symbols (Python floor semantics):

- sums and products expand into the polynomial normal form (:mod:`.terms`);
- ``a // c`` and ``a % c`` for a constant ``c > 0``: each coefficient ``k`` of ``a``
  splits as ``k = c * (k // c) + k % c``, so ``a = c * q + r`` and
  ``a // c = q + r // c``, ``a % c = r % c``; a common factor ``g`` of ``r`` and
  ``c`` cancels (``(g*x) // (g*d) = x // d``, ``(g*x) % (g*d) = g * (x % d)``);
  ``r // c`` is a constant when ``r``'s bounds fall in one multiple of ``c``
  (``(n % 8) // 8 -> 0``), ``r % c`` is ``r`` when ``0 <= r < c``;
  ``(x // a) // b -> x // (a*b)`` and ``(x % (k*c)) % c -> x % c``.
  A negative constant divisor is made positive: ``a // -c = (-a) // c`` and
  ``a % -c = -((-a) % c)``.
- a symbolic divisor ``b`` is resolved only when ``b`` is provably non-zero and
  ``a`` is a polynomial multiple of it, or ``0 <= a < b`` is provable;
- ``min``/``max`` flatten (also through added terms and positive factors), drop
  operands that another provably dominates, take out per monomial the smallest
  coefficient (absent counts as 0) and a common positive factor, and sort the rest.
"""

from __future__ import annotations

import numbers
from math import gcd

from relaxjax.arith import bounds as _bounds
from relaxjax.arith.expr import (
    Dim,
    Expr,
    FloorDiv,
    Max,
    Min,
    Mod,
    Monomial,
    Poly,
    dim_key,
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
    """The canonical dim of a term dictionary, after folding floor-division/modulo pairs:
    ``c * (x // c) + x % c -> x`` and ``x - c * (x // c) -> x % c`` (times any ``k``)."""
    if len(terms) > 1:
        while _fold_one_divmod(terms):
            pass
    return from_terms(terms)


def _fold_one_divmod(terms: Terms) -> bool:
    for monomial, coeff in terms.items():
        if len(monomial) != 1 or monomial[0][1] != 1:
            continue
        atom = monomial[0][0]
        if not (isinstance(atom, FloorDiv) and isinstance(atom.b, int)) or coeff % atom.b:
            continue
        if _fold_with_mod(terms, monomial, coeff) or _fold_with_dividend(terms, monomial, coeff):
            return True
    return False


def _fold_with_mod(terms: Terms, quotient: Monomial, coeff: int) -> bool:
    """``k * c * (x // c) + k * (x % c) -> k * x``."""
    x, c = quotient[0][0].a, quotient[0][0].b
    remainder = ((Mod.make(x, c), 1),)
    k = coeff // c
    if terms.get(remainder) != k:
        return False
    del terms[quotient], terms[remainder]
    add_into(terms, to_terms(x), k)
    return True


def _fold_with_dividend(terms: Terms, quotient: Monomial, coeff: int) -> bool:
    """``k * x - k * c * (x // c) -> k * (x % c)`` when every term of ``k * x`` is present."""
    x, c = quotient[0][0].a, quotient[0][0].b
    k = -coeff // c
    dividend, _ = split_constant(to_terms(x))
    if not dividend or any(terms.get(m) != k * x_coeff for m, x_coeff in dividend.items()):
        return False
    del terms[quotient]
    add_into(terms, to_terms(x), -k)
    add_into(terms, to_terms(mod(x, c)), k)
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
    if isinstance(r, FloorDiv) and isinstance(r.b, int):
        return FloorDiv.make(r.a, r.b * c)
    return FloorDiv.make(r, c)


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


# min and max ------------------------------------------------------------------------


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


__all__ = [
    "add",
    "as_dim",
    "as_dim_or_none",
    "close",
    "floordiv",
    "max_",
    "min_",
    "mod",
    "mul",
    "neg",
    "power",
    "sub",
]
