"""The state of emitting one LLVM function from TIR, and per-node-type dispatch.

Every LLVM function that holds kernel code (a kernel's body, or the outlined body
of a parallel loop) has the same shape::

    void impl(T0* noalias buf0, ..., i64 sym0, ..., <value vars>..., i32* status)
    prologue:  allocas and heap allocations hoisted out of loops; if any allocation
               failed -> fail, else -> body
    body:      the lowered statements
    fail:      *status = 1
    exit:      free the heap allocations; ret void

Buffer pointers are ``noalias`` arguments, which is what lets LLVM vectorise loops
without run-time alias checks (the exported entry point loads the pointers from
its ``void**`` array and calls ``impl``; inlining keeps the facts as scoped
alias metadata).

Lowering functions are registered per TIR node class with :func:`lowers_expr` and
:func:`lowers_stmt`; :meth:`FunctionEmitter.expr` / :meth:`FunctionEmitter.stmt`
dispatch on the exact class.
"""

from __future__ import annotations

from collections import ChainMap
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TypeVar

from llvmlite import ir

from ...errors import LoweringError
from ...tir.buffer import Buffer
from ...tir.expr import PrimExpr, Var
from ...tir.function import PrimFunc
from ...tir.stmt import Stmt
from .dialect import declare
from .numeric import I1, I32, register_type, storage_type
from .target import Target

__all__ = [
    "CONTRACTED_DTYPES",
    "ExprLowering",
    "StmtLowering",
    "StorageLowering",
    "Captures",
    "FunctionEmitter",
    "KernelContext",
    "Scope",
    "lowers_expr",
    "lowers_stmt",
    "new_impl_function",
]

ExprLowering = Callable[["FunctionEmitter", PrimExpr], ir.Value]
StmtLowering = Callable[["FunctionEmitter", Stmt], None]
_EXPR_LOWERINGS: dict[type, ExprLowering] = {}
_STMT_LOWERINGS: dict[type, StmtLowering] = {}
_F = TypeVar("_F")

#: dtypes whose ``a * b + c`` may be contracted into one fused multiply-add.
CONTRACTED_DTYPES = frozenset({"float32", "float64"})


def lowers_expr(node_class: type) -> Callable[[_F], _F]:
    """Register the decorated function as the lowering of expressions of ``node_class``."""

    def register(function: _F) -> _F:
        _EXPR_LOWERINGS[node_class] = function  # type: ignore[assignment]
        return function

    return register


def lowers_stmt(node_class: type) -> Callable[[_F], _F]:
    """Register the decorated function as the lowering of statements of ``node_class``."""

    def register(function: _F) -> _F:
        _STMT_LOWERINGS[node_class] = function  # type: ignore[assignment]
        return function

    return register


StorageLowering = Callable[["FunctionEmitter", Buffer], "ir.Value | None"]


@dataclass
class KernelContext:
    """What all LLVM functions emitted for one PrimFunc share.

    A target other than the host CPU adds its own lowerings: ``loops`` (loop kind ->
    lowering, e.g. the GPU's ``thread_binding``), ``calls`` (intrinsic name -> lowering
    of a ``Call``, e.g. the GPU's barrier and warp shuffles; such a call is also
    emitted when it stands alone in an ``Evaluate``) and ``storage`` (where a local
    buffer lives; ``None`` from it means the default storage). ``target`` is the
    target description (:class:`~.target.Target`, or the GPU's), read for
    ``max_unroll``, ``max_stack_bytes`` and ``parallel_min_work``.
    """

    func: PrimFunc
    module: ir.Module
    target: Target
    symbol: str
    fast_math: bool
    contract: bool = True
    outlined: int = 0
    uses_parallel: bool = False
    loops: Mapping[str, StmtLowering] = field(default_factory=dict)
    calls: Mapping[str, ExprLowering] = field(default_factory=dict)
    storage: StorageLowering | None = None

    @property
    def flags(self) -> tuple[str, ...]:
        """Fast-math flags for float instructions (none: strict IEEE semantics)."""
        return ("fast",) if self.fast_math else ()

    def arithmetic_flags(self, dtype: str) -> tuple[str, ...]:
        """Flags for ``+ - *`` of ``dtype``: ``contract`` (a*b+c may fuse into one fma) for
        float32/float64 unless disabled, ``fast`` under fast-math, else none (strict IEEE).

        float16 and bfloat16 keep strict per-operation rounding: their fused form would
        round twice (through float32) and gains nothing on CPUs without half arithmetic.
        """
        if self.fast_math:
            return ("fast",)
        if self.contract and dtype in CONTRACTED_DTYPES:
            return ("contract",)
        return ()

    def fresh_name(self, kind: str) -> str:
        """A new function name derived from the kernel's symbol."""
        self.outlined += 1
        return f"{self.symbol}.{kind}{self.outlined}"


@dataclass
class Scope:
    """The values visible at a point: symbols (i64), value variables, buffer pointers."""

    symbols: ChainMap[str, ir.Value] = field(default_factory=ChainMap)
    vars: ChainMap[Var, ir.Value] = field(default_factory=ChainMap)
    buffers: ChainMap[Buffer, ir.Value] = field(default_factory=ChainMap)

    def child(self) -> Scope:
        """A nested scope: bindings added to it do not leak out."""
        return Scope(self.symbols.new_child(), self.vars.new_child(), self.buffers.new_child())


