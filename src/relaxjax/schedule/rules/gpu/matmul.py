"""The GPU rule for matrix products (and batched ones): shared-memory tiles, register
tiles, and a matrix-vector variant for few rows (one-token decode).

A block computes a ``tile x tile`` tile of the result with ``(tile / regs)^2`` threads,
each a ``regs x regs`` register tile (accumulators in ``local`` memory). The
reduction runs in steps of ``step``: the block loads the step's slices of both
operands into shared memory together (each thread a few elements), then every
thread multiplies its rows of one slice by its columns of the other::

    for b in thread_binding(batch, thread="blockIdx.z"):
        for i_0 in thread_binding(ceil(m / 64), thread="blockIdx.y"):
            for j_0 in thread_binding(ceil(n / 64), thread="blockIdx.x"):
                C_local[4, 4] = 0                           # per thread (16 x 16 threads)
                for k_0 in range(ceil(k / 16)):
                    A_shared[64, 16] = A[...]; B_shared[16, 64] = B[...]   # cooperative
                    for k_1 in range(16):                   # unrolled
                        for i_2, j_2 in 4 x 4:              # unrolled
                            C_local[i_2, j_2] += A_shared[..] * B_shared[..]
                C[...] = C_local[...]                        # the 4 x 4 tile

The tiles are zero-padded at the edges (a shared copy stores zero where the operand
ends), so the multiply-add loop runs without guards for any size. They are double
buffered (``double_buffer``): the next step's slices load while the threads multiply
the current ones, one barrier per step.

Products with few rows (``m <= gemv_rows``, or up to 16 float32 / 8 float16 rows of a
matrix read along its rows; known or tested at run time) read each
element of the matrix once: a thread per output element, along the contiguous axis
of the matrix, runs the reduction itself in a register, rows on ``blockIdx.y``
(``if m <= 4: <gemv> else: <tiled>`` when ``m`` is symbolic). Other layouts and
dtypes work the same (the loads follow the operands' indices); kernels with an
epilogue or a separate init nest are left to the next rule.
"""

from __future__ import annotations

from dataclasses import replace

from relaxjax import arith
from relaxjax.schedule.gpu import finish_gpu
from relaxjax.schedule.rules.gpu.common import finish
from relaxjax.schedule.rules.gpu.double_buffer import double_buffer
from relaxjax.schedule.rules.gpu.gemv import gemv_kernel
from relaxjax.schedule.rules.gpu.mma import mma_kernel
from relaxjax.schedule.rules.gpu.reduction import reduction_rule
from relaxjax.schedule.rules.gpu.target import GpuParams, gpu_params
from relaxjax.schedule.rules.patterns import MatmulMatch, match_matmul
from relaxjax.schedule.rules.variants import choose
from relaxjax.schedule.schedule import Schedule
from relaxjax.tir.expr import BufferLoad, Call, IndexExpr, binop, const
from relaxjax.tir.function import PrimFunc
from relaxjax.tir.functor import StmtMutator, StmtVisitor
from relaxjax.tir.intrinsics import LAZY_SELECT
from relaxjax.tir.stmt import BufferStore, IfThenElse, Stmt

__all__ = ["matmul_rule"]


