"""Graph-level operators that are not user math: calls of kernels and of external functions.

Both use destination-passing style underneath: the callee writes its outputs into
buffers the runtime allocates from ``out_info``; at the graph level the call simply
returns a value of ``out_info``.

- ``call_tir(kernel, args, out_info, tir_vars=None)`` calls the loop-level kernel named by
  the ``GlobalVar`` ``kernel`` with the tensors ``args`` (a ``Tuple``) and, when given,
  extra symbolic scalars ``tir_vars`` (a ``ShapeExpr``) for the kernel's scalar params.
- ``call_extern(func, args, out_info)`` calls the external library function ``func``
  (an ``ExternFunc``) the same way.

- ``call_tir_inplace(kernel, args, targets, out_info, tir_vars=None)`` calls a kernel whose
  outputs are the existing tensors ``targets`` (a ``Tuple``), which it updates in place:
  the call's value *is* those buffers, changed. A target must be dead after the call and
  owned by the function (a value a call of the function computed, or a parameter the
  function may overwrite, see ``ir.control.donated_params``); ``verify`` checks both.

They print as ``call_tir(mod.matmul, (x, w), out_info=Tensor((n, 4), "float32"))``,
``call_tir_inplace(mod.dynamic_update_slice_inplace, (u, i), (cache,), out_info=...)`` and
``call_extern(extern("cblas_sgemm"), (x, w), out_info=...)``.

Views (``call_view``, a tensor reading another one's memory) are in
:mod:`relaxjax.ir.view`. Control flow (``switch``, ``while_loop``, ``fori_loop``, ``scan``) is in
:mod:`relaxjax.ir.control`; its ops are builtins too (:data:`BUILTIN_OPS`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from relaxjax.ir.control import CONTROL_OPS
from relaxjax.ir.infer import InferContext
from relaxjax.ir.nodes import Call, Expr, ExternFunc, GlobalVar, ShapeExpr, Tuple
from relaxjax.ir.struct_info import ObjectInfo, ShapeInfo, StructInfo, TensorInfo, TupleInfo
from relaxjax.ir.view import CALL_VIEW


@dataclass(frozen=True, slots=True)
class CallTIRAttrs:
    """The info of the value a ``call_tir`` returns."""

    out_info: StructInfo


@dataclass(frozen=True, slots=True)
class CallExternAttrs:
    """The info of the value a ``call_extern`` returns."""

    out_info: StructInfo


def _check_operands(name: str, args: Sequence[StructInfo], ctx: InferContext, extra: bool):
    allowed = (2, 3) if extra else (2,)
    if len(args) not in allowed:
        ctx.fail(f"takes {' or '.join(map(str, allowed))} operands, got {len(args)}")
    if not isinstance(args[0], ObjectInfo):
        ctx.fail(f"the callee must be a function reference, got a value of {args[0]!r}")
    if not isinstance(args[1], TupleInfo):
        ctx.fail(f"the arguments must be a tuple, got a value of {args[1]!r}")
    if len(args) == 3 and not isinstance(args[2], ShapeInfo):
        ctx.fail(f"the extra scalar arguments must be a shape value, got {args[2]!r}")


class CallTIROp:
    """``call_tir``: call a loop-level kernel of the module (destination-passing style)."""

    name = "call_tir"
    Attrs = CallTIRAttrs

    def infer(self, args: Sequence[StructInfo], attrs: CallTIRAttrs, ctx: InferContext):
        """The result's info is the declared ``out_info``."""
        _check_operands(self.name, args, ctx, extra=True)
        return attrs.out_info

    def __repr__(self) -> str:
        return "Op(call_tir)"

    def __reduce__(self) -> str:
        return "CALL_TIR"  # unpickles as the singleton


@dataclass(frozen=True, slots=True)
class CallTIRInplaceAttrs:
    """The info of the value a ``call_tir_inplace`` returns (its updated targets)."""

    out_info: StructInfo


