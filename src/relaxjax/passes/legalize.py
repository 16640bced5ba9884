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
"""

from __future__ import annotations

import dataclasses
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

from relaxjax.arith import Sym
from relaxjax.errors import LoweringError
from relaxjax.ir import (
    BUILTIN_OPS,
    CALL_TIR,
    Binding,
    Call,
    CallTIRAttrs,
    Constant,
    Expr,
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
from relaxjax.ir.nodes import AnyBinding
from relaxjax.passes.kernels import kernel_key, kernel_names, rename_kernel
from relaxjax.passes.walk import rebuild_function

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


@dataclass(frozen=True, slots=True)
class _Pending:
    """A binding whose kernel is known but not yet named."""

    binding: Binding
    kernel: int  # index into the collected kernels
    operands: tuple[Expr, ...]
    tir_vars: ShapeExpr | None


class _Legalizer:
    """Collects kernels over a module's functions, then names them and rebuilds calls."""

    def __init__(self, mod: IRModule) -> None:
        self.mod = mod
        self.keys: dict[Hashable, int] = {}
        self.kernels: list[object] = []
        self.stems: list[str] = []
        self.existing = {kernel_key(k): name for name, k in mod.kernels().items()}

    def lower(self, binding: Binding, where: str) -> _Pending:
        call = binding.value
        assert isinstance(call, Call)
        arg_infos = tuple(a.info for a in call.args)
        try:
            kernel = call.op.lower(arg_infos, call.attrs, call.info)  # type: ignore[union-attr]
        except LoweringError as err:
            raise LoweringError(f"{where}: {err.message}", location=binding.location) from err
        key = kernel_key(kernel)
        if key not in self.keys:
            self.keys[key] = len(self.kernels)
            self.kernels.append(kernel)
            self.stems.append(call.op.name)
        operands = tuple(_kernel_operands(call, kernel, where))
        return _Pending(binding, self.keys[key], operands, _tir_vars(kernel, where))

    def names(self) -> list[str]:
        taken = set(self.mod.functions)
        fresh_stems = [
            stem
            for kernel, stem in zip(self.kernels, self.stems)
            if kernel_key(kernel) not in self.existing
        ]
        fresh = iter(kernel_names(fresh_stems, taken))
        return [self.existing.get(kernel_key(kernel)) or next(fresh) for kernel in self.kernels]


def _call_tir(pending: _Pending, name: str) -> Binding:
    call = pending.binding.value
    assert isinstance(call, Call) and call.info is not None
    if known_shape(call.info):
        attrs: CallTIRAttrs = CallTIRAttrs(call.info)
    else:
        arg_infos = tuple(a.info for a in call.args)
        op_name = call.op.name  # type: ignore[union-attr]
        attrs = LegalizedAttrs(call.info, op_name, op_attrs_items(call.attrs), arg_infos)
    operands: tuple[Expr, ...] = (GlobalVar(name), Tuple(pending.operands))
    if pending.tir_vars is not None:
        operands += (pending.tir_vars,)
    value = Call(CALL_TIR, operands, attrs, call.info, call.checks)
    return Binding(pending.binding.var, value, pending.binding.location)


def legalize(mod: IRModule) -> IRModule:
    """Lower every op call of every graph function to a ``call_tir`` (see the module doc).

    Raises:
        LoweringError: an op has no lowering for its operands, naming the binding.
    """
    legalizer = _Legalizer(mod)
    plans: dict[str, list[list[AnyBinding | _Pending]]] = {}
    for fname, function in mod.graph_functions().items():
        blocks: list[list[AnyBinding | _Pending]] = []
        for block in function.body.blocks:
            items: list[AnyBinding | _Pending] = []
            for binding in block.bindings:
                if isinstance(binding, Binding) and is_op_call(binding.value):
                    where = f"function {fname}, binding {binding.var.name_hint}"
                    items.append(legalizer.lower(binding, where))
                else:
                    items.append(binding)
            blocks.append(items)
        plans[fname] = blocks
    if not legalizer.kernels:
        return mod
    names = legalizer.names()
    items: dict[str, object] = {}
    for name, item in mod.functions.items():
        if isinstance(item, Function) and name in plans:
            item = _rebuild(item, plans[name], names)
        items[name] = item
    for kernel, name in zip(legalizer.kernels, names):
        if name not in items:
            items[name] = rename_kernel(kernel, name)
    return IRModule(items)


def _rebuild(
    function: Function, blocks: list[list[AnyBinding | _Pending]], names: Sequence[str]
) -> Function:
    new_blocks = [
        [_call_tir(b, names[b.kernel]) if isinstance(b, _Pending) else b for b in block]
        for block in blocks
    ]
    return rebuild_function(function, new_blocks)
