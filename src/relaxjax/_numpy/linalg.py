"""``relaxjax.numpy.linalg``: the functions of ``jax.numpy.linalg`` built from products,
reductions and the factorisations of :mod:`relaxjax._numpy.factorizations`: the norms
(``norm vector_norm matrix_norm``), ``cond`` and the array-API spellings (``matmul outer
tensordot vecdot trace diagonal matrix_transpose cross``).

Norms follow jax: ``norm`` computes in the inexact dtype of ``x`` (``inexact(x)``);
``vector_norm`` keeps integer dtypes for ``ord`` 1 and ``inf``; matrix norms of ``ord``
2, -2 and ``"nuc"`` use the singular values (a LAPACK call).
"""

from __future__ import annotations

import numpy as np

from relaxjax._numpy import contractions, index_tricks, manipulation
from relaxjax._numpy.arraylike import (
    array_operand,
    astype,
    converted,
    dtype_of,
    ndim_of,
    shape_of,
)
from relaxjax._numpy.core import abs as _abs
from relaxjax._numpy.core import power, sqrt, where
from relaxjax._numpy.factorizations import inv, svdvals
from relaxjax._numpy.manipulation import moveaxis
from relaxjax._numpy.reduction import max as _max
from relaxjax._numpy.reduction import min as _min
from relaxjax._numpy.reduction import sum as _sum
from relaxjax._numpy.shape import expand_dims
from relaxjax._numpy.shape import matmul as _matmul
from relaxjax.ops.axes import normalize_axes
from relaxjax.ops.base import to_inexact

__all__ = [
    "cond",
    "cross",
    "diagonal",
    "matmul",
    "matrix_norm",
    "matrix_transpose",
    "norm",
    "outer",
    "tensordot",
    "trace",
    "vecdot",
    "vector_norm",
]


# --------------------------------------------------------------------------- norms


def _axes(axis: object, ndim: int) -> tuple[int, ...] | None:
    if axis is None:
        return None
    axes = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
    return normalize_axes("norm", tuple(int(a) for a in axes), ndim)


def vector_norm(x, /, *, axis=None, keepdims=False, ord=2):  # noqa: A002 - jax's name
    """``jnp.linalg.vector_norm``: the ``ord``-norm over ``axis`` (all axes when None):
    2 (default), 1, ``inf``, ``-inf``, 0 (the count of nonzeros, as a float) or any
    other number ``p`` (``sum(abs(x) ** p) ** (1 / p)``)."""
    x = array_operand(x)
    axes = _axes(axis, ndim_of(x, "vector_norm"))
    if ord is None or (not isinstance(ord, str) and ord == 2):
        return sqrt(_sum(x * x, axis=axes, keepdims=keepdims))
    if isinstance(ord, str):
        message = f"Invalid order '{ord}' for vector norm."
        if ord in ("inf", "-inf"):
            message += f"Use '{ord[:-3]}jax.numpy.inf' instead."
        raise ValueError(message)
    if ord == np.inf:
        return _max(_abs(x), axis=axes, keepdims=keepdims, initial=0)
    if ord == -np.inf:
        return _min(_abs(x), axis=axes, keepdims=keepdims)
    if ord == 0:
        return _sum(x != 0, dtype=to_inexact(dtype_of(x)), axis=axes, keepdims=keepdims)
    if ord == 1:
        return _sum(_abs(x), axis=axes, keepdims=keepdims)
    magnitude = _abs(x)
    dtype = dtype_of(magnitude)
    total = _sum(power(magnitude, astype(float(ord), dtype)), axis=axes, keepdims=keepdims)
    return power(total, astype(1.0 / ord, dtype))


def norm(x, ord=None, axis=None, keepdims=False):  # noqa: A002 - jax's name
    """``jnp.linalg.norm``: a vector norm over one axis, a matrix norm over two
    (``None``/``"fro"``, 1, -1, ``inf``, ``-inf``), the 2-norm of all elements for
    ``axis=None`` and ``ord=None``."""
    (x,) = converted(x, inexact=True)
    ndim = ndim_of(x, "norm")
    if axis is None:
        if ord is None:
            return sqrt(_sum(x * x, keepdims=keepdims))
        axes = tuple(range(ndim))
    else:
        axes = _axes(axis, ndim)
    if len(axes) == 1:
        return vector_norm(x, ord=2 if ord is None else ord, axis=axes, keepdims=keepdims)
    if len(axes) == 2:
        return _matrix_norm(x, ord, axes, keepdims)
    raise ValueError(
        f"Improper number of axes for norm: axis={axis}. Pass one axis to compute a "
        "vector-norm, or two axes to compute a matrix-norm."
    )


