"""``parallel`` loops: outlined bodies run on the cores through libgomp.

For ``for i in parallel(start, start + extent): body`` the emitter produces:

- ``K.parallelN.impl(captures..., i64* next, i32* status)``: each thread claims
  chunks of ``chunk`` iterations by an atomic increment of the shared counter
  ``*next`` and runs them, until none is left (buffers stay ``noalias`` arguments,
  so the chunk loop vectorises like a serial one). Claiming instead of a fixed
  split keeps both cores busy when one thread loses its core for a while — to
  another process, or to the busy-waiting workers of a BLAS library that just
  returned. ``chunk`` is the fewest iterations holding ``MIN_CHUNK_WORK`` innermost
  iterations (by the work estimate below), at most
  ``ceil(extent / (CHUNKS_PER_THREAD * threads))``;
- ``K.parallelN(i8* ctx)``: unpacks the context struct (every symbol, value
  variable and buffer pointer in scope, the counter and the status pointer) and
  calls impl;
- at the loop: the counter is zeroed, the context struct is filled and, if the
  estimated work is at least ``Target.parallel_min_work`` innermost iterations and
  the extent is at least 2, ``GOMP_parallel(K.parallelN, ctx, 0, 0)`` runs it on
  the default team; otherwise ``K.parallelN(ctx)`` runs on the calling thread
  (where ``omp_get_num_threads() == 1``, so it is the whole range). A symbolic work
  estimate is tested at run time; a constant one decides at compile time, and a
  loop that is always too small is emitted as a plain serial loop.

The work estimate multiplies the extents of the nested loops that are known
before the parallel loop starts (a nested extent depending on inner loop
variables counts as 1).
"""

from __future__ import annotations

from llvmlite import ir

from ... import arith
from ...tir.stmt import (
    Allocate,
    Block,
    BlockRealize,
    For,
    IfThenElse,
    LetStmt,
    SeqStmt,
    Stmt,
)
from .emitter import Captures, FunctionEmitter, new_impl_function
from .index import emit_dim
from .loops import counted_loop
from .numeric import I8, I32, I64

__all__ = ["CHUNKS_PER_THREAD", "MIN_CHUNK_WORK", "emit_parallel_for", "estimated_work"]

#: A parallel loop is cut into at least this many chunks per thread, so that one thread
#: can take over most of the work of a stalled one...
CHUNKS_PER_THREAD = 4
#: ...and a chunk is as small as it can be (one iteration, for the best balance) while
#: holding at least this many innermost iterations, so that claiming costs nothing.
MIN_CHUNK_WORK = 1 << 14


def estimated_work(stmt: Stmt, visible: frozenset[str]) -> arith.Dim:
    """Innermost iterations of ``stmt``: the product of nested loop extents over symbols
    in ``visible`` (others count as 1), summed over sequences."""
    if isinstance(stmt, For):
        inner = estimated_work(stmt.body, visible)
        extent = stmt.extent
        known = isinstance(extent, int) or all(
            s.name in visible for s in arith.free_symbols(extent)
        )
        return extent * inner if known else inner
    if isinstance(stmt, SeqStmt):
        total: arith.Dim = 0
        for part in stmt.stmts:
            total = total + estimated_work(part, visible)
        return total
    if isinstance(stmt, BlockRealize):
        return estimated_work(stmt.block, visible)
    if isinstance(stmt, Block):
        init = 0 if stmt.init is None else estimated_work(stmt.init, visible)
        return init + estimated_work(stmt.body, visible)
    if isinstance(stmt, IfThenElse):
        otherwise = 0 if stmt.else_case is None else estimated_work(stmt.else_case, visible)
        return estimated_work(stmt.then_case, visible) + otherwise
    if isinstance(stmt, (LetStmt, Allocate)):
        return estimated_work(stmt.body, visible)
    return 1


def emit_parallel_for(emitter: FunctionEmitter, node: For) -> None:
    """Lower a ``parallel`` loop (see the module docstring)."""
    threshold = emitter.context.target.parallel_min_work
    visible = frozenset(emitter.scope.symbols)
    body_work = estimated_work(node.body, visible)
    work = node.extent * body_work
    always_serial = (isinstance(work, int) and work < threshold) or (
        isinstance(node.extent, int) and node.extent <= 1
    )
    if always_serial:
        emitter.stmt(For(node.var, node.start, node.extent, "serial", node.body, node.annotations))
        return
    context = emitter.context
    context.uses_parallel = True
    captures = Captures.of_scope(emitter.scope)
    name = context.fresh_name("parallel")
    impl = new_impl_function(context, f"{name}.impl", captures, extra=[I64.as_pointer()])
    _emit_chunk_claims(impl, node, body_work)
    outlined = _emit_unpacking_wrapper(emitter, name, captures, impl.finish())
    packed = _pack_context(emitter, captures)
    builder = emitter.builder
    if isinstance(work, int):
        _call_gomp_parallel(emitter, outlined, packed)
        return
    big_enough = builder.and_(
        builder.icmp_signed(
            ">=", emit_dim(builder, work, emitter.scope.symbols), ir.Constant(I64, threshold)
        ),
        builder.icmp_signed(
            ">", emit_dim(builder, node.extent, emitter.scope.symbols), ir.Constant(I64, 1)
        ),
    )
    with builder.if_else(big_enough) as (threads, serial):
        with threads:
            _call_gomp_parallel(emitter, outlined, packed)
        with serial:
            builder.call(outlined, [packed])


