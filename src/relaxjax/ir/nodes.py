"""Graph IR nodes, in A-normal form: a function is a sequence of bindings ``var = value``.

Every expression has ``.info`` (its :mod:`struct info <relaxjax.ir.struct_info>`). Nodes
are frozen; ``Var`` and ``Constant`` compare by identity, the others structurally (use
:func:`relaxjax.ir.structural_equal` to compare programs up to variable renaming).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import numpy as np

from relaxjax import arith, dtypes
from relaxjax.arith import Dim
from relaxjax.errors import SourceLocation
from relaxjax.ir.struct_info import (
    ObjectInfo,
    PrimInfo,
    ShapeInfo,
    StructInfo,
    TensorInfo,
    TupleInfo,
    as_dims,
)


@runtime_checkable
class OpLike(Protocol):
    """What the IR needs of an operator (ops live in ``relaxjax.ops``; ir never imports them).

    ``Attrs`` is the op's frozen dataclass of attributes (or None); ``infer`` deduces the
    result's struct info from the operands' infos, calling ``ctx.require`` for relations it
    cannot prove.
    """

    name: str
    Attrs: type | None

    def infer(self, args: Sequence[StructInfo], attrs: object, ctx: object) -> StructInfo: ...


class Expr:
    """Base of graph expressions. Each subclass provides ``info: StructInfo``."""

    __slots__ = ()

    def __repr__(self) -> str:
        from relaxjax.ir.printer import expr_to_text  # the printer depends on the nodes

        return expr_to_text(self)


def _check_info(info: object, what: str) -> None:
    if not isinstance(info, StructInfo):
        raise TypeError(f"{what} must be a StructInfo, got {info!r}")


@dataclass(frozen=True, eq=False, slots=True, repr=False)
class Var(Expr):
    """A variable bound once (by a parameter or a binding). Compared by identity."""

    name_hint: str
    info: StructInfo

    def __post_init__(self) -> None:
        if not isinstance(self.name_hint, str):
            raise TypeError(f"Var name_hint must be a str, got {self.name_hint!r}")
        _check_info(self.info, f"the info of Var {self.name_hint!r}")


@dataclass(frozen=True, eq=False, slots=True, repr=False)
class DataflowVar(Var):
    """A variable local to a dataflow block: it may not be used after the block ends."""


@dataclass(frozen=True, eq=False, slots=True, repr=False, init=False)
class Constant(Expr):
    """A constant tensor. The array is held as a read-only view; compared by identity."""

    data: np.ndarray

    def __init__(self, data: object) -> None:
        array = np.asarray(data)
        dtypes.canonical(array.dtype)  # raises TypeError for unsupported dtypes
        view = array.view()
        view.flags.writeable = False
        object.__setattr__(self, "data", view)

    @property
    def info(self) -> TensorInfo:
        return TensorInfo(self.data.shape, dtypes.canonical(self.data.dtype))

    def __reduce__(self) -> tuple:
        return (Constant, (self.data,))


def _default_prim_dtype(value: object) -> str:
    if isinstance(value, (bool, np.bool_)):
        return "bool"
    if isinstance(value, (int, np.integer, arith.Expr)):
        return "int64"
    if isinstance(value, (float, np.floating)):
        return "float64"
    raise TypeError(f"a PrimValue holds an int, float, bool or symbolic expression, got {value!r}")


def _coerce_prim(value: object, dtype: str) -> Dim | float | bool:
    if isinstance(value, arith.Expr):
        if not dtypes.is_integer(dtype):
            raise TypeError(f"a symbolic PrimValue must have an integer dtype, got {dtype}")
        return value
    if isinstance(value, (bool, np.bool_, int, np.integer, float, np.floating)):
        if dtypes.is_bool(dtype):
            return bool(value)
        if dtypes.is_integer(dtype):
            if isinstance(value, (float, np.floating)) and not float(value).is_integer():
                raise ValueError(f"PrimValue {value!r} is not an integer but dtype is {dtype}")
            return int(value)
        return float(value)
    raise TypeError(f"a PrimValue holds an int, float, bool or symbolic expression, got {value!r}")


@dataclass(frozen=True, slots=True, repr=False, init=False)
class PrimValue(Expr):
    """A scalar: a Python number or a symbolic int. ``weak`` as in :class:`PrimInfo`."""

    value: Dim | float | bool
    dtype: str
    weak: bool

    def __init__(self, value: Dim | float | bool, dtype: object = None, weak: bool = False) -> None:
        name = _default_prim_dtype(value) if dtype is None else dtypes.canonical(dtype)
        object.__setattr__(self, "value", _coerce_prim(value, name))
        object.__setattr__(self, "dtype", name)
        object.__setattr__(self, "weak", bool(weak))

    @property
    def info(self) -> PrimInfo:
        value = self.value if dtypes.is_integer(self.dtype) else None
        return PrimInfo(self.dtype, value, self.weak)  # type: ignore[arg-type]


@dataclass(frozen=True, slots=True, repr=False, init=False)
class ShapeExpr(Expr):
    """A shape value built from dims, e.g. the target shape of a reshape."""

    values: tuple[Dim, ...]

    def __init__(self, values: Iterable[Dim | str]) -> None:
        object.__setattr__(self, "values", as_dims(values))

    @property
    def info(self) -> ShapeInfo:
        return ShapeInfo(self.values)


def _check_exprs(values: Iterable[object], what: str) -> tuple[Expr, ...]:
    values = tuple(values)
    for value in values:
        if not isinstance(value, Expr):
            raise TypeError(f"{what} must be IR expressions, got {value!r}")
    return values


@dataclass(frozen=True, slots=True, repr=False, init=False)
class Tuple(Expr):
    """A tuple of values."""

    fields: tuple[Expr, ...]

    def __init__(self, fields: Iterable[Expr]) -> None:
        object.__setattr__(self, "fields", _check_exprs(fields, "Tuple fields"))

    @property
    def info(self) -> TupleInfo:
        return TupleInfo(f.info for f in self.fields)


@dataclass(frozen=True, slots=True, repr=False)
class TupleGetItem(Expr):
    """``tuple_value[index]``."""

    tuple_value: Expr
    index: int

    def __post_init__(self) -> None:
        _check_exprs((self.tuple_value,), "TupleGetItem operands")
        info = self.tuple_value.info
        if isinstance(info, TupleInfo) and not 0 <= self.index < len(info.fields):
            raise IndexError(
                f"tuple index {self.index} out of range for a tuple of {len(info.fields)} fields"
            )

    @property
    def info(self) -> StructInfo:
        info = self.tuple_value.info
        return info.fields[self.index] if isinstance(info, TupleInfo) else ObjectInfo()


@dataclass(frozen=True, slots=True, repr=False)
class GlobalVar(Expr):
    """The name of a graph function, kernel or extern declaration in the module."""

    name: str

    @property
    def info(self) -> ObjectInfo:
        return ObjectInfo()


@dataclass(frozen=True, slots=True, repr=False)
class ExternFunc(Expr):
    """An external (library) function, named by its symbol."""

    symbol: str

    @property
    def info(self) -> ObjectInfo:
        return ObjectInfo()


CHECK_KINDS = ("eq", "broadcast", "le", "divides", "nonneg")
_CHECK_ARITY = {"eq": 2, "broadcast": 2, "le": 2, "divides": 2, "nonneg": 1}


@dataclass(frozen=True, slots=True, repr=False, init=False)
class Check:
    """A run-time shape assertion for a relation that deduction could not prove.

    Kinds: ``eq`` (a == b), ``broadcast`` (a == b or a == 1 or b == 1), ``le`` (a <= b),
    ``divides`` (a divides b: b % a == 0, and b == 0 when a == 0), ``nonneg`` (a >= 0).
    ``message`` says what the op needs, e.g. ``"matmul: contraction dims must match"``.
    """

    kind: str
    args: tuple[Dim, ...]
    message: str

    def __init__(self, kind: str, args: Iterable[Dim], message: str = "") -> None:
        if kind not in CHECK_KINDS:
            raise ValueError(f"Check kind must be one of {CHECK_KINDS}, got {kind!r}")
        dims = tuple(_check_dim(a) for a in args)
        if len(dims) != _CHECK_ARITY[kind]:
            raise ValueError(f"Check {kind!r} takes {_CHECK_ARITY[kind]} dims, got {len(dims)}")
        object.__setattr__(self, "kind", kind)
        object.__setattr__(self, "args", dims)
        object.__setattr__(self, "message", str(message))

    def relation(self) -> str:
        """The relation as text, e.g. ``"n == m"`` or ``"broadcast(n, m)"``."""
        a = self.args[0]
        if self.kind == "nonneg":
            return f"{a} >= 0"
        b = self.args[1]
        if self.kind == "eq":
            return f"{a} == {b}"
        if self.kind == "le":
            return f"{a} <= {b}"
        return f"{self.kind}({a}, {b})"

    def holds(self, env: Mapping[str, int]) -> bool:
        """Evaluate the relation for concrete symbol values (``KeyError`` if one is missing)."""
        values = [arith.evaluate(a, env) for a in self.args]
        return _holds(self.kind, values)

    def decide(self) -> bool | None:
        """True if proven for every value of the symbols, False if never true, else None.

        What the symbols' bounds cannot settle as a whole is decided by cases on small
        values (:func:`relaxjax.arith.decide_by_cases`): ``broadcast(m, min(1, m))`` holds
        at ``m == 0`` (both 0) and above (``min(1, m) == 1``).
        """
        if all(isinstance(a, int) for a in self.args):
            return _holds(self.kind, self.args)  # type: ignore[arg-type]
        answer = _decide(self.kind, self.args, None)
        if answer is not None:
            return answer
        kind, args = self.kind, self.args
        return arith.decide_by_cases(lambda ranges: _decide(kind, args, ranges), args)

    def __repr__(self) -> str:
        return f"Check({self.relation()}, {self.message!r})"


def _check_dim(value: object) -> Dim:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer, arith.Expr)):
        raise TypeError(f"Check args must be ints or symbolic expressions, got {value!r}")
    return value if isinstance(value, arith.Expr) else int(value)


def _holds(kind: str, values: Sequence[int]) -> bool:
    if kind == "nonneg":
        return values[0] >= 0
    a, b = values
    if kind == "eq":
        return a == b
    if kind == "le":
        return a <= b
    if kind == "broadcast":
        return a == b or a == 1 or b == 1
    return b == 0 if a == 0 else b % a == 0


def _decide(kind: str, args: tuple[Dim, ...], ranges) -> bool | None:
    """The relation for every value of the symbols (within ``ranges`` when given)."""
    a = args[0]
    if kind == "nonneg":
        return arith.compare(a, ">=", 0, ranges)
    b = args[1]
    if kind == "eq":
        return arith.compare(a, "==", b, ranges)
    if kind == "le":
        return arith.compare(a, "<=", b, ranges)
    if kind == "broadcast":
        return _decide_broadcast(a, b, ranges)
    return _decide_divides(a, b, ranges)


def _decide_broadcast(a: Dim, b: Dim, ranges) -> bool | None:
    options = [
        arith.compare(a, "==", b, ranges),
        arith.compare(a, "==", 1, ranges),
        arith.compare(b, "==", 1, ranges),
    ]
    if True in options:
        return True
    if all(o is False for o in options):
        return False
    return None


def _decide_divides(a: Dim, b: Dim, ranges) -> bool | None:
    if arith.exact_div(b, a) is not None:
        return True  # b == q * a: b % a == 0 where a != 0, and b == 0 where a == 0
    if isinstance(a, int) and a == 0:
        return arith.compare(b, "==", 0, ranges)
    if arith.compare(a, "==", 0, ranges) is not False:
        return None
    return arith.compare(b % a, "==", 0, ranges)


# What a Call may call: an operator, a function or kernel in the module, or an external one.
Callee = OpLike | GlobalVar | ExternFunc


@dataclass(frozen=True, slots=True, repr=False, init=False)
class Call(Expr):
    """``op(*args, **attrs)`` with its deduced info and the run-time checks it needs.

    ``info`` is None only before a :class:`~relaxjax.ir.builder.BlockBuilder` normalises
    the call (deducing it through ``op.infer``).
    """

    op: Callee
    args: tuple[Expr, ...]
    attrs: object
    info: StructInfo | None
    checks: tuple[Check, ...]

    def __init__(
        self,
        op: Callee,
        args: Iterable[Expr],
        attrs: object = None,
        info: StructInfo | None = None,
        checks: Iterable[Check] = (),
    ) -> None:
        if not isinstance(op, (GlobalVar, ExternFunc)) and not _is_op_like(op):
            raise TypeError(
                "Call.op must be an op (with name, Attrs and infer), a GlobalVar or an "
                f"ExternFunc, got {op!r}"
            )
        if info is not None:
            _check_info(info, "Call info")
        checks = tuple(checks)
        for check in checks:
            if not isinstance(check, Check):
                raise TypeError(f"Call checks must be Check objects, got {check!r}")
        object.__setattr__(self, "op", op)
        object.__setattr__(self, "args", _check_exprs(args, "Call args"))
        object.__setattr__(self, "attrs", attrs)
        object.__setattr__(self, "info", info)
        object.__setattr__(self, "checks", checks)

    @property
    def op_name(self) -> str:
        """The printed name of the callee."""
        if isinstance(self.op, GlobalVar):
            return self.op.name
        if isinstance(self.op, ExternFunc):
            return self.op.symbol
        return self.op.name


def _is_op_like(op: object) -> bool:
    return all(hasattr(op, a) for a in ("name", "Attrs", "infer"))


def is_op_like(op: object) -> bool:
    """Whether ``op`` has what an operator needs (``name``, ``Attrs``, ``infer``)."""
    return _is_op_like(op)


@dataclass(frozen=True, slots=True)
class Binding:
    """``var = value``. ``location`` is the user's source line; it is not compared."""

    var: Var
    value: Expr
    location: SourceLocation | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.var, Var):
            raise TypeError(f"a binding defines a Var, got {self.var!r}")
        _check_exprs((self.value,), "bound values")


