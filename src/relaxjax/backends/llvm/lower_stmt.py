"""One lowering function per TIR statement node.

Loops by kind:

- ``serial``: a counted loop;
- ``vectorized``: a counted loop whose back edge asks LLVM's loop vectoriser to
  vectorise it (``llvm.loop.vectorize.enable``); LLVM still checks legality, so
  the result is always correct, and noalias buffer arguments make it legal for
  elementwise code;
- ``unrolled``: with a constant extent up to ``Target.max_unroll``, the body is
  emitted once per iteration with the loop variable a constant offset; longer or
  symbolic loops carry ``llvm.loop.unroll`` hints;
- ``parallel``: outlined and run through libgomp (:mod:`.parallel`);
- ``thread_binding``: GPU only, refused.

A block realize binds the block's iterators to their values, tests the
predicate, allocates the block's buffers, runs ``init`` when every reduction
iterator is 0, then the body.
"""

from __future__ import annotations

from llvmlite import ir

from ... import arith
from ...errors import LoweringError
from ...tir.expr import Call, IntImm
from ...tir.functor import StmtVisitor
from ...tir.stmt import (
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
)
from . import numeric
from .emitter import FunctionEmitter, lowers_stmt
from .index import emit_dim
from .loops import LoopHint, counted_loop, no_vectorize_hints, unroll_hints, vectorize_hints
from .memory import element_pointer, with_local_buffers
from .numeric import I1, I64
from .parallel import emit_parallel_for

__all__ = ["contains_vectorized_loop", "lower_for"]


@lowers_stmt(For)
def lower_for(emitter: FunctionEmitter, node: For) -> None:
    """A loop of any CPU kind (see the module docstring), or of a kind the target lowers."""
    special = emitter.context.loops.get(node.kind)
    if special is not None:
        special(emitter, node)
        return
    if node.kind == "thread_binding":
        raise LoweringError(
            f"loop {node.var} is bound to {node.thread_tag}: GPU thread bindings cannot be "
            "built for the llvm (CPU) target; build with target='cuda' or unbind the loop"
        )
    if node.kind == "parallel":
        emit_parallel_for(emitter, node)
        return
    max_unroll = emitter.context.target.max_unroll
    if node.kind == "unrolled" and isinstance(node.extent, int) and node.extent <= max_unroll:
        _emit_unrolled(emitter, node)
        return
    builder = emitter.builder
    symbols = emitter.scope.symbols
    start = emit_dim(builder, node.start, symbols)
    stop = builder.add(start, emit_dim(builder, node.extent, symbols))
    hints: tuple[LoopHint, ...] = ()
    if node.kind == "vectorized":
        hints = vectorize_hints()
    elif node.kind == "unrolled":
        hints = unroll_hints(full=isinstance(node.extent, int))
    elif contains_vectorized_loop(node.body):
        hints = no_vectorize_hints()
    with counted_loop(builder, start, stop, hints, name=node.var.name) as index:
        emitter.loop_body(node.var.name, node.body, index)


class _VectorizedLoopFinder(StmtVisitor):
    """Finds ``vectorized`` loops in a statement (expressions are not walked)."""

    def __init__(self) -> None:
        self.found = False

    def visit_expr(self, expr: object) -> None:
        return None

    def visit_dim(self, dim: object) -> None:
        return None

    def visit_index(self, index: object) -> None:
        return None

    def visit_buffer_def(self, buffer: object) -> None:
        return None

    def visit_region(self, region: object) -> None:
        return None

    def visit_For(self, stmt: For) -> None:
        if stmt.kind == "vectorized":
            self.found = True
        elif not self.found:
            self.visit_stmt(stmt.body)


def contains_vectorized_loop(stmt: Stmt) -> bool:
    """True when ``stmt`` holds a ``vectorized`` loop.

    A serial loop around one is kept from LLVM's loop vectoriser: the schedule chose
    the vector axis. After LLVM fully unrolls a short inner loop, the outer loop would
    otherwise become the innermost one, and with reassociation allowed (fast-math, or
    integers) it was vectorised along a reduction axis: for a matmul's ``k`` loop that
    meant 6 x 32 separate reductions, strided loads and spilled accumulators (fast-math
    matmul ran at a sixth of the strict speed).
    """
    finder = _VectorizedLoopFinder()
    finder.visit_stmt(stmt)
    return finder.found


