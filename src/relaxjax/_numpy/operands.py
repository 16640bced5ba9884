"""Operand helpers shared by the statistics, sorting, set and counting wrappers: array
arguments as operands, their lengths, and jax's ``promote_dtypes``.

A Python scalar stays weakly typed in promotion (``searchsorted(x_f32, 2.5)`` compares
in float32) and becomes a constant of the common dtype; an operand that already has the
common dtype is passed as it is (keeping its weak type, as jax does)."""

from __future__ import annotations

import numpy as np

from relaxjax import arith, dtypes
from relaxjax._numpy.reduction import dtype_of, shape_of
from relaxjax._numpy.shape import reshape
from relaxjax.ops.elementwise import AstypeAttrs
from relaxjax.trace import Tracer, emit

__all__ = ["array_of", "leading_dim", "promoted", "ravel"]

Scalar = bool | int | float


def array_of(x: object) -> object:
    """A traced value as it is; anything else (lists, scalars) as a numpy array."""
    return x if isinstance(x, Tracer) else np.asarray(x)


def leading_dim(x: object) -> arith.Dim:
    """The length of the first axis."""
    return shape_of(x)[0]


def ravel(x: object) -> object:
    """``x`` flattened (row-major)."""
    return reshape(x, (-1,))


def _operand(x: object) -> dtypes.Operand:
    return dtypes.weak_of(x) if isinstance(x, Scalar) else dtype_of(x)


def _converted(x: object, dtype: str) -> object:
    if isinstance(x, Scalar):
        return np.asarray(x, dtypes.to_numpy(dtype))
    x = array_of(x)
    return x if dtype_of(x) == dtype else emit("astype", (x,), AstypeAttrs(dtype))


def promoted(*operands: object) -> tuple[object, ...]:
    """The operands in their common dtype (jax's ``promote_dtypes``)."""
    dtype = dtypes.result_type(*(_operand(x) for x in operands))
    return tuple(_converted(x, dtype) for x in operands)
