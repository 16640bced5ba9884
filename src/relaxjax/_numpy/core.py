"""Elementwise, comparison, creation and conversion wrappers of ``relaxjax.numpy``.

Each function records one op through :func:`relaxjax.trace.emit` while tracing (and
evaluates eagerly with the ops' numpy references outside a trace). Python-level
normalisation (shapes, default dtypes, axes) happens here, so the graph IR holds
canonical attributes.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence

import numpy as np

from relaxjax import arith, dtypes
from relaxjax._numpy.datadep import nonzero
from relaxjax.dlpack import as_numpy
from relaxjax.ops.creation import ArangeAttrs, FullAttrs, LikeAttrs, ShapeDtypeAttrs
from relaxjax.ops.elementwise import AstypeAttrs, ClipAttrs
from relaxjax.ops.manipulate import ExpandDimsAttrs
from relaxjax.trace import Tracer, constant, emit

# --------------------------------------------------------------------------- helpers


def _shape(shape: object) -> tuple[arith.Dim, ...]:
    """A shape argument as a tuple of dims: an int or a dim alone is a rank-1 shape."""
    if isinstance(shape, (int, np.integer, arith.Expr)) and not isinstance(shape, bool):
        return (_dim(shape),)
    if not isinstance(shape, Sequence):
        raise TypeError(f"a shape must be an int, a dim or a sequence of them, got {shape!r}")
    return tuple(_dim(d) for d in shape)


def _dim(value: object) -> arith.Dim:
    if isinstance(value, arith.Expr):
        return value
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        return int(value)
    raise TypeError(f"a dimension must be an int or a symbolic dim, got {value!r}")


def _dtype_or_none(dtype: object) -> str | None:
    return None if dtype is None else dtypes.canonical(dtype)


def _dtype_or_float(dtype: object) -> str:
    return dtypes.default_float() if dtype is None else dtypes.canonical(dtype)


def _no_ufunc_extras(name: str, out: object, where: object) -> None:
    """jax's ufuncs take ``out`` and ``where`` but support neither; nor do we."""
    for keyword, value in (("out", out), ("where", where)):
        if value is not None:
            raise NotImplementedError(f"{name}: the {keyword} argument is not supported")


# --------------------------------------------------------------------------- binary


def add(x, y, /, *, out=None, where=None):
    """``x + y`` with broadcasting (``jnp.add``)."""
    _no_ufunc_extras("add", out, where)
    return emit("add", (x, y))


def subtract(x, y, /, *, out=None, where=None):
    """``x - y`` with broadcasting (``jnp.subtract``); bool operands are rejected."""
    _no_ufunc_extras("subtract", out, where)
    return emit("subtract", (x, y))


def multiply(x, y, /, *, out=None, where=None):
    """``x * y`` with broadcasting (``jnp.multiply``)."""
    _no_ufunc_extras("multiply", out, where)
    return emit("multiply", (x, y))


def divide(x, y, /):
    """True division ``x / y`` (``jnp.divide``): integer operands give floats."""
    return emit("divide", (x, y))


true_divide = divide


def floor_divide(x, y, /):
    """``x // y`` rounding toward negative infinity (``jnp.floor_divide``)."""
    return emit("floor_divide", (x, y))


def mod(x, y, /):
    """``x % y`` with the sign of ``y`` (``jnp.mod``)."""
    return emit("mod", (x, y))


remainder = mod


def power(x, y, /):
    """``x ** y`` (``jnp.power``)."""
    return emit("power", (x, y))


def maximum(x, y, /, *, out=None, where=None):
    """The elementwise maximum (``jnp.maximum``)."""
    _no_ufunc_extras("maximum", out, where)
    return emit("maximum", (x, y))


def minimum(x, y, /, *, out=None, where=None):
    """The elementwise minimum (``jnp.minimum``)."""
    _no_ufunc_extras("minimum", out, where)
    return emit("minimum", (x, y))


def equal(x, y, /):
    """``x == y`` (``jnp.equal``)."""
    return emit("equal", (x, y))


def not_equal(x, y, /):
    """``x != y`` (``jnp.not_equal``)."""
    return emit("not_equal", (x, y))


def less(x, y, /):
    """``x < y`` (``jnp.less``)."""
    return emit("less", (x, y))


def less_equal(x, y, /):
    """``x <= y`` (``jnp.less_equal``)."""
    return emit("less_equal", (x, y))


def greater(x, y, /):
    """``x > y`` (``jnp.greater``)."""
    return emit("greater", (x, y))


def greater_equal(x, y, /):
    """``x >= y`` (``jnp.greater_equal``)."""
    return emit("greater_equal", (x, y))


