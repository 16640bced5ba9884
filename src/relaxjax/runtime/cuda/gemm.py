"""cuBLAS matrix products of row-major arrays: the plan of one call, and the call.

cuBLAS is column-major. A row-major ``c (m, n) = a (m, k) @ b (k, n)`` is, read
column-major, ``c^T (n, m) = b^T (n, k) @ a^T (k, m)`` over the same memory, so one
GEMM computes it with the operands swapped: cuBLAS's ``A`` is our ``b`` and its ``B``
our ``a``, with ``m_cublas = n``, ``n_cublas = m``. An operand passed transposed
(``cublas.matmul.transpose_b`` for ``x @ w.T``: ``w`` is stored ``(n, k)``) is read
through the ``op`` flag and its leading dimension:

=============  ===========  ======  =====
our operand    stored as    op      ld
=============  ===========  ======  =====
b              (k, n)       N       n
b transposed   (n, k)       T       k
a              (m, k)       N       k
a transposed   (k, m)       T       m
=============  ===========  ======  =====

Batch axes: each operand's batch is the result's (stride ``rows * cols``) or broadcast
(stride 0), as :mod:`relaxjax.passes.dispatch_cuda` guarantees. A broadcast ``b`` with an
untransposed ``a`` folds the batch into the rows (one GEMM of ``batch * m`` rows). A
1-D operand is a matrix of one row (``a``) or one column (``b``). An empty result
launches nothing; ``k = 0`` writes zeros (a memset).

:class:`MatmulCall` is what a cuda executable calls for a ``call_extern`` of
``cublas.matmul*`` (device pointers and shapes): it plans the :class:`Gemm` on the host
and records it as a :class:`~relaxjax.runtime.cuda.graphs.LibraryLaunch` of the call, so
cuBLAS runs in order with the kernels, inside CUDA graphs too.
"""

from __future__ import annotations

import abc
import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass

from relaxjax import dtypes
from relaxjax.errors import ShapeError
from relaxjax.passes.dispatch_cuda import CUBLAS_DTYPES, cublas_transposes
from relaxjax.runtime.cuda.graphs import LibraryLaunch, current_recorder

__all__ = ["Gemm", "GemmLibrary", "MatmulCall", "MatmulLibrary", "plan_gemm"]


@dataclass(frozen=True, slots=True)
class Gemm:
    """One ``cublasGemmStridedBatchedEx`` (column-major, the cuBLAS roles): ``C[i] =
    op(A[i]) @ op(B[i])`` for ``i < batch``, ``C`` being ``m x n`` with ``ldc``; strides
    and leading dimensions in elements, pointers in bytes. ``dtype`` of A, B and C."""

    transa: bool
    transb: bool
    m: int
    n: int
    k: int
    a: int
    lda: int
    stride_a: int
    b: int
    ldb: int
    stride_b: int
    c: int
    ldc: int
    stride_c: int
    batch: int
    dtype: str

    @property
    def output_bytes(self) -> int:
        return self.batch * self.m * self.n * dtypes.itemsize(self.dtype)


def _operand(
    shape: Sequence[int], transposed: bool, left: bool, where: str
) -> tuple[int, int, tuple[int, ...]]:
    """(rows, cols, batch) of an operand as it multiplies (after its transpose)."""
    if len(shape) == 1:
        return (1, shape[0], ()) if left else (shape[0], 1, ())
    if len(shape) < 1:
        raise ShapeError(f"{where}: a matmul operand has rank >= 1, given shape {tuple(shape)}")
    rows, cols = (shape[-1], shape[-2]) if transposed else (shape[-2], shape[-1])
    return rows, cols, tuple(shape[:-2])


def _batch_stride(batch: tuple[int, ...], out_batch: tuple[int, ...], size: int, where: str) -> int:
    padded = (1,) * (len(out_batch) - len(batch)) + batch
    if padded == out_batch:
        return size if math.prod(out_batch) > 1 else 0
    if all(d == 1 for d in padded):
        return 0
    raise ShapeError(
        f"{where}: batch axes {batch} do not broadcast to {out_batch} as one strided batch"
    )


def plan_gemm(
    a: tuple[int, tuple[int, ...]],
    b: tuple[int, tuple[int, ...]],
    c: tuple[int, tuple[int, ...]],
    transposes: tuple[bool, bool],
    dtype: str,
    where: str = "cublas.matmul",
) -> Gemm | None:
    """The GEMM computing ``c = a @ b`` for row-major ``(pointer, shape)`` operands (see
    the module doc); None when the result is empty. ``ShapeError`` when the shapes do
    not multiply into ``c``'s."""
    shapes = (tuple(a[1]), tuple(b[1]), tuple(c[1]))
    geometry = _geometry(*shapes, tuple(transposes), where)
    if geometry is None:
        return None
    transa, transb, m, n, k, lda, stride_a, ldb, stride_b, ldc, stride_c, batch = geometry
    return Gemm(
        transa, transb, m, n, k, b[0], lda, stride_a, a[0], ldb, stride_b, c[0], ldc, stride_c,
        batch, dtype,
    )  # fmt: skip


