"""Views: layout ops that only move elements become strided views, costing no copy.

A reshape of a contiguous tensor, a transpose, ``expand_dims``/``squeeze``, a slice
(any step), a ``split`` and a ``broadcast_to`` whose repeated axes are known select
elements of their operand at positions that are an affine function of the indices:
a :class:`~relaxjax.ir.layout.Layout` (shape, strides, offset) of the operand's
memory. Such a binding becomes a ``call_view`` of the tensor whose memory it reads
(views of views are composed, so every view reads a tensor laid out row-major)::

    lv2: Tensor((1, n, 2304), "float32") = add(lv1, b)
    lv3: Tuple(...) = split(lv2, sections=3, axis=-1)
    lv4: Tensor((1, n, 768), "float32") = lv3[0]
    lv7: Tensor((1, n, 12, 64), "float32") = reshape(lv4, shape=(1, n, 12, 64))
    lv8: Tensor((1, 12, n, 64), "float32") = transpose(lv7, axes=(0, 2, 1, 3))
  becomes
    lv3_0 = call_view(lv2, shape=(1, n, 768), strides=(n * 2304, 2304, 1), offset=0)
    ...
    lv8 = call_view(lv2, shape=(1, 12, n, 64), strides=(n * 2304, 64, 2304, 1), offset=0)

A view is made only where every use of it can read it as it is (decided per binding,
through aliases, tuples and their items):

- a kernel (any op call, ``call_tir``) reads any layout: after legalisation its
  parameter buffer declares the view's strides (:mod:`relaxjax.passes.strides`);
- numpy's library calls (``call_extern`` of ``numpy.*``: BLAS takes a transposed
  operand as a flag) read any layout, so ``x @ w.T`` costs no copy of ``w``;
- a call of a graph function or a control op, another library, needs a contiguous
  view (a row-major run of its base: a reshape or an outer slice);
- a returned value must be contiguous and must not read a parameter or a constant:
  results are fresh arrays or views of the program's own memory, never of the
  caller's arguments (jax returns new arrays; a caller writing into a result must
  not change its input), and always C-contiguous;
- an in-place update never writes a view.

Otherwise the op stays, and legalisation makes it a copy kernel (which itself reads
its operand through strides when that is a view). Run-time checks of the op are kept
on the view. The pass runs before ``inplace_updates``, so that the in-place pass sees
which tensors a view keeps reading (:class:`relaxjax.ir.inplace.BufferFacts`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from relaxjax.errors import RelaxError
from relaxjax.ir import (
    CALL_EXTERN,
    CALL_TIR,
    CALL_TIR_INPLACE,
    Binding,
    BindingBlock,
    Call,
    Constant,
    DataflowBlock,
    DataflowVar,
    Expr,
    ExternFunc,
    Function,
    GlobalVar,
    IRModule,
    Layout,
    MatchCast,
    SeqExpr,
    TensorInfo,
    Tuple,
    TupleGetItem,
    TupleInfo,
    Var,
    call_view,
    is_control_call,
)
from relaxjax.ops.axes import normalize_axes
from relaxjax.ops.base import normalize_axis
from relaxjax.ops.index import StridedSlice, slice_extent
from relaxjax.ops.join import Split
from relaxjax.ops.manipulate import (
    BroadcastTo,
    ExpandDims,
    Reshape,
    Squeeze,
    Swapaxes,
    Transpose,
    permutation,
    size_one_axes,
    swap_permutation,
)
from relaxjax.passes.legalize import is_op_call

__all__ = ["VIEW_RULES", "STRIDED_LIBRARIES", "make_views", "view_rule"]

#: Library symbols (prefixes) whose functions take numpy arrays of any strides.
STRIDED_LIBRARIES = ("numpy.",)

# What a use of a value needs of it (see the module doc).
_ANY = "any"  # a kernel, a strided library call, another view
_CONTIGUOUS = "contiguous"  # a graph function, a control op, another library
_RETURN = "return"  # contiguous, and not a view of a parameter or constant
_NO_VIEW = "no view"  # an in-place update's target

# A rule: (op attrs, operand info, result info, operand layout) -> layout(s) or None.
Rule = Callable[[object, TensorInfo, object, Layout], "Layout | tuple[Layout, ...] | None"]

#: The layout rule of each layout op (keyed by op class; see :func:`view_rule`).
VIEW_RULES: dict[type, Rule] = {}


def view_rule(op_class: type) -> Callable[[Rule], Rule]:
    """Register the layout rule of ``op_class``: the layout of its result as a view of
    its operand's memory, given the operand's layout (None: no view can hold it)."""

    def register(rule: Rule) -> Rule:
        VIEW_RULES[op_class] = rule
        return rule

    return register


@view_rule(Reshape)
def _reshape(attrs, x: TensorInfo, out, layout: Layout) -> Layout | None:
    return layout.reshape(out.shape)


@view_rule(Transpose)
def _transpose(attrs, x: TensorInfo, out, layout: Layout) -> Layout:
    return layout.transpose(permutation("transpose", attrs.axes, layout.ndim))


@view_rule(Swapaxes)
def _swapaxes(attrs, x: TensorInfo, out, layout: Layout) -> Layout:
    return layout.transpose(swap_permutation("swapaxes", attrs.axis1, attrs.axis2, layout.ndim))


@view_rule(ExpandDims)
def _expand_dims(attrs, x: TensorInfo, out, layout: Layout) -> Layout:
    return layout.expand(out.shape, normalize_axes("expand_dims", attrs.axis, len(out.shape)))


@view_rule(Squeeze)
def _squeeze(attrs, x: TensorInfo, out, layout: Layout) -> Layout:
    if attrs.axis is None:
        return layout.squeeze(size_one_axes("squeeze", x))
    return layout.squeeze(normalize_axes("squeeze", attrs.axis, layout.ndim))


@view_rule(BroadcastTo)
def _broadcast_to(attrs, x: TensorInfo, out, layout: Layout) -> Layout | None:
    return layout.broadcast(out.shape)


@view_rule(StridedSlice)
def _strided_slice(attrs, x: TensorInfo, out, layout: Layout) -> Layout:
    axes = normalize_axes("strided_slice", attrs.axes, layout.ndim)
    for axis, begin, end, step in zip(axes, attrs.begin, attrs.end, attrs.step):
        start, length = slice_extent(x.shape[axis], begin, end, step)  # type: ignore[index]
        layout = layout.slice(axis, start, length, step)
    return layout.squeeze(normalize_axes("strided_slice", attrs.drop, layout.ndim))


@view_rule(Split)
def _split(attrs, x: TensorInfo, out, layout: Layout) -> tuple[Layout, ...]:
    axis = normalize_axis("split", attrs.axis, layout.ndim)
    pieces, start = [], 0
    for field in out.fields:
        length = field.shape[axis]
        pieces.append(layout.slice(axis, start, length, 1))
        start = start + length
    return tuple(pieces)


# -- what each value is and what its uses need ---------------------------------------------


@dataclass(frozen=True, slots=True)
class _Memory:
    """Where a tensor's elements are: ``base`` (a var or constant holding row-major
    memory), read through ``layout``; ``kind`` says what the base is."""

    base: Expr
    layout: Layout
    kind: str  # "param", "constant" or "computed"


def _known(info: object) -> bool:
    return isinstance(info, TensorInfo) and info.shape is not None


def _result_known(info: object) -> bool:
    if isinstance(info, TupleInfo):
        return all(_known(f) for f in info.fields)
    return _known(info)


class _Function:
    """The views of one graph function (see the module doc)."""

    def __init__(self, function: Function) -> None:
        self.function = function
        self.params = set(function.params)
        self.memory: dict[Var, object] = {}  # var -> _Memory, or a tuple of them
        self.candidates: dict[Var, object] = {}  # var -> _Memory or tuple: may be a view
        self.needs: dict[Var, object] = {}  # var -> set of needs, or a tuple of them

    # -- forward: the memory each value reads -------------------------------------------

    def own_memory(self, expr: Expr) -> object:
        """``expr``'s memory: its own unless it is (an alias of) a candidate view."""
        if isinstance(expr, Var) and expr in self.memory:
            return self.memory[expr]
        if isinstance(expr, TupleGetItem):
            inner = self.own_memory(expr.tuple_value)
            if isinstance(inner, tuple) and expr.index < len(inner):
                return inner[expr.index]
            return None
        if isinstance(expr, Tuple):
            return tuple(self.own_memory(f) for f in expr.fields)
        if not isinstance(expr, (Var, Constant)) or not _known(expr.info):
            return None
        kind = "param" if expr in self.params else "computed"
        kind = "constant" if isinstance(expr, Constant) else kind
        return _Memory(expr, Layout.contiguous(expr.info.shape), kind)  # type: ignore[union-attr]

    def forward(self) -> None:
        for binding in _bindings(self.function):
            value = binding.value
            if isinstance(binding, MatchCast) or isinstance(value, (Var, Tuple, TupleGetItem)):
                memory = self.own_memory(value)
                if memory is not None and _shapes_agree(memory, binding.var.info):
                    self.memory[binding.var] = memory
                continue
            candidate = self.candidate(value)
            if candidate is not None:
                self.memory[binding.var] = candidate
                self.candidates[binding.var] = candidate

    def candidate(self, value: Expr) -> object:
        """The memory ``value`` would read as a view, when it is a layout op that can be."""
        if not is_op_call(value) or len(value.args) != 1:  # type: ignore[union-attr]
            return None
        call: Call = value  # type: ignore[assignment]
        rule = VIEW_RULES.get(type(call.op))
        if rule is None or not _result_known(call.info):
            return None
        operand = call.args[0]
        memory = self.own_memory(operand)
        if not isinstance(memory, _Memory):
            return None
        try:
            layouts = rule(call.attrs, operand.info, call.info, memory.layout)
        except (RelaxError, ValueError, TypeError):
            return None  # an operand the rule cannot read: the op stays
        if layouts is None:
            return None
        if isinstance(layouts, tuple):
            return tuple(_Memory(memory.base, lay, memory.kind) for lay in layouts)
        return _Memory(memory.base, layouts, memory.kind)

    # -- backward: what the uses of each value need -------------------------------------

    def need(self, expr: Expr, what: object) -> None:
        """Record that a use needs ``what`` (a set, or a tuple of sets for a tuple) of
        ``expr``."""
        if isinstance(expr, Tuple):
            for k, field in enumerate(expr.fields):
                self.need(field, what[k] if isinstance(what, tuple) else what)
            return
        if isinstance(expr, TupleGetItem):
            inner = expr.tuple_value
            info = inner.info
            if isinstance(info, TupleInfo) and isinstance(inner, (Var, Tuple, TupleGetItem)):
                tree = tuple(set() for _ in info.fields)
                tree[expr.index].update(_flat(what))
                self.need(inner, tree)
            return
        if not isinstance(expr, Var):
            return
        current = self.needs.get(expr)
        self.needs[expr] = _merge(current, what)

    def backward(self) -> None:
        bindings = list(_bindings(self.function))
        self.need(self.function.body.body, {_RETURN})
        for binding in reversed(bindings):
            value = binding.value
            var = binding.var
            if isinstance(binding, MatchCast) or isinstance(value, (Var, Tuple, TupleGetItem)):
                if var in self.needs:
                    self.need(value, self.needs[var])
                continue
            if isinstance(value, Call):
                self.call_needs(var, value)

    def call_needs(self, var: Var, call: Call) -> None:
        if var in self.candidates:
            self.need(call.args[0], {_ANY})
            return
        if call.op is CALL_TIR_INPLACE:
            self.need(call.args[1], {_ANY})
            self.need(call.args[2], {_NO_VIEW})
            return
        if call.op is CALL_TIR or is_op_call(call):
            kind = _ANY
        elif call.op is CALL_EXTERN:
            func = call.args[0]
            strided = isinstance(func, ExternFunc) and func.symbol.startswith(STRIDED_LIBRARIES)
            kind = _ANY if strided else _CONTIGUOUS
        elif isinstance(call.op, GlobalVar) or is_control_call(call):
            kind = _CONTIGUOUS
        else:
            kind = _CONTIGUOUS  # an op-like builtin this pass does not know: be safe
        for arg in call.args:
            self.need(arg, {kind})

    # -- decisions ------------------------------------------------------------------------

    def accepted(self, var: Var) -> bool:
        memory = self.candidates[var]
        needs = self.needs.get(var, set())
        if isinstance(memory, tuple):
            trees = needs if isinstance(needs, tuple) else tuple(needs for _ in memory)
            return all(_fits(m, _flat(n)) for m, n in zip(memory, trees))
        return _fits(memory, _flat(needs))  # type: ignore[arg-type]

    def rewrite(self) -> Function:
        self.forward()
        if not self.candidates:
            return self.function
        self.backward()
        chosen = {v for v in self.candidates if self.accepted(v)}
        if not chosen:
            return self.function
        blocks = []
        for block in self.function.body.blocks:
            dataflow = isinstance(block, DataflowBlock)
            bindings: list = []
            for binding in block.bindings:
                if binding.var in chosen:
                    bindings += self.views_of(binding, dataflow)
                else:
                    bindings.append(binding)
            blocks.append((DataflowBlock if dataflow else BindingBlock)(bindings))
        f = self.function
        return Function(f.params, SeqExpr(blocks, f.body.body), f.ret_info, f.name, f.attrs)

    def views_of(self, binding: Binding, dataflow: bool) -> list[Binding]:
        call: Call = binding.value  # type: ignore[assignment]
        memory = self.candidates[binding.var]
        if isinstance(memory, _Memory):
            view = _view_call(memory, binding.var.info, call.checks)
            return [Binding(binding.var, view, binding.location)]
        pieces, bindings = [], []
        kind = DataflowVar if dataflow else Var
        info: TupleInfo = binding.var.info  # type: ignore[assignment]
        for k, (piece, field) in enumerate(zip(memory, info.fields)):  # type: ignore[arg-type]
            var = kind(f"{binding.var.name_hint}_{k}", field)
            checks = call.checks if k == 0 else ()
            bindings.append(Binding(var, _view_call(piece, field, checks), binding.location))
            pieces.append(var)
        bindings.append(Binding(binding.var, Tuple(pieces), binding.location))
        return bindings


