"""compute_at and reverse_compute_at: move a block under a loop of another nest.

The moved block gets fresh loops that cover, at each iteration of the target loop,
the region that the blocks under that loop need (compute_at) or produce
(reverse_compute_at). Regions are relaxed with arith over the loops inside the target
loop; iterator values outside the block's domain are excluded by a predicate unless
arith proves they cannot occur.

The block and the loop meet in the innermost statement sequence holding both (a
:class:`~relaxjax.schedule.scope.Placement`): the scope's body for two top-level nests,
or the body of loops around both. Under such common loops, one iteration of them must
hold the whole exchange: the consumers read only what the producer wrote in the same
iteration (compute_at), and the consumer's points in an iteration are those its
producers make in it (reverse_compute_at).
"""

from __future__ import annotations

from relaxjax import arith
from relaxjax.arith import Dim
from relaxjax.schedule.dependence import block_facts, carried
from relaxjax.schedule.itermap import dense
from relaxjax.schedule.predicate import at_values, conjuncts, domain_predicate
from relaxjax.schedule.scope import (
    Access,
    LoopRange,
    Placement,
    buffers_touched,
    conjunction,
    exclusive_root,
    instance_accesses,
    instances_under,
    placement,
    relaxed_region,
    remove,
    scope_block,
    top_statements,
)
from relaxjax.schedule.step import Step, fail
from relaxjax.schedule.tree import Namer, Site, replace
from relaxjax.tir.analysis import relax_dim
from relaxjax.tir.buffer import Buffer
from relaxjax.tir.expr import BinOp, IndexExpr, IntImm, PrimExpr, binop
from relaxjax.tir.function import PrimFunc
from relaxjax.tir.stmt import Block, BlockRealize, For, Stmt, seq


def identity_axes(primitive: str, block: Block, buffer: Buffer) -> dict[str, int]:
    """Spatial iterator name -> the axis of ``buffer`` it indexes, when ``block`` writes
    ``buffer`` at exactly its spatial iterators (in some order)."""
    indices = block_facts(block).writes().get(buffer)
    spatial = [iv.var.name for iv in block.iter_vars if iv.kind == "spatial"]
    axes: dict[str, int] = {}
    for axis, index in enumerate(indices or ()):
        if isinstance(index, arith.Sym) and index.name in spatial and index.name not in axes:
            axes[index.name] = axis
    if indices is None or len(axes) != len(spatial) or len(indices) != len(spatial):
        where = (
            "" if indices is None else f" (it writes {buffer.name}[{', '.join(map(str, indices))}])"
        )
        raise fail(
            primitive,
            f"block {block.name!r} must write {buffer.name} at exactly its spatial "
            f"iterators{where}",
        )
    return axes


def _written_buffers(primitive: str, block: Block, func: PrimFunc) -> list[Buffer]:
    facts = block_facts(block)
    if facts.problem is not None:
        raise fail(primitive, facts.problem)
    params = {p.name for p in func.params}
    written = [b for b, _ in facts.write_indices]
    if not written:
        raise fail(primitive, f"block {block.name!r} writes nothing")
    return [b for b in written if b.name in params] + [b for b in written if b.name not in params]


def _region_nest(
    block: Block,
    regions: dict[str, tuple[Dim, Dim]],
    namer: Namer,
    outer: tuple[tuple[arith.Sym, Dim, Dim], ...],
    kept: PrimExpr | None,
) -> Stmt:
    """``block`` under fresh loops: a spatial iterator with a region ``(low, high)``
    runs over it (guarded to stay in its domain unless the ``outer`` loop ranges prove
    it does), the others over their extent. A region of one point needs no loop.
    ``kept`` (over the block's iterators) is the part of its old predicate that hides
    points of its domain: it guards the new instance too."""
    loops: list[tuple[arith.Sym, Dim]] = []
    values: list[Dim] = []
    guards: list[PrimExpr] = []
    for iv in block.iter_vars:
        if iv.var.name not in regions:
            var = namer.fresh_sym(f"ax_{iv.var.name}")
            loops.append((var, iv.extent))
            values.append(var)
            continue
        low, high = regions[iv.var.name]
        extent = high - low + 1
        if isinstance(extent, int) and extent <= 1:
            value = low
            if extent <= 0:
                loops.append((namer.fresh_sym(f"ax_{iv.var.name}"), 0))
        else:
            var = namer.fresh_sym(f"ax_{iv.var.name}")
            loops.append((var, extent))
            value = low + var
        values.append(value)
        if not _proven(low, ">=", 0, outer):
            guards.append(binop(">=", IndexExpr(value), IndexExpr(0)))
        if not _proven(high, "<", iv.extent, outer):
            guards.append(binop("<", IndexExpr(value), IndexExpr(iv.extent)))
    if kept is not None:
        guards.append(at_values(kept, [iv.var for iv in block.iter_vars], values))
    predicate = conjunction(guards)
    realize = BlockRealize(
        tuple(values), IntImm(1, "bool") if predicate is None else predicate, block
    )
    stmt: Stmt = realize
    for var, extent in reversed(loops):
        stmt = For(var, 0, extent, "serial", stmt)
    return stmt