@dataclass(frozen=True, slots=True)
class Captures:
    """The values an impl function receives, in argument order (buffers, symbols, vars)."""

    buffers: tuple[Buffer, ...]
    symbols: tuple[str, ...]
    vars: tuple[Var, ...]

    @staticmethod
    def of_scope(scope: Scope) -> Captures:
        """Everything visible in ``scope`` (what an outlined loop body may use)."""
        return Captures(tuple(scope.buffers), tuple(scope.symbols), tuple(scope.vars))

    def types(self) -> list[ir.Type]:
        """The LLVM types of the captured values, in order (without the status pointer)."""
        pointers = [storage_type(b.dtype).as_pointer() for b in self.buffers]
        values = [register_type(v.dtype) for v in self.vars]
        return pointers + [ir.IntType(64)] * len(self.symbols) + values


def new_impl_function(
    context: KernelContext, name: str, captures: Captures, extra: Sequence[ir.Type] = ()
) -> FunctionEmitter:
    """Declare ``void name(captures..., extra..., i32* status)`` (internal) and an emitter
    for it; the ``extra`` arguments are left to the caller (``function.args``)."""
    arg_types = [*captures.types(), *extra, I32.as_pointer()]
    function = ir.Function(context.module, ir.FunctionType(ir.VoidType(), arg_types), name)
    function.linkage = "internal"
    scope = Scope()
    args = iter(function.args)
    for buffer, arg in zip(captures.buffers, args):
        arg.add_attribute("noalias")
        arg.name = f"buf.{buffer.name}"
        scope.buffers[buffer] = arg
    for symbol, arg in zip(captures.symbols, args):
        arg.name = f"sym.{symbol}"
        scope.symbols[symbol] = arg
    for var, arg in zip(captures.vars, args):
        arg.name = f"var.{var.name}"
        scope.vars[var] = arg
    status = function.args[-1]
    status.name = "status"
    return FunctionEmitter(context, function, scope, status)


class FunctionEmitter:
    """Emits TIR into one impl function (see the module docstring for its shape)."""

    def __init__(
        self, context: KernelContext, function: ir.Function, scope: Scope, status: ir.Value
    ) -> None:
        self.context = context
        self.function = function
        self.scope = scope
        self.entry_symbols = frozenset(scope.symbols)
        self.status = status
        self.prologue = ir.IRBuilder(function.append_basic_block("prologue"))
        self._body_start = function.append_basic_block("body")
        self.builder = ir.IRBuilder(self._body_start)
        self._prologue_checks: list[ir.Value] = []
        self._heap: list[ir.Value] = []

    @property
    def module(self) -> ir.Module:
        """The LLVM module being built."""
        return self.context.module

    @property
    def flags(self) -> tuple[str, ...]:
        """Fast-math flags for float instructions."""
        return self.context.flags

    def arithmetic_flags(self, dtype: str) -> tuple[str, ...]:
        """Flags for float ``+ - *`` of ``dtype`` (see :meth:`KernelContext.arithmetic_flags`)."""
        return self.context.arithmetic_flags(dtype)

    # dispatch ----------------------------------------------------------------------

    def expr(self, node: PrimExpr) -> ir.Value:
        """The register value of a TIR expression."""
        lowering = _EXPR_LOWERINGS.get(type(node))
        if lowering is None:
            raise LoweringError(f"no LLVM lowering for the TIR expression {type(node).__name__}")
        return lowering(self, node)

    def stmt(self, node: Stmt) -> None:
        """Emit a TIR statement at the builder's position."""
        lowering = _STMT_LOWERINGS.get(type(node))
        if lowering is None:
            raise LoweringError(f"no LLVM lowering for the TIR statement {type(node).__name__}")
        lowering(self, node)

    @contextmanager
    def nested_scope(self) -> Iterator[Scope]:
        """Run the ``with`` block in a child scope of the current one."""
        outer = self.scope
        self.scope = outer.child()
        try:
            yield self.scope
        finally:
            self.scope = outer

    def loop_body(self, var_name: str, body: Stmt, index: ir.Value) -> None:
        """Emit a loop's ``body`` with its variable ``var_name`` bound to ``index``."""
        with self.nested_scope() as scope:
            scope.symbols[var_name] = index
            self.stmt(body)

    # hoisted allocation --------------------------------------------------------------

    def require_in_prologue(self, ok: ir.Value) -> None:
        """Make the body run only if the prologue value ``ok`` (an i1) is true."""
        self._prologue_checks.append(ok)

    def free_at_exit(self, pointer: ir.Value) -> None:
        """Release a heap pointer (allocated in the prologue) when the function returns."""
        self._heap.append(pointer)

    def finish(self) -> ir.Function:
        """Close the function: prologue branch, failure path, frees and return."""
        fail = self.function.append_basic_block("fail")
        exit_block = self.function.append_basic_block("exit")
        self.builder.branch(exit_block)
        ok: ir.Value = ir.Constant(I1, 1)
        for check in self._prologue_checks:
            ok = self.prologue.and_(ok, check)
        self.prologue.cbranch(ok, self._body_start, fail)
        failing = ir.IRBuilder(fail)
        failing.store(ir.Constant(I32, 1), self.status)
        failing.branch(exit_block)
        closing = ir.IRBuilder(exit_block)
        for pointer in self._heap:
            free = declare_runtime(self.module, "free")
            closing.call(free, [closing.bitcast(pointer, ir.IntType(8).as_pointer())])
        closing.ret_void()
        return self.function


def declare_runtime(module: ir.Module, name: str) -> ir.Function:
    """The C runtime function ``name`` (``aligned_alloc``/``free``) declared in ``module``."""
    i8p = ir.IntType(8).as_pointer()
    signatures = {
        "aligned_alloc": (i8p, [ir.IntType(64), ir.IntType(64)]),
        "free": (ir.VoidType(), [i8p]),
    }
    return declare(module, name, *signatures[name])
