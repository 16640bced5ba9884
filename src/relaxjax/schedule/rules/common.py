"""Small scheduling steps the CPU rules share.

Each takes a :class:`~relaxjax.schedule.Schedule` and handles, applies primitives,
and leaves the kernel's meaning unchanged (the primitives check that).
"""

from __future__ import annotations

from collections.abc import Sequence

from relaxjax import arith
from relaxjax.errors import ScheduleError
from relaxjax.schedule.handles import BlockRV, LoopRV
from relaxjax.schedule.rules.affine import fuse_keeps_affine, split_divided_loop
from relaxjax.schedule.rules.bounds import tighten_loops
from relaxjax.schedule.rules.flatten import lower_blocks
from relaxjax.schedule.rules.staging import stage
from relaxjax.schedule.schedule import Schedule
from relaxjax.tir.analysis import iter_blocks
from relaxjax.tir.function import PrimFunc
from relaxjax.tir.simplify import simplify_indices

__all__ = [
    "block_names",
    "finish",
    "new_blocks",
    "schedule_spatial",
    "try_stage",
]


def block_names(sch: Schedule) -> list[str]:
    """The names of the kernel's blocks (not the root), in program order."""
    return [r.block.name for r in iter_blocks(sch.func.body) if r.block.iter_vars]


def new_blocks(before: Sequence[str], sch: Schedule) -> list[str]:
    """Blocks of ``sch`` that were not in ``before`` (e.g. the copies a peel made)."""
    seen = set(before)
    return [name for name in block_names(sch) if name not in seen]


def _extent(sch: Schedule, loop: LoopRV) -> arith.Dim:
    return sch.get_loop_node(loop).extent


def schedule_spatial(sch: Schedule, block: BlockRV, lanes: int, chunk: int = 4096) -> None:
    """An elementwise/injective block: innermost loop vectorised, the outer loops fused
    into one parallel loop (a lone loop is split into parallel chunks of ``chunk``). An
    innermost loop that an access divides is split by the divisor first (:mod:`.affine`).

    Before / after for a ``(n, 768)`` elementwise block::

        for i0 in range(n):                  for i0 in parallel(n):
            for i1 in range(768):     ->         for i1 in vectorized(768):
    """
    loops = list(sch.get_loops(block))
    if not loops or any(_extent(sch, lp) == 0 for lp in loops):
        return  # nothing runs
    loops, merged = _merge_short_inner(sch, block, loops, lanes)
    split = split_divided_loop(sch, block, loops[-1], min_inner=lanes)
    if split is not None:  # the inner loop indexes affinely once indices are simplified
        loops = [*loops[:-1], *split]
    inner = loops[-1]
    if len(loops) == 1:
        extent = _extent(sch, inner)
        if arith.compare(extent, "<=", chunk) is True:
            sch.vectorize(inner)
            return
        # A multiple of the merged inner extent keeps the split's index math exact.
        step = max(1, chunk // merged) * merged
        outer, inner = sch.split(inner, factors=[None, step])
        sch.vectorize(inner)
        sch.parallel(outer)
        return
    sch.vectorize(inner)
    outer = loops[:-1]
    fused = outer[0] if len(outer) == 1 else sch.fuse(*outer)
    sch.parallel(fused)


def _merge_short_inner(
    sch: Schedule, block: BlockRV, loops: list[LoopRV], lanes: int
) -> tuple[list[LoopRV], int]:
    """Fuse the innermost loops while the innermost one is a short constant loop, so
    the vectorised loop has enough iterations (``(n, 3)`` -> one loop of ``n * 3``),
    unless a buffer is not one contiguous run over the two loops (a view read through
    strides: the fused index would divide per element, :mod:`.affine`); also returns
    the product of the constant extents merged in."""
    merged = 1
    while len(loops) >= 2:
        extent = _extent(sch, loops[-1])
        if not isinstance(extent, int) or extent >= 4 * lanes:
            break
        if not fuse_keeps_affine(sch, block, loops[-2], loops[-1]):
            break
        merged *= max(extent, 1)
        fused = sch.fuse(loops[-2], loops[-1])
        loops = loops[:-2] + [fused]
    return loops, merged


def try_stage(func: PrimFunc, loop: LoopRV | str, buffer: str) -> PrimFunc:
    """``stage(func, loop, buffer)`` when it applies, else ``func`` unchanged."""
    name = loop if isinstance(loop, str) else loop.name
    try:
        return stage(func, name, buffer)
    except ScheduleError:
        return func


def finish(sch: Schedule) -> PrimFunc:
    """The scheduled kernel with blocks lowered, loop guards moved into bounds and its
    indices simplified under the loops' ranges (:mod:`relaxjax.tir.simplify`)."""
    return simplify_indices(tighten_loops(lower_blocks(sch.func)))