def _tiled(func: PrimFunc, match: MatmulMatch, params: GpuParams) -> PrimFunc:
    tile, regs, step = params.matmul_tile, params.matmul_regs, params.matmul_step
    lanes = tile // regs
    sch = Schedule(func)
    c = sch.get_block(match.update.name)
    loops = sch.get_loops(c)
    batch, (i, j, k) = loops[:-3], loops[-3:]
    i0, i1, i2 = sch.split(i, [None, lanes, regs])
    j0, j1, j2 = sch.split(j, [None, lanes, regs])
    k0, k1 = sch.split(k, [None, step])
    sch.reorder(*batch, i0, j0, k0, i1, j1, k1, i2, j2)
    if batch:
        fused = batch[0] if len(batch) == 1 else sch.fuse(*batch)
        sch.bind(fused, "blockIdx.z")
    sch.bind(i0, "blockIdx.y")
    sch.bind(j0, "blockIdx.x")
    operands = sorted({r.buffer.name for r in sch.get_block_node(c).reads})
    for operand in operands:
        copy = sch.cache_read(c, operand, "shared")
        sch.compute_at(copy, k0)
        copy_loops = sch.get_loops(copy)[len(batch) + 3 :]
        flat = copy_loops[0] if len(copy_loops) == 1 else sch.fuse(*copy_loops)
        _, ty, tx = sch.split(flat, [None, lanes, lanes])
        sch.bind(ty, "threadIdx.y")
        sch.bind(tx, "threadIdx.x")
    store = _register_tile(sch, c, match)
    sch.reverse_compute_at(store, j0)
    out = sch.get_loops(store)[-2:]
    r0, r1 = sch.split(out[0], [lanes, regs])
    s0, s1 = sch.split(out[1], [lanes, regs])
    sch.reorder(r0, s0, r1, s1)
    sch.bind(r0, "threadIdx.y")
    sch.bind(s0, "threadIdx.x")
    init = sch.decompose_reduction(c, k0)
    init_loops = sch.get_loops(init)[-4:]
    sch.bind(init_loops[0], "threadIdx.y")
    sch.bind(init_loops[1], "threadIdx.x")
    sch.bind(i1, "threadIdx.y")
    sch.bind(j1, "threadIdx.x")
    for loop in (k1, i2, j2):
        sch.unroll(loop)
    tiles = {f"{name}_shared" for name in operands}
    accumulator = match.output.name if match.epilogue is not None else f"{match.output.name}_local"
    done = _unguarded(finish(sch, params), tiles, {accumulator})
    return double_buffer(done, tiles, params.limits) if params.double_buffer else done


def _register_tile(sch: Schedule, c, match: MatmulMatch):
    """The block that stores the register tile: a copy-back of the accumulator moved
    to ``local`` scope, or the epilogue itself when the kernel has one (a cast to
    float16, a bias, an activation: applied in registers, stored once), reading the
    accumulator, which then lives in registers."""
    if match.epilogue is None:
        return sch.cache_write(c, 0, "local")
    sch.set_scope(c, 0, "local")
    return sch.get_block(match.epilogue.name)


class _Unguard(StmtMutator):
    """Guards that leave the tiles' edges alone become zero padding: a shared copy
    stores ``if_then_else(in bounds, A[...], 0)`` everywhere in its tile, and the
    register tile accumulates (and is zeroed) unguarded. Past an edge it then adds
    zero products, and its rows and columns past the result's edge are never stored
    (the copy-back keeps its guards), so the inner loop runs without tests."""

    def __init__(self, tiles: set[str], accumulators: set[str]):
        self.tiles, self.accumulators = tiles, accumulators

    def visit_IfThenElse(self, stmt: IfThenElse) -> Stmt:
        inner = stmt.then_case
        if stmt.else_case is None and isinstance(inner, BufferStore):
            name = inner.buffer.name
            if name in self.accumulators:
                return inner
            if name in self.tiles and isinstance(inner.value, BufferLoad):
                zero = const(0, inner.buffer.dtype)
                padded = Call(LAZY_SELECT, (stmt.condition, inner.value, zero))
                return BufferStore(inner.buffer, padded, inner.indices)
        return super().visit_IfThenElse(stmt)


def _unguarded(func: PrimFunc, tiles: set[str], accumulators: set[str]) -> PrimFunc:
    body = _Unguard(tiles, accumulators).visit_stmt(func.body)
    return func if body is func.body else func.with_body(body)


def _reads_along_k(match: MatmulMatch) -> bool:
    """Whether the matrix (right operand) is read contiguously along the reduction:
    its last index is the reduction iterator (``W[j, k]``, a product with ``W.T``)."""
    block = match.update.block
    k_name = block.iter_vars[-1].var.name
    for load in _loads(block.body):
        if load.buffer in match.right_operands and load.indices:
            last = load.indices[-1]
            return isinstance(last, arith.Sym) and last.name == k_name
    return False


def _loads(stmt) -> list[BufferLoad]:
    found: list[BufferLoad] = []

    class _Find(StmtVisitor):
        def visit_BufferLoad(self, load: BufferLoad) -> None:
            found.append(load)
            super().visit_BufferLoad(load)

    _Find().visit_stmt(stmt)
    return found


