"""decompose_reduction and rfactor: restructure a reduction block.

decompose_reduction moves a block's ``init`` into a block of its own before a loop;
rfactor splits a reduction over a loop into partial results (one per iteration of
that loop, in a new buffer, so the loop becomes parallel) and a write-back block that
combines them.
"""

from __future__ import annotations

from collections.abc import Sequence

from relaxjax import arith
from relaxjax.arith import Dim
from relaxjax.schedule.dependence import block_facts
from relaxjax.schedule.inline import with_block
from relaxjax.schedule.predicate import conjuncts
from relaxjax.schedule.scope import (
    conjunction,
    insert_after,
    insert_before,
    instance_accesses,
    instances_under,
    scope_block,
    top_statement,
    top_statements,
    with_allocs,
)
from relaxjax.schedule.step import Step, fail
from relaxjax.schedule.tree import Namer, Site, block_site, child_realizes, find_sites, replace
from relaxjax.tir.analysis import block_access_regions, free_symbols
from relaxjax.tir.buffer import Buffer
from relaxjax.tir.expr import (
    BinOp,
    BufferLoad,
    PrimExpr,
    binop,
    const,
    max_value,
    min_value,
)
from relaxjax.tir.function import PrimFunc
from relaxjax.tir.functor import ExprVisitor, Substituter
from relaxjax.tir.stmt import Block, BlockRealize, BufferStore, For, IterVar, Stmt


def _uses(dim: Dim, names: set[str]) -> bool:
    return not isinstance(dim, int) and any(s.name in names for s in arith.free_symbols(dim))


def _feeds(realize: BlockRealize, loop: For) -> set[str]:
    """The kinds (``spatial``/``reduce``) of the iterators ``loop`` feeds."""
    return {
        iv.kind
        for iv, v in zip(realize.block.iter_vars, realize.iter_values)
        if _uses(v, {loop.var.name})
    }


def _make_block(name, iter_vars, init, body, annotations=()) -> Block:
    block = Block(name, tuple(iter_vars), (), (), init, body, (), annotations)
    reads, writes = block_access_regions(block)
    return Block(name, tuple(iter_vars), reads, writes, init, body, (), annotations)


def _nest(loops: Sequence[tuple[arith.Sym, Dim]], stmt: Stmt) -> Stmt:
    for var, extent in reversed(list(loops)):
        stmt = For(var, 0, extent, "serial", stmt)
    return stmt


# --- decompose_reduction ----------------------------------------------------------------


def decompose_reduction(func: PrimFunc, namer: Namer, site: Site, loop_site: Site) -> Step:
    """Moves the init of the block at ``site`` into a new block before the loop."""
    primitive = "decompose_reduction"
    realize: BlockRealize = site.node
    block, loop = realize.block, loop_site.node
    if block.init is None:
        raise fail(primitive, f"block {block.name!r} has no init to decompose")
    chain = list(site.loops())
    if not any(lp is loop for lp in chain):
        raise fail(primitive, f"loop {loop.var.name} does not enclose block {block.name!r}")
    position = next(k for k, lp in enumerate(chain) if lp is loop)
    for lp in chain[:position]:
        if "reduce" in _feeds(realize, lp):
            raise fail(
                primitive,
                f"loop {lp.var.name} around loop {loop.var.name} binds a reduction iterator of "
                f"{block.name!r}: the init would run again at each of its iterations",
            )
    chain = chain[position:]
    copied: list[For] = []
    reduce_loops: set[str] = set()
    for lp in chain:
        kinds = _feeds(realize, lp)
        if kinds == {"spatial", "reduce"}:
            raise fail(
                primitive,
                f"loop {lp.var.name} binds both spatial and reduction iterators of {block.name!r}",
            )
        if kinds == {"spatial"}:
            copied.append(lp)
        elif kinds == {"reduce"}:
            reduce_loops.add(lp.var.name)
        elif arith.compare(lp.extent, "<=", 1) is not True:
            raise fail(
                primitive,
                f"loop {lp.var.name} binds no iterator of {block.name!r}, which it runs again "
                f"at each iteration (e.g. after compute_at): decomposing at loop "
                f"{loop.var.name} would initialise it only once",
            )
    renames = {lp.var.name: namer.fresh_sym(f"{lp.var.name}_init") for lp in copied}
    new_loops = []
    for lp in copied:
        if _uses(lp.extent, reduce_loops) or lp.start != 0:
            raise fail(primitive, f"the range of loop {lp.var.name} depends on a reduction loop")
        new_loops.append((renames[lp.var.name], arith.subs(lp.extent, renames)))
    kept = []
    for condition in conjuncts(realize.predicate):
        names = {s.name for s in free_symbols(condition)}
        if names & reduce_loops:
            if names & set(renames) or names & {lp.var.name for lp in chain} - reduce_loops:
                raise fail(
                    primitive, f"the predicate {condition!r} mixes spatial and reduction loops"
                )
            continue
        kept.append(Substituter(renames).visit_expr(condition))
    spatial = [
        (iv, v) for iv, v in zip(block.iter_vars, realize.iter_values) if iv.kind == "spatial"
    ]
    iter_map = {iv.var.name: namer.fresh_sym(f"{iv.var.name}_init") for iv, _ in spatial}
    ivs = [IterVar(iter_map[iv.var.name], iv.extent, "spatial") for iv, _ in spatial]
    values = [arith.subs(v, renames) for _, v in spatial]
    init_body = Substituter(iter_map).visit_stmt(block.init)
    name = namer.fresh(f"{block.name}_init")
    init_block = _make_block(name, ivs, None, init_body)
    predicate = conjunction(kept)
    init_realize = BlockRealize(tuple(values), True if predicate is None else predicate, init_block)
    new_block = Block(
        block.name,
        block.iter_vars,
        block.reads,
        block.writes,
        None,
        block.body,
        block.alloc_buffers,
        block.annotations,
    )
    body = replace(func.body, realize, with_block(realize, new_block))
    loop_now = find_sites(body, lambda s: isinstance(s, For) and s.var.name == loop.var.name)[
        0
    ].node
    body = insert_before(body, loop_now, _nest(new_loops, init_realize))
    return Step(func.with_body(body), (name,))