@dataclass(frozen=True, slots=True)
class MatchCast:
    """``var = match_cast(value, info)``: asserts ``info`` at run time, binding new symbols."""

    var: Var
    value: Expr
    info: StructInfo
    location: SourceLocation | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.var, Var):
            raise TypeError(f"a match_cast defines a Var, got {self.var!r}")
        _check_exprs((self.value,), "match_cast values")
        _check_info(self.info, "match_cast info")


AnyBinding = Binding | MatchCast


def _check_bindings(bindings: Iterable[object]) -> tuple[AnyBinding, ...]:
    bindings = tuple(bindings)
    for binding in bindings:
        if not isinstance(binding, (Binding, MatchCast)):
            raise TypeError(f"a block holds Binding and MatchCast, got {binding!r}")
    return bindings


@dataclass(frozen=True, slots=True, init=False)
class BindingBlock:
    """A sequence of bindings (may have side effects)."""

    bindings: tuple[AnyBinding, ...]

    def __init__(self, bindings: Iterable[AnyBinding]) -> None:
        object.__setattr__(self, "bindings", _check_bindings(bindings))


@dataclass(frozen=True, slots=True, init=False)
class DataflowBlock(BindingBlock):
    """A side-effect-free block; its ``DataflowVar``s do not outlive it."""


