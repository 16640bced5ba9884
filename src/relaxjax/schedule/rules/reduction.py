"""The CPU rule for reductions: row reductions, norms, softmax, and fused chains of them.

A kernel made of reductions and elementwise stages over the same rows (a layer
norm: row sum, row variance, normalise; a softmax: row max, row sum of exponentials,
divide) runs row by row: every stage is computed at the row loop of the last one, so
a row is read while it is in cache and the per-row statistics become scalars::

    for i in parallel(n):                            # rows on the cores
        sum_rf[32] = 0                               # 32 partial sums (4 vectors)
        for k_0 in range(24):
            for k_1 in vectorized(32):
                sum_rf[k_1] = sum_rf[k_1] + x[i, k_0 * 32 + k_1]
        sum = sum_rf[0] + ... + sum_rf[31]
        ...                                          # the other statistics alike
        for j in vectorized(768):
            out[i, j] = (x[i, j] - sum / 768) * ...

A long innermost reduction is split into ``4 * lanes`` partial sums (``rfactor``), so
it vectorises without LLVM reassociating float additions; this changes the order of
the additions (the result may differ in the last bits). A reduction over an outer
axis (``sum(x, axis=0)``) is reordered so the kept axis is innermost and vectorised.
Elementwise stages before a reduction are inlined into it.
"""

from __future__ import annotations

from relaxjax import arith
from relaxjax.errors import ScheduleError
from relaxjax.schedule.handles import BlockRV, LoopRV
from relaxjax.schedule.rules.common import block_names, finish, try_stage
from relaxjax.schedule.rules.injective import inline_intermediates
from relaxjax.schedule.rules.partial import partial_reductions
from relaxjax.schedule.rules.patterns import Nest, root_block, simple_nests
from relaxjax.schedule.rules.target import cpu_params
from relaxjax.schedule.schedule import Schedule
from relaxjax.tir.analysis import iter_blocks
from relaxjax.tir.expr import BufferLoad
from relaxjax.tir.function import PrimFunc
from relaxjax.tir.functor import StmtVisitor

__all__ = ["reduction_rule"]


def _attempt(step, *args):
    """Run one optional primitive; a refusal leaves the schedule as it was."""
    try:
        return step(*args)
    except ScheduleError:
        return None


class _LastIndexVars(StmtVisitor):
    """The symbols in the last index of every load of a block's body."""

    def __init__(self):
        self.names: set[str] = set()

    def visit_BufferLoad(self, expr: BufferLoad) -> None:
        if expr.indices and isinstance(expr.indices[-1], (int, arith.Expr)):
            self.names |= {s.name for s in arith.free_symbols(expr.indices[-1])}
        super().visit_BufferLoad(expr)


def _contiguous_vars(nest: Nest) -> set[str]:
    finder = _LastIndexVars()
    finder.visit_stmt(nest.block.body)
    return finder.names


def _spatial_prefix(nest: Nest) -> int:
    count = 0
    for kind in nest.kinds():
        if kind != "spatial":
            break
        count += 1
    return count


def _vectorize_reduction(sch: Schedule, nest: Nest, lanes: int) -> None:
    """Partial sums for a row reduction; kept axis innermost for an outer-axis one."""
    block = sch.get_block(nest.name)
    loops = sch.get_loops(block)
    prefix = _spatial_prefix(nest)
    if prefix == len(loops):
        return
    iter_vars = nest.block.iter_vars
    along = _contiguous_vars(nest)
    if (
        prefix >= 1
        and iter_vars[prefix - 1].var.name in along
        and (iter_vars[-1].var.name not in along)
    ):
        _kept_axis_innermost(sch, block, loops, prefix)
        return
    width = _partial_sums(sch.get_loop_node(loops[-1]).extent, lanes)
    if width is None:
        return
    outer, inner = sch.split(loops[-1], factors=[None, width], tail="exact")
    # The partial sums go last in the rfactor buffer, so the lanes are contiguous.
    rank = len(nest.written()[0].shape)
    rf = _attempt(sch.rfactor, inner, rank)
    if rf is None:
        return
    rf_loops = sch.get_loops(rf)
    _attempt(sch.vectorize, rf_loops[-1])


