"""Visitors and mutators over the graph IR, dispatching on the node's class.

``visit(node)`` calls ``visit_<ClassName>`` for the most derived class that has one
(``DataflowVar`` falls back to ``visit_Var``, ``DataflowBlock`` to ``visit_BindingBlock``).
Definitions (parameters, bound vars) go to ``visit_var_def``; uses to ``visit_Var``.

:class:`ExprMutator` returns new nodes and rebuilds a node only when one of its children
changed, so an identity mutation returns the very same objects. When a binding's new value
has a different info than its var, the var is replaced by a fresh one with the new info and
every later use is remapped.
"""

from __future__ import annotations

from collections.abc import Callable

from relaxjax.ir.module import IRModule
from relaxjax.ir.nodes import (
    Binding,
    BindingBlock,
    Call,
    Expr,
    Function,
    MatchCast,
    SeqExpr,
    Tuple,
    TupleGetItem,
    Var,
)


def _dispatch(owner: type, node_type: type, cache: dict) -> Callable:
    key = (owner, node_type)
    method = cache.get(key)
    if method is None:
        for cls in node_type.__mro__:
            method = getattr(owner, f"visit_{cls.__name__}", None)
            if method is not None:
                break
        else:
            method = owner.visit_default
        cache[key] = method
    return method


_VISITOR_CACHE: dict = {}
_MUTATOR_CACHE: dict = {}


class ExprVisitor:
    """Walks a node and its children in program order; override ``visit_<Class>``."""

    def visit(self, node: object) -> None:
        """Visit ``node`` through the method for its class."""
        _dispatch(type(self), type(node), _VISITOR_CACHE)(self, node)

    def visit_default(self, node: object) -> None:
        """Leaves (constants, scalars, shapes, global names) have no children."""

    def visit_var_def(self, var: Var) -> None:
        """A var at its definition (a parameter, or the left side of a binding)."""

    def visit_Var(self, var: Var) -> None:
        """A use of a var."""

    def visit_IRModule(self, mod: IRModule) -> None:
        for item in mod.functions.values():
            if isinstance(item, Function):
                self.visit(item)

    def visit_Function(self, func: Function) -> None:
        for param in func.params:
            self.visit_var_def(param)
        self.visit(func.body)

    def visit_SeqExpr(self, seq: SeqExpr) -> None:
        for block in seq.blocks:
            self.visit(block)
        self.visit(seq.body)

    def visit_BindingBlock(self, block: BindingBlock) -> None:
        for binding in block.bindings:
            self.visit(binding)

    def visit_Binding(self, binding: Binding) -> None:
        self.visit(binding.value)
        self.visit_var_def(binding.var)

    def visit_MatchCast(self, binding: MatchCast) -> None:
        self.visit(binding.value)
        self.visit_var_def(binding.var)

    def visit_Call(self, call: Call) -> None:
        if isinstance(call.op, Expr):
            self.visit(call.op)
        for arg in call.args:
            self.visit(arg)

    def visit_Tuple(self, tup: Tuple) -> None:
        for field in tup.fields:
            self.visit(field)

    def visit_TupleGetItem(self, item: TupleGetItem) -> None:
        self.visit(item.tuple_value)


class ExprMutator:
    """Rewrites nodes bottom-up; override ``visit_<Class>`` and return the new node."""

    def __init__(self) -> None:
        self.var_remap: dict[Var, Var] = {}

    def visit(self, node):
        """The rewritten ``node`` (the same object when nothing changed)."""
        return _dispatch(type(self), type(node), _MUTATOR_CACHE)(self, node)

    def visit_default(self, node):
        """Leaves are kept."""
        return node

    def visit_var_def(self, var: Var) -> Var:
        """A var at its definition; return a replacement to remap later uses."""
        return var

    def visit_Var(self, var: Var) -> Expr:
        return self.var_remap.get(var, var)

    def visit_IRModule(self, mod: IRModule) -> IRModule:
        changed = {}
        for name, item in mod.functions.items():
            if isinstance(item, Function):
                new = self.visit(item)
                if new is not item:
                    changed[name] = new
        if not changed:
            return mod
        return IRModule({name: changed.get(name, item) for name, item in mod.functions.items()})

    def visit_Function(self, func: Function) -> Function:
        params = tuple(self._define(p) for p in func.params)
        body = self.visit(func.body)
        if body is func.body and _same(params, func.params):
            return func
        return Function(params, body, func.ret_info, func.name, func.attrs)

    def visit_SeqExpr(self, seq: SeqExpr) -> SeqExpr:
        blocks = tuple(self.visit(b) for b in seq.blocks)
        body = self.visit(seq.body)
        if body is seq.body and _same(blocks, seq.blocks):
            return seq
        return SeqExpr(blocks, body)

    def visit_BindingBlock(self, block: BindingBlock) -> BindingBlock:
        bindings = tuple(self.visit(b) for b in block.bindings)
        return block if _same(bindings, block.bindings) else type(block)(bindings)

    def visit_Binding(self, binding: Binding) -> Binding:
        value = self.visit(binding.value)
        var = binding.var
        if value is not binding.value and value.info != var.info:
            var = type(var)(var.name_hint, value.info)
            self.var_remap[binding.var] = var
        var = self._define(var)
        if value is binding.value and var is binding.var:
            return binding
        return Binding(var, value, binding.location)

    def visit_MatchCast(self, binding: MatchCast) -> MatchCast:
        value = self.visit(binding.value)
        var = self._define(binding.var)
        if value is binding.value and var is binding.var:
            return binding
        return MatchCast(var, value, binding.info, binding.location)

    def _define(self, var: Var) -> Var:
        new = self.visit_var_def(var)
        if new is not var:
            self.var_remap[var] = new
        return new

    def visit_Call(self, call: Call) -> Expr:
        op = self.visit(call.op) if isinstance(call.op, Expr) else call.op
        args = tuple(self.visit(a) for a in call.args)
        if op is call.op and _same(args, call.args):
            return call
        return Call(op, args, call.attrs, call.info, call.checks)

    def visit_Tuple(self, tup: Tuple) -> Expr:
        fields = tuple(self.visit(f) for f in tup.fields)
        return tup if _same(fields, tup.fields) else Tuple(fields)

    def visit_TupleGetItem(self, item: TupleGetItem) -> Expr:
        value = self.visit(item.tuple_value)
        return item if value is item.tuple_value else TupleGetItem(value, item.index)


def _same(new: tuple, old: tuple) -> bool:
    return len(new) == len(old) and all(a is b for a, b in zip(new, old))
