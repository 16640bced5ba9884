"""compute_inline and reverse_compute_inline: fold an elementwise block into its
consumers or into its producer, removing the intermediate buffer."""

from __future__ import annotations

from relaxjax import arith
from relaxjax.errors import ScheduleError
from relaxjax.schedule.compute_at import identity_axes, instance_accesses_of
from relaxjax.schedule.dependence import block_facts
from relaxjax.schedule.layout import alignment_requests, with_requests
from relaxjax.schedule.scope import (
    exclusive_root,
    instance_accesses,
    instances_under,
    remove,
    scope_block,
    top_statement,
    top_statements,
    with_allocs,
)
from relaxjax.schedule.step import Step, fail
from relaxjax.schedule.tree import Site, replace
from relaxjax.tir.analysis import block_access_regions
from relaxjax.tir.buffer import Buffer
from relaxjax.tir.expr import BufferLoad, PrimExpr
from relaxjax.tir.function import PrimFunc
from relaxjax.tir.functor import StmtMutator, Substituter
from relaxjax.tir.stmt import Block, BlockRealize, BufferStore, Stmt


def _single_store(primitive: str, block: Block) -> BufferStore:
    if block.is_reduction or block.init is not None:
        raise fail(
            primitive, f"block {block.name!r} is a reduction; only elementwise blocks inline"
        )
    if not isinstance(block.body, BufferStore):
        raise fail(primitive, f"block {block.name!r} must be a single store to inline")
    if block.alloc_buffers:
        raise fail(primitive, f"block {block.name!r} allocates buffers")
    return block.body


def _intermediate(primitive: str, func: PrimFunc, buffer: Buffer, scope: Block) -> None:
    if any(p.name == buffer.name for p in func.params):
        raise fail(primitive, f"{buffer.name} is a parameter of the kernel and must be kept")
    if buffer not in scope.alloc_buffers:
        raise fail(primitive, f"{buffer.name} is not allocated by block {scope.name!r}")


def with_block(realize: BlockRealize, block: Block) -> BlockRealize:
    """``realize`` running ``block`` instead, with reads/writes recomputed."""
    reads, writes = block_access_regions(block)
    new = Block(
        block.name,
        block.iter_vars,
        reads,
        writes,
        block.init,
        block.body,
        block.alloc_buffers,
        block.annotations,
    )
    return BlockRealize(realize.iter_values, realize.predicate, new)


def _users(scope: Block, buffer: Buffer, skip: Block) -> list[tuple[Stmt, BlockRealize]]:
    users = []
    for stmt in top_statements(scope):
        for realize, _ in instances_under(stmt):
            if realize.block is skip:
                continue
            if any(a.buffer.name == buffer.name for a in instance_accesses(realize)):
                users.append((stmt, realize))
    return users


def _drop_alloc(body: Stmt, scope_site_realize: BlockRealize, buffer: Buffer) -> Stmt:
    """``body`` without the allocation of ``buffer`` (nor its storage_align requests)."""
    allocs = [b for b in scope_site_realize.block.alloc_buffers if b != buffer]
    realize = with_allocs(scope_site_realize, allocs)
    if alignment_requests(realize.block, buffer.name):
        block = with_requests(realize.block, buffer.name, {})
        realize = BlockRealize(realize.iter_values, realize.predicate, block)
    return replace(body, scope_site_realize, realize)


# --- compute_inline -------------------------------------------------------------------


class _Inliner(StmtMutator):
    """Replaces loads of ``buffer`` by the producer's value at the loaded indices."""

    def __init__(self, primitive: str, buffer: Buffer, axes: dict[str, int], value: PrimExpr):
        self.primitive = primitive
        self.buffer = buffer
        self.axes = axes
        self.value = value

    def visit_BufferLoad(self, expr: BufferLoad) -> PrimExpr:
        expr = super().visit_BufferLoad(expr)
        if not isinstance(expr, BufferLoad) or expr.buffer.name != self.buffer.name:
            return expr
        mapping = {}
        for name, axis in self.axes.items():
            index = expr.indices[axis]
            if isinstance(index, PrimExpr):
                raise fail(
                    self.primitive,
                    f"{self.buffer.name} is read at a data-dependent index; it cannot be inlined",
                )
            mapping[name] = index
        return Substituter(mapping).visit_expr(self.value)