def _gemv(func: PrimFunc, match: MatmulMatch, params: GpuParams) -> PrimFunc | None:
    """Few rows: read the matrix once, coalesced. Along its rows (``W[k, j]``) a thread
    per output element runs the reduction itself, neighbouring threads reading
    neighbouring elements; along the reduction (``W[j, k]``) the threads of a warp or
    block reduce each output together (the reduction rule)."""
    if _reads_along_k(match):
        return reduction_rule(func, params)
    kernel = gemv_kernel(func, match, params)
    if kernel is not None:
        return finish_gpu(kernel, params.limits)
    sch = Schedule(func)
    c = sch.get_block(match.update.name)
    store = sch.cache_write(c, 0, "local")
    loops = sch.get_loops(c)
    batch, (i, j, k) = loops[:-3], loops[-3:]
    outer, lanes = sch.split(j, [None, params.threads])
    sch.reverse_compute_at(store, lanes)  # the sum in a register, stored once
    sch.decompose_reduction(c, k)
    if batch:
        sch.bind(batch[0] if len(batch) == 1 else sch.fuse(*batch), "blockIdx.z")
    sch.bind(i, "blockIdx.y")
    sch.bind(outer, "blockIdx.x")
    sch.bind(lanes, "threadIdx.x")
    return finish(sch, params)


def _tensor_cores(func: PrimFunc, match: MatmulMatch, params: GpuParams) -> PrimFunc | None:
    """The tensor-core kernel (:mod:`.mma`), with the smaller tiles of
    ``params.mma_small_tiles`` for few rows (chosen at run time when ``m`` is symbolic);
    None when the product is not one for tensor cores."""
    result = mma_kernel(func, match, params)
    if result is None:
        return None
    rows = match.i.extent
    for limit, tile_m, tile_n, step, warps_m, warps_n in sorted(
        params.mma_small_tiles, reverse=True
    ):
        if arith.compare(rows, ">", limit) is True:
            continue
        small_params = replace(
            params,
            mma_tile_m=tile_m,
            mma_tile_n=tile_n,
            mma_step=step,
            mma_warps=(warps_m, warps_n),
        )
        small = mma_kernel(func, match, small_params)
        if small is None:
            continue
        if arith.compare(rows, "<=", limit) is True:
            result = small
        else:
            result = choose(binop("<=", IndexExpr(rows), IndexExpr(limit)), small, result)
    return result


def matmul_rule(func: PrimFunc, target: object = "cuda") -> PrimFunc | None:
    """Schedule a (batched) matrix product for the GPU (see the module doc); None for
    other kernels."""
    match = match_matmul(func)
    if match is None or match.init is not None:
        return None
    if match.update.block.init is None:
        return None
    params = gpu_params(target)
    rows = match.i.extent
    # The GEMV for up to gemv_rows rows, then (few rows of a matrix read along its rows)
    # one for up to the limit, then the tiles; chosen at run time for symbolic rows.
    for limit in sorted({params.gemv_rows, _gemv_limit(match, params)}):
        if arith.compare(rows, "<=", limit) is True:
            return _gemv(func, match, replace(params, gemv_rows=limit))
    tiled = (_tensor_cores(func, match, params) if params.tensor_cores else None) or _tiled(
        func, match, params
    )
    result = tiled
    for limit in sorted({params.gemv_rows, _gemv_limit(match, params)}, reverse=True):
        if arith.compare(rows, ">", limit) is True:
            continue
        gemv = _gemv(func, match, replace(params, gemv_rows=limit))
        if gemv is not None:
            small = binop("<=", IndexExpr(rows), IndexExpr(limit))
            result = choose(small, gemv, result)
    return result


def _gemv_limit(match: MatmulMatch, params: GpuParams) -> int:
    """The most rows the product runs as a GEMV: ``gemv_rows``, or, for a matrix read
    along its rows, as many as keep ``gemv_registers`` accumulators per thread (rows x
    the elements of a 128-bit load: 16 rows of float32, 8 of float16), since it still
    reads the matrix once."""
    if _reads_along_k(match) or len(match.right_operands) != 1:
        return params.gemv_rows
    lanes = params.lanes(match.right_operands[0].dtype)
    return max(params.gemv_rows, params.gemv_registers // lanes)
