"""Calling a jitted function while another function is traced: a call of its own function.

``layer`` below is traced once, as a graph function of the caller's module, and every
call site binds a call of it whose result spec is deduced by matching ``layer``'s
signature against the arguments (:func:`relaxjax.ir.calls.match_call`)::

    @relax.jit
    def layer(h, w):                       # unannotated: specs from the call sites
        return rnn.gelu(h @ w)

    @relax.jit
    def model(x: relax.Tensor(("n", 64), "float32"), ws):
        for w in ws:
            x = layer(x, w)                # lv1: Tensor((n, 64), "float32") = mod.layer(x, w0)
        return x

**Parameter specs.** An annotated parameter takes its annotation (the callee's own
symbols). An unannotated one takes the *argument's spec, generalised*: static dims stay
static (as ``jax.jit`` specialises on shapes), and symbolic dims become the callee's own
symbols, keeping the relations the caller knows:

- a dim that is one caller symbol becomes a callee symbol (named after it, with its
  declared bounds); the same caller symbol anywhere gives the same callee symbol, and
  a caller dim an annotated parameter binds (``x: (n, 4)`` given ``(a + 1, 4)``) is
  that parameter's symbol (``n``) wherever else it appears;
- a compound dim (``a + 1``) is kept, over the callee symbols, when every symbol in
  it is one; otherwise it becomes a fresh symbol ``d0, d1, ...`` (the same dim, the
  same symbol);
- Python scalars are weakly typed scalars whose value is not specialised (as at the
  top level); a symbolic dim passed as a value is a scalar carrying its symbol.

Two calls whose generalised specs are the same up to the names of the symbols share
one trace: a layer over a dict of weights is traced once for all layers of a model,
whatever the caller calls its batch symbol. Static arguments key the trace by value.

A call whose argument spec is coarser than the callee needs (a shape only known as a
rank after a broadcast of unrelated dims) names its dims first (``match_cast`` to fresh
symbols, as ``x.shape`` does), so every callee symbol has a value in the caller.

A function may not call itself with the same specs (its trace would never end):
that raises ``TraceError`` naming the chain of calls.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from contextlib import contextmanager

import numpy as np

from relaxjax import arith, dtypes
from relaxjax.arith import Dim, Sym
from relaxjax.errors import RelaxError, SourceLocation, TraceError
from relaxjax.ir import (
    Call,
    Constant,
    Expr,
    ExprMutator,
    GlobalVar,
    PrimInfo,
    PrimValue,
    StructInfo,
    TensorInfo,
    subs_info,
)
from relaxjax.trace import pytree
from relaxjax.trace.context import TraceState, current
from relaxjax.trace.function import Traced
from relaxjax.trace.signature import (
    CallPlan,
    Signature,
    check_structure,
    plan_key,
    static_value,
)
from relaxjax.trace.source import user_location
from relaxjax.trace.spec import ParamSpec
from relaxjax.trace.tracer import Tracer, as_operand, attach_location, wrap

__all__ = ["add_functions", "call_traced", "tracing_once"]

_SCALARS = (bool, int, float)


def call_traced(
    signature: Signature,
    trace: Callable[[CallPlan], Traced],
    args: Sequence[object],
    kwargs: Mapping[str, object],
) -> object:
    """Call the jitted function of ``signature`` from the trace in progress.

    ``trace(plan)`` traces (or finds cached) the callee for a plan. Returns the
    callee's outputs as tracers, in its output structure.
    """
    state = current()
    assert state is not None, "call_traced runs inside a trace"
    location = user_location()
    plan, operands = _plan(state, signature, args, kwargs, location)
    traced = trace(plan)
    callee = add_functions(state, traced)
    try:
        var = state.builder.emit(Call(callee, operands), location=location)
    except RelaxError as err:
        raise attach_location(err, location) from None
    result = wrap(state, var, location)
    count = traced.out_tree.num_leaves
    leaves = [result] if count == 1 else list(result)  # type: ignore[call-overload]
    return pytree.unflatten(traced.out_tree, leaves)


# --------------------------------------------------------------------------- recursion

_ACTIVE: list[tuple[int, Hashable, str]] = []


@contextmanager
def tracing_once(owner: object, key: Hashable, name: str) -> Iterator[None]:
    """Mark the trace of ``owner`` for ``key`` in progress; re-entering it is recursion."""
    for index, (other, other_key, _) in enumerate(_ACTIVE):
        if other == id(owner) and other_key == key:
            chain = " -> ".join(f"{n}()" for _, _, n in _ACTIVE[index:])
            raise TraceError(
                f"{name}() calls itself ({chain} -> {name}()) with the same argument specs, so "
                "its trace would never end: recursion must stop at trace time, e.g. on a "
                "static argument (static_argnames) that changes at each level",
                location=user_location(),
            )
    _ACTIVE.append((id(owner), key, name))
    try:
        yield
    finally:
        _ACTIVE.pop()


# --------------------------------------------------------------------------- the plan


def _plan(
    state: TraceState,
    signature: Signature,
    args: Sequence[object],
    kwargs: Mapping[str, object],
    location: SourceLocation | None,
) -> tuple[CallPlan, list[Expr]]:
    """The callee's parameter specs (readable and canonical) and the call's operands."""
    func = signature.name
    try:
        bound = signature.signature.bind(*args, **kwargs)
    except TypeError as err:
        raise TypeError(f"{func}() {err}") from None
    statics: list[tuple[str, Hashable]] = []
    traced: list[tuple[str, pytree.TreeDef, list[Expr], list[StructInfo] | None]] = []
    for name in signature.signature.parameters:
        if name not in bound.arguments:
            continue  # the function's own default applies: nothing to trace
        value = bound.arguments[name]
        if name in signature.static_argnames:
            statics.append((name, _static(func, name, value)))
            continue
        declared = signature.annotations[name]
        leaves, treedef = pytree.flatten(value)
        if declared is not None:
            check_structure(func, name, treedef, declared[1])
        specs = list(declared[0]) if declared is not None else None
        operands = _operands(state, func, name, treedef, leaves, specs, location)
        traced.append((name, treedef, operands, specs))
    generaliser = _Generaliser(traced)
    params, canonical = [], []
    for name, treedef, operands, specs in traced:
        if specs is None:
            specs = [generaliser.spec(o.info, _from_python(o)) for o in operands]
            keyed = [generaliser.canonical(s) for s in specs]
        else:
            keyed = specs
        params.append(ParamSpec(name, tuple(specs), treedef))
        canonical.append(ParamSpec(name, tuple(keyed), treedef))
    flat = [o for _, _, operands, _ in traced for o in operands]
    plan = CallPlan(tuple(params), tuple(statics), (), plan_key(canonical, statics))
    return plan, flat


def _from_python(operand: Expr) -> bool:
    """Whether the operand came from a Python scalar (its value is not specialised)."""
    return isinstance(operand, PrimValue) and operand.weak and type(operand.value) in _SCALARS


def _static(func: str, name: str, value: object) -> Hashable:
    if any(isinstance(leaf, Tracer) for leaf in pytree.flatten(value)[0]):
        raise TypeError(
            f"{func}(): static argument {name!r} got a traced value; static arguments are "
            "Python values known when tracing"
        )
    return static_value(func, name, value)


def _operands(
    state: TraceState,
    func: str,
    name: str,
    treedef: pytree.TreeDef,
    leaves: Sequence[object],
    specs: Sequence[StructInfo] | None,
    location: SourceLocation | None,
) -> list[Expr]:
    """The graph operands of one parameter's leaves, converted for its annotation and
    with every tensor's dims named."""
    paths = pytree.leaf_paths(treedef)
    operands = []
    for index, (leaf, path) in enumerate(zip(leaves, paths)):
        what = f"{func}(): argument {name!r}{path}"
        spec = specs[index] if specs is not None else None
        if type(leaf) in _SCALARS and spec is not None:
            operands.append(_typed_scalar(leaf, spec, what))  # type: ignore[arg-type]
            continue
        if isinstance(leaf, Tracer) and _needs_dims(leaf, spec):
            leaf.shape  # noqa: B018 - binds fresh symbols for a coarse shape (a match_cast)
        try:
            operands.append(as_operand(state, leaf, what, 0, location))
        except TypeError:
            raise TypeError(
                f"{what}: expected a tensor, an array, a Python scalar or a symbolic dim, "
                f"got {type(leaf).__name__}"
            ) from None
    return operands


