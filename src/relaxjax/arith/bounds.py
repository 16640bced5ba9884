"""Sound integer bounds of dims: interval analysis plus symbolic refinement.

:func:`bounds` gives an interval that holds for every value of the symbols within
their declared bounds (``>= 0`` unless declared otherwise), optionally overridden by
``ranges``. Division and modulo are analysed where they are defined (a divisor that
may be zero is taken to be non-zero: a zero divisor fails at run time anyway).

:func:`upper` and :func:`lower` tighten the interval symbolically before evaluating
it: a ``min``/``max``/``//``/``%`` atom that appears linearly is replaced by what it
is known to be below or above (``min(x, y) <= x``, ``c * (x // c) <= x``,
``x % y <= y - 1``), so that ``min(n, 4) <= n`` or ``(n // 2) * 2 <= n`` can be
proven although the atoms' own intervals are unbounded. A symbol whose upper bound is
a dim (``k <= n * 4``) is replaced the same way where it appears with a positive
coefficient and non-negative cofactors, so ``k - n * 4 <= 0`` and ``k * m <= n * m * 4``.
Internally unbounded ends are ``math.inf``; the public functions return ``None`` for them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from relaxjax.arith.expr import Dim, Expr, FloorDiv, Max, Min, Mod, Poly, Sym
from relaxjax.arith.terms import CONSTANT, Terms, add_into, scaled, to_terms

INF = math.inf

Extended = int | float
Interval = tuple[Extended, Extended]
Ranges = Mapping[str, Interval]

#: How many nested atom substitutions :func:`upper` / :func:`lower` try.
SYMBOLIC_DEPTH = 3


def bounds(
    value: Dim, ranges: Mapping[Sym | str, tuple[int | None, int | None]] | None = None
) -> tuple[int | None, int | None]:
    """A sound interval ``(lower, upper)`` of ``value``; ``None`` marks an unbounded end.

    ``ranges`` overrides the declared bounds of some symbols (keys: Syms or names).

    >>> n = Sym("n", lower=1, upper=8)
    >>> bounds(n * 2 + 1)
    (3, 17)
    """
    env = normalise_ranges(ranges)
    lo = lower(value, env)
    hi = upper(value, env)
    return (None if lo == -INF else int(lo), None if hi == INF else int(hi))


def normalise_ranges(
    ranges: Mapping[Sym | str, tuple[int | None, int | None]] | None,
) -> dict[str, Interval]:
    """``ranges`` keyed by symbol name with ``None`` ends made infinite."""
    if not ranges:
        return {}
    env: dict[str, Interval] = {}
    for key, (lo, hi) in ranges.items():
        name = key.name if isinstance(key, Sym) else key
        if not isinstance(name, str):
            raise TypeError(f"a range key must be a Sym or a symbol name, got {key!r}")
        env[name] = (-INF if lo is None else lo, INF if hi is None else hi)
    return env


def interval(value: Dim, env: Ranges) -> Interval:
    """The plain interval of ``value`` (no symbolic refinement)."""
    if isinstance(value, int):
        return (value, value)
    if env:
        return _compute(value, env)
    cached = value._interval
    if cached is None:
        cached = _compute(value, env)
        object.__setattr__(value, "_interval", cached)
    return cached


def upper(value: Dim, env: Ranges | None = None, depth: int = SYMBOLIC_DEPTH) -> Extended:
    """A sound upper bound of ``value`` (``math.inf`` when unbounded)."""
    if isinstance(value, int):
        return value
    return _upper_terms(to_terms(value), env or {}, depth)


def lower(value: Dim, env: Ranges | None = None, depth: int = SYMBOLIC_DEPTH) -> Extended:
    """A sound lower bound of ``value`` (``-math.inf`` when unbounded)."""
    if isinstance(value, int):
        return value
    return -_upper_terms(scaled(to_terms(value), -1), env or {}, depth)


# plain interval analysis ---------------------------------------------------------


def _compute(value: Expr, env: Ranges) -> Interval:
    if isinstance(value, Sym):
        return _symbol_interval(value, env)
    if isinstance(value, Poly):
        return terms_interval(to_terms(value), env)
    if isinstance(value, FloorDiv):
        return _floordiv(interval(value.a, env), interval(value.b, env))
    if isinstance(value, Mod):
        return _mod(interval(value.a, env), interval(value.b, env))
    if isinstance(value, Min):
        parts = [interval(arg, env) for arg in value.args]
        return (min(p[0] for p in parts), min(p[1] for p in parts))
    if isinstance(value, Max):
        parts = [interval(arg, env) for arg in value.args]
        return (max(p[0] for p in parts), max(p[1] for p in parts))
    raise TypeError(f"not a dim: {value!r}")


def _symbol_interval(symbol: Sym, env: Ranges) -> Interval:
    if symbol.name in env:
        return env[symbol.name]
    lo = -INF if symbol.lower is None else symbol.lower
    upper_bound = symbol.upper
    if upper_bound is None:
        hi: Extended = INF
    elif isinstance(upper_bound, int):
        hi = upper_bound
    else:  # a symbolic bound: as large as that dim can be
        hi = max(lo, interval(upper_bound, env)[1])
    return (lo, hi)


def terms_interval(terms: Terms, env: Ranges) -> Interval:
    """The interval of a polynomial, term by term."""
    lo: Extended = 0
    hi: Extended = 0
    for monomial, coeff in terms.items():
        if monomial == CONSTANT:
            lo, hi = lo + coeff, hi + coeff
            continue
        factor: Interval = (1, 1)
        for atom, power in monomial:
            factor = _multiply(factor, _power(interval(atom, env), power))
        t_lo, t_hi = _scale(coeff, factor)
        lo, hi = lo + t_lo, hi + t_hi
    return (lo, hi)


def _times(x: Extended, y: Extended) -> Extended:
    # Interval convention: an infinite end is never attained, so 0 * inf = 0.
    return 0 if x == 0 or y == 0 else x * y


def _multiply(a: Interval, b: Interval) -> Interval:
    corners = (_times(a[0], b[0]), _times(a[0], b[1]), _times(a[1], b[0]), _times(a[1], b[1]))
    return (min(corners), max(corners))


def _power(a: Interval, exponent: int) -> Interval:
    lo, hi = a
    if exponent % 2 or lo >= 0:
        return (lo**exponent, hi**exponent)
    if hi <= 0:
        return (hi**exponent, lo**exponent)
    return (0, max(lo**exponent, hi**exponent))


def _scale(k: int, a: Interval) -> Interval:
    return (k * a[0], k * a[1]) if k > 0 else (k * a[1], k * a[0])


def floor_divide(x: Extended, y: Extended) -> Extended:
    """``floor(x / y)`` for ``y > 0``, with infinite ends."""
    if x in (INF, -INF):
        return x
    if y == INF:
        return 0 if x >= 0 else -1
    return x // y


def _nonzero(b: Interval) -> Interval | None:
    """The divisor interval without 0, or None when it spans zero (or is only zero)."""
    lo, hi = b
    if lo >= 0 and hi >= 1:
        return (max(lo, 1), hi)
    if hi <= 0 and lo <= -1:
        return (lo, min(hi, -1))
    return None


def _floordiv(a: Interval, b: Interval) -> Interval:
    divisor = _nonzero(b)
    if divisor is None:
        return (-INF, INF)
    if divisor[1] < 0:  # a // b == (-a) // (-b)
        a, divisor = (-a[1], -a[0]), (-divisor[1], -divisor[0])
    b_lo, b_hi = divisor
    lo = floor_divide(a[0], b_lo if a[0] < 0 else b_hi)
    hi = floor_divide(a[1], b_lo if a[1] >= 0 else b_hi)
    return (lo, hi)


def _mod(a: Interval, b: Interval) -> Interval:
    divisor = _nonzero(b)
    if divisor is None:
        lo, hi = b
        return (min(0, lo + 1), max(0, hi - 1))
    b_lo, b_hi = divisor
    if b_lo >= 1:
        if a[0] >= 0 and a[1] < b_lo:
            return a
        return (0, min(b_hi - 1, a[1]) if a[0] >= 0 else b_hi - 1)
    if a[1] <= 0 and a[0] > b_hi:
        return a
    return (b_lo + 1, 0) if a[1] > 0 else (max(b_lo + 1, a[0]), 0)


# symbolic refinement --------------------------------------------------------------


def _upper_terms(terms: Terms, env: Ranges, depth: int) -> Extended:
    best = terms_interval(terms, env)[1]
    if depth <= 0:
        return best
    for monomial, coeff in terms.items():
        refined = _bounded_symbol_upper(terms, monomial, coeff, env, depth - 1)
        if refined < best:
            best = refined
        if len(monomial) != 1 or monomial[0][1] != 1:
            continue
        atom = monomial[0][0]
        if isinstance(atom, Sym):
            continue
        rest = dict(terms)
        del rest[monomial]
        refined = _atom_upper(atom, coeff, rest, env, depth - 1)
        if refined < best:
            best = refined
    return best


def _bounded_symbol_upper(
    terms: Terms, monomial: tuple, coeff: int, env: Ranges, depth: int
) -> Extended:
    """An upper bound of ``terms`` with a symbol of ``monomial`` replaced by its symbolic
    upper bound: ``coeff * k * rest <= coeff * upper(k) * rest`` when ``coeff > 0``, the
    rest of the monomial is non-negative and ``k`` appears to the first power."""
    if coeff <= 0:
        return INF
    for position, (atom, power) in enumerate(monomial):
        if not (isinstance(atom, Sym) and isinstance(atom.upper, Expr) and power == 1):
            continue
        if atom.name in env:
            continue  # the caller's range replaces the declared bound
        cofactor = monomial[:position] + monomial[position + 1 :]
        if any(interval(a, env)[0] < 0 and p % 2 for a, p in cofactor):
            continue
        product: Dim = atom.upper
        for factor, times in cofactor:
            product = product * factor**times
        rest = dict(terms)
        del rest[monomial]
        return _upper_terms(_with(rest, coeff, product), env, depth)
    return INF


def _with(rest: Terms, coeff: int, value: Dim, offset: int = 0) -> Terms:
    """``rest + coeff * value + offset`` as a new term dictionary."""
    terms = add_into(dict(rest), to_terms(value), coeff)
    return add_into(terms, {CONSTANT: offset}) if offset else terms


def _atom_upper(atom: Expr, coeff: int, rest: Terms, env: Ranges, depth: int) -> Extended:
    """An upper bound of ``rest + coeff * atom`` from what ``atom`` is known to be below."""
    if isinstance(atom, Min | Max):
        uppers = [_upper_terms(_with(rest, coeff, arg), env, depth) for arg in atom.args]
        # coeff * min(args) == min(coeff * args) for coeff > 0, and max(...) for coeff < 0
        behaves_as_min = isinstance(atom, Min) == (coeff > 0)
        return min(uppers) if behaves_as_min else max(uppers)
    if isinstance(atom, FloorDiv) and isinstance(atom.b, int) and atom.b > 0:
        c = atom.b
        # c * (x // c) lies in [x - c + 1, x]
        offset = 0 if coeff > 0 else coeff * (1 - c)
        numerator = _with(scaled(rest, c), coeff, atom.a, offset)
        return floor_divide(_upper_terms(numerator, env, depth), c)
    if isinstance(atom, Mod) and coeff > 0:
        candidates = [INF]
        positive_divisor = isinstance(atom.b, int) or interval(atom.b, env)[0] >= 1
        if positive_divisor and interval(atom.a, env)[0] >= 0:  # x % y <= x when x >= 0
            candidates.append(_upper_terms(_with(rest, coeff, atom.a), env, depth))
        if not isinstance(atom.b, int) and interval(atom.b, env)[0] >= 1:
            candidates.append(_upper_terms(_with(rest, coeff, atom.b, -coeff), env, depth))
        return min(candidates)
    return INF
