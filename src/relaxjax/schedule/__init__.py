"""relaxjax.schedule: schedule loop-level kernels by hand, soundly and replayably.

``Schedule(func)`` wraps a :class:`relaxjax.tir.PrimFunc`; primitives (split, fuse,
reorder, tile, parallel, vectorize, unroll, bind, compute_at, reverse_compute_at,
compute_inline, reverse_compute_inline, cache_read, cache_write,
decompose_reduction, rfactor, storage_align, annotate) transform it through handles
(:class:`LoopRV`, :class:`BlockRV`) and are recorded in a :class:`Trace` that prints
as Python and replays on another kernel. A primitive that would change the kernel's
meaning raises :class:`ScheduleError`.
"""

from relaxjax.errors import ScheduleError
from relaxjax.schedule.handles import BlockRV, LoopRV
from relaxjax.schedule.replace import replace_kernel
from relaxjax.schedule.schedule import Schedule
from relaxjax.schedule.trace import Instruction, Trace

__all__ = [
    "BlockRV",
    "Instruction",
    "LoopRV",
    "Schedule",
    "ScheduleError",
    "Trace",
    "replace_kernel",
]
