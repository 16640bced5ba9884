"""Which kernel calls fuse: the groups of :func:`~relaxjax.passes.fuse.fuse_ops`.

Each ``call_tir`` is classified by its kernel's own loop nests (the schedule rules'
view, :func:`~relaxjax.schedule.rules.patterns.simple_nests`): *spatial*
(elementwise, broadcast, injective: no reduction), *reduction* (a row sum, a norm,
a softmax), or not fusable (a matrix product, a kernel written as statements).

Groups grow from their last call backwards (the group's output, a post-dominator of
what it absorbs): a call producing an operand of a member joins when every use of
its result is inside the group — so the group's only result is its last call's —
and the combination keeps one good loop structure:

- without a reduction, a spatial producer joins when it has the shape of the
  members that read it (an elementwise chain), or when it is *cheap* (no math
  intrinsic but selects and comparisons: a broadcast mask, a cast) and may be
  recomputed per element;
- with reductions, the group is a *row kernel*: every reduction keeps the same
  leading axes (the rows) and reduces only the axes after them, and every other
  member iterates over those rows first (a full row, or one value per row), or is
  cheap and read by one member (it is inlined there). So ``layer_norm`` written out
  (mean, subtract, square-mean, rsqrt, scale) is one kernel over the rows, as is a
  masked, scaled softmax.

The stages of a group keep the program order of their calls.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from relaxjax import arith
from relaxjax.ir import (
    CALL_TIR,
    Binding,
    Call,
    Constant,
    Expr,
    GlobalVar,
    IRModule,
    PrimInfo,
    PrimValue,
    ShapeExpr,
    TensorInfo,
    Tuple,
    Var,
)
from relaxjax.passes.legalize import LegalizedAttrs
from relaxjax.passes.walk import used_vars
from relaxjax.schedule.rules.patterns import match_matmul, simple_nests
from relaxjax.tir.expr import Call as TirCall
from relaxjax.tir.function import PrimFunc
from relaxjax.tir.functor import StmtVisitor

__all__ = ["FusableCall", "Group", "fusion_groups", "kernel_kind"]

Dim = arith.Dim

#: Intrinsics that cost about as much as an add: a stage using no others is cheap.
_CHEAP_INTRINSICS = frozenset(
    {"abs", "floor", "ceil", "trunc", "round", "isnan", "isinf", "isfinite", "fma"}
)


def kernel_kind(kernel: object) -> str | None:
    """``"spatial"`` or ``"reduction"`` for a kernel fusion can merge, else None."""
    if not isinstance(kernel, PrimFunc) or kernel.num_outputs != 1:
        return None
    nests = simple_nests(kernel)
    if not nests or match_matmul(kernel) is not None:
        return None
    return "reduction" if any(n.is_reduction for n in nests) else "spatial"


class _Costly(StmtVisitor):
    def __init__(self):
        self.found = False

    def visit_Call(self, expr: TirCall) -> None:
        self.found = self.found or expr.intrinsic not in _CHEAP_INTRINSICS
        super().visit_Call(expr)


def _is_cheap(kernel: PrimFunc) -> bool:
    finder = _Costly()
    finder.visit_stmt(kernel.body)
    return not finder.found


@dataclass(frozen=True, slots=True)
class NestShape:
    """One loop nest of a call's kernel, in the graph's dims: loop extents, outermost
    first, and whether each loop is spatial or a reduction."""

    extents: tuple[Dim, ...]
    kinds: tuple[str, ...]

    @property
    def is_reduction(self) -> bool:
        """True when the nest reduces."""
        return "reduce" in self.kinds

    def rows(self) -> tuple[Dim, ...] | None:
        """A reduction's kept axes without trailing size-1 ones (``(n, 1)`` -> ``(n,)``),
        or None when it keeps an axis after a reduced one."""
        kept = 0
        while kept < len(self.kinds) and self.kinds[kept] == "spatial":
            kept += 1
        if "spatial" in self.kinds[kept:]:
            return None
        rows = list(self.extents[:kept])
        while rows and arith.compare(rows[-1], "==", 1) is True:
            rows.pop()
        return tuple(rows)


@dataclass
class FusableCall:
    """A ``call_tir`` binding fusion may merge: its kernel, kind and operands."""

    position: int
    binding: Binding
    kernel: PrimFunc
    kind: str
    operands: tuple[Expr, ...]
    tir_vars: tuple[Dim, ...]
    _nests: tuple[NestShape, ...] | None = None
    _used: list[Var] | None = None

    @property
    def var(self) -> Var:
        """The variable the call binds."""
        return self.binding.var

    def symbols(self) -> dict[str, Dim]:
        """The kernel's symbols as graph dims (from operand shapes and tir_vars)."""
        infos = [o.info for o in self.operands] + [self.binding.var.info]
        values: dict[str, Dim] = {}
        for source in self.kernel.symbol_sources():
            if source.scalar is not None:
                values[source.sym.name] = self.tir_vars[source.scalar]
                continue
            info = infos[source.param]
            shape = info.shape if isinstance(info, TensorInfo) else ()
            values[source.sym.name] = shape[source.axis]
        return values

    def nests(self) -> tuple[NestShape, ...]:
        """The kernel's loop nests in graph dims."""
        if self._nests is None:
            symbols = self.symbols()
            shapes = []
            for nest in simple_nests(self.kernel) or ():
                extents = tuple(arith.subs(lp.extent, symbols) for lp in nest.loops)
                shapes.append(NestShape(extents, nest.kinds()))
            self._nests = tuple(shapes)
        return self._nests

    def shape(self) -> tuple[Dim, ...]:
        """The shape of the call's result."""
        return tuple(self.binding.var.info.shape)  # type: ignore[union-attr]

    def used(self) -> list[Var]:
        """The variables the call reads, once per read (``walk.used_vars``, computed once)."""
        if self._used is None:
            self._used = used_vars(self.binding.value)
        return self._used