def _proven(value: Dim, op: str, bound: Dim, outer) -> bool:
    """``value op bound`` for every value of the loops ``outer`` in their ranges."""
    if arith.compare(value, op, bound) is True:
        return True
    relaxed = relax_dim(value, outer)
    if relaxed is None:
        return False
    low, high = relaxed
    return arith.compare(low if op == ">=" else high, op, bound) is True


def _outer_ranges(loop_site: Site) -> tuple[tuple[arith.Sym, Dim, Dim], ...]:
    loops = list(loop_site.loops()) + [loop_site.node]
    return tuple((lp.var, lp.start, lp.extent) for lp in loops)


def _check_target(primitive: str, block_site: Site, loop_site: Site) -> None:
    loop: For = loop_site.node
    name = block_site.node.block.name
    if any(a is loop for a in block_site.ancestors):
        raise fail(primitive, f"loop {loop.var.name} encloses block {name!r} already")
    if scope_block(block_site) is not scope_block(loop_site):
        raise fail(primitive, f"loop {loop.var.name} is in another block scope than {name!r}")


def _kept_predicate(primitive: str, block_site: Site, complete: bool) -> PrimExpr | None:
    """The part of the moved block's predicate that its new instance must keep (over
    its iterators): a complete block's loops run every point of its domain that the
    predicate admits, so the predicate read over the iterators says which points run.
    A block that is not complete (moved before) may only carry guards its domain
    implies, such as those compute_at adds."""
    realize: BlockRealize = block_site.node
    conditions = [c for c in conjuncts(realize.predicate) if not _domain_guard(c, realize)]
    if not conditions:
        return None
    guarded = BlockRealize(realize.iter_values, conjunction(conditions), realize.block)
    kept = domain_predicate(primitive, guarded, block_site.loops())
    if kept is not None and not complete:
        raise fail(
            primitive,
            f"block {realize.block.name!r} has a predicate that may hide points of its "
            "domain; it cannot be moved",
        )
    return kept


def _domain_guard(condition: PrimExpr, realize: BlockRealize) -> bool:
    """Whether ``condition`` bounds an iterator's value within its domain (``v < extent``,
    ``v >= 0`` with ``v`` spelled as its binding, as compute_at writes them): the
    domain implies it whatever the bindings."""
    if not (
        isinstance(condition, BinOp)
        and condition.op in ("<", "<=", ">", ">=")
        and isinstance(condition.a, IndexExpr)
        and isinstance(condition.b, IndexExpr)
    ):
        return False
    flipped = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}
    for value, op, bound in (
        (condition.a.dim, condition.op, condition.b.dim),
        (condition.b.dim, flipped[condition.op], condition.a.dim),
    ):
        for iv, bound_value in zip(realize.block.iter_vars, realize.iter_values):
            if arith.compare(value, "==", bound_value) is not True:
                continue
            implied = {
                "<": (iv.extent, "<=", bound),
                "<=": (iv.extent - 1, "<=", bound),
                ">=": (bound, "<=", 0),
                ">": (bound, "<", 0),
            }[op]
            if arith.compare(*implied) is True:
                return True
    return False


