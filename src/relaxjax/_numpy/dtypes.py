"""Constants, dtype objects and dtype functions of ``relaxjax.numpy``, and the array
predicates ``ndim shape size isscalar iterable`` (with ``ndarray`` and ``copy``).

The scalar types (``rnp.float32``, ``rnp.int8``, ``rnp.bool_``, ...) behave as jax's:
classes usable wherever a dtype is expected (``x.astype(rnp.bfloat16)``,
``np.dtype(rnp.float32)``), equal to numpy's types and to their names (``x.dtype ==
rnp.float32`` holds for a traced float32 tensor, whose ``dtype`` is the name), and
callable: ``rnp.float32(x)`` is ``asarray(x, dtype=float32)``. jax's other scalar types
(``uint16``/``uint32``/``uint64``, the complex types, the float8/float6/float4 and
2- and 4-bit integer types) exist too, so code naming them still imports and
``issubdtype``/``finfo``/``iinfo`` answer for them, but relaxjax does not compute in
them: calling one or using it as the dtype of an op raises ``TypeError`` naming the
supported dtypes. The abstract classes (``generic``, ``number``, ``floating``, ...) are
numpy's, as in jax. Promotion (``promote_types``, ``result_type``) follows jax with
64-bit types enabled.
"""

from __future__ import annotations

import builtins
import math
from collections.abc import Sequence

import ml_dtypes
import numpy as np

from relaxjax import arith, dtypes
from relaxjax._numpy.core import asarray
from relaxjax.trace import Tracer

__all__ = [
    "ComplexWarning",
    "bfloat16",
    "bool",
    "bool_",
    "can_cast",
    "cdouble",
    "character",
    "complex128",
    "complex64",
    "complex_",
    "complexfloating",
    "copy",
    "csingle",
    "double",
    "dtype",
    "e",
    "euler_gamma",
    "finfo",
    "flexible",
    "float16",
    "float32",
    "float4_e2m1fn",
    "float64",
    "float6_e2m3fn",
    "float6_e3m2fn",
    "float8_e3m4",
    "float8_e4m3",
    "float8_e4m3b11fnuz",
    "float8_e4m3fn",
    "float8_e4m3fnuz",
    "float8_e5m2",
    "float8_e5m2fnuz",
    "float8_e8m0fnu",
    "float_",
    "floating",
    "generic",
    "iinfo",
    "inexact",
    "inf",
    "int1",
    "int16",
    "int2",
    "int32",
    "int4",
    "int64",
    "int8",
    "int_",
    "integer",
    "isdtype",
    "isscalar",
    "issubdtype",
    "iterable",
    "nan",
    "ndarray",
    "ndim",
    "newaxis",
    "number",
    "object_",
    "pi",
    "promote_types",
    "result_type",
    "shape",
    "signedinteger",
    "single",
    "size",
    "uint",
    "uint1",
    "uint16",
    "uint2",
    "uint32",
    "uint4",
    "uint64",
    "uint8",
    "unsignedinteger",
]

# --------------------------------------------------------------------------- constants

e = math.e
pi = math.pi
inf = math.inf
nan = math.nan
euler_gamma = 0.5772156649015329
newaxis = None

ComplexWarning = np.exceptions.ComplexWarning

# numpy's abstract scalar classes, as jax.numpy exposes them.
generic = np.generic
number = np.number
integer = np.integer
signedinteger = np.signedinteger
unsignedinteger = np.unsignedinteger
inexact = np.inexact
floating = np.floating
complexfloating = np.complexfloating
flexible = np.flexible
character = np.character
object_ = np.object_
dtype = np.dtype

# --------------------------------------------------------------------------- scalar types


