"""Generated Python source: the executable's hot path is one straight-line function.

Everything that can be decided when the executable is built (which argument binds
which symbol, which checks to run, where each temporary lives, which kernel is
called with what) is decided once; what is left is written as Python source and
compiled. A call then runs a handful of comparisons, allocations and native
launches, with no IR walks and no dictionary lookups.

:class:`SourceWriter` collects the lines and the objects they refer to by name. The
text of a function depends only on what it does (its names are numbered in the order
they are written), so the compiled code of a text can be kept: within
:func:`known_code`, ``compile`` takes it from there instead of compiling the text
(how an executable loaded from the disk cache skips Python's compiler,
:mod:`relaxjax.runtime.artifact`).
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import keyword
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextvars import ContextVar
from types import CodeType

__all__ = ["SourceWriter", "known_code", "text_digest"]

_known: ContextVar[Mapping[str, CodeType]] = ContextVar("known_code", default={})  # noqa: B039


def text_digest(text: str) -> str:
    """The key of a generated text among :func:`known_code`'s: hex SHA-256."""
    return hashlib.sha256(text.encode()).hexdigest()


@contextlib.contextmanager
def known_code(codes: Mapping[str, CodeType]) -> Iterator[None]:
    """Within this context (of the current thread), :meth:`SourceWriter.compile` of a text
    whose :func:`text_digest` is in ``codes`` executes that code object instead of
    compiling the text. The code must be what ``compile`` made of that text."""
    token = _known.set(codes)
    try:
        yield
    finally:
        _known.reset(token)


class SourceWriter:
    """Lines of one generated function plus the namespace its names resolve in.

    >>> w = SourceWriter()
    >>> two = w.constant(2, "two")
    >>> w.line(f"return x * {two}")
    >>> w.compile("double", ["x"])(21)
    42
    """

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.namespace: dict[str, object] = {
            "__builtins__": {"min": min, "max": max, "int": int, "ValueError": ValueError}
        }
        self._counter = itertools.count()

    def fresh(self, hint: str) -> str:
        """A new local name starting with ``hint`` (never reused in this function)."""
        return f"{hint}{next(self._counter)}"

    def constant(self, value: object, hint: str) -> str:
        """A global name bound to ``value`` in the generated function's namespace."""
        name = f"_{hint}_{next(self._counter)}"
        self.namespace[name] = value
        return name

    def line(self, text: str, indent: int = 1) -> None:
        """Append one line of the function body at ``indent`` levels."""
        self.lines.append("    " * indent + text)

    def comment(self, text: str) -> None:
        """Append a comment line (the source is kept for debugging)."""
        self.line("# " + text.replace("\n", " "))

    def source(self, name: str, params: Sequence[str]) -> str:
        """The full source of ``def name(*params)``."""
        for param in (name, *params):
            if not param.isidentifier() or keyword.iskeyword(param):
                raise ValueError(f"generated code needs identifiers, got {param!r}")
        body = self.lines or ["    pass"]
        return f"def {name}({', '.join(params)}):\n" + "\n".join(body) + "\n"

    def compile(self, name: str, params: Sequence[str]) -> Callable:
        """Compile the function; its ``__source__`` attribute holds the text, its
        ``__compiled__`` the code object of the text (see :func:`known_code`)."""
        text = self.source(name, params)
        known = _known.get()
        code = known.get(text_digest(text)) if known else None
        if code is None:
            code = compile(text, f"<relaxjax executable {name}>", "exec")
        exec(code, self.namespace)
        function = self.namespace[name]
        function.__source__ = text
        function.__compiled__ = code
        return function
