"""GPU thread semantics: barriers, warp shuffles, and how the interpreter runs them.

Every loop, ``thread_binding`` ones included, means "run the iterations in order"
(:mod:`relaxjax.tir.stmt`), except a **SIMT nest**: a perfect nest of ``threadIdx``
loops whose body uses a GPU intrinsic (``syncthreads()``, ``shfl_xor``,
``shfl_down``; :data:`~relaxjax.tir.intrinsics.GPU_INTRINSICS`). Its iterations are the
threads of one thread block and run concurrently, as on the GPU:

- each thread runs its body in order until it reaches a barrier or a shuffle;
- a barrier releases when every thread of the block waits at that same barrier
  (a thread that finished, or waits elsewhere, while others wait is a divergence
  error: ``__syncthreads`` must be reached by all threads);
- a shuffle completes when every thread of the warp (32 consecutive linear ids
  ``x + X * (y + Y * z)``; the last warp may be partial) waits at that same shuffle:
  each gets the value of its source lane, ``lane ^ mask`` for ``shfl_xor`` and
  ``lane + offset`` for ``shfl_down`` (its own value when that is past lane 31).
  A source lane the block does not have is an error.
- ``mma_m16n8k16`` completes like a shuffle, for a whole warp of 32 lanes: the
  fragments of all lanes make ``A``, ``B`` and ``C`` (:func:`mma_fragments`), and each
  lane gets its element of ``A @ B + C``; ``ldmatrix_x4`` likewise, the rows the lanes
  give making four 8x8 matrices that are dealt out again in fragments.

Run sequentially, the threads of a SIMT nest advance phase by phase: all threads up
to the next barrier, then all threads to the one after. Between barriers the threads
of a correct kernel touch disjoint data (what the barrier insertion of
:mod:`relaxjax.schedule.gpu` guarantees), so any order gives the GPU's result; the
interpreter's ``reverse_parallel=True`` runs each phase's threads backwards to
expose a kernel that is not. Shuffles exchange within a warp at once. This makes
the interpretation exact for the kernels the GPU passes produce.

>>> from relaxjax.tir.expr import Var
>>> shfl_xor(Var("v", "float32"), 16)
shfl_xor(v, int32(16))
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from relaxjax.errors import VerifyError
from relaxjax.tir.expr import Call, IntImm, PrimExpr, as_expr
from relaxjax.tir.functor import StmtVisitor
from relaxjax.tir.intrinsics import GPU_INTRINSICS, LDMATRIX, MMA, SYNCTHREADS
from relaxjax.tir.stmt import Evaluate, Stmt

__all__ = [
    "WARP_SIZE",
    "is_barrier",
    "mma_fragments",
    "run_block",
    "shfl_down",
    "shfl_xor",
    "syncthreads",
    "uses_sync",
]

#: Threads per warp.
WARP_SIZE = 32


def syncthreads() -> Evaluate:
    """The barrier statement ``evaluate(syncthreads())``."""
    return Evaluate(Call(SYNCTHREADS, ()))


def _lane_operand(value: object) -> PrimExpr:
    if isinstance(value, int) and not isinstance(value, bool):
        return IntImm(value, "int32")
    return as_expr(value)


def shfl_xor(value: PrimExpr, lane_mask: object) -> PrimExpr:
    """The ``value`` of lane ``lane ^ lane_mask`` of the warp."""
    return Call("shfl_xor", (as_expr(value), _lane_operand(lane_mask)))


def shfl_down(value: PrimExpr, offset: object) -> PrimExpr:
    """The ``value`` of lane ``lane + offset`` (own value past the warp's end)."""
    return Call("shfl_down", (as_expr(value), _lane_operand(offset)))


def is_barrier(stmt: Stmt) -> bool:
    """Whether ``stmt`` is ``evaluate(syncthreads())``."""
    return (
        isinstance(stmt, Evaluate)
        and isinstance(stmt.value, Call)
        and stmt.value.intrinsic == SYNCTHREADS
    )


class _Finder(StmtVisitor):
    def __init__(self):
        self.found = False

    def visit_Call(self, expr: Call) -> None:
        if expr.intrinsic in GPU_INTRINSICS:
            self.found = True
        super().visit_Call(expr)


def uses_sync(node: Stmt | PrimExpr) -> bool:
    """Whether ``node`` contains a barrier or a warp shuffle."""
    finder = _Finder()
    if isinstance(node, Stmt):
        finder.visit_stmt(node)
    else:
        finder.visit_expr(node)
    return finder.found


# --- running a thread block (the interpreter's runtime) -----------------------------------

_DONE = object()


def _fail(kernel: str, message: str) -> VerifyError:
    return VerifyError(f"kernel {kernel}: {message}")


def mma_fragments(lane: int) -> tuple[list, list, list]:
    """Where lane ``lane``'s fragments of ``mma.m16n8k16`` sit (the PTX ISA's layout,
    ``g = lane // 4``, ``t = lane % 4``): ``(row, col)`` of ``A`` (16x16) for
    ``a0..a7``, ``(k, n)`` of ``B`` (16x8) for ``b0..b3``, ``(row, col)`` of ``C``/``D``
    (16x8) for ``c0..c3``."""
    g, t = lane // 4, lane % 4
    a = [(g + 8 * ((e // 2) % 2), 2 * t + e % 2 + 8 * (e // 4)) for e in range(8)]
    b = [(2 * t + e % 2 + 8 * (e // 2), g) for e in range(4)]
    c = [(g + 8 * (q // 2), 2 * t + q % 2) for q in range(4)]
    return a, b, c


def _mma(values: dict[int, tuple], kernel: str) -> dict[int, object]:
    """One ``mma_m16n8k16`` of a warp: lane -> element ``q`` of its fragment of
    ``A @ B + C`` (the products exact, the sums in float64, rounded once to float32)."""
    import numpy as np

    if len(values) != WARP_SIZE:
        raise _fail(kernel, f"mma_m16n8k16 needs a whole warp of 32 lanes, got {len(values)}")
    a, b, c = np.zeros((16, 16)), np.zeros((16, 8)), np.zeros((16, 8))
    for lane, args in values.items():
        at, bt, ct = mma_fragments(lane)
        for e, (i, j) in enumerate(at):
            a[i, j] = float(args[1 + e])
        for e, (i, j) in enumerate(bt):
            b[i, j] = float(args[9 + e])
        for q, (i, j) in enumerate(ct):
            c[i, j] = float(args[13 + q])
    d = (a @ b + c).astype(np.float32)
    results = {}
    for lane, args in values.items():
        i, j = mma_fragments(lane)[2][int(args[0])]
        results[lane] = d[i, j]
    return results


def _ldmatrix(values: dict[int, tuple], kernel: str) -> dict[int, object]:
    """One ``ldmatrix_x4`` of a warp: lane ``L`` gave row ``L % 8`` of matrix ``L // 8``;
    it gets element ``q`` of its share (see :mod:`relaxjax.tir.intrinsics`)."""
    if len(values) != WARP_SIZE:
        raise _fail(kernel, f"ldmatrix_x4 needs a whole warp of 32 lanes, got {len(values)}")
    rows = {lane: args[2:] for lane, args in values.items()}
    results = {}
    for lane, args in values.items():
        trans, q = int(args[0]), int(args[1])
        matrix, half = q // 2, q % 2
        r, c = lane // 4, 2 * (lane % 4) + half
        if trans:
            r, c = c, r
        results[lane] = rows[8 * matrix + r][c]
    return results


def _shuffled(kind: str, values: dict[int, object], operands: dict[int, int], kernel: str):
    """The results of one shuffle (or tensor-core product, or matrix load) of a warp:
    lane -> value."""
    if kind == MMA:
        return _mma(values, kernel)
    if kind == LDMATRIX:
        return _ldmatrix(values, kernel)
    results = {}
    for lane in values:
        operand = int(operands[lane])
        if kind == "shfl_xor":
            source = lane ^ operand
        else:
            source = lane + operand
            if source >= WARP_SIZE:
                source = lane
        if not 0 <= source < WARP_SIZE or source not in values:
            raise _fail(
                kernel,
                f"{kind} in lane {lane} reads lane {source}, which the warp does not have "
                f"(it has {len(values)} thread(s))",
            )
        results[lane] = values[source]
    return results


def run_block(
    thread: Callable[..., object],
    ranges: Sequence[tuple[int, int]],
    reverse: bool,
    kernel: str,
) -> None:
    """Run the SIMT nest of one thread block: ``thread(x, y, z)`` makes the generator of
    one thread (yielding ``("sync", site)`` at barriers and ``(kind, site, value,
    operand)`` at shuffles, and receiving a shuffle's result); ``ranges`` are the
    ``(start, extent)`` of the ``threadIdx.x/y/z`` loops (outer dims last)."""
    (x0, nx), (y0, ny), (z0, nz) = (tuple(ranges) + ((0, 1), (0, 1)))[:3]
    count = nx * ny * nz
    if count <= 0:
        return
    threads = [thread(x0 + t % nx, y0 + (t // nx) % ny, z0 + t // (nx * ny)) for t in range(count)]
    sends: dict[int, object] = {t: None for t in range(count)}
    waiting: dict[int, object] = {}
    done: set[int] = set()
    while len(done) < count:
        runnable = sorted(sends, reverse=reverse)
        for t in runnable:
            value = sends.pop(t)
            try:
                waiting[t] = threads[t].send(value)
            except StopIteration:
                done.add(t)
        if not _release(waiting, sends, done, count, kernel):
            break
    if waiting:
        raise _divergence(waiting, done, count, kernel)


def _release(waiting: dict, sends: dict, done: set, count: int, kernel: str) -> bool:
    """Completes what the waiting threads allow (shuffles of whole warps, a barrier of
    the whole block); False when nothing can progress."""
    progressed = False
    warps: dict[int, list[int]] = {}
    for t, event in waiting.items():
        if event[0] != "sync":
            warps.setdefault(t // WARP_SIZE, []).append(t)
    for warp, lanes in warps.items():
        first = warp * WARP_SIZE
        members = range(first, min(first + WARP_SIZE, count))
        if len(lanes) != len(members):
            continue
        sites = {waiting[t][:2] for t in lanes}
        if len(sites) != 1:
            raise _fail(
                kernel,
                f"the threads of warp {warp} wait at different shuffles: "
                f"{', '.join(sorted(f'{k} #{s}' for k, s in sites))}",
            )
        kind = next(iter(sites))[0]
        values = {t - first: waiting[t][2] for t in lanes}
        operands = {t - first: waiting[t][3] for t in lanes}
        for lane, result in _shuffled(kind, values, operands, kernel).items():
            del waiting[first + lane]
            sends[first + lane] = result
        progressed = True
    if progressed:
        return True
    if waiting and len(waiting) == count:
        sites = {event for event in waiting.values()}
        if all(event[0] == "sync" for event in sites) and len(sites) == 1:
            for t in list(waiting):
                del waiting[t]
                sends[t] = None
            return True
    return False


def _divergence(waiting: dict, done: set, count: int, kernel: str) -> VerifyError:
    kinds = sorted(
        {f"{e[0]} #{e[1]}" if e[0] != "sync" else f"barrier #{e[1]}" for e in waiting.values()}
    )
    detail = f"{len(waiting)} of {count} thread(s) wait at {', '.join(kinds)}"
    if done:
        detail += f" while {len(done)} finished"
    return _fail(kernel, f"threads diverge at a barrier or shuffle: {detail}")
