"""TIR statements: loops, blocks, stores, lets, conditionals, allocations, sequences.

Blocks follow TVM: a :class:`Block` names a unit of computation with spatial and
reduction iterators (:class:`IterVar`), the regions it reads and writes, an optional
``init`` (run when every reduction iterator is 0) and local ``alloc_buffers``; a
:class:`BlockRealize` instantiates it with one value per iterator (dims of the
enclosing loop variables) under a ``predicate``. Inside a block only its own
iterators (and the kernel's symbols) may be used, never the enclosing loop variables.

All nodes are frozen, validated dataclasses; ``repr`` is the printed text.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from relaxjax import arith
from relaxjax.arith import Dim
from relaxjax.tir.buffer import Buffer, BufferRegion, as_dim
from relaxjax.tir.expr import BufferLoad, IndexExpr, PrimExpr, Var, as_expr, normalize_indices

FOR_KINDS: tuple[str, ...] = ("serial", "parallel", "vectorized", "unrolled", "thread_binding")
THREAD_TAGS: tuple[str, ...] = (
    "blockIdx.x",
    "blockIdx.y",
    "blockIdx.z",
    "threadIdx.x",
    "threadIdx.y",
    "threadIdx.z",
)
ITER_KINDS: tuple[str, ...] = ("spatial", "reduce")

AttrScalar = bool | int | float | str
AttrValue = AttrScalar | tuple
Annotations = tuple[tuple[str, AttrValue], ...]


def as_annotations(value: object, what: str) -> Annotations:
    """Annotations as sorted ``(key, value)`` pairs; values are scalars or tuples of them."""
    if value is None:
        return ()
    items = value.items() if isinstance(value, Mapping) else value
    pairs = []
    for item in items:
        if not (isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], str)):
            raise TypeError(f"{what}: annotations must map str keys to values, got {item!r}")
        key, val = item
        pairs.append((key, _check_attr_value(val, f"{what}: annotation {key!r}")))
    keys = [k for k, _ in pairs]
    if len(set(keys)) != len(keys):
        raise ValueError(f"{what}: duplicate annotation keys in {keys}")
    return tuple(sorted(pairs))


def _check_attr_value(value: object, what: str) -> AttrValue:
    if isinstance(value, (list, tuple)):
        return tuple(_check_attr_value(v, what) for v in value)
    if isinstance(value, (bool, int, float, str)):
        return value
    raise TypeError(f"{what}: value must be a bool, int, float, str or a tuple of them")


class Stmt:
    """Base of TIR statements."""

    __slots__ = ()

    def __repr__(self) -> str:
        from relaxjax.tir.printer import stmt_text

        return stmt_text(self)


def _check_stmt(value: object, what: str) -> None:
    if not isinstance(value, Stmt):
        raise TypeError(f"{what} must be a Stmt, got {type(value).__name__} {value!r}")


def _check_sym(value: object, what: str) -> None:
    if not isinstance(value, arith.Sym):
        raise TypeError(f"{what} must be an arith.Sym, got {type(value).__name__} {value!r}")


def as_condition(value: object, what: str) -> PrimExpr:
    """A bool PrimExpr from ``value`` (Python bools allowed)."""
    expr = as_expr(value)
    if expr.dtype != "bool":
        raise TypeError(f"{what} must be a bool expression, got {expr.dtype} {expr!r}")
    return expr


@dataclass(frozen=True, slots=True, repr=False)
class For(Stmt):
    """``for var in [start, start + extent)`` of a ``kind`` (:data:`FOR_KINDS`).

    A ``thread_binding`` loop maps its iterations to GPU threads named by
    ``thread_tag`` (``"threadIdx.x"``, ``"blockIdx.x"``, ...).
    """

    var: arith.Sym
    start: Dim
    extent: Dim
    kind: str
    body: Stmt
    annotations: Annotations = ()
    thread_tag: str | None = None

    def __post_init__(self) -> None:
        _check_sym(self.var, "a loop variable")
        object.__setattr__(self, "start", as_dim(self.start, f"start of loop {self.var}"))
        extent = as_dim(self.extent, f"extent of loop {self.var}")
        if isinstance(extent, int) and extent < 0:
            raise ValueError(f"loop {self.var} has negative extent {extent}")
        object.__setattr__(self, "extent", extent)
        if self.kind not in FOR_KINDS:
            raise ValueError(f"loop {self.var}: kind must be one of {FOR_KINDS}, got {self.kind!r}")
        _check_stmt(self.body, f"body of loop {self.var}")
        anns = as_annotations(self.annotations, f"loop {self.var}")
        object.__setattr__(self, "annotations", anns)
        if self.kind == "thread_binding":
            if self.thread_tag not in THREAD_TAGS:
                raise ValueError(
                    f"loop {self.var}: a thread_binding loop needs a thread_tag in "
                    f"{THREAD_TAGS}, got {self.thread_tag!r}"
                )
        elif self.thread_tag is not None:
            raise ValueError(
                f"loop {self.var}: thread_tag {self.thread_tag!r} needs kind 'thread_binding', "
                f"got {self.kind!r}"
            )


@dataclass(frozen=True, slots=True)
class IterVar:
    """A block iterator ``var`` over ``[0, extent)``, ``"spatial"`` or ``"reduce"``."""

    var: arith.Sym
    extent: Dim
    kind: str = "spatial"

    def __post_init__(self) -> None:
        _check_sym(self.var, "a block iterator")
        extent = as_dim(self.extent, f"extent of block iterator {self.var}")
        if isinstance(extent, int) and extent < 0:
            raise ValueError(f"block iterator {self.var} has negative extent {extent}")
        object.__setattr__(self, "extent", extent)
        if self.kind not in ITER_KINDS:
            raise ValueError(
                f"block iterator {self.var}: kind must be one of {ITER_KINDS}, got {self.kind!r}"
            )


@dataclass(frozen=True, slots=True, repr=False)
class Block(Stmt):
    """A named computation over ``iter_vars``; see the module docstring.

    ``reads``/``writes`` are the regions touched (in terms of the iterators);
    ``init`` runs before the first reduction step of each spatial point;
    ``alloc_buffers`` live for one execution of the block.
    """

    name: str
    iter_vars: tuple[IterVar, ...]
    reads: tuple[BufferRegion, ...]
    writes: tuple[BufferRegion, ...]
    init: Stmt | None
    body: Stmt
    alloc_buffers: tuple[Buffer, ...] = ()
    annotations: Annotations = ()

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"a block needs a non-empty name, got {self.name!r}")
        what = f"block {self.name!r}"
        for field in ("reads", "writes"):
            # A load (A[i, j]) stands for the point region it reads.
            regions = tuple(
                BufferRegion.point(r.buffer, r.indices) if isinstance(r, BufferLoad) else r
                for r in getattr(self, field)
            )
            object.__setattr__(self, field, regions)
        for field, kind in (
            ("iter_vars", IterVar),
            ("reads", BufferRegion),
            ("writes", BufferRegion),
            ("alloc_buffers", Buffer),
        ):
            items = tuple(getattr(self, field))
            for item in items:
                if not isinstance(item, kind):
                    raise TypeError(f"{what}: {field} must hold {kind.__name__}, got {item!r}")
            object.__setattr__(self, field, items)
        names = [iv.var.name for iv in self.iter_vars]
        if len(set(names)) != len(names):
            raise ValueError(f"{what}: iterator names repeat: {names}")
        if self.init is not None:
            _check_stmt(self.init, f"init of {what}")
            if not self.is_reduction:
                raise ValueError(f"{what} has an init but no reduce iterator")
        _check_stmt(self.body, f"body of {what}")
        object.__setattr__(self, "annotations", as_annotations(self.annotations, what))

    @property
    def is_reduction(self) -> bool:
        """True when some iterator is a reduction iterator."""
        return any(iv.kind == "reduce" for iv in self.iter_vars)


@dataclass(frozen=True, slots=True, repr=False)
class BlockRealize(Stmt):
    """Runs ``block`` with its iterators bound to ``iter_values`` when ``predicate`` holds."""

    iter_values: tuple[Dim, ...]
    predicate: PrimExpr
    block: Block

    def __post_init__(self) -> None:
        if not isinstance(self.block, Block):
            raise TypeError(f"BlockRealize needs a Block, got {type(self.block).__name__}")
        what = f"block {self.block.name!r}"
        values = tuple(self.iter_values)
        if len(values) != len(self.block.iter_vars):
            raise ValueError(
                f"{what} has {len(self.block.iter_vars)} iterator(s) but {len(values)} "
                "iter value(s) were given"
            )
        values = tuple(
            as_dim(v, f"{what}: value of iterator {iv.var}")
            for v, iv in zip(values, self.block.iter_vars)
        )
        object.__setattr__(self, "iter_values", values)
        object.__setattr__(self, "predicate", as_condition(self.predicate, f"predicate of {what}"))


@dataclass(frozen=True, slots=True, repr=False)
class BufferStore(Stmt):
    """``buffer[indices] = value``; ``value`` has the buffer's dtype."""

    buffer: Buffer
    value: PrimExpr
    indices: tuple[Dim | PrimExpr, ...]

    def __post_init__(self) -> None:
        if not isinstance(self.buffer, Buffer):
            raise TypeError(f"BufferStore needs a Buffer, got {type(self.buffer).__name__}")
        object.__setattr__(self, "indices", normalize_indices(self.buffer, self.indices))
        value = (
            as_expr(self.value, self.buffer.dtype)
            if not isinstance(self.value, PrimExpr)
            else self.value
        )
        if value.dtype != self.buffer.dtype:
            raise TypeError(
                f"cannot store a {value.dtype} value into buffer {self.buffer.name} of dtype "
                f"{self.buffer.dtype}: {value!r}"
            )
        object.__setattr__(self, "value", value)


