"""Tracing a control-flow region: a branch or loop body, traced once as a graph function.

``lax.cond``, ``lax.fori_loop`` and the other control-flow functions trace each branch
or body once, on tracers of the values it receives (loop carries, operands), into a
graph function of the module; the control op calls it at run time (see
:mod:`relaxjax.ir.control`). A region may use whatever its Python function closes over,
as jax allows:

- a tracer of an enclosing trace becomes an extra parameter of the region (a
  *capture*), passed by the control op; a region nested in another region captures
  through it, so each level passes the value on;
- a symbol of an enclosing trace (``x.shape[0]`` of a captured ``x``, a dim closed
  over) is passed as a scalar parameter ``Prim("int64", value=n)`` that defines it;
- arrays and Python scalars become constants, as anywhere else.

So the region's parameters are: its explicit arguments first, then its captures in the
order they were met. :func:`align_captures` gives regions that share a call site (the
branches of a switch, a loop's condition and body) the same parameter list.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from relaxjax import arith, ops
from relaxjax.errors import RelaxError, SourceLocation, TraceError
from relaxjax.ir import (
    BlockBuilder,
    Call,
    Constant,
    Expr,
    Function,
    GlobalVar,
    PrimInfo,
    PrimValue,
    ShapeExpr,
    StructInfo,
    TensorInfo,
    Tuple,
    TupleGetItem,
    Var,
    defining_symbols,
    free_symbols,
)
from relaxjax.ir.nodes import MatchCast
from relaxjax.ir.struct_info import info_dims
from relaxjax.ops.creation import FullAttrs
from relaxjax.trace import pytree
from relaxjax.trace.call import add_functions
from relaxjax.trace.context import TraceState, current, tracing
from relaxjax.trace.function import Traced, run_user_code
from relaxjax.trace.source import user_location
from relaxjax.trace.tracer import Tracer, as_operand, attach_location, bind_match_cast

__all__ = ["Capture", "Region", "RegionState", "align_captures", "trace_region", "named"]


@dataclass(frozen=True, slots=True)
class Capture:
    """A value a region closes over: ``outer`` in the enclosing trace (a var, or a
    ``PrimValue`` of a symbol), received as the parameter ``param``; ``key`` identifies
    the value across the regions of one call site."""

    key: object
    outer: Expr
    param: Var


class RegionState(TraceState):
    """The trace of a region: what it closes over becomes extra parameters."""

    __slots__ = ("parent", "captures")

    def __init__(self, builder: BlockBuilder, func_name: str, parent: TraceState) -> None:
        super().__init__(builder, func_name)
        self.parent = parent
        self.captures: dict[object, Capture] = {}

    def fresh_symbol_name(self, hint: str, internal: bool = True) -> str:
        while True:  # also unused by the enclosing traces, whose symbols it may capture
            name = super().fresh_symbol_name(hint, internal)
            if not _known_above(self.parent, name):
                return name

    def lift(self, tracer: object) -> Var | None:
        assert isinstance(tracer, Tracer)
        if tracer._trace is self:
            return tracer._var
        outer = self._outer(tracer)
        if outer is None:
            return None
        key = ("value", id(outer))
        if key not in self.captures:
            info = outer.info
            for symbol in sorted(free_symbols(info), key=lambda s: s.name):
                if symbol not in defining_symbols(info):
                    self.lift_symbol(symbol)
            self._capture(key, outer, Var(f"c{len(self.captures)}", info))
        return self.captures[key].param

    def _outer(self, tracer: Tracer) -> Expr | None:
        """The value of ``tracer`` in the parent trace (None: not from an enclosing one)."""
        if tracer._trace is self.parent:
            named(tracer)
            return tracer._var
        lifted = self.parent.lift(tracer)
        return lifted if isinstance(lifted, Var) else None

    def lift_symbol(self, symbol: arith.Sym) -> bool:
        if symbol.name in self.symbols:
            return True
        parent = self.parent
        if symbol.name not in parent.symbols and not parent.lift_symbol(symbol):
            return False
        known = parent.symbols.get(symbol.name, symbol)
        param = Var(symbol.name, PrimInfo("int64", value=known))
        self._capture(("symbol", symbol.name), PrimValue(known, "int64"), param)
        return True

    def _capture(self, key: object, outer: Expr, param: Var) -> None:
        self.builder.add_param(param)
        self.symbols.update(self.builder.symbols)
        self.captures[key] = Capture(key, outer, param)


def _known_above(state: TraceState, name: str) -> bool:
    while True:
        if name in state.symbols:
            return True
        if not isinstance(state, RegionState):
            return False
        state = state.parent


def named(tracer: Tracer) -> None:
    """Give a tensor whose shape is known only by its rank named dims (a ``match_cast``
    in its own trace), as ``tracer.shape`` does, so a region receiving it knows them."""
    info = tracer.info
    if not isinstance(info, TensorInfo) or info.shape is not None or info.ndim is None:
        return
    trace = tracer._trace
    names = [trace.fresh_symbol_name("_d") for _ in range(info.ndim)]
    spec = TensorInfo(tuple(arith.sym(name) for name in names), info.dtype)
    tracer._var = bind_match_cast(trace, tracer._var, spec, user_location())


@dataclass(frozen=True, slots=True)
class Region:
    """A traced region: ``traced`` holds its graph function (and those it calls), whose
    parameters are the explicit ones then the ``captures``; ``out_tree`` is the Python
    result's structure and ``out_infos`` its leaves' infos (tensors, weakly typed where
    jax's would be)."""

    traced: Traced
    captures: tuple[Capture, ...]

    @property
    def function(self) -> Function:
        """The region's own graph function."""
        return self.traced.module[self.traced.name]  # type: ignore[return-value]

    @property
    def out_tree(self) -> pytree.TreeDef:
        """The structure of the Python result."""
        return self.traced.out_tree

    @property
    def out_infos(self) -> tuple[StructInfo, ...]:
        """The info of each result leaf, in the enclosing trace's symbols where known."""
        return self.traced.out_infos

    @property
    def weak(self) -> tuple[bool, ...]:
        """Whether each result leaf is weakly typed."""
        return tuple(bool(getattr(i, "weak", False)) for i in self.out_infos)


def trace_region(
    name: str,
    params: Sequence[Var],
    run: Callable[[list[Tracer]], object],
    donated: Sequence[int] = (),
) -> Region:
    """Trace ``run(tracers)`` (one tracer per parameter in ``params``) as the region
    ``name`` of the trace in progress. ``params`` use the enclosing trace's symbols;
    symbols they use but do not define become captures."""
    parent = current()
    assert parent is not None, "a region is traced inside a trace"
    builder = BlockBuilder()
    state = RegionState(builder, name, parent)
    attrs = {"donated": tuple(donated)} if donated else None
    pending = _undefined_symbols(params)
    for symbol in pending:  # the parent must know them (or get them from its own parent)
        if symbol.name not in parent.symbols and not parent.lift_symbol(symbol):
            raise TraceError(f"{name}: symbol {symbol.name} is not defined where it is used")
    symbol_params = [
        Var(s.name, PrimInfo("int64", value=parent.symbols.get(s.name, s))) for s in pending
    ]
    with builder.function(name, [*params, *symbol_params], attrs), tracing(state):
        state.symbols.update(builder.symbols)
        for symbol, param in zip(pending, symbol_params):
            key = ("symbol", symbol.name)
            outer = PrimValue(parent.symbols.get(symbol.name, symbol), "int64")
            state.captures[key] = Capture(key, outer, param)
        tracers = [Tracer(p, state) for p in params]
        with builder.dataflow():
            result = run_user_code(lambda _: run(tracers), {})
            out_tree, outputs = _outputs(state, name, result)
            _capture_used_symbols(state)
            gv = builder.emit_output(Tuple(outputs))
        builder.emit_func_output(gv)
    module = builder.finalize()
    origins = tuple((callee, origin) for origin, callee in state.callees.values())
    infos = tuple(o.info for o in outputs)
    traced = Traced(module, name, tuple(params), out_tree, infos, origins)
    return Region(traced, tuple(state.captures.values()))


def _undefined_symbols(params: Sequence[Var]) -> list[arith.Sym]:
    """Symbols the parameters use that no parameter dim defines alone."""
    defined = {s.name for p in params for s in defining_symbols(p.info)}
    found: dict[str, arith.Sym] = {}
    for param in params:
        for symbol in sorted(free_symbols(param.info), key=lambda s: s.name):
            if symbol.name not in defined:
                found.setdefault(symbol.name, symbol)
    return list(found.values())


def _outputs(state: RegionState, name: str, result: object) -> tuple:
    """The result's leaves as tensors of the region (scalars become 0-d tensors, weakly
    typed when they were)."""
    leaves, out_tree = pytree.flatten(result)
    paths = pytree.leaf_paths(out_tree)
    outputs: list[Expr] = []
    location = user_location()
    for path, leaf in zip(paths, leaves):
        try:
            operand = as_operand(state, leaf, name, 0, location)
        except TypeError:
            where = f"output{path}" if path else "the output"
            raise TypeError(
                f"{name}: {where} is a {type(leaf).__name__}; a branch or loop body returns "
                "tensors, arrays, Python scalars or symbolic dims, in tuples, lists or dicts"
            ) from None
        outputs.append(as_tensor(state, operand, location))
    return out_tree, outputs


def as_tensor(state: TraceState, operand: Expr, location: SourceLocation | None) -> Expr:
    """``operand`` as a tensor: a scalar (a Python number, a symbolic dim, a scalar value)
    becomes a 0-d tensor of its dtype (``full``), weakly typed when it was."""
    if isinstance(operand, Var | Constant) and isinstance(operand.info, TensorInfo):
        return operand
    info = operand.info
    if isinstance(info, PrimInfo):
        attrs = FullAttrs((), None if info.weak else info.dtype)
        try:
            return state.builder.call(ops.get("full"), (operand,), attrs, location=location)
        except RelaxError as err:
            raise attach_location(err, location) from None
    raise TypeError(f"a branch or loop body returns tensors, got {info!r}")


def _capture_used_symbols(state: RegionState) -> None:
    """Symbols of enclosing traces that the region's bindings use (in dims of op
    attributes, say) without receiving them: captured as scalar parameters."""
    builder = state.builder
    used: set[arith.Sym] = set()
    for binding in builder.current_bindings():
        used |= free_symbols(binding.var.info)
        if not isinstance(binding, MatchCast):
            used |= _value_symbols(binding.value)
    for symbol in sorted(used, key=lambda s: s.name):
        if symbol.name not in builder.symbols:
            state.lift_symbol(symbol)


def _value_symbols(value: Expr) -> set[arith.Sym]:
    found: set[arith.Sym] = set()
    if isinstance(value, Call):
        for check in value.checks:
            for dim in check.args:
                found |= arith.free_symbols(dim)
        found |= _attr_symbols(value.attrs)
        for arg in value.args:
            found |= _value_symbols(arg)
    elif isinstance(value, Tuple):
        for field in value.fields:
            found |= _value_symbols(field)
    elif isinstance(value, TupleGetItem):
        found |= _value_symbols(value.tuple_value)
    elif isinstance(value, PrimValue | ShapeExpr):
        for dim in info_dims(value.info):
            found |= arith.free_symbols(dim)
    return found


def _attr_symbols(value: object) -> set[arith.Sym]:
    if isinstance(value, arith.Expr):
        return set(arith.free_symbols(value))
    if isinstance(value, StructInfo):
        return set(free_symbols(value))
    if isinstance(value, tuple | list):
        return {s for v in value for s in _attr_symbols(v)}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {s for f in dataclasses.fields(value) for s in _attr_symbols(getattr(value, f.name))}
    return set()


def align_captures(regions: Sequence[Region]) -> tuple[list[Expr], list[Function]]:
    """Regions called with the same arguments (switch branches, a loop's condition and
    body) take the union of their captures, in one order: returns the operands for the
    captures (in the enclosing trace) and each region's function with its parameters
    rearranged (a capture it did not use becomes an unused parameter)."""
    union: dict[object, Capture] = {}
    for region in regions:
        for capture in region.captures:
            union.setdefault(capture.key, capture)
    operands = [c.outer for c in union.values()]
    functions = []
    for region in regions:
        function = region.function
        explicit = len(function.params) - len(region.captures)
        own = {c.key: c.param for c in region.captures}
        extra = [own.get(key) or Var(c.param.name_hint, c.param.info) for key, c in union.items()]
        params = (*function.params[:explicit], *extra)
        functions.append(replace_params(function, params))
    return operands, functions


def replace_params(function: Function, params: Sequence[Var]) -> Function:
    """``function`` with another parameter list (same body)."""
    if tuple(params) == function.params:
        return function
    return Function(params, function.body, function.ret_info, function.name, function.attrs)


def add_region(state: TraceState, region: Region, function: Function) -> GlobalVar:
    """Put ``region`` (with ``function`` as its own function) and what it calls into the
    module of ``state``; returns its name there."""
    module = region.traced.module.with_function(region.traced.name, function)
    return add_functions(state, replace(region.traced, module=module))
