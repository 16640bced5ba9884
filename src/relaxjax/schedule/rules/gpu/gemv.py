"""Matrix-vector products on the GPU (few rows: one-token decode): read the matrix once,
at the memory's bandwidth.

For ``C[i, j] = sum_k f(A[i, k], W[k, j])`` with at most ``gemv_rows`` rows (the
matrix read along its rows, ``W[k, j]``), a block takes ``C`` columns of ``W``: a
32-byte segment of each row (two threads of 128-bit loads, ``V`` elements each: 8
float32 or 16 float16 columns, so 512 or 256 blocks for 4096 columns). Its 256
threads split the reduction over ``S = 128`` slices (``threadIdx.z`` warps of
``threadIdx.y`` slices), slice ``s`` taking rows ``k = s, s + S, ...``: a warp reads
16 whole segments at once, every element of ``W`` is read by one thread, and each
thread keeps ``rows x V`` float32 accumulators in registers::

    for j_b in thread_binding(ceil(N / C), thread="blockIdx.x"):
        red[warps, rows, C] (shared)
        for tz, ty, tx in threadIdx.z (8 warps), threadIdx.y (16), threadIdx.x (2):
            acc[rows, V] = 0
            for k_step in range(K // (S * 4)):          # unguarded, 4 rows in flight
                for u in unrolled(4):
                    w[0:V] = W[(k_step * 4 + u) * S + slice, j_b * C + tx * V : ...]
                    acc[r, v] += f(A[r, k], w[v])       # float16: converted in registers
            for k_rest in range(...): ...               # the last rows, guarded
            acc += shfl_xor(acc, 2 | 4 | 8 | 16)        # the warp's slices summed
            if ty == 0: red[tz, r, tx * V + v] = acc    # one lane pair per warp
            syncthreads()
            if tz == 0 and ty < rows:                   # a thread per V outputs
                C[ty, j_b * C + tx * V + v] = epilogue(sum_w red[w, ty, tx * V + v])

The epilogue of the kernel (a cast to float16, a bias, an activation) is applied to
the sum before the one store. With symbolic rows (``m <= gemv_rows`` tested at run
time) the rows past ``m`` read zeros and are not stored. The sums add the slices'
partial sums (a different rounding from a serial loop, as in BLAS).
"""

from __future__ import annotations

from relaxjax import arith, dtypes
from relaxjax.schedule.rules.gpu.epilogue import output_store
from relaxjax.schedule.rules.gpu.target import GpuParams
from relaxjax.schedule.rules.patterns import MatmulMatch
from relaxjax.schedule.tree import Namer, names_in
from relaxjax.tir.buffer import Buffer
from relaxjax.tir.expr import (
    BufferLoad,
    Call,
    Cast,
    FloatImm,
    IndexExpr,
    IntImm,
    PrimExpr,
    binop,
    cast,
)
from relaxjax.tir.expr import const as make_const
from relaxjax.tir.function import PrimFunc
from relaxjax.tir.functor import StmtMutator, substitute
from relaxjax.tir.intrinsics import LAZY_SELECT
from relaxjax.tir.math import logical_and
from relaxjax.tir.simt import WARP_SIZE, shfl_xor, syncthreads
from relaxjax.tir.stmt import Allocate, BufferStore, For, IfThenElse, Stmt, seq

__all__ = ["gemv_kernel"]

#: Bytes of a row segment one group of threads reads per step (one 32-byte sector).
SEGMENT_BYTES = 32
#: Rows of the matrix each thread has in flight per step of the unguarded loop.
UNROLL = 4


def _less(a, b) -> PrimExpr:
    return binop("<", IndexExpr(a), IndexExpr(b))


def _all(conditions: list[PrimExpr]) -> PrimExpr | None:
    result = None
    for cond in conditions:
        result = cond if result is None else logical_and(result, cond)
    return result


def _guarded(stmt: Stmt, conditions: list[PrimExpr]) -> Stmt:
    cond = _all([c for c in conditions if c is not None])
    return stmt if cond is None else IfThenElse(cond, stmt)


def _zero_init(match: MatmulMatch) -> bool:
    init = match.update.block.init
    if not isinstance(init, BufferStore):
        return False
    value = init.value
    return isinstance(value, (FloatImm, IntImm)) and value.value == 0


def _plain_operands(match: MatmulMatch) -> bool:
    """Every load of the product indexes with the block's iterators themselves."""
    block = match.update.block
    names = {iv.var for iv in block.iter_vars}
    loads: list[BufferLoad] = []

    class _Find(StmtMutator):
        def visit_BufferLoad(self, expr: BufferLoad) -> PrimExpr:
            loads.append(expr)
            return expr

    _Find().visit_stmt(block.body)
    return all(all(isinstance(i, arith.Sym) and i in names for i in load.indices) for load in loads)


