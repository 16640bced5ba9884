"""Run-time helpers of the Python code the interpreter generates (its globals).

Values are numpy scalars (or arrays, in vectorized loops) of the exact TIR dtype, so
each operation rounds or wraps like the dtype does; see :mod:`relaxjax.tir.expr` for
the semantics these implement.
"""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np

from relaxjax import dtypes


def _check(index, extent, what):
    if isinstance(index, np.ndarray):
        if index.size and (index.min() < 0 or index.max() >= extent):
            bad = index[(index < 0) | (index >= extent)][0]
            raise IndexError(f"{what}: index {bad} is outside [0, {extent})")
    elif not 0 <= index < extent:
        raise IndexError(f"{what}: index {index} is outside [0, {extent})")
    return index


def _to_float32_first(x, dtype):
    # Casts to bfloat16 round from float32 (the documented TIR semantics).
    if dtype == _BF16 and x.dtype not in (_BF16, _F32):
        x = x.astype(_F32)
    return x.astype(dtype)


def _cast(x, dtype):
    x = _as_numpy(x)
    if np.dtype(dtype).kind in "iu":  # floats saturate, as in the backend (jax's rule)
        return dtypes.convert(x, np.dtype(dtype).name)[()]
    return _to_float32_first(x, dtype)


def _as_numpy(x):
    if isinstance(x, (int, bool)):
        return np.int64(x)
    return x


def _rsqrt(x):
    return x.dtype.type(1) / np.sqrt(x)


def _sigmoid(x):
    one = x.dtype.type(1)
    return one / (one + np.exp(-x))


_vector_erf = np.frompyfunc(math.erf, 1, 1)


def _erf(x):
    # numpy has no erf: math.erf in float64, rounded to the operand's dtype.
    if isinstance(x, np.ndarray):
        wide = _vector_erf(x.astype(np.float64)).astype(np.float64)
        return _to_float32_first(wide, x.dtype)
    return _to_float32_first(np.float64(math.erf(float(x))), x.dtype)


_vector_erfc = np.frompyfunc(math.erfc, 1, 1)


def _erfc(x):
    # As _erf: math.erfc in float64, rounded to the operand's dtype.
    if isinstance(x, np.ndarray):
        wide = _vector_erfc(x.astype(np.float64)).astype(np.float64)
        return _to_float32_first(wide, x.dtype)
    return _to_float32_first(np.float64(math.erfc(float(x))), x.dtype)


def _scalar_like(result, x):
    """``result`` as a numpy scalar of ``x``'s dtype when ``x`` is a scalar."""
    result = np.asarray(result).astype(x.dtype)
    return result if isinstance(x, np.ndarray) else result[()]


def _ldexp(x, e):
    # ``e`` holds an integral value in x's dtype; anything beyond +-2**16 saturates the
    # result already.
    exponent = np.clip(np.trunc(np.asarray(e, np.float64)), -(2**16), 2**16).astype(np.int32)
    if x.dtype in (_BF16, np.float16):
        return _scalar_like(np.ldexp(np.asarray(x, np.float32), exponent), x)
    return _scalar_like(np.ldexp(x, exponent), x)


def _nextafter(x, y):
    # C (and jax) return y when x == y; numpy's float16 loop returns x (0.0 vs -0.0).
    return _scalar_like(np.where(x == y, y, np.nextafter(x, y)), x)


def _shift_in_range(x, y):
    if x.dtype == np.bool_:  # one bit: only a shift by 0 (False) is in range
        return ~y, np.zeros_like(y, dtype=np.uint8)
    bits = x.dtype.itemsize * 8
    valid = (y >= 0) & (y < bits)
    return valid, np.where(valid, y, 0).astype(x.dtype)


def _shift_left(x, y):
    valid, amount = _shift_in_range(x, y)
    return _scalar_like(np.where(valid, np.left_shift(x, amount), 0), x)


def _shift_right(x, y):
    valid, amount = _shift_in_range(x, y)
    beyond = np.where(x < 0, -1, 0) if x.dtype.kind == "i" else 0
    return _scalar_like(np.where(valid, np.right_shift(x, amount), beyond), x)


def _popcount(x):
    if x.dtype == np.bool_:
        return x
    # numpy counts the bits of |x|; the intrinsic counts the two's complement bits.
    return _scalar_like(np.bitwise_count(np.asarray(x).view(f"u{x.dtype.itemsize}")), x)


def _fma(a, b, c):
    if a.dtype == np.float64:
        return a * b + c
    wide = a.astype(np.float64) * b.astype(np.float64) + c.astype(np.float64)
    return _to_float32_first(wide, a.dtype)


def _select(condition, true_value, false_value):
    return true_value if condition else false_value


def _vselect(condition, true_value, false_value):
    result = np.where(condition, true_value, false_value)
    return result if result.ndim else result[()]


def _dim_min(*args):
    if any(isinstance(a, np.ndarray) for a in args):
        result = args[0]
        for a in args[1:]:
            result = np.minimum(result, a)
        return result
    return min(args)


def _dim_max(*args):
    if any(isinstance(a, np.ndarray) for a in args):
        result = args[0]
        for a in args[1:]:
            result = np.maximum(result, a)
        return result
    return max(args)


def alloc(shape, dtype):
    """A new array of ``shape``: NaN for floats (poison), 0 for ints and bools."""
    if dtype.kind == "f" or dtype == _BF16:
        return np.full(shape, np.nan, dtype=dtype)
    return np.zeros(shape, dtype=dtype)


def _fold(ufunc, current, init, condition, terms, count):
    """``acc = ufunc(acc, term)`` over ``terms`` in order, exactly as a sequential loop:
    the accumulator restarts from ``init()`` at the last step where ``condition`` holds
    (the block's init), else from ``current``. ``ufunc.accumulate`` is a strict left fold
    in the accumulator's dtype."""
    terms = np.broadcast_to(terms, (count,))
    hits = np.flatnonzero(np.broadcast_to(condition, (count,)))
    if hits.size:
        start, terms = init(), terms[hits[-1] :]
    else:
        start = current
    sequence = np.empty(terms.size + 1, dtype=terms.dtype)
    sequence[0] = start
    sequence[1:] = terms
    return ufunc.accumulate(sequence)[-1]


_BF16 = np.dtype(ml_dtypes.bfloat16)
_F32 = np.dtype(np.float32)

RUNTIME: dict[str, object] = {
    "_rt_np": np,
    "_rt_i64": np.int64,
    "_rt_check": _check,
    "_rt_cast": _cast,
    "_rt_rsqrt": _rsqrt,
    "_rt_sigmoid": _sigmoid,
    "_rt_erf": _erf,
    "_rt_erfc": _erfc,
    "_rt_ldexp": _ldexp,
    "_rt_nextafter": _nextafter,
    "_rt_shift_left": _shift_left,
    "_rt_shift_right": _shift_right,
    "_rt_popcount": _popcount,
    "_rt_fma": _fma,
    "_rt_select": _select,
    "_rt_vselect": _vselect,
    "_rt_alloc": alloc,
    "_rt_fold": _fold,
    "min": _dim_min,
    "max": _dim_max,
    "range": range,
    "int": int,
}
