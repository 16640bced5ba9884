"""Structural equality of IR: same shape of program, variables matched by definition site.

Two programs are structurally equal when they differ only in variable identity and name
hints (and source locations): each var defined by a parameter or binding in ``a`` is
paired with the var at the same position in ``b``, and every use must respect the pairing.
Constants compare by dtype, shape and bytes; kernels and extern declarations with ``==``.
"""

from __future__ import annotations

import math

from relaxjax.ir.module import IRModule
from relaxjax.ir.nodes import (
    Binding,
    BindingBlock,
    Call,
    Check,
    Constant,
    ExternFunc,
    Function,
    GlobalVar,
    MatchCast,
    PrimValue,
    SeqExpr,
    ShapeExpr,
    Tuple,
    TupleGetItem,
    Var,
)
from relaxjax.ir.struct_info import StructInfo


def structural_equal(a: object, b: object) -> bool:
    """Whether ``a`` and ``b`` (modules, functions, blocks, bindings, exprs, infos) are
    structurally equal, matching variables by position."""
    return _Comparer().equal(a, b)


class _Comparer:
    def __init__(self) -> None:
        self.forward: dict[Var, Var] = {}
        self.backward: dict[Var, Var] = {}

    def define(self, a: Var, b: Var) -> bool:
        if type(a) is not type(b) or a.info != b.info:
            return False
        if a in self.forward or b in self.backward:
            return self.forward.get(a) is b
        self.forward[a] = b
        self.backward[b] = a
        return True

    def var(self, a: Var, b: Var) -> bool:
        if a in self.forward:
            return self.forward[a] is b
        return a is b and b not in self.backward  # a free var is equal only to itself

    def equal(self, a: object, b: object) -> bool:
        if type(a) is not type(b):
            return False
        method = _METHODS.get(type(a))
        if method is None:
            for base, candidate in _METHODS.items():
                if isinstance(a, base):
                    method = candidate
                    break
        if method is None:
            return a == b
        return method(self, a, b)

    def all_equal(self, xs: tuple, ys: tuple) -> bool:
        return len(xs) == len(ys) and all(self.equal(x, y) for x, y in zip(xs, ys))

    def module(self, a: IRModule, b: IRModule) -> bool:
        if set(a.functions) != set(b.functions):
            return False
        return all(self.equal(a[name], b[name]) for name in a.functions)

    def function(self, a: Function, b: Function) -> bool:
        if (a.name, a.attrs, a.ret_info) != (b.name, b.attrs, b.ret_info):
            return False
        if len(a.params) != len(b.params):
            return False
        if not all(self.define(x, y) for x, y in zip(a.params, b.params)):
            return False
        return self.equal(a.body, b.body)

    def seq(self, a: SeqExpr, b: SeqExpr) -> bool:
        return self.all_equal(a.blocks, b.blocks) and self.equal(a.body, b.body)

    def block(self, a: BindingBlock, b: BindingBlock) -> bool:
        return self.all_equal(a.bindings, b.bindings)

    def binding(self, a: Binding, b: Binding) -> bool:
        return self.equal(a.value, b.value) and self.define(a.var, b.var)

    def match_cast(self, a: MatchCast, b: MatchCast) -> bool:
        return a.info == b.info and self.equal(a.value, b.value) and self.define(a.var, b.var)

    def call(self, a: Call, b: Call) -> bool:
        if isinstance(a.op, (GlobalVar, ExternFunc)) or isinstance(b.op, (GlobalVar, ExternFunc)):
            if a.op != b.op:
                return False
        elif a.op is not b.op:
            return False
        if (a.attrs, a.info, a.checks) != (b.attrs, b.info, b.checks):
            return False
        return self.all_equal(a.args, b.args)

    def tuple(self, a: Tuple, b: Tuple) -> bool:
        return self.all_equal(a.fields, b.fields)

    def get_item(self, a: TupleGetItem, b: TupleGetItem) -> bool:
        return a.index == b.index and self.equal(a.tuple_value, b.tuple_value)

    def constant(self, a: Constant, b: Constant) -> bool:
        x, y = a.data, b.data
        return x.dtype == y.dtype and x.shape == y.shape and x.tobytes() == y.tobytes()

    def prim(self, a: PrimValue, b: PrimValue) -> bool:
        if (a.dtype, a.weak) != (b.dtype, b.weak):
            return False
        x, y = a.value, b.value
        if isinstance(x, float) and isinstance(y, float) and math.isnan(x) and math.isnan(y):
            return True
        return type(x) is type(y) and x == y

    def plain(self, a: object, b: object) -> bool:
        return a == b


_METHODS = {
    IRModule: _Comparer.module,
    Function: _Comparer.function,
    SeqExpr: _Comparer.seq,
    BindingBlock: _Comparer.block,
    Binding: _Comparer.binding,
    MatchCast: _Comparer.match_cast,
    Var: _Comparer.var,
    Call: _Comparer.call,
    Tuple: _Comparer.tuple,
    TupleGetItem: _Comparer.get_item,
    Constant: _Comparer.constant,
    PrimValue: _Comparer.prim,
    ShapeExpr: _Comparer.plain,
    GlobalVar: _Comparer.plain,
    ExternFunc: _Comparer.plain,
    Check: _Comparer.plain,
    StructInfo: _Comparer.plain,
}
