"""cuBLAS through ctypes: the GEMMs of ``call_extern("cublas.matmul*")``.

The library is ``libcublas`` of the ``nvidia-cublas`` wheel (``relaxjax[cuda]``), else of
the toolkit under ``$CUDA_HOME``, found and loaded by ``cuda.pathfinder`` as libnvvm is
(:mod:`relaxjax.backends.cuda.compile`; it loads ``libcublasLt`` first, which libcublas
needs). :func:`load_cublas` raises :class:`~relaxjax.errors.DeviceError` saying why when
it cannot; :func:`cublas_problem` says it without raising.

:class:`Cublas` is the library on one device (its context): one handle, bound to the
device's stream (``cublasSetStream``), with a workspace from the device's caching
allocator (``cublasSetWorkspace``; 32 MiB on sm_90 and newer, 4 MiB before, as NVIDIA
recommends), so cuBLAS never allocates while it runs and its calls can be captured into
CUDA graphs. Math: the default mode with ``CUBLAS_COMPUTE_32F`` for float32, float16
and bfloat16 (float32 accumulation, no TF32, as torch's default), ``CUBLAS_COMPUTE_64F``
for float64. A GEMM is one ``cublasGemmEx_64`` call, a batch of them one
``cublasGemmStridedBatchedEx_64`` (64-bit sizes); each status is checked, a failure
raises ``DeviceError`` naming the call, the status and the GEMM.
"""

from __future__ import annotations

import ctypes
import functools
import threading

from relaxjax.errors import DeviceError
from relaxjax.runtime.cuda.gemm import Gemm, GemmLibrary

__all__ = ["Cublas", "cublas_problem", "load_cublas", "workspace_bytes"]

# cudaDataType_t and cublasComputeType_t (library_types.h, cublas_api.h).
_DATA_TYPES = {"float16": 2, "bfloat16": 14, "float32": 0, "float64": 1}
_COMPUTE_32F, _COMPUTE_64F = 68, 70
_DEFAULT_MATH = 0
_GEMM_DEFAULT = -1
_OP_N, _OP_T = 0, 1
_STATUS = {
    0: "CUBLAS_STATUS_SUCCESS",
    1: "CUBLAS_STATUS_NOT_INITIALIZED",
    3: "CUBLAS_STATUS_ALLOC_FAILED",
    7: "CUBLAS_STATUS_INVALID_VALUE",
    8: "CUBLAS_STATUS_ARCH_MISMATCH",
    11: "CUBLAS_STATUS_MAPPING_ERROR",
    13: "CUBLAS_STATUS_EXECUTION_FAILED",
    14: "CUBLAS_STATUS_INTERNAL_ERROR",
    15: "CUBLAS_STATUS_NOT_SUPPORTED",
    16: "CUBLAS_STATUS_LICENSE_ERROR",
}

_p, _i, _i64, _ll = ctypes.c_void_p, ctypes.c_int, ctypes.c_int64, ctypes.c_longlong
_SIGNATURES = {
    "cublasCreate_v2": (ctypes.POINTER(ctypes.c_void_p),),
    "cublasDestroy_v2": (_p,),
    "cublasSetStream_v2": (_p, _p),
    "cublasSetWorkspace_v2": (_p, _p, ctypes.c_size_t),
    "cublasSetMathMode": (_p, _i),
    "cublasGemmEx_64": (
        _p, _i, _i, _i64, _i64, _i64,  # handle, transa, transb, m, n, k
        _p, _p, _i, _i64, _p, _i, _i64,  # alpha, A, Atype, lda, B, Btype, ldb
        _p, _p, _i, _i64, _i, _i,  # beta, C, Ctype, ldc, computeType, algo
    ),
    "cublasGemmStridedBatchedEx_64": (
        _p, _i, _i, _i64, _i64, _i64,  # handle, transa, transb, m, n, k
        _p, _p, _i, _i64, _ll,  # alpha, A, Atype, lda, strideA
        _p, _i, _i64, _ll,  # B, Btype, ldb, strideB
        _p, _p, _i, _i64, _ll,  # beta, C, Ctype, ldc, strideC
        _i64, _i, _i,  # batchCount, computeType, algo
    ),
}  # fmt: skip


@functools.cache
def _load() -> ctypes.CDLL | str:
    try:
        from cuda import pathfinder

        path = pathfinder.load_nvidia_dynamic_lib("cublas").abs_path
        library = ctypes.CDLL(path)
        for name, argtypes in _SIGNATURES.items():
            function = getattr(library, name)
            function.argtypes = argtypes
            function.restype = ctypes.c_int
        library.cublasGetStatusString.restype = ctypes.c_char_p
        library.cublasGetStatusString.argtypes = (ctypes.c_int,)
    except Exception as err:  # noqa: BLE001 - not installed, not loadable, too old
        return f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}"
    return library


