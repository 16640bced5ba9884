"""Default GPU schedule rules (dlight-like, for symbolic shapes).

``GPU_RULES`` are tried in order by ``default_schedule(func, target="cuda")``; each
returns a kernel finished for the GPU (:func:`relaxjax.schedule.gpu.finish_gpu`) or
None when it does not apply. The fallback applies to every kernel.
"""

from relaxjax.schedule.gpu.vector import vector_access
from relaxjax.schedule.rules.gpu.attention import attention_rule
from relaxjax.schedule.rules.gpu.fallback import fallback_rule
from relaxjax.schedule.rules.gpu.injective import injective_rule
from relaxjax.schedule.rules.gpu.matmul import matmul_rule
from relaxjax.schedule.rules.gpu.reduction import reduction_rule
from relaxjax.schedule.rules.gpu.target import GpuParams, gpu_params, is_gpu_target

#: The GPU rules, most specific first, with the names recorded in ``schedule_rule``.
GPU_RULES = (
    ("attention", attention_rule),
    ("matmul", matmul_rule),
    ("reduction", reduction_rule),
    ("injective", injective_rule),
    ("fallback", fallback_rule),
)

__all__ = [
    "GPU_RULES",
    "GpuParams",
    "attention_rule",
    "fallback_rule",
    "gpu_params",
    "injective_rule",
    "is_gpu_target",
    "matmul_rule",
    "reduction_rule",
    "vector_access",
]
