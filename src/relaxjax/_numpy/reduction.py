"""The jax.numpy-named reductions ``sum prod max min mean var`` (re-exported by
:mod:`relaxjax.numpy`), with every keyword of jax.numpy's: ``initial``, ``where``,
``promote_integers`` and, for ``var``, a precomputed ``mean``.

Without those keywords each wrapper records one op. With them it records jax's own
composition of ops, so values and dtypes are jax's (64-bit types enabled):

- ``where`` (a boolean mask broadcasting against the array) replaces masked-out
  elements by the reduction's identity before reducing: ``sum(where(m, x, 0))``; ``mean``
  and ``var`` divide by the number of selected elements instead of the axis size;
- ``initial`` (a scalar) is converted to the dtype the reduction computes in and
  combined with its result (``sum(x) + initial``); ``max``/``min`` keep it as the op's
  ``initial`` attribute, so reducing an empty axis gives ``initial``;
- ``promote_integers=False`` keeps narrow integer types (bool gives int32, as jax).

>>> import relaxjax as relax, relaxjax.numpy as rnp
>>> relax.eval_shape(lambda x: rnp.sum(x, axis=-1), relax.Tensor(("n", 4), "float32"))
Tensor((n,), "float32")
"""

from __future__ import annotations

import builtins
import math

import numpy as np

from relaxjax import arith, dtypes
from relaxjax._numpy.shape import _axes_or_none, _int, _no_out, _rank
from relaxjax.ops.elementwise import AstypeAttrs
from relaxjax.ops.manipulate import BroadcastToAttrs
from relaxjax.ops.reduction import AccumulateAttrs, ReduceAttrs, accumulate_dtype
from relaxjax.ops.statistics import VarAttrs, float_result_dtype
from relaxjax.trace import Tracer, emit

__all__ = ["max", "mean", "min", "prod", "sum", "var"]

Dim = arith.Dim
Scalar = bool | int | float


# --------------------------------------------------------------------------- helpers


def dtype_of(x: object) -> str:
    """The dtype of an operand as jax sees it (Python scalars take their default)."""
    if isinstance(x, Tracer):
        return x.dtype
    if isinstance(x, arith.Expr):
        return dtypes.default_int()
    return dtypes.canonical(np.asarray(x).dtype)


def shape_of(x: object) -> tuple[Dim, ...]:
    """The shape of an operand (dims of a traced tensor may be symbolic)."""
    return tuple(x.shape) if isinstance(x, Tracer) else np.shape(x)


def _astype(x: object, dtype: str) -> object:
    return x if dtype_of(x) == dtype else emit("astype", (x,), AstypeAttrs(dtype))


def _upcast_half(dtype: str) -> str:
    """jax computes float16/bfloat16 reductions in float32."""
    return "float32" if dtype in ("float16", "bfloat16") else dtype


def _check_where(op_name: str, where: object) -> object:
    """The mask of a reduction: a boolean array (jax refuses any other dtype)."""
    if isinstance(where, (Tracer, np.ndarray)):
        mask = where
    else:
        mask = np.asarray(where)
    if dtype_of(mask) != "bool":
        raise TypeError(
            f"{op_name}: where must be None or a boolean array, got dtype {dtype_of(mask)}"
        )
    return mask


def _reduced_axes(op_name: str, axis: object, a: object) -> tuple[int, ...] | None:
    """``axis`` normalised against ``a``. With a mask, jax counts the axes of ``a``
    before broadcasting it against the mask, so ``None`` becomes every axis of ``a``."""
    ndim = _rank(a)
    if axis is None:
        return None if ndim is None else tuple(range(ndim))
    return _axes_or_none(op_name, axis, ndim)


def _masked(a: object, where: object | None, fill: Scalar) -> object:
    """``where(mask, a, fill)`` with ``fill`` in ``a``'s dtype (or ``a`` without a mask)."""
    if where is None:
        return a
    return emit("where", (where, a, _converted(fill, dtype_of(a))))


def _converted(value: object, dtype: str) -> np.ndarray:
    """A Python or numpy scalar converted to ``dtype`` as ``lax.convert_element_type``
    does: integers wrap, floats truncate toward zero and saturate (NaN gives 0)."""
    source = np.asarray(value)
    target = dtypes.to_numpy(dtype)
    if dtypes.is_bool(dtype):
        return np.asarray(source != 0)
    if not dtypes.is_integer(dtype):
        with np.errstate(over="ignore"):
            return source.astype(np.float64).astype(target)
    if source.dtype.kind != "f":
        return np.asarray(int(source)).astype(np.int64).astype(target)
    number = float(source)
    if math.isnan(number):
        return np.zeros((), target)
    info = np.iinfo(target)
    if not math.isfinite(number):
        return np.asarray(info.max if number > 0 else info.min).astype(target)
    return np.asarray(builtins.min(builtins.max(math.trunc(number), info.min), info.max)).astype(
        target
    )