def cublas_problem() -> str | None:
    """Why cuBLAS cannot be loaded here, or None when it can."""
    found = _load()
    return found if isinstance(found, str) else None


def load_cublas() -> ctypes.CDLL:
    """The loaded ``libcublas`` (see the module doc).

    Raises:
        DeviceError: it cannot be found or loaded (the message says what to install).
    """
    found = _load()
    if isinstance(found, str):
        raise DeviceError(
            f"cuBLAS cannot be loaded ({found}): install the nvidia-cublas wheel "
            "(pip install 'relaxjax[cuda]') or a CUDA toolkit under $CUDA_HOME, or compile "
            "with relax.jit(..., library=False) to generate every matmul"
        )
    return found


def workspace_bytes(capability: tuple[int, int]) -> int:
    """The cuBLAS workspace for a device: 32 MiB on Hopper and newer, else 4 MiB."""
    return (32 if capability >= (9, 0) else 4) << 20


class Cublas(GemmLibrary):
    """cuBLAS on one device: a handle on its stream with a workspace (see the module doc)."""

    def __init__(self, device: object) -> None:
        self.library = load_cublas()
        self.device = device
        self._lock = threading.Lock()  # a handle is not to be used by two threads at once
        handle = ctypes.c_void_p()
        self._check("cublasCreate_v2", self.library.cublasCreate_v2(ctypes.byref(handle)))
        self.handle = handle
        self.stream = device.stream  # type: ignore[attr-defined]
        # Setting the stream resets the workspace: the stream first.
        self._check(
            "cublasSetStream_v2", self.library.cublasSetStream_v2(handle, _int(self.stream))
        )
        capability = device.driver.compute_capability()  # type: ignore[attr-defined]
        self.workspace = device.allocator.allocate(workspace_bytes(capability))  # type: ignore[attr-defined]
        status = self.library.cublasSetWorkspace_v2(
            handle, self.workspace.pointer, self.workspace.size
        )
        self._check("cublasSetWorkspace_v2", status)
        self._check("cublasSetMathMode", self.library.cublasSetMathMode(handle, _DEFAULT_MATH))

    def _check(self, call: str, status: int, detail: str = "") -> None:
        if status != 0:
            text = self.library.cublasGetStatusString(status)
            described = text.decode() if text else _STATUS.get(status, "unknown status")
            name = _STATUS.get(status, f"status {status}")
            raise DeviceError(f"cuBLAS call {call} failed: {name} ({described}){detail}")

    def gemm(self, gemm: Gemm, stream: object) -> None:
        if stream is not self.stream:
            raise DeviceError("cuBLAS runs on the device's stream; a call named another stream")
        data_type = _DATA_TYPES[gemm.dtype]
        if gemm.dtype == "float64":
            compute, one, zero = _COMPUTE_64F, ctypes.c_double(1.0), ctypes.c_double(0.0)
        else:
            compute, one, zero = _COMPUTE_32F, ctypes.c_float(1.0), ctypes.c_float(0.0)
        ops = (_OP_T if gemm.transa else _OP_N, _OP_T if gemm.transb else _OP_N)
        sizes = (gemm.m, gemm.n, gemm.k)
        with self._lock:
            if gemm.batch == 1:
                call = "cublasGemmEx_64"
                status = self.library.cublasGemmEx_64(
                    self.handle, *ops, *sizes, ctypes.byref(one),
                    gemm.a, data_type, gemm.lda,
                    gemm.b, data_type, gemm.ldb,
                    ctypes.byref(zero),
                    gemm.c, data_type, gemm.ldc,
                    compute, _GEMM_DEFAULT,
                )  # fmt: skip
            else:
                call = "cublasGemmStridedBatchedEx_64"
                status = self.library.cublasGemmStridedBatchedEx_64(
                    self.handle, *ops, *sizes, ctypes.byref(one),
                    gemm.a, data_type, gemm.lda, gemm.stride_a,
                    gemm.b, data_type, gemm.ldb, gemm.stride_b,
                    ctypes.byref(zero),
                    gemm.c, data_type, gemm.ldc, gemm.stride_c,
                    gemm.batch, compute, _GEMM_DEFAULT,
                )  # fmt: skip
        self._check(call, status, f" for {gemm}")

    def close(self) -> None:
        """Destroy the handle (the workspace goes back to the allocator)."""
        handle, self.handle = self.handle, None
        if handle is not None:
            self.library.cublasDestroy_v2(handle)
            self.workspace.release()


def _int(stream: object) -> int:
    """A stream handle as the address cuBLAS takes."""
    try:
        return int(stream)  # type: ignore[call-overload]
    except TypeError:
        return int(stream.getPtr())  # type: ignore[attr-defined]