@dataclass(frozen=True, slots=True, repr=False, init=False)
class SeqExpr(Expr):
    """Blocks of bindings followed by a result expression."""

    blocks: tuple[BindingBlock, ...]
    body: Expr

    def __init__(self, blocks: Iterable[BindingBlock], body: Expr) -> None:
        blocks = tuple(blocks)
        for block in blocks:
            if not isinstance(block, BindingBlock):
                raise TypeError(f"SeqExpr blocks must be BindingBlocks, got {block!r}")
        _check_exprs((body,), "SeqExpr body")
        object.__setattr__(self, "blocks", blocks)
        object.__setattr__(self, "body", body)

    @property
    def info(self) -> StructInfo:
        return self.body.info


# Values a function attribute may take (no Any: a closed set of plain data).
AttrValue = int | float | str | bool | None | tuple


def _freeze_attrs(attrs: Mapping[str, AttrValue] | Iterable | None) -> tuple:
    items = attrs.items() if isinstance(attrs, Mapping) else (attrs or ())
    frozen = []
    for key, value in items:
        if not isinstance(key, str):
            raise TypeError(f"function attribute names must be str, got {key!r}")
        frozen.append((key, _freeze_value(value)))
    return tuple(sorted(frozen, key=lambda kv: kv[0]))