def as_fusable(position: int, binding: Binding, mod: IRModule) -> FusableCall | None:
    """The binding as a :class:`FusableCall`, or None when fusion must leave it alone."""
    call = binding.value
    if not isinstance(binding, Binding) or not isinstance(call, Call) or call.op is not CALL_TIR:
        return None
    if isinstance(call.attrs, LegalizedAttrs) or not isinstance(call.info, TensorInfo):
        return None
    if call.info.shape is None or not isinstance(call.args[0], GlobalVar):
        return None
    if not isinstance(call.args[1], Tuple):
        return None
    kernel = mod.functions.get(call.args[0].name)
    kind = kernel_kind(kernel)
    if kind is None:
        return None
    operands = tuple(call.args[1].fields)
    if not all(_is_operand(o) for o in operands):
        return None
    tir_vars: tuple[Dim, ...] = ()
    if len(call.args) > 2:
        if not isinstance(call.args[2], ShapeExpr):
            return None
        tir_vars = tuple(call.args[2].values)
    return FusableCall(position, binding, kernel, kind, operands, tir_vars)


def _is_operand(expr: Expr) -> bool:
    if isinstance(expr, (Var, Constant)):
        info = expr.info
        return (isinstance(info, TensorInfo) and info.shape is not None) or isinstance(
            info, PrimInfo
        )
    return isinstance(expr, PrimValue)


def _equal(a: Sequence[Dim], b: Sequence[Dim]) -> bool:
    return len(a) == len(b) and all(arith.prove_equal(x, y) for x, y in zip(a, b))


@dataclass
class Group:
    """Calls that become one kernel; ``members`` in program order once complete."""

    members: list[FusableCall] = field(default_factory=list)

    def readers(self, var: Var) -> list[FusableCall]:
        """The members reading ``var``."""
        return [m for m in self.members if var in m.operands]

    def uses(self, var: Var) -> int:
        """How many times the members read ``var``."""
        return sum(m.used().count(var) for m in self.members)