def _needs_dims(tracer: Tracer, spec: StructInfo | None) -> bool:
    info = tracer.info
    if not isinstance(info, TensorInfo) or info.shape is not None:
        return False
    return spec is None or (isinstance(spec, TensorInfo) and spec.shape is not None)


def _typed_scalar(value: bool | int | float, spec: StructInfo, what: str) -> Expr:
    """A Python scalar passed for an annotated parameter takes its dtype, as at the top level."""
    dtype = getattr(spec, "dtype", None)
    if dtype is None or not _fits(value, dtype):
        raise TypeError(f"{what}: expected {spec!r}, got Python {type(value).__name__} {value!r}")
    if isinstance(spec, PrimInfo):
        return PrimValue(value, dtype, weak=spec.weak)
    return Constant(np.asarray(value, dtypes.to_numpy(dtype)))


def _fits(value: bool | int | float, dtype: str) -> bool:
    """Python scalars are weakly typed: an int fits any number, a float a float dtype."""
    if isinstance(value, bool):
        return dtypes.is_bool(dtype)
    if isinstance(value, int):
        return dtypes.is_integer(dtype) or dtypes.is_floating(dtype)
    return dtypes.is_floating(dtype)


class _Generaliser:
    """Generalised specs for unannotated parameters (see the module doc).

    ``known`` maps caller dims to callee symbols: first from the annotated parameters'
    symbols, then from each caller symbol met alone in an unannotated argument.
    """

    def __init__(
        self, traced: Sequence[tuple[str, pytree.TreeDef, list[Expr], list[StructInfo] | None]]
    ) -> None:
        self.known: dict[Dim, Dim] = {}
        self.taken: set[str] = set()
        self.introduced: list[Sym] = []
        for _, _, operands, specs in traced:
            if specs is not None:
                for spec, operand in zip(specs, operands):
                    self._learn(spec, operand.info)
        for _, _, operands, specs in traced:
            if specs is None:
                for operand in operands:
                    for dim in _dims(operand.info):
                        if isinstance(dim, Sym) and dim not in self.known:
                            self.known[dim] = self._introduce(dim.name, dim.lower, dim.upper)

    def _learn(self, spec: StructInfo, info: StructInfo) -> None:
        self.taken |= {s.name for d in _dims(spec) for s in arith.free_symbols(d)}
        dims, arg_dims = _dims(spec), _dims(info)
        if len(dims) == len(arg_dims):
            for dim, arg_dim in zip(dims, arg_dims):
                if isinstance(dim, Sym):
                    self.known.setdefault(arg_dim, dim)

    def _introduce(self, hint: str, lower: int | None = 0, upper: int | None = None) -> Sym:
        name, count = hint, 0
        while name in self.taken:
            count += 1
            name = f"{hint}_{count}"
        self.taken.add(name)
        symbol = arith.sym(name, lower=lower, upper=upper)
        self.introduced.append(symbol)
        return symbol

    def spec(self, info: StructInfo, python_scalar: bool) -> StructInfo:
        """The generalised spec of one argument leaf."""
        if isinstance(info, PrimInfo):
            if python_scalar or info.value is None:
                return PrimInfo(info.dtype, weak=info.weak)
            return PrimInfo(info.dtype, self._dim(info.value), info.weak)
        if isinstance(info, TensorInfo) and info.shape is not None:
            return TensorInfo(tuple(self._dim(d) for d in info.shape), info.dtype)
        return info

    def _dim(self, dim: Dim) -> Dim:
        if isinstance(dim, int):
            return dim
        if dim in self.known:
            return self.known[dim]
        symbols = arith.free_symbols(dim)
        if all(isinstance(self.known.get(s), Sym) for s in symbols):
            return arith.subs(dim, {s: self.known[s] for s in symbols})
        fresh = self._introduce_fresh()
        self.known[dim] = fresh
        return fresh

    def _introduce_fresh(self) -> Sym:
        index = 0
        while f"d{index}" in self.taken:
            index += 1
        return self._introduce(f"d{index}")

    def canonical(self, spec: StructInfo) -> StructInfo:
        """``spec`` with the introduced symbols renamed by order of introduction: two call
        sites that differ only in their symbols' names get equal canonical specs."""
        names = {
            s.name: arith.sym(f"_{i}", lower=s.lower, upper=s.upper)
            for i, s in enumerate(self.introduced)
        }
        return subs_info(spec, names)


