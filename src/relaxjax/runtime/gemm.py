"""Matrix products through BLAS on the runtime's own threads: one thread budget.

The compiled kernels' parallel loops run on libgomp's workers; a matrix product sent
to ``numpy.matmul`` runs on OpenBLAS's own pool. Two pools on the same cores hand the
machine back and forth on every library call: a pool that sleeps right after a call
(:mod:`relaxjax.runtime.blas`) must be woken for the next one, which on a virtual
machine costs 50 to 150 us per call (a one-token decode is a chain of such calls), and
a pool that spins steals the next kernel's cores. Under load from other processes the
hand-over is worse still: OpenBLAS's caller spins waiting for a worker that the OS has
not scheduled.

This module runs the product on libgomp's threads instead, as PyTorch runs MKL on its
OpenMP pool. The product is cut into jobs, one per thread (the batch items, and each
matrix split into column blocks when ``N >= M``, else row blocks), and a small compiled
function (LLVM IR below) enters ``GOMP_parallel``; each thread calls OpenBLAS's
``cblas_?gemm`` on its jobs while OpenBLAS is held single-threaded
(``openblas_set_num_threads(1)``, restored after the call), so BLAS's packing and
micro-kernels do the arithmetic and our pool does the threading.

Operands follow ``jnp.matmul``: batch dimensions broadcast, a 1-D operand is a row
(left) or column (right) vector; a matrix whose last two strides are not those of a
row-major or a transposed row-major matrix, a dtype other than float32/float64, or a
BLAS that is not OpenBLAS goes to ``numpy.matmul`` unchanged. A 2-D right operand
shared by every batch item folds the batch into the rows of one product (``x @ w``
for ``x`` of shape (B, n, d)).

The drivers' object code is kept in the disk cache (namespace ``blas``) like the
kernels', so a warm process links it without running LLVM.

``RELAXJAX_BLAS_POOL=0`` in the environment (read once, when the first product runs)
sends every product to ``numpy.matmul`` on OpenBLAS's own threads instead: the
comparison to make when measuring this choice.
"""

from __future__ import annotations

import ctypes
import functools
import math
import os
import threading
from dataclasses import dataclass

import numpy as np

from relaxjax.runtime.blas import blas_libraries

__all__ = ["GemmLibrary", "gemm_library", "matmul", "plan_jobs", "run_jobs"]

_ROW_MAJOR, _NO_TRANS, _TRANS = 101, 111, 112
#: Fields of one job, int64 each: transposes, sizes, then pointer/leading-dim pairs.
_FIELDS = ("kind", "trans_a", "trans_b", "m", "n", "k", "a", "lda", "b", "ldb", "c", "ldc")
#: Job kinds: ``cblas_?gemm(trans_a, trans_b, m, n, k, a, lda, b, ldb, c, ldc)``; for a
#: product with one column, ``cblas_?gemv(trans_a, m, n, a, lda, b, ldb, c, ldc)``
#: (``ldb``/``ldc`` the vectors' increments), and with one row the same with the matrix
#: ``b`` and the vector ``a`` swapped (``lda`` its increment): a GEMM would pack the
#: matrix. Pointer fields always hold a pointer into their own operand.
_GEMM, _GEMV_COLUMN, _GEMV_ROW = 0, 1, 2
#: The disk cache's namespace for the drivers' object code (beside the kernels').
_CACHE_NAMESPACE = "blas"
#: Products with fewer multiply-adds than this run on the calling thread alone: waking
#: a worker costs more than it saves.
_SERIAL_WORK = 1 << 18
#: Column blocks start on a multiple of this many elements (a 64-byte vector).
_COLUMN_ALIGN = 16


_DECLARATIONS = """
declare void @GOMP_parallel(ptr, ptr, i32, i32)
declare i32 @omp_get_thread_num()
declare i32 @omp_get_num_threads()
"""

