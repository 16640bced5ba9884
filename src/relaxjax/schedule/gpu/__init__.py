"""Finishing scheduled kernels for the GPU: launches, cross-thread reductions, shared
memory, barriers and the checks a launch must pass (see :mod:`.finish`).

``finish_gpu(func)`` takes a kernel scheduled with thread bindings (``bind``) and
returns its launches; ``launch_parts(loop)`` takes a launch apart for code
generation.
"""

from relaxjax.schedule.gpu.finish import GPU_ATTR, finish_gpu, is_finished
from relaxjax.schedule.gpu.launch import LaunchParts, build_launches, launch_parts
from relaxjax.schedule.gpu.limits import DEFAULT_LIMITS, GpuLimits
from relaxjax.schedule.gpu.vector import VECTOR_BYTES, is_vector_loop, vector_access

__all__ = [
    "DEFAULT_LIMITS",
    "VECTOR_BYTES",
    "GPU_ATTR",
    "GpuLimits",
    "LaunchParts",
    "build_launches",
    "finish_gpu",
    "is_finished",
    "is_vector_loop",
    "launch_parts",
    "vector_access",
]
