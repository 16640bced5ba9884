"""A block's predicate read over its own iterators, so that it survives a move.

A ``where(...)`` predicate is written over the loops around a block. A split that does
not divide its loop adds one (``i_0 * 8 + i_1 < n``) that only hides iterator values
outside the block's domain, but after ``rfactor`` the same guard also hides points
*inside* the partial-result block's domain (``v_r_0 * 8 + v_r_1 < k`` with
``v_r_0 < (k + 7) // 8`` and ``v_r_1 < 8``). A primitive that regenerates a block's
loops (compute_at, reverse_compute_at) must keep that part: :func:`domain_predicate`
rewrites the predicate over the block's iterators (inverting the iterator bindings,
which split, fuse and reorder leave as mixed-radix sums of loop splits) and drops the
conditions the domain already implies. After ``sch.rfactor(r_1)`` on a reduction
split by 8::

    where(r_0 * 8 + r_1 < k)        # v_r_0 = r_0, v_r_1 = r_1
    -> v_r_0 * 8 + v_r_1 < k        # what compute_at puts on the block's new instance
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from relaxjax import arith
from relaxjax.arith import Dim
from relaxjax.schedule.itermap import Split, dense, determined_splits, parse, sorted_by_scale
from relaxjax.schedule.step import fail
from relaxjax.tir.analysis import free_symbols, relax_dim
from relaxjax.tir.expr import BinOp, IndexExpr, IntImm, PrimExpr, binop
from relaxjax.tir.functor import Substituter
from relaxjax.tir.stmt import BlockRealize, For

_COMPARISONS = ("<", "<=", ">", ">=")

IterValues = Sequence[tuple[arith.Sym, Dim]]


def conjuncts(predicate: PrimExpr) -> list[PrimExpr]:
    """The operands of a chain of ``and`` (none for ``True``)."""
    if isinstance(predicate, BinOp) and predicate.op == "and":
        return conjuncts(predicate.a) + conjuncts(predicate.b)
    if isinstance(predicate, IntImm) and predicate.value == 1:
        return []
    return [predicate]


def domain_predicate(
    primitive: str, realize: BlockRealize, loops: Sequence[For]
) -> PrimExpr | None:
    """The conditions of ``realize``'s predicate that its block's domain does not imply,
    over the block's iterators (None when there are none).

    ``loops`` are the loops around the block (``Site.loops()``). Raises ScheduleError
    (starting with ``primitive``) when a condition cannot be read over the iterators.
    """
    block = realize.block
    values = [(iv.var, v) for iv, v in zip(block.iter_vars, realize.iter_values)]
    ranges = {lp.var.name: lp.extent for lp in loops if lp.start == 0}
    loop_names = {lp.var.name for lp in loops}
    domain = tuple((iv.var, 0, iv.extent) for iv in block.iter_vars)
    kept = []
    for condition in conjuncts(realize.predicate):
        rewritten = _over_iterators(condition, values, ranges)
        if rewritten is None or {s.name for s in free_symbols(rewritten)} & loop_names:
            raise fail(
                primitive,
                f"block {block.name!r} has the predicate {condition!r}, which cannot be "
                "expressed over its iterators; it cannot be moved",
            )
        if not _implied(rewritten, domain):
            kept.append(rewritten)
    result = None
    for condition in kept:
        result = condition if result is None else binop("and", result, condition)
    return result


def at_values(condition: PrimExpr, block_iters: Sequence[arith.Sym], values: Sequence[Dim]):
    """``condition`` (over ``block_iters``) with each iterator replaced by its new value."""
    return Substituter({var: value for var, value in zip(block_iters, values)}).visit_expr(
        condition
    )


def _over_iterators(
    condition: PrimExpr, values: IterValues, ranges: Mapping[str, Dim]
) -> PrimExpr | None:
    if (
        isinstance(condition, BinOp)
        and condition.op in _COMPARISONS
        and isinstance(condition.a, IndexExpr)
        and isinstance(condition.b, IndexExpr)
    ):
        a = express(condition.a.dim, values, ranges)
        b = express(condition.b.dim, values, ranges)
        if a is None or b is None:
            return None
        return binop(condition.op, IndexExpr(a), IndexExpr(b))
    inverse = invert(values, ranges)
    return Substituter(inverse).visit_expr(condition)


def _implied(condition: PrimExpr, domain) -> bool:
    """Whether a comparison holds at every point of the block's domain."""
    if not (
        isinstance(condition, BinOp)
        and condition.op in _COMPARISONS
        and isinstance(condition.a, IndexExpr)
        and isinstance(condition.b, IndexExpr)
    ):
        return isinstance(condition, IntImm) and condition.value == 1
    bounds = relax_dim(condition.a.dim - condition.b.dim, domain)
    if bounds is None:
        return False
    low, high = bounds
    op = condition.op
    side, wanted = (high, "<") if op in ("<", "<=") else (low, ">")
    if op in ("<=", ">="):
        wanted += "="
    return arith.compare(side, wanted, 0) is True


