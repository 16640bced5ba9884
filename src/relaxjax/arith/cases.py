"""Decisions by cases on small symbol values: what interval reasoning misses at 0 and 1.

Many relations between dims hold for every value only because they hold separately
at ``0``, at ``1`` and above: ``broadcast(m, min(1, m))`` is ``0 == 0`` at ``m == 0`` and
``m`` against ``1`` above, but the intervals of ``m`` and ``min(1, m)`` overlap, so
:func:`~relaxjax.arith.compare` alone cannot tell. :func:`decide_by_cases` splits each
symbol's declared range at ``0`` and ``1`` (``<= -1``, ``0``, ``1``, ``>= 2``; empty pieces
dropped), asks a three-valued decision in every combination of pieces (as ``ranges``
overriding the symbols' bounds, which :func:`~relaxjax.arith.compare` takes), and answers
``True`` when every piece answers ``True``, ``False`` when every piece answers ``False``,
``None`` otherwise. The pieces cover the declared range, so the answer is sound whenever
each piece's answer is.

>>> from relaxjax.arith.compare import compare
>>> from relaxjax.arith.expr import Sym
>>> from relaxjax.arith.extremum import min_
>>> m = Sym("m")
>>> compare(min_(1, m), "==", 1), decide_by_cases(lambda r: compare(min_(1, m), "==", 1, r), [m])
(None, None)
>>> implies = lambda r: compare(m, "!=", 1, r) or compare(min_(1, m), "==", 1, r) or None
>>> decide_by_cases(implies, [m])  # m == 1 implies min(1, m) == 1
True
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator

from relaxjax.arith.expr import Dim, Sym
from relaxjax.arith.subst import free_symbols

Bound = tuple[int | None, int | None]
CaseRanges = dict[str, Bound]

#: The pieces a symbol's range is split into: ``<= -1``, ``0``, ``1``, ``>= 2``.
PIECES: tuple[Bound, ...] = ((None, -1), (0, 0), (1, 1), (2, None))

#: Splitting more symbols than this would ask too many questions: no case analysis then.
MAX_SYMBOLS = 3


def decide_by_cases(
    decide: Callable[[CaseRanges], bool | None], dims: Iterable[Dim]
) -> bool | None:
    """``decide`` in every piece of the symbols of ``dims`` (see the module docstring):
    True if every piece answers True, False if every piece answers False, else None.
    None without asking when ``dims`` have no symbols or more than :data:`MAX_SYMBOLS`."""
    symbols = sorted({symbol for dim in dims for symbol in free_symbols(dim)}, key=lambda s: s.name)
    if not symbols or len(symbols) > MAX_SYMBOLS:
        return None
    answers = set()
    for ranges in cases(symbols):
        answer = decide(ranges)
        answers.add(answer)
        if answer is None or len(answers) > 1:
            return None
    return answers.pop() if answers else None


def cases(symbols: Iterable[Sym]) -> Iterator[CaseRanges]:
    """Every combination of the non-empty pieces of the symbols' declared ranges."""
    per_symbol = [[(s.name, piece) for piece in pieces(s)] for s in symbols]
    for combination in itertools.product(*per_symbol):
        yield dict(combination)


def pieces(symbol: Sym) -> list[Bound]:
    """The non-empty pieces of ``symbol``'s declared range (a bound that is not an int,
    such as a symbolic one, is left out: the piece is then wider, still sound)."""
    lower = symbol.lower if isinstance(symbol.lower, int) else None
    upper = symbol.upper if isinstance(symbol.upper, int) else None
    found = []
    for lo, hi in PIECES:
        lo = lower if lo is None else (lo if lower is None else max(lo, lower))
        hi = upper if hi is None else (hi if upper is None else min(hi, upper))
        if lo is None or hi is None or lo <= hi:
            found.append((lo, hi))
    return found


__all__ = ["MAX_SYMBOLS", "PIECES", "cases", "decide_by_cases", "pieces"]