def compute_at(
    func: PrimFunc, namer: Namer, block_site: Site, loop_site: Site, complete: bool
) -> Step:
    """Moves the producer at ``block_site`` to the start of the loop at ``loop_site``."""
    primitive = "compute_at"
    _check_target(primitive, block_site, loop_site)
    realize: BlockRealize = block_site.node
    block, loop = realize.block, loop_site.node
    kept = _kept_predicate(primitive, block_site, complete)
    written = _written_buffers(primitive, block, func)
    params = {p.name for p in func.params}
    for buffer in written:
        if buffer.name in params:
            raise fail(
                primitive,
                f"block {block.name!r} writes {buffer.name}, an output of the kernel; only the "
                "parts its consumers read would be computed (use reverse_compute_at)",
            )
    place = placement(primitive, block_site, loop_site)
    if place.index(place.mine) >= place.index(place.target):
        raise fail(primitive, f"block {block.name!r} does not come before loop {loop.var.name}")
    own = exclusive_root(block_site)
    _check_outside_uses(primitive, block, written, place, loop, scope_block(block_site))
    regions = _consumer_regions(primitive, block, written, loop)
    if place.outer:
        _check_consumers_covered(primitive, realize, written, place, loop, kept)
    nest = _region_nest(block, regions, namer, _outer_ranges(loop_site), kept)
    if _updates_in_place(block):
        if not complete:
            raise fail(
                primitive,
                f"block {block.name!r} updates what it writes in place (it has no init) and "
                "does not cover its whole domain: it may not run once per element",
            )
        _check_runs_once(primitive, block, nest, (*loop_site.loops(), loop))
    body = replace(func.body, loop, _with_body(loop, seq(nest, loop.body)))
    body = remove(body, own)
    removed = {
        lp.var.name: f"regenerated by compute_at({block.name!r}, {loop.var.name})"
        for lp in block_site.loops()
        if _inside(own, lp)
    }
    return Step(func.with_body(body), (), removed)


def _inside(root: Stmt, loop: For) -> bool:
    from relaxjax.schedule.tree import find_sites

    return bool(find_sites(root, lambda s: s is loop))


def _with_body(loop: For, body: Stmt) -> For:
    return For(
        loop.var, loop.start, loop.extent, loop.kind, body, loop.annotations, loop.thread_tag
    )


def _realizes(stmts) -> list[BlockRealize]:
    return [realize for stmt in stmts for realize, _ in instances_under(stmt)]


def _check_outside_uses(
    primitive: str, block: Block, written, place: Placement, loop: For, scope: Block
) -> None:
    """Nothing but the blocks under ``loop`` uses what ``block`` writes (blocks before
    it at the top level may), and nothing from the block's old place to its new one
    writes what it reads."""
    names = {b.name for b in written}
    reads = {a.buffer.name for a in instance_accesses_of(block) if not a.is_write} - names
    start, end = place.index(place.mine), place.index(place.target)
    for stmt in place.statements[start : end + 1]:
        for realize, _ in instances_under(stmt):
            other = realize.block
            if other is block:
                continue
            accesses = instance_accesses(realize)
            touched = {a.buffer.name for a in accesses}
            writes = {a.buffer.name for a in accesses if a.is_write}
            inside = stmt is place.target and _under(loop, realize)
            if names & touched and not inside:
                raise _used_outside(primitive, other, names & touched, loop, block)
            if names & writes:
                raise fail(
                    primitive,
                    f"block {other.name!r} also writes {', '.join(sorted(names & writes))}",
                )
            if reads & writes:
                raise fail(
                    primitive,
                    f"block {other.name!r} writes {', '.join(sorted(reads & writes))}, which "
                    f"{block.name!r} reads: moving {block.name!r} would change what it reads",
                )
    later = list(place.statements[end + 1 :])
    if place.top is not None:
        statements = top_statements(scope)
        top = next(k for k, s in enumerate(statements) if s is place.top)
        later += statements[top + 1 :]
    for realize in _realizes(later):
        if names & {a.buffer.name for a in instance_accesses(realize)}:
            raise fail(
                primitive,
                f"block {realize.block.name!r} after loop {loop.var.name} reads "
                f"{', '.join(sorted(names))}, which would only be partly computed",
            )
    if place.top is not None:
        # Around the common loops, other iterations run between the old and new places.
        seen = {id(r) for r in _realizes(place.statements[start:])}
        for realize in _realizes([place.top]):
            touched = {a.buffer.name for a in instance_accesses(realize)} & names
            if id(realize) not in seen and touched:
                raise _used_outside(primitive, realize.block, touched, loop, block)


