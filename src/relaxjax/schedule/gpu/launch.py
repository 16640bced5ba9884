"""A scheduled kernel as GPU launches: thread loops become the threads of one launch.

In a scheduled kernel (the loop form) a GPU kernel is a nest of loops bound to
``blockIdx`` axes with statements, serial loops and loops bound to ``threadIdx``
axes inside; every loop means "run the iterations in order". On the GPU every
statement of a launch runs in every thread. ``build_launches`` rewrites each
top-level thread-bound nest into that form, a *launch*::

    for i_0 in thread_binding(..., thread="blockIdx.x"):      # the grid, as before
        for threadIdx_y in thread_binding(Y, thread="threadIdx.y"):
            for threadIdx_x in thread_binding(X, thread="threadIdx.x"):
                ...                                                # per-thread code

Each ``threadIdx`` axis gets one launch variable whose extent is the largest extent of
the loops bound to it; a loop of that axis becomes its variable (``start +
threadIdx_x``), guarded by ``threadIdx_x < extent`` when shorter. A statement under no
loop of some axis runs once, in the threads where that axis is 0 (``if threadIdx_y ==
0``), so no two threads repeat a write. Blocks are lowered to plain statements
(predicates and inits as ``if``, block buffers as ``Allocate``).

A ``threadIdx.x`` loop that binds the reduction iterators of the block below it (a
*cross-thread reduction*, allowed by ``bind`` for ``+ * min max``) becomes partial
results per thread, combined with warp shuffles (``shfl_xor`` butterflies) and,
across the warps of a row, a shared slot per warp::

    red[()] = 0                                      # this thread's partial
    for k_0 in range(...):                           # its share of the reduction
        if ...: red[()] = red[()] + x[...]
    red[()] = red[()] + shfl_xor(red[()], 16)        # ... 8, 4, 2, 1: the warp's sum
    if threadIdx_x % 32 == 0: red_shared[threadIdx_x // 32] = red[()]
    red[()] = if_then_else(threadIdx_x % 32 < 8, red_shared[threadIdx_x % 32], 0)
    red[()] = red[()] + shfl_xor(red[()], 4)         # ... 2, 1: the row's sum
    if threadIdx_x == 0: C[...] = red[()]            # the block's init and update

Barriers are inserted afterwards (:mod:`.sync`), shared and local buffers placed and
shrunk by :mod:`.compact`. What is not bound (a loop or store outside every thread-bound
nest) raises ``ScheduleError``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from relaxjax import arith
from relaxjax.arith import Dim
from relaxjax.schedule.reduction import identity, reduction_update
from relaxjax.schedule.scope import instances_under
from relaxjax.schedule.step import fail
from relaxjax.schedule.tree import Namer, names_in
from relaxjax.tir.analysis import free_symbols
from relaxjax.tir.buffer import Buffer
from relaxjax.tir.expr import BufferLoad, Call, IndexExpr, IntImm, PrimExpr, binop
from relaxjax.tir.function import PrimFunc
from relaxjax.tir.functor import StmtVisitor, substitute
from relaxjax.tir.intrinsics import LAZY_SELECT
from relaxjax.tir.math import eq, logical_and
from relaxjax.tir.simt import WARP_SIZE, shfl_xor
from relaxjax.tir.stmt import (
    Allocate,
    Block,
    BlockRealize,
    BufferStore,
    Evaluate,
    For,
    IfThenElse,
    LetStmt,
    SeqStmt,
    Stmt,
    seq,
)

__all__ = [
    "THREAD_AXES",
    "LaunchParts",
    "build_launches",
    "build_launches_with_internals",
    "is_block_loop",
    "is_thread_loop",
    "launch_parts",
    "rebuild_launch",
]

PRIMITIVE = "finish_gpu"
THREAD_AXES = ("threadIdx.x", "threadIdx.y", "threadIdx.z")


def is_block_loop(stmt: Stmt) -> bool:
    """A loop bound to a ``blockIdx`` axis."""
    return (
        isinstance(stmt, For)
        and stmt.kind == "thread_binding"
        and stmt.thread_tag.startswith("blockIdx")
    )


def is_thread_loop(stmt: Stmt) -> bool:
    """A loop bound to a ``threadIdx`` axis."""
    return (
        isinstance(stmt, For)
        and stmt.kind == "thread_binding"
        and stmt.thread_tag.startswith("threadIdx")
    )


def _is_true(predicate: PrimExpr) -> bool:
    return isinstance(predicate, IntImm) and predicate.dtype == "bool" and predicate.value == 1


def _conjunction(terms: list[PrimExpr]) -> PrimExpr | None:
    result = None
    for term in terms:
        result = term if result is None else logical_and(result, term)
    return result


def _uses(dim: Dim, names: set[str]) -> bool:
    return not isinstance(dim, int) and any(s.name in names for s in arith.free_symbols(dim))


@dataclass(frozen=True, slots=True)
class _Axis:
    tag: str
    var: arith.Sym
    extent: Dim


@dataclass(frozen=True, slots=True)
class _Ctx:
    """Where per-thread code is being built: the launch's thread axes, the axes bound by
    the loops around, the thread-dependent conditions around, and whether a guard for
    the unbound axes was placed already."""

    axes: tuple[_Axis, ...]
    bound: frozenset[str] = frozenset()
    conditions: tuple[str, ...] = ()
    guarded: bool = False

    def axis(self, tag: str) -> _Axis:
        return next(a for a in self.axes if a.tag == tag)

    def thread_names(self) -> set[str]:
        return {a.var.name for a in self.axes}


def _thread_loops(stmt: Stmt) -> list[For]:
    found: list[For] = []

    class _Find(StmtVisitor):
        def visit_For(self, loop: For) -> None:
            if is_block_loop(loop):
                raise fail(
                    PRIMITIVE,
                    f"loop {loop.var.name} bound to {loop.thread_tag} is nested inside the "
                    "kernel: blockIdx loops must be the outermost loops of a kernel",
                )
            if is_thread_loop(loop):
                found.append(loop)
            super().visit_For(loop)

    _Find().visit_stmt(stmt)
    return found


class _Builder:
    def __init__(self, func: PrimFunc):
        self.func = func
        self.namer = Namer(names_in(func))
        self.kernel_syms = {s.name for s in func.symbols()}
        self.internal: set[str] = set()  # per-thread partials of cross-thread reductions

    # host level -----------------------------------------------------------------------

    def host(self, stmt: Stmt) -> Stmt:
        if isinstance(stmt, For):
            if stmt.kind == "thread_binding":
                return self.launch(stmt)
            raise fail(
                PRIMITIVE,
                f"loop {stmt.var.name} is not bound to a GPU thread axis: bind it, or a loop "
                "around it, to blockIdx/threadIdx (the outermost loops of a GPU kernel must "
                "be thread-bound)",
                (stmt,),
            )
        if isinstance(stmt, BlockRealize):
            return self.host_block(stmt)
        if isinstance(stmt, SeqStmt):
            return seq(*[self.host(s) for s in stmt.stmts])
        if isinstance(stmt, Allocate):
            return Allocate(stmt.buffer, self.host(stmt.body))
        if isinstance(stmt, IfThenElse):
            self.check_host_condition(stmt.condition)
            other = None if stmt.else_case is None else self.host(stmt.else_case)
            return IfThenElse(stmt.condition, self.host(stmt.then_case), other)
        if isinstance(stmt, LetStmt) and isinstance(stmt.var, arith.Sym):
            self.check_host_condition(stmt.value)
            return LetStmt(stmt.var, stmt.value, self.host(stmt.body))
        if isinstance(stmt, Evaluate) and not _reads_memory(stmt.value):
            return stmt
        what = f"a store to {stmt.buffer.name}" if isinstance(stmt, BufferStore) else "a statement"
        raise fail(
            PRIMITIVE, f"{what} runs outside every GPU kernel: put it under a thread-bound loop"
        )

    def host_block(self, realize: BlockRealize) -> Stmt:
        block = realize.block
        if block.iter_vars or block.init is not None or not _is_true(realize.predicate):
            raise fail(
                PRIMITIVE,
                f"block {block.name!r} is not under a loop bound to a GPU thread axis: bind "
                "one of its loops (or add one) to blockIdx/threadIdx",
            )
        body = self.host(block.body)
        for buffer in reversed(block.alloc_buffers):
            body = Allocate(buffer, body)
        return body

    def check_host_condition(self, expr: PrimExpr) -> None:
        if _reads_memory(expr):
            raise fail(
                PRIMITIVE,
                f"the host-side condition {expr!r} reads a buffer: data stays on the GPU",
            )

    # a launch ---------------------------------------------------------------------------

    def launch(self, loop: For) -> Stmt:
        blocks: list[For] = []
        stmt: Stmt = loop
        while is_block_loop(stmt):
            if any(b.thread_tag == stmt.thread_tag for b in blocks):
                raise fail(PRIMITIVE, f"{stmt.thread_tag} is bound twice in one kernel")
            blocks.append(stmt)
            stmt = stmt.body
        axes = []
        loops = _thread_loops(stmt)
        for tag in THREAD_AXES:
            mine = [lp for lp in loops if lp.thread_tag == tag]
            if mine:
                extent = self.launch_extent(tag, mine)
                axes.append(_Axis(tag, self.namer.fresh_sym(tag.replace(".", "_")), extent))
        body = self.emit(stmt, _Ctx(tuple(axes)))
        for axis in axes:  # x innermost
            body = For(axis.var, 0, axis.extent, "thread_binding", body, thread_tag=axis.tag)
        for block_loop in reversed(blocks):
            body = For(
                block_loop.var,
                block_loop.start,
                block_loop.extent,
                "thread_binding",
                body,
                block_loop.annotations,
                block_loop.thread_tag,
            )
        return body

    def launch_extent(self, tag: str, loops: list[For]) -> Dim:
        result: Dim | None = None
        for loop in loops:
            extent = loop.extent
            names = (
                set() if isinstance(extent, int) else {s.name for s in arith.free_symbols(extent)}
            )
            if names - self.kernel_syms:
                high = arith.bounds(extent)[1]
                if high is None:
                    raise fail(
                        PRIMITIVE,
                        f"the extent {extent} of loop {loop.var.name} bound to {tag} varies "
                        "with the loops around it and has no constant upper bound",
                    )
                extent = high
            if result is None or arith.compare(extent, ">=", result) is True:
                result = extent
            elif arith.compare(extent, "<=", result) is not True:
                result = arith.max_(result, extent)
        return result

    # per-thread code ----------------------------------------------------------------------

    def emit(self, stmt: Stmt, ctx: _Ctx) -> Stmt:
        method = getattr(self, "emit_" + type(stmt).__name__)
        return method(stmt, ctx)

    def emit_SeqStmt(self, stmt: SeqStmt, ctx: _Ctx) -> Stmt:
        return seq(*[self.emit(s, ctx) for s in stmt.stmts])

    def emit_Allocate(self, stmt: Allocate, ctx: _Ctx) -> Stmt:
        return Allocate(stmt.buffer, self.emit(stmt.body, ctx))

    def emit_LetStmt(self, stmt: LetStmt, ctx: _Ctx) -> Stmt:
        return LetStmt(stmt.var, stmt.value, self.emit(stmt.body, ctx))

    def emit_Evaluate(self, stmt: Evaluate, ctx: _Ctx) -> Stmt:
        return stmt

    def emit_IfThenElse(self, stmt: IfThenElse, ctx: _Ctx) -> Stmt:
        inner = ctx
        if {s.name for s in free_symbols(stmt.condition)} & ctx.thread_names():
            inner = replace(ctx, conditions=ctx.conditions + (repr(stmt.condition),))
        other = None if stmt.else_case is None else self.emit(stmt.else_case, inner)
        return IfThenElse(stmt.condition, self.emit(stmt.then_case, inner), other)

    def emit_BufferStore(self, stmt: BufferStore, ctx: _Ctx) -> Stmt:
        return self.leaf(stmt, ctx)

    def emit_BlockRealize(self, stmt: BlockRealize, ctx: _Ctx) -> Stmt:
        return self.leaf(lower_realize(stmt), ctx)

    def emit_For(self, loop: For, ctx: _Ctx) -> Stmt:
        if is_thread_loop(loop):
            return self.thread_loop(loop, ctx)
        inner = ctx
        if _uses(loop.extent, ctx.thread_names()) or _uses(loop.start, ctx.thread_names()):
            inner = replace(
                ctx, conditions=ctx.conditions + (f"the range of loop {loop.var.name}",)
            )
        body = self.emit(loop.body, inner)
        # Inside a thread a parallel loop runs in order (its iterations are independent).
        kind = "serial" if loop.kind == "parallel" else loop.kind
        return For(loop.var, loop.start, loop.extent, kind, body, loop.annotations)

    def unbound(self, ctx: _Ctx) -> list[_Axis]:
        """The launch axes no loop around binds, that may have more than one thread."""
        return [
            a
            for a in ctx.axes
            if a.tag not in ctx.bound and arith.compare(a.extent, "<=", 1) is not True
        ]

    def leaf(self, stmt: Stmt, ctx: _Ctx) -> Stmt:
        """A statement with effects and no thread loop: it runs once among the threads of
        the axes no loop around binds (``if threadIdx_y == 0``)."""
        axes = [] if ctx.guarded or _thread_loops(stmt) else self.unbound(ctx)
        inner = replace(ctx, guarded=ctx.guarded or bool(axes))
        body = stmt if isinstance(stmt, BufferStore) else self.emit(stmt, inner)
        if not axes:
            return body
        return IfThenElse(_conjunction([eq(IndexExpr(a.var), 0) for a in axes]), body)

    def thread_loop(self, loop: For, ctx: _Ctx) -> Stmt:
        tag = loop.thread_tag
        if tag in ctx.bound:
            raise fail(
                PRIMITIVE,
                f"{tag} is bound twice: loop {loop.var.name} is inside another loop bound to it",
            )
        if _carries_reduction(loop):
            return self.cross_thread(loop, ctx)
        axis = ctx.axis(tag)
        body = substitute(loop.body, {loop.var: loop.start + axis.var})
        short = arith.compare(loop.extent, ">=", axis.extent) is not True
        condition = binop("<", IndexExpr(axis.var), IndexExpr(loop.extent))
        conditions = ctx.conditions + ((repr(condition),) if short else ())
        inner = self.emit(body, replace(ctx, bound=ctx.bound | {tag}, conditions=conditions))
        return IfThenElse(condition, inner) if short else inner

    # cross-thread reductions ----------------------------------------------------------------

    def cross_thread(self, loop: For, ctx: _Ctx) -> Stmt:
        chain, realize = _reduction_chain(loop)
        block = realize.block
        store, op, rhs, first = reduction_update(PRIMITIVE, block)
        names = {loop.var.name} | {lp.var.name for lp in chain}
        for iv, value in zip(block.iter_vars, realize.iter_values):
            if iv.kind == "spatial" and _uses(value, names):
                raise fail(
                    PRIMITIVE,
                    f"loop {loop.var.name} reduces over the threads, but block {block.name!r}'s "
                    f"spatial iterator {iv.var.name} varies with the loops below it",
                )
        if loop.thread_tag != "threadIdx.x":
            raise fail(
                PRIMITIVE,
                f"the cross-thread reduction of block {block.name!r} is bound to "
                f"{loop.thread_tag}: bind the reduction loop {loop.var.name} to threadIdx.x "
                "(the lanes of a warp)",
            )
        axis = ctx.axis("threadIdx.x")
        lanes = axis.extent
        if not isinstance(lanes, int) or not (
            (lanes <= WARP_SIZE and lanes & (lanes - 1) == 0) or lanes % WARP_SIZE == 0
        ):
            raise fail(
                PRIMITIVE,
                f"the cross-thread reduction of block {block.name!r} runs over {lanes} "
                f"threadIdx.x threads: use a power of two up to {WARP_SIZE} or a multiple "
                f"of {WARP_SIZE}",
            )
        if ctx.conditions:
            raise fail(
                PRIMITIVE,
                f"the cross-thread reduction of block {block.name!r} runs under a condition "
                f"on the threads ({ctx.conditions[0]}): every thread of the block must reach "
                "it (give the loops of each threadIdx axis equal extents)",
            )
        dtype = store.buffer.dtype
        ident = identity(op, dtype)
        red = Buffer(self.namer.fresh(f"{store.buffer.name}_red"), (), dtype, scope="local")
        self.internal.add(red.name)
        acc = BufferLoad(red, ())

        def combine(value: PrimExpr) -> PrimExpr:
            return binop(op, acc, value)

        inner_ctx = replace(ctx, bound=ctx.bound | {"threadIdx.x"})
        value = loop.start + axis.var
        partial = self.partial(loop, chain, realize, red, combine(rhs), value, inner_ctx)
        stmts: list[Stmt] = [BufferStore(red, ident, ()), partial]
        stmts += [
            BufferStore(red, combine(shfl_xor(acc, m)), ()) for m in _masks(min(lanes, WARP_SIZE))
        ]
        if lanes > WARP_SIZE:
            stmts.append(self.across_warps(red, combine, ident, ctx, lanes // WARP_SIZE))
        result = BufferLoad(store.buffer, store.indices)
        update = binop(op, result, acc) if first else binop(op, acc, result)
        starts = {loop.var.name: loop.start, **{lp.var.name: lp.start for lp in chain}}
        final = _reduced_instance(realize, starts, BufferStore(store.buffer, update, store.indices))
        stmts.append(self.leaf(IfThenElse(eq(IndexExpr(axis.var), 0), final), inner_ctx))
        return Allocate(red, seq(*stmts))

    def partial(self, loop, chain, realize, red, update, value, ctx) -> Stmt:
        """This thread's part of the reduction, accumulated into ``red``."""
        block = realize.block
        mapping = {iv.var: v for iv, v in zip(block.iter_vars, realize.iter_values)}
        update = substitute(update, mapping)
        stmt: Stmt = BufferStore(red, update, ())
        if not _is_true(realize.predicate):
            stmt = IfThenElse(realize.predicate, stmt)
        for lp in reversed(chain):
            stmt = For(lp.var, lp.start, lp.extent, lp.kind, stmt, lp.annotations)
        stmt = self.emit(substitute(stmt, {loop.var: value}), ctx)
        axis = ctx.axis("threadIdx.x")
        if arith.compare(loop.extent, ">=", axis.extent) is not True:
            stmt = IfThenElse(binop("<", IndexExpr(axis.var), IndexExpr(loop.extent)), stmt)
        return stmt

    def across_warps(self, red: Buffer, combine, ident: PrimExpr, ctx: _Ctx, warps: int) -> Stmt:
        """Combine the warps' results through one shared slot per warp of each row."""
        x = ctx.axis("threadIdx.x").var
        rows = [
            a
            for a in ctx.axes
            if a.tag != "threadIdx.x" and arith.compare(a.extent, "<=", 1) is not True
        ]
        shape = tuple(a.extent for a in rows) + (warps,)
        slots = Buffer(self.namer.fresh(f"{red.name}_shared"), shape, red.dtype, scope="shared")
        row = tuple(a.var for a in rows)
        lane = x % WARP_SIZE
        acc = BufferLoad(red, ())
        write = IfThenElse(eq(IndexExpr(lane), 0), BufferStore(slots, acc, row + (x // WARP_SIZE,)))
        load = Call(
            LAZY_SELECT,
            (
                binop("<", IndexExpr(lane), IndexExpr(warps)),
                BufferLoad(slots, row + (lane % warps,)),
                ident,
            ),
        )
        stmts: list[Stmt] = [write, BufferStore(red, load, ())]
        stmts += [BufferStore(red, combine(shfl_xor(acc, m)), ()) for m in _masks(_pow2(warps))]
        return Allocate(slots, seq(*stmts))


def _masks(lanes: int) -> list[int]:
    masks, m = [], lanes // 2
    while m >= 1:
        masks.append(m)
        m //= 2
    return masks


def _pow2(n: int) -> int:
    p = 1
    while p < n:
        p *= 2
    return p


class _Reads(StmtVisitor):
    def __init__(self):
        self.found = False

    def visit_BufferLoad(self, expr: BufferLoad) -> None:
        self.found = True


def _reads_memory(expr: PrimExpr) -> bool:
    reads = _Reads()
    reads.visit_expr(expr)
    return reads.found


def _carries_reduction(loop: For) -> bool:
    """Whether ``loop`` binds a reduction iterator of a block below it."""
    for realize, _ in instances_under(loop.body):
        for iv, value in zip(realize.block.iter_vars, realize.iter_values):
            if iv.kind == "reduce" and _uses(value, {loop.var.name}):
                return True
    return False


def _reduction_chain(loop: For) -> tuple[list[For], BlockRealize]:
    chain: list[For] = []
    stmt = loop.body
    while isinstance(stmt, For):
        if stmt.kind == "thread_binding" or stmt.kind == "parallel":
            raise fail(
                PRIMITIVE,
                f"loop {stmt.var.name} ({stmt.kind}) is inside the cross-thread reduction loop "
                f"{loop.var.name}: only serial loops may be",
            )
        chain.append(stmt)
        stmt = stmt.body
    if not isinstance(stmt, BlockRealize) or not stmt.block.is_reduction:
        raise fail(
            PRIMITIVE,
            f"loop {loop.var.name} reduces over the threads: its body must be a nest of serial "
            "loops around one reduction block",
        )
    return chain, stmt


def _reduced_instance(realize: BlockRealize, starts: dict[str, Dim], body: BufferStore) -> Stmt:
    """The block's instance where the loops of ``starts`` are at their start, with
    ``body``: its init (when it has one and the other reduction loops are at their
    start) and the combination of the threads' result, under the block's predicate
    there (so it runs when the reduction's first instance does)."""
    values = tuple(
        arith.subs(v, starts) if not isinstance(v, int) else v for v in realize.iter_values
    )
    predicate = realize.predicate
    if not _is_true(predicate):
        predicate = substitute(predicate, starts)
    block = realize.block
    new = Block(
        block.name,
        block.iter_vars,
        block.reads,
        block.writes,
        block.init,
        body,
        (),
        block.annotations,
    )
    return lower_realize(BlockRealize(values, predicate, new))


def lower_realize(realize: BlockRealize) -> Stmt:
    """A block instance as plain statements (as :func:`..rules.flatten.lower_blocks`)."""
    # Imported here: the rules package imports this one (no cycle at import time).
    from relaxjax.schedule.rules.flatten import lower_realize as lower

    return lower(realize)


def build_launches(func: PrimFunc) -> PrimFunc:
    """``func`` with every top-level thread-bound nest rewritten as a launch (see the
    module doc); ``ScheduleError`` for what is not bound or cannot be."""
    return build_launches_with_internals(func)[0]


def build_launches_with_internals(func: PrimFunc) -> tuple[PrimFunc, frozenset[str]]:
    """:func:`build_launches`, and the names of the per-thread partial buffers it made."""
    builder = _Builder(func)
    return func.with_body(builder.host(func.body)), frozenset(builder.internal)


@dataclass(frozen=True, slots=True)
class LaunchParts:
    """A launch taken apart: its ``blockIdx`` loops, the shared buffers allocated per
    block, its ``threadIdx`` loops (launch variables) and the per-thread ``body``."""

    blocks: tuple[For, ...]
    shared: tuple[Buffer, ...]
    threads: tuple[For, ...]
    body: Stmt


def launch_parts(stmt: For) -> LaunchParts:
    """The parts of a launch (a statement ``build_launches`` made)."""
    blocks: list[For] = []
    shared: list[Buffer] = []
    threads: list[For] = []
    while is_block_loop(stmt):
        blocks.append(stmt)
        stmt = stmt.body
    while isinstance(stmt, Allocate) and stmt.buffer.scope == "shared":
        shared.append(stmt.buffer)
        stmt = stmt.body
    while is_thread_loop(stmt):
        threads.append(stmt)
        stmt = stmt.body
    return LaunchParts(tuple(blocks), tuple(shared), tuple(threads), stmt)


def rebuild_launch(parts: LaunchParts, body: Stmt) -> Stmt:
    """A launch with the parts of ``parts`` around another per-thread ``body``."""
    for loop in reversed(parts.threads):
        body = For(
            loop.var, loop.start, loop.extent, loop.kind, body, loop.annotations, loop.thread_tag
        )
    for buffer in reversed(parts.shared):
        body = Allocate(buffer, body)
    for loop in reversed(parts.blocks):
        body = For(
            loop.var, loop.start, loop.extent, loop.kind, body, loop.annotations, loop.thread_tag
        )
    return body
