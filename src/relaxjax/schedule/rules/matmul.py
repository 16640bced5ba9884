"""The CPU rule for (batched) matrix products, for any M, N, K, symbolic or not.

Several schedules of the same kernel, chosen at run time by the number of rows ``m``
(and, for few rows, the reduction length ``k``):

**Tiled** (``m >= rows``): per panel of ``cols`` columns (one thread's work), the
panel of ``B`` is packed contiguously (``B_local``: ``k x cols``, read from cache by
every row block); per block of ``rows`` rows, a ``rows x cols`` register tile
(``C_local``) accumulates the whole reduction — the k loop's body is ``rows``
broadcasts of ``A``, ``cols / lanes`` vector loads of the packed panel and
``rows * cols / lanes`` vector multiply-adds — and is stored once::

    for j_0 in parallel(n // 48):                           # one panel per claim
        B_local[k, 48] = B[:, j_0 * 48 : j_0 * 48 + 48]     # packed panel
        for i_0 in range(m // 8):
            C_local[8, 48] = C[i_0 * 8 : ..., j_0 * 48 : ...]
            for k_1 in range(k):
                for i_1 in unrolled(8):
                    for j_1 in vectorized(48):
                        C_local[i_1, j_1] += A[i_0 * 8 + i_1, k_1] * B_local[k_1, j_1]
            C[...] = C_local
        for i_tail in range(m % 8): ...                     # leftover rows: 1 x 48 tiles
    for j_tail_0 in range((n % 48) // 16): ...              # 8 x 16 tiles, rows in parallel
    for i in parallel(m): ...                               # the last n % 16 columns

**Split reduction** (``m < rows`` and ``k >= gemv_split_k``, e.g. one token of a
language model): ``gemv_parts`` slices of ``k`` run in parallel, each streaming whole
rows of ``B`` (contiguous memory, so the prefetchers keep up) into its own partial
rows ``C_rf[part, :m, :]``; the slices are summed at the end.

**Row by row** (``m < rows``, short ``k``): each row of the result is a
vector-matrix product; the columns are split into chunks of ``gemv_block`` that run
in parallel, each accumulating in a local vector while the rows of ``B`` stream by.

Leading batch loops stay outermost (batched products with few rows go row by row).
Float32 accumulates in float32 in ``k`` order; the backend contracts each
multiply-add into one FMA (``contract=False`` keeps two roundings), so results equal
the unscheduled kernel's built the same way — except for the split reduction, which
adds the slices' partial sums (a different rounding, as in BLAS).
"""

from __future__ import annotations

from dataclasses import dataclass

from relaxjax import arith, dtypes
from relaxjax.schedule.handles import BlockRV, LoopRV
from relaxjax.schedule.rules.common import (
    block_names,
    finish,
    new_blocks,
    schedule_spatial,
    try_stage,
)
from relaxjax.schedule.rules.patterns import MatmulMatch, match_matmul
from relaxjax.schedule.rules.target import CpuParams, cpu_params
from relaxjax.schedule.rules.variants import choose
from relaxjax.schedule.schedule import Schedule
from relaxjax.tir.expr import IndexExpr, binop
from relaxjax.tir.function import PrimFunc

__all__ = ["matmul_rule"]


def _schedule_init(sch: Schedule, match: MatmulMatch, lanes: int) -> None:
    """The separate init and epilogue nests, if any: parallel rows, vector columns."""
    for nest in (match.init, match.epilogue):
        if nest is not None:
            schedule_spatial(sch, sch.get_block(nest.name), lanes)


def _decompose(sch: Schedule, block: BlockRV, loop: LoopRV, lanes: int) -> None:
    """Split the block's init off before ``loop`` and vectorise it."""
    if sch.get_block_node(block).init is None:
        return
    init = sch.decompose_reduction(block, loop)
    loops = sch.get_loops(init)
    if loops:
        sch.vectorize(loops[-1])


def _row_tail(sch: Schedule, name: str, lanes: int) -> LoopRV:
    """The leftover rows of a panel: ``1 x cols`` tiles; returns the row loop."""
    block = sch.get_block(name)
    row, col, red = sch.get_loops(block)[-3:]
    sch.reorder(row, red, col)
    _decompose(sch, block, red, lanes)
    sch.vectorize(col)
    return row


def _column_tail(sch: Schedule, name: str, lanes: int) -> LoopRV:
    """The last columns, fewer than a vector tile: each row accumulates a short vector;
    returns the row loop."""
    block = sch.get_block(name)
    col, row, red = sch.get_loops(block)[-3:]
    sch.reorder(row, red, col)
    _decompose(sch, block, red, lanes)
    sch.vectorize(col)
    sch.parallel(row)
    return row


@dataclass(frozen=True, slots=True)
class _Tiles:
    """Where a tiled nest stages its operands: the panel loop (packed ``B``), the
    row-block loops (register tiles of ``C``) and the blocks left for the column tail."""

    panel: LoopRV
    row_blocks: tuple[LoopRV, ...]
    column_tail: tuple[str, ...]