class _ScalarMeta(type):
    """The metaclass of the scalar types: equal to numpy's type and to the dtype's name,
    hashed as numpy's type, called to make an array."""

    dtype: np.dtype

    def __hash__(cls) -> int:
        return hash(cls.dtype.type)

    def __eq__(cls, other: object) -> builtins.bool:
        if other is cls:
            return True
        if isinstance(other, str):
            return other == cls.dtype.name
        return builtins.bool(cls.dtype.type == other)

    def __ne__(cls, other: object) -> builtins.bool:
        return not cls == other

    def __call__(cls, x: object) -> object:
        return asarray(x, dtype=cls.dtype)

    def __instancecheck__(cls, instance: object) -> builtins.bool:
        return isinstance(instance, cls.dtype.type)

    def __repr__(cls) -> str:
        return f"<class 'relaxjax.numpy.{cls.__name__}'>"


def _scalar_type(numpy_type: type) -> _ScalarMeta:
    kind = np.dtype(numpy_type)
    name = kind.name
    supported = name in dtypes.DTYPES
    doc = (
        f"The {name} scalar type: a dtype, and ``{name}(x)`` makes a {name} array."
        if supported
        else f"jax's {name} scalar type; relaxjax does not compute in {name} (TypeError)."
    )
    return _ScalarMeta(name, (), {"dtype": kind, "__doc__": doc, "__module__": "relaxjax.numpy"})


bool_ = _scalar_type(np.bool_)
int8, int16 = _scalar_type(np.int8), _scalar_type(np.int16)
int32, int64 = _scalar_type(np.int32), _scalar_type(np.int64)
uint8 = _scalar_type(np.uint8)
float16, float32, float64 = (_scalar_type(t) for t in (np.float16, np.float32, np.float64))
bfloat16 = _scalar_type(ml_dtypes.bfloat16)
int_, float_, single, double = int64, float64, float32, float64

# jax's scalar types that relaxjax does not compute in.
uint16, uint32, uint64 = (_scalar_type(t) for t in (np.uint16, np.uint32, np.uint64))
uint = uint64
complex64, complex128 = _scalar_type(np.complex64), _scalar_type(np.complex128)
csingle, cdouble, complex_ = complex64, complex128, complex128
int1, int2, int4 = (_scalar_type(getattr(ml_dtypes, n)) for n in ("int1", "int2", "int4"))
uint1, uint2, uint4 = (_scalar_type(getattr(ml_dtypes, n)) for n in ("uint1", "uint2", "uint4"))
float4_e2m1fn = _scalar_type(ml_dtypes.float4_e2m1fn)
float6_e2m3fn = _scalar_type(ml_dtypes.float6_e2m3fn)
float6_e3m2fn = _scalar_type(ml_dtypes.float6_e3m2fn)
float8_e3m4 = _scalar_type(ml_dtypes.float8_e3m4)
float8_e4m3 = _scalar_type(ml_dtypes.float8_e4m3)
float8_e4m3b11fnuz = _scalar_type(ml_dtypes.float8_e4m3b11fnuz)
float8_e4m3fn = _scalar_type(ml_dtypes.float8_e4m3fn)
float8_e4m3fnuz = _scalar_type(ml_dtypes.float8_e4m3fnuz)
float8_e5m2 = _scalar_type(ml_dtypes.float8_e5m2)
float8_e5m2fnuz = _scalar_type(ml_dtypes.float8_e5m2fnuz)
float8_e8m0fnu = _scalar_type(ml_dtypes.float8_e8m0fnu)

# ml_dtypes' types are not numpy subclasses of floating/integer; jax classifies them.
_CUSTOM_FLOATS = frozenset(
    t.dtype.type
    for t in (bfloat16, float4_e2m1fn, float6_e2m3fn, float6_e3m2fn, float8_e3m4)
    + (float8_e4m3, float8_e4m3b11fnuz, float8_e4m3fn, float8_e4m3fnuz, float8_e5m2)
    + (float8_e5m2fnuz, float8_e8m0fnu)
)
_CUSTOM_SIGNED = frozenset(t.dtype.type for t in (int1, int2, int4))
_CUSTOM_UNSIGNED = frozenset(t.dtype.type for t in (uint1, uint2, uint4))


