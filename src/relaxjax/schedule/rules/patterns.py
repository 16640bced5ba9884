"""What a kernel looks like, as the rules see it: loop nests of one block each.

The compute builder (``te.create_prim_func``) and the ops' lowerings produce kernels
whose root block holds a sequence of *simple nests*: serial loops, one per block
iterator, around a single block bound to exactly those loops::

    for i in range(n):
        for k in range(768):
            with block("sum"):
                v_i = axis.spatial(n, i)
                v_k = axis.reduce(768, k)
                ...

Rules only schedule kernels of that shape (``simple_nests`` returns None for any
other, e.g. one a user already scheduled), and classify each nest by its block:
spatial (elementwise, broadcast, injective), or a reduction.
"""

from __future__ import annotations

from dataclasses import dataclass

from relaxjax import arith
from relaxjax.tir.buffer import Buffer
from relaxjax.tir.expr import BinOp, BufferLoad, IntImm
from relaxjax.tir.function import PrimFunc
from relaxjax.tir.functor import StmtVisitor
from relaxjax.tir.stmt import Block, BlockRealize, BufferStore, For, SeqStmt, Stmt

__all__ = ["MatmulMatch", "Nest", "match_matmul", "root_block", "simple_nests"]


@dataclass(frozen=True, slots=True)
class Nest:
    """A serial loop nest (``loops``, outermost first) around one block, one loop per
    block iterator, bound in order."""

    loops: tuple[For, ...]
    realize: BlockRealize

    @property
    def block(self) -> Block:
        """The block at the bottom of the nest."""
        return self.realize.block

    @property
    def name(self) -> str:
        """The block's name."""
        return self.realize.block.name

    @property
    def is_reduction(self) -> bool:
        """True when the block has a reduce iterator."""
        return self.realize.block.is_reduction

    def kinds(self) -> tuple[str, ...]:
        """The iterator kind (``"spatial"`` / ``"reduce"``) of each loop, outermost first."""
        return tuple(iv.kind for iv in self.block.iter_vars)

    def written(self) -> tuple[Buffer, ...]:
        """The buffers the block writes."""
        return tuple(region.buffer for region in self.block.writes)


def root_block(func: PrimFunc) -> Block | None:
    """The kernel's root block (``with block("root")`` around the whole body), if any."""
    body = func.body
    if isinstance(body, BlockRealize) and not body.block.iter_vars:
        return body.block
    return None


def _is_true(predicate: object) -> bool:
    return isinstance(predicate, IntImm) and predicate.dtype == "bool" and predicate.value == 1


def _nest(stmt: Stmt) -> Nest | None:
    loops: list[For] = []
    while isinstance(stmt, For):
        if stmt.kind != "serial" or stmt.annotations or not _is_zero(stmt.start):
            return None
        loops.append(stmt)
        stmt = stmt.body
    if not isinstance(stmt, BlockRealize) or not _is_true(stmt.predicate):
        return None
    block = stmt.block
    if block.alloc_buffers or len(block.iter_vars) != len(loops):
        return None
    for loop, iter_var, value in zip(loops, block.iter_vars, stmt.iter_values):
        if value != loop.var or arith.compare(loop.extent, "==", iter_var.extent) is not True:
            return None
    return Nest(tuple(loops), stmt)


def _is_zero(dim: object) -> bool:
    return isinstance(dim, int) and dim == 0


def simple_nests(func: PrimFunc) -> tuple[Nest, ...] | None:
    """The kernel's nests in order, or None when it is not a sequence of simple nests
    under a root block (see the module doc)."""
    root = root_block(func)
    if root is None or root.init is not None:
        return None
    parts = root.body.stmts if isinstance(root.body, SeqStmt) else (root.body,)
    nests = []
    for part in parts:
        nest = _nest(part)
        if nest is None:
            return None
        nests.append(nest)
    return tuple(nests)


# ----------------------------------------------------------------------------- matmul


@dataclass(frozen=True, slots=True)
class MatmulMatch:
    """A (batched) matrix product ``C[b.., i, j] (+)= f(A[.., i, k], B[.., k, j])``.

    ``update`` is the nest of the reduction (loops ``batch + (i, j, k)``); ``init`` the
    separate nest that zeroes ``C`` when the compute builder split it off (None when the
    update block has its own ``init``). ``output`` is the buffer the reduction
    accumulates into; when that is an intermediate, ``epilogue`` is the elementwise nest
    that turns it into the kernel's output (e.g. the op's ``k == 0`` case).
    """

    update: Nest
    init: Nest | None
    output: Buffer
    right_operands: tuple[Buffer, ...] = ()
    epilogue: Nest | None = None

    @property
    def batch(self) -> tuple[For, ...]:
        """The loops over batch axes, outermost first."""
        return self.update.loops[:-3]

    @property
    def i(self) -> For:
        """The loop over rows of the result."""
        return self.update.loops[-3]

    @property
    def j(self) -> For:
        """The loop over columns of the result."""
        return self.update.loops[-2]

    @property
    def k(self) -> For:
        """The reduction loop."""
        return self.update.loops[-1]


