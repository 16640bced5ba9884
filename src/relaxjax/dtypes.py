"""Element types: names, canonicalisation, numpy conversion, predicates and promotion.

Dtypes are plain strings from :data:`DTYPES` everywhere in relaxjax. Promotion follows
``jax.numpy`` with ``jax_enable_x64=True`` exactly, including weakly typed Python scalars:

>>> promote("int8", "uint8")
'int16'
>>> result_type("float32", Weak("float"))
'float32'
>>> result_type("int32", Weak("float"))
'float64'
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache

import ml_dtypes
import numpy as np

DTYPES: tuple[str, ...] = (
    "bool",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "float16",
    "bfloat16",
    "float32",
    "float64",
)

_FLOATING = frozenset({"float16", "bfloat16", "float32", "float64"})
_SIGNED_INTEGER = frozenset({"int8", "int16", "int32", "int64"})
_UNSIGNED_INTEGER = frozenset({"uint8"})

WEAK_KINDS: tuple[str, ...] = ("bool", "int", "float")


@dataclass(frozen=True, slots=True)
class Weak:
    """A weakly typed operand: a Python scalar (or a symbolic dim used as a value).

    It takes the dtype of the strongly typed operand it meets where jax does so,
    e.g. ``float32 + Weak("float") -> float32``; alone it becomes the default
    type of its kind (``int64``, ``float64`` or ``bool``).
    """

    kind: str

    def __post_init__(self) -> None:
        if self.kind not in WEAK_KINDS:
            raise ValueError(f"Weak kind must be one of {WEAK_KINDS}, got {self.kind!r}")

    @property
    def dtype(self) -> str:
        """The dtype a weak operand of this kind has on its own."""
        return _WEAK_DEFAULT[self.kind]


_WEAK_DEFAULT = {"bool": "bool", "int": "int64", "float": "float64"}


def weak_of(value: bool | int | float) -> Weak:
    """The weak kind of a Python scalar: ``weak_of(2.0) == Weak("float")``."""
    if isinstance(value, (bool, np.bool_)):
        return Weak("bool")
    if isinstance(value, (int, np.integer)):
        return Weak("int")
    if isinstance(value, (float, np.floating)):
        return Weak("float")
    raise TypeError(f"expected a Python bool, int or float scalar, got {type(value).__name__}")


def weak_operand(dtype: str, weak: bool) -> Operand:
    """The promotion operand of a value of ``dtype``: its dtype when strongly typed, the
    :class:`Weak` kind of its dtype when weakly typed (a weak array of any float dtype
    promotes as a Python float, as jax's ``_jax_type`` says; ``Weak("bool")`` promotes as
    ``bool``)."""
    if not weak:
        return dtype
    if is_bool(dtype):
        return Weak("bool")
    return Weak("float" if is_floating(dtype) else "int")


def canonical(x: object) -> str:
    """The relaxjax name of a dtype-like object.

    Accepts our names, numpy dtypes and scalar types, ``ml_dtypes.bfloat16``,
    jax dtypes, torch dtypes (``torch.float32``) and the Python types
    ``bool``/``int``/``float`` (``int64``/``float64`` as under jax x64). Raises
    ``TypeError`` naming what was given otherwise.
    """
    if isinstance(x, str) and x in DTYPES:
        return x
    if x is None or isinstance(x, (Weak, bool, int, float)):
        raise TypeError(f"expected a dtype (one of {', '.join(DTYPES)}), got {x!r}")
    if x is bool:
        return "bool"
    if x is int:
        return "int64"
    if x is float:
        return "float64"
    try:
        name = np.dtype(x).name  # type: ignore[call-overload]
    except TypeError:
        name = _foreign_name(x)
    if name not in DTYPES:
        shown = f"{x!r}" if name is None else f"{x!r} ({name})"
        raise TypeError(f"unsupported dtype {shown}; supported: {', '.join(DTYPES)}")
    return name


def _foreign_name(x: object) -> str | None:
    """The name of another library's dtype object that numpy does not know: torch's
    (``torch.float32`` prints as ``"torch.float32"``), recognised without importing it."""
    module = type(x).__module__.split(".")[0]
    text = str(x)
    if module == "torch" and text.startswith("torch."):
        return text[len("torch.") :]
    return None


def to_numpy(name: str) -> np.dtype:
    """The numpy dtype of a dtype name (``bfloat16`` via ``ml_dtypes``)."""
    name = canonical(name)
    if name == "bfloat16":
        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(name)


def convert(values: object, name: str) -> np.ndarray:
    """``values`` as an array of dtype ``name`` by jax's conversion rules (XLA's
    ``convert``): floats to integers truncate toward zero and saturate at the integer
    range, NaN giving 0 (numpy wraps instead); to bool tests ``!= 0``; to bfloat16
    rounds from float32."""
    array = np.asarray(values)
    if is_bool(name):
        return array != 0
    target = to_numpy(name)
    if is_integer(name) and (np.issubdtype(array.dtype, np.floating) or array.dtype == _BF16):
        return _saturating_int(array, target)
    if target == _BF16 and array.dtype not in (_BF16, np.float32):
        array = array.astype(np.float32)
    return array.astype(target)


_BF16 = np.dtype(ml_dtypes.bfloat16)


def _saturating_int(array: np.ndarray, target: np.dtype) -> np.ndarray:
    info = np.iinfo(target)
    wide = np.trunc(array.astype(np.float64))
    wide = np.where(np.isnan(wide), 0.0, wide)
    too_high = wide >= float(info.max)  # int64's max is not a float64: set it apart
    inside = np.where(too_high, 0.0, np.clip(wide, float(info.min), float(info.max)))
    return np.where(too_high, target.type(info.max), inside.astype(target))


def is_floating(name: str) -> bool:
    """True for float16, bfloat16, float32 and float64."""
    return canonical(name) in _FLOATING


def is_integer(name: str) -> bool:
    """True for signed and unsigned integer types (not bool)."""
    name = canonical(name)
    return name in _SIGNED_INTEGER or name in _UNSIGNED_INTEGER


def is_signed(name: str) -> bool:
    """True for signed integers and floats (types that can hold negative values)."""
    name = canonical(name)
    return name in _SIGNED_INTEGER or name in _FLOATING


def is_unsigned(name: str) -> bool:
    """True for unsigned integer types."""
    return canonical(name) in _UNSIGNED_INTEGER


def is_bool(name: str) -> bool:
    """True for bool."""
    return canonical(name) == "bool"


def itemsize(name: str) -> int:
    """Bytes per element."""
    return to_numpy(name).itemsize


def default_int() -> str:
    """The dtype of a Python int on its own (``jnp.asarray(1)`` under x64)."""
    return "int64"


def default_float() -> str:
    """The dtype of a Python float on its own (``jnp.asarray(1.0)`` under x64)."""
    return "float64"


# jax's type promotion lattice (jax/_src/dtypes.py) restricted to our dtypes: each node
# lists the nodes directly above it. "i*" and "f*" are weakly typed ints and floats.
_LATTICE_UP: dict[str, tuple[str, ...]] = {
    "bool": ("i*",),
    "i*": ("uint8", "int8"),
    "uint8": ("int16",),
    "int8": ("int16",),
    "int16": ("int32",),
    "int32": ("int64",),
    "int64": ("f*",),
    "f*": ("float16", "bfloat16"),
    "float16": ("float32",),
    "bfloat16": ("float32",),
    "float32": ("float64",),
    "float64": (),
}
_WEAK_NODE = {"bool": "bool", "int": "i*", "float": "f*"}


@cache
def _upper_bounds(node: str) -> frozenset[str]:
    """Every node at or above ``node`` in the lattice."""
    above = {node}
    for parent in _LATTICE_UP[node]:
        above |= _upper_bounds(parent)
    return frozenset(above)


@cache
def _join(a: str, b: str) -> str:
    """The least upper bound of two lattice nodes."""
    common = _upper_bounds(a) & _upper_bounds(b)
    least = [n for n in common if common <= _upper_bounds(n)]
    assert len(least) == 1, (a, b, least)  # the lattice is a lattice
    return least[0]


Operand = str | Weak


def _node(operand: Operand) -> str:
    if isinstance(operand, Weak):
        return _WEAK_NODE[operand.kind]
    return canonical(operand)


def result_type_weak(*operands: Operand) -> tuple[str, bool]:
    """The promoted dtype of ``operands`` and whether the result is weakly typed.

    As jax's ``lattice_result_type``: the result is weak exactly when the least upper
    bound of the operands in the lattice is a weak kind (``i*`` or ``f*``), whether or not
    every operand is weak: ``result_type_weak(Weak("int"), Weak("float")) ==
    ("float64", True)``, and an int array meeting a Python float gives a weak float64,
    ``result_type_weak("int32", Weak("float")) == ("float64", True)``, which then does
    not promote float32 (``result_type_weak(Weak("float"), "float32") == ("float32",
    False)``). A bool result is never weak.
    """
    if not operands:
        raise TypeError("result_type needs at least one operand")
    node = _node(operands[0])
    for operand in operands[1:]:
        node = _join(node, _node(operand))
    if node == "i*":
        return default_int(), True
    if node == "f*":
        return default_float(), True
    return node, False


def result_type(*operands: Operand) -> str:
    """The dtype ``jax.numpy`` gives to an elementwise op over ``operands`` (x64 enabled).

    Each operand is a dtype name (strongly typed) or a :class:`Weak` Python scalar.
    """
    return result_type_weak(*operands)[0]


def promote(a: str, b: str) -> str:
    """The promoted dtype of two strongly typed dtypes, as ``jnp.promote_types``."""
    return result_type(canonical(a), canonical(b))


def promote_all(names: Iterable[str]) -> str:
    """The promoted dtype of one or more strongly typed dtypes."""
    return result_type(*(canonical(n) for n in names))
