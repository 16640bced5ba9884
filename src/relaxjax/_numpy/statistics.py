"""Reductions and statistics of ``relaxjax.numpy`` beyond ``sum prod max min mean var``:
``all any amax amin ptp std average``, the NaN-ignoring ``nansum nanprod nanmax nanmin
nanmean nanvar nanstd nanargmax nanargmin``, and the scans ``cumprod cumulative_sum
cumulative_prod nancumsum nancumprod``.

Each is jax.numpy's own composition of the reductions (values and dtypes are jax's,
64-bit types enabled): ``all(a)`` is ``min(a != 0, initial=True)``, ``nansum(a)`` is
``sum(where(_isnan(a), 0, a))``, ``nanmax`` gives NaN where every element is NaN, ``std``
is ``sqrt(var)``, and so on; ``cumprod`` is one op (:mod:`relaxjax.ops.scan`).

>>> import relaxjax as relax, relaxjax.numpy as rnp
>>> relax.eval_shape(lambda x: rnp.nanstd(x, axis=0), relax.Tensor(("n", 3), "float32"))
Tensor((3,), "float32")
"""

from __future__ import annotations

import builtins
import math

import numpy as np

from relaxjax import arith, dtypes
from relaxjax._numpy import core as _core
from relaxjax._numpy import reduction as _reduction
from relaxjax._numpy.reduction import _check_where, _moment_dtypes, dtype_of, mean, shape_of
from relaxjax._numpy.shape import (
    _axes_or_none,
    _int,
    _no_out,
    _rank,
    _single_axis,
    argmax,
    argmin,
    broadcast_to,
    concatenate,
    reshape,
)
from relaxjax.ops.base import normalize_axis, to_inexact
from relaxjax.ops.elementwise import AstypeAttrs
from relaxjax.ops.manipulate import TransposeAttrs
from relaxjax.ops.scan import CumsumAttrs
from relaxjax.trace import Tracer, emit

__all__ = [
    "all",
    "amax",
    "amin",
    "any",
    "average",
    "cumprod",
    "cumulative_prod",
    "cumulative_sum",
    "nanargmax",
    "nanargmin",
    "nancumprod",
    "nancumsum",
    "nanmax",
    "nanmean",
    "nanmin",
    "nanprod",
    "nanstd",
    "nansum",
    "nanvar",
    "ptp",
    "std",
]

Dim = arith.Dim

amax = _reduction.max
amin = _reduction.min


def _inexact(x: object) -> bool:
    return dtypes.is_floating(dtype_of(x))


def _isnan(x: object) -> object:
    """``x != x``: true exactly at NaNs (floats only)."""
    return emit("not_equal", (x, x))


def _not(x: object) -> object:
    return emit("logical_not", (x,))


# --------------------------------------------------------------------------- all, any, ptp


def _truth(op_name: str, a, axis, out, keepdims, where, identity: bool):
    """``all``/``any``: ``min``/``max`` of ``a != 0`` with ``initial`` the identity."""
    _no_out(f"jnp.{op_name}", out)
    truth = a if dtype_of(a) == "bool" else emit("not_equal", (a, 0))
    extremum = _reduction.min if identity else _reduction.max
    return extremum(truth, axis=axis, keepdims=keepdims, initial=identity, where=where)


def all(a, axis=None, out=None, keepdims=False, *, where=None):  # noqa: A001 - jax's name
    """``jnp.all``: whether every element (over ``axis``, among ``where``) is nonzero
    (NaN is); True for an empty reduction."""
    return _truth("all", a, axis, out, keepdims, where, True)


def any(a, axis=None, out=None, keepdims=False, *, where=None):  # noqa: A001 - jax's name
    """``jnp.any``: whether some element (over ``axis``, among ``where``) is nonzero;
    False for an empty reduction."""
    return _truth("any", a, axis, out, keepdims, where, False)


def ptp(a, axis=None, out=None, keepdims=False):
    """``jnp.ptp``: ``max - min`` over ``axis`` (bool raises ``TypeError``, as jax)."""
    _no_out("jnp.ptp", out)
    high = _reduction.max(a, axis=axis, keepdims=keepdims)
    return emit("subtract", (high, _reduction.min(a, axis=axis, keepdims=keepdims)))


# --------------------------------------------------------------------------- std, average


def _check_inexact_dtype(op_name: str, dtype: object) -> str | None:
    if dtype is None:
        return None
    dtype = dtypes.canonical(dtype)
    if not dtypes.is_floating(dtype):
        raise ValueError(f"dtype argument to jnp.{op_name} must be inexact; got {dtype}")
    return dtype