def _emit_chunk_claims(impl: FunctionEmitter, node: For, body_work: arith.Dim) -> None:
    builder = impl.builder
    next_chunk = impl.function.args[-2]
    next_chunk.name = "next_chunk"
    one = ir.Constant(I64, 1)
    threads = builder.sext(builder.call(_omp(impl.module, "omp_get_num_threads"), []), I64)
    start = emit_dim(builder, node.start, impl.scope.symbols)
    extent = emit_dim(builder, node.extent, impl.scope.symbols)
    pieces = builder.mul(threads, ir.Constant(I64, CHUNKS_PER_THREAD))
    largest = _ceil_div(builder, extent, pieces)
    work = _smax(builder, emit_dim(builder, body_work, impl.scope.symbols), one)
    smallest = _ceil_div(builder, ir.Constant(I64, MIN_CHUNK_WORK), work)
    chunk = _smax(builder, _smin(builder, smallest, largest), one)
    chunks = _ceil_div(builder, extent, chunk)
    claim = builder.append_basic_block("claim")
    run = builder.append_basic_block("claim.run")
    done = builder.append_basic_block("claim.done")
    builder.branch(claim)
    builder.position_at_end(claim)
    claimed = builder.atomic_rmw("add", next_chunk, ir.Constant(I64, 1), "monotonic")
    builder.cbranch(builder.icmp_signed("<", claimed, chunks), run, done)
    builder.position_at_end(run)
    low = builder.mul(claimed, chunk)
    high = _smin(builder, builder.add(low, chunk), extent)
    loop_start, loop_stop = builder.add(start, low), builder.add(start, high)
    with counted_loop(builder, loop_start, loop_stop, name=node.var.name) as index:
        impl.loop_body(node.var.name, node.body, index)
    builder.branch(claim)
    builder.position_at_end(done)


def _ceil_div(builder: ir.IRBuilder, a: ir.Value, b: ir.Value) -> ir.Value:
    return builder.sdiv(builder.add(a, builder.sub(b, ir.Constant(I64, 1))), b)


def _smin(builder: ir.IRBuilder, a: ir.Value, b: ir.Value) -> ir.Value:
    return builder.select(builder.icmp_signed("<", a, b), a, b)


def _smax(builder: ir.IRBuilder, a: ir.Value, b: ir.Value) -> ir.Value:
    return builder.select(builder.icmp_signed(">", a, b), a, b)


def _context_type(captures: Captures) -> ir.LiteralStructType:
    return ir.LiteralStructType([*captures.types(), I64.as_pointer(), I32.as_pointer()])


def _emit_unpacking_wrapper(
    emitter: FunctionEmitter, name: str, captures: Captures, impl: ir.Function
) -> ir.Function:
    i8p = I8.as_pointer()
    wrapper = ir.Function(emitter.module, ir.FunctionType(ir.VoidType(), [i8p]), name)
    wrapper.linkage = "internal"
    builder = ir.IRBuilder(wrapper.append_basic_block("entry"))
    struct = builder.bitcast(wrapper.args[0], _context_type(captures).as_pointer())
    fields = []
    for position in range(len(impl.args)):
        address = builder.gep(struct, [ir.Constant(I32, 0), ir.Constant(I32, position)])
        fields.append(builder.load(address))
    builder.call(impl, fields)
    builder.ret_void()
    return wrapper


def _pack_context(emitter: FunctionEmitter, captures: Captures) -> ir.Value:
    scope = emitter.scope
    values = [scope.buffers[b] for b in captures.buffers]
    values += [scope.symbols[s] for s in captures.symbols]
    values += [scope.vars[v] for v in captures.vars]
    next_chunk = emitter.prologue.alloca(I64, name="parallel.next")
    values += [next_chunk, emitter.status]
    struct = emitter.prologue.alloca(_context_type(captures), name="parallel.ctx")
    builder = emitter.builder
    builder.store(ir.Constant(I64, 0), next_chunk)
    for position, value in enumerate(values):
        address = builder.gep(struct, [ir.Constant(I32, 0), ir.Constant(I32, position)])
        builder.store(value, address)
    return builder.bitcast(struct, I8.as_pointer())


def _call_gomp_parallel(emitter: FunctionEmitter, outlined: ir.Function, packed: ir.Value) -> None:
    i8p = I8.as_pointer()
    body_type = ir.FunctionType(ir.VoidType(), [i8p]).as_pointer()
    gomp = emitter.module.globals.get("GOMP_parallel")
    if gomp is None:
        signature = ir.FunctionType(ir.VoidType(), [body_type, i8p, I32, I32])
        gomp = ir.Function(emitter.module, signature, "GOMP_parallel")
    zero = ir.Constant(I32, 0)
    emitter.builder.call(gomp, [outlined, packed, zero, zero])


def _omp(module: ir.Module, name: str) -> ir.Function:
    existing = module.globals.get(name)
    if existing is not None:
        return existing
    return ir.Function(module, ir.FunctionType(I32, []), name)
