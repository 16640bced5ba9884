"""Array creation wrappers of ``relaxjax.numpy`` beyond ``zeros``/``ones``/``full``/
``arange``: ``empty empty_like eye identity tri linspace logspace geomspace meshgrid
indices fromfunction frombuffer fromstring`` (and ``fromiter``/``fromfile``, which
raise as jax's do).

Sizes may be symbolic dims wherever jax takes a static int (``eye(n)``,
``linspace(0, 1, n)``, ``indices((n, m))``, ``tri(n, k=k)``): one compiled program
serves every value. ``linspace`` is one op; the others are compositions of
``arange``, comparisons and broadcasts, which fuse into one kernel.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Sequence

import numpy as np

from relaxjax import arith, dtypes
from relaxjax._numpy.arraylike import astype as cast_to
from relaxjax._numpy.arraylike import operand_kind, shape_of
from relaxjax._numpy.core import arange, asarray, astype, where, zeros, zeros_like
from relaxjax._numpy.shape import broadcast_to, reshape, stack, transpose
from relaxjax._numpy.ufuncs import log10, sign
from relaxjax.ops.base import to_inexact
from relaxjax.ops.linspace import LinspaceAttrs
from relaxjax.trace import Tracer, emit

__all__ = [
    "empty",
    "empty_like",
    "eye",
    "frombuffer",
    "fromfile",
    "fromfunction",
    "fromiter",
    "fromstring",
    "geomspace",
    "identity",
    "indices",
    "linspace",
    "logspace",
    "meshgrid",
    "tri",
]

Dim = arith.Dim


def _size(name: str, value: object, what: str) -> Dim:
    """A size argument: a non-negative int or a symbolic dim."""
    if isinstance(value, arith.Expr):
        return value
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name}: {what} must be an int or a symbolic dim, got {value!r}")
    if value < 0:
        raise ValueError(f"{name}: negative dimensions are not allowed, got {what}={value}")
    return int(value)


def _dtype(dtype: object, default: str) -> str:
    return default if dtype is None else dtypes.canonical(dtype)


def _static_int(name: str, what: str, value: object) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name}: {what} must be a Python int, got {value!r}")
    return int(value)


# --------------------------------------------------------------------------- filled


def empty(shape, dtype=None):
    """An array of ``shape`` (``jnp.empty``): zeros, as jax gives; default dtype float64."""
    if dtype is not None and isinstance(dtype, (int, np.integer)):
        raise TypeError(
            f"Cannot interpret '{dtype}' as a data type.\n\nDid you accidentally write "
            f"`jax.numpy.empty({shape}, {dtype})` when you meant "
            f"`jax.numpy.empty(({shape}, {dtype}))`, with a tuple of dimensions?"
        )
    return zeros(shape, _dtype(dtype, dtypes.default_float()))


def empty_like(prototype, dtype=None, shape=None):
    """An array like ``prototype`` (``jnp.empty_like``): zeros, as jax gives."""
    return zeros_like(prototype, dtype, shape)


# --------------------------------------------------------------------------- matrices


def _offset(name: str, k: object) -> object:
    """The diagonal offset: an int, a symbolic dim, or a traced integer scalar."""
    if isinstance(k, Tracer):
        if k.ndim != 0 or not dtypes.is_integer(k.dtype):
            raise ValueError(f"{name}: k must be a scalar integer; got {k.dtype} of rank {k.ndim}")
        return k
    if isinstance(k, arith.Expr):
        return k
    if isinstance(k, np.ndarray):
        if k.ndim != 0 or not dtypes.is_integer(dtypes.canonical(k.dtype)):
            raise ValueError(f"{name}: k must be a scalar integer; got {k}")
        return int(k)
    return _static_int(name, "k", k)


def _grid(name: str, n: object, m: object, k: object) -> tuple[object, object]:
    """``(i + k, j)`` for the rows ``i`` (a column) and columns ``j`` (a row)."""
    rows = _size(name, n, "N")
    cols = rows if m is None else _size(name, m, "M")
    i = reshape(arange(rows), (rows, 1))
    j = reshape(arange(cols), (1, cols))
    return emit("add", (i, _offset(name, k))), j


def eye(N, M=None, k=0, dtype=None):  # noqa: N803 - jax.numpy's names
    """The ``N x M`` matrix with ones on the ``k``-th diagonal (``jnp.eye``); ``N``,
    ``M`` and ``k`` may be symbolic, ``k`` also a traced integer scalar."""
    shifted, j = _grid("eye", N, M, k)
    return astype(emit("equal", (shifted, j)), _dtype(dtype, dtypes.default_float()))


def identity(n, dtype=None):
    """The ``n x n`` identity matrix (``jnp.identity``); ``n`` may be symbolic."""
    return eye(n, dtype=dtype)


def tri(N, M=None, k=0, dtype=None):  # noqa: N803 - jax.numpy's names
    """Ones at and below the ``k``-th diagonal of an ``N x M`` matrix (``jnp.tri``); the
    default dtype is float32, as jax's."""
    shifted, j = _grid("tri", N, M, k)
    return astype(emit("greater_equal", (shifted, j)), _dtype(dtype, "float32"))


