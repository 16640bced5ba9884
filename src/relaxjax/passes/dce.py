"""Dead-code elimination: drop bindings nothing reads, and kernels nothing calls any more.

A binding is kept when its variable is used later (or returned), or when it has an
effect that must survive even though its value is unused:

- a ``match_cast`` asserts a shape at run time and defines symbols;
- a call carrying run-time ``checks`` raises on bad shapes (dropping it would turn
  a shape error into silent success).

Every other binding is pure: calls of ops, of kernels, of graph functions, tuples.

Before::

    lv0 = exp(x)           # unused
    lv1 = add(x, x)
    return lv1

After::

    lv1 = add(x, x)
    return lv1
"""

from __future__ import annotations

from relaxjax.ir import Call, Function, IRModule, MatchCast, Var
from relaxjax.ir.nodes import AnyBinding
from relaxjax.passes.walk import called_kernels, rebuild_function, used_vars

__all__ = ["eliminate_dead_code", "eliminate_dead_bindings"]


def _has_effect(binding: AnyBinding) -> bool:
    if isinstance(binding, MatchCast):
        return True
    value = binding.value
    return isinstance(value, Call) and bool(value.checks)


def eliminate_dead_bindings(function: Function) -> Function:
    """``function`` without the bindings whose values are never used (see the module doc)."""
    live: set[Var] = set(used_vars(function.body.body))
    kept_blocks: list[list[AnyBinding]] = []
    for block in reversed(function.body.blocks):
        kept: list[AnyBinding] = []
        for binding in reversed(block.bindings):
            if binding.var in live or _has_effect(binding):
                kept.append(binding)
                live.update(used_vars(binding.value))
        kept_blocks.append(kept[::-1])
    kept_blocks.reverse()
    unchanged = all(
        len(kept) == len(block.bindings) for kept, block in zip(kept_blocks, function.body.blocks)
    )
    return function if unchanged else rebuild_function(function, kept_blocks)


def eliminate_dead_code(mod: IRModule) -> IRModule:
    """Dead bindings removed from every graph function; kernels that were called before
    and are called by no function afterwards are removed too (kernels the module holds
    without any caller, e.g. one being scheduled, stay)."""
    functions = mod.graph_functions()
    called_before = {name for f in functions.values() for name in called_kernels(f)}
    cleaned = {name: eliminate_dead_bindings(f) for name, f in functions.items()}
    called_after = {name for f in cleaned.values() for name in called_kernels(f)}
    orphans = called_before - called_after
    items = {}
    for name, item in mod.functions.items():
        if name in orphans:
            continue
        items[name] = cleaned.get(name, item)
    return IRModule(items)