def _correction(ddof: object, correction: object) -> object:
    if correction is None:
        return ddof
    if ddof != 0:
        raise ValueError("ddof and correction can't be provided simultaneously.")
    return correction


def std(
    a,
    axis=None,
    dtype=None,
    out=None,
    ddof=0,
    keepdims=False,
    *,
    where=None,
    mean=None,  # noqa: A002 - jax.numpy's name
    correction=None,
):
    """``jnp.std``: ``sqrt(var(...))`` with the same keywords (``dtype`` must be
    inexact: ``ValueError`` otherwise, as jax)."""
    _no_out("jnp.std", out)
    dtype = _check_inexact_dtype("std", dtype)
    variance = _reduction.var(
        a, axis, dtype, None, _correction(ddof, correction), keepdims, where=where, mean=mean
    )
    return _core.sqrt(variance)


def _axis_tuple(op_name: str, axis: object, ndim: int) -> tuple[int, ...]:
    axes = _axes_or_none(op_name, axis, ndim)
    return tuple(range(ndim)) if axes is None else axes


def _weights_along(op_name: str, weights: object, a_shape, axes: tuple[int, ...], axis: object):
    """``weights`` reshaped to broadcast against ``a`` (jax: a weights array of ``a``'s
    shape, or of the reduced axes' shape)."""
    w_shape = shape_of(weights)
    same = len(w_shape) == len(a_shape) and builtins.all(
        arith.compare(x, "==", y) is True for x, y in zip(w_shape, a_shape)
    )
    if same:
        return weights
    if axis is None:
        raise ValueError("Axis must be specified when shapes of a and weights differ.")
    reduced = tuple(a_shape[ax] for ax in axes)
    if len(w_shape) != len(reduced) or builtins.any(
        arith.compare(x, "==", y) is False for x, y in zip(w_shape, reduced)
    ):
        raise ValueError(
            "Shape of weights must be consistent with shape of a along specified axis."
        )
    order = np.argsort(axes)
    if list(order) != sorted(order):
        weights = emit("transpose", (weights,), TransposeAttrs(tuple(int(i) for i in order)))
    target = tuple(dim if i in axes else 1 for i, dim in enumerate(a_shape))
    return reshape(weights, target)


def average(a, axis=None, weights=None, returned=False, keepdims=False):
    """``jnp.average``: the (``weights``-weighted) mean over ``axis``; with ``returned``
    also the sum of the weights (the count without weights), broadcast to the
    average's shape."""
    ndim = _rank(a)
    axes = _axis_tuple("average", axis, ndim)
    if weights is None:
        a = _core.astype(a, to_inexact(dtype_of(a)))
        avg = mean(a, axis=axis, keepdims=keepdims)
        count = math.prod(shape_of(a)[ax] for ax in axes)
        total = _full_like_scalar(count, dtype_of(avg))
    else:
        dtype = to_inexact(dtypes.promote(dtype_of(a), dtype_of(weights)))
        a, weights = _core.astype(a, dtype), _core.astype(weights, dtype)
        weights = _weights_along("average", weights, shape_of(a), axes, axis)
        total = _reduction.sum(weights, axis=axis, keepdims=keepdims)
        weighted = _reduction.sum(emit("multiply", (a, weights)), axis=axis, keepdims=keepdims)
        avg = emit("divide", (weighted, total))
    if not returned:
        return avg
    if shape_of(total) != shape_of(avg):
        total = broadcast_to(total, shape_of(avg))
    return avg, total


def _full_like_scalar(value: Dim, dtype: str) -> object:
    """A 0-d array of ``value`` (an int or a symbolic count) in ``dtype``."""
    if isinstance(value, int):
        return np.asarray(value, dtypes.to_numpy(dtype))
    return emit("astype", (value,), AstypeAttrs(dtype))


# --------------------------------------------------------------------------- NaN-ignoring


def _nan_reduction(reduce, a, fill, nan_if_all_nan, axis, keepdims, where, **kwargs):
    """jax's ``_nan_reduction``: ``reduce(where(_isnan(a), fill, a))`` for floats (and NaN
    where every element is NaN when ``nan_if_all_nan``); other dtypes reduce as they are."""
    if where is not None:
        where = _check_where(reduce.__name__, where)
    if not _inexact(a):
        return reduce(a, axis=axis, keepdims=keepdims, where=where, **kwargs)
    nan = _isnan(a)
    result = reduce(_core.where(nan, fill, a), axis=axis, keepdims=keepdims, where=where, **kwargs)
    if not nan_if_all_nan:
        return result
    return _core.where(all(nan, axis=axis, keepdims=keepdims), math.nan, result)