# --- rfactor ------------------------------------------------------------------------------

_IDENTITY = {"+": 0, "*": 1}


def identity(op: str, dtype: str) -> PrimExpr:
    """The identity of the reduction ``op`` (+ * min max) in ``dtype``."""
    if op in _IDENTITY:
        return const(_IDENTITY[op], dtype)
    return min_value(dtype) if op == "max" else max_value(dtype)


def reduction_update(primitive: str, block: Block) -> tuple[BufferStore, str, PrimExpr, bool]:
    """``(store, op, rhs, accumulator_first)`` of ``W[I] = W[I] op rhs``."""
    body = block.body
    problem = f"block {block.name!r} is not a reduction W[I] = W[I] op rhs with op in + * min max"
    if not block.is_reduction or not isinstance(body, BufferStore):
        raise fail(primitive, problem)
    value = body.value
    if not isinstance(value, BinOp) or value.op not in ("+", "*", "min", "max"):
        raise fail(primitive, problem)
    accumulator = BufferLoad(body.buffer, body.indices)
    if value.a == accumulator:
        rhs, first = value.b, True
    elif value.b == accumulator:
        rhs, first = value.a, False
    else:
        raise fail(primitive, problem)
    if body.buffer.name in _loaded(rhs):
        raise fail(primitive, problem)
    return body, value.op, rhs, first


def _loaded(expr: PrimExpr) -> set[str]:
    found: set[str] = set()

    class _Loads(ExprVisitor):
        def visit_BufferLoad(self, load: BufferLoad) -> None:
            found.add(load.buffer.name)
            super().visit_BufferLoad(load)

    _Loads().visit_expr(expr)
    return found


def _combine(op: str, acc: PrimExpr, new: PrimExpr, first: bool) -> PrimExpr:
    return binop(op, acc, new) if first else binop(op, new, acc)


