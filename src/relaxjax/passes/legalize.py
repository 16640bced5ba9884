"""Legalisation: every op call becomes a ``call_tir`` of a loop-level kernel.

Each ``var = op(args, attrs)`` binding is lowered through ``op.lower(arg_infos,
attrs, out_info)`` to a shape-generic ``tir.PrimFunc`` and replaced by a call in
destination-passing style::

    lv0: Tensor((n, 2048), "float32") = matmul(x, w1)
  becomes
    lv0: Tensor((n, 2048), "float32") = call_tir(mod.matmul, (x, w1), out_info=...)

and the kernel joins the module under the op's name. Kernels are shape-generic (one
kernel serves every value of ``n``), so structurally identical kernels, e.g. those
of the twelve identical layers of a GPT, are stored once and shared. A kernel is
named after its op, with a suffix only when several different kernels share an
op (``add``, ``add_1``).

The call keeps its run-time ``checks``. When the result's shape is not fully known
(a coarse deduction, e.g. broadcasting ``(n,)`` with ``(m,)``), the call also
keeps the op's name and attributes (:class:`LegalizedAttrs`) so the runtime can
compute the concrete shape with ``op.infer`` before allocating the result.

A kernel reads an operand that is a view (``call_view``, :mod:`relaxjax.passes.views`)
through the view's strides: its parameter buffer declares them
(:func:`relaxjax.passes.strides.strided_operands` runs on the result).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

from relaxjax.arith import Sym
from relaxjax.errors import LoweringError, SourceLocation
from relaxjax.ir import (
    BUILTIN_OPS,
    CALL_TIR,
    Binding,
    Call,
    CallTIRAttrs,
    Constant,
    Expr,
    ExprMutator,
    ExternFunc,
    Function,
    GlobalVar,
    IRModule,
    PrimInfo,
    PrimValue,
    ShapeExpr,
    StructInfo,
    TensorInfo,
    Tuple,
    TupleInfo,
    Var,
)
from relaxjax.passes.kernels import kernel_key, rename_kernel
from relaxjax.passes.strides import strided_operands

__all__ = ["LegalizedAttrs", "is_op_call", "known_shape", "legalize", "op_attrs_items"]


@dataclass(frozen=True, slots=True)
class LegalizedAttrs(CallTIRAttrs):
    """``call_tir`` attributes that also name the op the call was legalised from.

    Used only where the result's shape is not fully known: ``op_name``, ``op_attrs``
    (the op's attributes as ``(field, value)`` pairs, printable like any attribute)
    and ``arg_infos`` (the infos of the op's operands) let the runtime re-run the op's
    shape rule on the operands' concrete shapes.
    """

    op_name: str = ""
    op_attrs: tuple = ()
    arg_infos: tuple[StructInfo, ...] = ()


def op_attrs_items(attrs: object) -> tuple:
    """An op's attribute dataclass as ``((field, value), ...)`` (``()`` for None)."""
    if attrs is None:
        return ()
    return tuple((f.name, getattr(attrs, f.name)) for f in dataclasses.fields(attrs))


def known_shape(info: StructInfo) -> bool:
    """Whether every tensor in ``info`` has a fully known (possibly symbolic) shape."""
    if isinstance(info, TensorInfo):
        return info.shape is not None
    if isinstance(info, TupleInfo):
        return all(known_shape(f) for f in info.fields)
    return True


def is_op_call(expr: Expr) -> bool:
    """Whether ``expr`` calls a graph-level op (not a kernel, function or builtin)."""
    if not isinstance(expr, Call) or isinstance(expr.op, (GlobalVar, ExternFunc)):
        return False
    return all(expr.op is not builtin for builtin in BUILTIN_OPS.values())


def _flat_operands(args: Sequence[Expr]) -> list[Expr]:
    flat: list[Expr] = []
    for arg in args:
        if isinstance(arg, Tuple):
            flat.extend(_flat_operands(arg.fields))
        elif not isinstance(arg, ShapeExpr):
            flat.append(arg)
    return flat


def _is_tensor(expr: Expr) -> bool:
    return isinstance(expr, (Var, Constant)) and isinstance(expr.info, TensorInfo)


def _is_scalar(expr: Expr) -> bool:
    return isinstance(expr, PrimValue) or (
        isinstance(expr, Var) and isinstance(expr.info, PrimInfo)
    )


def _kernel_operands(call: Call, kernel: object, where: str) -> list[Expr]:
    """The call's operands the kernel takes as input buffers, in order.

    A kernel takes either every data operand (tensors and scalars, as 0-d buffers) or
    only the tensors (scalars folded into its code); shape operands are never buffers.
    """
    operands = _flat_operands(call.args)
    for operand in operands:
        if not (_is_tensor(operand) or _is_scalar(operand)):
            raise LoweringError(f"{where}: cannot pass {operand!r} to a kernel")
    expected = len(kernel.inputs)  # type: ignore[attr-defined]
    if expected == len(operands):
        return operands
    tensors = [o for o in operands if _is_tensor(o)]
    if expected == len(tensors):
        return tensors
    raise LoweringError(
        f"{where}: the kernel from {call.op.name}.lower takes {expected} inputs, but the call "
        f"has {len(operands)} operands ({len(tensors)} of them tensors)"
    )


def _tir_vars(kernel: object, where: str) -> ShapeExpr | None:
    """Values for the kernel's scalar params: the graph symbols of the same names."""
    scalars = tuple(getattr(kernel, "scalar_params", ()))
    if not scalars:
        return None
    for scalar in scalars:
        if not isinstance(scalar, Sym):
            raise LoweringError(f"{where}: kernel scalar param {scalar!r} is not a symbol")
    return ShapeExpr(scalars)


class _Legalizer(ExprMutator):
    """Lowers each op call it meets; kernels are keyed structurally and named on first use."""

    def __init__(self, mod: IRModule) -> None:
        super().__init__()
        self.names: dict[Hashable, str] = {kernel_key(k): n for n, k in mod.kernels().items()}
        self.kernels: dict[str, object] = {}  # the new kernels, by name
        self.taken = set(mod.functions)
        self.counters: dict[str, int] = {}
        # op, operand infos, attrs, result info -> (kernel, name): identical calls (the
        # same op in every layer of a stack) are lowered once
        self.lowered: dict[Hashable, tuple[object, str]] = {}
        self.function = ""
        self.where = ""  # the binding being legalised, for error messages
        self.location: SourceLocation | None = None

    def visit_Function(self, func: Function) -> Function:
        self.function = func.name
        return super().visit_Function(func)

    def visit_Binding(self, binding: Binding) -> Binding:
        self.where = f"function {self.function}, binding {binding.var.name_hint}"
        self.location = binding.location
        return super().visit_Binding(binding)

    def visit_Call(self, call: Call) -> Call:
        call = super().visit_Call(call)
        if not is_op_call(call):
            return call
        kernel, name = self._lower(call)
        buffers = Tuple(_kernel_operands(call, kernel, self.where))
        operands: tuple[Expr, ...] = (GlobalVar(name), buffers)
        tir_vars = _tir_vars(kernel, self.where)
        if tir_vars is not None:
            operands += (tir_vars,)
        return Call(CALL_TIR, operands, _call_tir_attrs(call), call.info, call.checks)

    def _lower(self, call: Call) -> tuple[object, str]:
        """The op's kernel for this call and its name in the module (memoised)."""
        infos = tuple(a.info for a in call.args)
        key: Hashable = (call.op, infos, call.attrs, call.info)
        try:
            found = self.lowered.get(key)
        except TypeError:  # an unhashable attribute value: lower every time
            key, found = None, None
        if found is not None:
            return found
        try:
            kernel = call.op.lower(infos, call.attrs, call.info)  # type: ignore[union-attr]
        except LoweringError as err:
            raise LoweringError(f"{self.where}: {err.message}", location=self.location) from err
        result = (kernel, self._name(kernel, call.op.name))  # type: ignore[union-attr]
        if key is not None:
            self.lowered[key] = result
        return result

    def _name(self, kernel: object, stem: str) -> str:
        """The kernel's name in the module: an identical kernel's, else the op's name
        with a suffix when another kernel or item already has it."""
        key = kernel_key(kernel)
        if key not in self.names:
            count = self.counters.get(stem, 0)
            name = stem if count == 0 else f"{stem}_{count}"
            while name in self.taken:
                count += 1
                name = f"{stem}_{count}"
            self.counters[stem] = count + 1
            self.taken.add(name)
            self.names[key] = name
            self.kernels[name] = rename_kernel(kernel, name)
        return self.names[key]


def _call_tir_attrs(call: Call) -> CallTIRAttrs:
    """The plain attrs when the result's shape is known; else the op is named too."""
    assert call.info is not None
    if known_shape(call.info):
        return CallTIRAttrs(call.info)
    arg_infos = tuple(a.info for a in call.args)
    op_name = call.op.name  # type: ignore[union-attr]
    return LegalizedAttrs(call.info, op_name, op_attrs_items(call.attrs), arg_infos)


def legalize(mod: IRModule) -> IRModule:
    """Lower every op call of every graph function to a ``call_tir`` (see the module doc).

    Raises:
        LoweringError: an op has no lowering for its operands, naming the binding.
    """
    legalizer = _Legalizer(mod)
    result = legalizer.visit(mod)
    for name, kernel in legalizer.kernels.items():
        result = result.with_function(name, kernel)
    return strided_operands(result)