def _tile(
    sch: Schedule, name: str, rows: int, cols: int, lanes: int, parallel_panels: bool
) -> _Tiles:
    """Register-tile block ``name``, whose last loops are (column, row, reduction).

    Panels of ``cols`` columns run in parallel, or (``parallel_panels=False``, for the
    one or two panels of a column tail) the row blocks of each panel do."""
    block = sch.get_block(name)
    j, i, k = sch.get_loops(block)[-3:]
    before = block_names(sch)
    jo, ji = sch.split(j, factors=[None, cols], tail="peel")
    column_tail = new_blocks(before, sch)
    sch.reorder(jo, i, ji, k)
    before = block_names(sch)
    io, ii = sch.split(i, factors=[None, rows], tail="peel")
    row_tail = new_blocks(before, sch)
    sch.reorder(io, k, ii, ji)
    _decompose(sch, block, k, lanes)
    sch.unroll(ii)
    sch.vectorize(ji)
    tail_rows = [_row_tail(sch, tail, lanes) for tail in row_tail]
    sch.parallel(jo if parallel_panels else io)
    return _Tiles(jo, (io, *tail_rows), tuple(column_tail))


def _tail_widths(cols: int, lanes: int) -> list[int]:
    """Narrower tile widths for the columns left over by ``cols``-wide panels."""
    return [width for width in (2 * lanes, lanes) if width < cols][:1]


def _tiled(func: PrimFunc, match: MatmulMatch, params: CpuParams) -> PrimFunc:
    lanes = params.lanes(match.output.dtype)
    rows, cols = params.matmul_rows, lanes * params.matmul_vectors
    sch = Schedule(func)
    block = sch.get_block(match.update.name)
    *_, i, j, k = sch.get_loops(block)
    sch.reorder(j, i, k)
    level = [_tile(sch, match.update.name, rows, cols, lanes, parallel_panels=True)]
    tiled = list(level)
    for width in _tail_widths(cols, lanes):
        tails = [name for tiles in level for name in tiles.column_tail]
        level = [_tile(sch, name, rows, width, lanes, parallel_panels=False) for name in tails]
        tiled += level
    tail_cols = [_column_tail(sch, n, lanes) for tiles in level for n in tiles.column_tail]
    _schedule_init(sch, match, lanes)
    kernel = finish(sch)
    for tiles in tiled:
        for operand in match.right_operands:
            kernel = try_stage(kernel, tiles.panel, operand.name)
        for loop in tiles.row_blocks:
            kernel = try_stage(kernel, loop, match.output.name)
    for loop in tail_cols:
        kernel = try_stage(kernel, loop, match.output.name)
    return kernel


def _row_by_row(func: PrimFunc, match: MatmulMatch, params: CpuParams) -> PrimFunc:
    lanes = params.lanes(match.output.dtype)
    sch = Schedule(func)
    block = sch.get_block(match.update.name)
    *_, i, j, k = sch.get_loops(block)
    jo, ji = sch.split(j, factors=[None, params.gemv_block])
    sch.reorder(i, jo, k, ji)
    _decompose(sch, block, k, lanes)
    sch.vectorize(ji)
    sch.parallel(jo)
    _schedule_init(sch, match, lanes)
    return try_stage(finish(sch), jo, match.output.name)


def _split_reduction(func: PrimFunc, match: MatmulMatch, params: CpuParams) -> PrimFunc:
    """Few rows, long reduction: ``gemv_parts`` slices of ``k`` run in parallel, each
    streaming whole rows of ``B`` into its own partial rows of ``C``, summed at the end."""
    lanes = params.lanes(match.output.dtype)
    sch = Schedule(func)
    block = sch.get_block(match.update.name)
    *_, i, j, k = sch.get_loops(block)
    ko, ki = sch.split(k, factors=[params.gemv_parts, None])
    sch.reorder(ko, i, j, ki)
    partial = sch.rfactor(ko)
    *_, ko, i, j, ki = sch.get_loops(partial)
    sch.reorder(ko, ki, i, j)
    sch.vectorize(j)
    sch.parallel(ko)
    rf_init = sch.get_block(f"{match.update.name}_rf_init")
    schedule_spatial(sch, rf_init, lanes)
    total = sch.get_block(match.update.name)
    *_, ti, tj, tk = sch.get_loops(total)
    sch.reorder(ti, tk, tj)
    _decompose(sch, total, tk, lanes)
    sch.vectorize(tj)
    _schedule_init(sch, match, lanes)
    return finish(sch)


def _few_rows(func: PrimFunc, match: MatmulMatch, params: CpuParams) -> PrimFunc:
    """Fewer rows than a register tile: slices of a long reduction in parallel, or
    chunks of columns in parallel (chosen at run time when ``k`` is symbolic)."""
    if match.init is not None or match.batch:
        return _row_by_row(func, match, params)
    long = arith.compare(match.k.extent, ">=", params.gemv_split_k)
    if long is True:
        return _split_reduction(func, match, params)
    if long is False:
        return _row_by_row(func, match, params)
    condition = binop(">=", IndexExpr(match.k.extent), params.gemv_split_k)
    return choose(
        condition,
        _split_reduction(func, match, params),
        _row_by_row(func, match, params),
    )


def matmul_rule(func: PrimFunc, target: object = "llvm") -> PrimFunc | None:
    """Schedule a floating-point (batched) matrix product (see the module doc); None
    when ``func`` is not one."""
    match = match_matmul(func)
    if match is None or not dtypes.is_floating(match.output.dtype):
        return None
    params = cpu_params(target)
    lanes = params.lanes(match.output.dtype)
    cols = lanes * params.matmul_vectors
    m, n = match.i.extent, match.j.extent
    if arith.compare(n, "<", cols) is True or arith.compare(m, "<", params.matmul_rows) is True:
        return _few_rows(func, match, params)
    if arith.compare(m, ">=", params.matmul_rows) is True:
        return _tiled(func, match, params)
    many_rows = binop(">=", IndexExpr(m), params.matmul_rows)
    return choose(many_rows, _tiled(func, match, params), _few_rows(func, match, params))
