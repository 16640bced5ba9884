"""Buffers private to the iterations of a loop: per-block shared memory, per-thread registers.

On a GPU each thread block has its own shared memory and each thread its own local
buffers. A kernel's loop form means "run the iterations in order" with one buffer
for all of them, so binding a loop to ``blockIdx`` (or ``threadIdx``) keeps the
meaning only when no value of such a buffer crosses iterations: every iteration
reads only elements it wrote itself, earlier in that iteration, and nothing outside
the loop touches the buffer. Then giving each iteration its own copy changes
nothing, and the writes of different iterations to one element are no conflict.

``is_private(scope_body, loop, buffer)`` proves that, block by block, in program order:
a read is covered when an earlier block under the loop wrote (densely, guarded at
most to the buffer's bounds) a region containing it, both regions relaxed over the
loops below their innermost common loop, so the cover holds in every iteration of
the loops they share; or when the reading block is a reduction that initialises its
accumulator itself and runs its whole reduction inside the loop. It is what
``compute_at`` of a ``cache_read`` copy under a tile loop produces::

    for i_0 in thread_binding(..., thread="blockIdx.x"):   # A_shared private to i_0
        for k_0 in range(...):
            for ax0 in range(16):  A_shared[i_0 * 16 + ax0, ...] = A[...]   # writes
            for i_1 in range(16):  ... A_shared[i_0 * 16 + i_1, ...] ...   # reads
"""

from __future__ import annotations

from collections.abc import Iterable

from relaxjax import arith
from relaxjax.arith import Dim
from relaxjax.schedule.itermap import determines
from relaxjax.schedule.predicate import conjuncts
from relaxjax.schedule.scope import (
    Access,
    LoopRange,
    instance_accesses,
    instances_under,
    relaxed_region,
)
from relaxjax.tir.analysis import free_symbols, relax_index
from relaxjax.tir.buffer import Buffer
from relaxjax.tir.expr import BinOp, IndexExpr, IntImm, PrimExpr
from relaxjax.tir.stmt import Block, BlockRealize, For, Stmt

__all__ = ["is_private", "private_buffers"]

Instance = tuple[BlockRealize, tuple[LoopRange, ...]]


def _touches(realize: BlockRealize, buffer: Buffer) -> bool:
    return any(a.buffer.name == buffer.name for a in instance_accesses(realize))


def _count_touching(stmt: Stmt, buffer: Buffer) -> int:
    return sum(1 for realize, _ in instances_under(stmt) if _touches(realize, buffer))


def _is_true(predicate: PrimExpr) -> bool:
    return isinstance(predicate, IntImm) and predicate.dtype == "bool" and predicate.value == 1


def _bounds_guard(condition: PrimExpr, realize: BlockRealize, write: Access) -> bool:
    """``condition`` only keeps a written index inside the buffer: ``index < shape``
    or ``index >= 0`` where ``index`` is the write's index on some axis."""
    if not (
        isinstance(condition, BinOp)
        and condition.op in ("<", ">=")
        and isinstance(condition.a, IndexExpr)
        and isinstance(condition.b, IndexExpr)
    ):
        return False
    binding = {iv.var.name: v for iv, v in zip(realize.block.iter_vars, realize.iter_values)}
    for axis, index in enumerate(write.indices):
        if isinstance(index, PrimExpr):
            continue
        value = arith.subs(index, binding) if not isinstance(index, int) else index
        if arith.compare(condition.a.dim, "==", value) is not True:
            continue
        bound = condition.b.dim
        if condition.op == "<" and arith.compare(bound, "==", write.buffer.shape[axis]) is True:
            return True
        if condition.op == ">=" and arith.compare(bound, "==", 0) is True:
            return True
    return False


def _harmless(condition: PrimExpr, realize: BlockRealize, write: Access, loops) -> bool:
    """A predicate term that never hides an element of the written box: a bound guard
    (:func:`_bounds_guard`), or a reduction's term that mentions none of the loops its
    write moves with (it only skips some of the updates of each element)."""
    if _is_true(condition) or _bounds_guard(condition, realize, write):
        return True
    if not realize.block.is_reduction:
        return False
    moving = set()
    for index in write.indices:
        if not isinstance(index, (int, PrimExpr)):
            moving |= {s.name for s in arith.free_symbols(index)}
    names = {v.name for v, _, _ in tuple(loops) + write.inner}
    used = {s.name for s in free_symbols(condition)}
    return not (used & moving & names) and bool(used & names)


def _dense_write(write: Access, loops: tuple[LoopRange, ...], buffer: Buffer) -> bool:
    """One execution of the loops ``loops`` (and the block's own inner loops) writes
    every element of the box its indices relax to: the index tuple determines every
    loop (so distinct iterations write distinct elements) and there are as many
    iterations as elements in the box."""
    ranges = tuple(loops) + write.inner
    if any(s != 0 for _, s, _ in ranges) or any(isinstance(i, PrimExpr) for i in write.indices):
        return False
    extents = {v.name: e for v, _, e in ranges}
    used = set()
    for index in write.indices:
        if not isinstance(index, int):
            used |= {s.name for s in arith.free_symbols(index)} & set(extents)
    if not all(determines(write.indices, name, extents) for name in used):
        return False
    box: Dim = 1
    for low, high in region([(write, loops)], buffer):
        box = box * (high - low + 1)
    count: Dim = 1
    for name in used:
        count = count * extents[name]
    return arith.compare(box, "==", count) is True


