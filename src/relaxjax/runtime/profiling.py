"""``f.profile(*args)``: one call, timed kernel by kernel.

The profiler runs a *profiling build* of the executable: the same generated code, the
same compiled kernels and memory plan, with the clock read around every kernel launch
and library call (:mod:`relaxjax.runtime.recorder`). It is written once per executable,
on the first ``profile``, and runs the call once. The result is a :class:`Profile`: one
row per kernel or library function (its launches summed), costliest first:

- **calls**: launches in this call (a kernel shared by 12 identical layers: 12);
- **total ms** and **% of call**: time in its launches, and its share of the call's wall
  time (the whole call, argument checks included, as the caller sees it);
- **bytes moved**, **GB/s**: the sizes of the buffers it is given, each read or written
  once (:mod:`relaxjax.runtime.costs`): GB/s is a lower bound of the bandwidth used;
- **GFLOP/s**: floating-point operations counted from the kernel's loops (a library
  matrix product: ``2 * M * N * K``), where they apply;
- **schedule**: the default rule that scheduled the kernel; ``!`` marks a kernel that
  got the generic fallback rule or none, or that is not parallel or not vectorised,
  and its ``note`` says why (``schedule_note``, :mod:`relaxjax.schedule.rules.notes`).

A last row, ``(host)``, is the rest of the wall time: argument checks, memory
planning and the generated Python between launches. The rows add up to the wall time.
``print(profile)`` shows the table, notebooks render :meth:`Profile._repr_html_`, and
``profile.rows`` holds the figures (``profile["layer_norm"]`` one row)::

    >>> p = mlp.profile(x, w1, w2)                       # doctest: +SKIP
    >>> print(p)                                         # doctest: +SKIP
    mlp: 3.104 ms, one call: kernels 2.950 ms (95.0%), host 0.154 ms
      kernel / library call   calls  total ms  % call  bytes moved    GB/s  GFLOP/s  schedule
      numpy.matmul (library)      2     2.601   83.8%      9.4 MB     3.6    129.1
      gelu                        1     0.349   11.2%      8.4 MB    24.0      4.8  injective
      (host)                      1     0.154    5.0%
"""

from __future__ import annotations

import html
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from relaxjax.ir import Function
from relaxjax.runtime.calls import write_callee
from relaxjax.runtime.costs import Cost, kernel_cost, library_cost
from relaxjax.runtime.program import CalleeCode, KernelHandle, write_program
from relaxjax.runtime.recorder import LaunchSite, Recorder

__all__ = ["HOST", "Profile", "ProfileRow", "ProfilingBuild", "profile_call"]

#: The name of the row holding the wall time outside kernels and library calls.
HOST = "(host)"
_HOST_WHAT = "argument checks, memory, Python between launches"
_RULE_ATTR = "schedule_rule"
_NOTE_ATTR = "schedule_note"
_CLIFF_RULES = ("fallback", "none")


@dataclass(frozen=True, slots=True)
class ProfileRow:
    """One kernel or library function of a profiled call (see the module doc).

    ``kind`` is ``"kernel"``, ``"library"`` or ``"host"``; ``nbytes``/``flops`` are summed
    over its launches (None where they do not apply); ``rule`` and ``note`` are the
    kernel's schedule rule and the reason it is not parallel or not vectorised.
    """

    name: str
    kind: str
    calls: int
    total_ms: float
    percent: float
    nbytes: int | None = None
    flops: int | None = None
    rule: str | None = None
    note: str | None = None

    @property
    def gb_per_s(self) -> float | None:
        """Bytes moved per second, in GB/s (None without a byte count or a time)."""
        return _rate(self.nbytes, self.total_ms)

    @property
    def gflop_per_s(self) -> float | None:
        """Floating-point operations per second, in GFLOP/s (None where not counted)."""
        return _rate(self.flops, self.total_ms)

    @property
    def fallback(self) -> bool:
        """True for a kernel that got the generic fallback rule or none, or that carries
        a note (not parallel or not vectorised)."""
        return self.kind == "kernel" and (self.rule in _CLIFF_RULES or self.note is not None)

    def as_dict(self) -> dict[str, object]:
        """The row's figures by column name."""
        return {
            "name": self.name,
            "kind": self.kind,
            "calls": self.calls,
            "total_ms": self.total_ms,
            "percent": self.percent,
            "bytes": self.nbytes,
            "gb_per_s": self.gb_per_s,
            "gflop_per_s": self.gflop_per_s,
            "rule": self.rule,
            "fallback": self.fallback,
            "note": self.note,
        }