def express(dim: Dim, values: IterValues, ranges: Mapping[str, Dim], depth: int = 3) -> Dim | None:
    """``dim`` (over the loops in ``ranges``) as an expression of the block iterators
    bound to ``values``, or None when the bindings do not determine it.

    Loops the bindings determine are replaced by their inverse; otherwise a dense sum
    of loops (``dim`` itself, or one inside a binding, as a split of a fused loop
    leaves) becomes one pseudo loop whose digits replace its loops, and the rewritten
    problem is solved again (at most ``depth`` times)."""
    used = _loops_in(dim, ranges)
    if not used:
        return dim
    inverse = invert(values, ranges)
    if used <= set(inverse):
        return arith.subs(dim, inverse)
    if depth == 0:
        return None
    for candidate in _dense_sums(dim, values, ranges):
        rewritten = _change_loops(candidate, dim, values, ranges)
        if rewritten is not None:
            found = express(*rewritten, depth - 1)
            if found is not None:
                return found
    return None


def _dense_sums(dim: Dim, values: IterValues, ranges: Mapping[str, Dim]) -> list[Dim]:
    """Dense sums of whole loops (no constant part): ``dim`` itself, then those the
    bindings split (virtual loops of :mod:`.itermap`)."""
    found: list[Dim] = []
    parsed = parse(dim, ranges)
    if parsed is not None and parsed.terms and dense(dim - parsed.base, ranges):
        found.append(dim - parsed.base)
    for _, value in values:
        parsed = parse(value, ranges)
        for _, split in parsed.terms if parsed is not None else ():
            if split.parts and split.source not in found:
                base = parse(split.source, ranges).base
                if base == 0:
                    found.append(split.source)
    return found


def _change_loops(sum_dim: Dim, dim: Dim, values: IterValues, ranges: Mapping[str, Dim]):
    """``(dim, values, ranges)`` with the loops of the dense ``sum_dim`` replaced by the
    digits of one pseudo loop ``t = sum_dim`` (exact while the loops are in range)."""
    mine = {name: ranges[name] for name in _loops_in(sum_dim, ranges)}
    parsed = parse(sum_dim, mine)
    ordered = sorted_by_scale(parsed.terms) if parsed is not None else None
    if not ordered:
        return None
    exprs = [dim] + [v for _, v in values]
    taken = set(ranges) | {
        s.name for e in exprs if not isinstance(e, int) for s in arith.free_symbols(e)
    }
    name = "pseudo_loop"
    while name in taken:
        name += "_"
    t = arith.sym(name)
    digits: dict[str, Dim] = {loop: 0 for loop in mine}  # extent-1 loops have no term
    for k, (scale, split) in enumerate(ordered):
        digits[split.var] = t // scale if k == len(ordered) - 1 else (t // scale) % split.extent
    top_scale, top_split = ordered[-1]
    new_ranges = {n: e for n, e in ranges.items() if n not in mine}
    new_ranges[name] = top_scale * top_split.extent
    new_values = [(var, _subs(v, digits)) for var, v in values]
    return _subs(dim, digits), new_values, new_ranges


def invert(values: IterValues, ranges: Mapping[str, Dim]) -> dict[str, Dim]:
    """Loop name -> its value over the block iterators, for each loop of ``ranges``
    (name -> extent, from 0) that the iterator ``values`` determine (mixed-radix sums
    of splits, as split, fuse and reorder leave them)."""
    pieces: dict[str, list[tuple[Split, Dim]]] = {}
    for var, value in values:
        parsed = parse(value, ranges)
        if parsed is None or not determined_splits(parsed):
            continue
        rest: Dim = var - parsed.base
        for scale, split in reversed(sorted_by_scale(parsed.terms)):
            digit = rest // scale
            rest = rest - digit * scale
            if not split.parts:
                pieces.setdefault(split.var, []).append((split, digit))
    inverse: dict[str, Dim] = {
        name: 0 for name, extent in ranges.items() if arith.compare(extent, "==", 1) is True
    }
    for name, found in pieces.items():
        rebuilt = _rebuild(found, ranges[name])
        if rebuilt is not None:
            inverse[name] = rebuilt
    return inverse


def _rebuild(found: list[tuple[Split, Dim]], extent: Dim) -> Dim | None:
    """``l = sum(lower * digit)`` over digits ``(l // lower) % e`` in mixed radix."""
    lower: Dim = 1
    total: Dim = 0
    remaining = list(found)
    while remaining:
        piece = next((p for p in remaining if arith.compare(p[0].lower, "==", lower) is True), None)
        if piece is None:
            return None
        split, digit = piece
        total = total + lower * digit
        if split.top or arith.compare(split.lower * split.extent, ">=", extent) is True:
            return total
        remaining.remove(piece)
        lower = lower * split.extent
    return None


def _loops_in(dim: Dim, ranges: Mapping[str, Dim]) -> set[str]:
    if isinstance(dim, int):
        return set()
    return {s.name for s in arith.free_symbols(dim)} & set(ranges)


def _subs(dim: Dim, mapping: Mapping[str, Dim]) -> Dim:
    return dim if isinstance(dim, int) else arith.subs(dim, mapping)