def _used_outside(primitive, other: Block, names, loop: For, block: Block):
    return fail(
        primitive,
        f"block {other.name!r} uses {', '.join(sorted(names))} outside loop {loop.var.name}: "
        f"every consumer of {block.name!r} must be under it",
    )


def instance_accesses_of(block: Block) -> list[Access]:
    """The accesses of a block in its own iterator terms."""
    realize = BlockRealize(tuple(iv.var for iv in block.iter_vars), True, block)
    return instance_accesses(realize)


def _under(loop: For, realize: BlockRealize) -> bool:
    return any(r is realize for r, _ in instances_under(loop))


def _consumer_regions(primitive, block, written, loop) -> dict[str, tuple[Dim, Dim]]:
    """For each spatial iterator of ``block``: the range the blocks under ``loop`` read
    in one iteration of it."""
    regions: dict[str, tuple[Dim, Dim]] = {}
    for buffer in written:
        axes = identity_axes(primitive, block, buffer)
        uses = _reads_under(loop.body, buffer)
        if not uses:
            raise fail(primitive, f"no block under loop {loop.var.name} reads {buffer.name}")
        region = relaxed_region(uses, buffer)
        for name, axis in axes.items():
            low, high = region[axis]
            if name in regions:
                low = arith.min_(low, regions[name][0])
                high = arith.max_(high, regions[name][1])
            regions[name] = (low, high)
    return regions


def _reads_under(stmt: Stmt, buffer: Buffer) -> list[tuple[Access, tuple[LoopRange, ...]]]:
    return [
        (a, loops)
        for realize, loops in instances_under(stmt)
        for a in instance_accesses(realize)
        if a.buffer.name == buffer.name and not a.is_write
    ]


def _loops_of(realize: BlockRealize, stmt: Stmt) -> tuple[LoopRange, ...]:
    """The loops between ``stmt`` (included) and ``realize``."""
    return next(loops for r, loops in instances_under(stmt) if r is realize)


def _check_consumers_covered(
    primitive: str,
    realize: BlockRealize,
    written,
    place: Placement,
    loop: For,
    kept: PrimExpr | None,
) -> None:
    """Under common loops, the blocks under ``loop`` read, in one iteration of them, only
    elements the producer wrote in that iteration: no value crosses iterations, so
    computing it later in the same iteration gives what the consumers read before."""
    block = realize.block
    common = place.outer[-1].var.name
    if kept is not None:
        raise fail(
            primitive,
            f"block {block.name!r} has a predicate that may hide points of its domain; "
            f"which elements it writes in one iteration of loop {common} is unknown",
        )
    loops = _loops_of(realize, place.mine)
    extents = {iv.var.name: iv.extent for iv in block.iter_vars}
    for buffer in written:
        write = next(
            a for a in instance_accesses(realize) if a.is_write and a.buffer.name == buffer.name
        )
        _check_dense(primitive, block, write, loops, common)
        produced = relaxed_region([(write, loops)], buffer)
        needed = relaxed_region(_reads_under(place.target, buffer), buffer)
        for name, axis in identity_axes(primitive, block, buffer).items():
            if not _within(needed[axis], produced[axis], buffer.shape[axis], extents[name]):
                (low, high), (p_low, p_high) = needed[axis], produced[axis]
                raise fail(
                    primitive,
                    f"the blocks under loop {loop.var.name} read {buffer.name} axis {axis} over "
                    f"[{low}, {high}] in one iteration of loop {common}, beyond [{p_low}, "
                    f"{p_high}] that {block.name!r} writes in it",
                )


def _le(a: Dim, b: Dim) -> bool:
    return arith.compare(a, "<=", b) is True


def _within(needed, produced, size: Dim, extent: Dim) -> bool:
    """Whether ``needed`` (clipped to a buffer axis of ``size``) lies in ``produced``
    (clipped to the producer's iterator domain ``[0, extent)``)."""
    (low, high), (p_low, p_high) = needed, produced
    lows = _le(p_low, low) or _le(p_low, 0)
    highs = (_le(high, p_high) or _le(size - 1, p_high)) and (
        _le(high, extent - 1) or _le(size - 1, extent - 1)
    )
    return lows and highs