#: One driver: ``{name}(context, threads)`` runs the jobs of ``context = {cblas_?gemm,
#: cblas_?gemv, jobs, count}`` on ``threads`` threads, each a contiguous share of the jobs.
_DRIVER = """
define internal void @{name}_body(ptr %ctx) {{
entry:
  %gemm = load ptr, ptr %ctx
  %gemv_at = getelementptr inbounds i64, ptr %ctx, i64 1
  %gemv = load ptr, ptr %gemv_at
  %jobs_at = getelementptr inbounds i64, ptr %ctx, i64 2
  %jobs = load ptr, ptr %jobs_at
  %count_at = getelementptr inbounds i64, ptr %ctx, i64 3
  %count = load i64, ptr %count_at
  %tid32 = call i32 @omp_get_thread_num()
  %nt32 = call i32 @omp_get_num_threads()
  %tid = sext i32 %tid32 to i64
  %nt = sext i32 %nt32 to i64
  %lo_num = mul i64 %tid, %count
  %lo = udiv i64 %lo_num, %nt
  %tid1 = add i64 %tid, 1
  %hi_num = mul i64 %tid1, %count
  %hi = udiv i64 %hi_num, %nt
  %empty = icmp uge i64 %lo, %hi
  br i1 %empty, label %done, label %loop
loop:
  %j = phi i64 [ %lo, %entry ], [ %next, %join ]
  %base = mul i64 %j, 12
  %at0 = add i64 %base, 0
  %at1 = add i64 %base, 1
  %at2 = add i64 %base, 2
  %at3 = add i64 %base, 3
  %at4 = add i64 %base, 4
  %at5 = add i64 %base, 5
  %at6 = add i64 %base, 6
  %at7 = add i64 %base, 7
  %at8 = add i64 %base, 8
  %at9 = add i64 %base, 9
  %at10 = add i64 %base, 10
  %at11 = add i64 %base, 11
  %f0 = getelementptr inbounds i64, ptr %jobs, i64 %at0
  %kind = load i64, ptr %f0
  %f1 = getelementptr inbounds i64, ptr %jobs, i64 %at1
  %ta64 = load i64, ptr %f1
  %f2 = getelementptr inbounds i64, ptr %jobs, i64 %at2
  %tb64 = load i64, ptr %f2
  %f3 = getelementptr inbounds i64, ptr %jobs, i64 %at3
  %m = load i64, ptr %f3
  %f4 = getelementptr inbounds i64, ptr %jobs, i64 %at4
  %n = load i64, ptr %f4
  %f5 = getelementptr inbounds i64, ptr %jobs, i64 %at5
  %k = load i64, ptr %f5
  %f6 = getelementptr inbounds i64, ptr %jobs, i64 %at6
  %a = load ptr, ptr %f6
  %f7 = getelementptr inbounds i64, ptr %jobs, i64 %at7
  %lda = load i64, ptr %f7
  %f8 = getelementptr inbounds i64, ptr %jobs, i64 %at8
  %b = load ptr, ptr %f8
  %f9 = getelementptr inbounds i64, ptr %jobs, i64 %at9
  %ldb = load i64, ptr %f9
  %f10 = getelementptr inbounds i64, ptr %jobs, i64 %at10
  %c = load ptr, ptr %f10
  %f11 = getelementptr inbounds i64, ptr %jobs, i64 %at11
  %ldc = load i64, ptr %f11
  %ta = trunc i64 %ta64 to i32
  %tb = trunc i64 %tb64 to i32
  %mi = {narrow} i64 %m to {int}
  %ni = {narrow} i64 %n to {int}
  %ki = {narrow} i64 %k to {int}
  %ldai = {narrow} i64 %lda to {int}
  %ldbi = {narrow} i64 %ldb to {int}
  %ldci = {narrow} i64 %ldc to {int}
  %is_gemm = icmp eq i64 %kind, 0
  br i1 %is_gemm, label %call_gemm, label %call_gemv
call_gemm:
  call void %gemm(i32 {row_major}, i32 %ta, i32 %tb, {int} %mi, {int} %ni, {int} %ki,
                  {real} 1.0, ptr %a, {int} %ldai, ptr %b, {int} %ldbi,
                  {real} 0.0, ptr %c, {int} %ldci)
  br label %join
call_gemv:
  %is_row = icmp eq i64 %kind, 2
  %matrix = select i1 %is_row, ptr %b, ptr %a
  %ldm = select i1 %is_row, {int} %ldbi, {int} %ldai
  %vector = select i1 %is_row, ptr %a, ptr %b
  %inc = select i1 %is_row, {int} %ldai, {int} %ldbi
  call void %gemv(i32 {row_major}, i32 %ta, {int} %mi, {int} %ni, {real} 1.0, ptr %matrix,
                  {int} %ldm, ptr %vector, {int} %inc, {real} 0.0, ptr %c, {int} %ldci)
  br label %join
join:
  %next = add i64 %j, 1
  %more = icmp ult i64 %next, %hi
  br i1 %more, label %loop, label %done
done:
  ret void
}}

define void @{name}(ptr %ctx, i32 %threads) {{
entry:
  call void @GOMP_parallel(ptr @{name}_body, ptr %ctx, i32 %threads, i32 0)
  ret void
}}
"""


