"""The last CPU rule: parallel outer loops and vectorised inner loops for any loop nests.

When no specific rule applies to a kernel of simple nests (or one fails on it), the
kernel must not run on one thread in scalar code. This rule does what is legal for
each nest, step by step, keeping every step the primitives accept:

- an all-spatial nest: its outer loops fused into one parallel loop and its
  innermost loop vectorised (:func:`~.common.schedule_spatial`);
- a nest with reductions: its leading spatial loops (the kept axes) fused and run in
  parallel; the reduction stays serial under them, and a spatial innermost loop is
  vectorised. A reduction along a strided axis (a column sum: no reduce iterator
  indexes the last axis of what it reads) gets its last kept loop split, the inner
  part moved under the reduction and vectorised, the outer part parallel::

      for j in range(m):                    for j_0 in parallel((m + 63) // 64):
          for k in range(n):        ->          for k in range(n):
              s[j] += x[k, j]                       for j_1 in vectorized(64): ...

Nothing is inlined or tiled: the result is the kernel as written, on every core. A
step the primitives refuse is skipped (the refusal becomes the kernel's
``schedule_note``, :mod:`.notes`).
"""

from __future__ import annotations

import contextlib

from relaxjax.errors import ScheduleError
from relaxjax.schedule.rules.common import finish, schedule_spatial
from relaxjax.schedule.rules.notes import reads_along
from relaxjax.schedule.rules.patterns import Nest, simple_nests
from relaxjax.schedule.rules.target import cpu_params
from relaxjax.schedule.schedule import Schedule
from relaxjax.tir.function import PrimFunc

__all__ = ["fallback_rule"]


def _leading_spatial(nest: Nest) -> int:
    count = 0
    for kind in nest.kinds():
        if kind != "spatial":
            break
        count += 1
    return count


def _strided(nest: Nest) -> bool:
    """A reduction none of whose reduce iterators indexes the last axis of its reads."""
    reduce = [iv.var.name for iv in nest.block.iter_vars if iv.kind == "reduce"]
    return not any(reads_along(nest.block.body, name) for name in reduce)


def _strided_reduction(sch: Schedule, nest: Nest, lanes: int) -> Schedule | None:
    """The column-sum schedule of the module doc, on a copy of ``sch``; None when the
    nest is not of that shape or a primitive refuses."""
    kept = _leading_spatial(nest)
    if kept == 0 or kept == len(nest.loops) or not _strided(nest):
        return None
    attempt = sch.copy()
    try:
        loops = attempt.get_loops(attempt.get_block(nest.name))
        outer, inner = attempt.split(loops[kept - 1], factors=[None, 4 * lanes])
        attempt.reorder(outer, *loops[kept:], inner)
        attempt.vectorize(inner)
        rows = outer if kept == 1 else attempt.fuse(*loops[: kept - 1], outer)
        attempt.parallel(rows)
    except ScheduleError:
        return None
    return attempt


def _reduction_nest(sch: Schedule, nest: Nest) -> None:
    loops = sch.get_loops(sch.get_block(nest.name))
    kept = _leading_spatial(nest)
    if nest.kinds()[-1] == "spatial":
        with contextlib.suppress(ScheduleError):
            sch.vectorize(loops[-1])
    if kept == 0:
        return
    with contextlib.suppress(ScheduleError):
        rows = loops[0] if kept == 1 else sch.fuse(*loops[:kept])
        sch.parallel(rows)


def fallback_rule(func: PrimFunc, target: object = "llvm") -> PrimFunc | None:
    """Parallel outer loops, vectorised inner ones, where legal (see the module doc);
    None for a kernel that is not made of simple nests."""
    nests = simple_nests(func)
    if not nests:
        return None
    params = cpu_params(target)
    sch = Schedule(func)
    for nest in nests:
        if not nest.loops:
            continue
        lanes = params.lanes(nest.written()[0].dtype) if nest.written() else 1
        if nest.is_reduction:
            strided = _strided_reduction(sch, nest, lanes)
            if strided is not None:
                sch = strided
            else:
                _reduction_nest(sch, nest)
            continue
        try:
            schedule_spatial(sch, sch.get_block(nest.name), lanes)
        except ScheduleError:
            continue
    return finish(sch)
