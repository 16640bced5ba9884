"""Matrix products on tensor cores: ``mma.sync.m16n8k16`` for float16/bfloat16 operands
with float32 accumulation (sm_80+).

For ``acc[i, j] += float32(A[i, k]) * float32(B[k, j])`` (any operand layout: the
copies follow the operands' indices) a block computes a ``BM x BN`` tile of the result
with ``WM x WN`` warps, each a ``BM / WM x BN / WN`` warp tile of ``16 x 8`` products
whose float32 accumulators stay in registers (``acc[mt, nt, 0:4]``, the PTX
fragment layout). The reduction runs in steps of ``BK``: the block copies the step's
slices of ``A`` and ``B`` into shared memory (rows padded by 8 elements, so the
fragment loads of a warp hit 32 different banks; the padding is in the strides only),
zero-padded at the edges; then each warp loads its fragments (``ldmatrix``: four 8x8
matrices per instruction, ``B``'s transposed) and multiplies, ``BK / 16`` tensor-core
steps::

    for i_b, j_b in blockIdx.y, blockIdx.x:                # ceil(M / BM) x ceil(N / BN)
        A_sh[BM, BK + 8], B_sh[BK, BN + 8]                  # shared, double buffered
        for warp, lane in threadIdx.y, threadIdx.x:         # WM * WN warps of 32 lanes
            acc[MT, NT, 4] = 0
            for k_0 in range(ceil(K / BK)):
                A_sh[...] = A[...] (0 past the edges); B_sh[...] = B[...]
                for ks in unrolled(BK / 16):
                    a[mt, 0:8] = ldmatrix_x4(A_sh[<row of rows mt>])
                    b[nt:nt+2, 0:4] = ldmatrix_x4.trans(B_sh[<k row, columns nt:nt+2>])
                    acc[mt, nt, q] = mma_m16n8k16(q, a[mt, :], b[nt, :], acc[mt, nt, :])
            C[<lane's elements>] = epilogue(acc[mt, nt, q])  # guarded at the edges

The tiles are double buffered (:mod:`.double_buffer`): one barrier per step. The
kernel's epilogue (a cast to float16, a bias, an activation, a residual) is applied
to each accumulator before its one store. The sums' order differs from a serial loop
(the tensor cores add 16 products at a time), as in cuBLAS.
"""

from __future__ import annotations

from relaxjax import arith
from relaxjax.schedule.gpu import finish_gpu
from relaxjax.schedule.rules.gpu.double_buffer import double_buffer
from relaxjax.schedule.rules.gpu.epilogue import output_store
from relaxjax.schedule.rules.gpu.target import GpuParams
from relaxjax.schedule.rules.patterns import MatmulMatch
from relaxjax.schedule.tree import Namer, names_in
from relaxjax.tir.buffer import Buffer
from relaxjax.tir.expr import (
    BinOp,
    BufferLoad,
    Call,
    Cast,
    FloatImm,
    IndexExpr,
    IntImm,
    PrimExpr,
    binop,
    const,
)
from relaxjax.tir.function import PrimFunc
from relaxjax.tir.functor import StmtMutator
from relaxjax.tir.intrinsics import LAZY_SELECT, LDMATRIX, MMA, MMA_DTYPES
from relaxjax.tir.math import logical_and
from relaxjax.tir.simt import WARP_SIZE
from relaxjax.tir.stmt import Allocate, BufferStore, For, IfThenElse, Stmt, seq

__all__ = ["mma_kernel", "mma_operands"]

#: Elements of padding per shared row (16 bytes: rows start 4 banks apart).
PAD = 8
#: Elements each thread copies per 128-bit access (float16/bfloat16).
COPY_LANES = 8


def _less(a, b) -> PrimExpr:
    return binop("<", IndexExpr(a), IndexExpr(b))