def _freeze_value(value: object) -> AttrValue:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (tuple, list)):
        return tuple(_freeze_value(v) for v in value)
    raise TypeError(f"function attribute values must be plain data, got {value!r}")


@dataclass(frozen=True, slots=True, init=False)
class Function:
    """A graph function. Its parameters' infos define its symbols (a symbol is defined by
    the first parameter dim that is exactly that symbol)."""

    params: tuple[Var, ...]
    body: SeqExpr
    ret_info: StructInfo
    name: str
    attrs: tuple[tuple[str, AttrValue], ...]

    def __init__(
        self,
        params: Iterable[Var],
        body: SeqExpr,
        ret_info: StructInfo,
        name: str = "main",
        attrs: Mapping[str, AttrValue] | None = None,
    ) -> None:
        params = tuple(params)
        for param in params:
            if not isinstance(param, Var) or isinstance(param, DataflowVar):
                raise TypeError(f"function parameters must be (non-dataflow) Vars, got {param!r}")
        if not isinstance(body, SeqExpr):
            raise TypeError(f"a function body must be a SeqExpr, got {body!r}")
        _check_info(ret_info, "a function's ret_info")
        object.__setattr__(self, "params", params)
        object.__setattr__(self, "body", body)
        object.__setattr__(self, "ret_info", ret_info)
        object.__setattr__(self, "name", str(name))
        object.__setattr__(self, "attrs", _freeze_attrs(attrs))

    @property
    def attrs_dict(self) -> dict[str, AttrValue]:
        """The attributes as a dict."""
        return dict(self.attrs)

    def __repr__(self) -> str:
        from relaxjax.ir.printer import function_to_text  # the printer depends on the nodes

        return function_to_text(self)


@dataclass(frozen=True, slots=True)
class ExternDecl:
    """A declaration of an external library function the module calls (via call_extern)."""

    name: str
    symbol: str
    library: str = ""
