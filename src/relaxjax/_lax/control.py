"""``relaxjax.lax``'s control flow: jax's branches and loops as control ops of the graph.

``cond``, ``switch``, ``while_loop``, ``fori_loop`` and ``scan`` trace each branch or
body once as a region (:mod:`relaxjax.trace.region`) and bind one control op
(:mod:`relaxjax.ir.control`) that calls it at run time, so one executable serves every
predicate value and every trip count, symbolic ones included. The rules are jax's:

- loop carries keep their pytree structure, shapes and dtypes; a body that changes one
  raises ``TypeError`` naming the carry by its path (``carry[1]['b']``), its type
  before and after. A weakly typed initial value (a Python scalar) whose body result has
  another dtype is promoted first and the body traced again, as jax does;
- branches return the same structure and dtypes; dims provably different raise
  ``TypeError``, dims that may differ are checked at run time (jax refuses those);
- ``switch`` clamps its index into range, ``cond`` takes any scalar predicate (nonzero
  is true) and, like jax, traces both branches even for a Python ``bool``;
- outside any trace, they run in Python on arrays.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from relaxjax import arith, dtypes, ops
from relaxjax.errors import RelaxError, SourceLocation
from relaxjax.ir import (
    FORI_LOOP,
    SCAN,
    SWITCH,
    WHILE_LOOP,
    Call,
    Constant,
    Expr,
    LoopAttrs,
    PrimInfo,
    PrimValue,
    ScanAttrs,
    StructInfo,
    SwitchAttrs,
    TensorInfo,
    Tuple,
    TupleGetItem,
    TupleInfo,
    Var,
)
from relaxjax.ops.elementwise import AstypeAttrs
from relaxjax.trace import pytree
from relaxjax.trace.context import TraceState, current
from relaxjax.trace.function import function_name
from relaxjax.trace.region import (
    Region,
    add_region,
    align_captures,
    as_tensor,
    named,
    trace_region,
)
from relaxjax.trace.source import user_location
from relaxjax.trace.tracer import Tracer, as_operand, attach_location

__all__ = ["cond", "fori_loop", "scan", "switch", "while_loop"]

_PYTHON_INTS = (int, np.integer)


# --------------------------------------------------------------------------- values


@dataclass(slots=True)
class _Values:
    """A pytree of traced values: its structure and each leaf as a tensor operand of the
    trace in progress (a Python scalar or a symbolic dim becomes a 0-d tensor, weakly
    typed as in jax)."""

    tree: pytree.TreeDef
    operands: list[Expr]

    @property
    def infos(self) -> list[TensorInfo]:
        return [o.info for o in self.operands]  # type: ignore[misc]

    @property
    def weak(self) -> list[bool]:
        return [i.weak for i in self.infos]

    def paths(self, root: str) -> list[str]:
        return [root + p for p in pytree.leaf_paths(self.tree)]


def _values(
    state: TraceState, value: object, what: str, location: SourceLocation | None
) -> _Values:
    leaves, tree = pytree.flatten(value)
    operands = []
    for path, leaf in zip(pytree.leaf_paths(tree), leaves):
        where = f"{what}{path}"
        if isinstance(leaf, Tracer):
            named(leaf)
        try:
            operand = as_operand(state, leaf, where, 0, location)
        except TypeError:
            raise TypeError(
                f"{where} is a {type(leaf).__name__}; expected a tensor, an array, a Python "
                "scalar or a symbolic dim"
            ) from None
        operand = as_tensor(state, operand, location)
        if not isinstance(operand.info, TensorInfo):
            raise TypeError(f"{where} must be a tensor, got a value of {operand.info!r}")
        operands.append(operand)
    return _Values(tree, operands)


def _astype(state: TraceState, operand: Expr, dtype: str, location: SourceLocation | None) -> Expr:
    """``operand`` converted to a tensor of ``dtype`` (a binding of ``astype``)."""
    if isinstance(operand.info, TensorInfo) and operand.info.dtype == dtype:
        return operand
    if isinstance(operand, Constant):
        return Constant(np.asarray(operand.data, dtypes.to_numpy(dtype)))
    try:
        return state.builder.call(
            ops.get("astype"), (operand,), AstypeAttrs(dtype), location=location
        )
    except RelaxError as err:
        raise attach_location(err, location) from None


def _type_text(info: StructInfo) -> str:
    """jax's short type text: ``float32[n, 4]``."""
    if isinstance(info, TensorInfo):
        dims = "?" if info.shape is None else ", ".join(str(d) for d in info.shape)
        return f"{info.dtype}[{dims}]"
    return repr(info)


