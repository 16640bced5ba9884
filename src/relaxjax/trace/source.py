"""Finding the user's source line: the first frame outside the relaxjax package.

Every traced binding records where in the user's program it was made, and every
error raised while tracing names that line. Frames are classified once per code
object, so the lookup costs a few dictionary hits per binding.
"""

from __future__ import annotations

import linecache
import os
import sys
from types import CodeType, FrameType, TracebackType

from relaxjax.errors import SourceLocation

__all__ = ["user_location", "user_location_in_traceback", "is_internal_file"]

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_internal_code: dict[CodeType, bool] = {}


def is_internal_file(filename: str) -> bool:
    """True for files of the relaxjax package itself (not the user's code or tests)."""
    return os.path.abspath(filename).startswith(_PACKAGE_DIR) or filename.startswith("<frozen")


def _is_internal(code: CodeType) -> bool:
    internal = _internal_code.get(code)
    if internal is None:
        internal = is_internal_file(code.co_filename)
        _internal_code[code] = internal
    return internal


def _location(filename: str, lineno: int) -> SourceLocation:
    return SourceLocation(filename, lineno, linecache.getline(filename, lineno).strip())


def user_location(skip: int = 1) -> SourceLocation | None:
    """The innermost calling frame outside relaxjax, as a SourceLocation (None if none)."""
    frame: FrameType | None = sys._getframe(skip)
    while frame is not None and _is_internal(frame.f_code):
        frame = frame.f_back
    if frame is None:
        return None
    return _location(frame.f_code.co_filename, frame.f_lineno)


def user_location_in_traceback(tb: TracebackType | None) -> SourceLocation | None:
    """The innermost frame of ``tb`` outside relaxjax: where the user's code failed."""
    found: SourceLocation | None = None
    while tb is not None:
        if not _is_internal(tb.tb_frame.f_code):
            found = _location(tb.tb_frame.f_code.co_filename, tb.tb_lineno)
        tb = tb.tb_next
    return found