def logical_and(x, y, /, *, out=None, where=None):
    """``x and y`` elementwise, nonzero is true (``jnp.logical_and``)."""
    _no_ufunc_extras("logical_and", out, where)
    return emit("logical_and", (x, y))


def logical_or(x, y, /, *, out=None, where=None):
    """``x or y`` elementwise, nonzero is true (``jnp.logical_or``)."""
    _no_ufunc_extras("logical_or", out, where)
    return emit("logical_or", (x, y))


# --------------------------------------------------------------------------- unary


def negative(x, /, *, out=None, where=None):
    """``-x`` (``jnp.negative``)."""
    _no_ufunc_extras("negative", out, where)
    return emit("negative", (x,))


def abs(x, /):
    """``|x|`` (``jnp.abs``)."""
    return emit("abs", (x,))


absolute = abs


def exp(x, /):
    """``e ** x`` (``jnp.exp``); integers compute in float."""
    return emit("exp", (x,))


def log(x, /):
    """The natural logarithm (``jnp.log``)."""
    return emit("log", (x,))


def sqrt(x, /):
    """The square root (``jnp.sqrt``)."""
    return emit("sqrt", (x,))


def rsqrt(x, *, accuracy=None):
    """``1 / sqrt(x)`` with ``jax.lax.rsqrt`` semantics (floating operands only).

    ``accuracy`` (jax's tolerance hint) is accepted: the result is always computed to
    full precision, which meets any tolerance.
    """
    del accuracy
    return emit("rsqrt", (x,))


def tanh(x, /):
    """The hyperbolic tangent (``jnp.tanh``)."""
    return emit("tanh", (x,))


def sin(x, /):
    """The sine (``jnp.sin``)."""
    return emit("sin", (x,))


def cos(x, /):
    """The cosine (``jnp.cos``)."""
    return emit("cos", (x,))


def logical_not(x, /):
    """``not x`` elementwise (``jnp.logical_not``)."""
    return emit("logical_not", (x,))


def where(condition, x=None, y=None, /, *, size=None, fill_value=None):
    """``x`` where ``condition`` is true, else ``y``, all broadcast (``jnp.where``).

    ``where(condition)`` alone is ``nonzero(condition, size=size, fill_value=fill_value)``:
    one index array per axis, of a data-dependent length without ``size``.
    """
    if x is None and y is None:
        return nonzero(condition, size=size, fill_value=fill_value)
    if x is None or y is None:
        raise ValueError(
            "Either both or neither of the x and y arguments should be provided to "
            f"jax.numpy.where, got {x}, {y}."
        )
    if size is not None or fill_value is not None:
        raise ValueError(
            "size and fill_value arguments cannot be used in three-term where function."
        )
    return emit("where", (condition, x, y))


def clip(arr=None, /, min=None, max=None):
    """``minimum(maximum(arr, min), max)`` (``jnp.clip``); a bound of None is absent."""
    if arr is None:
        raise TypeError("clip: the array argument is required")
    bounds = tuple(b for b in (min, max) if b is not None)
    attrs = ClipAttrs(has_min=min is not None, has_max=max is not None)
    return emit("clip", (arr, *bounds), attrs)


def astype(x, dtype, /, *, copy: bool = False):
    """``x`` converted to ``dtype`` (``jnp.astype``)."""
    del copy  # values are immutable; a conversion always produces a new value
    return emit("astype", (x,), AstypeAttrs(dtypes.canonical(dtype)))


# --------------------------------------------------------------------------- creation


def zeros(shape, dtype=None):
    """An array of zeros (``jnp.zeros``); dims may be symbolic; default dtype float64."""
    return emit("zeros", (), ShapeDtypeAttrs(_shape(shape), _dtype_or_float(dtype)))


def ones(shape, dtype=None):
    """An array of ones (``jnp.ones``); dims may be symbolic; default dtype float64."""
    return emit("ones", (), ShapeDtypeAttrs(_shape(shape), _dtype_or_float(dtype)))


def full(shape, fill_value, dtype=None):
    """``fill_value`` broadcast to ``shape`` (``jnp.full``); the dtype defaults to its own."""
    return emit("full", (fill_value,), FullAttrs(_shape(shape), _dtype_or_none(dtype)))


def _like_attrs(dtype: object, shape: object) -> LikeAttrs:
    return LikeAttrs(_dtype_or_none(dtype), None if shape is None else _shape(shape))


def zeros_like(a, dtype=None, shape=None):
    """Zeros with ``a``'s shape and dtype unless overridden (``jnp.zeros_like``)."""
    return emit("zeros_like", (a,), _like_attrs(dtype, shape))


def ones_like(a, dtype=None, shape=None):
    """Ones with ``a``'s shape and dtype unless overridden (``jnp.ones_like``)."""
    return emit("ones_like", (a,), _like_attrs(dtype, shape))


