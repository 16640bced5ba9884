"""Which dependences a loop carries: the soundness test of parallel, vectorize, bind
and reorder.

A block *instance* is one execution of a block for one value of its iterators.
:func:`block_facts` checks what a block claims: each instance writes one element of
each written buffer, at indices that determine its spatial iterators and do not use
its reduction iterators, and reads written buffers only at that element (the
reduction's accumulator). Under that claim instances at different spatial points are
independent and instances at one spatial point form a reduction.

:func:`carried` then classifies a loop against every block below it: ``"none"`` when
different iterations touch different elements of every buffer written below it
(proven with :mod:`.itermap` for one block and with arith bounds across blocks),
``"reduction"`` when the only conflicts are reduction updates of an accumulator, and
``"dependent"`` otherwise, with the reason.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from relaxjax import arith
from relaxjax.arith import Dim
from relaxjax.schedule.itermap import determines
from relaxjax.tir.analysis import collect_accesses, relax_dim
from relaxjax.tir.buffer import Buffer
from relaxjax.tir.expr import BinOp, BufferLoad, PrimExpr
from relaxjax.tir.functor import StmtVisitor
from relaxjax.tir.stmt import (
    Allocate,
    Block,
    BlockRealize,
    BufferStore,
    For,
    LetStmt,
    Stmt,
)

COMMUTATIVE_OPS = ("+", "*", "min", "max")

LoopRange = tuple[arith.Sym, Dim, Dim]


@dataclass(frozen=True, slots=True)
class BlockFacts:
    """What one block's body guarantees; ``problem`` says why instances may conflict."""

    problem: str | None
    write_indices: tuple[tuple[Buffer, tuple[Dim, ...]], ...]
    commutative: bool

    def writes(self) -> dict[Buffer, tuple[Dim, ...]]:
        """Written buffer -> the indices every instance writes (iterator terms)."""
        return dict(self.write_indices)


def _body_accesses(block: Block):
    # Visiting the Block itself leaves out the buffers it allocates.
    return collect_accesses(block)


def _has_nested_block(block: Block) -> bool:
    found = []

    class _Finder(StmtVisitor):
        def visit_BlockRealize(self, stmt: BlockRealize) -> None:
            found.append(stmt)

    _Finder().visit_stmt(block.body)
    if block.init is not None:
        _Finder().visit_stmt(block.init)
    return bool(found)


def _uses_any(dim: Dim | PrimExpr, names: set[str]) -> bool:
    if isinstance(dim, PrimExpr):
        return True
    return not isinstance(dim, int) and any(s.name in names for s in arith.free_symbols(dim))


def _write_problem(block: Block, accesses) -> tuple[str | None, dict[Buffer, tuple]]:
    reduce_names = {iv.var.name for iv in block.iter_vars if iv.kind == "reduce"}
    writes: dict[Buffer, tuple] = {}
    for access in accesses:
        if not access.is_write:
            continue
        name = access.buffer.name
        inner = {var.name for var, _, _ in access.loops}
        if any(isinstance(i, PrimExpr) for i in access.indices):
            return f"block {block.name!r} writes {name} at data-dependent indices", writes
        if any(_uses_any(i, reduce_names | inner) for i in access.indices):
            return (
                f"block {block.name!r} writes {name}[{', '.join(map(str, access.indices))}], "
                "which varies with a reduction iterator or an inner loop",
                writes,
            )
        previous = writes.setdefault(access.buffer, access.indices)
        if previous != access.indices:
            return f"block {block.name!r} writes {name} at two different indices", writes
    return None, writes


def block_facts(block: Block) -> BlockFacts:
    """Checks the independence claim of ``block`` (see the module docstring)."""
    if _has_nested_block(block):
        return BlockFacts(f"block {block.name!r} contains other blocks", (), False)
    accesses = _body_accesses(block)
    problem, writes = _write_problem(block, accesses)
    if problem is None:
        spatial = {iv.var.name: iv.extent for iv in block.iter_vars if iv.kind == "spatial"}
        for buffer, indices in writes.items():
            for name in spatial:
                if not determines(indices, name, spatial):
                    problem = (
                        f"block {block.name!r} writes {buffer.name}"
                        f"[{', '.join(map(str, indices))}]: different values of its "
                        f"iterator {name} may write the same element"
                    )
                    break
            if problem:
                break
    if problem is None:
        for access in accesses:
            expected = writes.get(access.buffer)
            if not access.is_write and expected is not None and access.indices != expected:
                problem = (
                    f"block {block.name!r} reads {access.buffer.name} at "
                    f"[{', '.join(map(str, access.indices))}] besides writing it at "
                    f"[{', '.join(map(str, expected))}]"
                )
                break
    return BlockFacts(problem, tuple(writes.items()), _is_commutative(block))


