"""Generated Python source: the executable's hot path is one straight-line function.

Everything that can be decided when the executable is built (which argument binds
which symbol, which checks to run, where each temporary lives, which kernel is
called with what) is decided once; what is left is written as Python source and
compiled. A call then runs a handful of comparisons, allocations and native
launches, with no IR walks and no dictionary lookups.

:class:`SourceWriter` collects the lines and the objects they refer to by name.
"""

from __future__ import annotations

import itertools
import keyword
from collections.abc import Callable, Sequence

__all__ = ["SourceWriter"]


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
        """Compile the function; its ``__source__`` attribute holds the text."""
        text = self.source(name, params)
        code = compile(text, f"<relaxjax executable {name}>", "exec")
        exec(code, self.namespace)
        function = self.namespace[name]
        function.__source__ = text
        return function