def _initial(op_name: str, initial: object, dtype: str) -> object:
    """``initial`` as a scalar operand of ``dtype`` (a constant, or a converted tracer)."""
    if isinstance(initial, Tracer):
        if initial.ndim != 0:
            raise ValueError(
                f"{op_name}: initial value must be a scalar, got an array of shape "
                f"{tuple(initial.shape)}"
            )
        return _astype(initial, dtype)
    if np.ndim(initial) != 0:
        raise ValueError(
            f"{op_name}: initial value must be a scalar, got an array of shape {np.shape(initial)}"
        )
    return _converted(initial, dtype)


# --------------------------------------------------------------------------- sum, prod


def _accumulated_dtype(op_name: str, x_dtype: str, promote_integers: bool) -> str:
    """The result dtype of ``sum``/``prod`` without ``dtype=`` (jax.numpy, x64)."""
    if promote_integers:
        return accumulate_dtype(op_name, x_dtype, None)
    return "int32" if dtypes.is_bool(x_dtype) else x_dtype


def _accumulate(op_name, a, axis, dtype, keepdims, initial, where, promote_integers):
    """``sum``/``prod``: one op, or the masked reduction combined with ``initial``."""
    x_dtype = dtype_of(a)
    if dtype is not None:
        result = computation = requested = dtypes.canonical(dtype)
    else:
        result = _accumulated_dtype(op_name, x_dtype, bool(promote_integers))
        computation = _upcast_half(result)
        default = None if dtypes.is_unsigned(x_dtype) else accumulate_dtype(op_name, x_dtype, None)
        requested = None if result == default else result
    if where is None and initial is None:
        axes = _axes_or_none(op_name, axis, _rank(a))
        return emit(op_name, (a,), AccumulateAttrs(axes, bool(keepdims), requested))
    where = None if where is None else _check_where(op_name, where)
    masked = _masked(a, where, 0 if op_name == "sum" else 1)
    axes = _reduced_axes(op_name, axis, a)
    if initial is None:
        return emit(op_name, (masked,), AccumulateAttrs(axes, bool(keepdims), requested))
    total = emit(op_name, (masked,), AccumulateAttrs(axes, bool(keepdims), computation))
    combine = {"sum": "add", "prod": "multiply"}[op_name]
    if dtypes.is_bool(computation):
        combine = {"sum": "logical_or", "prod": "logical_and"}[op_name]
    combined = emit(combine, (total, _initial(op_name, initial, computation)))
    return _astype(combined, result)


def sum(  # noqa: A001 - jax.numpy's name
    a,
    axis=None,
    dtype=None,
    out=None,
    keepdims=False,
    initial=None,
    where=None,
    promote_integers=True,
):
    """``jnp.sum``: bool and signed ints accumulate in int64 (int32 for bool and the
    input's own type with ``promote_integers=False``) unless ``dtype`` is given;
    ``where`` selects the summed elements, ``initial`` is added to the result."""
    _no_out("jnp.sum", out)
    return _accumulate("sum", a, axis, dtype, keepdims, initial, where, promote_integers)


def prod(
    a,
    axis=None,
    dtype=None,
    out=None,
    keepdims=False,
    initial=None,
    where=None,
    promote_integers=True,
):
    """``jnp.prod``: dtypes as :func:`sum`; ``where`` selects the multiplied elements,
    ``initial`` multiplies the result."""
    _no_out("jnp.prod", out)
    return _accumulate("prod", a, axis, dtype, keepdims, initial, where, promote_integers)


# --------------------------------------------------------------------------- max, min


def _lowest(op_name: str, dtype: str) -> Scalar:
    """The identity of ``max`` (``min``): the smallest (largest) value of ``dtype``."""
    sign = -1 if op_name == "max" else 1
    if dtypes.is_bool(dtype):
        return op_name == "min"
    if dtypes.is_floating(dtype):
        return sign * math.inf
    info = np.iinfo(dtypes.to_numpy(dtype))
    return int(info.min if op_name == "max" else info.max)


def _extremum(op_name, a, axis, keepdims, initial, where):
    """``max``/``min``: one op, with ``initial`` as its attribute (a traced ``initial``
    is combined after the reduction)."""
    if where is not None and initial is None:
        raise ValueError(
            f"{op_name}: reduction operation {op_name} does not have an identity, so to use "
            f"a where mask one has to specify 'initial'"
        )
    x_dtype = dtype_of(a)
    if where is None:
        axes = _axes_or_none(op_name, axis, _rank(a))
    else:
        where = _check_where(op_name, where)
        axes = _reduced_axes(op_name, axis, a)
    masked = _masked(a, where, _lowest(op_name, x_dtype))
    if isinstance(initial, Tracer):
        attrs = ReduceAttrs(axes, bool(keepdims), _lowest(op_name, x_dtype))
        reduced = emit(op_name, (masked,), attrs)
        combine = "maximum" if op_name == "max" else "minimum"
        return emit(combine, (reduced, _initial(op_name, initial, x_dtype)))
    value = None if initial is None else _initial(op_name, initial, x_dtype).item()
    return emit(op_name, (masked,), ReduceAttrs(axes, bool(keepdims), value))


