"""storage_align: pad the strides of an intermediate buffer (e.g. against bank conflicts)."""

from __future__ import annotations

from relaxjax.arith import Dim
from relaxjax.schedule.step import Step, fail
from relaxjax.schedule.tree import Site
from relaxjax.tir.buffer import Buffer
from relaxjax.tir.function import PrimFunc
from relaxjax.tir.functor import StmtMutator
from relaxjax.tir.stmt import Block, BlockRealize


def aligned_strides(buffer: Buffer, axis: int, factor: int, offset: int) -> tuple[Dim, ...]:
    """Row-major strides of ``buffer`` with ``stride[axis] % factor == offset``."""
    strides: list[Dim] = [1] * buffer.ndim
    for d in range(buffer.ndim - 2, -1, -1):
        natural = strides[d + 1] * buffer.shape[d + 1]
        strides[d] = natural + (offset - natural) % factor if d == axis else natural
    return tuple(strides)


class _Restride(StmtMutator):
    def __init__(self, old: Buffer, new: Buffer):
        self.old, self.new = old, new

    def visit_buffer(self, buffer: Buffer) -> Buffer:
        return self.new if buffer == self.old else buffer


def _allocated(func: PrimFunc, buffer: Buffer) -> bool:
    from relaxjax.schedule.tree import find_sites

    sites = find_sites(func.body, lambda s: isinstance(s, Block) and buffer in s.alloc_buffers)
    return bool(sites)


def storage_align(
    func: PrimFunc, site: Site, buffer_index: int, axis: int, factor: int, offset: int
) -> Step:
    """Gives the buffer the block at ``site`` writes (``block.writes[buffer_index]``)
    strides whose ``axis`` stride is ``offset`` modulo ``factor``."""
    primitive = "storage_align"
    block = site.node.block if isinstance(site.node, BlockRealize) else site.node
    if not isinstance(buffer_index, int) or not 0 <= buffer_index < len(block.writes):
        raise fail(
            primitive,
            f"block {block.name!r} writes {len(block.writes)} buffer(s); buffer_index "
            f"{buffer_index!r} is out of range",
        )
    buffer = block.writes[buffer_index].buffer
    if not _allocated(func, buffer):
        raise fail(primitive, f"{buffer.name} is a parameter of the kernel; its layout is fixed")
    if buffer.strides is not None:
        raise fail(primitive, f"{buffer.name} already has explicit strides {buffer.strides}")
    if not isinstance(axis, int) or not 0 <= axis < buffer.ndim - 1:
        raise fail(
            primitive,
            f"axis must be in [0, {buffer.ndim - 1}) (the innermost axis has stride 1), "
            f"got {axis!r}",
        )
    for what, value in (("factor", factor), ("offset", offset)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise fail(primitive, f"{what} must be an int, got {value!r}")
    if factor <= 0 or not 0 <= offset < factor:
        raise fail(
            primitive,
            f"need factor > 0 and 0 <= offset < factor, got factor={factor}, offset={offset}",
        )
    strides = aligned_strides(buffer, axis, factor, offset)
    new = Buffer(buffer.name, buffer.shape, buffer.dtype, strides, buffer.scope)
    return Step(func.with_body(_Restride(buffer, new).visit_stmt(func.body)))
