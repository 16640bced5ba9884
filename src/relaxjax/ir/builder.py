"""BlockBuilder: build graph functions binding by binding, deducing struct info as it goes.

>>> bb = BlockBuilder()
>>> x = Var("x", TensorInfo(("n", 4), "float32"))
>>> with bb.function("main", [x]):
...     with bb.dataflow():
...         lv = bb.emit(Call(relu_op, [x]))          # info deduced by relu_op.infer
...         gv = bb.emit_output(lv)
...     bb.emit_func_output(gv)
>>> mod = bb.finalize()

Emitting normalises to A-normal form: nested calls in arguments are bound first. Each
call's info comes from ``op.infer(arg_infos, attrs, ctx)``; relations the op could not
prove are recorded on the call as ``Call.checks``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

from relaxjax.arith import Sym
from relaxjax.errors import ShapeError, SourceLocation, TraceError
from relaxjax.ir.calls import match_call
from relaxjax.ir.infer import InferContext
from relaxjax.ir.module import IRModule, is_kernel
from relaxjax.ir.nodes import (
    AnyBinding,
    AttrValue,
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
    MatchCast,
    PrimValue,
    SeqExpr,
    ShapeExpr,
    Tuple,
    TupleGetItem,
    Var,
)
from relaxjax.ir.struct_info import (
    StructInfo,
    determined_symbols,
    free_symbols,
    is_base_of,
    restrict_symbols,
)

_ATOMS = (Var, Constant, PrimValue, ShapeExpr, GlobalVar, ExternFunc)


def is_leaf(expr: Expr) -> bool:
    """Whether ``expr`` may appear as an operand: a var, a constant or a tuple of leaves."""
    if isinstance(expr, Tuple):
        return all(is_leaf(f) for f in expr.fields)
    return isinstance(expr, _ATOMS)


@dataclass
class _FunctionScope:
    """The state of the function being built."""

    name: str
    params: tuple[Var, ...]
    attrs: Mapping[str, AttrValue] | None
    symbols: dict[str, Sym]
    blocks: list[BindingBlock] = field(default_factory=list)
    bindings: list[AnyBinding] = field(default_factory=list)
    in_dataflow: bool = False
    var_count: int = 0
    output_count: int = 0
    done: bool = False


class BlockBuilder:
    """Builds an :class:`IRModule` one binding at a time (see the module docstring)."""

    def __init__(self, module: IRModule | None = None) -> None:
        self._items: dict[str, object] = dict(module.functions) if module is not None else {}
        self._scope: _FunctionScope | None = None

    # -- scopes ---------------------------------------------------------------------------

    @contextmanager
    def function(
        self, name: str, params: Sequence[Var], attrs: Mapping[str, AttrValue] | None = None
    ) -> Iterator[None]:
        """Open the function ``name``; it must end with :meth:`emit_func_output`."""
        if self._scope is not None:
            raise RuntimeError(f"cannot open function {name!r} inside {self._scope.name!r}")
        if name in self._items:
            raise ValueError(f"the module already has an item named {name!r}")
        params = tuple(params)
        self._scope = _FunctionScope(name, params, attrs, _param_symbols(name, params))
        try:
            yield
            if not self._scope.done:
                raise RuntimeError(f"function {name!r} ended without emit_func_output")
        finally:
            self._scope = None

    def add_param(self, param: Var) -> None:
        """Append a parameter to the function being built; its symbols become defined.

        A control-flow region (a branch or loop body) is traced as a function of its own
        and receives the values it closes over as extra parameters, met while tracing.
        """
        scope = self._current("add_param")
        params = (*scope.params, param)
        scope.symbols.update(_param_symbols(scope.name, params))
        scope.params = params

    @contextmanager
    def dataflow(self) -> Iterator[None]:
        """Open a dataflow block: bindings get ``DataflowVar``s, outputs via :meth:`emit_output`."""
        scope = self._current("dataflow")
        if scope.in_dataflow:
            raise RuntimeError("dataflow blocks do not nest")
        self._flush(scope)
        scope.in_dataflow = True
        try:
            yield
        finally:
            self._flush(scope)
            scope.in_dataflow = False

    def _current(self, what: str) -> _FunctionScope:
        if self._scope is None:
            raise RuntimeError(f"{what} needs an open function (use `with bb.function(...)`)")
        if self._scope.done:
            raise RuntimeError(f"{what} after emit_func_output of {self._scope.name!r}")
        return self._scope

    @staticmethod
    def _flush(scope: _FunctionScope) -> None:
        if scope.bindings:
            block_type = DataflowBlock if scope.in_dataflow else BindingBlock
            scope.blocks.append(block_type(scope.bindings))
            scope.bindings = []

    def current_bindings(self) -> tuple[AnyBinding, ...]:
        """The bindings of the function being built so far, in order."""
        scope = self._current("current_bindings")
        return tuple(b for block in scope.blocks for b in block.bindings) + tuple(scope.bindings)

    @property
    def symbols(self) -> Mapping[str, Sym]:
        """The symbols defined so far in the current function, by name (with their bounds)."""
        return dict(self._scope.symbols) if self._scope is not None else {}

    # -- emitting -------------------------------------------------------------------------

    def _new_var(self, scope: _FunctionScope, name_hint: str | None, info: StructInfo) -> Var:
        if name_hint is None:
            name_hint = f"lv{scope.var_count}"
            scope.var_count += 1
        return (DataflowVar if scope.in_dataflow else Var)(name_hint, info)

    def emit(
        self, expr: Expr, name_hint: str | None = None, location: SourceLocation | None = None
    ) -> Var:
        """Bind ``expr`` (normalised, its info deduced) to a new var and return the var."""
        scope = self._current("emit")
        value = self.normalize(expr, location)
        var = self._new_var(scope, name_hint, value.info)
        scope.bindings.append(Binding(var, value, location))
        return var

    def call(
        self,
        op: object,
        args: Sequence[Expr],
        attrs: object = None,
        name_hint: str | None = None,
        location: SourceLocation | None = None,
    ) -> Var:
        """Shorthand for ``emit(Call(op, args, attrs))``."""
        return self.emit(Call(op, args, attrs), name_hint, location)  # type: ignore[arg-type]

    def emit_output(
        self, value: Expr, name_hint: str | None = None, location: SourceLocation | None = None
    ) -> Var:
        """Inside a dataflow block, bind ``value`` to a var that outlives the block."""
        scope = self._current("emit_output")
        if not scope.in_dataflow:
            raise RuntimeError("emit_output is only meaningful inside a dataflow block")
        value = self.normalize(value, location)
        if name_hint is None:
            name_hint = "gv" if scope.output_count == 0 else f"gv{scope.output_count}"
            scope.output_count += 1
        var = Var(name_hint, value.info)
        scope.bindings.append(Binding(var, value, location))
        return var

    def emit_match_cast(
        self,
        value: Expr,
        info: StructInfo,
        name_hint: str | None = None,
        location: SourceLocation | None = None,
    ) -> Var:
        """Assert at run time that ``value`` matches ``info``, binding its new symbols
        (each must be determined by a dim: ``determined_symbols``)."""
        scope = self._current("emit_match_cast")
        value = self._to_leaf(self.normalize(value, location), location)
        if not isinstance(info, StructInfo):
            raise TypeError(f"match_cast needs a StructInfo, got {info!r}")
        new = {s.name: s for s in free_symbols(info) if s.name not in scope.symbols}
        binders = {s.name for s in determined_symbols(info, scope.symbols)}
        unbindable = sorted(set(new) - binders)
        if unbindable:
            raise TraceError(
                f"match_cast: symbol {unbindable[0]} in {info!r} is not defined yet and no dim "
                "determines it, so no value can bind it (a dim determines a symbol when it is "
                f"the symbol alone or linear in it, like {unbindable[0]} * 2 + 1, once its "
                "other symbols are known)",
                location=location,
            )
        if is_base_of(info, value.info) is False:
            raise ShapeError(
                f"match_cast: a value of {value.info!r} can never match {info!r}",
                location=location,
            )
        scope.symbols.update(new)
        var = self._new_var(scope, name_hint, info)
        scope.bindings.append(MatchCast(var, value, info, location))
        return var

    def emit_func_output(self, value: Expr, ret_info: StructInfo | None = None) -> GlobalVar:
        """End the current function, returning ``value``; the function joins the module.

        The return info defaults to the info of ``value`` with every dim that uses a symbol
        the parameters do not define erased (such dims are unknown to a caller).
        """
        scope = self._current("emit_func_output")
        if scope.in_dataflow:
            raise RuntimeError("end the dataflow block before emit_func_output")
        value = self._to_leaf(self.normalize(value, None), None)
        self._flush(scope)
        if _uses_dataflow_var(value):
            raise RuntimeError(f"a function cannot return a dataflow var: {value!r}")
        param_symbols = _param_symbols(scope.name, scope.params).values()
        if ret_info is None:
            ret_info = restrict_symbols(value.info, param_symbols)
        elif is_base_of(ret_info, value.info) is False:
            raise ShapeError(
                f"function {scope.name}: returns a value of {value.info!r}, "
                f"which can never match the declared {ret_info!r}"
            )
        body = SeqExpr(scope.blocks, value)
        self._items[scope.name] = Function(scope.params, body, ret_info, scope.name, scope.attrs)
        scope.done = True
        return GlobalVar(scope.name)

    # -- normalisation --------------------------------------------------------------------

    def normalize(self, expr: Expr, location: SourceLocation | None = None) -> Expr:
        """``expr`` in A-normal form with its info: operands are leaves (nested calls bound)."""
        if isinstance(expr, Tuple):
            return _rebuild_tuple(expr, [self._to_leaf(f, location) for f in expr.fields])
        if isinstance(expr, TupleGetItem):
            inner = self._to_leaf(expr.tuple_value, location)
            return expr if inner is expr.tuple_value else TupleGetItem(inner, expr.index)
        if isinstance(expr, Call):
            return self._normalize_call(expr, location)
        if isinstance(expr, _ATOMS):
            return expr
        raise TypeError(f"cannot emit {type(expr).__name__} as a binding value: {expr!r}")

    def _to_leaf(self, expr: Expr, location: SourceLocation | None) -> Expr:
        value = self.normalize(expr, location)
        return value if is_leaf(value) else self.emit(value, location=location)

    def _normalize_call(self, call: Call, location: SourceLocation | None) -> Call:
        args = tuple(self._to_leaf(a, location) for a in call.args)
        if call.info is not None:
            if all(a is b for a, b in zip(args, call.args)):
                return call
            return Call(call.op, args, call.attrs, call.info, call.checks)
        if isinstance(call.op, GlobalVar):
            return self._function_call(call, args, location)
        if isinstance(call.op, ExternFunc):
            raise TypeError(
                f"a call of the external function {call.op.symbol!r} needs an explicit info "
                "(use call_extern)"
            )
        info, checks = infer_call(call.op, args, call.attrs, location)
        return Call(call.op, args, _filled_attrs(call.op, call.attrs), info, checks)

    def _function_call(
        self, call: Call, args: tuple[Expr, ...], location: SourceLocation | None
    ) -> Call:
        """A call of a graph function of the module, its info and checks from matching
        the callee's signature against the arguments (:func:`~relaxjax.ir.calls.match_call`)."""
        callee = call.op
        assert isinstance(callee, GlobalVar)
        item = self._items.get(callee.name)
        if not isinstance(item, Function):
            if self._scope is not None and callee.name == self._scope.name:
                what = "the function being built (a function cannot call itself)"
            else:
                what = "a kernel (use call_tir)" if is_kernel(item) else "not a graph function"
            raise TypeError(f"cannot call {callee.name!r}: it is {what}")
        for arg in args:
            if arg.info is None:
                raise ValueError(f"argument {arg!r} of {callee.name} has no info yet")
        match = match_call(item, [a.info for a in args], location)
        return Call(callee, args, call.attrs, match.info, match.checks)

    # -- the module -----------------------------------------------------------------------

    def add_func(self, item: object, name: str) -> GlobalVar:
        """Add a kernel, graph function or extern declaration; returns its ``GlobalVar``.

        An item equal to one already in the module is not added twice; a name already
        taken by a different item gets a numeric suffix.
        """
        for existing_name, existing in self._items.items():
            if existing is item or (is_kernel(item) and _kernel_equal(existing, item)):
                return GlobalVar(existing_name)
        unique = name
        suffix = 1
        while unique in self._items or (self._scope is not None and unique == self._scope.name):
            unique = f"{name}_{suffix}"
            suffix += 1
        self._items[unique] = item
        IRModule({unique: item})  # validates the item and its name
        return GlobalVar(unique)

    def update_func(self, name: str, item: object) -> None:
        """Replace the item ``name``."""
        if name not in self._items:
            raise KeyError(f"no item named {name!r} to update")
        self._items[name] = item

    def get(self) -> IRModule:
        """The module built so far (functions still open are not included)."""
        return IRModule(self._items)

    def finalize(self) -> IRModule:
        """The finished module."""
        if self._scope is not None:
            raise RuntimeError(f"function {self._scope.name!r} is still open")
        return IRModule(self._items)