def _partial_sums(extent: arith.Dim, lanes: int) -> int | None:
    """How many partial sums a reduction of ``extent`` gets: 4, 2 or 1 vectors' worth,
    dividing the extent exactly (a split with a remainder would need a predicate,
    which ``compute_at`` does not carry over), and at least two per lane; None when
    no width fits (short or symbolic extents stay serial)."""
    if not isinstance(extent, int):
        return None
    for width in (4 * lanes, 2 * lanes, lanes):
        if width > 1 and extent % width == 0 and extent >= 2 * width:
            return width
    return None


def _kept_axis_innermost(sch: Schedule, block: BlockRV, loops, prefix: int) -> None:
    kept = loops[prefix - 1]
    order = [*loops[: prefix - 1], *loops[prefix:], kept]
    if _attempt(sch.reorder, *order) is None and len(loops) > 1:
        return
    if sch.get_block_node(block).init is not None:
        _attempt(sch.decompose_reduction, block, loops[prefix] if prefix < len(loops) else kept)
    _attempt(sch.vectorize, kept)


def _row_depth(nests: tuple[Nest, ...], anchor_loops: int) -> int:
    """How many leading loops every nest shares with the last one (all spatial, equal
    extents): the rows."""
    last = nests[-1]
    depth = min(_spatial_prefix(n) for n in nests if n.is_reduction)
    depth = min(depth, anchor_loops, _spatial_prefix(last) or anchor_loops)
    for position in range(depth):
        extent = last.loops[position].extent
        for nest in nests:
            if position >= len(nest.loops) or nest.kinds()[position] != "spatial":
                return position
            if arith.compare(nest.loops[position].extent, "==", extent) is not True:
                return position
    return depth


def _group_rows(sch: Schedule, anchor: str, depth: int) -> LoopRV | None:
    """Compute every other block at the anchor's row loop; fuse and parallelise rows."""
    anchor_rv = sch.get_block(anchor)
    if depth == 0:
        return None
    row = sch.get_loops(anchor_rv)[depth - 1]
    for name in reversed(block_names(sch)):
        if name != anchor:
            _attempt(sch.compute_at, sch.get_block(name), row)
    rows = sch.get_loops(anchor_rv)[:depth]
    fused = rows[0] if depth == 1 else _attempt(sch.fuse, *rows)
    if fused is None:
        return None
    _attempt(sch.parallel, fused)
    return fused


def _finish_blocks(sch: Schedule) -> None:
    """Split inits off the update loops and vectorise spatial innermost loops."""
    for name in block_names(sch):
        block = sch.get_block(name)
        node = sch.get_block_node(block)
        loops = sch.get_loops(block)
        kinds = [iv.kind for iv in node.iter_vars]
        if node.init is not None and "reduce" in kinds and loops:
            first_reduce = _first_reduce_loop(sch, block, loops)
            if first_reduce is not None:
                _attempt(sch.decompose_reduction, block, first_reduce)
        loops = sch.get_loops(block)
        if loops and _innermost_is_spatial(sch, block, loops[-1]):
            _attempt(sch.vectorize, loops[-1])


def _first_reduce_loop(sch: Schedule, block: BlockRV, loops) -> LoopRV | None:
    realize = sch.get_realize(block)
    reduce_vars = set()
    for iv, value in zip(realize.block.iter_vars, realize.iter_values):
        if iv.kind == "reduce":
            reduce_vars |= {s.name for s in arith.free_symbols(value)}
    for loop in loops:
        if loop.name in reduce_vars:
            return loop
    return None


def _innermost_is_spatial(sch: Schedule, block: BlockRV, loop: LoopRV) -> bool:
    realize = sch.get_realize(block)
    for iv, value in zip(realize.block.iter_vars, realize.iter_values):
        if iv.kind == "reduce" and loop.name in {s.name for s in arith.free_symbols(value)}:
            return False
    return True


