"""Handles to loops and blocks of a schedule.

A handle names a loop (by its variable) or a block (by its name) of one
:class:`~relaxjax.schedule.Schedule`. It stays valid across steps: every use resolves
it against the schedule's current kernel, and a handle whose loop or block a step
removed raises :class:`~relaxjax.errors.ScheduleError` saying which step removed it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class LoopRV:
    """A handle to the loop whose variable is ``name`` in schedule ``schedule_id``."""

    name: str
    schedule_id: int

    def __repr__(self) -> str:
        return f"LoopRV({self.name})"


@dataclass(frozen=True, slots=True)
class BlockRV:
    """A handle to the block called ``name`` in schedule ``schedule_id``."""

    name: str
    schedule_id: int

    def __repr__(self) -> str:
        return f"BlockRV({self.name!r})"


Handle = LoopRV | BlockRV
