"""cache_read and cache_write: stage a buffer through a copy in another scope.

The copy is a new block over the whole buffer (``A_local[v0, v1] = A[v0, v1]``),
placed right before the reader's loop nest (cache_read) or right after the writer's
(cache_write); :func:`~.compute_at.compute_at` can then move it into a tile.
"""

from __future__ import annotations

from relaxjax import arith
from relaxjax.schedule.compute_at import identity_axes
from relaxjax.schedule.dependence import block_facts
from relaxjax.schedule.inline import with_block
from relaxjax.schedule.scope import (
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
from relaxjax.schedule.tree import Namer, Site, find_sites, replace
from relaxjax.tir.analysis import block_access_regions
from relaxjax.tir.buffer import SCOPES, Buffer
from relaxjax.tir.function import PrimFunc
from relaxjax.tir.functor import StmtMutator
from relaxjax.tir.stmt import Block, BlockRealize, BufferStore, For, IterVar, Stmt


def pick_buffer(primitive: str, block: Block, which: int | str, writes: bool) -> Buffer:
    """The buffer ``which`` (an index into the block's reads/writes, or a name)."""
    regions = block.writes if writes else block.reads
    kind = "write" if writes else "read"
    if isinstance(which, bool) or not isinstance(which, (int, str)):
        raise fail(primitive, f"give a {kind} buffer index or name, got {which!r}")
    if isinstance(which, int):
        if not 0 <= which < len(regions):
            raise fail(
                primitive,
                f"block {block.name!r} has {len(regions)} {kind} buffer(s); index {which} is out "
                "of range",
            )
        return regions[which].buffer
    for region in regions:
        if region.buffer.name == which:
            return region.buffer
    names = ", ".join(r.buffer.name for r in regions) or "none"
    raise fail(primitive, f"block {block.name!r} does not {kind} {which}; it {kind}s {names}")


def _check_scope(primitive: str, scope: str) -> None:
    if scope not in SCOPES:
        raise fail(primitive, f"storage scope must be one of {SCOPES}, got {scope!r}")


def copy_nest(namer: Namer, name: str, source: Buffer, target: Buffer) -> Stmt:
    """``target[v...] = source[v...]`` over the whole shape, in a block called ``name``."""
    loop_vars = [namer.fresh_sym(f"ax{axis}") for axis in range(source.ndim)]
    iter_vars = [namer.fresh_sym(f"v_ax{axis}") for axis in range(source.ndim)]
    store = BufferStore(
        target, source[tuple(iter_vars)] if iter_vars else source[()], tuple(iter_vars)
    )
    ivs = tuple(IterVar(v, extent, "spatial") for v, extent in zip(iter_vars, source.shape))
    block = Block(name, ivs, (), (), None, store)
    reads, writes = block_access_regions(block)
    block = Block(name, ivs, reads, writes, None, store)
    stmt: Stmt = BlockRealize(tuple(loop_vars), True, block)
    for var, extent in reversed(list(zip(loop_vars, source.shape))):
        stmt = For(var, 0, extent, "serial", stmt)
    return stmt


class _Swap(StmtMutator):
    def __init__(self, old: Buffer, new: Buffer, loads: bool, stores: bool):
        self.old, self.new = old, new
        self.loads, self.stores = loads, stores

    def visit_BufferLoad(self, expr):
        expr = super().visit_BufferLoad(expr)
        if self.loads and expr.buffer == self.old:
            return type(expr)(self.new, expr.indices)
        return expr

    def visit_BufferStore(self, stmt):
        stmt = super().visit_BufferStore(stmt)
        if self.stores and stmt.buffer == self.old:
            return BufferStore(self.new, stmt.value, stmt.indices)
        return stmt


def _swap_in_block(block: Block, old: Buffer, new: Buffer, loads: bool, stores: bool) -> Block:
    swap = _Swap(old, new, loads, stores)
    init = None if block.init is None else swap.visit_stmt(block.init)
    return Block(
        block.name,
        block.iter_vars,
        block.reads,
        block.writes,
        init,
        swap.visit_stmt(block.body),
        block.alloc_buffers,
        block.annotations,
    )


def _add_alloc(body: Stmt, scope_name: str, buffer: Buffer) -> Stmt:
    site = find_sites(body, lambda s: isinstance(s, BlockRealize) and s.block.name == scope_name)[0]
    realize = site.node
    return replace(body, realize, with_allocs(realize, realize.block.alloc_buffers + (buffer,)))


def cache_read(func: PrimFunc, namer: Namer, site: Site, which: int | str, scope: str) -> Step:
    """Makes the block at ``site`` read ``which`` from a copy in ``scope``."""
    primitive = "cache_read"
    _check_scope(primitive, scope)
    realize: BlockRealize = site.node
    block = realize.block
    buffer = pick_buffer(primitive, block, which, writes=False)
    if any(a.buffer == buffer and a.is_write for a in instance_accesses(realize)):
        raise fail(primitive, f"block {block.name!r} also writes {buffer.name}")
    mine = top_statement(site)
    for other, _ in instances_under(mine):
        if any(a.buffer == buffer and a.is_write for a in instance_accesses(other)):
            raise fail(
                primitive,
                f"block {other.block.name!r} writes {buffer.name} in the same loop nest as "
                f"{block.name!r}: a copy made before the nest would be stale",
            )
    name = namer.fresh(f"{buffer.name}_{scope}")
    cache = Buffer(name, buffer.shape, buffer.dtype, None, scope)
    new_block = _swap_in_block(block, buffer, cache, loads=True, stores=False)
    holder = scope_block(site).name
    body = replace(func.body, realize, with_block(realize, new_block))
    body = insert_before(
        body, _top_of(body, holder, block.name), copy_nest(namer, name, buffer, cache)
    )
    body = _add_alloc(body, holder, cache)
    return Step(func.with_body(body), (name,))


def _top_of(body: Stmt, scope_name: str, block_name: str) -> Stmt:
    from relaxjax.schedule.tree import block_site

    return top_statement(block_site(body, block_name))


def cache_write(
    func: PrimFunc, namer: Namer, site: Site, which: int | str, scope: str, complete: set[str]
) -> Step:
    """Makes the block at ``site`` write ``which`` into a copy in ``scope``, copied back
    after its loop nest."""
    primitive = "cache_write"
    _check_scope(primitive, scope)
    realize: BlockRealize = site.node
    block = realize.block
    buffer = pick_buffer(primitive, block, which, writes=True)
    if block.name not in complete:
        raise fail(primitive, f"block {block.name!r} does not cover its whole domain")
    facts = block_facts(block)
    if facts.problem is not None:
        raise fail(primitive, facts.problem)
    axes = identity_axes(primitive, block, buffer)
    extents = {iv.var.name: iv.extent for iv in block.iter_vars}
    for iv_name, axis in axes.items():
        if arith.compare(extents[iv_name], "==", buffer.shape[axis]) is not True:
            raise fail(
                primitive,
                f"block {block.name!r} writes [0, {extents[iv_name]}) of {buffer.name} axis "
                f"{axis}, not all of it",
            )
    scope_blk = scope_block(site)
    for stmt in top_statements(scope_blk):
        for other, _ in instances_under(stmt):
            if other.block is block:
                continue
            touches = any(a.buffer == buffer for a in instance_accesses(other))
            if touches and (
                stmt is top_statement(site)
                or any(a.buffer == buffer and a.is_write for a in instance_accesses(other))
            ):
                raise fail(
                    primitive,
                    f"block {other.block.name!r} also uses {buffer.name} next to "
                    f"{block.name!r}; the copy back would reorder them",
                )
    name = namer.fresh(f"{buffer.name}_{scope}")
    cache = Buffer(name, buffer.shape, buffer.dtype, None, scope)
    new_block = _swap_in_block(block, buffer, cache, loads=True, stores=True)
    holder = scope_blk.name
    body = replace(func.body, realize, with_block(realize, new_block))
    body = insert_after(
        body, _top_of(body, holder, block.name), copy_nest(namer, name, cache, buffer)
    )
    body = _add_alloc(body, holder, cache)
    return Step(func.with_body(body), (name,))
