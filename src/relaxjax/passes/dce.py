"""Dead-code elimination: drop bindings nothing reads, and kernels nothing calls any more.

A binding is kept when its variable is used later (or returned), or when it has an
effect that must survive even though its value is unused:

- a ``match_cast`` asserts a shape at run time and defines symbols;
- a call carrying run-time ``checks`` raises on bad shapes (dropping it would turn
  a shape error into silent success).

Every other binding is pure: calls of ops, of kernels, of graph functions, tuples.
(A call of a graph function carries the checks of the callee's signature and
preconditions that its arguments do not prove, so it is kept when it has any.)

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
from relaxjax.passes.walk import called_functions, called_kernels, rebuild_function, used_vars

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
    """Dead bindings removed from every graph function; graph functions and kernels that
    were called before and are called by no remaining function afterwards are removed
    too (items the module holds without any caller stay: entry functions, or a kernel
    being scheduled)."""
    functions = mod.graph_functions()
    called_before = _called(functions.values())
    items = {name: eliminate_dead_bindings(f) for name, f in functions.items()}
    while True:
        orphans = {n for n in items if n in called_before} - _called(items.values())
        if not orphans:
            break
        items = {n: f for n, f in items.items() if n not in orphans}
    called_after = _called(items.values())
    kept = {}
    for name, item in mod.functions.items():
        if name in items:
            kept[name] = items[name]
        elif name not in functions and not (name in called_before and name not in called_after):
            kept[name] = item
    return IRModule(kept)


def _called(functions) -> set[str]:
    """The kernels and graph functions that ``functions`` call."""
    found: set[str] = set()
    for function in functions:
        found.update(called_kernels(function))
        found.update(called_functions(function))
    return found