def nanmin(a, axis=None, out=None, keepdims=False, initial=None, where=None):
    """``jnp.nanmin``: the minimum ignoring NaNs (NaN where all are, unless ``initial``)."""
    _no_out("jnp.nanmin", out)
    return _nan_reduction(
        _reduction.min, a, math.inf, initial is None, axis, keepdims, where, initial=initial
    )


def nanmax(a, axis=None, out=None, keepdims=False, initial=None, where=None):
    """``jnp.nanmax``: the maximum ignoring NaNs (NaN where all are, unless ``initial``)."""
    _no_out("jnp.nanmax", out)
    return _nan_reduction(
        _reduction.max, a, -math.inf, initial is None, axis, keepdims, where, initial=initial
    )


def nansum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    """``jnp.nansum``: the sum with NaNs counted as 0 (dtypes as :func:`sum`)."""
    _no_out("jnp.nansum", out)
    return _nan_reduction(
        _reduction.sum, a, 0, False, axis, keepdims, where, dtype=dtype, initial=initial
    )


def nanprod(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    """``jnp.nanprod``: the product with NaNs counted as 1 (dtypes as :func:`prod`)."""
    _no_out("jnp.nanprod", out)
    return _nan_reduction(
        _reduction.prod, a, 1, False, axis, keepdims, where, dtype=dtype, initial=initial
    )


def nanmean(a, axis=None, dtype=None, out=None, keepdims=False, where=None):
    """``jnp.nanmean``: the mean of the non-NaN elements (NaN where there are none);
    integers and bool are :func:`mean`."""
    _no_out("jnp.nanmean", out)
    if not _inexact(a):
        return mean(a, axis, dtype, None, keepdims, where=where)
    dtype = to_inexact(dtype_of(a)) if dtype is None else dtypes.canonical(dtype)
    if where is not None:
        where = _check_where("nanmean", where)
    present = _not(_isnan(a))
    count = _reduction.sum(present, axis=axis, dtype=dtype, keepdims=keepdims, where=where)
    total = nansum(a, axis, dtype=dtype, keepdims=keepdims, where=where)
    return emit("divide", (total, count))


def nanvar(
    a,
    axis=None,
    dtype=None,
    out=None,
    ddof=0,
    keepdims=False,
    where=None,
    mean=None,  # noqa: A002 - jax.numpy's name
):
    """``jnp.nanvar``: the variance of the non-NaN elements, divided by their count
    minus ``ddof`` (NaN where that is not positive)."""
    _no_out("jnp.nanvar", out)
    computation, result = _moment_dtypes("nanvar", dtype_of(a), dtype)
    if where is not None:
        where = _check_where("nanvar", where)
    a = _core.astype(a, computation)
    if mean is None:
        mean = nanmean(a, axis, dtype=computation, keepdims=True, where=where)
    else:
        mean = _core.astype(mean if isinstance(mean, Tracer) else np.asarray(mean), computation)
    nan = _isnan(a)
    centered = _core.where(nan, 0, emit("subtract", (a, mean)))
    squares = emit("multiply", (centered, centered))
    count = _reduction.sum(_not(nan), axis=axis, keepdims=keepdims, where=where)
    count = emit("subtract", (count, _int(ddof, "nanvar ddof")))
    empty = emit("less_equal", (count, 0))
    total = _reduction.sum(squares, axis=axis, keepdims=keepdims, where=where)
    total = _core.where(empty, math.nan, total)
    divisor = _core.astype(_core.where(empty, 1, count), dtype_of(total))
    return _core.astype(emit("divide", (total, divisor)), result)


def nanstd(
    a,
    axis=None,
    dtype=None,
    out=None,
    ddof=0,
    keepdims=False,
    where=None,
    mean=None,  # noqa: A002 - jax.numpy's name
):
    """``jnp.nanstd``: ``sqrt(nanvar(...))``."""
    _no_out("jnp.nanstd", out)
    return _core.sqrt(nanvar(a, axis, dtype, None, ddof, keepdims, where=where, mean=mean))


def _nanarg(op_name: str, arg, fill: float, a, axis, out, keepdims):
    """``nanargmax``/``nanargmin``: NaNs replaced by the extreme that never wins; -1
    where every element is NaN."""
    _no_out(f"jnp.{op_name}", out)
    axis = _single_axis(op_name, axis, _rank(a))
    keepdims = bool(keepdims)
    if not _inexact(a):
        return arg(a, axis=axis, keepdims=keepdims)
    nan = _isnan(a)
    found = arg(_core.where(nan, fill, a), axis=axis, keepdims=keepdims)
    return _core.where(all(nan, axis=axis, keepdims=keepdims), -1, found)


def nanargmax(a, axis=None, out=None, keepdims=None):
    """``jnp.nanargmax``: the first position of the largest non-NaN element (int64); -1
    where every element is NaN."""
    return _nanarg("nanargmax", argmax, -math.inf, a, axis, out, keepdims)


def nanargmin(a, axis=None, out=None, keepdims=None):
    """``jnp.nanargmin``: the first position of the smallest non-NaN element (int64); -1
    where every element is NaN."""
    return _nanarg("nanargmin", argmin, math.inf, a, axis, out, keepdims)


# --------------------------------------------------------------------------- scans


def _scan(op_name: str, scan: str, a, axis, dtype, out, fill: int | None = None):
    """The scan ``scan`` of ``a`` (NaNs replaced by ``fill`` first, when given)."""
    _no_out(f"jnp.{op_name}", out)
    if fill is not None and _inexact(a):
        a = _core.where(_isnan(a), fill, a)
    attrs = CumsumAttrs(_single_axis(op_name, axis, _rank(a)), _dtype(dtype))
    return emit(scan, (a,), attrs)


def _dtype(dtype: object) -> str | None:
    return None if dtype is None else dtypes.canonical(dtype)


def cumprod(a, axis=None, dtype=None, out=None):
    """``jnp.cumprod``: running products along ``axis`` (of the flattened array when
    None); bool gives int64, other dtypes are kept (products wrap), unless ``dtype``."""
    return _scan("cumprod", "cumprod", a, axis, dtype, out)


def nancumsum(a, axis=None, dtype=None, out=None):
    """``jnp.nancumsum``: running sums with NaNs counted as 0."""
    return _scan("nancumsum", "cumsum", a, axis, dtype, out, fill=0)


def nancumprod(a, axis=None, dtype=None, out=None):
    """``jnp.nancumprod``: running products with NaNs counted as 1."""
    return _scan("nancumprod", "cumprod", a, axis, dtype, out, fill=1)


def _cumulative(op_name: str, x, axis, dtype, include_initial: bool, promote: bool):
    """``cumulative_sum``/``cumulative_prod`` (the array API's): ``axis`` is required
    beyond 1-d; ``include_initial`` prepends the identity."""
    ndim = _rank(x)
    if ndim == 0:
        what = "sum" if op_name == "cumulative_sum" else "product"
        raise ValueError(
            f"The input must be non-scalar to take a cumulative {what}, however a scalar "
            "value or scalar array was given."
        )
    if axis is None:
        if ndim is not None and ndim > 1:
            raise ValueError(
                f"The input array has rank {ndim}, however axis was not set to an explicit "
                "value. The axis argument is only optional for one-dimensional arrays."
            )
        axis = 0
    axis = _int(axis, f"{op_name} axis")
    if ndim is not None:
        axis = normalize_axis(op_name, axis, ndim)
    requested = _dtype(dtype)
    if requested is None and promote:
        requested = _promoted_int(op_name, dtype_of(x))
    scan = "cumsum" if op_name == "cumulative_sum" else "cumprod"
    result = emit(scan, (x,), CumsumAttrs(axis, requested))
    if not include_initial:
        return result
    shape = list(shape_of(x))
    shape[axis] = 1
    identity = np.asarray(0 if scan == "cumsum" else 1, dtypes.to_numpy(dtype_of(result)))
    initial = broadcast_to(identity, tuple(shape))
    return concatenate([initial, result], axis=axis)


def _promoted_int(op_name: str, dtype: str) -> str | None:
    """``cumulative_sum`` promotes integers as ``sum`` does (unsigned: ``TypeError``,
    jax gives uint64)."""
    if not dtypes.is_integer(dtype):
        return None
    if dtypes.is_unsigned(dtype):
        raise TypeError(
            f"{op_name} of {dtype} gives uint64 in jax.numpy, which relaxjax does not "
            "support; pass dtype= (e.g. dtype='int64')"
        )
    return "int64"


def cumulative_sum(x, /, *, axis=None, dtype=None, include_initial=False):
    """``jnp.cumulative_sum``: running sums along ``axis`` (optional for 1-d ``x``);
    integers accumulate in int64; ``include_initial`` starts with 0."""
    return _cumulative("cumulative_sum", x, axis, dtype, bool(include_initial), True)


def cumulative_prod(x, /, *, axis=None, dtype=None, include_initial=False):
    """``jnp.cumulative_prod``: running products along ``axis`` (optional for 1-d ``x``);
    ``include_initial`` starts with 1."""
    return _cumulative("cumulative_prod", x, axis, dtype, bool(include_initial), False)