def infer_call(
    op: object, args: Sequence[Expr], attrs: object, location: SourceLocation | None = None
) -> tuple[StructInfo, tuple]:
    """Deduce the info of ``op(*args)`` and the checks it needs, through ``op.infer``."""
    attrs = _filled_attrs(op, attrs)
    arg_infos = tuple(a.info for a in args)
    for arg, info in zip(args, arg_infos):
        if info is None:
            raise ValueError(f"operand {arg!r} of {op.name} has no info yet")  # type: ignore[attr-defined]
    ctx = InferContext(op.name, arg_infos, location)  # type: ignore[attr-defined]
    info = op.infer(arg_infos, attrs, ctx)  # type: ignore[attr-defined]
    if not isinstance(info, StructInfo):
        raise TypeError(f"op {op.name}.infer returned {info!r}, not a StructInfo")  # type: ignore[attr-defined]
    return info, tuple(ctx.checks)


def _filled_attrs(op: object, attrs: object) -> object:
    """The op's attributes, defaulted when the op has some and none were given."""
    attrs_type = getattr(op, "Attrs", None)
    if attrs_type is None:
        if attrs is not None:
            raise TypeError(f"op {op.name} takes no attributes, got {attrs!r}")  # type: ignore[attr-defined]
        return None
    if attrs is None:
        try:
            return attrs_type()
        except TypeError as err:
            raise TypeError(f"op {op.name} needs attributes {attrs_type.__name__}: {err}") from None  # type: ignore[attr-defined]
    if not isinstance(attrs, attrs_type):
        raise TypeError(
            f"op {op.name} expects attributes of type {attrs_type.__name__}, got {attrs!r}"  # type: ignore[attr-defined]
        )
    return attrs


