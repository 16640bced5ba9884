"""Buffer addressing and the storage of local buffers.

Addressing: the element offset of ``A[i, j]`` is ``arith``'s ``A.offset_of((i, j))``
(the canonical polynomial over the strides, row-major by default), emitted once
as i64 math; a data-dependent index (an integer PrimExpr, e.g. a gather) adds
``index * stride`` at run time.

Local buffers (``Allocate``, ``Block.alloc_buffers``) get storage where it is
cheapest, decided per buffer:

- size a compile-time constant up to ``Target.max_stack_bytes``: a stack slot in
  the function's prologue (one per function, reused by every loop iteration);
- size depending only on values known at function entry: ``aligned_alloc``
  (cache-line aligned) in the prologue and ``free`` at exit, so a loop around the
  allocation does not allocate on every iteration;
- otherwise (the size depends on an enclosing loop variable): ``aligned_alloc`` where
  the allocation stands and ``free`` after its body.

A failed allocation sets the function's status to 1 and skips the code that
would use the buffer; the kernel then returns 1 and the caller raises.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from llvmlite import ir

from ... import arith, dtypes
from ...errors import LoweringError
from ...tir.buffer import Buffer
from ...tir.expr import PrimExpr
from .emitter import FunctionEmitter, declare_runtime
from .index import emit_dim
from .numeric import I8, I32, I64, storage_type

__all__ = ["allocated_elements", "element_pointer", "with_local_buffers"]

_ALIGNMENT = 64


def element_pointer(
    emitter: FunctionEmitter, buffer: Buffer, indices: Sequence[arith.Dim | PrimExpr]
) -> ir.Value:
    """A pointer to ``buffer[indices]`` in the current scope."""
    base = emitter.scope.buffers.get(buffer)
    if base is None:
        raise LoweringError(f"buffer {buffer.name} is used outside the scope that defines it")
    builder = emitter.builder
    strides = buffer.strides_or_default()
    static = [index if not isinstance(index, PrimExpr) else 0 for index in indices]
    offset = emit_dim(builder, buffer.offset_of(static), emitter.scope.symbols)
    for index, stride in zip(indices, strides):
        if isinstance(index, PrimExpr):
            value = _as_i64(emitter, index)
            scaled = builder.mul(value, emit_dim(builder, stride, emitter.scope.symbols))
            offset = builder.add(offset, scaled)
    return builder.gep(base, [offset], inbounds=True)


def _as_i64(emitter: FunctionEmitter, index: PrimExpr) -> ir.Value:
    value = emitter.expr(index)
    if value.type.width == 64:
        return value
    if dtypes.is_unsigned(index.dtype):
        return emitter.builder.zext(value, I64)
    return emitter.builder.sext(value, I64)


def allocated_elements(buffer: Buffer) -> arith.Dim:
    """Elements of storage ``buffer`` needs: its size, or the span of its strides."""
    if buffer.strides is None:
        return buffer.size()
    span: arith.Dim = 1
    for extent, stride in zip(buffer.shape, buffer.strides):
        span = span + (extent - 1) * stride
    if any(extent == 0 for extent in buffer.shape):
        return 0
    return arith.max_(span, 0) if not isinstance(span, int) else max(span, 0)


def with_local_buffers(
    emitter: FunctionEmitter, buffers: Sequence[Buffer], emit_body: Callable[[], None]
) -> None:
    """Give each of ``buffers`` storage, bind it in a nested scope, and emit the body."""
    with emitter.nested_scope() as scope:
        in_place: list[tuple[Buffer, arith.Dim]] = []
        placed_by_target = emitter.context.storage
        for buffer in buffers:
            if placed_by_target is not None:
                pointer = placed_by_target(emitter, buffer)
                if pointer is not None:
                    scope.buffers[buffer] = pointer
                    continue
            elements = allocated_elements(buffer)
            if _known_at_entry(emitter, elements):
                scope.buffers[buffer] = _allocate_in_prologue(emitter, buffer, elements)
            else:
                in_place.append((buffer, elements))
        _allocate_in_place(emitter, in_place, emit_body)


def _known_at_entry(emitter: FunctionEmitter, elements: arith.Dim) -> bool:
    if isinstance(elements, int):
        return True
    return all(s.name in emitter.entry_symbols for s in arith.free_symbols(elements))


def _allocate_in_prologue(
    emitter: FunctionEmitter, buffer: Buffer, elements: arith.Dim
) -> ir.Value:
    element = storage_type(buffer.dtype)
    prologue = emitter.prologue
    itemsize = dtypes.itemsize(buffer.dtype)
    if isinstance(elements, int) and elements * itemsize <= emitter.context.target.max_stack_bytes:
        slot = prologue.alloca(element, size=ir.Constant(I64, max(elements, 1)), name=buffer.name)
        slot.align = _ALIGNMENT
        return slot
    count = emit_dim(prologue, elements, _entry_symbols(emitter))
    pointer, ok = _heap_allocate(prologue, emitter, count, element, itemsize, buffer.name)
    emitter.require_in_prologue(ok)
    emitter.free_at_exit(pointer)
    return pointer


def _entry_symbols(emitter: FunctionEmitter) -> dict[str, ir.Value]:
    return {name: emitter.scope.symbols[name] for name in emitter.entry_symbols}


def _heap_allocate(
    builder: ir.IRBuilder,
    emitter: FunctionEmitter,
    count: ir.Value,
    element: ir.Type,
    itemsize: int,
    name: str,
) -> tuple[ir.Value, ir.Value]:
    """``(typed pointer, ok)`` for ``count`` elements on the heap; ok is false on failure."""
    count = builder.select(
        builder.icmp_signed("<", count, ir.Constant(I64, 0)), ir.Constant(I64, 0), count
    )
    # Rows of packed panels start on cache lines (a split vector load costs two), so
    # the size is rounded up to whole lines, as aligned_alloc requires. A byte size
    # beyond int64 asks for SIZE_MAX bytes, which fails cleanly.
    limit = (2**63 - 1 - _ALIGNMENT) // itemsize
    fits = builder.icmp_unsigned("<=", count, ir.Constant(I64, limit))
    rounded = builder.and_(
        builder.add(
            builder.mul(count, ir.Constant(I64, itemsize)), ir.Constant(I64, _ALIGNMENT - 1)
        ),
        ir.Constant(I64, -_ALIGNMENT),
    )
    size = builder.select(fits, rounded, ir.Constant(I64, -1))
    allocate = declare_runtime(emitter.module, "aligned_alloc")
    raw = builder.call(allocate, [ir.Constant(I64, _ALIGNMENT), size], name=f"{name}.raw")
    null = ir.Constant(I8.as_pointer(), None)
    ok = builder.or_(
        builder.icmp_unsigned("!=", raw, null), builder.icmp_signed("==", size, ir.Constant(I64, 0))
    )
    return builder.bitcast(raw, element.as_pointer(), name=name), ok


def _allocate_in_place(
    emitter: FunctionEmitter,
    buffers: Sequence[tuple[Buffer, arith.Dim]],
    emit_body: Callable[[], None],
) -> None:
    if not buffers:
        emit_body()
        return
    (buffer, elements), rest = buffers[0], buffers[1:]
    builder = emitter.builder
    count = emit_dim(builder, elements, emitter.scope.symbols)
    element = storage_type(buffer.dtype)
    pointer, ok = _heap_allocate(
        builder, emitter, count, element, dtypes.itemsize(buffer.dtype), buffer.name
    )
    with builder.if_else(ok, likely=True) as (allocated, failed):
        with allocated:
            emitter.scope.buffers[buffer] = pointer
            _allocate_in_place(emitter, rest, emit_body)
            raw = builder.bitcast(pointer, I8.as_pointer())
            builder.call(declare_runtime(emitter.module, "free"), [raw])
        with failed:
            builder.store(ir.Constant(I32, 1), emitter.status)
