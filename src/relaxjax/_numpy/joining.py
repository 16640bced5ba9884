"""Joining and splitting arrays with jax.numpy's names and semantics: ``hstack vstack
dstack column_stack concat block append`` (``concatenate`` of arrays made at least n-d)
and ``array_split hsplit vsplit dsplit unstack`` (``split``).

Symbolic lengths stay exact: ``array_split`` of ``n`` rows into 3 has pieces of
``(n + 2) // 3``, ``(n + 1) // 3`` and ``n // 3`` rows.

>>> import relaxjax as relax, relaxjax.numpy as rnp
>>> relax.eval_shape(lambda x: rnp.array_split(x, 3)[0], relax.Tensor(("n", 4), "float32"))
Tensor(((n + 2) // 3, 4), "float32")
"""

from __future__ import annotations

import numpy as np

from relaxjax import arith
from relaxjax._numpy.arraylike import (
    array_operand,
    asserted_shape,
    joined_operands,
    ndim_of,
    reshaped,
    shape_of,
)
from relaxjax._numpy.manipulation import (
    array_sequence,
    at_least_rank,
    atleast_3d,
    index_along,
    ravel,
    single_axis,
)
from relaxjax._numpy.shape import concatenate, split
from relaxjax.errors import TraceError

Dim = arith.Dim

__all__ = [
    "append",
    "array_split",
    "block",
    "column_stack",
    "concat",
    "dsplit",
    "dstack",
    "hsplit",
    "hstack",
    "unstack",
    "vsplit",
    "vstack",
]


# --------------------------------------------------------------------------- joining


def concat(arrays, /, *, axis=0):
    """``jnp.concat`` (the array API's ``concatenate``)."""
    return concatenate(array_sequence("concat", arrays), axis=axis)


def hstack(tup, dtype=None):
    """``jnp.hstack``: join along axis 1 (axis 0 for 1-d arrays)."""
    arrays = [at_least_rank(x, 1) for x in array_sequence("hstack", tup)]
    return concatenate(arrays, axis=0 if ndim_of(arrays[0]) == 1 else 1, dtype=dtype)


def vstack(tup, dtype=None):
    """``jnp.vstack``: join along axis 0 after making every array at least 2-d."""
    return concatenate(
        [at_least_rank(x, 2) for x in array_sequence("vstack", tup)], axis=0, dtype=dtype
    )


def dstack(tup, dtype=None):
    """``jnp.dstack``: join along axis 2 after making every array at least 3-d."""
    return concatenate([atleast_3d(x) for x in array_sequence("dstack", tup)], axis=2, dtype=dtype)


def column_stack(tup):
    """``jnp.column_stack``: 1-d arrays become columns, then join along axis 1."""
    arrays = []
    for x in array_sequence("column_stack", tup):
        arrays.append(reshaped(x, (shape_of(x)[0], 1)) if ndim_of(x) == 1 else at_least_rank(x, 2))
    return concatenate(arrays, axis=1)


def append(arr, values, axis=None):
    """``jnp.append``: ``values`` after ``arr`` along ``axis`` (both flattened when None)."""
    arr, values = joined_operands([arr, values])
    if axis is None:
        return concatenate([ravel(arr), ravel(values)], axis=0)
    return concatenate([arr, values], axis=axis)


def block(arrays):
    """``jnp.block``: assemble an array from nested lists of blocks (the innermost lists
    join along the last axis, the next ones along the one before, ...)."""
    result, _, _ = _block(arrays)
    return result