def _param_names(prefix: str, tree: pytree.TreeDef) -> list[str]:
    names = []
    for path in pytree.leaf_paths(tree):
        suffix = re.sub(r"\W+", "_", path).strip("_")
        names.append(f"{prefix}_{suffix}" if suffix else prefix)
    return names


def _region_name(kind: str, fn: object) -> str:
    """The region's function name: the Python function's, or ``kind`` for a lambda."""
    raw = getattr(fn, "__name__", "")
    if not raw or raw == "<lambda>" or not callable(fn):
        return kind
    return function_name(fn)


def _emit(
    state: TraceState, op: object, args: list[Expr], attrs: object, location: SourceLocation | None
) -> list[Tracer]:
    """Bind the control call ``op(args)`` (its info deduced by matching its regions) and
    return a tracer per result."""
    module = state.builder.get()
    try:
        info, checks = op.deduce(args, attrs, module.functions.get, location)  # type: ignore[attr-defined]
        attrs = _with_info(attrs, info)
        var = state.builder.emit(Call(op, args, attrs, info, checks), location=location)  # type: ignore[arg-type]
    except RelaxError as err:
        raise attach_location(err, location) from None
    results = []
    for index in range(len(info.fields)):  # type: ignore[attr-defined]
        item = state.builder.emit(TupleGetItem(var, index), location=location)
        results.append(Tracer(item, state))
    return results


def _with_info(attrs: object, info: StructInfo) -> object:
    if isinstance(attrs, ScanAttrs):
        return ScanAttrs(attrs.length, attrs.reverse, info)
    return type(attrs)(info)  # type: ignore[call-arg]


# --------------------------------------------------------------------------- checks


def _check_structure(api: str, role: str, before: pytree.TreeDef, after: pytree.TreeDef) -> None:
    if before != after:
        raise TypeError(
            f"{api}: the body must return the {role} in the structure it receives (a loop "
            f"carry is fixed, as in jax): {before} before the body, {after} after it"
        )


def _check_carry(
    api: str, role: str, carry: _Values, region: Region, results: slice | None = None
) -> None:
    """The body's results (``results`` of its output leaves) keep each carry's dtype,
    rank and dims (dims only when provably different; the loop checks others)."""
    outs = region.out_infos[results] if results is not None else region.out_infos
    problems = []
    for path, before, after in zip(carry.paths(role), carry.infos, outs):
        reason = _difference(before, after)
        if reason is None and isinstance(after, TensorInfo) and after.shape is None:
            reason = (
                "its dims are only known at run time (relax.match_cast the value the body "
                "returns to the carry's spec)"
            )
        if reason is not None:
            problems.append(
                f"{path} has type {_type_text(before)} before the body but {_type_text(after)} "
                f"after it, so {reason}"
            )
    if problems:
        raise TypeError(
            f"{api}: the body changes the {role}: "
            + "; ".join(problems)
            + ". A loop carry keeps its shape and dtype in every iteration (as in jax): "
            "convert or reshape the value the body returns"
        )


def _difference(before: TensorInfo, after: StructInfo) -> str | None:
    if not isinstance(after, TensorInfo):
        return "the kinds do not match"
    if after.dtype != before.dtype:
        return "the dtypes do not match"
    if after.ndim != before.ndim:
        return "the ranks do not match"
    if after.shape is not None and before.shape is not None:
        for a, b in zip(after.shape, before.shape):
            if arith.compare(a, "==", b) is False:
                return "the shapes do not match"
    return None


def _promoted(carry: _Values, region: Region, results: slice | None = None) -> dict[int, str]:
    """Weakly typed carries whose body result has another dtype: the dtype each takes,
    as jax promotes them (``dtypes.result_type`` of the weak value and the result)."""
    outs = region.out_infos[results] if results is not None else region.out_infos
    out_weak = region.weak[results] if results is not None else region.weak
    changes = {}
    for index, (info, is_weak, out, out_is_weak) in enumerate(
        zip(carry.infos, carry.weak, outs, out_weak)
    ):
        dtype = getattr(out, "dtype", None)
        if not is_weak or dtype is None or dtype == info.dtype:
            continue
        kind = "float" if dtypes.is_floating(info.dtype) else "int"
        other = (
            dtypes.Weak("float" if dtypes.is_floating(dtype) else "int") if out_is_weak else dtype
        )
        promoted = dtypes.result_type(dtypes.Weak(kind), other)
        if promoted != info.dtype:
            changes[index] = promoted
    return changes