@dataclass(frozen=True, slots=True, eq=False)
class GemmLibrary:
    """OpenBLAS's entry points and the compiled parallel drivers, per dtype."""

    drivers: dict[np.dtype, ctypes._CFuncPtr]
    blas: dict[np.dtype, tuple[int, int]]  # dtype -> addresses of cblas_?gemm, cblas_?gemv
    set_threads: ctypes._CFuncPtr
    get_threads: ctypes._CFuncPtr
    max_threads: int


def _symbol(library: ctypes.CDLL, names: tuple[str, ...]) -> tuple[str, object] | None:
    """The first of ``names`` the library exports, with its function."""
    for name in names:
        try:
            return name, getattr(library, name)
        except AttributeError:
            continue
    return None


def _openblas_entry_points() -> tuple[dict[str, object], bool] | None:
    """cblas_?gemm/?gemv and the thread-count calls of the process's OpenBLAS, and
    whether its integers are 64-bit; None without one."""
    for path in blas_libraries():
        try:
            library = ctypes.CDLL(path)
        except OSError:
            continue
        found = {}
        for key, stem in (
            ("s", "cblas_sgemm"),
            ("d", "cblas_dgemm"),
            ("sv", "cblas_sgemv"),
            ("dv", "cblas_dgemv"),
            ("set", "openblas_set_num_threads"),
            ("get", "openblas_get_num_threads"),
        ):
            hit = _symbol(library, (f"scipy_{stem}64_", f"{stem}64_", stem))
            if hit is None:
                break
            found[key] = hit
        else:
            wide = found["s"][0].endswith("64_")
            return {key: function for key, (_, function) in found.items()}, wide
    return None


@functools.cache
def gemm_library() -> GemmLibrary | None:
    """The compiled drivers over the process's OpenBLAS, once; None when there is no
    OpenBLAS with the cblas entry points, or ``RELAXJAX_BLAS_POOL=0`` (products then go
    to ``numpy.matmul``)."""
    from relaxjax.backends.llvm.cache import cache_key, read_entry, write_entry
    from relaxjax.backends.llvm.gomp import ensure_libgomp
    from relaxjax.backends.llvm.jit import compile_object, load_object
    from relaxjax.backends.llvm.target import host_target

    if os.environ.get("RELAXJAX_BLAS_POOL", "1") == "0":
        return None
    entry = _openblas_entry_points()
    if entry is None:
        return None
    functions, wide = entry
    gomp = ensure_libgomp()
    integer = "i64" if wide else "i32"
    text = _DECLARATIONS + "".join(
        _DRIVER.format(
            name=f"relaxjax_gemm_{real}",
            int=integer,
            narrow="bitcast" if wide else "trunc",
            real=real,
            row_major=_ROW_MAJOR,
        )
        for real in ("float", "double")
    )
    target = host_target()
    symbols = ("relaxjax_gemm_float", "relaxjax_gemm_double")
    key = cache_key(text, target.cache_identity())
    obj = read_entry(key, _CACHE_NAMESPACE)  # a warm process skips LLVM
    if obj is None:
        obj = compile_object(text, target, "the BLAS driver")
        write_entry(key, obj, _CACHE_NAMESPACE)
    library = load_object(obj, symbols, target)
    driver = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int)
    set_threads, get_threads = functions["set"], functions["get"]
    set_threads.argtypes, set_threads.restype = [ctypes.c_int], None
    get_threads.argtypes, get_threads.restype = [], ctypes.c_int
    gomp.omp_get_max_threads.restype = ctypes.c_int
    return GemmLibrary(
        drivers={
            np.dtype(np.float32): driver(library.addresses["relaxjax_gemm_float"]),
            np.dtype(np.float64): driver(library.addresses["relaxjax_gemm_double"]),
        },
        blas={
            np.dtype(dtype): tuple(
                ctypes.cast(functions[key], ctypes.c_void_p).value for key in keys
            )
            for dtype, keys in ((np.float32, ("s", "sv")), (np.float64, ("d", "dv")))
        },
        set_threads=set_threads,
        get_threads=get_threads,
        max_threads=max(1, int(gomp.omp_get_max_threads())),
    )


def _layout(strides: tuple[int, int], rows: int, cols: int) -> tuple[int, int] | None:
    """``(trans, ld)`` of a (rows, cols) matrix with these element strides: row-major
    (``trans`` 0) or the transpose of a row-major one (1); None when neither."""
    s0, s1 = strides
    if cols == 1:
        s1 = 1
    if rows == 1:
        s0 = max(cols, 1)
    if s1 == 1 and s0 >= max(cols, 1):
        return 0, s0
    if s0 == 1 and s1 >= max(rows, 1):
        return 1, s1
    return None