class _Operands(StmtMutator):
    """The product's right-hand side for one (row, lane): ``A`` at the thread's row and
    ``k``, the matrix's element replaced by the thread's register ``w[v]``, and the
    accumulator's own load replaced by ``acc[r, v]``."""

    def __init__(self, mapping: dict, right: tuple[Buffer, ...], w_load, row_guard):
        self.mapping, self.right, self.w_load, self.row_guard = mapping, right, w_load, row_guard

    def visit_Cast(self, expr: Cast) -> PrimExpr:
        inner = expr.value
        if (
            isinstance(inner, BufferLoad)
            and inner.buffer in self.right
            and self.w_load.dtype == expr.dtype
        ):
            return self.w_load  # converted once, as it was loaded
        return super().visit_Cast(expr)

    def visit_BufferLoad(self, expr: BufferLoad) -> PrimExpr:
        if expr.buffer in self.right:
            return self.w_load
        indices = tuple(arith.subs(i, self.mapping) for i in expr.indices)
        load = BufferLoad(expr.buffer, indices)
        if self.row_guard is None:
            return load
        return Call(LAZY_SELECT, (self.row_guard, load, make_const(0, expr.dtype)))


def gemv_kernel(func: PrimFunc, match: MatmulMatch, params: GpuParams) -> PrimFunc | None:
    """The matrix-vector kernel of ``func`` (see the module doc), launch-shaped but not
    yet finished; None when the product is not of the form it serves (more than one
    batch axis, a non-zero init, indices that are not the iterators)."""
    if len(match.batch) > 1 or not _zero_init(match) or not _plain_operands(match):
        return None
    if len(match.right_operands) != 1:
        return None
    matrix = match.right_operands[0]
    block = match.update.block
    acc_dtype = match.output.dtype
    itemsize = max(dtypes.itemsize(matrix.dtype), 1)
    lanes = max(1, params.vector_bytes // itemsize)  # V: elements per 128-bit load
    group = max(1, SEGMENT_BYTES // (lanes * itemsize))  # threads across a segment
    if WARP_SIZE % group or params.threads % WARP_SIZE:
        return None
    slices = params.threads // group  # S
    warps = params.threads // WARP_SIZE
    cols = group * lanes  # C
    rows_dim = match.i.extent
    rows_known = isinstance(rows_dim, int)
    rows = rows_dim if rows_known else params.gemv_rows
    if rows > params.gemv_rows or rows < 1 or rows > WARP_SIZE // group:
        return None
    depth, width = match.k.extent, match.j.extent
    namer = Namer(names_in(func))
    sym = namer.fresh_sym
    jb, tz, ty, tx = sym("j_b"), sym("tz"), sym("ty"), sym("tx")
    batch = sym("b") if match.batch else None
    vars_ = [iv.var for iv in block.iter_vars]
    v_batch, (v_i, v_j, v_k) = vars_[:-3], vars_[-3:]
    col0 = jb * cols + tx * lanes
    even = arith.compare(width % cols, "==", 0) is True

    acc = Buffer(namer.fresh("acc"), (rows, lanes), acc_dtype, None, "local")
    # The matrix's elements as the product uses them: converted (float16 -> float32)
    # as they are loaded, element by element (libnvvm cannot split a vector conversion).
    held = _converted_dtype(block, matrix)
    w = Buffer(namer.fresh("w"), (lanes,), held, None, "local")
    raw = Buffer(namer.fresh("w_raw"), (lanes,), matrix.dtype, None, "local")
    red = Buffer(namer.fresh("red"), (warps, rows, cols), acc_dtype, None, "shared")
    total = Buffer(namer.fresh("total"), (), acc_dtype, None, "local")

    def step(k, k_guard) -> Stmt:
        v, r = sym("v"), sym("r")
        where = {v_k: k, v_j: col0 + v}
        if batch is not None:
            where[v_batch[0]] = batch
        col_guard = None if even else _less(col0 + v, width)
        load_index = tuple(arith.subs(i, where) for i in _matrix_indices(block, matrix))
        loaded: PrimExpr = BufferLoad(matrix, load_index)
        if col_guard is not None:
            loaded = Call(LAZY_SELECT, (col_guard, loaded, make_const(0, matrix.dtype)))
        f = sym("v")
        if held == matrix.dtype:
            fetch = For(f, 0, lanes, "vectorized", BufferStore(w, substitute(loaded, {v: f}), (f,)))
        else:  # one 128-bit load of the raw elements, then converted one by one
            c = sym("v")
            copy = BufferStore(raw, substitute(loaded, {v: f}), (f,))
            convert = BufferStore(w, cast(BufferLoad(raw, (c,)), held), (c,))
            fetch = seq(For(f, 0, lanes, "vectorized", copy), For(c, 0, lanes, "unrolled", convert))
        row_guard = None if rows_known else _less(r, rows_dim)
        mapping = {**where, v_i: r}
        value = _Operands(mapping, (matrix,), BufferLoad(w, (v,)), row_guard).visit_expr(
            _update_rhs(block)
        )
        update = BufferStore(acc, binop("+", BufferLoad(acc, (r, v)), value), (r, v))
        multiply = For(r, 0, rows, "unrolled", For(v, 0, lanes, "unrolled", update))
        return _guarded(seq(fetch, multiply), [k_guard])

    chunk = slices * UNROLL
    k0, u = sym("k_step"), sym("u")
    slice_ = ty + tz * (WARP_SIZE // group)  # this thread's slice of the reduction
    main = For(
        k0,
        0,
        depth // chunk,
        "serial",
        For(u, 0, UNROLL, "unrolled", step((k0 * UNROLL + u) * slices + slice_, None)),
    )
    k1 = sym("k_rest")
    done = (depth // chunk) * chunk
    rest_k = done + k1 * slices + slice_
    rest = For(
        k1, 0, (depth - done + slices - 1) // slices, "serial", step(rest_k, _less(rest_k, depth))
    )

    def each(make) -> Stmt:
        r, v = sym("r"), sym("v")
        return For(r, 0, rows, "unrolled", For(v, 0, lanes, "unrolled", make(r, v)))

    zero = make_const(0, acc_dtype)
    init = each(lambda r, v: BufferStore(acc, zero, (r, v)))

    def butterfly(r, v) -> Stmt:
        shuffles = []
        mask = group
        while mask < WARP_SIZE:
            value = binop("+", BufferLoad(acc, (r, v)), shfl_xor(BufferLoad(acc, (r, v)), mask))
            shuffles.append(BufferStore(acc, value, (r, v)))
            mask *= 2
        return seq(*shuffles)

    combine = each(butterfly)
    # One lane group per warp publishes the warp's sums.
    publish = IfThenElse(
        binop("==", IndexExpr(ty), IndexExpr(0)),
        each(lambda r, v: BufferStore(red, BufferLoad(acc, (r, v)), (tz, r, tx * lanes + v))),
    )

    # The outputs: in the first warp, row ``ty`` and columns ``tx * V + v``.
    wv, v = sym("w"), sym("v")
    col = jb * cols + tx * lanes + v
    gather = seq(
        BufferStore(total, zero, ()),
        For(
            wv,
            0,
            warps,
            "unrolled",
            BufferStore(
                total,
                binop("+", BufferLoad(total, ()), BufferLoad(red, (wv, ty, tx * lanes + v))),
                (),
            ),
        ),
    )
    where = {v_i: ty, v_j: col}
    if batch is not None:
        where[v_batch[0]] = batch
    store = output_store(match, where, BufferLoad(total, ()))
    guards = [_less(col, width)] if not even else []
    outputs = IfThenElse(
        logical_and(
            binop("==", IndexExpr(tz), IndexExpr(0)), _less(ty, rows if rows_known else rows_dim)
        ),
        For(v, 0, lanes, "serial", _guarded(seq(gather, store), guards)),
    )

    thread = Allocate(
        acc,
        Allocate(
            w, Allocate(total, seq(init, main, rest, combine, publish, syncthreads(), outputs))
        ),
    )
    if held != matrix.dtype:
        thread = Allocate(raw, thread)
    body = For(tx, 0, group, "thread_binding", thread, thread_tag="threadIdx.x")
    body = For(ty, 0, WARP_SIZE // group, "thread_binding", body, thread_tag="threadIdx.y")
    body = For(tz, 0, warps, "thread_binding", body, thread_tag="threadIdx.z")
    body = Allocate(red, body)
    body = For(jb, 0, (width + cols - 1) // cols, "thread_binding", body, thread_tag="blockIdx.x")
    if batch is not None:
        body = For(batch, 0, match.batch[0].extent, "thread_binding", body, thread_tag="blockIdx.z")
    return func.with_body(body)


def _update_rhs(block) -> PrimExpr:
    """``f(A, W)`` of the update ``C = C + f(A, W)``."""
    return block.body.value.b


def _converted_dtype(block, matrix: Buffer) -> str:
    """The dtype every use of ``matrix`` in the update converts to (its own if not)."""
    seen: set[str] = set()

    class _Find(StmtMutator):
        def visit_Cast(self, expr: Cast) -> PrimExpr:
            if isinstance(expr.value, BufferLoad) and expr.value.buffer == matrix:
                seen.add(expr.dtype)
                return expr
            return super().visit_Cast(expr)

        def visit_BufferLoad(self, expr: BufferLoad) -> PrimExpr:
            if expr.buffer == matrix:
                seen.add(matrix.dtype)
            return expr

    _Find().visit_stmt(block.body)
    return seen.pop() if len(seen) == 1 else matrix.dtype


def _matrix_indices(block, matrix: Buffer) -> tuple:
    found: list[tuple] = []

    class _Find(StmtMutator):
        def visit_BufferLoad(self, expr: BufferLoad) -> PrimExpr:
            if expr.buffer == matrix and not found:
                found.append(expr.indices)
            return expr

    _Find().visit_stmt(block.body)
    return found[0]
