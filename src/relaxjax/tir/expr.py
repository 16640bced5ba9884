"""TIR value expressions: frozen, slotted dataclasses with a ``dtype``.

Integer index math is :mod:`relaxjax.arith`: a loop variable is an ``arith.Sym`` and
an index is a ``Dim``. Where an index is used as a *value* it is wrapped as
:class:`IndexExpr` (always ``int64``). Arithmetic between index values folds into
arith (``IndexExpr(i) + 1 == IndexExpr(i + 1)``), so index math never hides inside
:class:`BinOp`. Python operators build nodes; ``==`` is structural equality, so
equality *comparisons* are built with :func:`eq` / :func:`ne`.

>>> from relaxjax import arith
>>> from relaxjax.tir.buffer import Buffer
>>> i = IndexExpr(arith.sym("i"))
>>> A = Buffer("A", (8,), "float32")
>>> A[i] * 2.0 + A[i + 1]
A[i] * float32(2.0) + A[i + 1]

Semantics (shared by every backend; the interpreter is the executable spec):
integer ``+ - *`` wrap (two's complement); ``//`` and ``%`` follow Python (floor) for
ints and numpy for floats; integer division by zero is undefined; ``min``/``max``
propagate NaN; float to int casts truncate toward zero (out of range: undefined);
casts to bfloat16 round to nearest even from float32.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass

import ml_dtypes
import numpy as np

from relaxjax import arith, dtypes
from relaxjax.arith import Dim
from relaxjax.tir.buffer import Buffer, as_dim, check_name
from relaxjax.tir.intrinsics import (
    INTRINSICS,
    LAZY_SELECT,
    LDMATRIX,
    MMA,
    MMA_DTYPES,
    SHUFFLES,
    SYNCTHREADS,
)

INDEX_DTYPE = "int64"

ARITH_OPS: tuple[str, ...] = ("+", "-", "*", "/", "//", "%", "min", "max")
COMPARE_OPS: tuple[str, ...] = ("==", "!=", "<", "<=", ">", ">=")
LOGIC_OPS: tuple[str, ...] = ("and", "or")
BINARY_OPS: tuple[str, ...] = ARITH_OPS + COMPARE_OPS + LOGIC_OPS
UNARY_OPS: tuple[str, ...] = ("-", "not")

# Binary ops that fold into arith when both operands are index values.
_INDEX_FOLDS = {
    "+": lambda a, b: a + b,
    "-": lambda a, b: a - b,
    "*": lambda a, b: a * b,
    "//": lambda a, b: a // b,
    "%": lambda a, b: a % b,
    "min": lambda a, b: arith.min_(a, b),
    "max": lambda a, b: arith.max_(a, b),
}


class PrimExpr:
    """Base of TIR value expressions. Subclasses are frozen dataclasses with a ``dtype``."""

    __slots__ = ()

    # Every subclass has a ``dtype: str`` (a field or a property). It is not declared
    # here: a class attribute would become a dataclass default of the subclasses.

    def __add__(self, other: object) -> PrimExpr:
        return binop("+", self, other)

    def __radd__(self, other: object) -> PrimExpr:
        return binop("+", other, self)

    def __sub__(self, other: object) -> PrimExpr:
        return binop("-", self, other)

    def __rsub__(self, other: object) -> PrimExpr:
        return binop("-", other, self)

    def __mul__(self, other: object) -> PrimExpr:
        return binop("*", self, other)

    def __rmul__(self, other: object) -> PrimExpr:
        return binop("*", other, self)

    def __truediv__(self, other: object) -> PrimExpr:
        return binop("/", self, other)

    def __rtruediv__(self, other: object) -> PrimExpr:
        return binop("/", other, self)

    def __floordiv__(self, other: object) -> PrimExpr:
        return binop("//", self, other)

    def __rfloordiv__(self, other: object) -> PrimExpr:
        return binop("//", other, self)

    def __mod__(self, other: object) -> PrimExpr:
        return binop("%", self, other)

    def __rmod__(self, other: object) -> PrimExpr:
        return binop("%", other, self)

    def __neg__(self) -> PrimExpr:
        return unary("-", self)

    def __lt__(self, other: object) -> PrimExpr:
        return binop("<", self, other)

    def __le__(self, other: object) -> PrimExpr:
        return binop("<=", self, other)

    def __gt__(self, other: object) -> PrimExpr:
        return binop(">", self, other)

    def __ge__(self, other: object) -> PrimExpr:
        return binop(">=", self, other)

    def __and__(self, other: object) -> PrimExpr:
        return binop("and", self, other)

    def __rand__(self, other: object) -> PrimExpr:
        return binop("and", other, self)

    def __or__(self, other: object) -> PrimExpr:
        return binop("or", self, other)

    def __ror__(self, other: object) -> PrimExpr:
        return binop("or", other, self)

    def __invert__(self) -> PrimExpr:
        return unary("not", self)

    def __bool__(self) -> bool:
        raise TypeError(
            f"the TIR expression {self!r} has no Python truth value; "
            "use tir.select, tir.if_then_else or an IfThenElse statement"
        )

    def __repr__(self) -> str:
        from relaxjax.tir.printer import expr_text

        return expr_text(self)


def _check_dtype(dtype: object) -> str:
    return dtypes.canonical(dtype)


@dataclass(frozen=True, slots=True, repr=False)
class IntImm(PrimExpr):
    """An integer or bool constant of ``dtype`` (its value must fit the dtype)."""

    value: int
    dtype: str = INDEX_DTYPE

    def __post_init__(self) -> None:
        dtype = _check_dtype(self.dtype)
        object.__setattr__(self, "dtype", dtype)
        if dtypes.is_floating(dtype):
            raise TypeError(f"IntImm needs an integer or bool dtype, got {dtype}; use FloatImm")
        value = self.value
        if isinstance(value, (bool, np.bool_)) or dtype == "bool":
            if dtype != "bool" and isinstance(value, (bool, np.bool_)):
                raise TypeError(f"a bool constant needs dtype bool, got {dtype}")
            if value not in (0, 1):
                raise ValueError(f"a bool constant must be True or False, got {value!r}")
            object.__setattr__(self, "value", int(bool(value)))
            return
        if not isinstance(value, (int, np.integer)):
            raise TypeError(f"IntImm value must be an int, got {type(value).__name__} {value!r}")
        info = np.iinfo(dtypes.to_numpy(dtype))
        if not info.min <= int(value) <= info.max:
            raise ValueError(f"{value} does not fit {dtype} [{info.min}, {info.max}]")
        object.__setattr__(self, "value", int(value))


def round_to_dtype(value: float, dtype: str) -> float:
    """``value`` rounded to the nearest ``dtype`` float (bfloat16: through float32)."""
    if dtype == "float64":
        return float(value)
    if dtype == "bfloat16":
        return float(ml_dtypes.bfloat16(np.float32(value)))
    with np.errstate(over="ignore"):
        return float(dtypes.to_numpy(dtype).type(value))


@dataclass(frozen=True, slots=True, repr=False, eq=False)
class FloatImm(PrimExpr):
    """A floating constant, stored rounded to its ``dtype``.

    Equality compares bit patterns, so NaN equals NaN and ``-0.0 != 0.0``.
    """

    value: float
    dtype: str = "float32"

    def __post_init__(self) -> None:
        dtype = _check_dtype(self.dtype)
        object.__setattr__(self, "dtype", dtype)
        if not dtypes.is_floating(dtype):
            raise TypeError(f"FloatImm needs a floating dtype, got {dtype}; use IntImm")
        if isinstance(self.value, (bool, np.bool_)) or not isinstance(
            self.value, (int, float, np.integer, np.floating)
        ):
            raise TypeError(f"FloatImm value must be a float, got {self.value!r}")
        object.__setattr__(self, "value", round_to_dtype(float(self.value), dtype))

    def _bits(self) -> bytes:
        return struct.pack("<d", self.value)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, FloatImm):
            return NotImplemented
        return self.dtype == other.dtype and self._bits() == other._bits()

    def __ne__(self, other: object) -> bool:
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    def __hash__(self) -> int:
        return hash((FloatImm, self.dtype, self._bits()))


@dataclass(frozen=True, slots=True, repr=False)
class IndexExpr(PrimExpr):
    """An integer index (an arith dim: loop variables, shapes) used as an ``int64`` value."""

    dim: Dim
    dtype: str = INDEX_DTYPE

    def __post_init__(self) -> None:
        object.__setattr__(self, "dim", as_dim(self.dim, "IndexExpr"))
        if self.dtype != INDEX_DTYPE:
            raise TypeError(f"IndexExpr is always {INDEX_DTYPE}, got {self.dtype!r}; use Cast")

    @property
    def index_dim(self) -> Dim:
        """The wrapped dim (lets an IndexExpr stand wherever a dim is expected)."""
        return self.dim


@dataclass(frozen=True, slots=True, repr=False)
class Var(PrimExpr):
    """A scalar value variable of any dtype, bound by a ``LetStmt``.

    Index variables are ``arith.Sym`` instead; a ``Var`` holds data (e.g. a loaded value).
    """

    name: str
    dtype: str

    def __post_init__(self) -> None:
        check_name(self.name, "variable")
        object.__setattr__(self, "dtype", _check_dtype(self.dtype))


@dataclass(frozen=True, slots=True, repr=False)
class BufferLoad(PrimExpr):
    """``buffer[indices]``: one element. An index is a dim, or an integer PrimExpr
    (a data-dependent index, e.g. a gather)."""

    buffer: Buffer
    indices: tuple[Dim | PrimExpr, ...]

    def __post_init__(self) -> None:
        if not isinstance(self.buffer, Buffer):
            raise TypeError(f"BufferLoad needs a Buffer, got {type(self.buffer).__name__}")
        indices = normalize_indices(self.buffer, self.indices)
        object.__setattr__(self, "indices", indices)

    @property
    def dtype(self) -> str:
        return self.buffer.dtype


def normalize_indices(buffer: Buffer, indices: object) -> tuple[Dim | PrimExpr, ...]:
    """Indices as dims where possible, integer PrimExprs otherwise; the count is checked."""
    items = tuple(indices) if isinstance(indices, (tuple, list)) else (indices,)
    buffer.check_index_count(len(items))
    return tuple(_index(buffer, axis, item) for axis, item in enumerate(items))


def _index(buffer: Buffer, axis: int, item: object) -> Dim | PrimExpr:
    if isinstance(item, PrimExpr) and not isinstance(item, IndexExpr):
        if not dtypes.is_integer(item.dtype):
            raise TypeError(
                f"index {axis} of buffer {buffer.name} must be an integer, "
                f"got {item.dtype} {item!r}"
            )
        return item
    return as_dim(item, f"index {axis} of buffer {buffer.name}")


@dataclass(frozen=True, slots=True, repr=False)
class BinOp(PrimExpr):
    """``a op b`` with ``op`` in :data:`BINARY_OPS`; both operands have one dtype.

    Comparisons and ``and``/``or`` give ``bool``; the rest the operands' dtype. Build with
    :func:`binop` (or Python operators), which converts scalars and folds index math.
    """

    op: str
    a: PrimExpr
    b: PrimExpr

    def __post_init__(self) -> None:
        if self.op not in BINARY_OPS:
            raise ValueError(f"unknown binary op {self.op!r}; expected one of {BINARY_OPS}")
        for operand in (self.a, self.b):
            if not isinstance(operand, PrimExpr):
                raise TypeError(f"operands of {self.op!r} must be PrimExprs, got {operand!r}")
        if self.a.dtype != self.b.dtype:
            raise TypeError(
                f"operands of {self.op!r} have different dtypes: {self.a.dtype} ({self.a!r}) "
                f"and {self.b.dtype} ({self.b!r}); cast one explicitly"
            )
        if self.op in _INDEX_FOLDS and _is_index_value(self.a) and _is_index_value(self.b):
            raise ValueError(
                f"index math {self.a!r} {self.op} {self.b!r} belongs to arith: build it with "
                "tir.binop (which folds it) or as IndexExpr(dim)"
            )
        _check_operand_kind(self.op, self.a.dtype)

    @property
    def dtype(self) -> str:
        if self.op in COMPARE_OPS or self.op in LOGIC_OPS:
            return "bool"
        return self.a.dtype


def _is_index_value(value: PrimExpr) -> bool:
    return isinstance(value, IndexExpr)


def _check_operand_kind(op: str, dtype: str) -> None:
    if op in LOGIC_OPS or op == "not":
        if dtype != "bool":
            raise TypeError(f"{op!r} needs bool operands, got {dtype}")
        return
    if op in ("==", "!="):
        return
    if dtype == "bool":
        raise TypeError(f"{op!r} is not defined on bool operands; cast to an integer first")
    if op == "/" and not dtypes.is_floating(dtype):
        raise TypeError(f"'/' needs floating operands, got {dtype}; use '//' for integers")


@dataclass(frozen=True, slots=True, repr=False)
class UnaryOp(PrimExpr):
    """``-a`` (numeric) or ``not a`` (bool)."""

    op: str
    a: PrimExpr

    def __post_init__(self) -> None:
        if self.op not in UNARY_OPS:
            raise ValueError(f"unknown unary op {self.op!r}; expected one of {UNARY_OPS}")
        if not isinstance(self.a, PrimExpr):
            raise TypeError(f"operand of {self.op!r} must be a PrimExpr, got {self.a!r}")
        if isinstance(self.a, IndexExpr) and self.op == "-":
            raise ValueError(f"index negation -{self.a!r} belongs to arith: use IndexExpr(-dim)")
        _check_operand_kind(self.op, self.a.dtype)

    @property
    def dtype(self) -> str:
        return self.a.dtype


@dataclass(frozen=True, slots=True, repr=False)
class Select(PrimExpr):
    """``true_value if condition else false_value``; both operands are evaluated."""

    condition: PrimExpr
    true_value: PrimExpr
    false_value: PrimExpr

    def __post_init__(self) -> None:
        _check_select("select", self.condition, self.true_value, self.false_value)

    @property
    def dtype(self) -> str:
        return self.true_value.dtype


def _check_select(what: str, condition: object, true_value: object, false_value: object) -> None:
    for operand in (condition, true_value, false_value):
        if not isinstance(operand, PrimExpr):
            raise TypeError(f"operands of {what} must be PrimExprs, got {operand!r}")
    if condition.dtype != "bool":
        raise TypeError(f"the condition of {what} must be bool, got {condition.dtype}")
    if true_value.dtype != false_value.dtype:
        raise TypeError(
            f"the branches of {what} have different dtypes: {true_value.dtype} and "
            f"{false_value.dtype}"
        )


@dataclass(frozen=True, slots=True, repr=False)
class Cast(PrimExpr):
    """``value`` converted to ``dtype`` (see the module docstring for the rules)."""

    dtype: str
    value: PrimExpr

    def __post_init__(self) -> None:
        object.__setattr__(self, "dtype", _check_dtype(self.dtype))
        if not isinstance(self.value, PrimExpr):
            raise TypeError(f"Cast needs a PrimExpr, got {self.value!r}")


@dataclass(frozen=True, slots=True, repr=False)
class Call(PrimExpr):
    """A math intrinsic (see :mod:`relaxjax.tir.intrinsics`) applied to ``args``."""

    intrinsic: str
    args: tuple[PrimExpr, ...]

    def __post_init__(self) -> None:
        args = tuple(self.args)
        object.__setattr__(self, "args", args)
        for arg in args:
            if not isinstance(arg, PrimExpr):
                raise TypeError(f"arguments of {self.intrinsic} must be PrimExprs, got {arg!r}")
        if self.intrinsic == LAZY_SELECT:
            if len(args) != 3:
                raise ValueError(f"{LAZY_SELECT} takes 3 arguments, got {len(args)}")
            _check_select(LAZY_SELECT, *args)
            return
        if self.intrinsic == SYNCTHREADS:
            if args:
                raise ValueError(f"{SYNCTHREADS} takes no arguments, got {len(args)}")
            return
        if self.intrinsic in SHUFFLES:
            _check_shuffle(self.intrinsic, args)
            return
        if self.intrinsic == MMA:
            _check_mma(args)
            return
        if self.intrinsic == LDMATRIX:
            _check_ldmatrix(args)
            return
        spec = INTRINSICS.get(self.intrinsic)
        if spec is None:
            raise ValueError(
                f"unknown intrinsic {self.intrinsic!r}; known: {', '.join(sorted(INTRINSICS))}, "
                f"{LAZY_SELECT}, {SYNCTHREADS}, {', '.join(SHUFFLES)}"
            )
        if len(args) != spec.arity:
            raise ValueError(f"{self.intrinsic} takes {spec.arity} argument(s), got {len(args)}")
        kinds = {arg.dtype for arg in args}
        if len(kinds) != 1:
            raise TypeError(f"arguments of {self.intrinsic} have different dtypes: {sorted(kinds)}")
        (dtype,) = kinds
        floating, integer = dtypes.is_floating(dtype), dtypes.is_integer(dtype)
        if (
            (spec.operands == "float" and not floating)
            or (spec.operands == "numeric" and not (floating or integer))
            or (spec.operands == "integer" and not (integer or dtypes.is_bool(dtype)))
        ):
            raise TypeError(f"{self.intrinsic} needs {spec.operands} arguments, got {dtype}")

    @property
    def dtype(self) -> str:
        if self.intrinsic == LAZY_SELECT:
            return self.args[1].dtype
        if self.intrinsic == SYNCTHREADS:
            return "int32"
        if self.intrinsic in SHUFFLES:
            return self.args[0].dtype
        if self.intrinsic == MMA:
            return "float32"
        if self.intrinsic == LDMATRIX:
            return self.args[2].dtype
        if INTRINSICS[self.intrinsic].result == "bool":
            return "bool"
        return self.args[0].dtype


def _check_shuffle(name: str, args: tuple[PrimExpr, ...]) -> None:
    if len(args) != 2:
        raise ValueError(f"{name} takes 2 arguments (value, lane operand), got {len(args)}")
    value, lane = args
    if not (dtypes.is_floating(value.dtype) or dtypes.is_integer(value.dtype)):
        raise TypeError(f"{name} shuffles an int or float value, got {value.dtype}")
    if not dtypes.is_integer(lane.dtype):
        raise TypeError(f"the lane operand of {name} must be an integer, got {lane.dtype}")


def _check_mma(args: tuple[PrimExpr, ...]) -> None:
    if len(args) != 17:
        raise ValueError(f"{MMA} takes 17 arguments (q, a0..a7, b0..b3, c0..c3), got {len(args)}")
    q = args[0]
    if not (isinstance(q, IntImm) and 0 <= q.value < 4):
        raise ValueError(f"the element index q of {MMA} must be a constant 0..3, got {q}")
    operands = {arg.dtype for arg in args[1:13]}
    if len(operands) != 1 or not operands <= set(MMA_DTYPES):
        raise TypeError(
            f"the a and b fragments of {MMA} must all be one of {', '.join(MMA_DTYPES)}, "
            f"got {sorted(operands)}"
        )
    if {arg.dtype for arg in args[13:]} != {"float32"}:
        raise TypeError(f"the c fragment of {MMA} must be float32")


def _check_ldmatrix(args: tuple[PrimExpr, ...]) -> None:
    if len(args) != 10:
        raise ValueError(f"{LDMATRIX} takes 10 arguments (trans, q, v0..v7), got {len(args)}")
    trans, q = args[:2]
    if not (isinstance(trans, IntImm) and trans.value in (0, 1)):
        raise ValueError(f"trans of {LDMATRIX} must be a constant 0 or 1, got {trans}")
    if not (isinstance(q, IntImm) and 0 <= q.value < 8):
        raise ValueError(f"the element index q of {LDMATRIX} must be a constant 0..7, got {q}")
    row = args[2:]
    if not all(isinstance(v, BufferLoad) for v in row) or len({v.buffer for v in row}) != 1:
        raise TypeError(f"the row of {LDMATRIX} must be 8 loads of one buffer")
    if dtypes.itemsize(row[0].dtype) != 2:
        raise TypeError(f"{LDMATRIX} loads 16-bit elements, got {row[0].dtype}")


# --- construction helpers ---------------------------------------------------------------


def const(value: bool | int | float, dtype: str | None = None) -> PrimExpr:
    """A constant: ``const(1.5, "float32")``, ``const(3, "int32")``, ``const(True)``.

    Without ``dtype`` a bool is ``bool``, an int ``int64``; a float needs a dtype.
    """
    if dtype is None:
        if isinstance(value, (bool, np.bool_)):
            return IntImm(bool(value), "bool")
        if isinstance(value, (int, np.integer)):
            return IntImm(int(value), INDEX_DTYPE)
        if isinstance(value, np.floating):
            return FloatImm(float(value), dtypes.canonical(value.dtype))
        raise TypeError(f"const({value!r}) needs a dtype, e.g. const({value!r}, 'float32')")
    dtype = _check_dtype(dtype)
    if dtypes.is_floating(dtype):
        return FloatImm(value, dtype)
    if isinstance(value, (float, np.floating)):
        if not float(value).is_integer():
            raise TypeError(f"cannot make a {dtype} constant from the float {value!r}")
        value = int(value)
    return IntImm(value, dtype)


def _is_python_scalar(value: object) -> bool:
    return isinstance(value, (bool, int, float, np.bool_, np.integer, np.floating))


def _index_dim_of(value: object) -> Dim | None:
    """The dim of an index-like operand (IndexExpr, dim, reduce axis), else None."""
    if isinstance(value, IndexExpr):
        return value.dim
    if isinstance(value, (bool, np.bool_)):
        return None
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, arith.Expr):
        return value
    dim = getattr(value, "index_dim", None)
    return dim if dim is not None and not isinstance(value, PrimExpr) else None


def as_expr(value: object, dtype: str | None = None) -> PrimExpr:
    """``value`` as a PrimExpr; a Python scalar takes ``dtype`` when given.

    Dims (ints, ``arith.Expr``, reduce axes) without a dtype become :class:`IndexExpr`.
    """
    if isinstance(value, PrimExpr):
        return value
    if dtype is not None and _is_python_scalar(value):
        if isinstance(value, (bool, np.bool_)) and dtype != "bool":
            raise TypeError(f"cannot use the bool {value!r} as a {dtype} value")
        if isinstance(value, (float, np.floating)) and not dtypes.is_floating(dtype):
            raise TypeError(
                f"cannot combine a {dtype} expression with the float {value!r}; cast explicitly"
            )
        if dtype == INDEX_DTYPE and isinstance(value, (int, np.integer)):
            return IntImm(int(value), dtype)
        return const(value, dtype)
    if isinstance(value, (bool, np.bool_)):
        return IntImm(bool(value), "bool")
    dim = _index_dim_of(value)
    if dim is not None:
        return IndexExpr(dim)
    if isinstance(value, (float, np.floating)):
        return const(value)
    raise TypeError(f"cannot use {type(value).__name__} {value!r} as a TIR expression")


def binop(op: str, a: object, b: object) -> PrimExpr:
    """``a op b``: folds index math into arith, gives Python scalars the other side's dtype."""
    if op in _INDEX_FOLDS:
        da, db = _index_dim_of(a), _index_dim_of(b)
        if da is not None and db is not None:
            return IndexExpr(_INDEX_FOLDS[op](da, db))
    if isinstance(a, PrimExpr) and not isinstance(b, PrimExpr):
        b = _coerce(b, a)
    elif isinstance(b, PrimExpr) and not isinstance(a, PrimExpr):
        a = _coerce(a, b)
    return BinOp(op, as_expr(a), as_expr(b))


