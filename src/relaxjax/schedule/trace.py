"""The trace of a schedule: its steps, printable as Python and replayable.

Each step is an :class:`Instruction`: the primitive's name, its arguments (handles,
ints, strings, ``None``, lists of those) and the handles it returned. ``str(trace)``
is Python source in which handles are variables::

    b_C = sch.get_block("C")
    i, j, k = sch.get_loops(b_C)
    i_0, i_1 = sch.split(i, factors=[None, 32])
    sch.reorder(i_0, j, i_1)

Running it with ``sch`` bound to a fresh :class:`~relaxjax.schedule.Schedule` of the
same (or a structurally compatible) kernel replays the schedule; so does
``trace.apply(schedule)``.
"""

from __future__ import annotations

import html
import keyword
import re
from collections.abc import Mapping
from dataclasses import dataclass

from relaxjax import arith
from relaxjax.schedule.handles import BlockRV, Handle, LoopRV

ArgValue = object


@dataclass(frozen=True, slots=True)
class Instruction:
    """One call of a primitive: ``name(*args, **kwargs) -> outputs``.

    ``outputs`` is a handle, a tuple of handles, or None; ``kwargs`` are sorted
    ``(key, value)`` pairs.
    """

    name: str
    args: tuple[ArgValue, ...]
    kwargs: tuple[tuple[str, ArgValue], ...]
    outputs: object


def _handles_in(value: object) -> list[Handle]:
    if isinstance(value, (LoopRV, BlockRV)):
        return [value]
    if isinstance(value, (tuple, list)):
        return [h for item in value for h in _handles_in(item)]
    return []


class _Names:
    """Python variable names for the handles of a trace (unique, readable)."""

    def __init__(self):
        self.names: dict[Handle, str] = {}
        self.taken: set[str] = {"sch"}

    def define(self, handle: Handle) -> str:
        base = handle.name if isinstance(handle, LoopRV) else f"b_{handle.name}"
        base = re.sub(r"\W", "_", base)
        if not base.isidentifier() or keyword.iskeyword(base):
            base = "l" if isinstance(handle, LoopRV) else "b"
        name, k = base, 0
        while name in self.taken:
            k += 1
            name = f"{base}_{k}"
        self.taken.add(name)
        self.names[handle] = name
        return name

    def use(self, handle: Handle) -> str:
        name = self.names.get(handle)
        if name is None:
            raise ValueError(f"the trace uses {handle!r} before defining it")
        return name


def _value_text(value: object, names: _Names) -> str:
    if isinstance(value, (LoopRV, BlockRV)):
        return names.use(value)
    if isinstance(value, list):
        return "[" + ", ".join(_value_text(v, names) for v in value) + "]"
    if isinstance(value, tuple):
        inner = ", ".join(_value_text(v, names) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if isinstance(value, arith.Expr):
        return repr(str(value))
    if isinstance(value, (bool, int, float, str)) or value is None:
        return repr(value)
    raise TypeError(f"cannot print {value!r} in a trace")


def _outputs_text(outputs: object, names: _Names) -> str:
    if isinstance(outputs, tuple):
        defined = [names.define(h) for h in outputs]
        if not defined:
            return "_ = "
        return f"({defined[0]},) = " if len(defined) == 1 else ", ".join(defined) + " = "
    if outputs is None:
        return ""
    return names.define(outputs) + " = "


class Trace:
    """The steps of a schedule, in order (see the module docstring)."""

    def __init__(self, instructions: tuple[Instruction, ...] = ()):
        self.instructions: tuple[Instruction, ...] = tuple(instructions)

    def append(self, instruction: Instruction) -> Trace:
        """A trace with one more step."""
        return Trace(self.instructions + (instruction,))

    def __len__(self) -> int:
        return len(self.instructions)

    def __iter__(self):
        return iter(self.instructions)

    def lines(self) -> list[str]:
        """One line of Python per step."""
        names = _Names()
        lines = []
        for inst in self.instructions:
            args = [_value_text(a, names) for a in inst.args]
            args += [f"{k}={_value_text(v, names)}" for k, v in inst.kwargs]
            call = f"sch.{inst.name}({', '.join(args)})"
            lines.append(_outputs_text(inst.outputs, names) + call)
        return lines

    def __str__(self) -> str:
        return "\n".join(self.lines())

    def __repr__(self) -> str:
        return str(self)

    def _repr_html_(self) -> str:
        body = html.escape(str(self))
        body = re.sub(r"sch\.(\w+)", r'sch.<b style="color:#0550ae">\1</b>', body)
        return f'<pre class="relaxjax-trace">{body}</pre>'

    def apply(self, schedule) -> object:
        """Replays the steps on ``schedule`` (a fresh Schedule of a compatible kernel);
        returns ``schedule``."""
        env: dict[Handle, object] = {}
        for inst in self.instructions:
            args = [_remap(a, env) for a in inst.args]
            kwargs = {k: _remap(v, env) for k, v in inst.kwargs}
            result = getattr(schedule, inst.name)(*args, **kwargs)
            _bind(inst.outputs, result, env, inst.name)
        return schedule


def _remap(value: object, env: Mapping[Handle, object]) -> object:
    if isinstance(value, (LoopRV, BlockRV)):
        return env[value]
    if isinstance(value, list):
        return [_remap(v, env) for v in value]
    if isinstance(value, tuple):
        return tuple(_remap(v, env) for v in value)
    return value


def _bind(recorded: object, result: object, env: dict, what: str) -> None:
    from relaxjax.errors import ScheduleError

    if isinstance(recorded, tuple):
        if not isinstance(result, tuple) or len(result) != len(recorded):
            count = len(result) if isinstance(result, tuple) else 1
            raise ScheduleError(
                f"replaying {what}: the trace expects {len(recorded)} handle(s), "
                f"the kernel gave {count}"
            )
        for old, new in zip(recorded, result):
            env[old] = new
    elif recorded is not None:
        env[recorded] = result
