"""Counted loops in LLVM IR, with the loop metadata that steers LLVM's loop passes.

``counted_loop`` emits the canonical shape LLVM's loop passes expect (a preheader,
a header with the induction ``phi`` and the exit test, the body, and a latch whose
back edge carries the ``!llvm.loop`` metadata)::

    with counted_loop(builder, start, stop, hints=vectorize_hints()) as index:
        ...  # body emitted at builder's position, with ``index`` an i64

Loop hints (LLVM loop metadata): ``llvm.loop.vectorize.enable`` asks the loop
vectoriser to vectorise whenever legal (it still proves legality: reductions in
float are not reassociated without fast-math), ``false`` forbids vectorising the
loop; ``llvm.loop.unroll.enable`` /
``llvm.loop.unroll.full`` ask the unroller to unroll.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from llvmlite import ir

from .numeric import I1, I32, I64

__all__ = ["LoopHint", "counted_loop", "no_vectorize_hints", "unroll_hints", "vectorize_hints"]

LoopHint = tuple[str | int | bool, ...]
"""A loop metadata entry: its name, then its i1 (bool) or i32 (int) operands."""


class _LoopID(ir.values.MDValue):
    """A distinct, self-referencing loop ID node (``!N = !{!N, hints...}``).

    llvmlite's metadata cache would unify equal nodes and cannot express the
    self-reference, so loop IDs are built here with identity equality.
    """

    def __init__(self, module: ir.Module, hints: Sequence[ir.values.MDValue]) -> None:
        super().__init__(module, [], name=str(len(module.metadata)))
        self.operands = (self, *hints)

    def __eq__(self, other: object) -> bool:
        return self is other

    def __hash__(self) -> int:
        return id(self)


def _hint_node(module: ir.Module, hint: LoopHint) -> ir.values.MDValue:
    name, *rest = hint
    operands: list[object] = [ir.MetaDataString(module, name)]
    for value in rest:
        type_ = I1 if isinstance(value, bool) else I32
        operands.append(ir.Constant(type_, int(value)))
    return module.add_metadata(operands)


def vectorize_hints() -> tuple[LoopHint, ...]:
    """Hints for a ``vectorized`` loop: vectorise whenever legal (LLVM picks the width)."""
    return (("llvm.loop.vectorize.enable", True),)


def no_vectorize_hints() -> tuple[LoopHint, ...]:
    """Hints for a loop the loop vectoriser must leave alone (``vectorize.enable`` false)."""
    return (("llvm.loop.vectorize.enable", False),)


def unroll_hints(full: bool) -> tuple[LoopHint, ...]:
    """Hints for an ``unrolled`` loop LLVM must unroll (fully when ``full``)."""
    return (("llvm.loop.unroll.full",),) if full else (("llvm.loop.unroll.enable",),)


@contextmanager
def counted_loop(
    builder: ir.IRBuilder,
    start: ir.Value,
    stop: ir.Value,
    hints: Sequence[LoopHint] = (),
    name: str = "loop",
) -> Iterator[ir.Value]:
    """Emit ``for index in range(start, stop)`` (i64); the body is the ``with`` block.

    On exit the builder is positioned after the loop.
    """
    function = builder.function
    preheader = builder.block
    header = function.append_basic_block(f"{name}.header")
    body = function.append_basic_block(f"{name}.body")
    exit_block = function.append_basic_block(f"{name}.exit")
    builder.branch(header)

    builder.position_at_end(header)
    index = builder.phi(I64, name=name)
    index.add_incoming(start, preheader)
    builder.cbranch(builder.icmp_signed("<", index, stop), body, exit_block)

    builder.position_at_end(body)
    yield index
    latch = builder.block
    following = builder.add(index, ir.Constant(I64, 1), flags=("nsw",))
    back_edge = builder.branch(header)
    index.add_incoming(following, latch)
    if hints:
        module = builder.module
        back_edge.set_metadata("llvm.loop", _LoopID(module, [_hint_node(module, h) for h in hints]))
    builder.position_at_end(exit_block)