def _updates_in_place(block: Block) -> bool:
    """A block without init that reads what it writes (``S[i] = S[i] + ...`` after a
    separate init, as rfactor and decompose_reduction leave): running one of its
    instances twice changes the result."""
    if block.init is not None:
        return False
    accesses = instance_accesses_of(block)
    written = {a.buffer.name for a in accesses if a.is_write}
    return any(a.buffer.name in written for a in accesses if not a.is_write)


def _check_runs_once(primitive: str, block: Block, nest: Stmt, chain: tuple[For, ...]) -> None:
    """Each loop of ``chain`` (the loops around the new ``nest`` of ``block``, outermost
    first) runs it at different elements in different iterations; with the nest's own
    loops running each instance once, every instance runs once."""
    levels = []
    for lp in reversed(chain):
        nest = For(lp.var, lp.start, lp.extent, "serial", nest)
        levels.append((lp, nest))
    for lp, stmt in reversed(levels):
        found = carried(stmt, lp.var)
        if found.kind != "none":
            raise fail(
                primitive,
                f"block {block.name!r} updates what it writes in place (it has no init), so "
                f"it must run once per element: {found.reason}",
            )


# --- reverse_compute_at ---------------------------------------------------------------


def reverse_compute_at(
    func: PrimFunc,
    namer: Namer,
    block_site: Site,
    loop_site: Site,
    complete: set[str],
) -> Step:
    """Moves the consumer at ``block_site`` to the end of the loop at ``loop_site``."""
    primitive = "reverse_compute_at"
    _check_target(primitive, block_site, loop_site)
    realize: BlockRealize = block_site.node
    block, loop = realize.block, loop_site.node
    if block.name not in complete:
        raise fail(primitive, f"block {block.name!r} does not cover its whole domain")
    kept = _kept_predicate(primitive, block_site, True)
    facts = block_facts(block)
    if facts.problem is not None:
        raise fail(primitive, facts.problem)
    place = placement(primitive, block_site, loop_site)
    if place.index(place.mine) <= place.index(place.target):
        raise fail(primitive, f"block {block.name!r} does not come after loop {loop.var.name}")
    own = exclusive_root(block_site)
    my_reads = {a.buffer.name for a in instance_accesses_of(block) if not a.is_write}
    my_writes = {b.name for b, _ in facts.write_indices}
    my_reads -= my_writes
    _check_between(primitive, block, place, my_reads, my_writes, loop)
    produced, used = buffers_touched(loop)
    if my_writes & (produced | used):
        raise fail(primitive, f"blocks under loop {loop.var.name} use what {block.name!r} writes")
    outer = _outer_ranges(loop_site)
    regions, sources = _producer_regions(
        primitive, block, loop, my_reads & produced, complete, outer
    )
    if place.outer:
        _check_same_points(primitive, realize, place, loop, sources)
    nest = _region_nest(block, regions, namer, outer, kept)
    if _updates_in_place(block):
        _check_runs_once(primitive, block, nest, (*loop_site.loops(), loop))
    body = replace(func.body, loop, _with_body(loop, seq(loop.body, nest)))
    body = remove(body, own)
    removed = {
        lp.var.name: f"regenerated by reverse_compute_at({block.name!r}, {loop.var.name})"
        for lp in block_site.loops()
        if _inside(own, lp)
    }
    return Step(func.with_body(body), (), removed)


def _check_between(primitive, block, place: Placement, reads, writes, loop) -> None:
    start, end = place.index(place.target), place.index(place.mine)
    for stmt in place.statements[start : end + 1]:
        for realize, _ in instances_under(stmt):
            if realize.block is block or (stmt is place.target and _under(loop, realize)):
                continue
            accesses = instance_accesses(realize)
            other_writes = {a.buffer.name for a in accesses if a.is_write}
            touched = {a.buffer.name for a in accesses}
            if other_writes & reads:
                names = ", ".join(sorted(other_writes & reads))
                raise fail(
                    primitive,
                    f"block {realize.block.name!r} writes {names} between loop "
                    f"{loop.var.name} and {block.name!r}, which reads it",
                )
            if touched & writes:
                raise fail(
                    primitive,
                    f"block {realize.block.name!r} uses {', '.join(sorted(touched & writes))}, "
                    f"which {block.name!r} writes",
                )


