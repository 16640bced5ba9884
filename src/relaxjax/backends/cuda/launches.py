"""How a GPU kernel (a PrimFunc with thread bindings) becomes kernel launches.

A PrimFunc's body is a sequence of loop nests. On a GPU, threads of different blocks
cannot wait for each other inside one launch, so each top-level nest is a launch of
its own (as TVM's host/device split does), run in order on one stream::

    root block (alloc_buffers: T (n, 64) global, S (64,) shared)
      for bx in thread_binding(n, "blockIdx.x"):          -> launch 0: grid (n, 1, 1)
        for tx in thread_binding(64, "threadIdx.x"): ...               block (64, 1, 1)
      for bx in thread_binding(n // 2, "blockIdx.x"): ... -> launch 1

- Buffers allocated at the top (the root block's ``alloc_buffers`` and top-level
  ``Allocate``s) of scope ``global`` are *workspaces*: device memory the runtime
  allocates per call (size from the symbols) and passes like parameters, so every
  launch sees the values the previous ones wrote.
- ``shared`` buffers are per thread block: constant-size ones are static shared
  memory, symbolic ones share the launch's dynamic shared memory (sized at launch,
  each at a 16-byte aligned offset computed from the symbols).
- A launch's grid and block sizes are the extents of its ``thread_binding`` loops per
  tag (the largest when several loops bind one tag, each of them then guarded by
  ``tid < extent``), as dims over the kernel's symbols, evaluated at launch.
- Host code around the nests is taken apart too: a top-level ``if`` over the kernel's
  symbols (e.g. a schedule's variants, ``if m >= 8:``) gives each launch below it a
  *condition* the runtime evaluates before launching (:func:`host_value`), and a
  top-level ``let`` of an index value is substituted into its body.
- A nest without thread bindings runs on one thread (grid and block 1): correct, and
  meant for scalar epilogues; the GPU schedule rules bind every loop that matters.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping
from dataclasses import dataclass, replace

from ... import arith, dtypes
from ...arith import Dim
from ...errors import LoweringError
from ...tir.analysis import free_symbols, free_vars
from ...tir.buffer import Buffer
from ...tir.expr import BinOp, IndexExpr, IntImm, PrimExpr, UnaryOp
from ...tir.function import PrimFunc
from ...tir.functor import StmtVisitor, substitute
from ...tir.math import logical_and, logical_not
from ...tir.stmt import Allocate, BlockRealize, For, IfThenElse, LetStmt, SeqStmt, Stmt
from ..llvm.memory import allocated_elements
from .target import CudaTarget

__all__ = [
    "GRID_TAGS",
    "THREAD_TAGS",
    "KernelPlan",
    "LaunchPlan",
    "Workspace",
    "host_value",
    "plan_kernel",
]

GRID_TAGS = ("blockIdx.x", "blockIdx.y", "blockIdx.z")
THREAD_TAGS = ("threadIdx.x", "threadIdx.y", "threadIdx.z")
#: Dynamic shared buffers start at multiples of this many bytes (a 128-bit vector).
SHARED_ALIGNMENT = 16
_GRID_LIMITS = (2**31 - 1, 65535, 65535)


@dataclass(frozen=True, slots=True)
class Workspace:
    """A top-level ``global`` buffer: device memory of ``nbytes`` (a dim) per call."""

    buffer: Buffer
    nbytes: Dim


@dataclass(frozen=True, slots=True)
class LaunchPlan:
    """One kernel launch: the PTX entry, what it runs, its grid and block sizes (dims over
    the kernel's symbols), the shared buffers it allocates (static ones, and dynamic ones
    with their byte offsets) and its dynamic shared memory size."""

    entry: str
    body: Stmt
    extents: tuple[tuple[str, Dim], ...]
    local_buffers: tuple[Buffer, ...]
    dynamic_shared: tuple[tuple[Buffer, Dim], ...]
    dynamic_shared_bytes: Dim
    condition: PrimExpr | None = None

    @property
    def grid(self) -> tuple[Dim, Dim, Dim]:
        """Blocks per grid along x, y, z."""
        extents = dict(self.extents)
        return tuple(extents.get(tag, 1) for tag in GRID_TAGS)  # type: ignore[return-value]

    @property
    def block(self) -> tuple[Dim, Dim, Dim]:
        """Threads per block along x, y, z."""
        extents = dict(self.extents)
        return tuple(extents.get(tag, 1) for tag in THREAD_TAGS)  # type: ignore[return-value]

    def extent(self, tag: str) -> Dim:
        """The launch size along ``tag`` (1 when no loop binds it)."""
        return dict(self.extents).get(tag, 1)


@dataclass(frozen=True, slots=True)
class KernelPlan:
    """A PrimFunc as launches: the kernel, its workspaces, and its launches in order."""

    func: PrimFunc
    name: str
    workspaces: tuple[Workspace, ...]
    launches: tuple[LaunchPlan, ...]

    @property
    def symbol_names(self) -> tuple[str, ...]:
        """Names of ``func.symbols()``: the i64 parameters of every entry, in order."""
        return tuple(s.name for s in self.func.symbols())


def plan_kernel(func: PrimFunc, name: str, target: CudaTarget) -> KernelPlan:
    """Split ``func`` into launches (see the module doc).

    Raises:
        LoweringError: a thread extent depends on something other than the kernel's
            symbols, a constant block size exceeds the target's limit, or a top-level
            buffer of scope ``local`` has a symbolic size.
    """
    symbols = frozenset(s.name for s in func.symbols())
    top_buffers: list[Buffer] = []
    units: list[tuple[Stmt, PrimExpr | None]] = []
    _peel(func.body, top_buffers, units, None, symbols)
    workspaces = tuple(
        Workspace(b, allocated_elements(b) * dtypes.itemsize(b.dtype))
        for b in top_buffers
        if b.scope == "global"
    )
    per_launch = [b for b in top_buffers if b.scope != "global"]
    launches = []
    for index, (unit, condition) in enumerate(units):
        entry = f"relaxjax_{name}" if len(units) == 1 else f"relaxjax_{name}_{index}"
        plan = _plan_launch(entry, unit, per_launch, symbols, target, name)
        launches.append(replace(plan, condition=condition))
    return KernelPlan(func, name, workspaces, tuple(launches))


def _peel(
    stmt: Stmt,
    buffers: list[Buffer],
    units: list[tuple[Stmt, PrimExpr | None]],
    condition: PrimExpr | None,
    symbols: frozenset[str],
) -> None:
    """Collect the top-level buffers and the launch units (with their host conditions)."""
    if isinstance(stmt, BlockRealize) and _is_root(stmt):
        buffers.extend(stmt.block.alloc_buffers)
        _peel(stmt.block.body, buffers, units, condition, symbols)
    elif isinstance(stmt, Allocate) and stmt.buffer.scope == "global":
        buffers.append(stmt.buffer)
        _peel(stmt.body, buffers, units, condition, symbols)
    elif isinstance(stmt, SeqStmt):
        for part in stmt.stmts:
            _peel(part, buffers, units, condition, symbols)
    elif isinstance(stmt, IfThenElse) and _on_host(stmt.condition, symbols) and _launches(stmt):
        then = stmt.condition if condition is None else logical_and(condition, stmt.condition)
        _peel(stmt.then_case, buffers, units, then, symbols)
        if stmt.else_case is not None:
            negated = logical_not(stmt.condition)
            otherwise = negated if condition is None else logical_and(condition, negated)
            _peel(stmt.else_case, buffers, units, otherwise, symbols)
    elif (
        isinstance(stmt, LetStmt)
        and isinstance(stmt.var, arith.Sym)
        and isinstance(stmt.value, IndexExpr)
        and _launches(stmt)
    ):
        body = substitute(stmt.body, {stmt.var: stmt.value.index_dim})
        _peel(body, buffers, units, condition, symbols)
    else:
        units.append((stmt, condition))


def _launches(stmt: Stmt) -> bool:
    """Whether ``stmt`` holds thread-bound loops (launches of their own)."""
    finder = _ThreadLoops()
    finder.visit_stmt(stmt)
    return bool(finder.extents)


def _on_host(condition: PrimExpr, symbols: frozenset[str]) -> bool:
    """Whether the host can evaluate ``condition`` from the kernel's symbols."""
    if free_vars(condition) or not _host_expr(condition):
        return False
    return all(s.name in symbols for s in free_symbols(condition))


