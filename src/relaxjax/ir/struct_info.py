"""Struct info: what is known statically about a value, as a lattice of partial knowledge.

From the most to the least precise, a tensor is described by
``TensorInfo(shape)`` ⊂ ``TensorInfo(ndim)`` ⊂ ``TensorInfo(dtype only)`` ⊂ ``ObjectInfo``.
Tuples, shape values and scalars (``PrimInfo``) complete the picture. All infos are
frozen, hashable and structurally compared; their ``repr`` is the text the printer uses:

>>> TensorInfo(("n", 4), "float32")
Tensor((n, 4), "float32")
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from relaxjax import arith, dtypes
from relaxjax.arith import Dim, Expr, Sym


class StructInfo:
    """Base of all struct infos."""

    __slots__ = ()


@dataclass(frozen=True, slots=True, repr=False)
class ObjectInfo(StructInfo):
    """Any value at all: the top of the lattice."""

    def __repr__(self) -> str:
        return "Object()"


def _as_dim(value: object, symbols: Mapping[str, Sym]) -> Dim:
    """Validate one dimension: a non-negative int, a symbolic expression or a string to parse."""
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(
            f"a dimension must be an int, a symbolic expression or a str, got {value!r}"
        )
    if isinstance(value, (int, np.integer)):
        if value < 0:
            raise ValueError(f"a dimension must be >= 0, got {int(value)}")
        return int(value)
    if isinstance(value, Expr):
        return value
    if isinstance(value, str):
        return arith.parse_dim(value, symbols)
    raise TypeError(
        "a dimension must be an int, a symbolic expression or a str, "
        f"got {value!r} of type {type(value).__name__}"
    )


def as_dims(values: Iterable[object]) -> tuple[Dim, ...]:
    """Validate dims; strings are parsed, sharing symbols (and bounds) with the other dims."""
    if isinstance(values, (str, bytes, int, Expr)) or not isinstance(values, Iterable):
        raise TypeError(f"a shape must be a tuple of dims, got {values!r}")
    values = tuple(values)
    symbols: dict[str, Sym] = {}
    for value in values:
        if isinstance(value, Expr):
            symbols.update((s.name, s) for s in arith.free_symbols(value))
    return tuple(_as_dim(v, symbols) for v in values)


def _check_ndim(ndim: object) -> int | None:
    if ndim is None:
        return None
    if isinstance(ndim, (bool, np.bool_)) or not isinstance(ndim, (int, np.integer)) or ndim < 0:
        raise ValueError(f"ndim must be a non-negative int or None, got {ndim!r}")
    return int(ndim)


def _shape_and_ndim(shape: object, ndim: object) -> tuple[tuple[Dim, ...] | None, int | None]:
    ndim = _check_ndim(ndim)
    if shape is None:
        return None, ndim
    dims = as_dims(shape)  # type: ignore[arg-type]
    if ndim is not None and ndim != len(dims):
        raise ValueError(
            f"ndim={ndim} does not match shape {format_dims(dims)} of rank {len(dims)}"
        )
    return dims, len(dims)


def format_dims(dims: Sequence[Dim]) -> str:
    """Dims as a Python tuple literal: ``(n, 4)``, ``(n,)``, ``()``."""
    if len(dims) == 1:
        return f"({dims[0]},)"
    return "(" + ", ".join(str(d) for d in dims) + ")"


@dataclass(frozen=True, slots=True, repr=False, init=False)
class TensorInfo(StructInfo):
    """A tensor: dtype always known, rank and dims possibly unknown. Public as ``relax.Tensor``.

    ``weak=True`` marks a weakly typed tensor, as jax's ``weak_type``: the result of an op
    whose promotion ends at a Python scalar's kind (``x_i32 + 2.0`` is a weak float64), which
    then promotes like that scalar (``(x_i32 + 2.0) * y_f32`` is float32). A weak bool is
    never made: it promotes as a bool does.

    >>> TensorInfo(("n", "n*2"), "float16").shape[1]
    n * 2
    >>> TensorInfo(ndim=2, dtype="float32")
    Tensor(ndim=2, dtype="float32")
    >>> TensorInfo((3,), "float64", weak=True)
    Tensor((3,), "float64", weak=True)
    """

    shape: tuple[Dim, ...] | None
    dtype: str
    ndim: int | None
    weak: bool

    def __init__(
        self,
        shape: Sequence[Dim | str] | None = None,
        dtype: object = "float32",
        ndim: int | None = None,
        weak: bool = False,
    ) -> None:
        dims, rank = _shape_and_ndim(shape, ndim)
        object.__setattr__(self, "shape", dims)
        object.__setattr__(self, "dtype", dtypes.canonical(dtype))
        object.__setattr__(self, "ndim", rank)
        object.__setattr__(self, "weak", bool(weak) and not dtypes.is_bool(self.dtype))

    @property
    def is_known_shape(self) -> bool:
        """True when every dim is known (as an int or a symbolic expression)."""
        return self.shape is not None

    @property
    def weak_operand(self) -> dtypes.Operand:
        """This tensor as a promotion operand: a ``dtypes.Weak`` kind when weak."""
        return dtypes.weak_operand(self.dtype, self.weak)

    def __repr__(self) -> str:
        weak = ", weak=True" if self.weak else ""
        if self.shape is not None:
            return f'Tensor({format_dims(self.shape)}, "{self.dtype}"{weak})'
        if self.ndim is not None:
            return f'Tensor(ndim={self.ndim}, dtype="{self.dtype}"{weak})'
        return f'Tensor(dtype="{self.dtype}"{weak})'


@dataclass(frozen=True, slots=True, repr=False, init=False)
class TupleInfo(StructInfo):
    """A tuple of values, each with its own info."""

    fields: tuple[StructInfo, ...]

    def __init__(self, fields: Iterable[StructInfo]) -> None:
        fields = tuple(fields)
        for field in fields:
            if not isinstance(field, StructInfo):
                raise TypeError(f"TupleInfo fields must be StructInfo, got {field!r}")
        object.__setattr__(self, "fields", fields)

    def __repr__(self) -> str:
        return "Tuple(" + ", ".join(repr(f) for f in self.fields) + ")"


@dataclass(frozen=True, slots=True, repr=False, init=False)
class ShapeInfo(StructInfo):
    """A shape value (a tuple of dims used as data, e.g. the argument of reshape)."""

    values: tuple[Dim, ...] | None
    ndim: int | None

    def __init__(self, values: Sequence[Dim | str] | None = None, ndim: int | None = None) -> None:
        dims, rank = _shape_and_ndim(values, ndim)
        object.__setattr__(self, "values", dims)
        object.__setattr__(self, "ndim", rank)

    def __repr__(self) -> str:
        if self.values is not None:
            return f"Shape({format_dims(self.values)})"
        if self.ndim is not None:
            return f"Shape(ndim={self.ndim})"
        return "Shape()"


@dataclass(frozen=True, slots=True, repr=False, init=False)
class PrimInfo(StructInfo):
    """A scalar of ``dtype``; for integer dtypes ``value`` may hold its (symbolic) value.

    ``weak=True`` marks a weakly typed scalar (a Python scalar or a symbolic dim used as a
    value): it promotes like a jax weak type, so ``x_f32 * 2.0`` stays float32.
    """

    dtype: str
    value: Dim | None
    weak: bool

    def __init__(self, dtype: object, value: Dim | str | None = None, weak: bool = False) -> None:
        name = dtypes.canonical(dtype)
        if value is not None:
            if not dtypes.is_integer(name):
                raise ValueError(
                    f"only integer scalars carry a value, got value={value} for {name}"
                )
            value = _as_int_value(value)
        object.__setattr__(self, "dtype", name)
        object.__setattr__(self, "value", value)
        object.__setattr__(self, "weak", bool(weak))

    @property
    def weak_operand(self) -> dtypes.Operand:
        """This scalar as a promotion operand: a ``dtypes.Weak`` kind when weak."""
        return dtypes.weak_operand(self.dtype, self.weak)

    def __repr__(self) -> str:
        parts = [f'"{self.dtype}"']
        if self.value is not None:
            parts.append(f"value={self.value}")
        if self.weak:
            parts.append("weak=True")
        return "Prim(" + ", ".join(parts) + ")"


def _as_int_value(value: object) -> Dim:
    """A scalar's value: any int (negative allowed), a symbolic expression or a str to parse."""
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"a scalar value must be an int or a symbolic expression, got {value!r}")
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, Expr):
        return value
    if isinstance(value, str):
        return arith.parse_dim(value)
    raise TypeError(f"a scalar value must be an int or a symbolic expression, got {value!r}")