def _is_commutative(block: Block) -> bool:
    """A reduction whose update is ``W[I] = W[I] op rhs`` with a commutative ``op``."""
    if not block.is_reduction:
        return True
    body = block.body
    if not isinstance(body, BufferStore) or not isinstance(body.value, BinOp):
        return False
    value = body.value
    if value.op not in COMMUTATIVE_OPS:
        return False
    accumulator = BufferLoad(body.buffer, body.indices)
    if value.a == accumulator:
        rhs = value.b
    elif value.b == accumulator:
        rhs = value.a
    else:
        return False
    return all(
        a.buffer != body.buffer
        for a in collect_accesses(BufferStore(body.buffer, rhs, body.indices))
        if not a.is_write
    )


@dataclass(frozen=True, slots=True)
class Carried:
    """The dependence a loop carries: ``kind`` in ``"none"``, ``"reduction"``,
    ``"dependent"``; ``reason`` explains the last two; ``commutative`` says whether
    every reduction it carries may run in another order."""

    kind: str
    reason: str = ""
    commutative: bool = True


@dataclass(frozen=True, slots=True)
class _Instance:
    realize: BlockRealize
    loops: tuple[LoopRange, ...]


class _Collector(StmtVisitor):
    """The top-level block instances under a statement, with the loops above each."""

    def __init__(self):
        self.loops: list[LoopRange] = []
        self.instances: list[_Instance] = []
        self.problem: str | None = None
        self.lets: set[str] = set()

    def visit_For(self, stmt: For) -> None:
        self.loops.append((stmt.var, stmt.start, stmt.extent))
        self.visit_stmt(stmt.body)
        self.loops.pop()

    def visit_BlockRealize(self, stmt: BlockRealize) -> None:
        self.instances.append(_Instance(stmt, tuple(self.loops)))

    def visit_BufferStore(self, stmt: BufferStore) -> None:
        self.problem = self.problem or f"a store to {stmt.buffer.name} is outside any block"

    def visit_LetStmt(self, stmt: LetStmt) -> None:
        self.lets.add(stmt.var.name)
        super().visit_LetStmt(stmt)

    def visit_Allocate(self, stmt: Allocate) -> None:
        self.problem = self.problem or f"buffer {stmt.buffer.name} is allocated outside blocks"


def _instances(root: Stmt) -> _Collector:
    collector = _Collector()
    collector.visit_stmt(root)
    return collector


def _subs(dim: Dim | PrimExpr, binding: Mapping[str, Dim]) -> Dim | PrimExpr:
    if isinstance(dim, (PrimExpr, int)):
        return dim
    return arith.subs(dim, binding)


def apart(e1, e2, var: arith.Sym, relax: tuple[LoopRange, ...]) -> bool:
    """Whether ``e1`` at one value of ``var`` and ``e2`` at another always differ, the
    loops in ``relax`` taking any values in their ranges."""
    if isinstance(e1, PrimExpr) or isinstance(e2, PrimExpr):
        return False
    s1 = arith.subs(e1, {var: var + 1}) - e1 if not isinstance(e1, int) else 0
    s2 = arith.subs(e2, {var: var + 1}) - e2 if not isinstance(e2, int) else 0
    if s1 != s2 or _uses_any(s1, {var.name} | {v.name for v, _, _ in relax}):
        return False
    if arith.compare(s1, ">", 0) is True:
        step = s1
    elif arith.compare(s1, "<", 0) is True:
        step = -s1
    else:
        return False
    r1, r2 = e1 - var * s1, e2 - var * s1
    if _uses_any(r1, {var.name}) or _uses_any(r2, {var.name}):
        return False
    b1, b2 = relax_dim(r1, relax), relax_dim(r2, relax)
    if b1 is None or b2 is None:
        return False
    return (
        arith.compare(b1[1] - b2[0], "<", step) is True
        and arith.compare(b2[1] - b1[0], "<", step) is True
    )


def _instance_accesses(instance: _Instance):
    """(buffer, indices in loop terms, is_write, relax loops) of one block instance."""
    block = instance.realize.block
    binding = {iv.var.name: v for iv, v in zip(block.iter_vars, instance.realize.iter_values)}
    result = []
    for access in _body_accesses(block):
        indices = tuple(_subs(i, binding) for i in access.indices)
        inner = tuple((v, _subs(s, binding), _subs(e, binding)) for v, s, e in access.loops)
        result.append((access.buffer, indices, access.is_write, inner))
    return result