def _block(xs: object) -> tuple[object, int, int]:
    """``(joined, list depth, rank)`` of a nested list of blocks."""
    if isinstance(xs, tuple):
        raise ValueError(f"jax.numpy.block does not allow tuples, got {xs}")
    if not isinstance(xs, list):
        x = array_operand(xs)
        return x, 0, ndim_of(x)
    if not xs:
        raise ValueError("jax.numpy.block does not allow empty list arguments")
    parts = [_block(x) for x in xs]
    depths = {depth for _, depth, _ in parts}
    if len(depths) != 1:
        raise ValueError("Mismatched list depths in jax.numpy.block")
    depth = depths.pop() + 1
    rank = max(depth, *(r for _, _, r in parts))
    joined = concatenate([at_least_rank(x, rank) for x, _, _ in parts], axis=-depth)
    return joined, depth, rank


# --------------------------------------------------------------------------- splitting


def array_split(ary, indices_or_sections, axis=0):
    """``jnp.array_split``: like ``split``, but ``sections`` need not divide the axis: the
    first ``size % sections`` pieces are one longer (piece ``i`` of a symbolic size ``n``
    has ``(n + sections - 1 - i) // sections`` entries)."""
    ary = array_operand(ary)
    ndim = ndim_of(ary, "array_split")
    axis = single_axis("array_split", axis, ndim)
    if isinstance(indices_or_sections, arith.Expr):
        raise ValueError(
            "jax.numpy.array_split with a symbolic number of sections is not supported"
        )
    if isinstance(indices_or_sections, (int, np.integer)) and not isinstance(
        indices_or_sections, bool
    ):
        sections = int(indices_or_sections)
        if sections <= 0:
            raise ValueError("number sections must be larger than 0.")
        size = shape_of(ary)[axis]
        lengths = [arith.floordiv(size + sections - 1 - i, sections) for i in range(sections)]
        bounds = [sum(lengths[: i + 1], start=0) for i in range(sections - 1)]
        pieces = split(ary, bounds, axis=axis)
        return pieces[:-1] + [_with_length(pieces[-1], axis, lengths[-1])]
    return split(ary, indices_or_sections, axis=axis)


def _with_length(piece: object, axis: int, length: Dim) -> object:
    """``piece`` asserted to have ``length`` entries along ``axis``: the last piece of
    ``array_split`` is ``size - bound``, which arith does not simplify to its formula."""
    shape = list(shape_of(piece))
    shape[axis] = length
    return asserted_shape(piece, shape)


def hsplit(ary, indices_or_sections):
    """``jnp.hsplit``: ``split`` along axis 1 (axis 0 for 1-d arrays)."""
    ary = array_operand(ary)
    ndim = ndim_of(ary, "hsplit")
    if ndim == 0:
        raise ValueError("hsplit only works on arrays of 1 or more dimensions")
    return split(ary, indices_or_sections, axis=1 if ndim > 1 else 0)


def vsplit(ary, indices_or_sections):
    """``jnp.vsplit``: ``split`` along axis 0 of an array of at least 2 dimensions."""
    ary = array_operand(ary)
    if ndim_of(ary, "vsplit") < 2:
        raise ValueError("vsplit only works on arrays of 2 or more dimensions")
    return split(ary, indices_or_sections, axis=0)


def dsplit(ary, indices_or_sections):
    """``jnp.dsplit``: ``split`` along axis 2 of an array of at least 3 dimensions."""
    ary = array_operand(ary)
    if ndim_of(ary, "dsplit") < 3:
        raise ValueError("dsplit only works on arrays of 3 or more dimensions")
    return split(ary, indices_or_sections, axis=2)


def unstack(x, /, *, axis=0):
    """``jnp.unstack``: the slices along ``axis`` as a tuple (the axis must be static)."""
    x = array_operand(x)
    ndim = ndim_of(x, "unstack")
    if ndim == 0:
        raise ValueError(
            "Unstack requires arrays with rank > 0, however a scalar array was passed."
        )
    axis = single_axis("unstack", axis, ndim)
    count = shape_of(x)[axis]
    if not isinstance(count, int):
        raise TraceError(
            f"unstack: axis {axis} has the symbolic size {count}; a tuple needs a static length"
        )
    return tuple(index_along(x, axis, i) for i in range(count))
