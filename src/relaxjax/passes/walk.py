"""Small helpers the graph passes share: variables an expression uses, rebuilding functions.

The graph IR is in A-normal form, so an expression's operands are leaves (vars,
constants, prim values, shapes, global references) or tuples of leaves; these
helpers only need to look one level deep, plus tuples.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

from relaxjax.ir import (
    CALL_TIR,
    BindingBlock,
    Call,
    DataflowBlock,
    Expr,
    Function,
    GlobalVar,
    IRModule,
    SeqExpr,
    Tuple,
    TupleGetItem,
    Var,
)
from relaxjax.ir.nodes import AnyBinding

__all__ = [
    "called_kernels",
    "map_functions",
    "rebuild_function",
    "used_vars",
]


def used_vars(expr: Expr) -> Iterator[Var]:
    """The variables ``expr`` reads (with repeats), looking through tuples and calls."""
    if isinstance(expr, Var):
        yield expr
    elif isinstance(expr, Tuple):
        for field in expr.fields:
            yield from used_vars(field)
    elif isinstance(expr, TupleGetItem):
        yield from used_vars(expr.tuple_value)
    elif isinstance(expr, Call):
        for arg in expr.args:
            yield from used_vars(arg)


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


def map_functions(mod: IRModule, rewrite: Callable[[Function], Function]) -> IRModule:
    """A module whose graph functions are ``rewrite(f)``; kernels and externs are kept."""
    items = {}
    for name, item in mod.functions.items():
        items[name] = rewrite(item) if isinstance(item, Function) else item
    return IRModule(items)


def called_kernels(function: Function) -> Iterator[str]:
    """The names of the kernels ``function`` calls through ``call_tir`` (with repeats)."""
    for block in function.body.blocks:
        for binding in block.bindings:
            value = binding.value
            if isinstance(value, Call) and value.op is CALL_TIR:
                callee = value.args[0]
                if isinstance(callee, GlobalVar):
                    yield callee.name
