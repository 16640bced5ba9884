"""``jnp.put`` and ``jnp.put_along_axis``: functional updates at flat or per-axis positions,
made of ``x.at[...].set`` as jax makes them (``inplace=True``, numpy's default, is refused
with jax's message: arrays are immutable)."""

from __future__ import annotations

from relaxjax._numpy.arraylike import array_operand, ndim_of, shape_of, size_of
from relaxjax._numpy.core import clip
from relaxjax._numpy.creation import indices as grid_indices
from relaxjax._numpy.index import IndexUpdateHelper
from relaxjax._numpy.index_tricks import unravel_index
from relaxjax._numpy.manipulation import ravel, resize
from relaxjax._numpy.shape import broadcast_to

__all__ = ["put", "put_along_axis"]

_IMMUTABLE = (
    "jax.numpy.{} cannot modify arrays in-place, because JAX arrays are immutable. "
    "Pass inplace=False to instead return an updated array."
)


def _static_zero(dim: object) -> bool:
    return isinstance(dim, int) and dim == 0


def put(a, ind, v, mode=None, *, inplace=True):
    """``jnp.put(a, ind, v, mode=None, inplace=False)``: ``a`` with the elements at the flat
    positions ``ind`` set to ``v`` (repeated cyclically to ``ind``'s size). ``mode``:
    ``None`` drops out-of-range positions (negative ones count from the end), ``"clip"``
    clamps them, ``"wrap"`` takes them modulo ``a.size``."""
    if inplace:
        raise ValueError(_IMMUTABLE.format("put"))
    a, ind, v = array_operand(a), ravel(array_operand(ind)), ravel(array_operand(v))
    if mode == "raise":
        raise NotImplementedError("The 'raise' mode to jnp.put is not supported.")
    if mode not in (None, "clip", "wrap"):
        raise ValueError(f"mode should be one of 'wrap' or 'clip'; got mode={mode!r}")
    if any(_static_zero(size_of(x)) for x in (a, ind, v)):
        return a
    count = shape_of(ind)[0]
    length = shape_of(v)[0]
    same = isinstance(length, int) and isinstance(count, int) and length == count
    values = v if same else resize(v, (count,))
    size = size_of(a)
    if mode == "clip":
        ind = clip(ind, 0, size - 1)
    elif mode == "wrap":
        ind = ind % size
    key = unravel_index(ind, shape_of(a))
    return IndexUpdateHelper(a)[key].set(values, mode="drop" if mode is None else "clip")


def put_along_axis(arr, indices, values, axis, inplace=True, *, mode=None):
    """``jnp.put_along_axis(arr, indices, values, axis, inplace=False, mode=None)``: ``arr``
    with ``values`` (broadcast to ``indices``' shape) set at ``indices`` along ``axis``
    (``None``: of the flattened ``arr``), the other axes indexed by position; ``mode`` as
    for ``x.at[...].set``."""
    if inplace:
        raise ValueError(_IMMUTABLE.format("put_along_axis"))
    arr, indices, values = (array_operand(x) for x in (arr, indices, values))
    shape, flattened = shape_of(arr), axis is None
    if flattened:
        arr, axis = ravel(arr), 0
    rank, index_rank = ndim_of(arr), ndim_of(indices)
    if rank != index_rank:
        raise ValueError(
            "put_along_axis arguments 'arr' and 'indices' must have same ndim. Got "
            f"arr.ndim={rank} and indices.ndim={index_rank}."
        )
    if not isinstance(axis, int) or not -rank <= axis < rank:
        raise ValueError(f"put_along_axis: axis {axis!r} is out of bounds for rank {rank}")
    axis %= rank
    try:
        values = broadcast_to(values, shape_of(indices))
    except ValueError:
        raise ValueError(
            "put_along_axis argument 'values' must be broadcastable to 'indices'. Got "
            f"values.shape={tuple(shape_of(values))} and indices.shape="
            f"{tuple(shape_of(indices))}."
        ) from None
    key = list(grid_indices(shape_of(arr), sparse=True))
    key[axis] = indices
    result = IndexUpdateHelper(arr)[tuple(key)].set(values, mode=mode)
    return result.reshape(shape) if flattened else result