def _pieces(batch: int, threads: int, m: int, n: int) -> int:
    """How many blocks each batch item's product is cut into: enough that every thread
    gets an equal share of the blocks when the batch alone does not divide evenly."""
    pieces = threads // math.gcd(batch, threads)
    extent = n // _COLUMN_ALIGN if n >= m else m
    return max(1, min(pieces, extent))


def _bounds(extent: int, pieces: int, align: int) -> list[tuple[int, int]]:
    """``pieces`` consecutive ranges covering ``range(extent)``, starts aligned."""
    cuts = [min(extent, -(-extent * i // pieces // align) * align) for i in range(pieces)]
    cuts.append(extent)
    return [(lo, hi) for lo, hi in zip(cuts, cuts[1:]) if hi > lo]


def _as_matrices(a: np.ndarray, b: np.ndarray, out: np.ndarray):
    """The operands as (..., M, K), (..., K, N) and (..., M, N) views of one batch shape
    (jnp.matmul's vector rules, the batch broadcast)."""
    a = a[None, :] if a.ndim == 1 else a
    b = b[:, None] if b.ndim == 1 else b
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    out = out.reshape(batch + (a.shape[-2], b.shape[-1]))
    return (
        np.broadcast_to(a, batch + a.shape[-2:]),
        np.broadcast_to(b, batch + b.shape[-2:]),
        out,
    )


def _fold_batch(a: np.ndarray, b: np.ndarray, out: np.ndarray):
    """``(a, b, out)`` with the batch folded into the rows when ``b`` is one matrix
    shared by all items and ``a`` and ``out`` are row-major stacks; unchanged otherwise."""
    if a.ndim <= 2 or any(s != 0 for s in b.strides[:-2]):
        return a, b, out
    try:
        rows_a = a.reshape(-1, a.shape[-1], copy=False)
        rows_out = out.reshape(-1, out.shape[-1], copy=False)
    except ValueError:
        return a, b, out
    return rows_a, b[(0,) * (b.ndim - 2)], rows_out


def _job(trans_a, trans_b, rows, cols, k, a, b, c) -> tuple[int, ...]:
    """One job's record: ``c = a @ b`` for a (rows, k) ``a`` and a (k, cols) ``b`` read
    as BLAS matrices (``(pointer, leading dimension)`` each, with their transposes); a
    GEMV when there is one row or one column."""
    flag = {False: _NO_TRANS, True: _TRANS}
    if rows == 1:  # c = x @ b with x a row of a: b^T x
        # b stored (k, cols) is read transposed; stored (cols, k), as it is
        m, n = (cols, k) if trans_b else (k, cols)
        increment = a[1] if trans_a else 1  # a row of a transposed matrix is strided
        return (_GEMV_ROW, flag[not trans_b], 0, m, n, 0, a[0], increment, *b, c[0], 1)
    if cols == 1:  # c = a @ y with y a column whose stride is its leading dimension
        m, n = (k, rows) if trans_a else (rows, k)
        return (_GEMV_COLUMN, flag[bool(trans_a)], 0, m, n, 0, *a, b[0], 1 if trans_b else b[1], *c)
    return (_GEMM, flag[bool(trans_a)], flag[bool(trans_b)], rows, cols, k, *a, *b, *c)


def plan_jobs(
    a: np.ndarray, b: np.ndarray, out: np.ndarray, threads: int, min_work: int = _SERIAL_WORK
) -> np.ndarray | None:
    """The jobs computing ``out = a @ b`` (a (count, 12) int64 array of
    :data:`_FIELDS`) for ``threads`` threads (one, below ``min_work`` multiply-adds),
    or None when an operand's layout is not one BLAS reads."""
    a, b, out = _fold_batch(*_as_matrices(a, b, out))
    m, k = a.shape[-2:]
    n = out.shape[-1]
    size = a.itemsize
    layouts = [
        _layout((x.strides[-2] // size, x.strides[-1] // size), *x.shape[-2:]) for x in (a, b)
    ]
    if None in layouts or any(s % size for x in (a, b) for s in x.strides):
        return None
    (trans_a, lda), (trans_b, ldb) = layouts
    ldc = out.strides[-2] // size if m > 1 else max(n, 1)
    batch = out.shape[:-2]
    count = math.prod(batch)
    if m * n * k < min_work:
        threads = 1
    pieces = _pieces(count, threads, m, n)
    split_columns = n >= m
    bounds = _bounds(n if split_columns else m, pieces, _COLUMN_ALIGN if split_columns else 1)
    base = [x.ctypes.data for x in (a, b, out)]
    jobs = []
    for index in np.ndindex(batch):
        at = [
            p + sum(i * s for i, s in zip(index, x.strides[:-2])) for p, x in zip(base, (a, b, out))
        ]
        for lo, hi in bounds:
            if split_columns:
                offset_b = lo * (ldb if trans_b else 1)
                job_a, job_b, job_c = at[0], at[1] + offset_b * size, at[2] + lo * size
                rows, cols = m, hi - lo
            else:
                offset_a = lo * (1 if trans_a else lda)
                job_a, job_b, job_c = at[0] + offset_a * size, at[1], at[2] + lo * ldc * size
                rows, cols = hi - lo, n
            jobs.append(
                _job(trans_a, trans_b, rows, cols, k, (job_a, lda), (job_b, ldb), (job_c, ldc))
            )
    return np.array(jobs, np.int64).reshape(-1, len(_FIELDS))


_lock = threading.Lock()
_active = [0, 0]  # [calls in flight, OpenBLAS's thread count before the first]


class _SingleThreadedBlas:
    """OpenBLAS held at one thread while any product runs on our pool (reentrant across
    Python threads: the first entrant saves the count, the last restores it)."""

    def __init__(self, library: GemmLibrary) -> None:
        self.library = library

    def __enter__(self) -> None:
        with _lock:
            if _active[0] == 0:
                _active[1] = self.library.get_threads()
                if _active[1] != 1:
                    self.library.set_threads(1)
            _active[0] += 1

    def __exit__(self, *exc: object) -> None:
        with _lock:
            _active[0] -= 1
            if _active[0] == 0 and _active[1] != 1:
                self.library.set_threads(_active[1])


@dataclass(frozen=True, slots=True)
class _Plan:
    """The jobs of one layout of operands, pointers relative to the operands' data."""

    jobs: np.ndarray  # (count, len(_FIELDS)) int64, pointer fields as offsets
    threads: int
    blas: tuple[int, int]


_POINTERS = np.zeros((3, len(_FIELDS)), np.int64)
for _row, _field in enumerate(("a", "b", "c")):
    _POINTERS[_row, _FIELDS.index(_field)] = 1
_plans: dict[tuple, _Plan | None] = {}
_MAX_PLANS = 4096


def _plan(library: GemmLibrary, a: np.ndarray, b: np.ndarray, out: np.ndarray) -> _Plan | None:
    """The cached plan for these operands' shapes, strides and dtype (None: numpy's)."""
    key = (a.shape, a.strides, b.shape, b.strides, out.shape, out.strides, out.dtype.num)
    try:
        return _plans[key]
    except KeyError:
        pass
    jobs = plan_jobs(a, b, out, library.max_threads)
    plan = None
    if jobs is not None:
        bases = np.array([x.ctypes.data for x in (a, b, out)], np.int64) @ _POINTERS
        threads = min(len(jobs), library.max_threads)
        plan = _Plan(jobs - bases, threads, library.blas[out.dtype])
    if len(_plans) >= _MAX_PLANS:
        _plans.clear()
    _plans[key] = plan
    return plan


def matmul(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
    """``out[...] = a @ b`` (jnp.matmul semantics, ``out`` C-contiguous of the result's
    shape and dtype), on the runtime's threads when OpenBLAS is there (module doc)."""
    library = gemm_library() if a.dtype == b.dtype == out.dtype else None
    driver = library.drivers.get(out.dtype) if library is not None else None
    if driver is None or out.size == 0:
        np.matmul(a, b, out=out)
        return
    if a.shape[-1] == 0:
        out[...] = 0
        return
    plan = _plan(library, a, b, out)
    if plan is None:
        np.matmul(a, b, out=out)
        return
    bases = np.array((a.ctypes.data, b.ctypes.data, out.ctypes.data), np.int64) @ _POINTERS
    run_jobs(plan.jobs + bases, out.dtype, plan.threads)


def run_jobs(jobs: np.ndarray, dtype: np.dtype, threads: int) -> None:
    """Run :func:`plan_jobs`' jobs for operands of ``dtype`` on ``threads`` threads
    (the operands must stay alive meanwhile: the jobs hold their addresses)."""
    library = gemm_library()
    context = np.array((*library.blas[dtype], jobs.ctypes.data, len(jobs)), np.int64)
    with _SingleThreadedBlas(library):
        library.drivers[dtype](context.ctypes.data, threads)