# ---------------------------------------------------------------------------------------
# Lattice operations


def _all3(results: Iterable[bool | None]) -> bool | None:
    """Three-valued conjunction: False if any is False, True if all are True, else None."""
    unknown = False
    for result in results:
        if result is False:
            return False
        if result is None:
            unknown = True
    return None if unknown else True


def _dims_base_of(base: Sequence[Dim] | None, derived: Sequence[Dim] | None) -> bool | None:
    if base is None:
        return True
    if derived is None:
        return None
    if len(base) != len(derived):
        return False
    return _all3(arith.compare(a, "==", b) for a, b in zip(base, derived))


def _ndim_base_of(base: int | None, derived: int | None) -> bool | None:
    if base is None:
        return True
    if derived is None:
        return None
    return base == derived


def is_base_of(base: StructInfo, derived: StructInfo) -> bool | None:
    """Whether every value described by ``derived`` is also described by ``base``.

    Three-valued: ``True`` (proven), ``False`` (no value of any symbol makes it so) or
    ``None`` (it depends on run-time values: ``derived`` is coarser, or dims are unrelated).
    """
    if isinstance(base, ObjectInfo):
        return True
    if isinstance(derived, ObjectInfo):
        return None
    if type(base) is not type(derived):
        return False
    if isinstance(base, TensorInfo):
        assert isinstance(derived, TensorInfo)
        if base.dtype != derived.dtype:
            return False
        return _all3(
            (_ndim_base_of(base.ndim, derived.ndim), _dims_base_of(base.shape, derived.shape))
        )
    if isinstance(base, ShapeInfo):
        assert isinstance(derived, ShapeInfo)
        return _all3(
            (_ndim_base_of(base.ndim, derived.ndim), _dims_base_of(base.values, derived.values))
        )
    if isinstance(base, PrimInfo):
        assert isinstance(derived, PrimInfo)
        if base.dtype != derived.dtype:
            return False
        if base.value is None:
            return True
        if derived.value is None:
            return None
        return arith.compare(base.value, "==", derived.value)
    if isinstance(base, TupleInfo):
        assert isinstance(derived, TupleInfo)
        if len(base.fields) != len(derived.fields):
            return False
        return _all3(is_base_of(b, d) for b, d in zip(base.fields, derived.fields))
    raise TypeError(f"unknown struct info {base!r}")