class _ArrayMeta(type):
    def __instancecheck__(cls, instance: object) -> builtins.bool:
        return isinstance(instance, (Tracer, np.ndarray))


class ndarray(metaclass=_ArrayMeta):  # noqa: N801 - jax.numpy's name
    """The array type, for ``isinstance`` checks (``jnp.ndarray``): traced tensors and
    numpy arrays (relaxjax's concrete arrays: eager results and jitted outputs) are
    instances."""


# --------------------------------------------------------------------------- dtype functions


def _numpy_dtype(x: object) -> np.dtype:
    """The numpy dtype of a dtype-like (our scalar types, names, numpy types and dtypes,
    Python types) or of an array-like (a traced tensor, an array)."""
    if isinstance(x, Tracer):
        return dtypes.to_numpy(x.dtype)
    if isinstance(x, str) and x in dtypes.DTYPES:
        return dtypes.to_numpy(x)
    if x is builtins.int:
        return np.dtype(np.int64)
    if x is builtins.float:
        return np.dtype(np.float64)
    return np.dtype(x)


def finfo(dtype: object) -> ml_dtypes.finfo:
    """Machine limits of a float dtype (``jnp.finfo``): ``eps``, ``max``, ``tiny``, ...;
    also for bfloat16, the float8 types and a traced tensor's dtype."""
    return ml_dtypes.finfo(_numpy_dtype(dtype))


def iinfo(int_type: object) -> ml_dtypes.iinfo:
    """Machine limits of an integer dtype (``jnp.iinfo``): ``min``, ``max``, ``bits``."""
    return ml_dtypes.iinfo(_numpy_dtype(int_type))


def _scalar_class(x: object) -> type:
    if isinstance(x, type) and issubclass(x, np.generic):
        return x
    return _numpy_dtype(x).type


def issubdtype(arg1: object, arg2: object) -> builtins.bool:
    """Whether ``arg1`` is ``arg2`` or below it in numpy's type hierarchy
    (``jnp.issubdtype``); bfloat16 and the float8 types count as floating, the 2- and
    4-bit integers as integers, as in jax."""
    a, b = _scalar_class(arg1), _scalar_class(arg2)
    if a in _CUSTOM_FLOATS:
        return b in {a, np.floating, np.inexact, np.number, np.generic}
    if a in _CUSTOM_SIGNED:
        return b in {a, np.signedinteger, np.integer, np.number, np.generic}
    if a in _CUSTOM_UNSIGNED:
        return b in {a, np.unsignedinteger, np.integer, np.number, np.generic}
    return builtins.bool(np.issubdtype(a, b))


_KINDS = {
    "bool": (np.bool_,),
    "signed integer": (np.signedinteger,),
    "unsigned integer": (np.unsignedinteger,),
    "integral": (np.integer,),
    "real floating": (np.floating,),
    "complex floating": (np.complexfloating,),
    "numeric": (np.integer, np.floating, np.complexfloating),
}


def isdtype(dtype: object, kind: object) -> builtins.bool:
    """Whether ``dtype`` is of ``kind`` (``jnp.isdtype``, the array API's): a kind name
    (``"bool"``, ``"signed integer"``, ``"unsigned integer"``, ``"integral"``, ``"real
    floating"``, ``"complex floating"``, ``"numeric"``), a dtype, or a tuple of those."""
    the_dtype = _numpy_dtype(dtype)
    for option in kind if isinstance(kind, tuple) else (kind,):
        if isinstance(option, str) and option in _KINDS:
            if builtins.any(issubdtype(the_dtype, k) for k in _KINDS[option]):
                return True
            continue
        try:
            wanted = _numpy_dtype(option)
        except TypeError:
            if isinstance(option, str):
                raise ValueError(
                    f"Unrecognized kind={option!r} expected one of {list(_KINDS)}, or a "
                    "compatible input for jnp.dtype()"
                ) from None
            raise TypeError(
                f"Expected kind to be a dtype, string, or tuple; got kind={option!r}"
            ) from None
        if the_dtype == wanted:
            return True
    return False