def _promote(
    state: TraceState, carry: _Values, changes: dict[int, str], location: SourceLocation | None
) -> None:
    for index, dtype in changes.items():  # jax converts them to strongly typed values
        carry.operands[index] = _astype(state, carry.operands[index], dtype, location)


def _carry_params(prefix: str, carry: _Values) -> list[Var]:
    return [Var(n, i) for n, i in zip(_param_names(prefix, carry.tree), carry.infos)]


# --------------------------------------------------------------------------- switch / cond


def switch(index: object, branches: Sequence[Callable[..., object]], *operands: object) -> object:
    """``branches[clamp(index, 0, len(branches) - 1)](*operands)``, as ``jax.lax.switch``."""
    branches = tuple(branches)
    if not branches:
        raise ValueError("switch: empty branch sequence")
    if not all(callable(b) for b in branches):
        raise TypeError("switch: branches argument should be a sequence of callables")
    state = current()
    if state is None:
        chosen = int(
            np.clip(np.asarray(_index_value(index)).astype(np.int32), 0, len(branches) - 1)
        )
        return branches[chosen](*operands)
    location = user_location()
    selector = _switch_index(state, index, location)
    if len(branches) == 1:
        return branches[0](*operands)
    names = [f"branch{k}" for k in range(len(branches))]
    return _branch(state, "switch", selector, branches, names, operands, location)


def cond(
    pred: object,
    true_fun: Callable[..., object],
    false_fun: Callable[..., object],
    *operands: object,
) -> object:
    """``true_fun(*operands) if pred else false_fun(*operands)``, as ``jax.lax.cond``."""
    if not (callable(true_fun) and callable(false_fun)):
        raise TypeError("cond: true_fun and false_fun arguments should be callable")
    state = current()
    if state is None:
        return true_fun(*operands) if _truth(pred) else false_fun(*operands)
    location = user_location()
    selector = _predicate(state, pred, location)
    branches = (false_fun, true_fun)  # the index is the predicate: False picks branch 0
    names = [_region_name("cond_false", false_fun), _region_name("cond_true", true_fun)]
    if names[0] == names[1]:
        names = ["cond_false", "cond_true"]
    return _branch(state, "cond", selector, branches, names, operands, location)


def _index_value(index: object) -> object:
    if isinstance(index, Tracer):
        raise TypeError("switch: a traced index used outside its trace")
    value = np.asarray(index)
    if value.ndim != 0:
        raise TypeError(
            f"switch: branch index must be scalar, got {index!r} of shape {value.shape}"
        )
    if not (np.issubdtype(value.dtype, np.integer)):
        raise TypeError(f"switch: index type must be an integer, got {index!r} as {value.dtype}")
    return value


def _truth(pred: object) -> bool:
    value = np.asarray(pred)
    if value.ndim != 0:
        raise TypeError(f"cond: pred must be a scalar, got {pred!r} of shape {value.shape}")
    if value.dtype.kind not in "biuf":
        raise TypeError(f"cond: pred type must be either boolean or number, got {value.dtype}")
    return bool(value != 0)


def _scalar_operand(
    state: TraceState, value: object, api: str, what: str, location: SourceLocation | None
) -> Expr:
    if isinstance(value, Tracer):
        info = value.info
        if not (isinstance(info, PrimInfo) or (isinstance(info, TensorInfo) and info.ndim == 0)):
            raise TypeError(f"{api}: {what} must be a scalar, got a value of {info!r}")
        return as_operand(state, value, api, 0, location)
    if isinstance(value, np.ndarray | np.generic):
        if np.ndim(value) != 0:
            raise TypeError(
                f"{api}: {what} must be a scalar, got an array of shape {np.shape(value)}"
            )
        return PrimValue(np.asarray(value).item(), dtypes.canonical(np.asarray(value).dtype))
    if isinstance(value, bool | int | float | arith.Expr):
        return as_operand(state, value, api, 0, location)
    if isinstance(value, list | tuple):
        raise TypeError(f"{api}: {what} must be a scalar, got {type(value).__name__} {value!r}")
    raise TypeError(f"{api}: {what} must be a scalar, got {type(value).__name__} {value!r}")


