"""compute_at and reverse_compute_at: move a block under a loop of another nest.

The moved block gets fresh loops that cover, at each iteration of the target loop,
the region that the blocks under that loop need (compute_at) or produce
(reverse_compute_at). Regions are relaxed with arith over the loops inside the target
loop; iterator values outside the block's domain are excluded by a predicate unless
arith proves they cannot occur.
"""

from __future__ import annotations

from relaxjax import arith
from relaxjax.arith import Dim
from relaxjax.schedule.dependence import block_facts
from relaxjax.schedule.itermap import dense
from relaxjax.schedule.predicate import at_values, domain_predicate
from relaxjax.schedule.scope import (
    Access,
    buffers_touched,
    conjunction,
    exclusive_root,
    instance_accesses,
    instances_under,
    relaxed_region,
    remove,
    scope_block,
    top_statement,
    top_statements,
)
from relaxjax.schedule.step import Step, fail
from relaxjax.schedule.tree import Namer, Site, replace
from relaxjax.tir.analysis import relax_dim
from relaxjax.tir.buffer import Buffer
from relaxjax.tir.expr import IndexExpr, IntImm, PrimExpr, binop
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


def _loop_chain_to(site: Site, loop: For) -> list[For]:
    chain = []
    inside = False
    for stmt in site.ancestors:
        if stmt is loop:
            inside = True
        if inside and isinstance(stmt, For):
            chain.append(stmt)
    return chain


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
    predicate admits, so the predicate read over the iterators says which points run."""
    realize: BlockRealize = block_site.node
    predicate = realize.predicate
    if isinstance(predicate, IntImm) and predicate.value == 1:
        return None
    if not complete:
        raise fail(
            primitive,
            f"block {realize.block.name!r} has a predicate that may hide points of its "
            "domain; it cannot be moved",
        )
    return domain_predicate(primitive, realize, block_site.loops())


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
    scope = scope_block(block_site)
    statements = top_statements(scope)
    mine, target = top_statement(block_site), top_statement(loop_site)
    position = {id(s): k for k, s in enumerate(statements)}
    if position[id(mine)] >= position[id(target)]:
        raise fail(primitive, f"block {block.name!r} does not come before loop {loop.var.name}")
    own = exclusive_root(block_site)
    _check_outside_uses(primitive, block, written, statements, mine, target, own, loop)
    regions = _consumer_regions(primitive, block, written, loop)
    nest = _region_nest(block, regions, namer, _outer_ranges(loop_site), kept)
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


def _check_outside_uses(primitive, block, written, statements, mine, target, own, loop) -> None:
    """Nothing but the blocks under ``loop`` reads what ``block`` writes, and nothing
    from the block's old place to its new one writes what it reads."""
    names = {b.name for b in written}
    reads = {a.buffer.name for a in instance_accesses_of(block) if not a.is_write} - names
    start = next(k for k, s in enumerate(statements) if s is mine)
    end = next(k for k, s in enumerate(statements) if s is target)
    for stmt in statements[start : end + 1]:
        for realize, _ in instances_under(stmt):
            other = realize.block
            if other is block:
                continue
            accesses = instance_accesses(realize)
            touched = {a.buffer.name for a in accesses}
            writes = {a.buffer.name for a in accesses if a.is_write}
            inside = stmt is target and _under(loop, realize)
            if names & touched and not inside:
                raise fail(
                    primitive,
                    f"block {other.name!r} uses {', '.join(sorted(names & touched))} outside "
                    f"loop {loop.var.name}: every consumer of {block.name!r} must be under it",
                )
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
    for stmt in statements[end + 1 :]:
        for realize, _ in instances_under(stmt):
            if names & {a.buffer.name for a in instance_accesses(realize)}:
                raise fail(
                    primitive,
                    f"block {realize.block.name!r} after loop {loop.var.name} reads "
                    f"{', '.join(sorted(names))}, which would only be partly computed",
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
        uses = []
        for realize, loops in instances_under(loop.body):
            uses += [
                (a, loops)
                for a in instance_accesses(realize)
                if a.buffer.name == buffer.name and not a.is_write
            ]
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
    scope = scope_block(block_site)
    statements = top_statements(scope)
    mine, target = top_statement(block_site), top_statement(loop_site)
    position = {id(s): k for k, s in enumerate(statements)}
    if position[id(mine)] <= position[id(target)]:
        raise fail(primitive, f"block {block.name!r} does not come after loop {loop.var.name}")
    own = exclusive_root(block_site)
    my_reads = {a.buffer.name for a in instance_accesses_of(block) if not a.is_write}
    my_writes = {b.name for b, _ in facts.write_indices}
    my_reads -= my_writes
    _check_between(primitive, block, statements, target, mine, my_reads, my_writes, loop)
    produced, _ = buffers_touched(loop)
    if my_writes & (produced | buffers_touched(loop)[1]):
        raise fail(primitive, f"blocks under loop {loop.var.name} use what {block.name!r} writes")
    regions = _producer_regions(
        primitive, block, loop, my_reads & produced, complete, _outer_ranges(loop_site)
    )
    nest = _region_nest(block, regions, namer, _outer_ranges(loop_site), kept)
    body = replace(func.body, loop, _with_body(loop, seq(loop.body, nest)))
    body = remove(body, own)
    removed = {
        lp.var.name: f"regenerated by reverse_compute_at({block.name!r}, {loop.var.name})"
        for lp in block_site.loops()
        if _inside(own, lp)
    }
    return Step(func.with_body(body), (), removed)


def _check_between(primitive, block, statements, target, mine, reads, writes, loop) -> None:
    start = next(k for k, s in enumerate(statements) if s is target)
    end = next(k for k, s in enumerate(statements) if s is mine)
    for stmt in statements[start : end + 1]:
        for realize, _ in instances_under(stmt):
            if realize.block is block or (stmt is target and _under(loop, realize)):
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


def _producer_regions(
    primitive, block, loop, buffers, complete, outer
) -> dict[str, tuple[Dim, Dim]]:
    """For each spatial iterator of ``block`` read as an axis of a buffer produced under
    ``loop``: the range of that axis produced in one iteration."""
    if not buffers:
        raise fail(
            primitive, f"block {block.name!r} reads nothing produced under loop {loop.var.name}"
        )
    accesses = instance_accesses_of(block)
    spatial = {iv.var.name: iv for iv in block.iter_vars if iv.kind == "spatial"}
    regions: dict[str, tuple[Dim, Dim]] = {}
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
        _check_dense(primitive, realize.block, writes[0], loops, loop)
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
    _check_reads_within(primitive, block, accesses, regions, produced_regions)
    return regions


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


def _check_dense(primitive, producer: Block, write: Access, loops, loop: For) -> None:
    """One iteration of ``loop`` produces exactly a box: each written index runs densely
    over its own loops (so the region relaxed from it is not an over-approximation)."""
    inner = {v.name: e for v, s, e in loops if s == 0 and v is not loop.var}
    used: set[str] = set()
    for index in write.indices:
        if isinstance(index, PrimExpr) or not dense(index, inner):
            raise fail(
                primitive,
                f"cannot prove that one iteration of loop {loop.var.name} produces a box of "
                f"{write.buffer.name} (block {producer.name!r} writes "
                f"[{', '.join(map(str, write.indices))}])",
            )
        names = {s.name for s in arith.free_symbols(index)} & set(inner)
        if names & used:
            raise fail(primitive, f"block {producer.name!r} writes {write.buffer.name} diagonally")
        used |= names
    if any(s != 0 for v, s, e in loops if v is not loop.var):
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
