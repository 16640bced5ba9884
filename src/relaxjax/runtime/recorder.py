"""What a profiling build of an executable writes down while it runs.

A profiling build (:mod:`relaxjax.runtime.profiling`) is the same generated code as the
executable's, with the clock read around each kernel launch and library call::

    t_start = clock()
    status = k_layer_norm(a0, r1, a1, a2, d0)
    record(3, t_start, (d0, ))          # site 3: kernel layer_norm, symbol values

Each launch site is registered once, at build time (:meth:`Recorder.kernel_site`,
:meth:`Recorder.library_site`); a run appends one ``(site, nanoseconds, values)``
record per launch, ``values`` being the kernel's symbol values or a library call's
buffer shapes, from which the cost of the launch is computed afterwards
(:mod:`relaxjax.runtime.costs`), off the clock. The launches of a called graph function
or loop body are recorded by its own (profiling) code; the call itself is not.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from relaxjax.tir.function import PrimFunc

__all__ = ["LaunchSite", "Recorder"]


@dataclass(frozen=True, slots=True)
class LaunchSite:
    """A kernel (``kind="kernel"``, with its ``func``) or a library function
    (``kind="library"``, with its buffers' ``dtypes``) that the program launches."""

    kind: str
    name: str
    func: PrimFunc | None = None
    dtypes: tuple[str, ...] = ()


class Recorder:
    """Launch sites, and the records of the runs (see the module doc)."""

    __slots__ = ("sites", "records", "_index", "clock")

    def __init__(self) -> None:
        self.sites: list[LaunchSite] = []
        self.records: list[tuple[int, int, tuple]] = []
        self._index: dict[tuple, int] = {}
        self.clock = time.perf_counter_ns

    def _site(self, site: LaunchSite) -> int:
        key = (site.kind, site.name, site.dtypes)
        if key not in self._index:
            self._index[key] = len(self.sites)
            self.sites.append(site)
        return self._index[key]

    def kernel_site(self, name: str, func: object) -> int:
        """The index of kernel ``name``'s site (registered on first use)."""
        return self._site(LaunchSite("kernel", name, func if isinstance(func, PrimFunc) else None))

    def library_site(self, name: str, buffer_dtypes: tuple[str, ...]) -> int:
        """The index of library function ``name``'s site (registered on first use)."""
        return self._site(LaunchSite("library", name, None, buffer_dtypes))

    def record(self, site: int, start: int, values: tuple) -> None:
        """One launch of ``site`` that began at ``start`` (the clock's nanoseconds) ended now."""
        self.records.append((site, self.clock() - start, values))

    def take(self) -> list[tuple[int, int, tuple]]:
        """The records so far, clearing them."""
        records, self.records = self.records, []
        return records