class CallTIRInplaceOp:
    """``call_tir_inplace``: call a kernel that updates existing tensors in place."""

    name = "call_tir_inplace"
    Attrs = CallTIRInplaceAttrs

    def infer(self, args: Sequence[StructInfo], attrs: CallTIRInplaceAttrs, ctx: InferContext):
        """The result's info is the declared ``out_info``, which must fit the targets."""
        if len(args) not in (3, 4):
            ctx.fail(f"takes 3 or 4 operands, got {len(args)}")
        if not isinstance(args[0], ObjectInfo):
            ctx.fail(f"the callee must be a function reference, got a value of {args[0]!r}")
        for position, what in ((1, "arguments"), (2, "targets")):
            if not isinstance(args[position], TupleInfo):
                ctx.fail(f"the {what} must be a tuple, got a value of {args[position]!r}")
        if len(args) == 4 and not isinstance(args[3], ShapeInfo):
            ctx.fail(f"the extra scalar arguments must be a shape value, got {args[3]!r}")
        targets = args[2].fields  # type: ignore[union-attr]
        results = (
            attrs.out_info.fields if isinstance(attrs.out_info, TupleInfo) else (attrs.out_info,)
        )
        if len(results) != len(targets):
            ctx.fail(f"updates {len(targets)} target(s) but declares {len(results)} result(s)")
        for target, result in zip(targets, results):
            if not isinstance(target, TensorInfo) or not isinstance(result, TensorInfo):
                ctx.fail(f"targets and results are tensors, got {target!r} and {result!r}")
            if target.dtype != result.dtype or target.ndim != result.ndim:
                ctx.fail(f"a target of {target!r} cannot hold a result of {result!r}")
        return attrs.out_info

    def __repr__(self) -> str:
        return "Op(call_tir_inplace)"

    def __reduce__(self) -> str:
        return "CALL_TIR_INPLACE"  # unpickles as the singleton


class CallExternOp:
    """``call_extern``: call an external library function (destination-passing style)."""

    name = "call_extern"
    Attrs = CallExternAttrs

    def infer(self, args: Sequence[StructInfo], attrs: CallExternAttrs, ctx: InferContext):
        """The result's info is the declared ``out_info``."""
        _check_operands(self.name, args, ctx, extra=False)
        return attrs.out_info

    def __repr__(self) -> str:
        return "Op(call_extern)"

    def __reduce__(self) -> str:
        return "CALL_EXTERN"  # unpickles as the singleton


CALL_TIR = CallTIROp()
CALL_EXTERN = CallExternOp()
CALL_TIR_INPLACE = CallTIRInplaceOp()
BUILTIN_OPS = {
    CALL_TIR.name: CALL_TIR,
    CALL_EXTERN.name: CALL_EXTERN,
    CALL_TIR_INPLACE.name: CALL_TIR_INPLACE,
    CALL_VIEW.name: CALL_VIEW,
    **CONTROL_OPS,
}


def _as_tuple(args: Tuple | Sequence[Expr]) -> Tuple:
    return args if isinstance(args, Tuple) else Tuple(args)


def call_tir(
    kernel: GlobalVar,
    args: Tuple | Sequence[Expr],
    out_info: StructInfo,
    tir_vars: ShapeExpr | None = None,
) -> Call:
    """A call of the kernel ``kernel`` on ``args`` returning a value of ``out_info``."""
    if not isinstance(kernel, GlobalVar):
        raise TypeError(f"call_tir calls a kernel named by a GlobalVar, got {kernel!r}")
    operands: tuple[Expr, ...] = (kernel, _as_tuple(args))
    if tir_vars is not None:
        if not isinstance(tir_vars, ShapeExpr):
            raise TypeError(f"call_tir tir_vars must be a ShapeExpr, got {tir_vars!r}")
        operands += (tir_vars,)
    attrs = CallTIRAttrs(out_info)
    return Call(CALL_TIR, operands, attrs, out_info)


def call_extern(func: ExternFunc, args: Tuple | Sequence[Expr], out_info: StructInfo) -> Call:
    """A call of the external function ``func`` on ``args`` returning a value of ``out_info``."""
    if not isinstance(func, ExternFunc):
        raise TypeError(f"call_extern calls an ExternFunc, got {func!r}")
    attrs = CallExternAttrs(out_info)
    return Call(CALL_EXTERN, (func, _as_tuple(args)), attrs, out_info)


def call_tir_inplace(
    kernel: GlobalVar,
    args: Tuple | Sequence[Expr],
    targets: Tuple | Sequence[Expr],
    out_info: StructInfo,
    tir_vars: ShapeExpr | None = None,
) -> Call:
    """A call of ``kernel`` on ``args`` writing its outputs into ``targets`` in place."""
    if not isinstance(kernel, GlobalVar):
        raise TypeError(f"call_tir_inplace calls a kernel named by a GlobalVar, got {kernel!r}")
    operands: tuple[Expr, ...] = (kernel, _as_tuple(args), _as_tuple(targets))
    if tir_vars is not None:
        if not isinstance(tir_vars, ShapeExpr):
            raise TypeError(f"call_tir_inplace tir_vars must be a ShapeExpr, got {tir_vars!r}")
        operands += (tir_vars,)
    return Call(CALL_TIR_INPLACE, operands, CallTIRInplaceAttrs(out_info), out_info)