def _cross_block(instances, var: arith.Sym, private: frozenset[Buffer]) -> str | None:
    per_instance = [(inst, _instance_accesses(inst)) for inst in instances]
    for inst_a, accesses_a in per_instance:
        for buffer, idx_a, is_write, inner_a in accesses_a:
            if not is_write or buffer in private:
                continue
            for inst_b, accesses_b in per_instance:
                if inst_b is inst_a:
                    continue
                for buffer_b, idx_b, _, inner_b in accesses_b:
                    if buffer_b != buffer:
                        continue
                    outer = _relax_for(inst_a, var)
                    outer += tuple(r for r in _relax_for(inst_b, var) if r not in outer)
                    relax = outer + inner_a + inner_b
                    if not any(apart(x, y, var, relax) for x, y in zip(idx_a, idx_b)):
                        return (
                            f"blocks {inst_a.realize.block.name!r} and "
                            f"{inst_b.realize.block.name!r} may access the same element of "
                            f"{buffer.name} in different iterations of loop {var.name}"
                        )
    return None


def _relax_for(instance: _Instance, var: arith.Sym) -> tuple[LoopRange, ...]:
    return tuple(r for r in instance.loops if r[0] != var)


def _block_carried(
    instance: _Instance, var: arith.Sym, lets: set[str], private: frozenset[Buffer]
) -> Carried:
    block = instance.realize.block
    facts = block_facts(block)
    values = instance.realize.iter_values
    written = [b.name for b, _ in facts.write_indices if b not in private]
    if not any(_uses_any(v, {var.name}) for v in values):
        if not written:
            return Carried("none")
        return Carried(
            "dependent",
            f"block {block.name!r} does not depend on loop {var.name}: every iteration "
            f"writes the same elements of {', '.join(written)}",
        )
    if facts.problem is not None:
        return Carried("dependent", facts.problem)
    if any(_uses_any(v, lets) for v in values):
        return Carried("dependent", f"block {block.name!r} is bound through let variables")
    kinds = {iv.kind for iv, v in zip(block.iter_vars, values) if _uses_any(v, {var.name})}
    if kinds == {"spatial", "reduce"}:
        return Carried(
            "dependent",
            f"loop {var.name} binds both spatial and reduction iterators of block {block.name!r}",
        )
    if kinds == {"reduce"} and written:
        return Carried(
            "reduction",
            f"loop {var.name} is a reduction loop of block {block.name!r}: its iterations "
            f"all update {', '.join(written)}",
            facts.commutative,
        )
    loops = {v.name: e for v, s, e in instance.loops if s == 0}
    if any(
        v.name not in loops and _uses_any(x, {v.name}) for v, _, _ in instance.loops for x in values
    ):
        return Carried("dependent", f"a loop above block {block.name!r} does not start at 0")
    spatial = [v for iv, v in zip(block.iter_vars, values) if iv.kind == "spatial"]
    if written and not determines(spatial, var.name, loops):
        return Carried(
            "dependent",
            f"cannot prove that different iterations of loop {var.name} write different "
            f"elements of {', '.join(written)} (block {block.name!r} is bound to "
            f"({', '.join(map(str, values))}))",
        )
    return Carried("none")


def carried(root: Stmt, var: arith.Sym, private: frozenset[Buffer] = frozenset()) -> Carried:
    """The dependence loop ``var`` carries among the block instances under ``root``
    (a loop at or above it; the loops under ``root`` other than ``var`` may take any
    value in their ranges). Buffers in ``private`` are private to the iterations of
    the loop (each has its own copy, :mod:`.privatize`): they carry nothing."""
    collected = _instances(root)
    if collected.problem is not None:
        return Carried("dependent", collected.problem)
    if _at_most_one_iteration(collected, var):
        return Carried("none")
    result = Carried("none")
    for instance in collected.instances:
        found = _block_carried(instance, var, collected.lets, private)
        if found.kind == "dependent":
            return found
        if found.kind == "reduction":
            commutative = result.commutative and found.commutative
            reason = result.reason or found.reason
            result = Carried("reduction", reason, commutative)
    if len(collected.instances) > 1:
        problem = _cross_block(collected.instances, var, private)
        if problem is not None:
            return Carried("dependent", problem)
    return result


def _at_most_one_iteration(collected: _Collector, var: arith.Sym) -> bool:
    """Whether loop ``var`` provably runs at most once: it carries nothing then."""
    for instance in collected.instances:
        for loop_var, _, extent in instance.loops:
            if loop_var == var:
                return arith.compare(extent, "<=", 1) is True
    return False