def _rate(amount: int | None, ms: float) -> float | None:
    if amount is None or ms <= 0:
        return None
    return amount / (ms * 1e6)


@dataclass(frozen=True, slots=True)
class Profile:
    """The per-kernel table of one call (see the module doc): ``rows`` costliest first,
    the ``(host)`` row last; ``wall_ms`` the call's wall time; ``outputs`` its results
    (flat, as the executable returns them) and ``result`` in the function's structure."""

    function: str
    rows: tuple[ProfileRow, ...]
    wall_ms: float
    outputs: tuple = field(default=(), repr=False)
    result: object = field(default=None, repr=False)

    @property
    def total_ms(self) -> float:
        """The wall time of the call (the rows add up to it)."""
        return self.wall_ms

    @property
    def kernel_ms(self) -> float:
        """Time in kernels and library calls."""
        return sum(r.total_ms for r in self.rows if r.kind != "host")

    @property
    def host_ms(self) -> float:
        """The rest of the wall time (see the module doc)."""
        return sum(r.total_ms for r in self.rows if r.kind == "host")

    @property
    def fallbacks(self) -> tuple[ProfileRow, ...]:
        """The kernels marked ``!`` (see :attr:`ProfileRow.fallback`)."""
        return tuple(r for r in self.rows if r.fallback)

    def __iter__(self):
        return iter(self.rows)

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, key: int | str) -> ProfileRow:
        if isinstance(key, int):
            return self.rows[key]
        for row in self.rows:
            if row.name == key:
                return row
        names = ", ".join(r.name for r in self.rows)
        raise KeyError(f"no kernel or library call {key!r} in the profile (rows: {names})")

    def as_dicts(self) -> list[dict[str, object]]:
        """Every row as :meth:`ProfileRow.as_dict` (e.g. for ``pandas.DataFrame``)."""
        return [row.as_dict() for row in self.rows]

    def with_result(self, result: object) -> Profile:
        """The same profile holding ``result`` (the outputs in the function's structure)."""
        return replace(self, result=result)

    # -- rendering -------------------------------------------------------------------

    def _headline(self) -> str:
        share = 100 * self.kernel_ms / self.wall_ms if self.wall_ms > 0 else 0.0
        return (
            f"{self.function}: {self.wall_ms:.3f} ms, one call: kernels {self.kernel_ms:.3f} ms "
            f"({share:.1f}%), host {self.host_ms:.3f} ms"
        )

    def _cells(self) -> list[list[str]]:
        return [_cells(row) for row in self.rows]

    def __str__(self) -> str:
        cells = [list(_COLUMNS), *self._cells()]
        widths = [max(len(line[i]) for line in cells) for i in range(len(_COLUMNS))]
        lines = [self._headline()]
        for line in cells:
            parts = [
                text.ljust(width) if i in _LEFT else text.rjust(width)
                for i, (text, width) in enumerate(zip(line, widths))
            ]
            lines.append("  " + "  ".join(parts).rstrip())
        notes = [row for row in self.rows if row.note]
        if notes:
            lines.append("! not parallel or not vectorised:")
            lines += [f"  {row.name}: {row.note}" for row in notes]
        return "\n".join(lines)

    def __repr__(self) -> str:
        return str(self)

    def _repr_html_(self) -> str:
        head = "".join(f"<th>{html.escape(c)}</th>" for c in _COLUMNS)
        body = []
        for row, cells in zip(self.rows, self._cells()):
            title = f' title="{html.escape(row.note)}"' if row.note else ""
            style = ' style="background:#fff3cd"' if row.fallback else ""
            tds = "".join(
                f'<td style="text-align:{"left" if i in _LEFT else "right"}">'
                f"{html.escape(text)}</td>"
                for i, text in enumerate(cells)
            )
            body.append(f"<tr{style}{title}>{tds}</tr>")
        notes = "".join(
            f"<li><code>{html.escape(r.name)}</code>: {html.escape(r.note)}</li>"
            for r in self.rows
            if r.note
        )
        notes_html = f"<p>! not parallel or not vectorised:</p><ul>{notes}</ul>" if notes else ""
        return (
            f"<div><p>{html.escape(self._headline())}</p><table><thead><tr>{head}</tr></thead>"
            f"<tbody>{''.join(body)}</tbody></table>{notes_html}</div>"
        )


_COLUMNS = (
    "kernel / library call",
    "calls",
    "total ms",
    "% call",
    "bytes moved",
    "GB/s",
    "GFLOP/s",
    "schedule",
)
_LEFT = (0, 7)