@functools.lru_cache(maxsize=1024)
def _geometry(
    a_shape: tuple[int, ...],
    b_shape: tuple[int, ...],
    c_shape: tuple[int, ...],
    transposes: tuple[bool, bool],
    where: str,
) -> tuple | None:
    """Everything of :func:`plan_gemm`'s GEMM but the pointers and dtype, in ``Gemm``'s
    field order (computed once per shapes: a call with sizes seen before pays a lookup)."""
    m, k, a_batch = _operand(a_shape, transposes[0], True, where)
    k_b, n, b_batch = _operand(b_shape, transposes[1], False, where)
    out_batch = c_shape[: max(len(a_batch), len(b_batch))]
    expected = out_batch + ((m,) if len(a_shape) > 1 else ()) + ((n,) if len(b_shape) > 1 else ())
    if k != k_b or c_shape != expected:
        raise ShapeError(
            f"{where}: operands of shapes {a_shape} and {b_shape} (transposed: "
            f"{transposes}) do not multiply into {c_shape}"
        )
    batch = math.prod(out_batch)
    if batch == 0 or m == 0 or n == 0:
        return None
    stride_a = _batch_stride(a_batch, out_batch, m * k, where)
    stride_b = _batch_stride(b_batch, out_batch, k * n, where)
    if batch > 1 and stride_b == 0 and stride_a and not transposes[0]:
        m, batch, stride_a = m * batch, 1, 0  # a broadcast b: one GEMM over every row
    # cuBLAS's A is our b, its B our a (the module doc's table).
    lda = max(1, k if transposes[1] else n)
    ldb = max(1, m if transposes[0] else k)
    stride_c = m * n if batch > 1 else 0
    return (transposes[1], transposes[0], n, m, k, lda, stride_b, ldb, stride_a, max(1, n),
            stride_c, batch)  # fmt: skip


class GemmLibrary(abc.ABC):
    """A binding of ``cublasGemmStridedBatchedEx``: :class:`~.cublas.Cublas` on a GPU,
    a numpy emulation in tests."""

    @abc.abstractmethod
    def gemm(self, gemm: Gemm, stream: object) -> None:
        """Enqueue ``gemm`` (``k >= 1``, nothing empty) on ``stream``, the device's."""
        ...


class MatmulLibrary:
    """What a recorded cuBLAS launch runs: the GEMM, or a memset of the result when
    ``k = 0`` (cuBLAS is not asked to multiply empty matrices)."""

    def __init__(self, driver: object, library: GemmLibrary) -> None:
        self.driver = driver
        self.library = library

    def enqueue(self, gemm: Gemm, stream: object) -> None:
        if gemm.k == 0:
            self.driver.memset(gemm.c, gemm.output_bytes, stream)  # type: ignore[attr-defined]
        else:
            self.library.gemm(gemm, stream)


class MatmulCall:
    """The runtime function of a ``cublas.matmul*`` call_extern on one device:
    ``call(a, b, c, a_shape, b_shape, c_shape)`` with device addresses."""

    def __init__(self, device: object, symbol: str, dtype: str) -> None:
        if dtype not in CUBLAS_DTYPES:
            raise ValueError(f"{symbol}: cuBLAS multiplies {CUBLAS_DTYPES}, not {dtype}")
        self.device = device
        self.symbol = symbol
        self.dtype = dtype
        self.transposes = cublas_transposes(symbol)
        self.library = device.matmul_library()  # type: ignore[attr-defined]

    def __call__(
        self,
        a: int,
        b: int,
        c: int,
        a_shape: tuple[int, ...],
        b_shape: tuple[int, ...],
        c_shape: tuple[int, ...],
    ) -> None:
        gemm = plan_gemm((a, a_shape), (b, b_shape), (c, c_shape), self.transposes, self.dtype)
        if gemm is None:
            return
        launch = LibraryLaunch(self.library, gemm, (gemm.m, gemm.n, gemm.k, gemm.batch))
        recorder = current_recorder()
        if recorder is not None:
            recorder.add(launch)
        else:
            launch.enqueue(self.device.driver, self.device.stream)  # type: ignore[attr-defined]

    def __repr__(self) -> str:
        return f"<{self.symbol} {self.dtype}>"
