"""In-place updates: an op that can write into its operand does so when nobody else can see it.

An op declares the operand it can update (``Op.inplace_operand``) and a kernel that
writes into that operand's buffer (``Op.lower_inplace``, whose last parameter is the
operand as the output). When the operand is owned by the function and dead after the
call (:class:`relaxjax.ir.inplace.BufferFacts`: computed by a call of the function, or a
carry a loop body receives, and read by nothing afterwards), the call becomes
``call_tir_inplace`` of that kernel; otherwise it stays an op call and is legalised to
the functional kernel (a fresh result). ``dynamic_update_slice`` is such an op: a
KV-cache write costs the size of the update, not of the cache::

    lv1: Tensor((L, d), "float32") = add(cache0, delta)
    lv2: Tensor((L, d), "float32") = dynamic_update_slice(lv1, row, i, 0, ...)
  becomes
    lv2: Tensor((L, d), "float32") = call_tir_inplace(mod.dynamic_update_slice_inplace,
        (row, i, 0), (lv1,), out_info=Tensor((L, d), "float32"))

A parameter of the entry function is the caller's array and is never updated: the
first update of one makes the copy (the functional kernel), the later ones are in place.
The pass runs before ``legalize``.
"""

from __future__ import annotations

from relaxjax.ir import (
    Binding,
    Call,
    Function,
    GlobalVar,
    IRModule,
    ShapeExpr,
    call_tir_inplace,
)
from relaxjax.ir.inplace import BufferFacts
from relaxjax.passes.kernels import KernelTable, rewrite_functions
from relaxjax.passes.legalize import is_op_call
from relaxjax.passes.walk import rebuild_function

__all__ = ["inplace_updates"]


def _inplace_call(call: Call, kernels: KernelTable) -> Call:
    op = call.op
    index = op.inplace_operand  # type: ignore[union-attr]
    arg_infos = tuple(a.info for a in call.args)
    kernel = op.lower_inplace(arg_infos, call.attrs, call.info)  # type: ignore[union-attr]
    name = kernels.add(kernel, f"{op.name}_inplace")  # type: ignore[union-attr]
    inputs = [a for k, a in enumerate(call.args) if k != index]
    scalars = tuple(getattr(kernel, "scalar_params", ()))
    tir_vars = ShapeExpr(scalars) if scalars else None
    assert call.info is not None
    updated = call_tir_inplace(GlobalVar(name), inputs, (call.args[index],), call.info, tir_vars)
    return Call(updated.op, updated.args, updated.attrs, updated.info, call.checks)


def _function(function: Function, kernels: KernelTable) -> Function:
    facts = BufferFacts(function)
    position = -1
    blocks = []
    changed = False
    for block in function.body.blocks:
        bindings = []
        for binding in block.bindings:
            position += 1
            value = binding.value
            index = getattr(getattr(value, "op", None), "inplace_operand", None)
            if isinstance(binding, Binding) and is_op_call(value) and index is not None:
                assert isinstance(value, Call)
                target = value.args[index]
                others = [a for k, a in enumerate(value.args) if k != index]
                if facts.can_update(position, target, others):
                    binding = Binding(binding.var, _inplace_call(value, kernels), binding.location)
                    changed = True
            bindings.append(binding)
        blocks.append(bindings)
    return rebuild_function(function, blocks) if changed else function


def inplace_updates(mod: IRModule) -> IRModule:
    """``mod`` with each op call that can update a dead, owned operand in place made a
    ``call_tir_inplace`` (see the module doc)."""
    return rewrite_functions(mod, _function)
