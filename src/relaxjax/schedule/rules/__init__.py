"""Default CPU schedule rules: fast kernels without tuning.

``default_schedule(func, target)`` gives a kernel a schedule chosen by the first rule
that fits (matmul, reduction/norm/softmax, injective, then a generic fallback),
the kernel as it was when none does, with the reason recorded when the result is not
parallel or not vectorised (``schedule_note``); ``schedule_kernels(mod)`` does that for
every kernel of a module. A rule is a function ``(func, target) -> PrimFunc | None``.

The rules build on :class:`~relaxjax.schedule.Schedule` primitives, then lower the
blocks to loops (:func:`lower_blocks`), move split guards into loop bounds
(:func:`tighten_loops`) and stage operands and accumulators through small local
buffers (:func:`stage`): packed panels and register tiles.
"""

from relaxjax.schedule.rules.bounds import tighten_loops
from relaxjax.schedule.rules.default import (
    CPU_RULES,
    RULE_ATTR,
    Rule,
    ScheduleKernels,
    default_schedule,
    is_scheduled,
    schedule_kernels,
)
from relaxjax.schedule.rules.fallback import fallback_rule
from relaxjax.schedule.rules.flatten import lower_blocks
from relaxjax.schedule.rules.injective import injective_rule
from relaxjax.schedule.rules.matmul import matmul_rule
from relaxjax.schedule.rules.notes import NOTE_ATTR, Audit, audit, schedule_note
from relaxjax.schedule.rules.reduction import reduction_rule
from relaxjax.schedule.rules.staging import stage
from relaxjax.schedule.rules.target import CpuParams, cpu_params
from relaxjax.schedule.rules.variants import choose

__all__ = [
    "CPU_RULES",
    "Audit",
    "CpuParams",
    "NOTE_ATTR",
    "RULE_ATTR",
    "Rule",
    "ScheduleKernels",
    "audit",
    "choose",
    "cpu_params",
    "default_schedule",
    "fallback_rule",
    "injective_rule",
    "is_scheduled",
    "lower_blocks",
    "matmul_rule",
    "reduction_rule",
    "schedule_kernels",
    "schedule_note",
    "stage",
    "tighten_loops",
]