def rfactor(
    func: PrimFunc, namer: Namer, loop_site: Site, factor_axis: int, complete: set[str]
) -> Step:
    """Factors the reduction under the loop at ``loop_site`` over that loop."""
    primitive = "rfactor"
    loop: For = loop_site.node
    realizes = child_realizes(loop)
    if len(realizes) != 1:
        raise fail(
            primitive, f"loop {loop.var.name} must hold exactly one block, it holds {len(realizes)}"
        )
    realize = realizes[0]
    block = realize.block
    site = block_site(func.body, block.name)
    if block.name not in complete:
        raise fail(primitive, f"block {block.name!r} does not cover its whole domain")
    facts = block_facts(block)
    if facts.problem is not None:
        raise fail(primitive, facts.problem)
    store, op, rhs, first = reduction_update(primitive, block)
    if _feeds(realize, loop) != {"reduce"}:
        raise fail(
            primitive, f"loop {loop.var.name} is not a reduction loop of block {block.name!r}"
        )
    buffer = store.buffer
    if not isinstance(factor_axis, int) or not 0 <= factor_axis <= buffer.ndim:
        raise fail(primitive, f"factor_axis must be in [0, {buffer.ndim}], got {factor_axis!r}")
    loops = site.loops()
    reduce_loops = []
    for lp in loops:
        kinds = _feeds(realize, lp)
        if kinds == {"spatial", "reduce"}:
            raise fail(primitive, f"loop {lp.var.name} binds both spatial and reduction iterators")
        if kinds == {"reduce"}:
            if _uses(lp.extent, {x.var.name for x in loops}) or lp.start != 0:
                raise fail(
                    primitive, f"the range of reduction loop {lp.var.name} depends on other loops"
                )
            reduce_loops.append(lp)
    _check_alone(primitive, site, block, buffer)
    spatial = [
        (iv, v) for iv, v in zip(block.iter_vars, realize.iter_values) if iv.kind == "spatial"
    ]
    reduce_vals = {
        iv.var.name: v for iv, v in zip(block.iter_vars, realize.iter_values) if iv.kind == "reduce"
    }
    # the partial-result block, bound to the same loops
    s_map = {iv.var.name: namer.fresh_sym(f"{iv.var.name}_rf") for iv, _ in spatial}
    l_map = {lp.var.name: namer.fresh_sym(f"v_{lp.var.name}") for lp in reduce_loops}
    rf_ivs = [IterVar(s_map[iv.var.name], iv.extent, "spatial") for iv, _ in spatial]
    rf_vals = [v for _, v in spatial]
    for lp in reduce_loops:
        kind = "spatial" if lp is loop else "reduce"
        rf_ivs.append(IterVar(l_map[lp.var.name], lp.extent, kind))
        rf_vals.append(lp.var)
    mapping = dict(s_map)
    mapping.update({name: arith.subs(v, l_map) for name, v in reduce_vals.items()})
    extent = loop.extent
    rf_shape = buffer.shape[:factor_axis] + (extent,) + buffer.shape[factor_axis:]
    rf_name = namer.fresh(f"{buffer.name}_rf")
    rf_buffer = Buffer(rf_name, rf_shape, buffer.dtype, None, "global")
    subst = Substituter(mapping)
    index = tuple(subst.visit_index(i) for i in store.indices)
    rf_index = index[:factor_axis] + (l_map[loop.var.name],) + index[factor_axis:]
    rf_value = _combine(op, BufferLoad(rf_buffer, rf_index), subst.visit_expr(rhs), first)
    rf_block = _make_block(rf_name, rf_ivs, None, BufferStore(rf_buffer, rf_value, rf_index))
    rf_realize = BlockRealize(tuple(rf_vals), realize.predicate, rf_block)
    body = replace(func.body, realize, rf_realize)
    top = top_statement(block_site(body, rf_name))
    init_nest, init_name = _rf_init(namer, rf_buffer, op)
    body = insert_before(body, top, init_nest)
    body = insert_after(
        body, top, _write_back(namer, block, store, op, first, rf_buffer, factor_axis, extent)
    )
    scope_name = scope_block(site).name
    holder = find_sites(body, lambda s: isinstance(s, BlockRealize) and s.block.name == scope_name)[
        0
    ].node
    body = replace(body, holder, with_allocs(holder, holder.block.alloc_buffers + (rf_buffer,)))
    return Step(func.with_body(body), (rf_name, init_name))


def _check_alone(primitive: str, site: Site, block: Block, buffer: Buffer) -> None:
    scope = scope_block(site)
    mine = top_statement(site)
    for stmt in top_statements(scope):
        for other, _ in instances_under(stmt):
            if other.block is block:
                continue
            accesses = instance_accesses(other)
            if any(a.buffer == buffer and (a.is_write or stmt is mine) for a in accesses):
                raise fail(
                    primitive,
                    f"block {other.block.name!r} also uses {buffer.name} next to {block.name!r}",
                )


def _rf_init(namer: Namer, rf_buffer: Buffer, op: str) -> tuple[Stmt, str]:
    loops = [(namer.fresh_sym(f"ax{k}"), d) for k, d in enumerate(rf_buffer.shape)]
    ivs = [
        IterVar(namer.fresh_sym(f"v_ax{k}"), d, "spatial") for k, d in enumerate(rf_buffer.shape)
    ]
    store = BufferStore(rf_buffer, identity(op, rf_buffer.dtype), tuple(iv.var for iv in ivs))
    name = namer.fresh(f"{rf_buffer.name}_init")
    realize = BlockRealize(tuple(v for v, _ in loops), True, _make_block(name, ivs, None, store))
    return _nest(loops, realize), name


def _write_back(namer, block, store, op, first, rf_buffer, factor_axis, extent) -> Stmt:
    spatial = [iv for iv in block.iter_vars if iv.kind == "spatial"]
    s_map = {iv.var.name: namer.fresh_sym(f"{iv.var.name}_wb") for iv in spatial}
    k = namer.fresh_sym(f"v_{rf_buffer.name}")
    ivs = [IterVar(s_map[iv.var.name], iv.extent, "spatial") for iv in spatial]
    ivs.append(IterVar(k, extent, "reduce"))
    subst = Substituter(s_map)
    index = tuple(subst.visit_index(i) for i in store.indices)
    partial = BufferLoad(rf_buffer, index[:factor_axis] + (k,) + index[factor_axis:])
    value = _combine(op, BufferLoad(store.buffer, index), partial, first)
    init = subst.visit_stmt(block.init) if block.init is not None else None
    wb = _make_block(
        block.name, ivs, init, BufferStore(store.buffer, value, index), block.annotations
    )
    loops = [(namer.fresh_sym(f"ax_{iv.var.name}"), iv.extent) for iv in ivs]
    realize = BlockRealize(tuple(v for v, _ in loops), True, wb)
    return _nest(loops, realize)