ERASE_LEVELS = ("shape", "ndim", "object")


def erase(info: StructInfo, level: str = "shape") -> StructInfo:
    """A coarser info: ``"shape"`` forgets dims (keeps rank), ``"ndim"`` forgets rank too,
    ``"object"`` forgets everything. Tuples are erased field by field; scalars lose their value.
    """
    if level not in ERASE_LEVELS:
        raise ValueError(f"erase level must be one of {ERASE_LEVELS}, got {level!r}")
    if level == "object" or isinstance(info, ObjectInfo):
        return ObjectInfo()
    if isinstance(info, TensorInfo):
        ndim = info.ndim if level == "shape" else None
        return TensorInfo(dtype=info.dtype, ndim=ndim, weak=info.weak)
    if isinstance(info, ShapeInfo):
        return ShapeInfo(ndim=info.ndim if level == "shape" else None)
    if isinstance(info, PrimInfo):
        return PrimInfo(info.dtype, weak=info.weak)
    if isinstance(info, TupleInfo):
        return TupleInfo(erase(f, level) for f in info.fields)
    raise TypeError(f"unknown struct info {info!r}")


def _lca_dims(
    a: tuple[Dim, ...] | None, b: tuple[Dim, ...] | None
) -> tuple[tuple[Dim, ...] | None, int | None]:
    if a is None or b is None or len(a) != len(b):
        return None, None
    if all(arith.compare(x, "==", y) is True for x, y in zip(a, b)):
        return a, len(a)
    return None, len(a)


def lca(a: StructInfo, b: StructInfo) -> StructInfo:
    """The most precise info that is a base of both ``a`` and ``b`` (least common ancestor)."""
    if type(a) is not type(b) or isinstance(a, ObjectInfo):
        return ObjectInfo()
    if isinstance(a, TensorInfo):
        assert isinstance(b, TensorInfo)
        if a.dtype != b.dtype:
            return ObjectInfo()
        shape, ndim = _lca_dims(a.shape, b.shape)
        if shape is None and a.ndim == b.ndim:
            ndim = a.ndim
        return TensorInfo(shape, a.dtype, ndim, a.weak and b.weak)
    if isinstance(a, ShapeInfo):
        assert isinstance(b, ShapeInfo)
        values, ndim = _lca_dims(a.values, b.values)
        if values is None and a.ndim == b.ndim:
            ndim = a.ndim
        return ShapeInfo(values, ndim)
    if isinstance(a, PrimInfo):
        assert isinstance(b, PrimInfo)
        if a.dtype != b.dtype:
            return ObjectInfo()
        same = a.value is not None and b.value is not None
        same = same and arith.compare(a.value, "==", b.value) is True
        return PrimInfo(a.dtype, a.value if same else None, a.weak and b.weak)
    if isinstance(a, TupleInfo):
        assert isinstance(b, TupleInfo)
        if len(a.fields) != len(b.fields):
            return ObjectInfo()
        return TupleInfo(lca(x, y) for x, y in zip(a.fields, b.fields))
    raise TypeError(f"unknown struct info {a!r}")