Source = tuple[BlockRealize, Access, int]


def _producer_regions(
    primitive, block, loop, buffers, complete, outer
) -> tuple[dict[str, tuple[Dim, Dim]], dict[str, Source]]:
    """For each spatial iterator of ``block`` read as an axis of a buffer produced under
    ``loop``: the range of that axis produced in one iteration, and where it comes from
    (the producer, its write, the axis)."""
    if not buffers:
        raise fail(
            primitive, f"block {block.name!r} reads nothing produced under loop {loop.var.name}"
        )
    accesses = instance_accesses_of(block)
    spatial = {iv.var.name: iv for iv in block.iter_vars if iv.kind == "spatial"}
    regions: dict[str, tuple[Dim, Dim]] = {}
    sources: dict[str, Source] = {}
    produced_regions: dict[str, tuple[tuple[Dim, Dim], ...]] = {}
    for name in sorted(buffers):
        writers = []
        for realize, loops in instances_under(loop.body):
            writes = [a for a in instance_accesses(realize) if a.buffer.name == name and a.is_write]
            if writes:
                writers.append((realize, loops, writes))
        if len(writers) != 1:
            raise fail(
                primitive, f"{name} is written by {len(writers)} blocks under loop {loop.var.name}"
            )
        realize, loops, writes = writers[0]
        _check_final(primitive, realize, loop, outer)
        if realize.block.name not in complete:
            raise fail(primitive, f"producer {realize.block.name!r} does not cover its domain")
        buffer = writes[0].buffer
        identity_axes(primitive, realize.block, buffer)
        _check_dense(primitive, realize.block, writes[0], loops, loop.var.name)
        produced = relaxed_region([(w, loops) for w in writes], buffer)
        produced_regions[name] = produced
        reads = [a for a in accesses if a.buffer.name == name and not a.is_write]
        for axis in range(buffer.ndim):
            indices = {a.indices[axis] for a in reads}
            if len(indices) == 1:
                index = next(iter(indices))
                if isinstance(index, arith.Sym) and index.name in spatial:
                    low, high = produced[axis]
                    if index.name in regions and regions[index.name] != (low, high):
                        raise fail(primitive, f"iterator {index.name} indexes two produced regions")
                    regions[index.name] = (low, high)
                    sources[index.name] = (realize, writes[0], axis)
    _check_reads_within(primitive, block, accesses, regions, produced_regions)
    return regions, sources


def _check_same_points(
    primitive: str,
    realize: BlockRealize,
    place: Placement,
    loop: For,
    sources: dict[str, Source],
) -> None:
    """Under common loops, the consumer runs, in one iteration of them, exactly the
    points whose inputs the producers make in that iteration: it moves within the
    iteration, never across iterations."""
    block = realize.block
    common = place.outer[-1].var.name
    loops = _loops_of(realize, place.mine)
    names = {var.name for var, start, _ in loops if start == 0}
    for value in realize.iter_values:
        if any(var.name not in names for var, _, _ in loops if _uses(value, var)):
            raise _unknown_points(primitive, block, common, realize)
    if not _disjoint_dense(realize.iter_values, {v.name: e for v, s, e in loops if s == 0}):
        raise _unknown_points(primitive, block, common, realize)
    for iv, value in zip(block.iter_vars, realize.iter_values):
        runs = relax_dim(value, loops)
        if iv.var.name in sources:
            producer, write, axis = sources[iv.var.name]
            producer_loops = _loops_of(producer, place.target)
            _check_dense(primitive, producer.block, write, producer_loops, common)
            made = relaxed_region([(write, producer_loops)], write.buffer)[axis]
        else:
            made = (0, iv.extent - 1)
        if runs is None or not _same_within(runs, made, iv.extent):
            shown = runs if runs is not None else ("?", "?")
            raise fail(
                primitive,
                f"block {block.name!r} runs {iv.var.name} over [{shown[0]}, {shown[1]}] in one "
                f"iteration of loop {common}, but loop {loop.var.name} makes its inputs for "
                f"[{made[0]}, {made[1]}]: it would move across iterations of loop {common}",
            )


