"""Library dispatch: op calls a tuned library does best become ``call_extern``.

Dense matrix products reach BLAS speed on CPU through a library call, and matrix
factorisations (``det slogdet inv solve cholesky qr eigh svd``, see
:mod:`relaxjax.ops.decompositions`) exist only as LAPACK calls; this pass makes that
choice visible in the IR. A ``matmul`` of two float32 (or two float64) tensors whose
result shape is known becomes::

    lv0: Tensor((n, 4096), "float32") = call_extern(extern("numpy.matmul"), (x, w1), out_info=...)

keeping the call's run-time ``checks``, and the module declares the function
(``numpy_matmul = extern_decl("numpy.matmul")``). The runtime calls
numpy's BLAS for it (jnp.matmul semantics), on its own threads
(:mod:`relaxjax.runtime.gemm`). A
factorisation becomes the call of its ``numpy.linalg`` function, the symbol naming the
attributes (``numpy.linalg.qr.mode_reduced``). Every other op call is left for
:func:`~relaxjax.passes.legalize`. Run this pass before it.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass

from relaxjax.ir import (
    Call,
    Constant,
    Expr,
    ExprMutator,
    ExternDecl,
    ExternFunc,
    IRModule,
    TensorInfo,
    Var,
    call_extern,
)
from relaxjax.ops.decompositions import FLOATS, LIBRARY_OPS, library_symbol
from relaxjax.passes.legalize import is_op_call, known_shape

__all__ = ["LIBRARY_CALLS", "LibraryCall", "dispatch_library"]


def _float_tensors(args: tuple[Expr, ...]) -> bool:
    """Two tensors of one float dtype BLAS handles (float32 or float64)."""
    if len(args) != 2 or not all(isinstance(a, (Var, Constant)) for a in args):
        return False
    infos = [a.info for a in args]
    if not all(isinstance(i, TensorInfo) and i.ndim is not None and i.ndim >= 1 for i in infos):
        return False
    return infos[0].dtype == infos[1].dtype and infos[0].dtype in ("float32", "float64")


def _lapack_operands(args: tuple[Expr, ...]) -> bool:
    """Operands of one float dtype LAPACK factorises."""
    infos = [a.info for a in args]
    if not all(isinstance(i, TensorInfo) for i in infos):
        return False
    return len({i.dtype for i in infos}) == 1 and infos[0].dtype in FLOATS


@dataclass(frozen=True, slots=True)
class LibraryCall:
    """An op a library function implements, when ``applies(call)`` holds; with
    ``variants`` the symbol names the call's attributes."""

    op_name: str
    symbol: str
    decl_name: str
    applies: Callable[[Call], bool]
    variants: bool = False

    def symbol_of(self, call: Call) -> tuple[str, str]:
        """``(symbol, declaration name)`` of the library function for ``call``."""
        if not self.variants:
            return self.symbol, self.decl_name
        symbol = library_symbol(self.op_name, call.attrs)
        return symbol, symbol.replace(".", "_").lower()


#: The dispatch table: op name -> library function.
LIBRARY_CALLS: dict[str, LibraryCall] = {
    "matmul": LibraryCall(
        "matmul", "numpy.matmul", "numpy_matmul", lambda call: _float_tensors(call.args)
    ),
    **{
        name: LibraryCall(name, "", "", lambda call: _lapack_operands(call.args), True)
        for name in LIBRARY_OPS
    },
}


class _Dispatcher(ExprMutator):
    """Replaces op calls found in :data:`LIBRARY_CALLS` by ``call_extern``s."""

    def __init__(self, ops: Collection[str] | None = None) -> None:
        super().__init__()
        self.ops = ops
        self.used: dict[str, str] = {}

    def visit_Call(self, call: Call) -> Call:
        call = super().visit_Call(call)
        if not is_op_call(call) or call.info is None or not known_shape(call.info):
            return call
        library = LIBRARY_CALLS.get(call.op.name)  # type: ignore[union-attr]
        if library is None or not library.applies(call):
            return call
        if self.ops is not None and library.op_name not in self.ops:
            return call
        symbol, decl_name = library.symbol_of(call)
        self.used[decl_name] = symbol
        extern = call_extern(ExternFunc(symbol), call.args, call.info)
        return Call(extern.op, extern.args, extern.attrs, extern.info, call.checks)


def dispatch_library(mod: IRModule, ops: Collection[str] | None = None) -> IRModule:
    """``mod`` with every op call in :data:`LIBRARY_CALLS` (only those of ``ops`` when
    given) turned into a ``call_extern``."""
    dispatcher = _Dispatcher(ops)
    result = dispatcher.visit(mod)
    for decl_name, symbol in dispatcher.used.items():
        if decl_name not in result:
            result = result.with_function(decl_name, ExternDecl(decl_name, symbol))
    return result
