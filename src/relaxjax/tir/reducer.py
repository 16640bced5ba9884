"""Reductions of the compute builder: reduce axes, commutative reducers, and the
``Reduce`` value a stage body may be.

``sum``, ``prod``, ``max``, ``min`` reduce one value; ``argmax``/``argmin`` reduce a
``(value, index)`` pair (NaN wins and ties keep the smaller index, as ``jnp.argmax``,
so the result does not depend on the order of combination); :func:`comm_reducer`
builds any reducer over a tuple of values.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass

from relaxjax import arith, dtypes
from relaxjax.arith import Dim
from relaxjax.tir.buffer import as_dim, check_name
from relaxjax.tir.expr import IndexExpr, PrimExpr, as_expr, binop, const, max_value, min_value
from relaxjax.tir.math import isnan, select

_uid = itertools.count()
_AXIS_NAMES: dict[str, str] = {}  # internal name of a builder axis -> the name it was given


def fresh_sym(name: str) -> arith.Sym:
    """A symbol for a builder axis; its internal name never collides with user symbols
    (``create_prim_func`` gives the final names)."""
    internal = f"{name}__{next(_uid)}"
    _AXIS_NAMES[internal] = name
    return arith.Sym(internal)


def axis_display_name(symbol: arith.Sym) -> str | None:
    """The user-given name of a builder axis symbol, or None for other symbols."""
    return _AXIS_NAMES.get(symbol.name)


@dataclass(frozen=True, eq=False)
class ReduceAxis:
    """A reduction iterator over ``[0, extent)`` (use it like an index)."""

    var: arith.Sym
    extent: Dim
    name: str

    @property
    def index_dim(self) -> Dim:
        return self.var

    def _expr(self) -> IndexExpr:
        return IndexExpr(self.var)

    def __add__(self, other):
        return self._expr() + other

    def __radd__(self, other):
        return other + self._expr()

    def __sub__(self, other):
        return self._expr() - other

    def __rsub__(self, other):
        return other - self._expr()

    def __mul__(self, other):
        return self._expr() * other

    def __rmul__(self, other):
        return other * self._expr()

    def __floordiv__(self, other):
        return self._expr() // other

    def __mod__(self, other):
        return self._expr() % other

    def __lt__(self, other):
        return self._expr() < other

    def __le__(self, other):
        return self._expr() <= other

    def __gt__(self, other):
        return self._expr() > other

    def __ge__(self, other):
        return self._expr() >= other


def reduce_axis(extent: object, name: str = "k") -> ReduceAxis:
    """A reduction axis over ``[0, extent)`` for :data:`sum` and friends."""
    check_name(name, "reduce axis")
    return ReduceAxis(fresh_sym(name), as_dim(extent, f"extent of reduce axis {name}"), name)


Combine = Callable[[tuple[PrimExpr, ...], tuple[PrimExpr, ...]], tuple[PrimExpr, ...]]
Identity = Callable[[tuple[str, ...]], tuple[PrimExpr, ...]]


@dataclass(frozen=True, eq=False)
class CommReducer:
    """A commutative reduction over tuples of values.

    ``combine(acc, new)`` returns the combined tuple; ``identity(dtypes)`` the initial
    tuple. Call it on the value(s) and the axes: ``sum(A[i, k], axis=k)`` gives one
    reduction, ``argmax((A[i, k], k), axis=k)`` a tuple (one per value).
    """

    name: str
    combine: Combine
    identity: Identity

    def __call__(self, values: object, axis: object, where: object = None):
        single = not isinstance(values, (tuple, list))
        sources = tuple(as_expr(v) for v in ((values,) if single else values))
        axes = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
        for ax in axes:
            if not isinstance(ax, ReduceAxis):
                raise TypeError(f"{self.name}: axis must be reduce_axis(...) values, got {ax!r}")
        condition = None if where is None else as_expr(where)
        if condition is not None and condition.dtype != "bool":
            raise TypeError(f"{self.name}: where must be a bool expression, got {condition!r}")
        reductions = tuple(Reduce(self, sources, axes, condition, j) for j in range(len(sources)))
        return reductions[0] if single else reductions


def _not_an_expression(self, *args):
    raise TypeError(
        "a reduction must be the whole body of a compute stage; compute it in its own "
        "stage and use that tensor"
    )


@dataclass(frozen=True, eq=False)
class Reduce:
    """The reduction ``reducer`` of ``sources`` over ``axes`` (value ``value_index``)."""

    reducer: CommReducer
    sources: tuple[PrimExpr, ...]
    axes: tuple[ReduceAxis, ...]
    where: PrimExpr | None
    value_index: int

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _not_an_expression
    __truediv__ = __rtruediv__ = __neg__ = _not_an_expression

    def same_reduction(self, other: Reduce) -> bool:
        return (
            self.reducer is other.reducer
            and self.sources == other.sources
            and self.axes == other.axes
            and self.where == other.where
        )


def _sum_combine(acc, new):
    return (acc[0] + new[0],)


def _prod_combine(acc, new):
    return (acc[0] * new[0],)


def _max_combine(acc, new):
    return (binop("max", acc[0], new[0]),)


def _min_combine(acc, new):
    return (binop("min", acc[0], new[0]),)


def _zero(types):
    return (const(0, types[0]),)


def _one(types):
    return (const(1, types[0]),)


def _lowest(types):
    return (min_value(types[0]),)


def _highest(types):
    return (max_value(types[0]),)


def _arg_combine(better: str) -> Combine:
    """(value, index) pairs: keep the better value; NaN wins (as numpy); ties keep the
    smaller index, so the result does not depend on the order of combination."""

    def combine(acc, new):
        (v0, i0), (v1, i1) = acc, new
        strictly = binop(better, v1, v0)
        tie = binop("==", v1, v0)
        if dtypes.is_floating(v0.dtype):
            nan0, nan1 = isnan(v0), isnan(v1)
            strictly = (nan1 & ~nan0) | strictly
            tie = tie | (nan0 & nan1)
        take = strictly | (tie & binop("<", i1, i0))
        return (select(take, v1, v0), select(take, i1, i0))

    return combine


def _arg_identity(lowest: bool) -> Identity:
    def identity(types):
        value = min_value(types[0]) if lowest else max_value(types[0])
        return (value, max_value(types[1]))

    return identity


sum = CommReducer("sum", _sum_combine, _zero)
prod = CommReducer("prod", _prod_combine, _one)
max = CommReducer("max", _max_combine, _lowest)
min = CommReducer("min", _min_combine, _highest)
argmax = CommReducer("argmax", _arg_combine(">"), _arg_identity(lowest=True))
argmin = CommReducer("argmin", _arg_combine("<"), _arg_identity(lowest=False))


def comm_reducer(combine: Combine, identity: Identity, name: str = "reduce") -> CommReducer:
    """A reducer from ``combine(acc_tuple, new_tuple) -> tuple`` and
    ``identity(dtypes) -> tuple`` (TVM's ``te.comm_reducer`` over tuples)."""
    return CommReducer(name, combine, identity)
