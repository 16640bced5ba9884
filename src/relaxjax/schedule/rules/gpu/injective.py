"""The GPU rule for kernels without reductions: elementwise, broadcast, injective.

Intermediate stages are inlined into their consumers (each tensor is read and
written once); each remaining nest is flattened into one loop over its elements and
spread over blocks of ``threads`` threads (a guarded tail when the count does not
divide). When every access moves with the innermost axis contiguously and aligned
(or not at all), that axis is first split by the 128-bit vector width and the lanes
become a ``vectorized`` loop, which the CUDA backend emits as vector loads/stores::

    for i in range(n):               for i_j_0_fused_0 in thread_binding(n, thread="blockIdx.x"):
        for j in range(768):   ->        for i_j_0_fused_1 in thread_binding(192, ...):
            ...                              for j_1 in vectorized(4):   # a float4 per thread
                                                 ...

What the backend may assume of such a loop: :mod:`relaxjax.schedule.gpu.vector`.
"""

from __future__ import annotations

from relaxjax import dtypes
from relaxjax.schedule.gpu.vector import vector_access
from relaxjax.schedule.handles import BlockRV
from relaxjax.schedule.rules.gpu.common import bind_spread, finish
from relaxjax.schedule.rules.gpu.target import GpuParams, gpu_params
from relaxjax.schedule.rules.injective import inline_intermediates
from relaxjax.schedule.rules.patterns import simple_nests
from relaxjax.schedule.schedule import Schedule
from relaxjax.tir.analysis import collect_accesses
from relaxjax.tir.function import PrimFunc

__all__ = ["injective_rule", "schedule_elementwise", "vector_access", "vector_lanes"]


def vector_lanes(sch: Schedule, block: BlockRV, params: GpuParams) -> int:
    """The lane count for the innermost loop of a simple elementwise nest, 1 when its
    accesses are not all contiguous-and-aligned or uniform (see the module doc)."""
    node = sch.get_block_node(block)
    loops = sch.get_loops(block)
    if not loops or not node.iter_vars:
        return 1
    extent = sch.get_loop_node(loops[-1]).extent
    accesses = collect_accesses(node)
    widest = max(dtypes.itemsize(a.buffer.dtype) for a in accesses) if accesses else 4
    lanes = max(1, params.vector_bytes // widest)
    if lanes == 1 or not isinstance(extent, int) or extent % lanes or extent < lanes:
        return 1
    var = node.iter_vars[-1].var
    if any(a.loops for a in accesses):
        return 1
    kinds = {vector_access(a.buffer, a.indices, var, lanes) for a in accesses}
    return lanes if kinds <= {"contiguous", "uniform"} else 1


def schedule_elementwise(sch: Schedule, block: BlockRV, params: GpuParams) -> None:
    """One elementwise nest: (vector lanes split off), flattened, over blocks of
    threads."""
    loops = list(sch.get_loops(block))
    if not loops:
        return
    lanes = vector_lanes(sch, block, params)
    vector = None
    if lanes > 1:
        outer, vector = sch.split(loops[-1], factors=[None, lanes], tail="exact")
        loops[-1] = outer
    bind_spread(sch, loops, params.threads)
    if vector is not None:
        sch.vectorize(vector)


def injective_rule(func: PrimFunc, target: object = "cuda") -> PrimFunc | None:
    """Schedule a kernel whose every nest is spatial (see the module doc); None otherwise."""
    nests = simple_nests(func)
    if not nests or any(nest.is_reduction for nest in nests):
        return None
    params = gpu_params(target)
    sch = Schedule(func)
    outputs = {b.name for b in func.outputs}
    gone = inline_intermediates(sch, nests, outputs)
    for nest in nests:
        if nest.name not in gone:
            schedule_elementwise(sch, sch.get_block(nest.name), params)
    return finish(sch, params)
