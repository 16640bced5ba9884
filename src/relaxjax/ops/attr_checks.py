"""Validation of op attributes: the checks every ``Attrs`` dataclass runs in
``__post_init__``, with messages naming the attribute (``ReshapeAttrs.shape must ...``)."""

from __future__ import annotations

from relaxjax import arith, dtypes
from relaxjax.errors import ShapeError


def check_int(owner: str, name: str, value: object) -> None:
    """``TypeError`` unless ``value`` is an int (bools are not)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{owner}.{name} must be an int, got {value!r}")


def check_ints(owner: str, name: str, values: object) -> None:
    """``TypeError`` unless ``values`` is a tuple of ints."""
    if not isinstance(values, tuple):
        raise TypeError(f"{owner}.{name} must be a tuple of ints, got {values!r}")
    for value in values:
        check_int(owner, name, value)


def check_flag(owner: str, name: str, value: object) -> None:
    """``TypeError`` unless ``value`` is a bool."""
    if not isinstance(value, bool):
        raise TypeError(f"{owner}.{name} must be a bool, got {value!r}")


def check_dim(owner: str, name: str, value: object, allow_negative_one: bool = False) -> None:
    """Validate a dim attribute: an int (``>= 0``, or ``-1`` where allowed) or an Expr."""
    if isinstance(value, arith.Expr):
        return
    check_int(owner, name, value)
    if value < (-1 if allow_negative_one else 0):
        allowed = "-1 or a size >= 0" if allow_negative_one else "a size >= 0"
        raise ValueError(f"{owner}.{name} must hold {allowed}, got {value}")


def check_dims(owner: str, name: str, values: object, allow_negative_one: bool = False) -> None:
    """Validate a shape attribute: a tuple of dims accepted by :func:`check_dim`."""
    if not isinstance(values, tuple):
        raise TypeError(f"{owner}.{name} must be a tuple of dims, got {values!r}")
    for value in values:
        check_dim(owner, name, value, allow_negative_one)


def check_axes(owner: str, axis: object) -> None:
    """Validate a reduction's ``axis``: None or a tuple of distinct ints."""
    if axis is None:
        return
    if not isinstance(axis, tuple):
        raise TypeError(f"{owner}.axis must be a tuple of ints or None, got {axis!r}")
    for a in axis:
        check_int(owner, "axis", a)
    if len(set(axis)) != len(axis):
        raise ShapeError(f"{owner}: duplicate value in axis {axis}")


def optional_dtype(owner: str, value: object) -> str | None:
    """The canonical name of an optional dtype attribute (None stays None)."""
    if value is None:
        return None
    try:
        return dtypes.canonical(value)
    except TypeError as err:
        raise TypeError(f"{owner}.dtype: {err}") from None


__all__ = [
    "check_axes",
    "check_dim",
    "check_dims",
    "check_flag",
    "check_int",
    "check_ints",
    "optional_dtype",
]