def compute_inline(func: PrimFunc, site: Site) -> Step:
    """Inlines the elementwise producer at ``site`` into every block that reads it."""
    primitive = "compute_inline"
    realize: BlockRealize = site.node
    block = realize.block
    store = _single_store(primitive, block)
    facts = block_facts(block)
    if facts.problem is not None:
        raise fail(primitive, facts.problem)
    buffer = store.buffer
    scope = scope_block(site)
    _intermediate(primitive, func, buffer, scope)
    axes = identity_axes(primitive, block, buffer)
    reads = {a.buffer.name for a in instance_accesses(realize) if not a.is_write}
    if buffer.name in reads:
        raise fail(primitive, f"block {block.name!r} reads {buffer.name}, which it writes")
    users = _users(scope, buffer, block)
    statements = top_statements(scope)
    mine = top_statement(site)
    position = {id(s): k for k, s in enumerate(statements)}
    for stmt, user in users:
        accesses = instance_accesses(user)
        if any(a.buffer.name == buffer.name and a.is_write for a in accesses):
            raise fail(primitive, f"block {user.block.name!r} also writes {buffer.name}")
        if position[id(stmt)] < position[id(mine)] or stmt is mine:
            raise fail(
                primitive,
                f"block {user.block.name!r} reads {buffer.name} but is not after {block.name!r}",
            )
    _check_inputs_stable(primitive, block, reads, statements, mine, users)
    inliner = _Inliner(primitive, buffer, axes, store.value)
    body = func.body
    for _, user in users:
        new_block = inliner.visit_stmt(user.block)
        body = replace(body, user, with_block(user, new_block))
    own = exclusive_root(_refind(body, block.name))
    body = remove(body, own)
    body = _drop_alloc(body, _scope_realize_of(body, scope.name), buffer)
    return Step(func.with_body(body), (), {block.name: "inlined by compute_inline"})


def _check_inputs_stable(primitive, block, reads, statements, mine, users) -> None:
    """Nothing from the producer to its last consumer writes what the producer reads."""
    last = max(
        (next(k for k, s in enumerate(statements) if s is st) for st, _ in users), default=-1
    )
    first = next(k for k, s in enumerate(statements) if s is mine)
    for stmt in statements[first : last + 1]:
        for realize, _ in instances_under(stmt):
            if realize.block is block:
                continue
            writes = {a.buffer.name for a in instance_accesses(realize) if a.is_write}
            if writes & reads:
                raise fail(
                    primitive,
                    f"block {realize.block.name!r} writes {', '.join(sorted(writes & reads))}, "
                    f"which {block.name!r} reads: inlining would read it later",
                )


def _refind(body: Stmt, name: str) -> Site:
    from relaxjax.schedule.tree import block_site

    return block_site(body, name)


def _scope_realize_of(body: Stmt, name: str) -> BlockRealize:
    from relaxjax.schedule.tree import find_sites

    return find_sites(body, lambda s: isinstance(s, BlockRealize) and s.block.name == name)[0].node


# --- reverse_compute_inline -------------------------------------------------------------


def reverse_compute_inline(func: PrimFunc, site: Site, complete: set[str]) -> Step:
    """Folds the elementwise consumer at ``site`` into the block that produces its input
    (the writer of the last-written intermediate it reads); its other reads (parameters,
    intermediates complete before that producer) move with it, at the producer's
    iterators."""
    primitive = "reverse_compute_inline"
    realize: BlockRealize = site.node
    block = realize.block
    if block.name not in complete:
        raise fail(primitive, f"block {block.name!r} does not cover its whole domain")
    store = _single_store(primitive, block)
    facts = block_facts(block)
    if facts.problem is not None:
        raise fail(primitive, facts.problem)
    scope = scope_block(site)
    allocated = {b.name for b in scope.alloc_buffers}
    accesses = instance_accesses(realize)
    inputs = sorted(
        {a.buffer.name for a in accesses if not a.is_write and a.buffer.name in allocated}
    )
    name, producer = _last_producer(primitive, scope, block, inputs)
    buffer = _buffer(scope, name)
    try:
        producer_store, p_axes, c_axes = _check_foldable(
            primitive, scope, site, block, accesses, producer, buffer, complete
        )
    except ScheduleError as err:
        if len(inputs) == 1:
            raise
        reason = str(err).removeprefix(f"{primitive}: ")
        raise fail(
            primitive,
            f"block {block.name!r} reads {_listed(inputs)}; it can only fold into "
            f"{producer.block.name!r}, which writes the last of them ({name}), but {reason}",
        ) from None
    p_iter = {iv.var.name: iv.var for iv in producer.block.iter_vars}
    mapping = {c: p_iter[_iter_at(p_axes, axis)] for c, axis in c_axes.items()}
    new_value = _LoadReplacer(buffer, producer_store.value).visit_expr(store.value)
    new_value = Substituter(mapping).visit_expr(new_value)
    new_indices = tuple(Substituter(mapping).visit_index(i) for i in store.indices)
    new_store = BufferStore(store.buffer, new_value, new_indices)
    p_block = producer.block
    new_block = Block(
        p_block.name, p_block.iter_vars, (), (), None, new_store, (), p_block.annotations
    )
    body = replace(func.body, producer, with_block(producer, new_block))
    own = exclusive_root(_refind(body, block.name))
    body = remove(body, own)
    body = _drop_alloc(body, _scope_realize_of(body, scope.name), buffer)
    return Step(func.with_body(body), (), {block.name: "inlined by reverse_compute_inline"})


def _listed(names: list[str]) -> str:
    return " and ".join(names) if len(names) <= 2 else f"{', '.join(names[:-1])} and {names[-1]}"


