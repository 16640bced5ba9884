"""The trace in progress: the builder recording bindings and the symbols in scope.

Tracing is dynamically scoped, like jax's interpreters: :func:`tracing` pushes a
:class:`TraceState` for the duration of one function's trace, and the op
wrappers find it with :func:`current`. A jitted function called inside another
is traced on its own (its state on top of the caller's) and becomes a graph
function of the caller's module (:mod:`relaxjax.trace.call`); one jitted with
``inline=True`` runs on the caller's state instead.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from relaxjax import arith
from relaxjax.ir import BlockBuilder

__all__ = ["TRACE_STACK", "TraceState", "current", "tracing"]


class TraceState:
    """One function being traced.

    ``builder`` records the bindings; ``symbols`` maps every symbol name defined
    so far (by the parameters and by match_casts) to its symbol, so that a name
    means one symbol throughout the function; ``func_name`` names errors;
    ``internal`` holds the names of symbols the tracer made up (for dims that
    deduction could not name), which the caller never sees; ``callees`` maps the
    identity of each trace whose graph function was added to the module (a
    ``trace.function.Traced``) to that trace and the function's name there; ``sizes``
    remembers the symbol each data-dependent count was bound to (by op, operands and
    attributes), so that ``x[m]`` and ``y[m]`` get the same length.
    """

    __slots__ = (
        "builder",
        "symbols",
        "func_name",
        "active",
        "internal",
        "callees",
        "sizes",
        "_fresh",
    )

    def __init__(self, builder: BlockBuilder, func_name: str) -> None:
        self.builder = builder
        self.func_name = func_name
        self.symbols: dict[str, arith.Sym] = {}
        self.active = True
        self.internal: set[str] = set()
        self.callees: dict[int, tuple[object, str]] = {}
        self.sizes: dict[tuple, arith.Sym] = {}
        self._fresh: dict[str, int] = {}

    def lift(self, tracer: object) -> object | None:
        """The graph value standing, in this trace, for a tracer of an enclosing trace, or
        None when it cannot be used here. A plain function trace uses only its own values
        (its callers pass the rest as arguments); a control-flow region
        (:mod:`relaxjax.trace.region`) receives what it closes over as extra parameters."""
        del tracer
        return None

    def lift_symbol(self, symbol: arith.Sym) -> bool:
        """Make a symbol of an enclosing trace usable here; False when it cannot be."""
        del symbol
        return False

    def fresh_symbol_name(self, hint: str, internal: bool = True) -> str:
        """A symbol name not used yet in this function, derived from ``hint``
        (``_d0, _d1, ...``). An ``internal`` symbol is hidden from the caller; the
        sizes of data-dependent results (``k0, k1, ...``) are not."""
        while True:
            count = self._fresh.get(hint, 0)
            self._fresh[hint] = count + 1
            name = f"{hint}{count}"
            if name not in self.symbols:
                if internal:
                    self.internal.add(name)
                return name


#: The traces in progress, innermost last (empty outside any trace).
TRACE_STACK: list[TraceState] = []
_STACK = TRACE_STACK


def current() -> TraceState | None:
    """The trace in progress, or None outside any trace (eager evaluation)."""
    return _STACK[-1] if _STACK else None


@contextmanager
def tracing(state: TraceState) -> Iterator[TraceState]:
    """Make ``state`` the trace in progress for the duration of the block."""
    _STACK.append(state)
    try:
        yield state
    finally:
        _STACK.pop()
        state.active = False