def _coerce(value: object, other: PrimExpr) -> PrimExpr:
    if isinstance(other, IndexExpr) and _index_dim_of(value) is not None:
        return IndexExpr(_index_dim_of(value))
    return as_expr(value, other.dtype)


def unary(op: str, a: object) -> PrimExpr:
    """``-a`` or ``not a``; negating an index value folds into arith."""
    dim = _index_dim_of(a)
    if op == "-" and dim is not None:
        return IndexExpr(-dim)
    return UnaryOp(op, as_expr(a))


def eq(a: object, b: object) -> PrimExpr:
    """The comparison ``a == b`` (``==`` on nodes is structural equality)."""
    return binop("==", a, b)


def ne(a: object, b: object) -> PrimExpr:
    """The comparison ``a != b``."""
    return binop("!=", a, b)


def cast(value: object, dtype: str) -> PrimExpr:
    """``value`` converted to ``dtype``; no node when it already has that dtype."""
    dtype = _check_dtype(dtype)
    expr = as_expr(value, dtype) if _is_python_scalar(value) else as_expr(value)
    return expr if expr.dtype == dtype else Cast(dtype, expr)


def min_value(dtype: str) -> PrimExpr:
    """The smallest value of ``dtype`` (``-inf`` for floats)."""
    dtype = _check_dtype(dtype)
    if dtypes.is_floating(dtype):
        return FloatImm(-math.inf, dtype)
    if dtype == "bool":
        return IntImm(False, "bool")
    return IntImm(int(np.iinfo(dtypes.to_numpy(dtype)).min), dtype)


def max_value(dtype: str) -> PrimExpr:
    """The largest value of ``dtype`` (``inf`` for floats)."""
    dtype = _check_dtype(dtype)
    if dtypes.is_floating(dtype):
        return FloatImm(math.inf, dtype)
    if dtype == "bool":
        return IntImm(True, "bool")
    return IntImm(int(np.iinfo(dtypes.to_numpy(dtype)).max), dtype)