def _unknown_points(primitive, block: Block, common: str, realize: BlockRealize):
    values = ", ".join(map(str, realize.iter_values))
    return fail(
        primitive,
        f"cannot prove which points block {block.name!r} runs in one iteration of loop "
        f"{common} (it is bound to ({values}))",
    )


def _uses(dim: Dim, var: arith.Sym) -> bool:
    return not isinstance(dim, int) and var in arith.free_symbols(dim)


def _disjoint_dense(values, inner: dict[str, Dim]) -> bool:
    """Each value runs densely over its own loops of ``inner``, none shared."""
    used: set[str] = set()
    for value in values:
        if not dense(value, inner):
            return False
        names = set() if isinstance(value, int) else {s.name for s in arith.free_symbols(value)}
        names &= set(inner)
        if names & used:
            return False
        used |= names
    return True


def _same_within(a, b, extent: Dim) -> bool:
    """Whether two ranges clipped to ``[0, extent)`` are provably the same."""
    (low, high), (b_low, b_high) = a, b
    lows = arith.compare(low, "==", b_low) is True or (_le(low, 0) and _le(b_low, 0))
    highs = arith.compare(high, "==", b_high) is True or (
        _le(extent - 1, high) and _le(extent - 1, b_high)
    )
    return lows and highs


def _check_reads_within(primitive, block, accesses, regions, produced_regions) -> None:
    """The block reads, over its new region, only what one iteration produced."""
    loops = []
    for iv in block.iter_vars:
        if iv.var.name in regions:
            low, high = regions[iv.var.name]
            loops.append((iv.var, low, high - low + 1))
        else:
            loops.append((iv.var, 0, iv.extent))
    for name, produced in produced_regions.items():
        uses = [(a, tuple(loops)) for a in accesses if a.buffer.name == name and not a.is_write]
        needed = relaxed_region(uses, uses[0][0].buffer)
        for axis, ((low, high), (p_low, p_high)) in enumerate(zip(needed, produced)):
            inside = (
                arith.compare(low, ">=", p_low) is True
                and arith.compare(high, "<=", p_high) is True
            )
            if not inside:
                raise fail(
                    primitive,
                    f"block {block.name!r} reads {name} axis {axis} over [{low}, {high}], beyond "
                    f"[{p_low}, {p_high}] produced in one iteration: the loop does not cover "
                    "the needed region",
                )


def _check_dense(primitive, producer: Block, write: Access, loops, where: str) -> None:
    """One iteration of loop ``where`` produces exactly a box: each written index runs
    densely over its own ``loops`` (the loops inside that iteration), so the region
    relaxed from it is not an over-approximation."""
    inner = {v.name: e for v, s, e in loops if s == 0}
    used: set[str] = set()
    for index in write.indices:
        if isinstance(index, PrimExpr) or not dense(index, inner):
            raise fail(
                primitive,
                f"cannot prove that one iteration of loop {where} produces a box of "
                f"{write.buffer.name} (block {producer.name!r} writes "
                f"[{', '.join(map(str, write.indices))}])",
            )
        names = {s.name for s in arith.free_symbols(index)} & set(inner)
        if names & used:
            raise fail(primitive, f"block {producer.name!r} writes {write.buffer.name} diagonally")
        used |= names
    if any(s != 0 for v, s, e in loops):
        raise fail(primitive, f"a loop above block {producer.name!r} does not start at 0")


def _check_final(primitive: str, producer: BlockRealize, loop: For, outer) -> None:
    """The producer's values are final at the end of an iteration of ``loop``: none of
    its reduction iterators is bound to ``loop`` or a loop around it."""
    names = {var.name for var, _, _ in outer}
    for iv, value in zip(producer.block.iter_vars, producer.iter_values):
        used = {s.name for s in arith.free_symbols(value)} if not isinstance(value, int) else set()
        if iv.kind == "reduce" and used & names:
            raise fail(
                primitive,
                f"loop {loop.var.name} does not cover the reduction of {producer.block.name!r} "
                f"(iterator {iv.var.name} is bound to {', '.join(sorted(used & names))}): its "
                "results are not final inside one iteration",
            )