def _host_expr(expr: PrimExpr) -> bool:
    if isinstance(expr, (IntImm, IndexExpr)):
        return True
    if isinstance(expr, BinOp):
        return _host_expr(expr.a) and _host_expr(expr.b)
    if isinstance(expr, UnaryOp):
        return _host_expr(expr.a)
    return False


def host_value(expr: PrimExpr, env: Mapping[str, int]) -> int | bool:
    """The value of a host condition (integers, comparisons, and/or/not) for ``env``."""
    if isinstance(expr, IntImm):
        return expr.value
    if isinstance(expr, IndexExpr):
        return arith.evaluate(expr.index_dim, env)
    if isinstance(expr, UnaryOp):
        value = host_value(expr.a, env)
        return (not value) if expr.op == "not" else -value
    assert isinstance(expr, BinOp)
    return _HOST_OPS[expr.op](host_value(expr.a, env), host_value(expr.b, env))


_HOST_OPS = {
    "==": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
    "and": lambda a, b: bool(a) and bool(b),
    "or": lambda a, b: bool(a) or bool(b),
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "//": operator.floordiv,
    "%": operator.mod,
    "min": min,
    "max": max,
}


def _is_root(realize: BlockRealize) -> bool:
    predicate = realize.predicate
    trivially_true = isinstance(predicate, IntImm) and predicate.value == 1
    return not realize.block.iter_vars and trivially_true and realize.block.init is None