@dataclass(frozen=True, slots=True, repr=False)
class LetStmt(Stmt):
    """Binds ``var`` to ``value`` in ``body``.

    ``var`` is a :class:`Var` (a data value of ``value``'s dtype) or an ``arith.Sym``
    (an ``int64`` index usable in index math; ``value`` is then stored as a PrimExpr).
    """

    var: arith.Sym | Var
    value: PrimExpr
    body: Stmt

    def __post_init__(self) -> None:
        value = self.value
        if isinstance(self.var, arith.Sym):
            value = as_expr(value)
            if value.dtype != "int64":
                raise TypeError(
                    f"let {self.var}: an index variable needs an int64 value, "
                    f"got {value.dtype} {value!r}"
                )
        elif isinstance(self.var, Var):
            value = as_expr(value, self.var.dtype) if not isinstance(value, PrimExpr) else value
            if value.dtype != self.var.dtype:
                raise TypeError(
                    f"let {self.var.name}: variable of dtype {self.var.dtype} bound "
                    f"to a {value.dtype} value {value!r}"
                )
        else:
            raise TypeError(f"a let binds a Var or an arith.Sym, got {self.var!r}")
        object.__setattr__(self, "value", value)
        _check_stmt(self.body, f"body of let {self.var}")


@dataclass(frozen=True, slots=True, repr=False)
class IfThenElse(Stmt):
    """``if condition: then_case else: else_case``."""

    condition: PrimExpr
    then_case: Stmt
    else_case: Stmt | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "condition", as_condition(self.condition, "an if condition"))
        _check_stmt(self.then_case, "then branch")
        if self.else_case is not None:
            _check_stmt(self.else_case, "else branch")


