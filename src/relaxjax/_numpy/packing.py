"""``packbits`` and ``unpackbits`` of ``relaxjax.numpy``: bits to uint8 bytes and back,
along an axis, with jax's semantics.

Both are compositions (comparisons, shifts, a gather and a sum) whose lengths may be
symbolic: packing ``n`` values gives ``(n + 7) // 8`` bytes, the last one padded with
zero bits; the gather reads beyond the end as 0, so no padding op is needed.
"""

from __future__ import annotations

import numpy as np

from relaxjax import arith, dtypes
from relaxjax._numpy.arraylike import astype, dtype_of, shape_of, static_index
from relaxjax._numpy.core import arange, greater, not_equal, zeros
from relaxjax._numpy.manipulation import ravel
from relaxjax._numpy.reduction import sum as _sum
from relaxjax._numpy.shape import concatenate, reshape, swapaxes, take
from relaxjax._numpy.ufuncs import bitwise_and, left_shift

__all__ = ["packbits", "unpackbits"]


def _bit_weights(bitorder: str) -> np.ndarray:
    if bitorder not in ("little", "big"):
        raise ValueError("'order' must be either 'little' or 'big'")
    shifts = np.arange(8, dtype=np.uint8)
    return shifts[::-1].copy() if bitorder == "big" else shifts


def _along_last(a, axis):
    """``a`` (flattened when ``axis`` is None) with ``axis`` last, and that axis."""
    if axis is None:
        return ravel(a), 0
    return swapaxes(a, axis, -1), axis


def packbits(a, axis=None, bitorder="big"):
    """The nonzero-ness of ``a``'s elements along ``axis`` (flattened when None) packed
    into uint8 bytes, 8 per byte, the first bit the most significant with ``bitorder=
    'big'`` (``jnp.packbits``); a last partial byte is padded with zero bits."""
    kind = dtype_of(a)
    if not (dtypes.is_integer(kind) or dtypes.is_bool(kind)):
        raise TypeError("Expected an input array of integer or boolean data type")
    shifts = _bit_weights(bitorder)
    bits, axis = _along_last(astype(not_equal(a, 0), "uint8"), axis)
    *outer, length = shape_of(bits)
    groups = (length + 7) // 8
    positions = reshape(arange(groups)[:, None] * 8 + arange(8)[None, :], (-1,))
    grouped = take(bits, positions, axis=-1, mode="fill", fill_value=0)
    grouped = reshape(grouped, (*outer, groups, 8))
    packed = _sum(left_shift(grouped, shifts), axis=-1, dtype="int32")
    return swapaxes(astype(packed, "uint8"), axis, -1)


def unpackbits(a, axis=None, count=None, bitorder="big"):
    """The bits of the uint8 array ``a`` along ``axis`` (flattened when None), as uint8 0s
    and 1s, 8 per byte (``jnp.unpackbits``); ``count`` keeps that many (padding with
    zeros beyond the end; a negative count drops from the end; a symbolic dim is a size)."""
    if dtype_of(a) != "uint8":
        raise TypeError("Expected an input array of unsigned byte data type")
    masks = np.left_shift(np.uint8(1), _bit_weights(bitorder))
    arr, axis = _along_last(a, axis)
    *outer, length = shape_of(arr)
    bits = astype(greater(bitwise_and(arr[..., None], masks), 0), "uint8")
    bits = reshape(bits, (*outer, length * 8))
    if count is not None:
        count = count if isinstance(count, arith.Expr) else static_index(count, "count")
        if not isinstance(count, int) or count > 0:  # zeros appended, the first count kept
            bits = concatenate([bits, zeros((*outer, count), "uint8")], axis=-1)
        bits = bits[..., :count]
    return swapaxes(bits, axis, -1)
