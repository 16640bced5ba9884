"""Three-valued comparisons of dims that never guess.

:func:`compare` answers ``True`` or ``False`` only when the relation holds (or fails)
for every value of the symbols within their bounds, and ``None`` otherwise. It looks
at the canonical difference ``a - b``: its sound bounds (:mod:`.bounds`) decide
orderings, and for ``==`` also a divisibility argument (``2*n`` never equals
``2*m + 1``).
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping

from relaxjax.arith.algebra import as_dim, sub
from relaxjax.arith.bounds import Ranges, lower, normalise_ranges, upper
from relaxjax.arith.expr import Dim, Sym
from relaxjax.arith.terms import content, split_constant, to_terms

RangesArg = Mapping[Sym | str, tuple[int | None, int | None]] | None

_PYTHON_OPS: dict[str, Callable[[int, int], bool]] = {
    "==": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}


def compare(a: Dim, op: str, b: Dim, ranges: RangesArg = None) -> bool | None:
    """``a op b`` for every value of the symbols: ``True``, ``False`` or ``None`` (unknown).

    ``op`` is one of ``"==", "!=", "<", "<=", ">", ">="``; ``ranges`` overrides the
    declared bounds of some symbols.

    >>> n = Sym("n")
    >>> compare(n + 1, ">", n), compare(n, "<", 4)
    (True, None)
    """
    if op not in _PYTHON_OPS:
        raise ValueError(f"unknown comparison {op!r}; expected one of {', '.join(_PYTHON_OPS)}")
    diff = sub(as_dim(a), as_dim(b))
    if isinstance(diff, int):
        return _PYTHON_OPS[op](diff, 0)
    env = normalise_ranges(ranges)
    if op in ("==", "!="):
        is_zero = _decide_zero(diff, env)
        return is_zero if op == "==" or is_zero is None else not is_zero
    return _decide_order(diff, op, env)


def _decide_zero(diff: Dim, env: Ranges) -> bool | None:
    terms, const = split_constant(to_terms(diff))
    if const % content(terms):
        return False  # every non-constant term is a multiple of the content
    lo = lower(diff, env)
    if lo > 0:
        return False
    hi = upper(diff, env)
    if hi < 0:
        return False
    return True if lo == hi == 0 else None


def _decide_order(diff: Dim, op: str, env: Ranges) -> bool | None:
    # Every order relation is one of diff < 0, diff <= 0, diff > 0, diff >= 0.
    if op in ("<", "<="):
        hi = upper(diff, env)
        if hi < 0 or (op == "<=" and hi == 0):
            return True
        lo = lower(diff, env)
        return False if lo > 0 or (op == "<" and lo == 0) else None
    lo = lower(diff, env)
    if lo > 0 or (op == ">=" and lo == 0):
        return True
    hi = upper(diff, env)
    return False if hi < 0 or (op == ">" and hi == 0) else None


def prove_equal(a: Dim, b: Dim, ranges: RangesArg = None) -> bool:
    """``True`` iff ``a == b`` is proven for every value of the symbols."""
    return compare(a, "==", b, ranges) is True


def prove_ne(a: Dim, b: Dim, ranges: RangesArg = None) -> bool:
    """``True`` iff ``a != b`` is proven for every value of the symbols."""
    return compare(a, "!=", b, ranges) is True


def prove_lt(a: Dim, b: Dim, ranges: RangesArg = None) -> bool:
    """``True`` iff ``a < b`` is proven for every value of the symbols."""
    return compare(a, "<", b, ranges) is True


def prove_le(a: Dim, b: Dim, ranges: RangesArg = None) -> bool:
    """``True`` iff ``a <= b`` is proven for every value of the symbols."""
    return compare(a, "<=", b, ranges) is True


def prove_gt(a: Dim, b: Dim, ranges: RangesArg = None) -> bool:
    """``True`` iff ``a > b`` is proven for every value of the symbols."""
    return compare(a, ">", b, ranges) is True


def prove_ge(a: Dim, b: Dim, ranges: RangesArg = None) -> bool:
    """``True`` iff ``a >= b`` is proven for every value of the symbols."""
    return compare(a, ">=", b, ranges) is True