def _switch_index(state: TraceState, index: object, location: SourceLocation | None) -> Expr:
    operand = _scalar_operand(state, index, "switch", "the branch index", location)
    dtype = operand.info.dtype  # type: ignore[union-attr]
    if not dtypes.is_integer(dtype):
        raise TypeError(f"switch: index type must be an integer, got {dtype}")
    return operand


def _predicate(state: TraceState, pred: object, location: SourceLocation | None) -> Expr:
    if pred is None:
        raise TypeError("cond: predicate is None")
    operand = _scalar_operand(state, pred, "cond", "pred", location)
    dtype = operand.info.dtype  # type: ignore[union-attr]
    if dtype == "bool":
        return operand
    if not (dtypes.is_integer(dtype) or dtypes.is_floating(dtype)):
        raise TypeError(f"cond: pred type must be either boolean or number, got {dtype}")
    if isinstance(operand, PrimValue) and not isinstance(operand.value, arith.Expr):
        return PrimValue(bool(operand.value != 0))
    try:
        return state.builder.call(
            ops.get("not_equal"), (operand, PrimValue(0, weak=True)), location=location
        )
    except RelaxError as err:
        raise attach_location(err, location) from None


def _branch(
    state: TraceState,
    api: str,
    selector: Expr,
    branches: Sequence[Callable[..., object]],
    names: Sequence[str],
    operands: Sequence[object],
    location: SourceLocation | None,
) -> object:
    values = _values(state, tuple(operands), "operands", location)
    param_names = _param_names("x", values.tree)
    regions = []
    for fn, name in zip(branches, names):

        def run(tracers: list[Tracer], fn: Callable[..., object] = fn) -> object:
            return fn(*pytree.unflatten(values.tree, tracers))

        params = [Var(n, i) for n, i in zip(param_names, values.infos)]  # each region its own
        regions.append(trace_region(name, params, run))
    _check_branches(api, regions)
    captured, functions = align_captures(regions)
    refs = [add_region(state, r, f) for r, f in zip(regions, functions)]
    args = [selector, Tuple(refs), Tuple([*values.operands, *captured])]
    results = _emit(state, SWITCH, args, SwitchAttrs(TupleInfo(())), location)
    return pytree.unflatten(regions[0].out_tree, results)


def _check_branches(api: str, regions: Sequence[Region]) -> None:
    """Branches return the same structure, dtypes and ranks; dims provably different
    are refused (others are checked at run time by the switch)."""
    if api == "cond":  # jax compares true_fun's outputs with false_fun's
        regions = regions[::-1]
        label = ["true_fun", "false_fun"]
    else:
        label = [f"branch {k}" for k in range(len(regions))]
    first = regions[0]
    for k, region in enumerate(regions[1:], 1):
        if region.out_tree != first.out_tree:
            raise TypeError(
                f"{api} branch outputs must have the same pytree structure, but they differ: "
                f"{label[0]} returns {first.out_tree} but {label[k]} returns {region.out_tree}"
            )
        problems = []
        for path, a, b in zip(pytree.leaf_paths(first.out_tree), first.out_infos, region.out_infos):
            reason = _difference(a, b) if isinstance(a, TensorInfo) else None  # type: ignore[arg-type]
            if reason is not None:
                where = f" at path {path}" if path else ""
                problems.append(
                    f"the output of {label[0]}{where} has type {_type_text(a)} but the "
                    f"corresponding output of {label[k]} has type {_type_text(b)}, so {reason}"
                )
        if problems:
            raise TypeError(
                f"{api} branches must have equal output types but they differ: "
                + "; ".join(problems)
            )


# --------------------------------------------------------------------------- loops


def while_loop(
    cond_fun: Callable[[object], object], body_fun: Callable[[object], object], init_val: object
) -> object:
    """``while cond_fun(val): val = body_fun(val)``, as ``jax.lax.while_loop``."""
    if not (callable(cond_fun) and callable(body_fun)):
        raise TypeError("while_loop: body_fun and cond_fun arguments should be callable")
    state = current()
    if state is None:
        return _eager_while(cond_fun, body_fun, init_val)
    location = user_location()
    carry = _values(state, init_val, "init_val", location)
    for _ in range(2):  # a second trace when a weakly typed carry is promoted (as jax)
        cond_region, body_region = _trace_while(cond_fun, body_fun, carry)
        _check_structure("while_loop", "carry", carry.tree, body_region.out_tree)
        changes = _promoted(carry, body_region)
        if not changes:
            break
        _promote(state, carry, changes, location)
    _check_predicate(cond_region)
    _check_carry("while_loop", "carry", carry, body_region)
    captured, (cond_fn, body_fn) = align_captures([cond_region, body_region])
    cond_ref = add_region(state, cond_region, cond_fn)
    body_ref = add_region(state, body_region, body_fn)
    args = [cond_ref, body_ref, Tuple(carry.operands), Tuple(captured)]
    results = _emit(state, WHILE_LOOP, args, LoopAttrs(TupleInfo(())), location)
    return pytree.unflatten(carry.tree, results)


