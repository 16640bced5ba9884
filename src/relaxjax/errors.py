"""Every exception type relaxjax raises, in one place.

Each error carries its message (expected vs given), optionally the user's source
location captured at trace time and the IR nodes concerned. Rendering is separate
from raising: ``str(err)`` gives the message followed by the location.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SourceLocation:
    """Where in the user's program something was traced."""

    filename: str
    lineno: int
    line: str = ""

    def __str__(self) -> str:
        text = f"{self.filename}:{self.lineno}"
        return f"{text}: {self.line.strip()}" if self.line else text


class RelaxError(Exception):
    """Base of all relaxjax errors."""

    def __init__(self, message: str, *, location: SourceLocation | None = None, nodes=()):
        super().__init__(message)
        self.message = message
        self.location = location
        self.nodes = tuple(nodes)

    def __str__(self) -> str:
        if self.location is None:
            return self.message
        return f"{self.message}\n  at {self.location}"


class TraceError(RelaxError):
    """The user's function cannot be traced (e.g. an unsupported Python construct)."""


class ShapeError(RelaxError, ValueError):
    """A shape is invalid: at trace time for all symbol values, or at run time for given ones."""


class InconclusiveShapeError(TraceError):
    """A symbolic comparison cannot be decided for every value of its symbols."""


class ScheduleError(RelaxError):
    """A schedule primitive was refused because it would change the program's meaning."""


class LoweringError(RelaxError):
    """A program cannot be lowered or compiled for the requested target."""


class VerifyError(RelaxError):
    """An IR program is not well formed."""


class DeviceError(RelaxError, RuntimeError):
    """A device cannot run the program: no GPU or driver (``target="cuda"`` without a GPU),
    or the driver reported an error. A ``RuntimeError``, like the driver's own errors.

    Compiling (``lower()``, ``ptx()``) never needs a device; only running does.
    """
