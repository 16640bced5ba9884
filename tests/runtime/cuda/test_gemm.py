"""runtime.cuda.gemm: row-major matmuls planned as column-major cuBLAS GEMMs, run on the
numpy emulation of cublasGemmStridedBatchedEx (tests/runtime/cuda/emulator.py), which
follows the column-major semantics, so the operand swap, transposes, leading dimensions
and batch strides are really checked; and the loading of libcublas."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest
from emulator import EmulatedCublas, EmulatingDriver, EmulationError
from hypothesis import given
from hypothesis import strategies as st

from relaxjax import dtypes
from relaxjax.errors import DeviceError, ShapeError
from relaxjax.runtime.cuda import Device
from relaxjax.runtime.cuda.cublas import cublas_problem, load_cublas, workspace_bytes
from relaxjax.runtime.cuda.gemm import Gemm, MatmulLibrary, plan_gemm


class _Memory:
    """Arrays in the emulating driver's memory, and a cuBLAS emulation on it."""

    def __init__(self) -> None:
        self.driver = EmulatingDriver()
        self.device = Device(self.driver, gemm=EmulatedCublas)
        self.library = self.device.matmul_library()

    def put(self, array: np.ndarray) -> int:
        pointer = self.driver.mem_alloc(max(array.nbytes, 1))
        ctypes.memmove(pointer, np.ascontiguousarray(array).ctypes.data, array.nbytes)
        return pointer

    def get(self, pointer: int, shape: tuple[int, ...], dtype: str) -> np.ndarray:
        out = np.empty(shape, dtypes.to_numpy(dtype))
        ctypes.memmove(out.ctypes.data, pointer, out.nbytes)
        return out

    def matmul(self, a, b, transposes=(False, False), dtype="float32", fill=np.nan):
        """``a @ b`` through plan_gemm and the emulated cuBLAS (a, b stored as given;
        a transposed operand is multiplied as its last two axes swapped)."""
        op_a = np.swapaxes(a, -1, -2) if transposes[0] else a
        op_b = np.swapaxes(b, -1, -2) if transposes[1] else b
        shape = np.matmul(op_a.astype(np.float64), op_b.astype(np.float64)).shape
        c = self.put(np.full(shape, fill).astype(dtypes.to_numpy(dtype)))
        gemm = plan_gemm(
            (self.put(a), a.shape), (self.put(b), b.shape), (c, shape), transposes, dtype
        )
        if gemm is not None:
            self.library.enqueue(gemm, self.device.stream)
        return self.get(c, shape, dtype), gemm, np.matmul(op_a, op_b)


@st.composite
def problems(draw):
    m, n, k = (draw(st.integers(1, 5)) for _ in range(3))
    batch = draw(st.sampled_from([(), (2,), (3, 2)]))
    a_batch = draw(st.sampled_from([batch, (), (1,) * len(batch)]))
    b_batch = draw(st.sampled_from([batch, (), (1,) * len(batch)]))
    ta, tb = draw(st.booleans()), draw(st.booleans())
    a_vector = not a_batch and not ta and draw(st.booleans())
    b_vector = not b_batch and not tb and draw(st.booleans())
    a_shape = (k,) if a_vector else (*a_batch, *((k, m) if ta else (m, k)))
    b_shape = (k,) if b_vector else (*b_batch, *((n, k) if tb else (k, n)))
    return a_shape, b_shape, (ta, tb)


@given(problems(), st.integers(0, 2**31 - 1))
def test_planned_gemms_compute_the_row_major_product(problem, seed):
    a_shape, b_shape, transposes = problem
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(a_shape).astype(np.float32)
    b = rng.standard_normal(b_shape).astype(np.float32)
    memory = _Memory()
    got, gemm, expected = memory.matmul(a, b, transposes)
    assert got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float64"])
def test_every_dtype_accumulates_wide(dtype):
    rng = np.random.default_rng(1)
    np_dtype = dtypes.to_numpy(dtype)
    a = rng.standard_normal((3, 5, 64)).astype(np_dtype)
    b = rng.standard_normal((64, 7)).astype(np_dtype)
    got, gemm, _ = _Memory().matmul(a, b, dtype=dtype)
    expected = (a.astype(np.float64) @ b.astype(np.float64)).astype(np_dtype)
    tolerance = {"float16": 2e-2, "bfloat16": 1.5e-1, "float64": 1e-12}[dtype]
    np.testing.assert_allclose(
        got.astype(np.float64), expected.astype(np.float64), tolerance, tolerance
    )


def test_the_operands_swap_into_column_major():
    gemm = plan_gemm((100, (7, 5)), (200, (5, 3)), (300, (7, 3)), (False, False), "float32")
    assert gemm == Gemm(False, False, 3, 7, 5, 200, 3, 0, 100, 5, 0, 300, 3, 0, 1, "float32")
    # x @ w.T with w stored (3, 5): cuBLAS's A is w, read transposed with ld 5
    gemm = plan_gemm((100, (7, 5)), (200, (3, 5)), (300, (7, 3)), (False, True), "float32")
    assert (gemm.transa, gemm.transb, gemm.lda, gemm.ldb) == (True, False, 5, 5)


def test_a_broadcast_right_operand_folds_the_batch_into_rows():
    gemm = plan_gemm((1, (4, 6, 8)), (2, (8, 3)), (3, (4, 6, 3)), (False, False), "float32")
    assert (gemm.n, gemm.batch, gemm.stride_b, gemm.stride_c) == (24, 1, 0, 0)
    batched = plan_gemm((1, (6, 8)), (2, (4, 8, 3)), (3, (4, 6, 3)), (False, False), "float32")
    assert (batched.batch, batched.stride_a, batched.stride_b, batched.stride_c) == (4, 24, 0, 18)


