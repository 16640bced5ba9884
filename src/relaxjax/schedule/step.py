"""What a primitive returns to the schedule, and shared checks of primitives."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from relaxjax.errors import ScheduleError
from relaxjax.tir.function import PrimFunc
from relaxjax.tir.stmt import For


@dataclass(frozen=True, slots=True)
class Step:
    """A primitive's result: the new kernel, the names of the loops or blocks it
    returns, and the loops/blocks it removed (name -> which step removed it)."""

    func: PrimFunc
    outputs: tuple[str, ...] = ()
    removed: Mapping[str, str] = field(default_factory=dict)


def fail(primitive: str, message: str, nodes=()) -> ScheduleError:
    """A ScheduleError whose message starts with the primitive's name."""
    return ScheduleError(f"{primitive}: {message}", nodes=nodes)


def require_serial(primitive: str, loop: For) -> None:
    """Refuse to restructure a loop that already has a kind other than serial."""
    if loop.kind != "serial":
        raise fail(
            primitive,
            f"loop {loop.var.name} is {loop.kind}; restructure loops before giving them a kind",
            (loop,),
        )


def check_parallel_loops(primitive: str, func: PrimFunc) -> None:
    """Refuse a result in which a parallel, vectorized or thread-bound loop carries a
    dependence (a block moved under it may make its iterations conflict)."""
    from relaxjax.schedule.dependence import carried
    from relaxjax.schedule.privatize import thread_private
    from relaxjax.schedule.tree import find_sites

    for site in find_sites(func.body, lambda s: isinstance(s, For) and s.kind != "serial"):
        loop = site.node
        if loop.kind == "unrolled":
            continue
        private = thread_private(site) if loop.kind == "thread_binding" else frozenset()
        found = carried(loop, loop.var, private)
        if found.kind != "none" and not thread_reduction(found, loop.thread_tag):
            raise fail(
                primitive,
                f"the result would make {loop.kind} loop {loop.var.name} unsound: {found.reason}",
                (loop,),
            )


def thread_reduction(found, tag: str | None) -> bool:
    """A loop bound to ``threadIdx`` may carry a commutative reduction: the threads
    combine their partial results (a cross-thread reduction, lowered with warp
    shuffles by :mod:`relaxjax.schedule.gpu`)."""
    return (
        found.kind == "reduction"
        and found.commutative
        and tag is not None
        and tag.startswith("threadIdx")
    )


def complete_blocks(func: PrimFunc) -> set[str]:
    """The blocks that run every point of their domain: bound one-to-one to loops from 0
    over their extents, with no predicate."""
    from relaxjax import arith
    from relaxjax.schedule.tree import find_sites
    from relaxjax.tir.expr import IntImm
    from relaxjax.tir.stmt import BlockRealize

    complete = set()
    for site in find_sites(func.body, lambda s: isinstance(s, BlockRealize)):
        realize = site.node
        if not (isinstance(realize.predicate, IntImm) and realize.predicate.value == 1):
            continue
        loops = {lp.var.name: lp for lp in site.loops()}
        values = realize.iter_values
        names = [v.name for v in values if isinstance(v, arith.Sym) and v.name in loops]
        if len(names) != len(values) or len(set(names)) != len(names) or len(names) != len(loops):
            continue
        if all(
            loops[v.name].start == 0 and arith.compare(loops[v.name].extent, "==", iv.extent)
            for v, iv in zip(values, realize.block.iter_vars)
        ):
            complete.add(realize.block.name)
    return complete