def full_like(a, fill_value, dtype=None, shape=None):
    """``fill_value`` with ``a``'s shape and dtype unless overridden (``jnp.full_like``)."""
    return emit("full_like", (a, fill_value), _like_attrs(dtype, shape))


def _bound(value: object, name: str) -> arith.Dim | float:
    if isinstance(value, (arith.Expr, float)):
        return value
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    raise TypeError(
        f"arange: {name} must be an int, a float or a symbolic dim, got {value!r}; "
        "a traced value would give a data-dependent shape"
    )


def arange(start, stop=None, step=None, dtype=None):
    """Evenly spaced values in ``[start, stop)`` (``jnp.arange``).

    Integer bounds may be symbolic (``arange(n)`` has shape ``(n,)``); the result is
    int64 for integer bounds and float64 otherwise, unless ``dtype`` is given.
    """
    if stop is None:
        start, stop = 0, start
    step = 1 if step is None else step
    bounds = (_bound(start, "start"), _bound(stop, "stop"), _bound(step, "step"))
    if dtype is None:
        integral = builtins.all(not isinstance(b, float) for b in bounds)
        dtype = dtypes.default_int() if integral else dtypes.default_float()
    return emit("arange", (), ArangeAttrs(*bounds, dtype))


# --------------------------------------------------------------------------- arrays


def from_dlpack(x, /, *, device=None, copy=None):
    """``jnp.from_dlpack``: the array of any object with ``__dlpack__`` (torch, jax, cupy
    on the host), sharing its memory where the layout allows (``copy=True`` copies); a
    constant of the program inside a trace."""
    if not hasattr(x, "__dlpack__") or isinstance(x, type):
        raise TypeError(f"from_dlpack: {type(x).__name__} has no __dlpack__ method")
    if device is not None and str(device).lower() not in ("cpu", "tfrt_cpu_0", "cpu:0"):
        raise ValueError(f"from_dlpack: relaxjax arrays live on the host, got device={device!r}")
    array = as_numpy(x)
    return asarray(array.copy() if copy else array)


def asarray(
    a: object, dtype: object = None, order: object = None, *, copy: object = None
) -> object:
    """``jnp.asarray``: ``a`` as a tensor (traced tensors pass through, cast to ``dtype``).

    Inside a trace, an array or nested sequence becomes a constant of the program, so
    it can be indexed with symbolic bounds (``rnp.asarray(table)[:n]``). ``order`` must be
    None or ``"K"``, as jax's (arrays are row-major).
    """
    del copy  # arrays are immutable values here
    _check_order(order)
    if isinstance(a, Tracer):
        return a if dtype is None or dtypes.canonical(dtype) == a.dtype else astype(a, dtype)
    if isinstance(a, bool | int | float) and dtype is None:
        value = np.asarray(a)  # Python scalars: int64 / float64 / bool, as jax with x64
    else:
        value = np.asarray(
            a, dtype=None if dtype is None else dtypes.to_numpy(dtypes.canonical(dtype))
        )
    if value.dtype.name not in dtypes.DTYPES and value.dtype != dtypes.to_numpy("bfloat16"):
        raise TypeError(
            f"asarray: unsupported dtype {value.dtype} (supported: {', '.join(dtypes.DTYPES)})"
        )
    return constant(value if value.flags.c_contiguous else np.ascontiguousarray(value))


def array(
    object: object, dtype: object = None, *, copy: bool = True, order: object = "K", ndmin: int = 0
) -> object:  # noqa: A002
    """``jnp.array``: like :func:`asarray` (values are immutable, so no copy is observable),
    with ``ndmin`` leading size-1 axes added up to that rank."""
    result = asarray(object, dtype, order)
    missing = int(ndmin) - len(result.shape)
    if missing <= 0:
        return result
    return emit("expand_dims", (result,), ExpandDimsAttrs(tuple(range(missing))))


def _check_order(order: object) -> None:
    if order not in (None, "K"):
        raise NotImplementedError(f"Only implemented for order='K', got order={order!r}")


__all__ = [
    "abs",
    "array",
    "asarray",
    "from_dlpack",
    "absolute",
    "add",
    "arange",
    "astype",
    "clip",
    "cos",
    "divide",
    "equal",
    "exp",
    "floor_divide",
    "full",
    "full_like",
    "greater",
    "greater_equal",
    "less",
    "less_equal",
    "log",
    "logical_and",
    "logical_not",
    "logical_or",
    "maximum",
    "minimum",
    "mod",
    "multiply",
    "negative",
    "not_equal",
    "ones",
    "ones_like",
    "power",
    "remainder",
    "rsqrt",
    "sin",
    "sqrt",
    "subtract",
    "tanh",
    "true_divide",
    "where",
    "zeros",
    "zeros_like",
]
