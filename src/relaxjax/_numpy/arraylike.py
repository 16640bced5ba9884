"""What the array-manipulation, index-trick, linear-algebra and signal wrappers know about
their operands while tracing: shapes (ints and symbolic dims), ranks and dtypes of traced
values, numpy arrays, nested lists and Python scalars, and the conversions jax applies
(``ensure_arraylike``: a list becomes an array; a Python scalar stays weakly typed).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from relaxjax import arith, dtypes
from relaxjax._numpy.core import asarray
from relaxjax.errors import TraceError
from relaxjax.ir import PrimInfo
from relaxjax.ops.elementwise import AstypeAttrs
from relaxjax.ops.manipulate import ReshapeAttrs
from relaxjax.trace import Tracer, emit

Dim = arith.Dim

__all__ = [
    "array_operand",
    "astype",
    "dtype_of",
    "is_static",
    "ndim_of",
    "promoted",
    "reshaped",
    "shape_of",
    "size_of",
    "static_index",
]


def is_static(x: object) -> bool:
    """Whether ``x``'s value is known while tracing (not a traced value)."""
    return not isinstance(x, Tracer)


def array_operand(x: object) -> object:
    """``x`` as an op operand: traced values, numpy arrays, symbolic dims and Python
    scalars (weakly typed) pass; sequences and other array-likes become arrays, as jax's
    ``ensure_arraylike`` makes them."""
    if isinstance(x, (Tracer, np.ndarray, bool, int, float, arith.Expr)):
        return x
    if isinstance(x, np.generic):
        return np.asarray(x)
    return asarray(x)


def shape_of(x: object) -> tuple[Dim, ...]:
    """The shape of an operand: ints and symbolic dims (a Python scalar is 0-d)."""
    if isinstance(x, Tracer):
        return () if isinstance(x.info, PrimInfo) else tuple(x.shape)
    if isinstance(x, arith.Expr):
        return ()
    return tuple(np.shape(x))


def ndim_of(x: object, what: str = "the array") -> int:
    """The rank of an operand; ``TraceError`` when it is not known while tracing."""
    if isinstance(x, Tracer):
        try:
            return x.ndim
        except TraceError:
            raise TraceError(
                f"{what} needs a known rank; give it one with relax.match_cast"
            ) from None
    return len(shape_of(x))


def size_of(x: object) -> Dim:
    """The number of elements of an operand (a dim)."""
    size: Dim = 1
    for dim in shape_of(x):
        size = size * dim
    return size


def dtype_of(x: object) -> str:
    """The dtype of an operand (a Python scalar: its weak type's default dtype)."""
    if isinstance(x, Tracer):
        return x.dtype
    if isinstance(x, (bool, int, float)):
        return dtypes.weak_of(x).dtype
    if isinstance(x, arith.Expr):
        return "int64"
    return dtypes.canonical(np.asarray(x).dtype)


def promoted(*xs: object) -> str:
    """The jax result dtype of the operands (Python scalars weakly typed)."""
    operands = [
        dtypes.weak_of(x)
        if isinstance(x, (bool, int, float)) and not isinstance(x, Tracer)
        else dtype_of(x)
        for x in xs
    ]
    return dtypes.result_type(*operands)


def astype(x: object, dtype: str) -> object:
    """``x`` converted to ``dtype`` (unchanged when it has it; Python scalars become
    0-d arrays of ``dtype``)."""
    if isinstance(x, (bool, int, float)) and not isinstance(x, Tracer):
        return np.asarray(x, dtype=dtypes.to_numpy(dtype))
    if dtype_of(x) == dtype and not isinstance(x, arith.Expr):
        return x
    return emit("astype", (x,), AstypeAttrs(dtype))


def reshaped(x: object, shape: Sequence[Dim]) -> object:
    """``x`` reshaped to ``shape`` (unchanged when it has that shape)."""
    if shape_of(x) == tuple(shape) and not isinstance(x, (bool, int, float, arith.Expr)):
        return x
    return emit("reshape", (x,), ReshapeAttrs(tuple(shape)))


def static_index(value: object, what: str) -> int:
    """A Python int argument (numpy integers and 0-d integer arrays accepted)."""
    if isinstance(value, Tracer):
        raise TraceError(f"{what} must be a static int, got a traced value")
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        if isinstance(value, np.ndarray) and value.ndim == 0 and value.dtype.kind in "iu":
            return int(value)
        raise TypeError(f"{what} must be an int, got {value!r}")
    return int(value)
