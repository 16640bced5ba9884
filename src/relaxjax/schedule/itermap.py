"""Which loop values a tuple of index expressions determines (after TVM's iter maps).

Split, fuse and reorder leave block iterator values that are sums of *splits* of loop
variables, ``scale * ((l // lower) % extent)``:

- ``io * 32 + ii`` (a split) is the sum of two whole loops with scales 32 and 1;
- ``f // m`` and ``f % m`` (a fuse) are the two splits of ``f`` with lower 1 and m.

A value whose splits form a mixed radix (each scale at least the previous scale times
the previous extent) *determines* each of its splits: two points with different
split values give different values. A loop is determined by a tuple of values when
the splits of it that the values determine cover it: lowers ``1, e0, e0*e1, ...``,
the last one reaching the top of the loop. That is the sound test behind
"different iterations of this loop touch different elements".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from relaxjax import arith
from relaxjax.arith import Dim


@dataclass(frozen=True, slots=True)
class Split:
    """``(var // lower) % extent`` of a loop ``var``; ``top`` when no modulo applies
    (``var // lower`` itself stays below ``extent``). A virtual loop (a dense sum of
    loops, see :func:`_virtual`) has its ``parts`` and its ``source`` expression."""

    var: str
    lower: Dim
    extent: Dim
    top: bool
    parts: tuple[Split, ...] = ()
    whole: Dim = 0
    source: Dim = 0


@dataclass(frozen=True, slots=True)
class SplitSum:
    """``sum(scale * split) + base``, ``base`` free of the loops analysed."""

    terms: tuple[tuple[Dim, Split], ...]
    base: Dim


def ceildiv(a: Dim, b: Dim) -> Dim:
    """``ceil(a / b)`` for ``b > 0``."""
    return (a + b - 1) // b


def _uses(dim: Dim, loops: Mapping[str, Dim]) -> bool:
    return not isinstance(dim, int) and any(s.name in loops for s in arith.free_symbols(dim))


def _single(dim: Dim, loops: Mapping[str, Dim]) -> Split | None:
    parsed = parse(dim, loops)
    if parsed is None or len(parsed.terms) != 1 or parsed.base != 0:
        return None
    scale, split = parsed.terms[0]
    return split if scale == 1 else None


def _divides(divisor: Dim, extent: Dim) -> bool:
    """Whether every term of ``extent`` has the symbol ``divisor`` as a factor."""
    if not isinstance(divisor, arith.Sym) or isinstance(extent, int):
        return False
    if isinstance(extent, arith.Sym):
        return extent == divisor
    if not isinstance(extent, arith.Poly) or extent.const != 0:
        return False
    return all(any(atom == divisor for atom, _ in monomial) for monomial, _ in extent.terms)


def _usable_divisor(divisor: Dim, extent: Dim) -> bool:
    """A divisor that is positive whenever the division runs: provably positive, or
    non-negative (a zero divisor is undefined behaviour, so a program that runs the
    division has a positive one), or a factor of the loop's extent (zero only when the
    loop is empty, as ``f // m`` of a fused loop over ``n * m``)."""
    return arith.compare(divisor, ">=", 0) is True or _divides(divisor, extent)


def _virtual(dim: Dim, loops: Mapping[str, Dim]) -> Split | None:
    """A dense sum of whole loops plus a fixed base (``f0 * 16 + f1``, or ``16 * f0 + f1``
    with ``f0`` fixed) as one virtual loop named by its text: its digits (``// c``,
    ``% c``) determine it, hence the loops of the sum; :func:`determines` expands it."""
    parsed = parse(dim, loops)
    if parsed is None or not parsed.terms or not dense(dim - parsed.base, loops):
        return None
    ordered = sorted_by_scale(parsed.terms)
    scale, split = ordered[-1]
    parts = tuple(split for _, split in parsed.terms)
    extent = scale * split.extent
    return Split(_VIRTUAL + str(dim), 1, extent, True, parts, extent, dim)


_VIRTUAL = "@"


def _atom_split(atom: arith.Expr, loops: Mapping[str, Dim]) -> Split | None:
    if isinstance(atom, arith.Sym):
        if atom.name not in loops:
            return None
        return Split(atom.name, 1, loops[atom.name], True, (), loops[atom.name])
    if isinstance(atom, (arith.FloorDiv, arith.Mod)) and not _uses(atom.b, loops):
        inner = _single(atom.a, loops) or _virtual(atom.a, loops)
        if inner is None or not _usable_divisor(atom.b, inner.whole):
            return None
        if isinstance(atom, arith.Mod):
            top = arith.compare(atom.b, ">=", inner.extent) is True
            if top:
                return inner
            if not inner.top and arith.compare(inner.extent % atom.b, "==", 0) is not True:
                return None
            return Split(inner.var, inner.lower, atom.b, False, inner.parts, inner.whole)
        if inner.top:
            return Split(
                inner.var,
                inner.lower * atom.b,
                ceildiv(inner.extent, atom.b),
                True,
                inner.parts,
                inner.whole,
            )
        if arith.compare(inner.extent % atom.b, "==", 0) is True:
            return Split(
                inner.var,
                inner.lower * atom.b,
                inner.extent // atom.b,
                False,
                inner.parts,
                inner.whole,
            )
    return None


def parse(dim: Dim, loops: Mapping[str, Dim]) -> SplitSum | None:
    """``dim`` as a sum of splits of the loops named in ``loops`` (name -> extent; every
    loop starts at 0), or None when it has another form."""
    if not _uses(dim, loops):
        return SplitSum((), dim)
    if isinstance(dim, arith.Poly):
        items = [(monomial, coeff) for monomial, coeff in dim.terms]
        base: Dim = dim.const
    else:
        items = [(((dim, 1),), 1)]
        base = 0
    terms: list[tuple[Dim, Split]] = []
    for monomial, coeff in items:
        scale: Dim = coeff
        split = None
        for atom, power in monomial:
            if not _uses(atom, loops):
                for _ in range(power):
                    scale = scale * atom
                continue
            if power != 1 or split is not None:
                return None
            split = _atom_split(atom, loops)
            if split is None:
                return None
        if split is None:
            base = base + scale
        elif arith.compare(split.extent, "==", 1) is not True:
            # a split of extent 1 is always 0: it adds nothing and determines nothing
            terms.append((scale, split))
    return SplitSum(tuple(terms), base)


def sorted_by_scale(terms: Sequence[tuple[Dim, Split]]) -> list[tuple[Dim, Split]] | None:
    """The terms by increasing scale, or None when arith cannot order the scales."""
    remaining = list(terms)
    ordered: list[tuple[Dim, Split]] = []
    while remaining:
        smallest = None
        for candidate in remaining:
            if all(arith.compare(candidate[0], "<=", other[0]) is True for other in remaining):
                smallest = candidate
                break
        if smallest is None:
            return None
        ordered.append(smallest)
        remaining.remove(smallest)
    return ordered


def determined_splits(value: SplitSum) -> tuple[Split, ...]:
    """The splits ``value`` determines (all of them when they form a mixed radix)."""
    if not value.terms:
        return ()
    if len(value.terms) == 1:
        scale = value.terms[0][0]
        return (value.terms[0][1],) if arith.compare(scale, "!=", 0) is True else ()
    ordered = sorted_by_scale(value.terms)
    if ordered is None or arith.compare(ordered[0][0], ">", 0) is not True:
        return ()
    for (scale, split), (next_scale, _) in zip(ordered, ordered[1:]):
        if arith.compare(next_scale, ">=", scale * split.extent) is not True:
            return ()
    return tuple(split for _, split in value.terms)


def _covers(splits: list[Split], extent: Dim) -> bool:
    lower: Dim = 1
    remaining = list(splits)
    while remaining:
        step = next((s for s in remaining if arith.compare(s.lower, "==", lower) is True), None)
        if step is None:
            return False
        if step.top or arith.compare(step.lower * step.extent, ">=", extent) is True:
            return True
        remaining.remove(step)
        lower = lower * step.extent
    return False


def determines(values: Sequence[Dim], var: str, loops: Mapping[str, Dim]) -> bool:
    """Whether ``values`` (over the loops ``loops``: name -> extent) determine loop
    ``var``: two points with different values of ``var`` give different tuples,
    whatever the other loops are."""
    if arith.compare(loops[var], "<=", 1) is True:
        return True  # a loop of at most one iteration has no two different values
    found: list[Split] = []
    for dim in values:
        parsed = parse(dim, loops)
        if parsed is not None:
            found.extend(determined_splits(parsed))
    virtual = {s.var: s for s in found if s.parts}
    for name, sample in virtual.items():
        if _covers([s for s in found if s.var == name], sample.whole):
            found.extend(sample.parts)
    return _covers([s for s in found if s.var == var], loops[var])


def dense(dim: Dim, loops: Mapping[str, Dim]) -> bool:
    """Whether ``dim``, as the loops in ``loops`` (name -> extent, from 0) vary, takes
    exactly the values of an interval: whole loops in mixed radix ``l0 + e0 * l1 + ...``."""
    parsed = parse(dim, loops)
    if parsed is None:
        return False
    if not parsed.terms:
        return True
    if any(not (s.top and s.lower == 1) for _, s in parsed.terms):
        return False
    ordered = sorted_by_scale(parsed.terms)
    if ordered is None or ordered[0][0] != 1:
        return False
    for (scale, split), (next_scale, _) in zip(ordered, ordered[1:]):
        if arith.compare(next_scale, "==", scale * split.extent) is not True:
            return False
    return len({s.var for _, s in parsed.terms}) == len(parsed.terms)