def _rows(members: Sequence[FusableCall]) -> tuple[Dim, ...] | None:
    """The common rows of the members' reductions; None when they differ or one has
    none (a reduction over every axis)."""
    found: tuple[Dim, ...] | None = None
    for member in members:
        for nest in member.nests():
            if not nest.is_reduction:
                continue
            rows = nest.rows()
            if not rows or (found is not None and not _equal(rows, found)):
                return None
            found = rows
    return found


def _over_rows(member: FusableCall, rows: tuple[Dim, ...]) -> bool:
    """Every nest of the member iterates over ``rows`` first."""
    return all(_equal(nest.extents[: len(rows)], rows) for nest in member.nests())


def _row_group(members: Sequence[FusableCall]) -> bool:
    rows = _rows(members)
    if rows is None:
        return False
    for member in members:
        if member.kind == "reduction" or _over_rows(member, rows):
            continue
        if not (_is_cheap(member.kernel) and len(_readers(members, member.var)) == 1):
            return False
    return True


def _readers(members: Sequence[FusableCall], var: Var) -> list[FusableCall]:
    return [m for m in members if var in m.operands]


def _broadcasts_to(shape: Sequence[Dim], target: Sequence[Dim]) -> bool:
    """``shape`` has ``target``'s rank and each of its dims is 1 or ``target``'s."""
    return len(shape) == len(target) and all(
        arith.compare(a, "==", 1) is True or arith.prove_equal(a, b) for a, b in zip(shape, target)
    )


def _joins(group: Group, producer: FusableCall, relaxed: bool) -> bool:
    """Whether ``producer`` may join ``group`` (see the module doc); ``relaxed`` also
    lets a costly value broadcast along the rows (a row statistic's ``sqrt``) join an
    elementwise group, in the hope that its reduction joins next."""
    members = [*group.members, producer]
    if any(m.kind == "reduction" for m in members):
        return _row_group(members)
    if _is_cheap(producer.kernel):
        return True
    readers = group.readers(producer.var)
    if all(_equal(r.shape(), producer.shape()) for r in readers):
        return True
    return relaxed and all(_broadcasts_to(producer.shape(), r.shape()) for r in readers)


def _valid(group: Group) -> bool:
    """A relaxed group is kept when it became a row kernel, or when every costly
    member has the shape of the members reading it (no per-element recomputation)."""
    if any(m.kind == "reduction" for m in group.members):
        return True  # every join checked the row structure
    return all(
        _is_cheap(m.kernel) or all(_equal(r.shape(), m.shape()) for r in group.readers(m.var))
        for m in group.members
    )


def _grow(root: FusableCall, producer: dict, taken: set[int], uses: Counter, relaxed: bool):
    """The group grown backwards from ``root`` (its members' positions not in ``taken``)."""
    group = Group([root])
    inside = {root.position}
    grown = True
    while grown:
        grown = False
        for member in list(group.members):
            for operand in member.operands:
                candidate = producer.get(operand) if isinstance(operand, Var) else None
                if candidate is None or candidate.position in taken | inside:
                    continue
                if group.uses(candidate.var) != uses[candidate.var]:
                    continue
                if _joins(group, candidate, relaxed):
                    group.members.append(candidate)
                    inside.add(candidate.position)
                    grown = True
    return group


def fusion_groups(calls: Sequence[FusableCall], uses: Counter) -> list[Group]:
    """The groups of two or more calls (see the module doc); ``uses`` counts every
    variable's reads in the function."""
    producer = {call.var: call for call in calls}
    taken: set[int] = set()
    groups: list[Group] = []
    for root in reversed(calls):
        if root.position in taken:
            continue
        group = _grow(root, producer, taken, uses, relaxed=True)
        if not _valid(group):
            group = _grow(root, producer, taken, uses, relaxed=False)
        taken |= {m.position for m in group.members}
        if len(group.members) > 1:
            group.members.sort(key=lambda m: m.position)
            groups.append(group)
    return groups
