"""The GPU fallback rule: any kernel, its independent loops spread over blocks and
threads (dlight's ``Fallback``).

For each top-level loop nest, the longest prefix of its perfectly nested loops that
``bind`` accepts (iterations independent) is fused and split over blocks of
``threads`` threads; a non-dividing extent leaves a guarded tail::

    for i in range(n):           for i_j_fused_0 in thread_binding((n * 37 + 221) // 222, ...):
        for j in range(37):  ->      for i_j_fused_1 in thread_binding(222, thread="threadIdx.x"):
            with block("B"): ...         with block("B"): ...  # guarded: < n * 37

Loops inside that prefix (a reduction, a scan) run in order in each thread; a nest
with no independent outer loop, or a statement outside loops, runs on one thread.
Always applies: correct for every kernel, fast for the elementwise ones.
"""

from __future__ import annotations

from relaxjax.schedule.rules.gpu.common import attempt, bind_spread, finish, top_chains
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


def fallback_rule(func: PrimFunc, target: object = "cuda") -> PrimFunc:
    """Schedule any kernel for the GPU (see the module doc)."""
    params = gpu_params(target)
    sch = Schedule(func)
    for index in range(len(top_chains(sch))):
        chain = top_chains(sch)[index]
        if chain:
            sch = _spread(sch, chain, params.threads) or sch
    return finish(sch, params)