def reduction_rule(func: PrimFunc, target: object = "llvm") -> PrimFunc | None:
    """Schedule a kernel with reductions (see the module doc); None when it has none."""
    nests = simple_nests(func)
    if not nests or not any(nest.is_reduction for nest in nests):
        return None
    params = cpu_params(target)
    outputs = {b.name for b in func.outputs}
    depth = row_depth(nests)
    if depth is not None:
        return _row_kernel(func, nests, depth, params)
    sch = Schedule(func)
    gone = inline_intermediates(sch, nests, outputs)
    nests = tuple(n for n in nests if n.name not in gone)
    for nest in nests:
        if nest.is_reduction:
            _vectorize_reduction(sch, nest, params.lanes(nest.written()[0].dtype))
    anchor = nests[-1].name
    depth = _row_depth(nests, len(sch.get_loops(sch.get_block(anchor))))
    row = _group_rows(sch, anchor, depth)
    _finish_blocks(sch)
    kernel = finish(sch)
    root = root_block(func)
    if row is not None and root is not None:
        for buffer in _allocated(kernel):
            kernel = try_stage(kernel, row, buffer)
    return kernel


def row_depth(nests: tuple[Nest, ...]) -> int | None:
    """How many leading loops are the kernel's rows, when it is a *row kernel*: every
    nest shares those loops with the last one, and every reduction reduces only the
    axes after them (its other kept axes have extent 1); None otherwise."""
    depth = _row_depth(nests, len(nests[-1].loops))
    if depth < 1:
        return None
    for nest in nests:
        if not nest.is_reduction:
            continue
        kinds = nest.kinds()
        kept = _spatial_prefix(nest)
        if "spatial" in kinds[kept:] or _reduces_outer_axis(nest, kept):
            return None
        if any(arith.compare(lp.extent, "==", 1) is not True for lp in nest.loops[depth:kept]):
            return None
    return depth


def _reduces_outer_axis(nest: Nest, kept: int) -> bool:
    """True when the reduction walks memory across its kept axis (``sum(x, axis=0)``):
    the kept axis, not the reduced one, is then the contiguous one."""
    along = _contiguous_vars(nest)
    iter_vars = nest.block.iter_vars
    kept_contiguous = kept >= 1 and iter_vars[kept - 1].var.name in along
    return kept_contiguous and iter_vars[-1].var.name not in along


def _per_row(nest: Nest, depth: int) -> bool:
    """True when the nest computes one value per row (its other loops have extent 1)."""
    return all(arith.compare(lp.extent, "==", 1) is True for lp in nest.loops[depth:])


def _consumers(sch: Schedule, buffer: str) -> list[str]:
    return [
        r.block.name
        for r in iter_blocks(sch.func.body)
        if r.block.iter_vars and any(region.buffer.name == buffer for region in r.block.reads)
    ]


def _inline_single_use(sch: Schedule, nests: tuple[Nest, ...], depth: int, outputs: set[str]):
    """Inline the whole-row spatial stages read by one block into it; a stage read by
    several blocks stays (computed once per row into a row buffer), and so does a stage
    with one value per row. Returns the names of the nests left."""
    kept = []
    for nest in nests:
        written = [b.name for b in nest.written()]
        if nest.is_reduction or any(name in outputs for name in written) or _per_row(nest, depth):
            kept.append(nest.name)
            continue
        if len(_consumers(sch, written[0])) == 1:
            try:
                sch.compute_inline(sch.get_block(nest.name))
                continue
            except ScheduleError:
                pass
        kept.append(nest.name)
    return kept


def _row_kernel(func: PrimFunc, nests: tuple[Nest, ...], depth: int, params) -> PrimFunc:
    """A row kernel: every stage computed per row, rows in parallel (see the module doc)."""
    sch = Schedule(func)
    outputs = {b.name for b in func.outputs}
    _inline_single_use(sch, nests, depth, outputs)
    row = _group_rows(sch, nests[-1].name, depth)
    _finish_blocks(sch)
    kernel = finish(sch)
    if row is not None:
        for buffer in _allocated(kernel):
            kernel = try_stage(kernel, row, buffer)
    return partial_reductions(kernel, params.lanes)


def _allocated(func: PrimFunc) -> list[str]:
    names: list[str] = []

    class _Find(StmtVisitor):
        def visit_Allocate(self, stmt) -> None:
            names.append(stmt.buffer.name)
            super().visit_Allocate(stmt)

    _Find().visit_stmt(func.body)
    return names