def mma_operands(match: MatmulMatch) -> tuple[BufferLoad, BufferLoad] | None:
    """``(A load, B load)`` when the update is ``acc + float32(A[..]) * float32(B[..])``
    with float16/bfloat16 operands of one dtype, a float32 accumulator zeroed by its
    init, and indices that are the block's iterators; None otherwise."""
    block = match.update.block
    if match.output.dtype != "float32" or len(match.batch) > 1:
        return None
    init = block.init
    if not (
        isinstance(init, BufferStore)
        and isinstance(init.value, (FloatImm, IntImm))
        and init.value.value == 0
    ):
        return None
    product = block.body.value.b
    if not (isinstance(product, BinOp) and product.op == "*"):
        return None
    loads = []
    for side in (product.a, product.b):
        if not (isinstance(side, Cast) and side.dtype == "float32"):
            return None
        if not isinstance(side.value, BufferLoad) or side.value.dtype not in MMA_DTYPES:
            return None
        loads.append(side.value)
    names = {iv.var for iv in block.iter_vars}
    for load in loads:
        if not all(isinstance(i, arith.Sym) and i in names for i in load.indices):
            return None
    left, right = loads
    if left.buffer in match.right_operands:
        left, right = right, left
    if left.buffer in match.right_operands or right.buffer not in match.right_operands:
        return None
    if left.dtype != right.dtype:
        return None
    return left, right


