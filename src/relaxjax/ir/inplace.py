"""Which tensors a function may update in place: ownership and liveness of its buffers.

An in-place update (``call_tir_inplace``) writes into the buffer of an existing value
instead of a fresh one. That is only sound when nobody can observe the old contents:

- the buffer is *owned* by the function: a call of the function computed it (kernels,
  graph functions and loops return fresh buffers), or it is a parameter the function
  may overwrite (a loop body's donated carry, ``ir.control.donated_params``); never a
  constant, never another parameter (the caller's array);
- the old value is *dead*: no binding after the update, and not the return value,
  reads it through any name (``y = x``, ``match_cast``, tuples and their items alias,
  and so does a view: ``call_view`` reads its base's buffer, so a use of the view is a
  use of the base);
- the target is not itself a view (an update writes its output row-major).

:class:`BufferFacts` tracks, per value, the buffers it may refer to. The result of an
in-place update refers to a *new version* of its target's buffer, so later uses of the
result do not count as uses of the old value::

    lv1 = call_tir(mod.k, (x,))                      # buffer b1 (owned)
    lv2 = call_tir_inplace(mod.dus, (u,), (lv1,))    # b1 consumed here; lv2 is b1'
    lv3 = call_tir_inplace(mod.dus, (v,), (lv2,))    # fine: b1' consumed
    return (lv3, lv1)                                 # lv1 read after its update: refused
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from relaxjax.ir.builtin import CALL_TIR_INPLACE
from relaxjax.ir.control import donated_params
from relaxjax.ir.nodes import (
    AnyBinding,
    Call,
    Constant,
    Expr,
    Function,
    MatchCast,
    Tuple,
    TupleGetItem,
    Var,
)
from relaxjax.ir.struct_info import StructInfo, TupleInfo
from relaxjax.ir.view import ViewFacts, is_view_call

__all__ = ["BufferFacts", "flat_bindings"]

# A value's buffers: a set of buffer ids for a tensor, a tuple of those for a tuple.
Tree = frozenset[int] | tuple


@dataclass(slots=True)
class _Buffer:
    owned: bool
    what: str  # how it came to be, for messages
    last_use: int = -1


def flat_bindings(function: Function) -> Iterator[AnyBinding]:
    """The bindings of every block, in order (their positions are the indices)."""
    for block in function.body.blocks:
        yield from block.bindings


def _flat(tree: Tree) -> frozenset[int]:
    if isinstance(tree, frozenset):
        return tree
    return frozenset().union(*(_flat(t) for t in tree)) if tree else frozenset()


class BufferFacts:
    """The buffers each value of ``function`` may refer to, whether the function owns them
    and the last binding that reads them (``len(bindings)`` for the return value)."""

    def __init__(self, function: Function) -> None:
        self.buffers: list[_Buffer] = []
        self.trees: dict[Var, Tree] = {}
        self.views = ViewFacts(function)
        donated = donated_params(function)
        for index, param in enumerate(function.params):
            what = f"parameter {param.name_hint}"
            owned = index in donated
            self.trees[param] = self._fresh(param.info, owned, what)
        bindings = list(flat_bindings(function))
        for position, binding in enumerate(bindings):
            self._bind(position, binding)
        self._use(function.body.body, len(bindings))

    def _new(self, owned: bool, what: str) -> frozenset[int]:
        self.buffers.append(_Buffer(owned, what))
        return frozenset((len(self.buffers) - 1,))

    def _fresh(self, info: StructInfo, owned: bool, what: str) -> Tree:
        if isinstance(info, TupleInfo):
            return tuple(self._fresh(f, owned, what) for f in info.fields)
        return self._new(owned, what)

    def tree(self, expr: Expr) -> Tree:
        """The buffers ``expr`` may refer to."""
        if isinstance(expr, Var):
            return self.trees.get(expr, frozenset())
        if isinstance(expr, Tuple):
            return tuple(self.tree(f) for f in expr.fields)
        if isinstance(expr, TupleGetItem):
            inner = self.tree(expr.tuple_value)
            if isinstance(inner, tuple) and expr.index < len(inner):
                return inner[expr.index]
            return _flat(inner)
        if isinstance(expr, Constant):
            return self._new(False, "a constant")
        return frozenset()  # scalars, shapes, function names: no buffer

    def _use(self, expr: Expr, position: int) -> None:
        for buffer in _flat(self.tree(expr)):
            self.buffers[buffer].last_use = max(self.buffers[buffer].last_use, position)

    def _bind(self, position: int, binding: AnyBinding) -> None:
        value = binding.value
        if isinstance(value, Call):
            for arg in value.args:
                self._use(arg, position)
        else:
            self._use(value, position)
        if isinstance(binding, MatchCast) or not isinstance(value, Call):
            self.trees[binding.var] = self.tree(value)
        elif is_view_call(value):
            self.trees[binding.var] = self.tree(value.args[0])  # the base's memory
        elif value.op is CALL_TIR_INPLACE:
            what = f"the update of {binding.var.name_hint}"
            self.trees[binding.var] = self._fresh(binding.var.info, True, what)
        else:
            what = f"the result of {binding.var.name_hint}"
            self.trees[binding.var] = self._fresh(binding.var.info, True, what)

    def why_not_update(
        self, position: int, target: Expr, inputs: Sequence[Expr] = ()
    ) -> str | None:
        """Why the binding at ``position`` may not update ``target`` in place while reading
        ``inputs`` (None: it may)."""
        tree = self.tree(target)
        if not isinstance(tree, frozenset) or len(tree) != 1:
            return "it is not a single tensor"
        if self.views.view(target) is not None:
            return "it is a view of another tensor's memory"
        (index,) = tree
        buffer = self.buffers[index]
        if not buffer.owned:
            return f"its buffer is {buffer.what}, which the function does not own"
        if buffer.last_use > position:
            return "it is read after the update"
        if any(index in _flat(self.tree(i)) for i in inputs):
            return "the same call also reads it"
        return None

    def can_update(self, position: int, target: Expr, inputs: Sequence[Expr] = ()) -> bool:
        """Whether the binding at ``position`` may update ``target`` in place."""
        return self.why_not_update(position, target, inputs) is None
