"""The CPU rule for kernels without reductions: elementwise, broadcast, injective.

Intermediate stages of a fused kernel are inlined into their consumers where the
schedule allows it (each tensor is then read and written once); every remaining
nest gets its innermost loop vectorised and its outer loops fused into one
parallel loop::

    for i0 in range(n):                        for i0 in parallel(n):
        for i1 in range(768):          ->          for i1 in vectorized(768):
            with block("gelu"): ...                    gelu[i0, i1] = ...

A one-dimensional nest is split into parallel chunks whose insides are vectorised;
short constant innermost loops are fused with their parent first, so ``(n, 3)``
vectorises over ``3 n`` elements.
"""

from __future__ import annotations

from relaxjax.errors import ScheduleError
from relaxjax.schedule.rules.common import finish, schedule_spatial
from relaxjax.schedule.rules.patterns import Nest, simple_nests
from relaxjax.schedule.rules.target import cpu_params
from relaxjax.schedule.schedule import Schedule
from relaxjax.tir.function import PrimFunc

__all__ = ["inline_intermediates", "injective_rule"]


def inline_intermediates(sch: Schedule, nests: tuple[Nest, ...], outputs: set[str]) -> set[str]:
    """Inline every spatial stage that does not write a kernel output into its
    consumers (``compute_inline``), or failing that its consumer into it
    (``reverse_compute_inline``); returns the names of the blocks that went away."""
    gone: set[str] = set()
    for nest in nests:
        if nest.is_reduction or any(b.name in outputs for b in nest.written()):
            continue
        try:
            sch.compute_inline(sch.get_block(nest.name))
            gone.add(nest.name)
        except ScheduleError:
            continue
    return gone


def injective_rule(func: PrimFunc, target: object = "llvm") -> PrimFunc | None:
    """Schedule a kernel whose every nest is spatial (see the module doc); None otherwise."""
    nests = simple_nests(func)
    if not nests or any(nest.is_reduction for nest in nests):
        return None
    params = cpu_params(target)
    sch = Schedule(func)
    outputs = {b.name for b in func.outputs}
    gone = inline_intermediates(sch, nests, outputs)
    for nest in nests:
        if nest.name in gone:
            continue
        lanes = params.lanes(nest.written()[0].dtype) if nest.written() else 1
        schedule_spatial(sch, sch.get_block(nest.name), lanes)
    return finish(sch)