def _rebuild_tuple(expr: Tuple, fields: Sequence[Expr]) -> Tuple:
    if all(a is b for a, b in zip(fields, expr.fields)):
        return expr
    return Tuple(fields)


def _uses_dataflow_var(expr: Expr) -> bool:
    if isinstance(expr, DataflowVar):
        return True
    if isinstance(expr, Tuple):
        return any(_uses_dataflow_var(f) for f in expr.fields)
    return False


def _param_symbols(name: str, params: Sequence[Var]) -> dict[str, Sym]:
    """The symbols the parameters declare: every symbol any of them mentions.

    A dim need not name its symbol alone (``x: (n * 2,)``): the runtime solves the
    symbols from the arguments' sizes (see ``runtime.solve``), and the trace needs no
    values at all.
    """
    for param in params:
        if not isinstance(param, Var) or isinstance(param, DataflowVar):
            raise TypeError(f"function parameters must be (non-dataflow) Vars, got {param!r}")
    defined: dict[str, Sym] = {}
    for param in params:
        for symbol in sorted(free_symbols(param.info), key=lambda s: s.name):
            defined.setdefault(symbol.name, symbol)
    return defined


def _kernel_equal(a: object, b: object) -> bool:
    return is_kernel(a) and type(a) is type(b) and a == b
