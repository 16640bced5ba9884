"""Kernel deduplication: structurally identical kernels are stored once.

Kernels that differ only by name (e.g. after two calls were scheduled the same
way) are merged under the first one's name; every ``call_tir`` of a dropped
duplicate is redirected. Legalisation already dedupes the kernels it creates;
this pass does the same for any module.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping

from relaxjax.ir import CALL_TIR, Binding, Call, Function, GlobalVar, IRModule
from relaxjax.passes.kernels import kernel_key
from relaxjax.passes.walk import rebuild_function

__all__ = ["dedup_kernels"]


def _redirect(function: Function, renames: Mapping[str, str]) -> Function:
    changed = False
    blocks = []
    for block in function.body.blocks:
        bindings = []
        for binding in block.bindings:
            value = binding.value
            if (
                isinstance(binding, Binding)
                and isinstance(value, Call)
                and value.op is CALL_TIR
                and isinstance(value.args[0], GlobalVar)
                and value.args[0].name in renames
            ):
                args = (GlobalVar(renames[value.args[0].name]), *value.args[1:])
                value = Call(value.op, args, value.attrs, value.info, value.checks)
                binding = Binding(binding.var, value, binding.location)
                changed = True
            bindings.append(binding)
        blocks.append(bindings)
    return rebuild_function(function, blocks) if changed else function


def dedup_kernels(mod: IRModule) -> IRModule:
    """``mod`` with each set of identical kernels replaced by its first member."""
    first_name: dict[Hashable, str] = {}
    renames: dict[str, str] = {}
    for name, kernel in mod.kernels().items():
        key = kernel_key(kernel)
        if key in first_name:
            renames[name] = first_name[key]
        else:
            first_name[key] = name
    if not renames:
        return mod
    items = {}
    for name, item in mod.functions.items():
        if name in renames:
            continue
        items[name] = _redirect(item, renames) if isinstance(item, Function) else item
    return IRModule(items)