def test_empty_results_launch_nothing_and_k_0_writes_zeros():
    assert plan_gemm((1, (0, 4)), (2, (4, 3)), (3, (0, 3)), (False, False), "float32") is None
    assert plan_gemm((1, (2, 4)), (2, (4, 0)), (3, (2, 0)), (False, False), "float32") is None
    assert plan_gemm((1, (0, 2, 4)), (2, (4, 3)), (3, (0, 2, 3)), (False, False), "f") is None
    memory = _Memory()
    got, gemm, _ = memory.matmul(np.ones((2, 3, 0), np.float32), np.ones((0, 4), np.float32))
    assert gemm.k == 0 and memory.driver.library_calls == []  # a memset, not cuBLAS
    np.testing.assert_array_equal(got, np.zeros((2, 3, 4), np.float32))


def test_shapes_that_do_not_multiply_are_refused():
    with pytest.raises(ShapeError, match=r"shapes \(2, 4\) and \(5, 3\).*do not multiply"):
        plan_gemm((1, (2, 4)), (2, (5, 3)), (3, (2, 3)), (False, False), "float32")
    with pytest.raises(ShapeError, match=r"do not multiply into \(2, 4\)"):
        plan_gemm((1, (2, 4)), (2, (4, 3)), (3, (2, 4)), (False, False), "float32")
    with pytest.raises(ShapeError, match="do not broadcast to .* as one strided batch"):
        plan_gemm((1, (2, 1, 2, 4)), (2, (3, 4, 3)), (3, (2, 3, 2, 3)), (False, False), "f")


def test_the_emulation_refuses_what_cublas_refuses():
    memory = _Memory()
    a = memory.put(np.ones((2, 4), np.float32))
    bad = Gemm(False, False, 4, 2, 4, a, 3, 0, a, 4, 0, a, 4, 0, 1, "float32")  # lda < m
    with pytest.raises(EmulationError, match="CUBLAS_STATUS_INVALID_VALUE: lda=3"):
        memory.library.enqueue(bad, memory.device.stream)
    outside = Gemm(False, False, 4, 4, 4, a, 4, 0, a, 4, 0, a, 4, 0, 1, "float32")
    with pytest.raises(EmulationError, match="outside any allocation"):
        memory.library.enqueue(outside, memory.device.stream)


def test_matmul_library_sends_k_0_to_a_memset():
    calls = []

    class Recording:
        def memset(self, pointer, nbytes, stream):
            calls.append(("memset", pointer, nbytes))

    class Gemms:
        def gemm(self, gemm, stream):
            calls.append(("gemm", gemm))

    library = MatmulLibrary(Recording(), Gemms())
    empty = Gemm(False, False, 3, 2, 0, 1, 3, 0, 2, 1, 0, 64, 3, 6, 4, "float16")
    library.enqueue(empty, "s")
    full = Gemm(False, False, 3, 2, 1, 1, 3, 0, 2, 1, 0, 64, 3, 6, 4, "float16")
    library.enqueue(full, "s")
    assert calls == [("memset", 64, 4 * 3 * 2 * 2), ("gemm", full)]


def test_workspace_sizes_follow_nvidias_recommendation():
    assert workspace_bytes((9, 0)) == 32 << 20 and workspace_bytes((8, 0)) == 4 << 20


def test_libcublas_loads_where_the_wheel_or_toolkit_is():
    problem = cublas_problem()
    if problem is not None:
        with pytest.raises(DeviceError, match="cuBLAS cannot be loaded .*nvidia-cublas"):
            load_cublas()
        pytest.skip(f"no libcublas here (pip install 'relaxjax[cuda]'): {problem}")
    library = load_cublas()
    version = ctypes.c_int()
    library.cublasGetProperty(0, ctypes.byref(version))  # MAJOR_VERSION
    assert version.value >= 12
    assert library.cublasGemmStridedBatchedEx_64 and library.cublasGemmEx_64


def test_cublas_statuses_raise_clear_errors_where_the_library_loads():
    """Without a GPU cuBLAS answers CUBLAS_STATUS_NOT_INITIALIZED: the handle's creation
    and both GEMM entry points (their ctypes signatures) report it by name."""
    import threading

    from relaxjax.runtime.cuda import probe
    from relaxjax.runtime.cuda.cublas import Cublas

    problem = cublas_problem()
    if problem is not None:
        pytest.skip(f"no libcublas here (pip install 'relaxjax[cuda]'): {problem}")
    if probe().available:
        pytest.skip("a GPU is present: cuBLAS initialises (test_gpu.py checks it)")
    memory = _Memory()
    with pytest.raises(DeviceError, match=r"cublasCreate_v2 failed: CUBLAS_STATUS_NOT_INIT"):
        Cublas(memory.device)
    cublas = Cublas.__new__(Cublas)  # a handle cuBLAS never made: every call is refused
    cublas.library, cublas.handle, cublas.stream = load_cublas(), None, "stream"
    cublas._lock = threading.Lock()
    for batch, entry in ((1, "cublasGemmEx_64"), (3, "cublasGemmStridedBatchedEx_64")):
        gemm = Gemm(True, False, 4, 3, 8, 64, 8, 32, 128, 8, 24, 256, 4, 12, batch, "bfloat16")
        with pytest.raises(DeviceError, match=rf"{entry} failed: CUBLAS_STATUS_NOT_INIT.*m=4"):
            cublas.gemm(gemm, "stream")
    with pytest.raises(DeviceError, match="cuBLAS runs on the device's stream"):
        cublas.gemm(gemm, "another stream")