def region(accesses, buffer: Buffer) -> tuple[tuple[Dim, Dim], ...]:
    """Per axis ``(low, high)`` covering ``accesses`` (``(Access, loops)`` pairs) as the
    loops vary (:func:`relaxjax.tir.analysis.relax_index`); a whole axis otherwise."""
    return relaxed_region(accesses, buffer, relax=relax_index)


def _le(a: Dim, b: Dim) -> bool:
    return arith.compare(a, "<=", b) is True


def _covers(have, need, shape: tuple[Dim, ...]) -> bool:
    """Region ``have`` (clipped to the buffer) contains region ``need`` (inside it)."""
    for (h_low, h_high), (n_low, n_high), size in zip(have, need, shape):
        if not (_le(h_low, n_low) or _le(h_low, 0)):
            return False
        if not (_le(n_high, h_high) or _le(size - 1, h_high)):
            return False
    return True


def _below_common(a: tuple[LoopRange, ...], b: tuple[LoopRange, ...]):
    """The loops of ``a`` and ``b`` below their common prefix."""
    common = 0
    while common < min(len(a), len(b)) and a[common][0] == b[common][0]:
        common += 1
    return a[common:], b[common:]


def _writer_covers(writer: Instance, reader: Instance, read: Access, buffer: Buffer) -> bool:
    w_realize, w_loops = writer
    r_loops = reader[1]
    writes = [
        a for a in instance_accesses(w_realize) if a.is_write and a.buffer.name == buffer.name
    ]
    if len(writes) != 1:
        return False
    write = writes[0]
    w_inner, r_inner = _below_common(w_loops, r_loops)
    if not all(_harmless(c, w_realize, write, w_inner) for c in conjuncts(w_realize.predicate)):
        return False
    if not _dense_write(write, w_inner, buffer):
        return False
    have = region([(write, w_inner)], buffer)
    need = region([(read, r_inner)], buffer)
    return _covers(have, need, buffer.shape)


def _completes_inside(realize: BlockRealize, loops: tuple[LoopRange, ...]) -> bool:
    """A reduction block with an init whose reduce iterators use only loops inside."""
    block: Block = realize.block
    if block.init is None:
        return False
    inside = {v.name for v, _, _ in loops}
    for iv, value in zip(block.iter_vars, realize.iter_values):
        if iv.kind != "reduce" or isinstance(value, int):
            continue
        if not {s.name for s in arith.free_symbols(value)} <= inside:
            return False
    return True


def is_private(scope_body: Stmt, loop: For, buffer: Buffer) -> bool:
    """Whether ``buffer`` is private to the iterations of ``loop`` (see the module doc):
    ``scope_body`` is the body of the block holding the loop."""
    if _count_touching(scope_body, buffer) != _count_touching(loop, buffer):
        return False
    instances = instances_under(loop.body)
    for k, (realize, loops) in enumerate(instances):
        accesses = instance_accesses(realize)
        writes = {a.indices for a in accesses if a.is_write and a.buffer.name == buffer.name}
        for read in accesses:
            if read.is_write or read.buffer.name != buffer.name:
                continue
            if any(isinstance(i, PrimExpr) for i in read.indices):
                return False
            own = read.indices in writes and _completes_inside(realize, loops)
            if own:
                continue
            if not any(
                _writer_covers(instances[j], (realize, loops), read, buffer) for j in range(k)
            ):
                return False
    return True


def private_buffers(scope_body: Stmt, loop: For, candidates: Iterable[Buffer]) -> frozenset[Buffer]:
    """The ``candidates`` that are private to the iterations of ``loop``."""
    return frozenset(b for b in candidates if is_private(scope_body, loop, b))


def _allocated(site) -> list[Buffer]:
    found: list[Buffer] = []
    for stmt in site.ancestors:
        if isinstance(stmt, Block):
            found.extend(stmt.alloc_buffers)
    return found


def thread_private(site, tag: str | None = None) -> frozenset[Buffer]:
    """The buffers private to a loop (``site``) bound to GPU thread axis ``tag`` (its own
    tag when None): shared and local ones for ``blockIdx``, local ones for
    ``threadIdx`` (shared memory is shared by the threads of a block)."""
    loop: For = site.node
    tag = tag or loop.thread_tag
    if tag is None:
        return frozenset()
    scopes = ("shared", "local") if tag.startswith("blockIdx") else ("local",)
    candidates = [b for b in _allocated(site) if b.scope in scopes]
    scope = site.scope()
    if not candidates or scope is None:
        return frozenset()
    return private_buffers(scope.body, loop, candidates)