# --------------------------------------------------------------------------- spaced values


def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0):
    """``num`` evenly spaced values from ``start`` to ``stop`` (``jnp.linspace``).

    ``start`` and ``stop`` may be arrays (broadcast; the values run along ``axis``);
    ``num`` may be a symbolic dim. With ``retstep`` the step is returned too (NaN when
    ``num < 2`` with the endpoint, as jax's).
    """
    num = _size("linspace", num, "num")
    axis = _static_int("linspace", "axis", axis)
    kinds = (operand_kind(start), operand_kind(stop))
    dtype = _dtype(dtype, to_inexact(dtypes.result_type(*kinds)))
    attrs = LinspaceAttrs(num, builtins.bool(endpoint), axis, dtype)
    values = emit("linspace", (start, stop), attrs)
    if not retstep:
        return values
    return values, _step(start, stop, num, builtins.bool(endpoint), to_inexact(dtype))


def _step(start, stop, num: Dim, endpoint: bool, work: str) -> object:
    """``(stop - start) / div`` in ``work``; NaN when there is no step to take. As jax, a
    static ``num`` of 0 (or 1 with the endpoint) gives a NaN scalar; for a symbolic
    ``num`` the shape cannot depend on its value: NaNs of the bounds' shape then."""
    div = num - 1 if endpoint else num
    if isinstance(num, int) and (num == 0 or div == 0):
        return asarray(np.nan, dtype=work)
    delta = emit("subtract", (cast_to(stop, work), cast_to(start, work)))
    step = emit("divide", (delta, cast_to(div, work)))
    undefined = emit("logical_or", (emit("equal", (num, 0)), emit("equal", (div, 0))))
    return where(undefined, asarray(np.nan, dtype=work), step)


def logspace(start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0):
    """``base ** linspace(start, stop, ...)`` (``jnp.logspace``)."""
    kinds = (operand_kind(start), operand_kind(stop))
    dtype = _dtype(dtype, to_inexact(dtypes.result_type(*kinds)))
    work = to_inexact(dtype)
    exponents = linspace(cast_to(start, work), cast_to(stop, work), num, endpoint, axis=axis)
    return cast_to(emit("power", (base, exponents)), dtype)


def geomspace(start, stop, num=50, endpoint=True, dtype=None, axis=0):
    """Values spaced evenly on a log scale from ``start`` to ``stop``, both of one sign
    (``jnp.geomspace``)."""
    kinds = (operand_kind(start), operand_kind(stop))
    dtype = _dtype(dtype, to_inexact(dtypes.result_type(*kinds)))
    work = to_inexact(dtype)
    start, stop = cast_to(start, work), cast_to(stop, work)
    direction = sign(start)
    low = log10(emit("divide", (start, direction)))
    high = log10(emit("divide", (stop, direction)))
    result = emit("multiply", (direction, logspace(low, high, num, endpoint, 10.0, work, 0)))
    ndim = len(shape_of(result))
    axis = _static_int("geomspace", "axis", axis)
    if not -ndim <= axis < ndim:
        raise ValueError(f"geomspace: axis {axis} is out of bounds for an array of rank {ndim}")
    axis %= ndim
    if axis:
        result = transpose(result, (*range(1, axis + 1), 0, *range(axis + 1, ndim)))
    return cast_to(result, dtype)


# --------------------------------------------------------------------------- grids


