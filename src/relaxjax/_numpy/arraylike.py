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
from relaxjax.ir import PrimInfo, TensorInfo
from relaxjax.ops.base import operand_type, to_inexact
from relaxjax.ops.elementwise import AstypeAttrs
from relaxjax.ops.manipulate import ReshapeAttrs
from relaxjax.trace import Tracer, current, emit, match_cast

Dim = arith.Dim

__all__ = [
    "array_operand",
    "asserted_shape",
    "astype",
    "converted",
    "dtype_of",
    "is_static",
    "is_weak",
    "joined_operands",
    "operand_kind",
    "ndim_of",
    "promoted",
    "promoted_weak",
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


def operand_kind(x: object) -> dtypes.Operand:
    """``x`` as a promotion operand: Python scalars, dims and weak tensors are weak kinds."""
    if isinstance(x, Tracer):
        return operand_type(x.info)
    if isinstance(x, (bool, int, float)):
        return dtypes.weak_of(x)
    if isinstance(x, arith.Expr):
        return dtypes.weak_of(0)
    return dtype_of(x)


def promoted_weak(*xs: object) -> tuple[str, bool]:
    """The jax result dtype of the operands and whether it is weakly typed."""
    return dtypes.result_type_weak(*(operand_kind(x) for x in xs))


def promoted(*xs: object) -> str:
    """The jax result dtype of the operands (Python scalars and weak tensors weakly typed)."""
    return promoted_weak(*xs)[0]


def is_weak(x: object) -> bool:
    """Whether ``x`` is weakly typed (a Python scalar, a dim or a weak tensor)."""
    return isinstance(operand_kind(x), dtypes.Weak)


def converted(*xs: object, inexact: bool = False) -> list:
    """jax's ``promote_dtypes`` (``promote_dtypes_inexact`` with ``inexact``): every operand
    in the promoted dtype, weakly typed when the promotion is (``x_i32`` with ``2.5`` gives
    two weak float64 values)."""
    operands = [array_operand(x) for x in xs]
    dtype, weak = promoted_weak(*operands)
    if inexact:
        dtype = to_inexact(dtype)
    return [_to(x, dtype, weak) for x in operands]


def joined_operands(operands: Sequence[object]) -> list:
    """Operands joined into one array (concatenated): traced Python scalars stay weak, so
    the join promotes them as jax does; outside a trace (where results are numpy arrays,
    which are never weak) they become arrays of the dtype the join promotes to."""
    operands = [array_operand(x) for x in operands]
    if current() is not None or not any(isinstance(x, (bool, int, float)) for x in operands):
        return operands
    dtype = promoted(*operands)
    return [astype(x, dtype) if isinstance(x, (bool, int, float)) else x for x in operands]


def _to(x: object, dtype: str, weak: bool) -> object:
    if not weak:
        return astype(x, dtype)
    if isinstance(x, (bool, int, float)):  # stays a Python scalar of the weak kind
        return float(x) if dtypes.is_floating(dtype) else int(x)
    if dtype_of(x) == dtype and is_weak(x):
        return x
    # a strong int or bool meeting a weak kind: adding its zero gives the weak result
    result = emit("add", (x, 0.0 if dtypes.is_floating(dtype) else 0))
    return result if dtype_of(result) == dtype else astype(result, dtype)


def astype(x: object, dtype: str) -> object:
    """``x`` converted to ``dtype``, strongly typed as jax's ``astype`` makes it (unchanged
    when it is a strong ``dtype`` already; Python scalars become 0-d arrays)."""
    if isinstance(x, (bool, int, float)) and not isinstance(x, Tracer):
        return np.asarray(x, dtype=dtypes.to_numpy(dtype))
    if dtype_of(x) == dtype and not is_weak(x):
        return x
    return emit("astype", (x,), AstypeAttrs(dtype))


def asserted_shape(x: object, shape: Sequence[Dim]) -> object:
    """``x`` asserted to have ``shape`` by a ``match_cast`` (checked at run time; its weak
    type kept), when its deduced dims are another spelling (an unsimplified ``min``/``max``
    or sum) of the same values."""
    if tuple(shape_of(x)) == tuple(shape) or current() is None:
        return x
    return match_cast(x, TensorInfo(tuple(shape), dtype_of(x), weak=is_weak(x)))


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
