"""Tracing one Python function: parameters in, a graph function and its output structure out.

:func:`trace_function` makes one graph variable per leaf of every traced
parameter, calls the Python function on tracers inside a dataflow block, and
binds the flattened results as the function's output::

    @function
    def f(x: Tensor((n, 4), "float32")) -> Tensor((n, 4), "float32"):
        with dataflow():
            lv0: Tensor((n, 4), "float32") = multiply(x, 2.0)
            gv: Tensor((n, 4), "float32") = output(lv0)
        return gv

Errors raised while tracing name the user's source line; an undecidable shape
comparison in Python control flow says how to avoid it.
"""

from __future__ import annotations

import keyword
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from relaxjax import arith
from relaxjax.errors import InconclusiveShapeError, RelaxError
from relaxjax.ir import (
    BlockBuilder,
    Expr,
    IRModule,
    PrimInfo,
    StructInfo,
    TensorInfo,
    Tuple,
    TupleInfo,
    Var,
    is_dim_value,
)
from relaxjax.trace import pytree
from relaxjax.trace.context import TraceState, tracing
from relaxjax.trace.source import user_location_in_traceback
from relaxjax.trace.spec import ParamSpec, unify_symbols
from relaxjax.trace.tracer import Tracer, as_operand, attach_location

__all__ = ["Traced", "trace_function", "function_name", "run_user_code", "INCONCLUSIVE_ADVICE"]

INCONCLUSIVE_ADVICE = (
    "Python control flow on symbolic shapes must be decidable at trace time: declare "
    'bounds on the symbols (relax.sym("n", lower=1, upper=4096)), assert the shape you '
    "expect with relax.match_cast, or choose between values with relaxjax.numpy.where"
)


@dataclass(frozen=True, slots=True)
class Traced:
    """The result of tracing a function once for some parameter specs.

    ``module`` holds the graph function ``name`` and those of the jitted functions it
    calls; ``params`` are its parameter variables in order (the leaves of the traced
    Python parameters); ``out_tree`` is the structure of the Python result and
    ``out_infos`` the struct info of each of its leaves. ``origins`` pairs the name of
    each called function in ``module`` with the trace it comes from, so that a module
    calling it again (directly or through others) holds it once.
    """

    module: IRModule
    name: str
    params: tuple[Var, ...]
    out_tree: pytree.TreeDef
    out_infos: tuple[StructInfo, ...]
    origins: tuple[tuple[str, Traced], ...] = ()


def function_name(fn: Callable) -> str:
    """A valid graph-function name for ``fn``: its ``__name__``, made an identifier."""
    name = re.sub(r"\W", "_", getattr(fn, "__name__", "") or "").strip("_") or "main"
    if name[0].isdigit() or keyword.iskeyword(name):
        name = f"{name}_"
    return name


def _leaf_names(param: ParamSpec) -> list[str]:
    if param.treedef.kind == "leaf":
        return [param.name]
    names = []
    for path in pytree.leaf_paths(param.treedef):
        suffix = re.sub(r"\W+", "_", path).strip("_")
        names.append(f"{param.name}_{suffix}")
    return names


def _make_params(params: Sequence[ParamSpec]) -> list[Var]:
    specs = [(f"parameter {p.name!r}", leaf) for p in params for leaf in p.leaves]
    infos, _ = unify_symbols(specs)
    names = [name for p in params for name in _leaf_names(p)]
    return [Var(name, info) for name, info in zip(names, infos)]


def trace_function(
    fn: Callable[..., object],
    params: Sequence[ParamSpec],
    invoke: Callable[[Mapping[str, object]], object],
    name: str | None = None,
) -> Traced:
    """Trace ``fn`` for the given parameter specs.

    ``invoke`` calls ``fn`` with a mapping from each traced parameter's name to
    its Python value (tracers in the parameter's structure); static arguments
    are its business. Raises ``TypeError`` for bad specs and outputs, and relaxjax
    errors (with the user's source line) for problems found while tracing.
    """
    name = name or function_name(fn)
    param_vars = _make_params(params)
    builder = BlockBuilder()
    state = TraceState(builder, name)
    with builder.function(name, param_vars), tracing(state):
        state.symbols.update(builder.symbols)
        values = _param_values(state, params, param_vars)
        with builder.dataflow():
            result = run_user_code(invoke, values)
            out_tree, out_exprs = _outputs(state, result, name)
            output = out_exprs[0] if len(out_exprs) == 1 else Tuple(out_exprs)
            gv = builder.emit_output(output)
        builder.emit_func_output(gv)
    module = builder.finalize()
    out_infos = tuple(_public_info(e.info, state.internal) for e in out_exprs)
    origins = tuple((callee, origin) for origin, callee in state.callees.values())
    return Traced(module, name, tuple(param_vars), out_tree, out_infos, origins)  # type: ignore[arg-type]


def _public_info(info: StructInfo, internal: set[str]) -> StructInfo:
    """``info`` as the caller may see it: a shape naming a symbol the tracer made up
    means nothing outside the function, so it falls back to rank and dtype; a scalar
    is a 0-d tensor."""
    if isinstance(info, TupleInfo):
        return TupleInfo(tuple(_public_info(f, internal) for f in info.fields))
    if isinstance(info, PrimInfo):  # a scalar result is a 0-d array to the caller, as in jax
        return TensorInfo((), info.dtype, weak=info.weak)
    if isinstance(info, TensorInfo) and info.shape is not None:
        names = {s.name for d in info.shape for s in arith.free_symbols(d)}
        if names & internal:
            return TensorInfo(ndim=info.ndim, dtype=info.dtype, weak=info.weak)
    return info


def _param_values(
    state: TraceState, params: Sequence[ParamSpec], param_vars: Sequence[Var]
) -> dict[str, object]:
    """Each parameter's Python value: tracers, except that a symbolic scalar parameter
    is its dim itself (``m``), so that ``rnp.zeros((m, 4))`` and ``m * 2`` are shapes."""
    values: dict[str, object] = {}
    position = 0
    for param in params:
        count = len(param.leaves)
        leaves = [
            var.info.value if is_dim_value(var.info) else Tracer(var, state)  # type: ignore[union-attr]
            for var in param_vars[position : position + count]
        ]
        values[param.name] = pytree.unflatten(param.treedef, leaves)
        position += count
    return values


def run_user_code(invoke: Callable[[Mapping[str, object]], object], values: dict) -> object:
    try:
        return invoke(values)
    except InconclusiveShapeError as err:
        attach_location(err, user_location_in_traceback(err.__traceback__))
        if INCONCLUSIVE_ADVICE not in err.message:
            err.message = f"{err.message}. {INCONCLUSIVE_ADVICE}"
            err.args = (err.message,)
        raise
    except RelaxError as err:
        attach_location(err, user_location_in_traceback(err.__traceback__))
        raise


def _outputs(state: TraceState, result: object, name: str) -> tuple[pytree.TreeDef, list[Expr]]:
    leaves, out_tree = pytree.flatten(result)
    paths = pytree.leaf_paths(out_tree)
    exprs = []
    for path, leaf in zip(paths, leaves):
        where = f"output{path}" if path else "the output"
        try:
            exprs.append(as_operand(state, leaf, f"{name}()", 0, None))
        except TypeError:
            raise TypeError(
                f"{name}(): {where} is a {type(leaf).__name__}; a traced function returns "
                "tensors, arrays, Python scalars or symbolic dims, in tuples, lists or dicts"
            ) from None
    return out_tree, exprs
