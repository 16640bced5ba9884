"""``relax.match_cast``: assert a shape at run time and name its dims from then on.

Inside a trace it binds ``match_cast(x, spec)``: the runtime checks the value
against ``spec``, binding the symbols ``spec`` introduces (``m`` below), and
everything downstream is deduced with them::

    y = relax.match_cast(x, relax.Tensor(("m", 4), "float32"))
    y.shape   # (m, 4)

A symbol name already defined in the function (by a parameter or an earlier
match_cast) means that symbol, so ``match_cast(x, Tensor(("n", 4)))`` asserts
that the first dim equals ``n``. Outside a trace, it checks an array against
the spec and returns it.
"""

from __future__ import annotations

import numpy as np

from relaxjax import arith, dtypes
from relaxjax.errors import ShapeError, TraceError
from relaxjax.ir import PrimInfo, StructInfo, TensorInfo
from relaxjax.trace.context import current
from relaxjax.trace.source import user_location
from relaxjax.trace.spec import spec_of_value, unify_symbols, within_bounds
from relaxjax.trace.tracer import Tracer, as_operand, bind_match_cast, check_trace

__all__ = ["match_cast"]


def match_cast(x: object, spec: StructInfo) -> object:
    """``x``, asserted at run time to match ``spec`` (a ``relax.Tensor``).

    New symbol names in ``spec`` are bound from ``x``'s dims; known ones must
    equal them. A provably impossible match raises ``ShapeError`` while tracing;
    a dtype other than ``x``'s raises ``TypeError`` (match_cast does not convert).
    """
    if not isinstance(spec, TensorInfo | PrimInfo):
        spec = spec_of_value(spec, "match_cast: the spec")
    trace = current()
    if trace is None:
        return _match_array(x, spec)
    if isinstance(x, Tracer):
        check_trace(x)
    location = user_location()
    operand = as_operand(trace, x, "match_cast", 0, location)
    _check_dtype(operand.info, spec)
    (spec,), symbols = unify_symbols([("match_cast", spec)], known=trace.symbols, fixed=True)
    var = bind_match_cast(trace, operand, spec, location)
    trace.symbols.update(symbols)
    return Tracer(var, trace)


def _check_dtype(info: StructInfo, spec: StructInfo) -> None:
    dtype = getattr(info, "dtype", None)
    if dtype is not None and isinstance(spec, TensorInfo | PrimInfo) and dtype != spec.dtype:
        raise TypeError(
            f"match_cast: the value has dtype {dtype} but the spec {spec!r} expects "
            f"{spec.dtype}; convert with .astype({spec.dtype!r}) first"
        )


def _match_array(x: object, spec: StructInfo) -> object:
    if isinstance(x, Tracer):
        raise TraceError(
            "match_cast: a traced value was used after its trace ended (a leaked tracer)",
            location=user_location(),
        )
    array = np.asarray(x)
    _check_dtype(TensorInfo((), dtypes.canonical(array.dtype)), spec)
    if isinstance(spec, PrimInfo):
        if array.ndim != 0:
            raise ShapeError(f"match_cast: expected a scalar, got an array of shape {array.shape}")
        return x
    if spec.ndim is not None and spec.ndim != array.ndim:
        raise ShapeError(
            f"match_cast: expected rank {spec.ndim} for {spec!r}, got shape {array.shape}"
        )
    if spec.shape is not None:
        _match_dims(spec, array.shape)
    return x


def _match_dims(spec: TensorInfo, shape: tuple[int, ...]) -> None:
    """Bind the symbols the sizes determine (as the compiled match_cast does), then
    compare every dim that can be evaluated."""
    dims = spec.shape
    env: dict[str, int] = {}
    for axis, (dim, size) in enumerate(zip(dims, shape)):  # type: ignore[arg-type]
        if isinstance(dim, arith.Sym) and dim.name not in env:
            _check_bounds(dim, size, axis)
            env[dim.name] = size
    steps, _ = arith.solve_order(dims, env)  # type: ignore[arg-type]
    for step in steps:
        size = shape[step.index]
        coeff = arith.evaluate(step.coeff, env)
        remainder = size - arith.evaluate(step.rest, env)
        value = remainder // coeff if coeff else None
        symbol = step.symbol
        if value is None or value * coeff != remainder or not within_bounds(symbol, value):
            raise ShapeError(
                f"match_cast: axis {step.index} of {spec!r}: expected "
                f"{dims[step.index]}, got {size} (shape {shape}), which fits no value of "  # type: ignore[index]
                f"{symbol.name} within its bounds"
            )
        env[symbol.name] = value
    for axis, (dim, size) in enumerate(zip(dims, shape)):  # type: ignore[arg-type]
        try:
            expected = arith.evaluate(dim, env)
        except KeyError:
            continue  # a dim no axis binds: nothing to compare against
        if expected != size:
            raise ShapeError(
                f"match_cast: axis {axis} of {spec!r}: expected {dim} = {expected}, got {size} "
                f"(shape {shape})"
            )


def _check_bounds(symbol: arith.Sym, size: int, axis: int) -> None:
    if not within_bounds(symbol, size):
        raise ShapeError(
            f"match_cast: axis {axis}: {symbol.name} = {size} is outside its declared bounds "
            f"[{symbol.lower}, {'inf' if symbol.upper is None else symbol.upper}]"
        )
