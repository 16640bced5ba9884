"""What a finished GPU kernel must satisfy before it is compiled (``ScheduleError``
otherwise, naming the launch by its outermost loop):

- thread extents: each ``threadIdx`` axis within its limit and the block's threads
  within ``max_threads_per_block``, *for every value of the symbols* (an extent whose
  bound cannot be proven is refused); a ``blockIdx`` extent provably over the grid
  limit is refused (symbolic grid extents are checked at launch by the runtime);
- shared memory: the launch's shared buffers have constant sizes (their extents'
  constant upper bounds) totalling at most ``max_shared_bytes``; local buffers have
  constant sizes too;
- no races: two threads (of one block, or of two blocks for global memory) never
  write one element; every store's indices move apart along each thread axis, or it
  runs where that axis has one value (``if threadIdx_x == 0``).

Reads of what another thread wrote are ordered by the barriers :mod:`.sync` inserts
(or refuses to insert).
"""

from __future__ import annotations

from relaxjax import arith, dtypes
from relaxjax.arith import Dim
from relaxjax.schedule.gpu.launch import LaunchParts, launch_parts
from relaxjax.schedule.gpu.limits import GpuLimits
from relaxjax.schedule.gpu.sync import _Collect, _Threads, same_thread
from relaxjax.schedule.step import fail
from relaxjax.tir.buffer import Buffer
from relaxjax.tir.function import PrimFunc
from relaxjax.tir.functor import StmtVisitor
from relaxjax.tir.stmt import Allocate, For

__all__ = ["check_launches", "shared_bytes"]

PRIMITIVE = "finish_gpu"


def _name(parts: LaunchParts) -> str:
    first = (parts.blocks + parts.threads)[0]
    return f"the GPU kernel at loop {first.var.name}"


def _check_threads(parts: LaunchParts, limits: GpuLimits) -> None:
    total: Dim = 1
    for loop in parts.threads:
        limit = limits.block_dim(loop.thread_tag)
        if arith.compare(loop.extent, "<=", limit) is not True:
            raise fail(
                PRIMITIVE,
                f"{_name(parts)} runs {loop.extent} threads along {loop.thread_tag}: the limit "
                f"is {limit}, and it must hold for every value of the symbols",
            )
        total = total * loop.extent
    if arith.compare(total, "<=", limits.max_threads_per_block) is not True:
        raise fail(
            PRIMITIVE,
            f"{_name(parts)} runs {total} threads per block: the limit is "
            f"{limits.max_threads_per_block}, and it must hold for every value of the symbols",
        )


def _check_grid(parts: LaunchParts, limits: GpuLimits) -> None:
    for loop in parts.blocks:
        limit = limits.grid_dim(loop.thread_tag)
        if arith.compare(loop.extent, ">", limit) is True:
            raise fail(
                PRIMITIVE,
                f"{_name(parts)} runs {loop.extent} blocks along {loop.thread_tag}: the limit "
                f"is {limit}",
            )


def _bytes(buffer: Buffer) -> Dim:
    return buffer.size() * dtypes.itemsize(buffer.dtype)


def shared_bytes(parts: LaunchParts) -> Dim:
    """The shared memory one block of a launch uses, in bytes."""
    total: Dim = 0
    for buffer in parts.shared:
        total = total + _bytes(buffer)
    return total


def _check_memory(parts: LaunchParts, limits: GpuLimits) -> None:
    total = shared_bytes(parts)
    if not isinstance(total, int):
        raise fail(
            PRIMITIVE,
            f"{_name(parts)} uses {total} bytes of shared memory, which has no constant bound: "
            f"it can exceed {limits.max_shared_bytes} bytes for some value of the symbols",
        )
    if total > limits.max_shared_bytes:
        raise fail(
            PRIMITIVE,
            f"{_name(parts)} uses {total} bytes of shared memory: the limit is "
            f"{limits.max_shared_bytes}",
        )
    for buffer in _local_buffers(parts):
        if not isinstance(buffer.size(), int):
            raise fail(
                PRIMITIVE,
                f"local buffer {buffer.name} of {_name(parts)} has shape {buffer.shape}, which "
                "has no constant bound: a thread's registers have a constant size",
            )


def _local_buffers(parts: LaunchParts) -> list[Buffer]:
    found: list[Buffer] = []

    class _Find(StmtVisitor):
        def visit_Allocate(self, stmt: Allocate) -> None:
            found.append(stmt.buffer)
            super().visit_Allocate(stmt)

    _Find().visit_stmt(parts.body)
    return found


def _check_races(parts: LaunchParts) -> None:
    threads = tuple(
        (lp.var, lp.start, lp.extent)
        for lp in parts.threads
        if arith.compare(lp.extent, "<=", 1) is not True
    )
    blocks = tuple(
        (lp.var, lp.start, lp.extent)
        for lp in parts.blocks
        if arith.compare(lp.extent, "<=", 1) is not True
    )
    collect = _Collect(_Threads(threads + blocks), (), ())
    collect.visit_stmt(parts.body)
    for access in collect.found:
        if not access.is_write:
            continue
        axes = _Threads(threads if access.buffer.scope == "shared" else threads + blocks)
        if not same_thread(access, access, axes):
            indices = ", ".join(map(str, access.indices))
            raise fail(
                PRIMITIVE,
                f"{_name(parts)} races: two threads may write {access.buffer.name}[{indices}] "
                "(a store must move apart along every thread axis, or run where the axis has "
                "one value)",
            )


class _Launches(StmtVisitor):
    def __init__(self, limits: GpuLimits):
        self.limits = limits

    def visit_For(self, stmt: For) -> None:
        if stmt.kind != "thread_binding":
            super().visit_For(stmt)
            return
        parts = launch_parts(stmt)
        _check_threads(parts, self.limits)
        _check_grid(parts, self.limits)
        _check_memory(parts, self.limits)
        _check_races(parts)


def check_launches(func: PrimFunc, limits: GpuLimits) -> None:
    """Raise ``ScheduleError`` unless every launch of ``func`` holds (see the module doc)."""
    _Launches(limits).visit_stmt(func.body)
