"""Memory planning: the program's temporaries as slices of one arena, reused when dead.

Every intermediate tensor that is not returned lives in a *slot* of a single
arena allocated per call. A slot is reused by a later temporary once every
kernel reading its previous occupant has run (the kernel that writes the new
occupant may not also read the old one: lifetimes are compared strictly). Sizes
are symbolic, so a slot's size is the ``max`` of its occupants' sizes, an
expression like any dim; when an equal-sized free slot exists it is preferred, so
slots rarely grow. Temporaries whose size is only known at run time (coarse
shapes) get slots of their own after the symbolic ones.

Before (sizes in bytes, n symbolic)::

    t0 = kernel_a(x)        # n * 16384
    t1 = kernel_b(t0)       # n * 16384     t0 dies here
    t2 = kernel_c(t1)       # n * 16384     reuses t0's slot

After: two slots of ``n * 16384`` bytes, offsets ``0`` and ``n * 16384``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from relaxjax import arith
from relaxjax.arith import Dim

__all__ = ["ALIGNMENT", "MemoryPlan", "Request", "aligned", "plan_memory"]

#: Every slot starts at a multiple of this many bytes (a cache line, an AVX-512 vector).
ALIGNMENT = 64


def aligned(nbytes: Dim) -> Dim:
    """``nbytes`` rounded up to a multiple of :data:`ALIGNMENT`."""
    return (nbytes + (ALIGNMENT - 1)) // ALIGNMENT * ALIGNMENT


@dataclass(frozen=True, slots=True)
class Request:
    """A temporary: its size in bytes (None: known only at run time), the index of the
    kernel launch that writes it and of the last launch that reads it."""

    nbytes: Dim | None
    first: int
    last: int

    def __post_init__(self) -> None:
        if self.last < self.first:
            raise ValueError(f"a temporary is read (at {self.last}) before written ({self.first})")


@dataclass(frozen=True, slots=True)
class MemoryPlan:
    """Where each request lives.

    ``slot_of[i]`` is request i's slot. ``slot_sizes[j]`` is slot j's aligned size in
    bytes, or None for a run-time-sized slot (sized by its only request). Symbolic
    slots come first; ``offsets[j]`` is the byte offset of symbolic slot j and
    ``symbolic_bytes`` their total, where the run-time-sized slots begin.
    """

    slot_of: tuple[int, ...]
    slot_sizes: tuple[Dim | None, ...]
    offsets: tuple[Dim, ...]
    symbolic_bytes: Dim

    @property
    def num_slots(self) -> int:
        """How many slots the arena has."""
        return len(self.slot_sizes)


def _fits(slot_size: Dim, need: Dim, relation: str) -> bool:
    return arith.compare(slot_size, relation, need) is True


def _choose(free: Sequence[int], sizes: Sequence[Dim], need: Dim) -> int | None:
    """The best free slot for ``need`` bytes: equal size, else big enough, else any."""
    for relation in ("==", ">="):
        for slot in free:
            if _fits(sizes[slot], need, relation):
                return slot
    return free[0] if free else None


def plan_memory(requests: Sequence[Request]) -> MemoryPlan:
    """Assign every request a slot, reusing slots whose occupants are dead."""
    order = sorted(range(len(requests)), key=lambda i: (requests[i].first, i))
    symbolic_sizes: list[Dim] = []
    busy_until: list[int] = []  # per symbolic slot: the last launch reading its occupant
    assignment: dict[int, int] = {}
    runtime_requests: list[int] = []
    for index in order:
        request = requests[index]
        if request.nbytes is None:
            runtime_requests.append(index)
            continue
        need = aligned(request.nbytes)
        free = [s for s, last in enumerate(busy_until) if last < request.first]
        slot = _choose(free, symbolic_sizes, need)
        if slot is None:
            slot = len(symbolic_sizes)
            symbolic_sizes.append(need)
            busy_until.append(request.last)
        else:
            if not _fits(symbolic_sizes[slot], need, ">="):
                symbolic_sizes[slot] = arith.max_(symbolic_sizes[slot], need)
            busy_until[slot] = request.last
        assignment[index] = slot
    offsets: list[Dim] = []
    total: Dim = 0
    for size in symbolic_sizes:
        offsets.append(total)
        total = total + size
    slot_sizes: list[Dim | None] = list(symbolic_sizes)
    for index in runtime_requests:
        assignment[index] = len(slot_sizes)
        slot_sizes.append(None)
    return MemoryPlan(
        slot_of=tuple(assignment[i] for i in range(len(requests))),
        slot_sizes=tuple(slot_sizes),
        offsets=tuple(offsets),
        symbolic_bytes=total,
    )