def _trace_while(cond_fun, body_fun, carry: _Values) -> tuple[Region, Region]:
    def run_cond(tracers: list[Tracer]) -> object:
        return cond_fun(pytree.unflatten(carry.tree, tracers))

    def run_body(tracers: list[Tracer]) -> object:
        return body_fun(pytree.unflatten(carry.tree, tracers))

    name = _region_name("while_cond", cond_fun)
    cond_region = trace_region(name, _carry_params("carry", carry), run_cond)
    donated = range(len(carry.operands))
    name = _region_name("while_body", body_fun)
    params = _carry_params("carry", carry)
    body_region = trace_region(name, params, run_body, donated)
    return cond_region, body_region


def _check_predicate(region: Region) -> None:
    infos = region.out_infos
    ok = (
        region.out_tree is pytree.LEAF
        and isinstance(infos[0], TensorInfo)
        and infos[0].ndim == 0
        and infos[0].dtype == "bool"
    )
    if not ok:
        shown = ", ".join(_type_text(i) for i in infos) or "nothing"
        raise TypeError(f"while_loop: cond_fun must return a boolean scalar, but got {shown}")


def fori_loop(
    lower: object,
    upper: object,
    body_fun: Callable[[object, object], object],
    init_val: object,
    *,
    unroll: object = None,
) -> object:
    """``for i in range(lower, upper): val = body_fun(i, val)``, as ``jax.lax.fori_loop``."""
    if not callable(body_fun):
        raise TypeError("fori_loop: body_fun argument should be callable")
    state = current()
    if state is None:
        return _eager_fori(lower, upper, body_fun, init_val)
    location = user_location()
    index_dtype, index_weak = _index_type(state, lower, upper)
    static = all(_is_static_bound(b) for b in (lower, upper))
    if not static and unroll not in (None, False, 1):
        raise ValueError("fori_loop: can only use `unroll` if the loop bounds are statically known")
    bounds = [_bound(state, b, index_dtype, location) for b in (lower, upper)]
    carry = _values(state, init_val, "init_val", location)
    for _ in range(2):
        index_param = Var("i", TensorInfo((), index_dtype, weak=index_weak))
        region = _trace_fori(body_fun, carry, index_param)
        _check_structure("fori_loop", "carry", carry.tree, region.out_tree)
        changes = _promoted(carry, region)
        if not changes:
            break
        _promote(state, carry, changes, location)
    _check_carry("fori_loop", "carry", carry, region)
    captured, (function,) = align_captures([region])
    ref = add_region(state, region, function)
    args = [*bounds, ref, Tuple(carry.operands), Tuple(captured)]
    results = _emit(state, FORI_LOOP, args, LoopAttrs(TupleInfo(())), location)
    return pytree.unflatten(carry.tree, results)


def _trace_fori(body_fun, carry: _Values, index_param: Var) -> Region:
    def run(tracers: list[Tracer]) -> object:
        return body_fun(tracers[0], pytree.unflatten(carry.tree, tracers[1:]))

    params = [index_param, *_carry_params("carry", carry)]
    donated = range(1, 1 + len(carry.operands))
    name = _region_name("fori_body", body_fun)
    return trace_region(name, params, run, donated)


def _is_static_bound(bound: object) -> bool:
    return isinstance(bound, _PYTHON_INTS) and not isinstance(bound, bool)