def _matrix_norm(x: object, ord: object, axes: tuple[int, int], keepdims: bool) -> object:  # noqa: A002
    row, column = axes
    if ord is None or ord in ("f", "fro"):
        return sqrt(_sum(x * x, axis=axes, keepdims=keepdims))
    if ord in ("nuc", 2, -2):
        s = svdvals(moveaxis(x, axes, (-2, -1)))
        if ord == 2:
            y = _max(s, axis=-1, initial=0)
        elif ord == -2:
            y = _min(s, axis=-1)
        else:
            y = _sum(s, axis=-1)
        return expand_dims(y, axes) if keepdims else y
    if isinstance(ord, str):
        raise ValueError(f"Invalid order '{ord}' for matrix norm.")
    if ord in (1, -1):
        summed, reduce_axis = row, column
    elif ord in (np.inf, -np.inf):
        summed, reduce_axis = column, row
    else:
        raise ValueError(f"Invalid order '{ord}' for matrix norm.")
    if not keepdims and reduce_axis > summed:
        reduce_axis -= 1
    sums = _sum(_abs(x), axis=summed, keepdims=keepdims)
    if ord in (1, np.inf):
        return _max(sums, axis=reduce_axis, keepdims=keepdims, initial=0)
    return _min(sums, axis=reduce_axis, keepdims=keepdims)


def matrix_norm(x, /, *, keepdims=False, ord="fro"):  # noqa: A002 - jax's name
    """``jnp.linalg.matrix_norm``: ``norm`` over the last two axes."""
    return norm(x, ord=ord, keepdims=keepdims, axis=(-2, -1))


def cond(x, p=None):
    """``jnp.linalg.cond``: the condition number in the norm ``p`` (the ratio of extreme
    singular values for ``None``, 2, -2), infinity where it is NaN but ``x`` has none."""
    (x,) = converted(x, inexact=True)
    if p is None or p == 2 or p == -2:
        s = svdvals(x)
        r = s[..., 0] / s[..., -1] if p != -2 else s[..., -1] / s[..., 0]
    else:
        r = norm(x, ord=p, axis=(-2, -1)) * norm(inv(x), ord=p, axis=(-2, -1))
    nan_free = ~_max(x != x, axis=(-2, -1), initial=False)
    return where((r != r) & nan_free, np.inf, r)


# --------------------------------------------------------------------------- array API


def matmul(x1, x2, /, *, precision=None, preferred_element_type=None):
    """``jnp.linalg.matmul``: ``x1 @ x2``."""
    del precision
    if preferred_element_type is not None:
        x1, x2 = astype(x1, preferred_element_type), astype(x2, preferred_element_type)
    return _matmul(x1, x2)


def outer(x1, x2, /):
    """``jnp.linalg.outer``: the outer product of two 1-d arrays."""
    x1, x2 = array_operand(x1), array_operand(x2)
    if ndim_of(x1) != 1 or ndim_of(x2) != 1:
        raise ValueError(
            "Input arrays must be one-dimensional, but they are "
            f"x1.ndim={ndim_of(x1)} x2.ndim={ndim_of(x2)}"
        )
    return contractions.outer(x1, x2)


def tensordot(x1, x2, /, *, axes=2, precision=None, preferred_element_type=None):
    """``jnp.linalg.tensordot`` (``axes`` is keyword-only)."""
    return contractions.tensordot(
        x1, x2, axes, precision=precision, preferred_element_type=preferred_element_type
    )


def vecdot(x1, x2, /, *, axis=-1, precision=None, preferred_element_type=None):
    """``jnp.linalg.vecdot``."""
    return contractions.vecdot(
        x1, x2, axis=axis, precision=precision, preferred_element_type=preferred_element_type
    )


def trace(x, /, *, offset=0, dtype=None):
    """``jnp.linalg.trace``: traces of the matrices in the last two axes."""
    return index_tricks.trace(x, offset, -2, -1, dtype)


def diagonal(x, /, *, offset=0):
    """``jnp.linalg.diagonal``: diagonals of the matrices in the last two axes."""
    return index_tricks.diagonal(x, offset, -2, -1)


def matrix_transpose(x, /):
    """``jnp.linalg.matrix_transpose``: exchange the last two axes."""
    return manipulation.matrix_transpose(x)


def cross(x1, x2, /, *, axis=-1):
    """``jnp.linalg.cross``: the cross product of 3-vectors along ``axis``."""
    x1, x2 = array_operand(x1), array_operand(x2)
    sizes = (shape_of(x1)[axis], shape_of(x2)[axis])
    if sizes != (3, 3):
        raise ValueError(
            "Both input arrays must be (arrays of) 3-dimensional vectors, but they have "
            f"x1.shape[axis]={sizes[0]} and x2.shape[axis]={sizes[1]}"
        )
    return contractions.cross(x1, x2, axis=axis)