def _fits(params: GpuParams) -> bool:
    bm, bn, bk = params.mma_tile_m, params.mma_tile_n, params.mma_step
    wm, wn = params.mma_warps
    threads = wm * wn * WARP_SIZE
    return (
        bm % (wm * 16) == 0
        and bn % (wn * 16) == 0  # column tiles in pairs (one ldmatrix.x4.trans each)
        and bk % 16 == 0
        and (bm * bk) % (threads * COPY_LANES) == 0
        and (bk * bn) % (threads * COPY_LANES) == 0
        and WARP_SIZE % (bk // COPY_LANES) == 0
        and WARP_SIZE % (bn // COPY_LANES) == 0
    )


def mma_kernel(func: PrimFunc, match: MatmulMatch, params: GpuParams) -> PrimFunc | None:
    """The tensor-core kernel of ``func`` (see the module doc), finished and double
    buffered; None when the product or the tile sizes do not fit it."""
    operands = mma_operands(match)
    if operands is None or not _fits(params):
        return None
    a_load, b_load = operands
    block = match.update.block
    bm, bn, bk = params.mma_tile_m, params.mma_tile_n, params.mma_step
    wm, wn = params.mma_warps
    threads = wm * wn * WARP_SIZE
    mt_count, nt_count = bm // wm // 16, bn // wn // 8
    dtype = a_load.dtype
    rows, cols, depth = match.i.extent, match.j.extent, match.k.extent
    vars_ = [iv.var for iv in block.iter_vars]
    v_batch, (v_i, v_j, v_k) = vars_[:-3], vars_[-3:]

    namer = Namer(names_in(func))
    sym = namer.fresh_sym
    ib, jb, warp, lane = sym("i_b"), sym("j_b"), sym("warp"), sym("lane")
    batch = sym("b") if match.batch else None
    k0 = sym("k_0")
    a_sh = Buffer(namer.fresh("A_sh"), (bm, bk), dtype, None, "shared")
    b_sh = Buffer(namer.fresh("B_sh"), (bk, bn), dtype, None, "shared")
    acc = Buffer(namer.fresh("acc"), (mt_count, nt_count, 4), "float32", None, "local")
    a_frag = Buffer(namer.fresh("a_frag"), (mt_count, 8), dtype, None, "local")
    b_frag = Buffer(namer.fresh("b_frag"), (nt_count, 4), dtype, None, "local")
    d_frag = Buffer(namer.fresh("d_frag"), (4,), "float32", None, "local")

    def where(i, j, k) -> dict:
        mapping = {v_i: i, v_j: j, v_k: k}
        if batch is not None:
            mapping[v_batch[0]] = batch
        return mapping

    def copy(shared: Buffer, load: BufferLoad, tile_rows: int, tile_cols: int, at) -> Stmt:
        """The step's tile of one operand into shared memory, 8 elements per thread and
        pass, zero where the operand ends."""
        per_row = tile_cols // COPY_LANES  # threads across a row
        passes = tile_rows * tile_cols // (threads * COPY_LANES)
        p, v = sym("p"), sym("v")
        row = p * (threads // per_row) + warp * (WARP_SIZE // per_row) + lane // per_row
        col = (lane % per_row) * COPY_LANES + v
        (i, j, k), guards = at(row, col, col - v)
        source = BufferLoad(load.buffer, tuple(arith.subs(x, where(i, j, k)) for x in load.indices))
        cond = None
        for guard in guards:
            cond = guard if cond is None else logical_and(cond, guard)
        value = Call(LAZY_SELECT, (cond, source, const(0, dtype))) if cond is not None else source
        store = BufferStore(shared, value, (row, col))
        return For(p, 0, passes, "unrolled", For(v, 0, COPY_LANES, "vectorized", store))

    # Where the extent along the copied rows is a multiple of 8, a thread's 8 elements
    # are all in or all out: one test for the 8 (the copy stays one vector access).
    k_whole = arith.compare(depth % COPY_LANES, "==", 0) is True
    n_whole = arith.compare(cols % COPY_LANES, "==", 0) is True
    a_copy = copy(
        a_sh,
        a_load,
        bm,
        bk,
        lambda r, c, c0: (
            (ib * bm + r, 0, k0 * bk + c),
            [_less(ib * bm + r, rows), _less(k0 * bk + (c0 if k_whole else c), depth)],
        ),
    )
    b_copy = copy(
        b_sh,
        b_load,
        bk,
        bn,
        lambda r, c, c0: (
            (0, jb * bn + c, k0 * bk + r),
            [_less(k0 * bk + r, depth), _less(jb * bn + (c0 if n_whole else c), cols)],
        ),
    )

    g, t = lane // 4, lane % 4
    warp_m, warp_n = warp // wn, warp % wn
    ks = sym("ks")

    def frags() -> Stmt:
        """The warp's fragments from shared memory, ``ldmatrix`` by ``ldmatrix``: lane
        ``L`` points at row ``L % 8`` of 8x8 matrix ``L // 8`` of a 16x16 block (``A``:
        the rows of ``mt``; ``B``, transposed: ``k`` rows of two column tiles)."""
        mt, nt2 = sym("mt"), sym("nt2")
        quarter, half = lane % 8 + 8 * ((lane // 8) % 2), 8 * (lane // 16)
        a_row = warp_m * (bm // wm) + mt * 16 + quarter
        a_args = [BufferLoad(a_sh, (a_row, ks * 16 + half + e)) for e in range(8)]
        a_stmts = [
            BufferStore(
                a_frag, Call(LDMATRIX, (IntImm(0, "int32"), IntImm(q, "int32"), *a_args)), (mt, q)
            )
            for q in range(8)
        ]
        b_col = warp_n * (bn // wn) + nt2 * 16 + half
        b_args = [BufferLoad(b_sh, (ks * 16 + quarter, b_col + e)) for e in range(8)]
        b_stmts = [
            BufferStore(
                b_frag,
                Call(LDMATRIX, (IntImm(1, "int32"), IntImm(q, "int32"), *b_args)),
                (nt2 * 2 + q // 4, q % 4),
            )
            for q in range(8)
        ]
        return seq(
            For(mt, 0, mt_count, "unrolled", seq(*a_stmts)),
            For(nt2, 0, nt_count // 2, "unrolled", seq(*b_stmts)),
        )

    def products() -> Stmt:
        mt, nt = sym("mt"), sym("nt")
        a_args = [BufferLoad(a_frag, (mt, e)) for e in range(8)]
        b_args = [BufferLoad(b_frag, (nt, e)) for e in range(4)]
        c_args = [BufferLoad(acc, (mt, nt, q)) for q in range(4)]
        stmts = [
            BufferStore(d_frag, Call(MMA, (IntImm(q, "int32"), *a_args, *b_args, *c_args)), (q,))
            for q in range(4)
        ]
        stmts += [BufferStore(acc, BufferLoad(d_frag, (q,)), (mt, nt, q)) for q in range(4)]
        return For(mt, 0, mt_count, "unrolled", For(nt, 0, nt_count, "unrolled", seq(*stmts)))

    compute = For(ks, 0, bk // 16, "unrolled", seq(frags(), products()))
    steps = For(k0, 0, (depth + bk - 1) // bk, "serial", seq(a_copy, b_copy, compute))

    def zero() -> Stmt:
        mt, nt, q = sym("mt"), sym("nt"), sym("q")
        store = BufferStore(acc, const(0, "float32"), (mt, nt, q))
        return For(
            mt,
            0,
            mt_count,
            "unrolled",
            For(nt, 0, nt_count, "unrolled", For(q, 0, 4, "unrolled", store)),
        )

    def stores() -> Stmt:
        mt, nt, q = sym("mt"), sym("nt"), sym("q")
        r = ib * bm + warp_m * (bm // wm) + mt * 16 + g + 8 * (q // 2)
        c = jb * bn + warp_n * (bn // wn) + nt * 8 + 2 * t + q % 2
        mapping = {v_i: r, v_j: c}
        if batch is not None:
            mapping[v_batch[0]] = batch
        store = output_store(match, mapping, BufferLoad(acc, (mt, nt, q)))
        guarded = IfThenElse(logical_and(_less(r, rows), _less(c, cols)), store)
        return For(
            mt,
            0,
            mt_count,
            "unrolled",
            For(nt, 0, nt_count, "unrolled", For(q, 0, 4, "unrolled", guarded)),
        )

    thread = Allocate(
        acc, Allocate(a_frag, Allocate(b_frag, Allocate(d_frag, seq(zero(), steps, stores()))))
    )
    body = For(lane, 0, WARP_SIZE, "thread_binding", thread, thread_tag="threadIdx.x")
    body = For(warp, 0, wm * wn, "thread_binding", body, thread_tag="threadIdx.y")
    body = Allocate(a_sh, Allocate(b_sh, body))
    body = For(jb, 0, (cols + bn - 1) // bn, "thread_binding", body, thread_tag="blockIdx.x")
    body = For(ib, 0, (rows + bm - 1) // bm, "thread_binding", body, thread_tag="blockIdx.y")
    if batch is not None:
        body = For(batch, 0, match.batch[0].extent, "thread_binding", body, thread_tag="blockIdx.z")
    done = finish_gpu(func.with_body(body), params.limits)
    tiles = {a_sh.name, b_sh.name}
    if params.double_buffer:
        done = double_buffer(done, tiles, params.limits)
    return _padded(done, tiles)


class _Pad(StmtMutator):
    """Shared tiles with ``PAD`` more elements per row (strides only: the same
    elements, rows starting 16 bytes further apart)."""

    def __init__(self, names: set[str]):
        self.names = names
        self.padded: dict[str, Buffer] = {}

    def _buffer(self, buffer: Buffer) -> Buffer:
        if buffer.name not in self.names:
            return buffer
        if buffer.name not in self.padded:
            strides, step = [], 1
            for i, dim in enumerate(reversed(buffer.shape)):
                strides.append(step)
                step = step * (dim + PAD if i == 0 else dim)
            self.padded[buffer.name] = Buffer(
                buffer.name, buffer.shape, buffer.dtype, tuple(reversed(strides)), buffer.scope
            )
        return self.padded[buffer.name]

    def visit_Allocate(self, stmt: Allocate) -> Stmt:
        return Allocate(self._buffer(stmt.buffer), self.visit_stmt(stmt.body))

    def visit_BufferLoad(self, expr: BufferLoad) -> PrimExpr:
        indices = tuple(self.visit_index(i) for i in expr.indices)
        return BufferLoad(self._buffer(expr.buffer), indices)

    def visit_BufferStore(self, stmt: BufferStore) -> Stmt:
        indices = tuple(self.visit_index(i) for i in stmt.indices)
        return BufferStore(self._buffer(stmt.buffer), self.visit_expr(stmt.value), indices)


def _padded(func: PrimFunc, names: set[str]) -> PrimFunc:
    return func.with_body(_Pad(names).visit_stmt(func.body))
