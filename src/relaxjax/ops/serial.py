"""Helpers for kernels written as plain statements: serial scans with local state.

The data-dependent ops (``nonzero``, ``unique``) walk their input in order and keep a
running position in a one-element local buffer, which ``te.compute`` cannot express.
These helpers keep such kernels short::

    state = Scalars({"pos": "int64"})
    scan = loop_nest(x.shape, "i", lambda i: when(ne(x[i], 0), state.add("pos", 1)))
    kernel = PrimFunc("scan", (x, out), state.allocate(seq(state.set("pos", 0), scan, ...)))

The interpreter, the LLVM backend and the schedule rules (which leave such kernels
unscheduled: correct, serial) all accept them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from relaxjax import arith
from relaxjax.arith import Dim
from relaxjax.tir import Allocate, Buffer, BufferStore, For, IfThenElse, LetStmt, PrimExpr, Stmt
from relaxjax.tir import seq as tir_seq
from relaxjax.tir.expr import as_expr

__all__ = ["Scalars", "loop_nest", "let_index", "seq", "when"]


class Scalars:
    """Named one-element local buffers (``state["pos"]`` is the buffer, ``state.load("pos")``
    its value), allocated around a kernel body by :meth:`allocate` (those used)."""

    def __init__(self, names: dict[str, str]) -> None:
        self.buffers = {n: Buffer(n, (1,), dtype, scope="local") for n, dtype in names.items()}
        self._used: set[str] = set()

    def __getitem__(self, name: str) -> Buffer:
        self._used.add(name)
        return self.buffers[name]

    def load(self, name: str) -> PrimExpr:
        """The current value of ``name``."""
        return self[name][0]

    def set(self, name: str, value: object) -> Stmt:
        """``name = value``."""
        buffer = self[name]
        return BufferStore(buffer, as_expr(value, buffer.dtype), (0,))

    def add(self, name: str, value: object) -> Stmt:
        """``name += value``."""
        buffer = self[name]
        return BufferStore(buffer, buffer[0] + as_expr(value, buffer.dtype), (0,))

    def allocate(self, body: Stmt) -> Stmt:
        """``body`` inside the allocation of every scalar it uses."""
        for name, buffer in reversed(list(self.buffers.items())):
            if name in self._used:
                body = Allocate(buffer, body)
        return body


def seq(*stmts: Stmt | None) -> Stmt:
    """The statements in order (None entries skipped)."""
    return tir_seq(*(s for s in stmts if s is not None))


def when(condition: PrimExpr, then: Stmt, otherwise: Stmt | None = None) -> Stmt:
    """``if condition: then else: otherwise``."""
    return IfThenElse(condition, then, otherwise)


def loop_nest(
    shape: Sequence[Dim], prefix: str, body: Callable[[tuple[arith.Sym, ...]], Stmt]
) -> Stmt:
    """Serial loops over ``shape`` in row-major order, variables ``<prefix>0, ...``."""
    loops = tuple(arith.sym(f"{prefix}{axis}") for axis in range(len(shape)))
    stmt = body(loops)
    for var, extent in reversed(list(zip(loops, shape))):
        stmt = For(var, 0, extent, "serial", stmt)
    return stmt


def let_index(name: str, value: PrimExpr, body: Callable[[arith.Sym], Stmt]) -> Stmt:
    """``body(v)`` with the index ``v`` bound to the int64 ``value`` (usable in index math)."""
    var = arith.sym(name, lower=None)
    return LetStmt(var, as_expr(value, "int64"), body(var))
