"""storage_align: pad the strides of an intermediate buffer (e.g. against bank conflicts).

Each call aligns one axis; the requests of a buffer are kept, like TVM's
``buffer_dim_align``, in the annotation ``storage_align`` of the block that allocates
it (``((buffer, axis, factor, offset), ...)``), so that a later call on another axis
keeps them and a call on the same axis replaces its request. The strides always
follow from the requests, innermost axis first: an axis' natural stride is the padded
stride of the next axis times its extent, then rounded up to ``offset`` modulo
``factor``.
"""

from __future__ import annotations

from collections.abc import Mapping

from relaxjax.arith import Dim
from relaxjax.schedule.step import Step, fail
from relaxjax.schedule.tree import Site, find_sites, replace
from relaxjax.tir.buffer import SCOPES, Buffer
from relaxjax.tir.function import PrimFunc
from relaxjax.tir.functor import StmtMutator
from relaxjax.tir.stmt import Block, BlockRealize

ALIGN_KEY = "storage_align"

Requests = dict[int, tuple[int, int]]


def aligned_strides(buffer: Buffer, requests: Mapping[int, tuple[int, int]]) -> tuple[Dim, ...]:
    """Row-major strides of ``buffer`` with ``stride[axis] % factor == offset`` for each
    ``axis -> (factor, offset)`` of ``requests`` (outer strides grow with the padding)."""
    strides: list[Dim] = [1] * buffer.ndim
    for d in range(buffer.ndim - 2, -1, -1):
        natural = strides[d + 1] * buffer.shape[d + 1]
        if d in requests:
            factor, offset = requests[d]
            strides[d] = natural + (offset - natural) % factor
        else:
            strides[d] = natural
    return tuple(strides)


def alignment_requests(block: Block, name: str) -> Requests:
    """The storage_align requests recorded on ``block`` for its buffer ``name``."""
    recorded = dict(block.annotations).get(ALIGN_KEY, ())
    return {axis: (factor, offset) for buf, axis, factor, offset in recorded if buf == name}


def with_requests(block: Block, name: str, requests: Mapping[int, tuple[int, int]]) -> Block:
    """``block`` whose recorded requests for buffer ``name`` are ``requests`` (the
    annotation disappears with the last request)."""
    annotations = dict(block.annotations)
    recorded = [r for r in annotations.pop(ALIGN_KEY, ()) if r[0] != name]
    recorded += [(name, axis, f, o) for axis, (f, o) in requests.items()]
    if recorded:
        annotations[ALIGN_KEY] = tuple(sorted(recorded))
    return Block(
        block.name,
        block.iter_vars,
        block.reads,
        block.writes,
        block.init,
        block.body,
        block.alloc_buffers,
        annotations,
    )


class _Restride(StmtMutator):
    def __init__(self, old: Buffer, new: Buffer):
        self.old, self.new = old, new

    def visit_buffer(self, buffer: Buffer) -> Buffer:
        return self.new if buffer == self.old else buffer


def _allocating_block(func: PrimFunc, buffer: Buffer) -> BlockRealize | None:
    sites = find_sites(
        func.body,
        lambda s: isinstance(s, BlockRealize) and buffer in s.block.alloc_buffers,
    )
    return sites[0].node if sites else None


def storage_align(
    func: PrimFunc, site: Site, buffer_index: int, axis: int, factor: int, offset: int
) -> Step:
    """Gives the buffer the block at ``site`` writes (``block.writes[buffer_index]``)
    strides whose ``axis`` stride is ``offset`` modulo ``factor``, keeping the requests
    made before for its other axes and replacing one made for ``axis``."""
    primitive = "storage_align"
    block = site.node.block if isinstance(site.node, BlockRealize) else site.node
    if not isinstance(buffer_index, int) or not 0 <= buffer_index < len(block.writes):
        raise fail(
            primitive,
            f"block {block.name!r} writes {len(block.writes)} buffer(s); buffer_index "
            f"{buffer_index!r} is out of range",
        )
    buffer = block.writes[buffer_index].buffer
    owner = _allocating_block(func, buffer)
    if owner is None:
        raise fail(primitive, f"{buffer.name} is a parameter of the kernel; its layout is fixed")
    requests = alignment_requests(owner.block, buffer.name)
    if buffer.strides is not None and not requests:
        raise fail(
            primitive,
            f"{buffer.name} already has explicit strides {buffer.strides} that storage_align "
            "did not set",
        )
    if requests and buffer.strides != aligned_strides(buffer, requests):
        raise fail(
            primitive,
            f"{buffer.name} has strides {buffer.strides}, not those of its storage_align "
            f"requests {requests}",
        )
    if isinstance(axis, bool) or not isinstance(axis, int) or not 0 <= axis < buffer.ndim - 1:
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
    requests[axis] = (factor, offset)
    new = Buffer(
        buffer.name, buffer.shape, buffer.dtype, aligned_strides(buffer, requests), buffer.scope
    )
    body = _Restride(buffer, new).visit_stmt(func.body)
    owner = _allocating_block(func.with_body(body), new)
    realize = BlockRealize(
        owner.iter_values, owner.predicate, with_requests(owner.block, new.name, requests)
    )
    return Step(func.with_body(replace(body, owner, realize)))


def set_scope(func: PrimFunc, site: Site, buffer_index: int, scope: str) -> Step:
    """Moves the intermediate buffer the block at ``site`` writes
    (``block.writes[buffer_index]``) to storage ``scope``; only where it lives changes."""
    primitive = "set_scope"
    block = site.node.block
    if not isinstance(buffer_index, int) or not 0 <= buffer_index < len(block.writes):
        raise fail(
            primitive,
            f"block {block.name!r} writes {len(block.writes)} buffer(s); buffer_index "
            f"{buffer_index!r} is out of range",
        )
    if scope not in SCOPES:
        raise fail(primitive, f"scope must be one of {SCOPES}, got {scope!r}")
    buffer = block.writes[buffer_index].buffer
    if _allocating_block(func, buffer) is None:
        raise fail(primitive, f"{buffer.name} is a parameter of the kernel; it stays global")
    new = Buffer(buffer.name, buffer.shape, buffer.dtype, buffer.strides, scope)
    return Step(func.with_body(_Restride(buffer, new).visit_stmt(func.body)))