@dataclass(frozen=True, slots=True, repr=False)
class Allocate(Stmt):
    """A temporary ``buffer`` (shape may be symbolic) that lives during ``body``."""

    buffer: Buffer
    body: Stmt

    def __post_init__(self) -> None:
        if not isinstance(self.buffer, Buffer):
            raise TypeError(f"Allocate needs a Buffer, got {type(self.buffer).__name__}")
        _check_stmt(self.body, f"body of allocate {self.buffer.name}")


@dataclass(frozen=True, slots=True, repr=False)
class SeqStmt(Stmt):
    """Statements run in order: at least two, nested sequences flattened (see :func:`seq`)."""

    stmts: tuple[Stmt, ...]

    def __post_init__(self) -> None:
        flat: list[Stmt] = []
        for stmt in self.stmts:
            _check_stmt(stmt, "a sequence element")
            flat.extend(stmt.stmts if isinstance(stmt, SeqStmt) else (stmt,))
        if len(flat) < 2:
            raise ValueError("a SeqStmt holds at least two statements; use tir.seq(...)")
        object.__setattr__(self, "stmts", tuple(flat))


@dataclass(frozen=True, slots=True, repr=False)
class Evaluate(Stmt):
    """Evaluates ``value`` for its effects (none for pure expressions: a no-op)."""

    value: PrimExpr

    def __post_init__(self) -> None:
        object.__setattr__(self, "value", as_expr(self.value))


def seq(*stmts: Stmt | Sequence[Stmt]) -> Stmt:
    """The sequence of ``stmts`` (flattened): the statement itself when there is one.

    An empty sequence is the no-op ``Evaluate(0)``.
    """
    flat: list[Stmt] = []
    for item in stmts:
        items = item if isinstance(item, (list, tuple)) else (item,)
        for stmt in items:
            _check_stmt(stmt, "a sequence element")
            flat.extend(stmt.stmts if isinstance(stmt, SeqStmt) else (stmt,))
    if not flat:
        return Evaluate(IndexExpr(0))
    return flat[0] if len(flat) == 1 else SeqStmt(tuple(flat))