class _ThreadLoops(StmtVisitor):
    """The thread-bound loops of a statement and the shared buffers it allocates."""

    def __init__(self) -> None:
        self.extents: dict[str, list[Dim]] = {}
        self.shared: list[Buffer] = []
        self.loop_vars: list[str] = []

    def visit_For(self, stmt: For) -> None:
        if stmt.kind == "thread_binding":
            assert stmt.thread_tag is not None
            self.extents.setdefault(stmt.thread_tag, []).append(stmt.extent)
        self.visit_stmt(stmt.body)

    def visit_buffer_def(self, buffer: Buffer) -> None:
        if buffer.scope == "shared":
            self.shared.append(buffer)


def _plan_launch(
    entry: str,
    unit: Stmt,
    top_buffers: list[Buffer],
    symbols: frozenset[str],
    target: CudaTarget,
    kernel: str,
) -> LaunchPlan:
    finder = _ThreadLoops()
    finder.visit_stmt(unit)
    extents = []
    for tag in (*GRID_TAGS, *THREAD_TAGS):
        dims = finder.extents.get(tag)
        if not dims:
            continue
        for dim in dims:
            outside = sorted(s.name for s in arith.free_symbols(dim) if s.name not in symbols)
            if outside and not isinstance(dim, int):
                raise LoweringError(
                    f"kernel {kernel}: the extent {dim} of a loop bound to {tag} depends on "
                    f"{', '.join(outside)}, not only on the kernel's symbols; a launch size "
                    "must be known before the launch"
                )
        extent = dims[0]
        for dim in dims[1:]:
            if not arith.prove_equal(dim, extent):
                extent = arith.max_(extent, dim)
        extents.append((tag, extent))
    _check_block_size(kernel, entry, extents, target)
    shared = [b for b in top_buffers if b.scope == "shared"] + finder.shared
    dynamic = [b for b in shared if not isinstance(_nbytes(b), int)]
    offsets: list[tuple[Buffer, Dim]] = []
    total: Dim = 0
    for buffer in dynamic:
        offsets.append((buffer, total))
        total = total + (_nbytes(buffer) + SHARED_ALIGNMENT - 1) // SHARED_ALIGNMENT * (
            SHARED_ALIGNMENT
        )
    locals_ = tuple(b for b in top_buffers if b.scope != "shared")
    for buffer in locals_:
        if not isinstance(_nbytes(buffer), int):
            raise LoweringError(
                f"kernel {kernel}: the {buffer.scope} buffer {buffer.name} allocated at the top "
                f"of the kernel has the symbolic size {_nbytes(buffer)} bytes; a thread's "
                "buffers need a constant size on the GPU"
            )
    top_shared = tuple(b for b in top_buffers if b.scope == "shared")
    return LaunchPlan(
        entry,
        unit,
        tuple(extents),
        locals_ + top_shared,
        tuple(offsets),
        total,
    )


def _nbytes(buffer: Buffer) -> Dim:
    return allocated_elements(buffer) * dtypes.itemsize(buffer.dtype)


def _check_block_size(
    kernel: str, entry: str, extents: list[tuple[str, Dim]], target: CudaTarget
) -> None:
    threads: Dim = 1
    for tag, extent in extents:
        if tag in THREAD_TAGS:
            threads = threads * extent
    if isinstance(threads, int) and threads > target.max_threads_per_block:
        raise LoweringError(
            f"kernel {kernel} (entry {entry}): {threads} threads per block, over the limit of "
            f"{target.max_threads_per_block} of {target.arch}"
        )
    for tag, limit in zip(GRID_TAGS, _GRID_LIMITS):
        extent = dict(extents).get(tag, 1)
        if isinstance(extent, int) and extent > limit:
            raise LoweringError(
                f"kernel {kernel} (entry {entry}): {extent} blocks along {tag}, over the "
                f"limit of {limit}"
            )


def grid_limits() -> tuple[int, int, int]:
    """The largest grid along x, y, z (checked at launch for symbolic grids)."""
    return _GRID_LIMITS