def meshgrid(*xi, copy=True, sparse=False, indexing="xy"):
    """Coordinate arrays from 1-D coordinate vectors (``jnp.meshgrid``): ``indexing='xy'``
    (Cartesian: the first two axes swapped) or ``'ij'`` (matrix); ``sparse`` keeps
    length-1 axes instead of broadcasting."""
    if not copy:
        raise ValueError("jax.numpy.meshgrid only supports copy=True")
    if indexing not in ("xy", "ij"):
        raise ValueError(f"Valid values for indexing are 'xy' and 'ij', got {indexing}")
    arrays = [asarray(x) for x in xi]
    if builtins.any(len(shape_of(a)) != 1 for a in arrays):
        shapes = [shape_of(a) for a in arrays]
        raise ValueError(f"Arguments to jax.numpy.meshgrid must be 1D, got shapes {shapes}")
    if indexing == "xy" and len(arrays) >= 2:
        arrays[0], arrays[1] = arrays[1], arrays[0]
    sizes = [shape_of(a)[0] for a in arrays]
    full = tuple(sizes)
    output = []
    for axis, (array, size) in enumerate(zip(arrays, sizes)):
        ones = (1,) * len(arrays)
        placed = reshape(array, ones[:axis] + (size,) + ones[axis + 1 :])
        output.append(placed if sparse else broadcast_to(placed, full))
    if indexing == "xy" and len(arrays) >= 2:
        output[0], output[1] = output[1], output[0]
    return output


def indices(dimensions, dtype=None, sparse=False):
    """The index of every position of a grid of shape ``dimensions`` along each axis
    (``jnp.indices``): an array of shape ``(len(dimensions), *dimensions)``, or a tuple
    of broadcastable arrays when ``sparse``. Dims may be symbolic."""
    dims = tuple(_size("indices", d, "a dimension") for d in dimensions)
    dtype = _dtype(dtype, dtypes.default_int())
    output = []
    for axis, dim in enumerate(dims):
        ones = (1,) * len(dims)
        placed = reshape(arange(dim, dtype=dtype), ones[:axis] + (dim,) + ones[axis + 1 :])
        output.append(placed if sparse else broadcast_to(placed, dims))
    if sparse:
        return tuple(output)
    return stack(output, 0) if output else asarray(np.array([], dtype=dtypes.to_numpy(dtype)))


def fromfunction(function: Callable, shape: Sequence[object], *, dtype=float, **kwargs):
    """``function`` called on the index arrays of a grid of ``shape`` (``jnp.fromfunction``):
    ``function(*indices(shape, dtype), **kwargs)``, numpy's definition; jax maps the
    function over every index, which gives the same result for elementwise functions."""
    return function(*indices(tuple(shape), dtype=dtype), **kwargs)


# --------------------------------------------------------------------------- from data


def frombuffer(buffer, dtype=float, count=-1, offset=0):
    """The array of the bytes of ``buffer`` (``jnp.frombuffer``)."""
    return asarray(
        np.frombuffer(buffer=buffer, dtype=_numpy_dtype(dtype), count=count, offset=offset)
    )


def fromstring(string, dtype=float, count=-1, *, sep):
    """The array of the numbers in ``string`` separated by ``sep`` (``jnp.fromstring``)."""
    return asarray(np.fromstring(string, dtype=_numpy_dtype(dtype), count=count, sep=sep))


def _numpy_dtype(dtype: object) -> np.dtype:
    return dtypes.to_numpy(dtypes.canonical(dtype))


def fromiter(*args, **kwargs):
    """Not implemented, as in jax (``jnp.fromiter``): consuming an iterator is a side
    effect; use ``asarray(np.fromiter(...))``."""
    raise NotImplementedError(
        "jnp.fromiter() is not implemented because it may be non-pure and thus unsafe for "
        "use with JIT and other JAX transformations. Consider using "
        "jnp.asarray(np.fromiter(...)) instead."
    )


def fromfile(*args, **kwargs):
    """Not implemented, as in jax (``jnp.fromfile``): reading a file is a side effect;
    use ``asarray(np.fromfile(...))``."""
    raise NotImplementedError(
        "jnp.fromfile() is not implemented because it may be non-pure and thus unsafe for "
        "use with JIT and other JAX transformations. Consider using "
        "jnp.asarray(np.fromfile(...)) instead."
    )
