"""Vector partial results for scalar reduction loops, whatever their trip count.

After a rule has placed a row's statistics in local scalars (a softmax's running
max, a norm's sum), each is accumulated by a serial loop that no vectoriser may
widen (float addition is not associative). ``partial_reductions`` rewrites every
such innermost loop into ``width`` independent partial results kept in a small
local buffer — a whole number of vectors — then the remainder, then the combination::

    for k in range(n):                          part[32] = 0                      (vectorised)
        acc[0] = acc[0] + f(k)        ->        for k_o in range(n // 32):
                                                    for k_v in vectorized(32):
                                                        part[k_v] = part[k_v] + f(k_o * 32 + k_v)
                                                for k in range(n // 32 * 32, n):  # the tail
                                                    acc[0] = acc[0] + f(k)
                                                for k_v in range(32):
                                                    acc[0] = acc[0] + part[k_v]

It applies to a serial loop whose whole body is ``acc[idx] = acc[idx] op f(k)``
with ``op`` one of ``+ * max min``, ``idx`` free of ``k`` and ``f`` not reading
``acc``; ``n`` may be symbolic (``0`` and ``1`` included: the vector loop then runs
no iteration). ``max`` and ``min`` give exactly the serial result (they propagate
NaN and order ``-0 < +0`` whatever the grouping); ``+`` and ``*`` group the terms
differently, as any vectorised or threaded reduction does (a difference in the last
bits).
"""

from __future__ import annotations

import math

import numpy as np

from relaxjax import arith, dtypes
from relaxjax.tir.buffer import Buffer
from relaxjax.tir.expr import BinOp, BufferLoad, FloatImm, IntImm, PrimExpr
from relaxjax.tir.function import PrimFunc
from relaxjax.tir.functor import StmtMutator, StmtVisitor, substitute
from relaxjax.tir.stmt import Allocate, BufferStore, For, Stmt, seq

__all__ = ["partial_reductions"]

_OPS = ("+", "*", "max", "min")


def identity(op: str, dtype: str) -> PrimExpr:
    """The value ``x op identity == x`` for every ``x`` of ``dtype``."""
    if dtypes.is_floating(dtype):
        value = {"+": 0.0, "*": 1.0, "max": -math.inf, "min": math.inf}[op]
        return FloatImm(value, dtype)
    info = np.iinfo(dtypes.to_numpy(dtype))
    value = {"+": 0, "*": 1, "max": int(info.min), "min": int(info.max)}[op]
    return IntImm(value, dtype)


class _Reads(StmtVisitor):
    def __init__(self, buffer: Buffer):
        self.buffer, self.found = buffer, False

    def visit_BufferLoad(self, expr: BufferLoad) -> None:
        self.found = self.found or expr.buffer == self.buffer
        super().visit_BufferLoad(expr)


def _reads(expr: PrimExpr, buffer: Buffer) -> bool:
    finder = _Reads(buffer)
    finder.visit_expr(expr)
    return finder.found


def _uses(index: object, var: arith.Sym) -> bool:
    if isinstance(index, PrimExpr):
        return True  # a data-dependent index: not provably invariant
    return not isinstance(index, int) and var in arith.free_symbols(index)


def _update(loop: For) -> tuple[BufferStore, str, PrimExpr] | None:
    """``(store, op, f)`` when the loop's body is ``acc[idx] = acc[idx] op f``."""
    store = loop.body
    if loop.kind != "serial" or not isinstance(store, BufferStore):
        return None
    value = store.value
    if not isinstance(value, BinOp) or value.op not in _OPS:
        return None
    acc = value.a
    if not (isinstance(acc, BufferLoad) and acc.buffer == store.buffer):
        return None
    if tuple(acc.indices) != tuple(store.indices):
        return None
    if any(_uses(i, loop.var) for i in store.indices) or _reads(value.b, store.buffer):
        return None
    dtype = store.buffer.dtype
    if not (dtypes.is_floating(dtype) or dtypes.is_integer(dtype)) or dtype == "bool":
        return None
    return store, value.op, value.b


class _Rewrite(StmtMutator):
    def __init__(self, lanes_of, names: set[str]):
        self.lanes_of, self.names = lanes_of, names

    def _fresh(self, base: str) -> str:
        name, count = base, 0
        while name in self.names:
            count += 1
            name = f"{base}_{count}"
        self.names.add(name)
        return name

    def visit_For(self, stmt: For) -> Stmt:
        node = super().visit_For(stmt)
        if not isinstance(node, For):
            return node
        found = _update(node)
        if found is None:
            return node
        store, op, term = found
        width = 4 * self.lanes_of(store.buffer.dtype)
        if width <= 1 or (isinstance(node.extent, int) and node.extent < 2 * width):
            return node  # a short constant loop: the partials would not pay off
        return self._partials(node, store, op, term, width)

    def _partials(self, loop: For, store: BufferStore, op: str, term: PrimExpr, width: int):
        dtype = store.buffer.dtype
        part = Buffer(self._fresh(f"{store.buffer.name}_part"), (width,), dtype, scope="local")
        lanes = [arith.sym(self._fresh(f"{loop.var.name}_v")) for _ in range(3)]
        outer = arith.sym(self._fresh(f"{loop.var.name}_o"))
        full = loop.extent // width
        acc = store.buffer[tuple(store.indices)]

        def combine(a: PrimExpr, b: PrimExpr) -> PrimExpr:
            return BinOp(op, a, b)

        lane = lanes[0]
        init = For(lane, 0, width, "vectorized", BufferStore(part, identity(op, dtype), (lane,)))
        lane = lanes[1]
        at = {loop.var: loop.start + outer * width + lane}
        step = BufferStore(part, combine(part[lane], substitute(term, at)), (lane,))
        body = For(outer, 0, full, "serial", For(lane, 0, width, "vectorized", step))
        lane = lanes[2]
        rest = loop.extent - full * width
        tail = None
        if not (isinstance(rest, int) and rest == 0):
            tail = For(loop.var, loop.start + full * width, rest, "serial", loop.body)
        final = BufferStore(store.buffer, combine(acc, part[lane]), store.indices)
        gather = For(lane, 0, width, "serial", final)
        return Allocate(part, seq(*(s for s in (init, body, tail, gather) if s is not None)))


class _Names(StmtVisitor):
    def __init__(self):
        self.names: set[str] = set()

    def visit_For(self, stmt: For) -> None:
        self.names.add(stmt.var.name)
        super().visit_For(stmt)

    def visit_buffer(self, buffer: Buffer) -> None:
        self.names.add(buffer.name)

    def visit_buffer_def(self, buffer: Buffer) -> None:
        self.names.add(buffer.name)


def partial_reductions(func: PrimFunc, lanes_of) -> PrimFunc:
    """``func`` with every scalar reduction loop split into vector partial results (see
    the module doc); ``lanes_of(dtype)`` is the vector width in elements."""
    finder = _Names()
    finder.visit_stmt(func.body)
    names = finder.names | {p.name for p in func.params} | {s.name for s in func.symbols()}
    body = _Rewrite(lanes_of, names).visit_stmt(func.body)
    return func if body is func.body else func.with_body(body)