def can_cast(from_: object, to: object, casting: str = "safe") -> builtins.bool:
    """Whether a cast is allowed under ``casting`` (``jnp.can_cast``, numpy's rule)."""
    return builtins.bool(np.can_cast(_numpy_dtype(from_), _numpy_dtype(to), casting))


def _relax_dtype(x: object) -> str:
    """Our name for a dtype-like, or ``TypeError`` naming the supported dtypes."""
    return dtypes.canonical(_numpy_dtype(x))


def promote_types(a: object, b: object) -> np.dtype:
    """The dtype both ``a`` and ``b`` promote to (``jnp.promote_types``, jax's lattice):
    ``promote_types(int8, uint8) == int16``, ``promote_types(float16, bfloat16) ==
    float32``, ``promote_types(int64, float16) == float16``."""
    return dtypes.to_numpy(dtypes.promote(_relax_dtype(a), _relax_dtype(b)))


def _operand(x: object) -> dtypes.Operand:
    if isinstance(x, Tracer):
        return x.dtype
    if isinstance(x, (builtins.bool, builtins.int, builtins.float)) and not isinstance(
        x, np.generic
    ):
        return dtypes.weak_of(x)
    if isinstance(x, arith.Expr):
        return dtypes.Weak("int")
    if isinstance(x, (np.ndarray, np.generic)):
        return dtypes.canonical(x.dtype)
    return _relax_dtype(x)


def result_type(*args: object) -> np.dtype:
    """The dtype of an operation on ``args`` (``jnp.result_type``): arrays, traced
    tensors, dtypes and Python scalars (weakly typed), with 64-bit types:
    ``result_type(float32, 2.0) == float32``, ``result_type(int32, 2.0) == float64``."""
    if not args:
        raise ValueError("at least one array or dtype is required")
    return dtypes.to_numpy(dtypes.result_type(*(_operand(a) for a in args)))


# --------------------------------------------------------------------------- array predicates


def ndim(a: object) -> builtins.int:
    """The rank of ``a`` (``jnp.ndim``)."""
    return a.ndim if hasattr(a, "ndim") else np.ndim(a)


def shape(a: object) -> tuple:
    """The shape of ``a`` (``jnp.shape``); dims of a traced tensor may be symbolic."""
    return tuple(a.shape) if hasattr(a, "shape") else np.shape(a)


def size(a: object, axis: builtins.int | Sequence[builtins.int] | None = None) -> arith.Dim:
    """The number of elements of ``a``, or of its ``axis`` (``jnp.size``); a dim for a
    traced tensor of symbolic shape."""
    dims = shape(a)
    if axis is None:
        return math.prod(dims, start=1)
    axes = (axis,) if isinstance(axis, builtins.int) else tuple(axis)
    count: arith.Dim = 1
    for ax in axes:
        if not -len(dims) <= ax < len(dims):
            raise ValueError(f"size: axis {ax} is out of bounds for an array of rank {len(dims)}")
        count = count * dims[ax]
    return count


def isscalar(element: object) -> builtins.bool:
    """Whether ``element`` is a scalar (``jnp.isscalar``): a Python or numpy scalar, or a
    0-d array or traced tensor."""
    if np.isscalar(element):
        return True
    if isinstance(element, (np.ndarray, Tracer)):
        return element.ndim == 0
    return False


iterable = np.iterable


def copy(a: object, order: str | None = None) -> object:
    """A copy of ``a`` (``jnp.copy``); values are immutable, so a traced tensor is its
    own copy."""
    del order
    if isinstance(a, Tracer):
        return a
    return asarray(np.array(a, copy=True))


bool = bool_  # noqa: A001 - jax.numpy's name (defined last: this module uses builtins.bool)
