"""Merging a chain of kernels into one kernel that reads and writes each tensor once.

The graph pass :mod:`relaxjax.passes.fuse` groups calls like
``gelu(layer_norm(x) * g + b)``; this module builds the group's kernel. The stages'
bodies run one after the other under one root block; a tensor passed from one stage
to the next becomes a buffer of the merged kernel, and is then inlined away where
the schedule primitives allow it (``compute_inline`` of an elementwise producer,
``reverse_compute_inline`` of an elementwise consumer of a norm)::

    layer_norm(x, g, b) -> t0; multiply(t0, g) -> t1; add(t1, b) -> t2; gelu(t2) -> y
                        |
    for i0, i1: layer_norm[i0, i1] = gelu((norm(x)[i0, i1]) * g[i1] + b[i1])

Each stage's kernel symbols are replaced by the dims of the tensors it is called on
(``merge_kernels`` gets them as ``symbols``), so the merged kernel's shapes are the
graph's; those are then renamed to canonical kernel symbols ``d0, d1, ...``.
:func:`kernel_symbol_values` says which graph dims the merged kernel's scalar
parameters take.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from relaxjax import arith
from relaxjax.errors import ScheduleError
from relaxjax.schedule.rules.patterns import root_block
from relaxjax.schedule.schedule import Schedule
from relaxjax.tir.analysis import iter_blocks
from relaxjax.tir.buffer import Buffer
from relaxjax.tir.expr import Var
from relaxjax.tir.function import PrimFunc
from relaxjax.tir.functor import StmtMutator, StmtVisitor, substitute
from relaxjax.tir.stmt import Block, BlockRealize, For, IterVar, LetStmt, Stmt, seq

__all__ = ["Stage", "merge_kernels"]

Dim = arith.Dim


@dataclass(frozen=True, slots=True)
class Stage:
    """One kernel of a chain: ``kernel`` (one output), its symbols' values as dims of
    the merged kernel (``symbols``: kernel symbol name -> dim), and where each of its
    inputs comes from: ``("input", i)`` (the merged kernel's input ``i``) or
    ``("stage", s)`` (the output of stage ``s``, an earlier one)."""

    kernel: PrimFunc
    symbols: Mapping[str, Dim]
    sources: tuple[tuple[str, int], ...]


class _Names(StmtVisitor):
    """Every name a kernel body defines (loops, iterators, lets, blocks, buffers)."""

    def __init__(self):
        self.syms: dict[str, arith.Sym] = {}
        self.vars: dict[str, Var] = {}
        self.blocks: set[str] = set()
        self.buffers: dict[str, Buffer] = {}

    def visit_For(self, stmt: For) -> None:
        self.syms[stmt.var.name] = stmt.var
        super().visit_For(stmt)

    def visit_iter_var(self, iv: IterVar) -> None:
        self.syms[iv.var.name] = iv.var

    def visit_Block(self, stmt: Block) -> None:
        self.blocks.add(stmt.name)
        for iv in stmt.iter_vars:
            self.syms[iv.var.name] = iv.var
        for buffer in stmt.alloc_buffers:
            self.buffers[buffer.name] = buffer
        super().visit_Block(stmt)

    def visit_LetStmt(self, stmt: LetStmt) -> None:
        if isinstance(stmt.var, arith.Sym):
            self.syms[stmt.var.name] = stmt.var
        else:
            self.vars[stmt.var.name] = stmt.var
        super().visit_LetStmt(stmt)


class _Rebuffer(StmtMutator):
    """Buffers swapped for others and blocks renamed, everywhere."""

    def __init__(self, buffers: Mapping[Buffer, Buffer], blocks: Mapping[str, str]):
        self.buffers, self.blocks = buffers, blocks

    def visit_buffer(self, buffer: Buffer) -> Buffer:
        return self.buffers.get(buffer, buffer)

    def visit_buffer_def(self, buffer: Buffer) -> Buffer:
        return self.buffers.get(buffer, buffer)

    def visit_Block(self, stmt: Block) -> Stmt:
        new = super().visit_Block(stmt)
        name = self.blocks.get(stmt.name)
        if name is None:
            return new
        return Block(
            name,
            new.iter_vars,
            new.reads,
            new.writes,
            new.init,
            new.body,
            new.alloc_buffers,
            new.annotations,
        )


def _fresh(name: str, taken: set[str]) -> str:
    candidate, count = name, 0
    while candidate in taken:
        count += 1
        candidate = f"{name}_{count}"
    taken.add(candidate)
    return candidate


def _stage_body(
    stage: Stage, params: Sequence[Buffer], taken: set[str]
) -> tuple[Stmt, tuple[Buffer, ...]]:
    """The stage's root body (and root allocations) with its symbols substituted, its
    params replaced by ``params`` and its own names made unique among ``taken``."""
    kernel = stage.kernel
    root = root_block(kernel)
    if root is None:
        raise ScheduleError(f"merge: kernel {kernel.name} has no root block")
    symbols = {name: dim for name, dim in stage.symbols.items()}
    body = Block("root", (), (), (), None, root.body, root.alloc_buffers)
    body = substitute(body, symbols)
    names = _Names()
    names.visit_stmt(body)
    renames: dict[object, object] = {}
    for name, sym in names.syms.items():
        if name in taken:
            renames[sym] = arith.sym(_fresh(name, taken))
        else:
            taken.add(name)
    for name, var in names.vars.items():
        if name in taken:
            renames[var] = Var(_fresh(name, taken), var.dtype)
        else:
            taken.add(name)
    if renames:
        body = substitute(body, renames)
    buffers: dict[Buffer, Buffer] = {}
    own = _Names()
    own.visit_stmt(body)
    substituted_params = [substitute_buffer(p, symbols) for p in kernel.params]
    for old, new in zip(substituted_params, params):
        buffers[old] = new
    for name, buffer in own.buffers.items():
        if name in taken:
            buffers[buffer] = Buffer(
                _fresh(name, taken), buffer.shape, buffer.dtype, buffer.strides, buffer.scope
            )
        else:
            taken.add(name)
    blocks = {}
    for name in sorted(own.blocks - {"root"}):
        blocks[name] = _fresh(name, taken) if name in taken else name
        taken.add(blocks[name])
    body = _Rebuffer(buffers, blocks).visit_stmt(body)
    assert isinstance(body, Block)
    return body.body, body.alloc_buffers


def substitute_buffer(buffer: Buffer, symbols: Mapping[str, Dim]) -> Buffer:
    """``buffer`` with its shape's symbols replaced."""
    shape = tuple(arith.subs(d, symbols) if not isinstance(d, int) else d for d in buffer.shape)
    strides = (
        None
        if buffer.strides is None
        else tuple(arith.subs(d, symbols) if not isinstance(d, int) else d for d in buffer.strides)
    )
    if shape == buffer.shape and strides == buffer.strides:
        return buffer
    return Buffer(buffer.name, shape, buffer.dtype, strides, buffer.scope)


def _internal_names(stages: Sequence[Stage]) -> set[str]:
    names: set[str] = set()
    for stage in stages:
        found = _Names()
        found.visit_stmt(stage.kernel.body)
        names |= set(found.syms) | set(found.vars) | found.blocks | set(found.buffers)
        names |= {p.name for p in stage.kernel.params}
    return names


def _graph_symbols(inputs: Sequence[Buffer], stages: Sequence[Stage]) -> list[arith.Sym]:
    order: list[arith.Sym] = []
    dims = [d for b in inputs for d in b.shape]
    dims += [d for stage in stages for d in stage.symbols.values()]
    for dim in dims:
        for sym in sorted(arith.free_symbols(dim), key=lambda s: s.name):
            if sym not in order:
                order.append(sym)
    return order


#: Merges already made, by their arguments: the fused kernels of identical layers are
#: made once per process (bounded: cleared when full).
_MERGED: dict[tuple, tuple[PrimFunc, tuple[arith.Sym, ...]]] = {}
_MERGED_MAX = 1024


def merge_kernels(
    name: str, inputs: Sequence[Buffer], stages: Sequence[Stage]
) -> tuple[PrimFunc, tuple[arith.Sym, ...]]:
    """One kernel running ``stages`` in order on ``inputs`` (buffers whose shapes are the
    graph's dims), writing the last stage's output; then intermediates are inlined.

    Returns the kernel and, for each of its scalar params, the graph symbol whose value
    it takes (the call's ``tir_vars``). Raises ``ScheduleError`` when a stage is not a
    one-output kernel with a root block. The same arguments (the same chain of kernels in
    every layer of a stack) give the result of the first merge, made once.
    """
    key = (
        name,
        tuple(inputs),
        tuple((st.kernel, tuple(st.symbols.items()), st.sources) for st in stages),
    )
    found = _MERGED.get(key)
    if found is None:
        found = _merge(name, inputs, stages)
        if len(_MERGED) >= _MERGED_MAX:
            _MERGED.clear()
        _MERGED[key] = found
    return found


def _merge(
    name: str, inputs: Sequence[Buffer], stages: Sequence[Stage]
) -> tuple[PrimFunc, tuple[arith.Sym, ...]]:
    taken = _internal_names(stages) | {b.name for b in inputs}
    graph = _graph_symbols(inputs, stages)
    canon = {sym.name: arith.sym(_fresh(f"d{i}", taken)) for i, sym in enumerate(graph)}
    inputs = [substitute_buffer(b, canon) for b in inputs]
    stages = [
        Stage(st.kernel, {k: arith.subs(v, canon) for k, v in st.symbols.items()}, st.sources)
        for st in stages
    ]
    taken = {b.name for b in inputs} | {s.name for s in canon.values()}
    outputs: list[Buffer] = []
    bodies: list[Stmt] = []
    allocs: list[Buffer] = []
    for position, stage in enumerate(stages):
        kernel = stage.kernel
        if kernel.num_outputs != 1 or len(stage.sources) != len(kernel.inputs):
            raise ScheduleError(f"merge: kernel {kernel.name} does not fit its call")
        params = [
            inputs[index] if kind == "input" else outputs[index] for kind, index in stage.sources
        ]
        out = substitute_buffer(kernel.outputs[0], stage.symbols)
        out = Buffer(_fresh(out.name, taken), out.shape, out.dtype, None, "global")
        outputs.append(out)
        body, stage_allocs = _stage_body(stage, [*params, out], taken)
        bodies.append(body)
        allocs.extend(stage_allocs)
        if position < len(stages) - 1:
            allocs.append(out)
    params = (*inputs, outputs[-1])
    bound = {d.name for p in params for d in p.shape if isinstance(d, arith.Sym)}
    scalars = [sym for sym in graph if canon[sym.name].name not in bound]
    root = BlockRealize((), True, Block("root", (), (), (), None, seq(*bodies), tuple(allocs)))
    scalar_params = tuple(canon[s.name] for s in scalars)
    kernel = PrimFunc(name, params, root, 1, scalar_params)
    return _inline(kernel), tuple(scalars)


def _writers(func: PrimFunc) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for realize in iter_blocks(func.body):
        for region in realize.block.writes:
            found.setdefault(region.buffer.name, []).append(realize.block.name)
    return found


def _readers(func: PrimFunc, buffer: str) -> list[str]:
    return [
        r.block.name
        for r in iter_blocks(func.body)
        if any(region.buffer.name == buffer for region in r.block.reads)
    ]


def _inline(func: PrimFunc) -> PrimFunc:
    """Inline the intermediates of a merged kernel that one block reads, where the
    primitives allow it; an intermediate several blocks read stays for the rules."""
    sch = Schedule(func)
    output = func.outputs[0].name
    progress = True
    while progress:
        progress = False
        root = root_block(sch.func)
        if root is None:
            break
        for buffer in root.alloc_buffers:
            writers = _writers(sch.func).get(buffer.name, [])
            if len(writers) != 1 or buffer.name == output:
                continue
            readers = _readers(sch.func, buffer.name)
            if len(readers) != 1:
                continue  # the rules decide: a row buffer, or recomputed per reader
            if _try(sch.compute_inline, sch.get_block(writers[0])):
                progress = True
                break
            if _try(sch.reverse_compute_inline, sch.get_block(readers[0])):
                progress = True
                break
    return sch.func


def _try(step, *args) -> bool:
    try:
        step(*args)
        return True
    except ScheduleError:
        return False