def max(a, axis=None, out=None, keepdims=False, initial=None, where=None):  # noqa: A001
    """``jnp.max``: the largest element over ``axis``; ``initial`` takes part (so empty
    axes give it; without it they are an error); ``where`` (which needs ``initial``)
    selects the elements."""
    _no_out("jnp.max", out)
    return _extremum("max", a, axis, keepdims, initial, where)


def min(a, axis=None, out=None, keepdims=False, initial=None, where=None):  # noqa: A001
    """``jnp.min``: the smallest element over ``axis``; ``initial`` and ``where`` as in
    :func:`max`."""
    _no_out("jnp.min", out)
    return _extremum("min", a, axis, keepdims, initial, where)


# --------------------------------------------------------------------------- mean, var


def _count(a: object, axes, keepdims: bool, where: object | None, dtype: str) -> object:
    """The number of reduced elements in ``dtype``: the selected ones with a mask (which
    must broadcast to ``a``'s shape, as in jax), else a constant or symbolic count."""
    if where is not None:
        mask = emit("broadcast_to", (where,), BroadcastToAttrs(shape_of(a)))
        return emit("sum", (mask,), AccumulateAttrs(axes, keepdims, dtype))
    shape = shape_of(a)
    reduced = range(len(shape)) if axes is None else axes
    count = math.prod(shape[i] for i in reduced)
    if isinstance(count, int):
        return np.asarray(count).astype(dtypes.to_numpy(dtype))
    return emit("astype", (count,), AstypeAttrs(dtype))


def _moment_dtypes(op_name: str, x_dtype: str, dtype: object) -> tuple[str, str]:
    """``(computation dtype, result dtype)`` of ``mean``/``var`` (jax, x64)."""
    result = float_result_dtype(op_name, x_dtype, _dtype(dtype))
    return _upcast_half(result), result


def _masked_mean(a, axis, dtype, keepdims, where):
    """``sum(where(mask, a, 0)) / count(mask)`` in the computation dtype (jax's mean)."""
    computation, result = _moment_dtypes("mean", dtype_of(a), dtype)
    where = _check_where("mean", where)
    axes = _reduced_axes("mean", axis, a)
    attrs = AccumulateAttrs(axes, bool(keepdims), computation)
    total = emit("sum", (_masked(a, where, 0),), attrs)
    count = _count(a, axes, bool(keepdims), where, computation)
    return _astype(emit("divide", (total, count)), result)


def mean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=None):
    """``jnp.mean``: int64 gives float64, other ints and bool float32; ``where`` averages
    the selected elements only (NaN where none is)."""
    _no_out("jnp.mean", out)
    if where is not None:
        return _masked_mean(a, axis, dtype, keepdims, where)
    attrs = AccumulateAttrs(_axes_or_none("mean", axis, _rank(a)), bool(keepdims), _dtype(dtype))
    return emit("mean", (a,), attrs)


def _dtype(dtype: object) -> str | None:
    return None if dtype is None else dtypes.canonical(dtype)


def _composed_var(a, axis, dtype, keepdims, ddof, where, a_mean):
    """jax's variance: ``sum(where(mask, (a - mean)**2, 0)) / (count - ddof)``, NaN where
    the divisor is not positive."""
    computation, result = _moment_dtypes("var", dtype_of(a), dtype)
    if where is not None:
        where = _check_where("var", where)
    a = _astype(a, computation)
    if a_mean is None:
        a_mean = mean(a, axis, dtype=computation, keepdims=True, where=where)
    else:
        a_mean = _astype(a_mean if isinstance(a_mean, Tracer) else np.asarray(a_mean), computation)
    axes = _reduced_axes("var", axis, a)
    centered = emit("subtract", (a, a_mean))
    squares = emit("multiply", (centered, centered))
    count = _count(a, axes, bool(keepdims), where, computation)
    divisor = emit("subtract", (count, ddof))
    attrs = AccumulateAttrs(axes, bool(keepdims), computation)
    total = emit("sum", (_masked(squares, where, 0),), attrs)
    variance = _astype(emit("divide", (total, divisor)), result)
    return emit("where", (emit("greater", (divisor, 0)), variance, math.nan))


def var(
    a,
    axis=None,
    dtype=None,
    out=None,
    ddof=0,
    keepdims=False,
    *,
    where=None,
    mean=None,  # noqa: A002 - jax.numpy's name: a precomputed mean (keepdims layout)
    correction=None,
):
    """``jnp.var``: the variance, divided by ``count - ddof`` (``correction`` is an
    alias); ``where`` selects the elements, ``mean`` gives their mean (with the reduced
    axes kept, as ``mean(a, axis, keepdims=True)``) instead of computing it."""
    _no_out("jnp.var", out)
    if correction is not None:
        if ddof != 0:
            raise ValueError("ddof and correction can't be provided simultaneously.")
        ddof = correction
    ddof = _int(ddof, "var ddof")
    if where is not None or mean is not None:
        return _composed_var(a, axis, dtype, keepdims, ddof, where, mean)
    axes = _axes_or_none("var", axis, _rank(a))
    return emit("var", (a,), VarAttrs(axes, bool(keepdims), _dtype(dtype), ddof))