def _view_call(memory: _Memory, info: TensorInfo, checks: Sequence) -> Call:
    layout = memory.layout
    call = call_view(memory.base, layout.shape, layout.strides, layout.offset)
    out = TensorInfo(layout.shape, info.dtype, weak=info.weak)
    return Call(call.op, call.args, call.attrs, out, tuple(checks))


def _fits(memory: _Memory, needs: set[str]) -> bool:
    if _NO_VIEW in needs:
        return False
    if (_CONTIGUOUS in needs or _RETURN in needs) and not memory.layout.is_contiguous():
        return False
    return not (_RETURN in needs and memory.kind != "computed")


def _flat(what: object) -> set[str]:
    if isinstance(what, tuple):
        return set().union(*(_flat(w) for w in what)) if what else set()
    return set(what)  # type: ignore[call-overload]


def _merge(current: object, what: object) -> object:
    if current is None:
        return what if not isinstance(what, set) else set(what)
    if isinstance(current, tuple) and isinstance(what, tuple) and len(current) == len(what):
        return tuple(_merge(c, w) for c, w in zip(current, what))
    if isinstance(current, tuple) or isinstance(what, tuple):
        return _flat(current) | _flat(what)
    return current | what  # type: ignore[operator]


def _shapes_agree(memory: object, info: object) -> bool:
    """An alias reads the same memory when its rank agrees (a match_cast may rename dims)."""
    if isinstance(memory, _Memory):
        return isinstance(info, TensorInfo) and info.ndim == memory.layout.ndim
    if isinstance(memory, tuple):
        return isinstance(info, TupleInfo) and len(info.fields) == len(memory)
    return False


def _bindings(function: Function):
    for block in function.body.blocks:
        yield from block.bindings


def make_views(mod: IRModule) -> IRModule:
    """``mod`` with its layout ops made views where every use can read them (see the
    module doc)."""
    items = {}
    changed = False
    for name, item in mod.functions.items():
        if isinstance(item, Function):
            new = _Function(item).rewrite()
            changed = changed or new is not item
            items[name] = new
        else:
            items[name] = item
    return IRModule(items) if changed else mod