def _bound_type(bound: object) -> tuple[str, bool]:
    """The dtype of a loop bound and whether it is weakly typed."""
    if isinstance(bound, Tracer):
        info = bound.info
        if not (isinstance(info, PrimInfo) or (isinstance(info, TensorInfo) and info.ndim == 0)):
            raise TypeError(f"fori_loop: loop bounds must be scalars, got a value of {info!r}")
        return info.dtype, info.weak  # type: ignore[union-attr]
    if isinstance(bound, np.integer | np.ndarray):
        if np.ndim(bound) != 0:
            raise TypeError(f"fori_loop: loop bounds must be scalars, got shape {np.shape(bound)}")
        return dtypes.canonical(np.asarray(bound).dtype), False
    if isinstance(bound, bool) or not isinstance(bound, int | arith.Expr):
        raise TypeError(
            f"fori_loop: loop bounds must be integers, got {type(bound).__name__} {bound!r}"
        )
    return "int64", True


def _index_type(state: TraceState, lower: object, upper: object) -> tuple[str, bool]:
    """The index's dtype and weakness, by jax's rule: the bounds' common dtype (a weak
    integer takes the other's); concrete Python bounds give a weak int64."""
    del state
    (low, low_weak), (high, high_weak) = _bound_type(lower), _bound_type(upper)
    for dtype in (low, high):
        if not dtypes.is_integer(dtype):
            raise TypeError(f"fori_loop: loop bounds must be integers, got {dtype}")
    if all(isinstance(b, _PYTHON_INTS) and not isinstance(b, bool) for b in (lower, upper)):
        return "int64", True  # jax turns concrete bounds into Python ints
    if low == high:
        return low, low_weak and high_weak
    signed = dtypes.is_signed(low) and dtypes.is_signed(high)
    if signed and low_weak and not high_weak:
        return high, False
    if signed and high_weak and not low_weak:
        return low, False
    raise TypeError(
        f"fori_loop: lower and upper arguments to fori_loop must have equal types, got {low} "
        f"and {high}"
    )


def _bound(state: TraceState, bound: object, dtype: str, location: SourceLocation | None) -> Expr:
    if isinstance(bound, Tracer):
        return _astype(state, as_operand(state, bound, "fori_loop", 0, location), dtype, location)
    if isinstance(bound, np.integer | np.ndarray):
        return PrimValue(int(np.asarray(bound)), dtype)
    if isinstance(bound, arith.Expr):
        as_operand(state, bound, "fori_loop", 0, location)  # checks (or captures) its symbols
    return PrimValue(bound, dtype)  # type: ignore[arg-type]


def scan(
    f: Callable[[object, object], tuple[object, object]],
    init: object,
    xs: object = None,
    length: object = None,
    reverse: bool = False,
    unroll: object = 1,
) -> tuple[object, object]:
    """``jax.lax.scan``: ``carry, y = f(carry, x)`` over the leading axis of ``xs``,
    returning the final carry and the ``y``s stacked; ``reverse`` scans from the end."""
    if not callable(f):
        raise TypeError("scan: f argument should be callable")
    if not isinstance(unroll, bool | int | np.integer):
        raise TypeError(f"scan: unroll must be an int or a bool, got {unroll!r}")
    state = current()
    if state is None:
        return _eager_scan(f, init, xs, length, bool(reverse))
    location = user_location()
    xs_values = _values(state, xs, "xs", location)
    steps = _scan_length(xs_values, length)
    carry = _values(state, init, "init", location)
    slice_params = []
    for name, info in zip(_param_names("x", xs_values.tree), xs_values.infos):
        slice_params.append(Var(name, TensorInfo(info.shape[1:], info.dtype, weak=info.weak)))  # type: ignore[index]
    count = len(carry.operands)
    for _ in range(2):
        region = _trace_scan(f, carry, xs_values, slice_params)
        _check_scan_output(region, carry)
        changes = _promoted(carry, region, slice(0, count))
        if not changes:
            break
        _promote(state, carry, changes, location)
    _check_carry("scan", "carry", carry, region, slice(0, count))
    captured, (function,) = align_captures([region])
    ref = add_region(state, region, function)
    args = [ref, Tuple(carry.operands), Tuple(xs_values.operands), Tuple(captured)]
    attrs = ScanAttrs(steps, bool(reverse), TupleInfo(()))
    results = _emit(state, SCAN, args, attrs, location)
    tree = region.out_tree.children[1]
    return (
        pytree.unflatten(carry.tree, results[:count]),
        pytree.unflatten(tree, results[count:]),
    )