def _emit_unrolled(emitter: FunctionEmitter, node: For) -> None:
    start = emit_dim(emitter.builder, node.start, emitter.scope.symbols)
    for step in range(node.extent):
        index = emitter.builder.add(start, ir.Constant(I64, step))
        emitter.loop_body(node.var.name, node.body, index)


@lowers_stmt(BlockRealize)
def lower_block_realize(emitter: FunctionEmitter, node: BlockRealize) -> None:
    """Bind the iterators, test the predicate, run the block."""
    builder = emitter.builder
    values = [emit_dim(builder, value, emitter.scope.symbols) for value in node.iter_values]
    with emitter.nested_scope() as scope:
        for iter_var, value in zip(node.block.iter_vars, values):
            scope.symbols[iter_var.var.name] = value
        predicate = node.predicate
        if isinstance(predicate, IntImm) and predicate.value == 1:
            _emit_block(emitter, node.block, values)
            return
        with builder.if_then(emitter.expr(predicate)):
            _emit_block(emitter, node.block, values)


def _emit_block(emitter: FunctionEmitter, block: Block, values: list[ir.Value]) -> None:
    def body() -> None:
        if block.init is not None:
            _emit_init(emitter, block, values)
        emitter.stmt(block.body)

    with_local_buffers(emitter, block.alloc_buffers, body)


def _emit_init(emitter: FunctionEmitter, block: Block, values: list[ir.Value]) -> None:
    builder = emitter.builder
    first: ir.Value = ir.Constant(I1, 1)
    for iter_var, value in zip(block.iter_vars, values):
        if iter_var.kind == "reduce":
            first = builder.and_(first, builder.icmp_signed("==", value, ir.Constant(I64, 0)))
    with builder.if_then(first):
        emitter.stmt(block.init)


@lowers_stmt(Block)
def lower_block(emitter: FunctionEmitter, node: Block) -> None:
    """A block outside a realize has no iterator values: refused, as by the interpreter."""
    raise LoweringError(f"block {node.name!r} must be inside a BlockRealize")


@lowers_stmt(BufferStore)
def lower_buffer_store(emitter: FunctionEmitter, node: BufferStore) -> None:
    """``buffer[indices] = value``."""
    value = emitter.expr(node.value)
    pointer = element_pointer(emitter, node.buffer, node.indices)
    numeric.store(emitter.builder, value, pointer, node.buffer.dtype)


@lowers_stmt(LetStmt)
def lower_let(emitter: FunctionEmitter, node: LetStmt) -> None:
    """Bind a symbol (index math) or a value variable for the body."""
    value = emitter.expr(node.value)
    with emitter.nested_scope() as scope:
        if isinstance(node.var, arith.Sym):
            scope.symbols[node.var.name] = value
        else:
            scope.vars[node.var] = value
        emitter.stmt(node.body)


@lowers_stmt(IfThenElse)
def lower_if(emitter: FunctionEmitter, node: IfThenElse) -> None:
    """``if condition: then_case else: else_case``."""
    builder = emitter.builder
    condition = emitter.expr(node.condition)
    if node.else_case is None:
        with builder.if_then(condition):
            emitter.stmt(node.then_case)
        return
    with builder.if_else(condition) as (then, otherwise):
        with then:
            emitter.stmt(node.then_case)
        with otherwise:
            emitter.stmt(node.else_case)


@lowers_stmt(Allocate)
def lower_allocate(emitter: FunctionEmitter, node: Allocate) -> None:
    """A temporary buffer for the body (storage chosen by :mod:`.memory`)."""
    with_local_buffers(emitter, (node.buffer,), lambda: emitter.stmt(node.body))


@lowers_stmt(SeqStmt)
def lower_seq(emitter: FunctionEmitter, node: SeqStmt) -> None:
    """Statements in order."""
    for stmt in node.stmts:
        emitter.stmt(stmt)


@lowers_stmt(Evaluate)
def lower_evaluate(emitter: FunctionEmitter, node: Evaluate) -> None:
    """An expression evaluated for effect: only a target's own intrinsics have one (a GPU
    barrier); anything else is pure, and nothing is emitted."""
    value = node.value
    if isinstance(value, Call) and value.intrinsic in emitter.context.calls:
        emitter.expr(value)
