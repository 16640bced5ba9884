"""Small helpers the graph passes share, on top of the IR's visitor and mutator.

- :func:`used_vars`: the variables an expression reads (an ``ExprVisitor``);
- :func:`called_kernels`: the kernels a function calls through ``call_tir`` (or
  ``call_tir_inplace``);
- :func:`called_functions`: the graph functions a function calls (``mod.f(...)``, and the
  regions of its control ops: branches, loop bodies);
- :func:`reachable_functions`: a function and everything it calls, callees first;
- :func:`rebuild_function`: a function with some bindings dropped (the one rewrite
  an ``ExprMutator`` cannot express, used by dead-code elimination).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence

from relaxjax.errors import LoweringError
from relaxjax.ir import (
    CALL_TIR,
    CALL_TIR_INPLACE,
    BindingBlock,
    Call,
    DataflowBlock,
    Expr,
    ExprVisitor,
    Function,
    GlobalVar,
    IRModule,
    SeqExpr,
    Var,
    control_regions,
)
from relaxjax.ir.nodes import AnyBinding

__all__ = [
    "called_functions",
    "called_kernels",
    "reachable_functions",
    "rebuild_function",
    "used_vars",
    "var_uses",
]


class _Uses(ExprVisitor):
    def __init__(self) -> None:
        self.vars: list[Var] = []
        self.kernels: list[str] = []
        self.functions: list[str] = []

    def visit_Var(self, var: Var) -> None:
        self.vars.append(var)

    def visit_Call(self, call: Call) -> None:
        if (call.op is CALL_TIR or call.op is CALL_TIR_INPLACE) and isinstance(
            call.args[0], GlobalVar
        ):
            self.kernels.append(call.args[0].name)
        if isinstance(call.op, GlobalVar):
            self.functions.append(call.op.name)
        self.functions += [ref.name for ref in control_regions(call)]
        super().visit_Call(call)


def used_vars(expr: Expr) -> list[Var]:
    """The variables ``expr`` reads (with repeats), looking through tuples and calls."""
    uses = _Uses()
    uses.visit(expr)
    return uses.vars


def var_uses(function: Function) -> Counter:
    """How many times each variable is read in ``function`` (bindings and result)."""
    counts: Counter = Counter()
    for block in function.body.blocks:
        for binding in block.bindings:
            counts.update(used_vars(binding.value))
    counts.update(used_vars(function.body.body))
    return counts


def called_kernels(function: Function) -> Iterator[str]:
    """The names of the kernels ``function`` calls through ``call_tir`` (with repeats)."""
    uses = _Uses()
    uses.visit(function)
    return iter(uses.kernels)


def called_functions(function: Function) -> Iterator[str]:
    """The names of the graph functions ``function`` calls (with repeats)."""
    uses = _Uses()
    uses.visit(function)
    return iter(uses.functions)


def reachable_functions(mod: IRModule, entry: str) -> list[Function]:
    """``entry`` and every graph function it calls, directly or not, each callee before
    its callers (``entry`` last). Raises ``LoweringError`` for a call of something that
    is not a graph function of ``mod`` and for recursion (the calls would never end)."""
    order: list[Function] = []
    done: set[str] = set()
    path: list[str] = []

    def visit(name: str) -> None:
        if name in path:
            chain = " -> ".join([*path[path.index(name) :], name])
            raise LoweringError(f"function {name} calls itself ({chain}): recursion cannot run")
        if name in done:
            return
        function = mod.functions.get(name)
        if not isinstance(function, Function):
            caller = f"function {path[-1]} calls {name}, which" if path else name
            raise LoweringError(f"{caller} is not a graph function of the module")
        path.append(name)
        for callee in dict.fromkeys(called_functions(function)):
            visit(callee)
        path.pop()
        done.add(name)
        order.append(function)

    visit(entry)
    return order


def rebuild_function(function: Function, blocks: Sequence[Sequence[AnyBinding]]) -> Function:
    """``function`` with the bindings of each of its blocks replaced (empty blocks dropped).

    ``blocks`` has one sequence of bindings per block of ``function.body``, in order;
    each block keeps its kind (dataflow or not).
    """
    old_blocks = function.body.blocks
    if len(blocks) != len(old_blocks):
        raise ValueError(f"expected bindings for {len(old_blocks)} blocks, got {len(blocks)}")
    new_blocks = []
    for old, bindings in zip(old_blocks, blocks):
        if not bindings:
            continue
        kind = DataflowBlock if isinstance(old, DataflowBlock) else BindingBlock
        new_blocks.append(kind(bindings))
    body = SeqExpr(new_blocks, function.body.body)
    return Function(function.params, body, function.ret_info, function.name, function.attrs)