def _scan_length(xs: _Values, length: object) -> arith.Dim:
    sizes = []
    for info in xs.infos:
        if info.ndim == 0:
            raise ValueError(f"scan: xs leaves must have a leading axis to scan over, got {info!r}")
        sizes.append(info.shape[0])  # type: ignore[index]
    if length is not None:
        if isinstance(length, bool) or not isinstance(length, int | np.integer | arith.Expr):
            raise TypeError(f"scan: length must be an int or a symbolic dim, got {length!r}")
        length = length if isinstance(length, arith.Expr) else int(length)
        if isinstance(length, int) and length < 0:
            raise ValueError(f"scan: length must be >= 0, got {length}")
        for size in sizes:
            if arith.compare(size, "==", length) is False:
                raise ValueError(
                    f"scan got `length` argument of {length} which disagrees with leading axis "
                    f"sizes {sizes}"
                )
        return length
    if not sizes:
        raise ValueError("scan got no values to scan over and `length` not provided")
    for size in sizes[1:]:
        if arith.compare(size, "==", sizes[0]) is False:
            raise ValueError(
                f"scan got values with different leading axis sizes: "
                f"{', '.join(str(s) for s in sizes)}"
            )
    return sizes[0]


def _trace_scan(f, carry: _Values, xs: _Values, slice_params: list[Var]) -> Region:
    count = len(carry.operands)

    def run(tracers: list[Tracer]) -> object:
        c = pytree.unflatten(carry.tree, tracers[:count])
        x = pytree.unflatten(xs.tree, tracers[count:])
        out = f(c, x)
        if not (isinstance(out, tuple) and len(out) == 2):
            raise TypeError(f"scan: body output must be a pair, got {_describe(out)}")
        return out

    params = [*_carry_params("carry", carry), *slice_params]
    name = _region_name("scan_body", f)
    return trace_region(name, params, run, range(count))


def _describe(value: object) -> str:
    if isinstance(value, Tracer):
        return _type_text(value.info)
    return type(value).__name__


def _check_scan_output(region: Region, carry: _Values) -> None:
    tree = region.out_tree
    assert tree.kind == "tuple" and len(tree.children) == 2
    _check_structure("scan", "carry", carry.tree, tree.children[0])


# --------------------------------------------------------------------------- eager


def _eager_while(cond_fun, body_fun, init_val):
    value = init_val
    while _truth(cond_fun(value)):
        new = body_fun(value)
        _check_eager_carry("while_loop", value, new)
        value = new
    return value


def _eager_fori(lower, upper, body_fun, init_val):
    value = init_val
    for i in range(int(lower), int(upper)):
        new = body_fun(i, value)
        _check_eager_carry("fori_loop", value, new)
        value = new
    return value


def _eager_scan(f, init, xs, length, reverse):
    leaves, tree = pytree.flatten(xs)
    arrays = [np.asarray(leaf) for leaf in leaves]
    steps = int(length) if length is not None else (arrays[0].shape[0] if arrays else None)
    if steps is None:
        raise ValueError("scan got no values to scan over and `length` not provided")
    carry, ys = init, []
    order = range(steps - 1, -1, -1) if reverse else range(steps)
    for t in order:
        x = pytree.unflatten(tree, [a[t] for a in arrays])
        new, y = f(carry, x)
        _check_eager_carry("scan", carry, new)
        carry = new
        ys.append(y)
    if reverse:
        ys.reverse()
    if not ys:  # no step ran: one step on zeros gives the outputs' shapes and dtypes
        x = pytree.unflatten(tree, [np.zeros(a.shape[1:], a.dtype) for a in arrays])
        leaves, y_tree = pytree.flatten(f(init, x)[1])
        empty = [np.zeros((0, *np.shape(v)), np.asarray(v).dtype) for v in leaves]
        return carry, pytree.unflatten(y_tree, empty)
    y_leaves = [pytree.flatten(y)[0] for y in ys]
    stacked = [np.stack([np.asarray(v[k]) for v in y_leaves]) for k in range(len(y_leaves[0]))]
    return carry, pytree.unflatten(pytree.flatten(ys[0])[1], stacked)


def _check_eager_carry(api: str, before: object, after: object) -> None:
    leaves, tree = pytree.flatten(before)
    new_leaves, new_tree = pytree.flatten(after)
    _check_structure(api, "carry", tree, new_tree)
    for path, a, b in zip(pytree.leaf_paths(tree), leaves, new_leaves):
        a, b = np.asarray(a), np.asarray(b)
        if a.shape != b.shape:
            raise TypeError(
                f"{api}: the body changes the carry: carry{path} has shape {a.shape} before the "
                f"body but {b.shape} after it"
            )
