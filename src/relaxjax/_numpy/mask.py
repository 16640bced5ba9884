"""Boolean masks: ``x[mask]`` and the data-dependent sizes behind it.

``x[mask]`` with a bool ``mask`` covering axes ``[a, a + m)`` of ``x`` keeps the
elements where the mask is true: the result has shape ``x.shape[:a] + (k,) +
x.shape[a + m:]``, ``k`` the number of true entries. While tracing, ``k`` is a fresh
symbol with bounds ``0 <= k <= mask.size`` (:func:`relaxjax.trace.data_dependent_size`);
the gather is ``take`` of the mask's flat true positions (``flatnonzero``) along the
mask's axes (merged into one by a ``reshape`` when ``m != 1``). A mask that is a numpy
array (known while tracing) gives a static size, as in jax.

Used by indexing (:mod:`relaxjax._numpy.index`: a mask alone is gathered with ``take``,
a mask among other array indices becomes its ``nonzero()`` index arrays) and
``compress``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from relaxjax import arith, dtypes
from relaxjax.errors import ShapeError
from relaxjax.ir import PrimInfo, TensorInfo
from relaxjax.ops.index import TakeAttrs
from relaxjax.ops.manipulate import ReshapeAttrs
from relaxjax.ops.nonzero import NonzeroAttrs, index_dtype
from relaxjax.trace import Tracer, current, data_dependent_size, emit, match_cast

Dim = arith.Dim

__all__ = ["count_size", "is_mask", "mask_indices", "mask_ndim", "take_masked"]


def is_mask(entry: object) -> bool:
    """Whether an index entry is a boolean mask (a bool tensor, array or Python bool)."""
    if isinstance(entry, (bool, np.bool_)):
        return True
    if isinstance(entry, Tracer):
        return entry.dtype == "bool"
    return isinstance(entry, np.ndarray) and entry.dtype == np.bool_


def mask_ndim(entry: object) -> int:
    """How many axes of the indexed array a mask covers."""
    if isinstance(entry, Tracer):
        return entry.ndim
    return int(np.ndim(entry))


def _shape(x: object) -> tuple[Dim, ...]:
    if isinstance(x, Tracer):
        info = x.info
        return () if isinstance(info, PrimInfo) else x.shape
    return tuple(np.shape(x))


def count_size(mask: object, bound: Dim) -> Dim:
    """The number of nonzero entries of ``mask``: an int when ``mask`` is known (eager,
    or a numpy constant while tracing), else a fresh symbol ``0 <= k <= bound``."""
    return data_dependent_size("nonzero_count", (mask,), None, bound)


def _check_mask_shape(x_shape: Sequence[Dim], mask: object, axis: int) -> object:
    """``mask``, checked against the axes it covers: a mismatch that holds for every value
    of the symbols raises now, an unproven one is checked at run time (match_cast)."""
    shape = _shape(mask)
    covered = tuple(x_shape[axis : axis + len(shape)])
    if len(covered) != len(shape) or any(
        arith.compare(a, "==", b) is False for a, b in zip(shape, covered)
    ):
        raise ShapeError(
            f"boolean index did not match shape of indexed array in index {axis}: got "
            f"{_text(shape)}, expected {_text(covered)}"
        )
    if all(arith.compare(a, "==", b) is True for a, b in zip(shape, covered)):
        return mask
    return match_cast(mask, TensorInfo(covered, "bool"))


def _text(shape: Sequence[Dim]) -> str:
    return "(" + ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"


def take_masked(x: object, mask: object, axis: int) -> object:
    """``x`` with the axes ``[axis, axis + mask.ndim)`` replaced by the ``k`` positions
    where ``mask`` is true (numpy's boolean indexing; see the module doc)."""
    if isinstance(mask, (bool, np.bool_)):
        mask = np.asarray(mask)
    if not is_mask(mask):
        raise TypeError(f"a boolean mask must have dtype bool, got {dtypes.canonical(mask.dtype)}")
    shape = _shape(x)
    mask = _check_mask_shape(shape, mask, axis)
    m = mask_ndim(mask)
    covered = shape[axis : axis + m]
    size = count_size(mask, _product(covered))
    if isinstance(mask, Tracer) or current() is None:
        positions = emit("flatnonzero", (mask,), NonzeroAttrs(size, (), index_dtype(())))
    else:  # a numpy mask while tracing: the positions are constants
        positions = np.flatnonzero(mask).astype(np.int64)
    if m != 1:
        merged = shape[:axis] + (_product(covered),) + shape[axis + m :]
        x = emit("reshape", (x,), ReshapeAttrs(merged))
    return emit("take", (x, positions), TakeAttrs(axis, "index"))


def mask_indices(x_shape: Sequence[Dim], mask: object, axis: int) -> list:
    """The integer index arrays equivalent to ``mask`` on the axes ``[axis, axis +
    mask.ndim)`` of an array of ``x_shape`` (numpy: a mask indexes like its ``nonzero()``),
    one per mask axis, each of the data-dependent length ``k`` (numpy arrays for a numpy
    mask while tracing: a static length)."""
    mask = _check_mask_shape(x_shape, mask, axis)
    covered = tuple(x_shape[axis : axis + mask_ndim(mask)])
    size = count_size(mask, _product(covered))
    if isinstance(mask, Tracer) or current() is None:
        return list(emit("nonzero", (mask,), NonzeroAttrs(size, (), index_dtype(()))))
    return [p.astype(np.int64) for p in np.nonzero(mask)]


def _product(dims: Sequence[Dim]) -> Dim:
    result: Dim = 1
    for dim in dims:
        result = result * dim
    return result