def _last_producer(
    primitive: str, scope: Block, block: Block, inputs: list[str]
) -> tuple[str, BlockRealize]:
    """The intermediate the consumer ``block`` folds into and its single writer: of the
    intermediates it reads that one block writes, the one written last (every other
    buffer it reads must then be complete before that producer runs)."""
    order = {id(r): k for k, (r, _) in enumerate(instances_under(scope.body))}
    candidates = []
    for name in inputs:
        writers = [
            u
            for _, u in _users(scope, _buffer(scope, name), block)
            if any(a.is_write for a in instance_accesses(u) if a.buffer.name == name)
        ]
        if len(writers) == 1:
            candidates.append((order[id(writers[0])], name, writers[0]))
    if not candidates:
        raise fail(
            primitive,
            f"block {block.name!r} must read an intermediate buffer written by exactly one "
            f"block; it reads {', '.join(inputs) or 'none'}",
        )
    _, name, producer = max(candidates, key=lambda c: c[:2])
    return name, producer


def _check_foldable(primitive, scope, site, block, accesses, producer, buffer, complete):
    """The checks of reverse_compute_inline on the chosen producer; returns its store and
    the iterator -> axis maps of ``buffer`` in the producer and in the consumer."""
    name = buffer.name
    if producer.block.name not in complete:
        raise fail(primitive, f"producer {producer.block.name!r} does not cover its whole domain")
    producer_store = _single_store(primitive, producer.block)
    p_axes = identity_axes(primitive, producer.block, buffer)
    own = instance_accesses_of(block)
    loads = [a for a in own if a.buffer.name == name and not a.is_write]
    c_spatial = {iv.var.name: iv for iv in block.iter_vars}
    if len({a.indices for a in loads}) != 1:
        raise fail(primitive, f"block {block.name!r} reads {name} at several indices")
    indices = loads[0].indices
    c_axes = {}
    for axis, index in enumerate(indices):
        if isinstance(index, arith.Sym) and index.name in c_spatial and index.name not in c_axes:
            c_axes[index.name] = axis
    if len(c_axes) != len(c_spatial) or len(indices) != len(c_spatial):
        raise fail(
            primitive,
            f"block {block.name!r} must read {name} at exactly its iterators, got "
            f"[{', '.join(map(str, indices))}]",
        )
    for iv_name, axis in c_axes.items():
        if arith.compare(c_spatial[iv_name].extent, "==", buffer.shape[axis]) is not True:
            raise fail(
                primitive,
                f"block {block.name!r} covers [0, {c_spatial[iv_name].extent}) of {name} axis "
                f"{axis}, not its whole extent {buffer.shape[axis]}",
            )
    users = _users(scope, buffer, producer.block)
    if [u.block.name for _, u in users] != [block.name]:
        raise fail(primitive, f"{name} has other consumers than {block.name!r}")
    _check_between_producer(primitive, scope, producer, site, block, accesses, buffer)
    return producer_store, p_axes, c_axes


def _iter_at(axes: dict[str, int], axis: int) -> str:
    return next(name for name, a in axes.items() if a == axis)


def _buffer(scope: Block, name: str) -> Buffer:
    return next(b for b in scope.alloc_buffers if b.name == name)


class _LoadReplacer(StmtMutator):
    def __init__(self, buffer: Buffer, value: PrimExpr):
        self.buffer = buffer
        self.value = value

    def visit_BufferLoad(self, expr: BufferLoad) -> PrimExpr:
        if expr.buffer.name == self.buffer.name:
            return self.value
        return super().visit_BufferLoad(expr)


def _check_between_producer(primitive, scope, producer, site, block, accesses, buffer) -> None:
    """From the producer to the consumer nothing writes what the consumer reads or
    touches what it writes (the consumer's work moves up to the producer)."""
    statements = top_statements(scope)
    reads = {a.buffer.name for a in accesses if not a.is_write} - {buffer.name}
    writes = {a.buffer.name for a in accesses if a.is_write}
    producer_site = _refind_site(scope, producer)
    first = next(k for k, s in enumerate(statements) if s is top_statement(producer_site))
    last = next(k for k, s in enumerate(statements) if s is top_statement(site))
    if first > last:
        raise fail(primitive, f"block {block.name!r} comes before its producer")
    for stmt in statements[first : last + 1]:
        for realize, _ in instances_under(stmt):
            if realize.block is block:
                continue
            other = instance_accesses(realize)
            o_writes = {a.buffer.name for a in other if a.is_write}
            o_touched = {a.buffer.name for a in other}
            if realize is not producer and o_writes & reads:
                raise fail(
                    primitive,
                    f"block {realize.block.name!r} writes {', '.join(sorted(o_writes & reads))}, "
                    f"which {block.name!r} reads",
                )
            if o_touched & writes:
                raise fail(
                    primitive,
                    f"block {realize.block.name!r} uses {', '.join(sorted(o_touched & writes))}, "
                    f"which {block.name!r} writes",
                )


def _refind_site(scope: Block, realize: BlockRealize) -> Site:
    from relaxjax.schedule.tree import find_sites

    return find_sites(scope_realize_stub(scope), lambda s: s is realize)[0]


def scope_realize_stub(scope: Block) -> BlockRealize:
    """A realize around ``scope`` for searching (ancestors then start at the scope)."""
    return BlockRealize((), True, scope)
