"""The GPU rule for reductions: row reductions, norms, softmax, and fused chains of them
(dlight's ``GeneralReduction``).

A kernel of reductions and elementwise stages over the same rows (a layer norm, a
softmax, the fused kernels ``fuse_ops`` makes) runs one row per thread block, or
one row per warp when rows are short (at most ``short_row`` elements, ``warp_rows``
rows per block). Every stage is computed at the row loop; a reduction runs over the
threads of the row (a cross-thread reduction: partial results per thread, then
warp shuffles), its result kept in shared memory for the stages after it; the
elementwise stages spread the row over the same threads::

    for i in thread_binding(n, thread="blockIdx.x"):               # one row per block
        for k_0 in range(3):
            for k_1 in thread_binding(256, thread="threadIdx.x"):   # sum over the row
                with block("S"): S_shared[...] += x[i, k_0 * 256 + k_1]
        for j_0 in range(3):
            for j_1 in thread_binding(256, thread="threadIdx.x"):   # the normalised row
                with block("out"): ... S_shared[...] ...

Elementwise producers are inlined first. The addition order of a reduction changes
(a tree over the threads), so results may differ from the serial order in the last
bits. Kernels whose nests do not share their leading spatial loops (or reduce to a
scalar) are left to the next rule.
"""

from __future__ import annotations

from relaxjax import arith
from relaxjax.schedule.handles import BlockRV, LoopRV
from relaxjax.schedule.rules.gpu.common import finish
from relaxjax.schedule.rules.gpu.target import gpu_params
from relaxjax.schedule.rules.injective import inline_intermediates
from relaxjax.schedule.rules.patterns import Nest, simple_nests
from relaxjax.schedule.schedule import Schedule
from relaxjax.tir.function import PrimFunc

__all__ = ["bind_rows", "reduction_rule", "spread_row"]


def _row_count(nests: tuple[Nest, ...]) -> int:
    """How many leading loops all nests share as rows: spatial, provably equal extents."""
    depth = min(len(n.loops) for n in nests)
    for position in range(depth):
        extent = nests[-1].loops[position].extent
        for nest in nests:
            if nest.kinds()[position] != "spatial":
                return position
            if arith.compare(nest.loops[position].extent, "==", extent) is not True:
                return position
    return depth


def _fits(nests: tuple[Nest, ...], rows: int) -> bool:
    """Reductions reduce over everything past the rows; other stages are spatial."""
    for nest in nests:
        rest = nest.kinds()[rows:]
        if nest.is_reduction and (not rest or set(rest) != {"reduce"}):
            return False
    return True


def _reduce_extent(nests: tuple[Nest, ...], rows: int) -> arith.Dim:
    largest: arith.Dim = 1
    for nest in nests:
        if not nest.is_reduction:
            continue
        extent: arith.Dim = 1
        for loop in nest.loops[rows:]:
            extent = extent * loop.extent
        if arith.compare(extent, ">=", largest) is True:
            largest = extent
        elif arith.compare(extent, "<=", largest) is not True:
            return extent  # unknown order: treat as long
    return largest


def bind_rows(sch: Schedule, block: str, rows: int, length: arith.Dim, params) -> tuple:
    """The first ``rows`` loops of ``block`` fused into one row loop on blocks, or on
    warps (``threadIdx.y``) when rows hold at most ``short_row`` elements; returns it
    and the threads a row gets."""
    by_warp = isinstance(length, int) and length <= params.short_row
    row_loops = sch.get_loops(sch.get_block(block))[:rows]
    row = row_loops[0] if rows == 1 else sch.fuse(*row_loops)
    if by_warp:
        outer, row = sch.split(row, factors=[None, params.warp_rows])
        sch.bind(outer, "blockIdx.x")
        sch.bind(row, "threadIdx.y")
    else:
        sch.bind(row, "blockIdx.x")
    return row, (params.warp if by_warp else params.threads)


def spread_row(sch: Schedule, block: BlockRV, row: LoopRV, threads: int) -> None:
    """The loops of ``block`` under ``row`` fused and split over ``threads`` threads."""
    loops = list(sch.get_loops(block))
    inner = loops[[lp.name for lp in loops].index(row.name) + 1 :]
    if not inner:
        return
    fused = inner[0] if len(inner) == 1 else sch.fuse(*inner)
    extent = sch.get_loop_node(fused).extent
    if (
        arith.compare(extent, "<=", threads) is True
        and arith.compare(extent, ">=", threads) is True
    ):
        sch.bind(fused, "threadIdx.x")
        return
    serial, lanes = sch.split(fused, factors=[None, threads])
    if sch.get_block_node(block).is_reduction:
        # Each thread accumulates its whole share, then the threads combine once.
        sch.reorder(lanes, serial)
    sch.bind(lanes, "threadIdx.x")


def _full_reduction(sch: Schedule, nests: tuple[Nest, ...], params) -> PrimFunc | None:
    """A reduction of everything to one value, in launches: the partial results zeroed,
    ``partial_blocks`` blocks each reducing a share over their threads into one of
    them (``rfactor``), then one block reducing the partials; scalar stages after it
    run on one thread."""
    if len(nests) < 1 or not nests[0].is_reduction or set(nests[0].kinds()) != {"reduce"}:
        return None
    if any(n.loops for n in nests[1:]):
        return None
    block = sch.get_block(nests[0].name)
    loops = sch.get_loops(block)
    flat = loops[0] if len(loops) == 1 else sch.fuse(*loops)
    threads = params.threads
    outer, serial, lanes = sch.split(flat, [params.partial_blocks, None, threads])
    partials = sch.rfactor(outer, 0)
    sch.reorder(lanes, serial)
    sch.bind(outer, "blockIdx.x")
    sch.bind(lanes, "threadIdx.x")
    init = sch.get_block(f"{sch.get_block_node(partials).name}_init")
    for loop in sch.get_loops(init):
        sch.bind(loop, "threadIdx.x")
    (combine,) = sch.get_loops(block)
    sch.bind(combine, "threadIdx.x")
    return finish(sch, params)


def reduction_rule(func: PrimFunc, target: object = "cuda") -> PrimFunc | None:
    """Schedule a kernel of row reductions and elementwise stages (see the module doc);
    None when it does not have that shape."""
    nests = simple_nests(func)
    if not nests or not any(nest.is_reduction for nest in nests):
        return None
    params = gpu_params(target)
    sch = Schedule(func)
    outputs = {b.name for b in func.outputs}
    gone = inline_intermediates(sch, nests, outputs)
    nests = tuple(n for n in nests if n.name not in gone)
    reductions = tuple(n for n in nests if n.is_reduction)
    rows = _row_count(reductions)
    if rows == 0:
        return _full_reduction(sch, nests, params)
    if not _fits(reductions, rows):
        return None
    anchor = reductions[-1]
    row, threads = bind_rows(sch, anchor.name, rows, _reduce_extent(reductions, rows), params)
    position = nests.index(anchor)
    for nest in nests[position + 1 :]:
        # A consumer of the row's results, its loops in any order (``x - max[j]`` with
        # ``j`` innermost): it runs at the row for the row's elements.
        sch.reverse_compute_at(sch.get_block(nest.name), row)
    for nest in reversed(nests[:position]):
        sch.compute_at(sch.get_block(nest.name), row)
    for nest in nests:
        spread_row(sch, sch.get_block(nest.name), row, threads)
    for nest in nests:
        written = nest.written()[0]
        if nest.is_reduction and written.name not in outputs:
            sch.set_scope(sch.get_block(nest.name), 0, "shared")
    return finish(sch, params)