class _Loads(StmtVisitor):
    def __init__(self):
        self.loads: list[BufferLoad] = []

    def visit_BufferLoad(self, expr: BufferLoad) -> None:
        self.loads.append(expr)
        super().visit_BufferLoad(expr)


def _symbols_of(load: BufferLoad) -> set[str] | None:
    names: set[str] = set()
    for index in load.indices:
        if not isinstance(index, (int, arith.Expr)):
            return None
        names |= {s.name for s in arith.free_symbols(index)}
    return names


def _right_operands(
    rhs: object, vi: str, vj: str, vk: str, batch: set[str]
) -> tuple[Buffer, ...] | None:
    """The buffers read at (batch, k, j) when every load of the product reads at
    (batch, i, k) or at (batch, k, j) and both kinds occur; None otherwise."""
    finder = _Loads()
    finder.visit_expr(rhs)
    left, right = False, []
    for load in finder.loads:
        names = _symbols_of(load)
        if names is None or vk not in names:
            return None
        if names <= batch | {vi, vk} and vj not in names:
            left = True
        elif names <= batch | {vk, vj} and vi not in names:
            if load.buffer not in right:
                right.append(load.buffer)
        else:
            return None
    return tuple(right) if left and right else None


def _update_store(block: Block) -> BufferStore | None:
    store = block.body
    if not isinstance(store, BufferStore):
        return None
    spatial = tuple(iv.var for iv in block.iter_vars if iv.kind == "spatial")
    if tuple(store.indices) != spatial:
        return None
    value = store.value
    if not (isinstance(value, BinOp) and value.op == "+"):
        return None
    acc = value.a
    if not (isinstance(acc, BufferLoad) and acc.buffer == store.buffer):
        return None
    if tuple(acc.indices) != spatial:
        return None
    return store


def _is_init_of(nest: Nest, output: Buffer, update: Nest) -> bool:
    block = nest.block
    if nest.is_reduction or nest.written() != (output,):
        return False
    spatial_extents = [lp.extent for lp in update.loops[:-1]]
    return (
        len(nest.loops) == len(spatial_extents)
        and all(
            arith.compare(lp.extent, "==", e) is True for lp, e in zip(nest.loops, spatial_extents)
        )
        and isinstance(block.body, BufferStore)
    )


def _is_epilogue_of(nest: Nest, accumulator: Buffer, update: Nest, output: Buffer) -> bool:
    """An elementwise nest over the update's spatial domain writing the kernel output."""
    if nest.is_reduction or nest.written() != (output,):
        return False
    extents = [lp.extent for lp in update.loops[:-1]]
    same_domain = len(nest.loops) == len(extents) and all(
        arith.compare(lp.extent, "==", e) is True for lp, e in zip(nest.loops, extents)
    )
    reads = {region.buffer for region in nest.block.reads}
    return same_domain and accumulator in reads


def match_matmul(func: PrimFunc) -> MatmulMatch | None:
    """The matrix product ``func`` computes, or None when it is not one: nests
    ``[init], update, [epilogue]`` (see :class:`MatmulMatch`)."""
    nests = simple_nests(func)
    if nests is None or len(func.outputs) != 1:
        return None
    position = next((i for i, n in enumerate(nests) if n.is_reduction), None)
    if position is None or position > 1 or len(nests) - position > 2:
        return None
    update = nests[position]
    block = update.block
    kinds = update.kinds()
    if len(kinds) < 3 or kinds[-1] != "reduce" or "reduce" in kinds[:-1]:
        return None
    store = _update_store(block)
    if store is None:
        return None
    epilogue = nests[position + 1] if position + 1 < len(nests) else None
    if epilogue is None and store.buffer != func.outputs[0]:
        return None
    if epilogue is not None and not _is_epilogue_of(
        epilogue, store.buffer, update, func.outputs[0]
    ):
        return None
    names = [iv.var.name for iv in block.iter_vars]
    batch, (vi, vj, vk) = set(names[:-3]), names[-3:]
    right = _right_operands(store.value.b, vi, vj, vk, batch)
    if right is None:
        return None
    init = None
    if position == 1:
        if block.init is not None or not _is_init_of(nests[0], store.buffer, update):
            return None
        init = nests[0]
    elif block.init is None:
        return None
    return MatmulMatch(update, init, store.buffer, right, epilogue)