def _dims(info: StructInfo) -> tuple[Dim, ...]:
    if isinstance(info, TensorInfo):
        return info.shape or ()
    if isinstance(info, PrimInfo):
        return () if info.value is None else (info.value,)
    return ()


# --------------------------------------------------------------------------- the module


class _Rename(ExprMutator):
    """Redirects the calls of a function to the names its callees got in another module."""

    def __init__(self, names: Mapping[str, str]) -> None:
        super().__init__()
        self.names = names

    def visit_GlobalVar(self, ref: GlobalVar) -> GlobalVar:
        renamed = self.names.get(ref.name, ref.name)
        return ref if renamed == ref.name else GlobalVar(renamed)


def add_functions(state: TraceState, traced: Traced) -> GlobalVar:
    """Put the callee's graph functions (its own and those it calls) into the caller's
    module, each once however many call sites and paths reach it; returns the callee's
    name there."""
    origins = dict(traced.origins)
    names: dict[str, str] = {}
    for name, item in traced.module.graph_functions().items():
        origin = traced if name == traced.name else origins[name]
        known = state.callees.get(id(origin))
        if known is not None:
            names[name] = known[1]
            continue
        renamed = _Rename(names).visit(item) if any(k != v for k, v in names.items()) else item
        ref = state.builder.add_func(renamed, name)
        names[name] = ref.name
        state.callees[id(origin)] = (origin, ref.name)
    return GlobalVar(names[traced.name])