def info_dims(info: StructInfo) -> tuple[Dim, ...]:
    """Every dim and scalar value mentioned in ``info``, in order."""
    if isinstance(info, TensorInfo):
        return info.shape or ()
    if isinstance(info, ShapeInfo):
        return info.values or ()
    if isinstance(info, PrimInfo):
        return () if info.value is None else (info.value,)
    if isinstance(info, TupleInfo):
        return tuple(d for field in info.fields for d in info_dims(field))
    return ()


def free_symbols(info: StructInfo) -> frozenset[Sym]:
    """The symbols mentioned anywhere in ``info``."""
    found: set[Sym] = set()
    for dim in info_dims(info):
        found |= arith.free_symbols(dim)
    return frozenset(found)


def defining_symbols(info: StructInfo) -> frozenset[Sym]:
    """The symbols ``info`` can bind from a value: those that appear alone as a dim."""
    return frozenset(d for d in info_dims(info) if isinstance(d, Sym))


def determined_symbols(info: StructInfo, known: Iterable[str] = ()) -> frozenset[Sym]:
    """The symbols a value of ``info`` determines, given the symbols named ``known``: those
    standing alone as a dim, and those its dims solve for once others are known
    (``n * 2 + 1``, ``n * m`` once ``m`` is; see :func:`arith.solve_order`)."""
    steps, _ = arith.solve_order(info_dims(info), frozenset(known))
    return frozenset(step.symbol for step in steps)


def map_dims(info: StructInfo, fn) -> StructInfo:
    """``info`` with every dim and scalar value replaced by ``fn(dim)``."""
    if isinstance(info, TensorInfo):
        shape = None if info.shape is None else tuple(fn(d) for d in info.shape)
        return TensorInfo(shape, info.dtype, info.ndim, info.weak)
    if isinstance(info, ShapeInfo):
        values = None if info.values is None else tuple(fn(d) for d in info.values)
        return ShapeInfo(values, info.ndim)
    if isinstance(info, PrimInfo):
        value = None if info.value is None else fn(info.value)
        return PrimInfo(info.dtype, value, info.weak)
    if isinstance(info, TupleInfo):
        return TupleInfo(map_dims(f, fn) for f in info.fields)
    return info


def subs_info(info: StructInfo, mapping: Mapping[str | Sym, Dim]) -> StructInfo:
    """``info`` with symbols replaced per ``mapping`` (keys are names or ``Sym``s)."""
    return map_dims(info, lambda d: arith.subs(d, mapping))


def restrict_symbols(info: StructInfo, defined: Iterable[Sym]) -> StructInfo:
    """``info`` with every part that mentions a symbol outside ``defined`` erased.

    A tensor whose dims mention an unknown symbol keeps its rank; a scalar keeps its dtype.
    Used where a value leaves the scope that defined its symbols (a function's return).
    """
    names = {s.name for s in defined}

    def known(dim: Dim) -> bool:
        return all(s.name in names for s in arith.free_symbols(dim))

    if isinstance(info, TensorInfo):
        if info.shape is not None and not all(known(d) for d in info.shape):
            return erase(info, "shape")
        return info
    if isinstance(info, ShapeInfo):
        if info.values is not None and not all(known(d) for d in info.values):
            return erase(info, "shape")
        return info
    if isinstance(info, PrimInfo):
        return info if info.value is None or known(info.value) else erase(info)
    if isinstance(info, TupleInfo):
        return TupleInfo(restrict_symbols(f, defined) for f in info.fields)
    return info


def is_dim_value(info: StructInfo) -> bool:
    """A scalar that *is* a dim: ``PrimInfo("int64", value=m)``, the parameter a symbolic
    scalar (``m: relax.sym("m")``) becomes. A traced function sees the dim itself; the
    runtime takes any Python or numpy integer for it."""
    return isinstance(info, PrimInfo) and info.dtype == "int64" and info.value is not None
