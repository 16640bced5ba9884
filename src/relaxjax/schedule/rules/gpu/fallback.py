"""The GPU fallback rule: any kernel, its independent loops spread over blocks and
threads (dlight's ``Fallback``).

For each top-level loop nest, the longest prefix of its perfectly nested loops that
``bind`` accepts (iterations independent) is fused and split over blocks of
``threads`` threads; a non-dividing extent leaves a guarded tail::

    for i in range(n):           for i_j_fused_0 in thread_binding((n * 37 + 221) // 222, ...):
        for j in range(37):  ->      for i_j_fused_1 in thread_binding(222, thread="threadIdx.x"):
            with block("B"): ...         with block("B"): ...  # guarded: < n * 37

A nest of one reduction over rows (``+ * min max``) of at least a warp's length (or
of symbolic length) gets the reduction rule's schedule on its own (a block or a warp
per row, the threads reducing together). Loops inside
the spread prefix (a reduction such as an argmax, a scan) run in order in each
thread; a nest with no independent outer loop, or a statement outside loops, runs on
one thread.
Always applies: correct for every kernel, fast for the elementwise ones.
"""

from __future__ import annotations

from relaxjax import arith
from relaxjax.schedule.handles import BlockRV
from relaxjax.schedule.rules.gpu.common import attempt, bind_spread, finish, top_chains
from relaxjax.schedule.rules.gpu.reduction import bind_rows, spread_row
from relaxjax.schedule.rules.gpu.target import gpu_params
from relaxjax.schedule.schedule import Schedule
from relaxjax.tir.function import PrimFunc

__all__ = ["fallback_rule"]


def _spread(sch: Schedule, chain, threads: int) -> Schedule | None:
    for count in range(len(chain), 0, -1):

        def step(trial: Schedule, count=count) -> None:
            bind_spread(trial, chain[:count], threads)

        done = attempt(sch, step)
        if done is not None:
            return done
    return None


def _rows(sch: Schedule, chain, params) -> Schedule | None:
    """A nest of one reduction block over rows (spatial loops, then reduction loops
    with a ``+ * min max`` update): the reduction rule's schedule for it alone."""
    block = _only_block(sch, chain)
    if block is None:
        return None
    kinds = [iv.kind for iv in sch.get_block_node(block).iter_vars]
    rows = kinds.index("reduce") if "reduce" in kinds else len(kinds)
    if rows == 0 or rows == len(kinds) or set(kinds[rows:]) != {"reduce"}:
        return None
    length: arith.Dim = 1
    for loop in chain[rows:]:
        length = length * sch.get_loop_node(loop).extent
    if isinstance(length, int) and length < params.warp:
        return None  # a short row: a thread per row (the spread below) keeps lanes busy

    def step(trial: Schedule) -> None:
        row, threads = bind_rows(trial, block.name, rows, length, params)
        spread_row(trial, trial.get_block(block.name), row, threads)

    return attempt(sch, step)


def _only_block(sch: Schedule, chain) -> BlockRV | None:
    """The block of a simple nest (one loop per iterator, in order), or None."""
    children = sch.get_child_blocks(chain[-1])
    if len(children) != 1:
        return None
    realize = sch.get_realize(children[0])
    loops = [sch.get_loop_node(lp) for lp in chain]
    if len(loops) != len(realize.iter_values) or any(
        value != loop.var for value, loop in zip(realize.iter_values, loops)
    ):
        return None
    return children[0]


def fallback_rule(func: PrimFunc, target: object = "cuda") -> PrimFunc:
    """Schedule any kernel for the GPU (see the module doc)."""
    params = gpu_params(target)
    sch = Schedule(func)
    for index in range(len(top_chains(sch))):
        chain = top_chains(sch)[index]
        if chain:
            sch = _rows(sch, chain, params) or _spread(sch, chain, params.threads) or sch
    return finish(sch, params)
