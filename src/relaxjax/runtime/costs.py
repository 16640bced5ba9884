"""What one launch of a kernel or library call costs, for the profiler: bytes moved and
floating-point operations, from the kernel and its symbol values.

- **Bytes moved** are the sizes of the buffers it is given, each read or written once
  (inputs and outputs): the least traffic the launch needs, so GB/s computed from it
  is a lower bound of the memory bandwidth used.
- **FLOPs** count every floating-point arithmetic operation (``+ - * /``, ``min``,
  ``max``, a negation) and every math intrinsic (``exp``, ``sqrt``, ...) as one, times
  the iterations of the loops around it. Iterations are counted from the kernel's
  loops with the launch's symbol values: a loop whose extent depends on an outer
  loop's variable (a tail tile ``min(64, m - j0 * 64)``, a triangle ``range(i + 1)``)
  is summed exactly when short, else taken at the outer loop's middle iteration (exact
  for extents linear in it). Of an ``if``/``else`` the costlier branch counts, a guard
  counts as taken. A kernel whose loops cannot be evaluated has no FLOP count (None).

Library calls (``call_extern``) are costed by :data:`LIBRARY_FLOPS` (BLAS matrix
products: ``2 * M * N * K``); others have bytes only.

>>> from relaxjax import arith
>>> from relaxjax.tir import te
>>> n = arith.sym("n")
>>> a, b = te.placeholder((n, 64), "float32", "a"), te.placeholder((64, 32), "float32", "b")
>>> k = te.reduce_axis(64, "k")
>>> c = te.compute((n, 32), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), name="c")
>>> func = te.create_prim_func([a, b, c], name="mm")
>>> kernel_cost(func, {"n": 10})
Cost(nbytes=12032, flops=40960)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from relaxjax import arith, dtypes
from relaxjax.passes.dispatch_cuda import cublas_symbol
from relaxjax.tir.expr import BinOp, Call, UnaryOp
from relaxjax.tir.function import PrimFunc
from relaxjax.tir.functor import StmtVisitor
from relaxjax.tir.stmt import (
    Allocate,
    Block,
    BlockRealize,
    BufferStore,
    For,
    IfThenElse,
    LetStmt,
    SeqStmt,
    Stmt,
)

__all__ = ["LIBRARY_FLOPS", "Cost", "kernel_cost", "library_cost"]

#: A loop whose body's cost depends on its variable is summed iteration by iteration
#: up to this many iterations, else evaluated at its middle iteration.
EXACT_ITERATIONS = 64

_FLOAT_OPS = ("+", "-", "*", "/", "min", "max")


@dataclass(frozen=True, slots=True)
class Cost:
    """Bytes moved and floating-point operations of one launch (``flops`` None when
    not known)."""

    nbytes: int
    flops: int | None


class _Flops(StmtVisitor):
    """Float operations of one expression tree (a store's value); a subexpression that
    occurs several times counts once, as the compiled code computes it once."""

    def __init__(self) -> None:
        self.count = 0
        self._seen: set[object] = set()

    def _first(self, expr: object) -> bool:
        if expr in self._seen:
            return False
        self._seen.add(expr)
        return True

    def visit_BinOp(self, expr: BinOp) -> None:
        if not self._first(expr):
            return
        if expr.op in _FLOAT_OPS and dtypes.is_floating(expr.dtype):
            self.count += 1
        super().visit_BinOp(expr)

    def visit_UnaryOp(self, expr: UnaryOp) -> None:
        if not self._first(expr):
            return
        if dtypes.is_floating(expr.dtype):
            self.count += 1
        super().visit_UnaryOp(expr)

    def visit_Call(self, expr: Call) -> None:
        if not self._first(expr):
            return
        if dtypes.is_floating(expr.dtype):
            self.count += 1
        super().visit_Call(expr)


def _store_flops(store: BufferStore) -> int:
    counter = _Flops()
    counter.visit_expr(store.value)
    return counter.count


class _Iterations:
    """The FLOPs of a statement with concrete symbol values (see the module doc)."""

    def __init__(self) -> None:
        self._store_cache: dict[int, int] = {}
        self._depends: dict[tuple[int, str], bool] = {}

    def count(self, stmt: Stmt, env: dict[str, int]) -> int:
        if isinstance(stmt, BufferStore):
            key = id(stmt)
            if key not in self._store_cache:
                self._store_cache[key] = _store_flops(stmt)
            return self._store_cache[key]
        if isinstance(stmt, SeqStmt):
            return sum(self.count(s, env) for s in stmt.stmts)
        if isinstance(stmt, For):
            return self._loop(stmt, env)
        if isinstance(stmt, IfThenElse):
            other = 0 if stmt.else_case is None else self.count(stmt.else_case, env)
            return max(self.count(stmt.then_case, env), other)
        if isinstance(stmt, BlockRealize):
            inner = dict(env)
            for iv, value in zip(stmt.block.iter_vars, stmt.iter_values):
                inner[iv.var.name] = _value(value, env)
            return self.count(stmt.block, inner)
        if isinstance(stmt, Block):
            return self.count(stmt.body, env)
        if isinstance(stmt, LetStmt) and isinstance(stmt.var, arith.Sym):
            return self.count(stmt.body, {**env, stmt.var.name: _value(stmt.value, env)})
        if isinstance(stmt, (Allocate, LetStmt)):
            return self.count(stmt.body, env)
        return 0

    def _loop(self, loop: For, env: dict[str, int]) -> int:
        extent = arith.evaluate(loop.extent, env)
        if extent <= 0:
            return 0
        start = arith.evaluate(loop.start, env)
        name = loop.var.name
        if not self._body_depends(loop):
            return extent * self.count(loop.body, {**env, name: start})
        if extent <= EXACT_ITERATIONS:
            return sum(self.count(loop.body, {**env, name: start + i}) for i in range(extent))
        return extent * self.count(loop.body, {**env, name: start + extent // 2})

    def _body_depends(self, loop: For) -> bool:
        """Whether a loop nested in ``loop`` has bounds that use ``loop``'s variable."""
        key = (id(loop), loop.var.name)
        if key not in self._depends:
            finder = _BoundsUse(loop.var.name)
            finder.visit_stmt(loop.body)
            self._depends[key] = finder.found
        return self._depends[key]


class _BoundsUse(StmtVisitor):
    def __init__(self, name: str) -> None:
        self.name = name
        self.found = False

    def visit_For(self, stmt: For) -> None:
        for dim in (stmt.start, stmt.extent):
            if not isinstance(dim, int):
                self.found = self.found or any(s.name == self.name for s in arith.free_symbols(dim))
        super().visit_For(stmt)


def _value(value: object, env: Mapping[str, int]) -> int:
    """A block binding's value (an index expression) with the loop variables' values."""
    dim = getattr(value, "value", value)
    return arith.evaluate(dim, env)  # type: ignore[arg-type]


def _buffer_bytes(shapes: Sequence[Sequence[int]], dtype_names: Sequence[str]) -> int:
    return sum(
        math.prod(shape, start=1) * dtypes.itemsize(dtype)
        for shape, dtype in zip(shapes, dtype_names)
    )


def kernel_cost(func: PrimFunc, values: Mapping[str, int]) -> Cost:
    """Bytes moved and FLOPs of one launch of ``func`` with its symbols' ``values``."""
    env = dict(values)
    shapes = [[arith.evaluate(d, env) for d in p.shape] for p in func.params]
    nbytes = _buffer_bytes(shapes, [p.dtype for p in func.params])
    try:
        flops: int | None = _Iterations().count(func.body, env)
    except (KeyError, TypeError, ValueError, ArithmeticError):
        flops = None  # loops whose bounds these values do not determine
    return Cost(nbytes, flops)


def _matmul_flops(shapes: Sequence[Sequence[int]]) -> int:
    a, _, out = shapes[0], shapes[1], shapes[-1]
    return 2 * math.prod(out, start=1) * (a[-1] if a else 1)


def _cublas_flops(transpose_a: bool) -> Callable[[Sequence[Sequence[int]]], int]:
    """FLOPs of a cuBLAS matmul whose left operand may be stored transposed."""

    def flops(shapes: Sequence[Sequence[int]]) -> int:
        a, out = shapes[0], shapes[-1]
        k = a[-2] if transpose_a and len(a) > 1 else (a[-1] if a else 1)
        return 2 * math.prod(out, start=1) * k

    return flops


#: Library symbol -> FLOPs of one call from the buffers' shapes (inputs, then outputs).
LIBRARY_FLOPS: dict[str, Callable[[Sequence[Sequence[int]]], int]] = {
    "numpy.matmul": _matmul_flops,
    **{cublas_symbol(ta, tb): _cublas_flops(ta) for ta in (False, True) for tb in (False, True)},
}


def library_cost(symbol: str, shapes: Sequence[Sequence[int]], dtype_names: Sequence[str]) -> Cost:
    """Bytes moved and FLOPs (where :data:`LIBRARY_FLOPS` knows them) of a library call on
    buffers of ``shapes``."""
    rule = LIBRARY_FLOPS.get(symbol)
    return Cost(_buffer_bytes(shapes, dtype_names), None if rule is None else rule(shapes))