def _cells(row: ProfileRow) -> list[str]:
    name = f"{row.name} (library)" if row.kind == "library" else row.name
    if row.kind == "host":
        name = f"{HOST} {_HOST_WHAT}"
    gbs, gflops = row.gb_per_s, row.gflop_per_s
    schedule = (row.rule or "") + (" !" if row.fallback else "")
    return [
        name,
        str(row.calls),
        f"{row.total_ms:.3f}",
        f"{row.percent:.1f}%",
        "" if row.nbytes is None else _size(row.nbytes),
        "" if gbs is None else f"{gbs:.1f}",
        "" if gflops is None or not row.flops else f"{gflops:.1f}",
        schedule,
    ]


def _size(nbytes: int) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if nbytes >= scale:
            return f"{nbytes / scale:.1f} {unit}"
    return f"{nbytes} B"


# -- the profiling build and its run ----------------------------------------------------


@dataclass(frozen=True, slots=True)
class ProfilingBuild:
    """An executable's generated code written again with a :class:`Recorder`."""

    run: Callable[..., tuple]
    recorder: Recorder

    @classmethod
    def write(
        cls,
        function: Function,
        handles: Mapping[str, KernelHandle],
        callees: Sequence[CalleeCode],
    ) -> ProfilingBuild:
        """The profiling build of the executable of ``function`` (kernels ``handles``,
        called graph functions ``callees``, callees first as the executable has them)."""
        recorder = Recorder()
        codes: dict[str, CalleeCode] = {}
        for callee in callees:
            codes[callee.function.name] = write_callee(callee.function, handles, codes, recorder)
        return cls(write_program(function, handles, codes, recorder), recorder)


def profile_call(build: ProfilingBuild, name: str, args: Sequence[object]) -> Profile:
    """Run ``build`` once on ``args`` and tabulate its launches (see the module doc)."""
    build.recorder.take()
    clock = time.perf_counter_ns
    start = clock()
    outputs = build.run(*args)
    wall_ns = clock() - start
    records = build.recorder.take()
    return _tabulate(name, build.recorder.sites, records, wall_ns, outputs)


@dataclass(slots=True)
class _Sum:
    calls: int = 0
    ns: int = 0
    nbytes: int = 0
    flops: int | None = 0


def _tabulate(
    name: str,
    sites: Sequence[LaunchSite],
    records: Sequence[tuple[int, int, tuple]],
    wall_ns: int,
    outputs: tuple,
) -> Profile:
    sums: dict[int, _Sum] = {}
    costs: dict[tuple[int, tuple], Cost] = {}
    for site, ns, values in records:
        key = (site, values)
        if key not in costs:
            costs[key] = _cost(sites[site], values)
        cost = costs[key]
        total = sums.setdefault(site, _Sum())
        total.calls += 1
        total.ns += ns
        total.nbytes += cost.nbytes
        total.flops = (
            None if total.flops is None or cost.flops is None else total.flops + cost.flops
        )
    wall_ms = wall_ns / 1e6
    rows = [_row(sites[site], total, wall_ms) for site, total in sums.items()]
    rows.sort(key=lambda r: -r.total_ms)
    host_ms = max(wall_ms - sum(r.total_ms for r in rows), 0.0)
    rows.append(ProfileRow(HOST, "host", 1, host_ms, _percent(host_ms, wall_ms)))
    return Profile(name, tuple(rows), wall_ms, tuple(outputs))


def _cost(site: LaunchSite, values: tuple) -> Cost:
    if site.kind == "library":
        shapes = [tuple(int(d) for d in shape) for shape in values]
        return library_cost(site.name, shapes, site.dtypes)
    func = site.func
    if func is None:
        return Cost(0, None)
    symbols = {s.sym.name: int(v) for s, v in zip(func.symbol_sources(), values)}
    return kernel_cost(func, symbols)


def _percent(ms: float, wall_ms: float) -> float:
    return 100.0 * ms / wall_ms if wall_ms > 0 else 0.0


def _row(site: LaunchSite, total: _Sum, wall_ms: float) -> ProfileRow:
    ms = total.ns / 1e6
    attrs = dict(site.func.attrs) if site.func is not None else {}
    rule = attrs.get(_RULE_ATTR)
    note = attrs.get(_NOTE_ATTR)
    return ProfileRow(
        site.name,
        site.kind,
        total.calls,
        ms,
        _percent(ms, wall_ms),
        total.nbytes,
        total.flops,
        None if rule is None else str(rule),
        None if note is None else str(note),
    )
