"""``finish_gpu``: a scheduled kernel with thread bindings -> launches ready for codegen.

The steps, each a kernel -> kernel function that keeps the meaning (the interpreter
runs every intermediate form)::

    anchors          where each shared/local buffer is private (on the block form)
    build_launches   thread loops -> threads of launches, cross-thread reductions ->
                     warp shuffles, blocks lowered (launch.py)
    compact          shared buffers per block, local ones per thread, shrunk (compact.py)
    insert_barriers  syncthreads() where threads exchange data (sync.py)
    check_launches   thread and grid limits, shared memory, races (checks.py)
    demote_vectors   vectorized loops that are not aligned vector accesses -> serial

The result carries the attr ``gpu=True``. Its body is *host code* (``Allocate`` of
global temporaries, sequences, conditions and lets on index values) around
*launches*: ``blockIdx`` loops, then the block's shared buffers, then one
``threadIdx`` loop per axis, then per-thread code (see :func:`launch_parts`).
"""

from __future__ import annotations

from relaxjax.schedule.gpu.checks import check_launches
from relaxjax.schedule.gpu.compact import anchors, compact
from relaxjax.schedule.gpu.launch import build_launches_with_internals
from relaxjax.schedule.gpu.limits import DEFAULT_LIMITS, GpuLimits
from relaxjax.schedule.gpu.sync import insert_barriers
from relaxjax.schedule.gpu.vector import demote_vectors
from relaxjax.tir.function import PrimFunc

__all__ = ["GPU_ATTR", "finish_gpu", "is_finished"]

#: The attr marking a kernel finished for the GPU.
GPU_ATTR = "gpu"


def is_finished(func: PrimFunc) -> bool:
    """Whether ``func`` went through :func:`finish_gpu`."""
    return dict(func.attrs).get(GPU_ATTR) is True


def finish_gpu(func: PrimFunc, limits: GpuLimits = DEFAULT_LIMITS) -> PrimFunc:
    """``func`` (scheduled, thread-bound) as launches (see the module doc);
    ``ScheduleError`` for a kernel that cannot run on the GPU as scheduled."""
    if not isinstance(func, PrimFunc):
        raise TypeError(f"finish_gpu expects a tir.PrimFunc, got {type(func).__name__}")
    if is_finished(func):
        return func
    found = anchors(func)
    launched, internal = build_launches_with_internals(func)
    compacted = compact(launched, found, internal)
    synced = insert_barriers(compacted)
    check_launches(synced, limits)
    return demote_vectors(synced).with_attrs({GPU_ATTR: True})
