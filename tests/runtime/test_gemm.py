"""runtime.gemm: matrix products through OpenBLAS on the runtime's threads.

Checked against numpy in float64: jnp.matmul's shapes (vectors, broadcast batches, empty
and unit dimensions), operands read through transposed strides, float32 and float64,
the job plan (every thread gets a share, column blocks aligned, the batch folded into
the rows of one product), the fallbacks (layouts BLAS cannot read, other dtypes), and
that OpenBLAS's own thread count is back after each call.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import relaxjax as relax
import relaxjax.numpy as rnp
from relaxjax.runtime import gemm

pytestmark = pytest.mark.skipif(
    gemm.gemm_library() is None, reason="numpy's BLAS is not an OpenBLAS with cblas"
)

SHAPES = [
    ((5, 7), (7, 3)),
    ((64, 300), (300, 129)),
    ((1, 768), (768, 300)),  # one-token decode: a row vector times a weight
    ((300, 40), (40, 1)),
    ((2, 3, 17, 8), (2, 3, 8, 19)),
    ((3, 17, 8), (8, 40)),  # folded: one (51, 8) @ (8, 40) product
    ((2, 1, 5, 6), (3, 6, 4)),  # broadcast batch
    ((7,), (7, 5)),
    ((4, 7), (7,)),
    ((7,), (7,)),
    ((3, 7), (2, 7, 5)),
    ((0, 5), (5, 3)),
    ((4, 0), (0, 3)),
    ((4, 5), (5, 0)),
    ((1, 1), (1, 1)),
    ((0, 2, 3), (3, 4)),
]


def _expected(a, b):
    return np.matmul(a.astype(np.float64), b.astype(np.float64))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(("shape_a", "shape_b"), SHAPES, ids=[f"{a}@{b}" for a, b in SHAPES])
def test_products_match_numpy(shape_a, shape_b, dtype):
    rng = np.random.default_rng(len(shape_a) * 10 + len(shape_b))
    a = rng.standard_normal(shape_a).astype(dtype)
    b = rng.standard_normal(shape_b).astype(dtype)
    expected = _expected(a, b)
    out = np.full(expected.shape, np.nan, dtype)  # every element must be written
    gemm.matmul(a, b, out)
    tolerance = 1e-4 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(out, expected, rtol=tolerance, atol=tolerance)


@pytest.mark.parametrize(
    ("transpose_a", "transpose_b"), [(True, False), (False, True), (True, True)]
)
def test_transposed_operands_are_read_through_their_strides(transpose_a, transpose_b):
    rng = np.random.default_rng(3)
    a = rng.standard_normal((2, 33, 70)).astype(np.float32)
    b = rng.standard_normal((2, 70, 45)).astype(np.float32)
    if transpose_a:
        a = np.ascontiguousarray(a.swapaxes(-1, -2)).swapaxes(-1, -2)
    if transpose_b:
        b = np.ascontiguousarray(b.swapaxes(-1, -2)).swapaxes(-1, -2)
    jobs = gemm.plan_jobs(a, b, np.empty((2, 33, 45), np.float32), threads=2)
    assert jobs is not None and set(jobs[:, 1]) == {112 if transpose_a else 111}
    assert set(jobs[:, 2]) == {112 if transpose_b else 111}
    out = np.empty((2, 33, 45), np.float32)
    gemm.matmul(a, b, out)
    np.testing.assert_allclose(out, _expected(a, b), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("transposed", [False, True])
@pytest.mark.parametrize(("rows", "cols"), [(1, 3000), (3000, 1), (1, 1)])
def test_a_row_or_a_column_is_a_gemv(rows, cols, transposed):
    """One-token decode (a row times a weight) and matrix-vector products call GEMV,
    split between the threads, reading the matrix as stored (transposed or not)."""
    rng = np.random.default_rng(rows + cols)
    k = 700
    a = rng.standard_normal((rows, k)).astype(np.float32)
    b = rng.standard_normal((k, cols)).astype(np.float32)
    if transposed:  # the matrix operand read through transposed strides
        a = np.ascontiguousarray(a.T).T if rows > 1 else a
        b = np.ascontiguousarray(b.T).T if cols > 1 else b
    out = np.full((rows, cols), np.nan, np.float32)
    jobs = gemm.plan_jobs(a, b, out, threads=2)
    assert set(jobs[:, 0]) == {2 if rows == 1 else 1}  # GEMV with the matrix b, or a
    assert len(jobs) == (1 if rows == cols else 2)
    gemm.matmul(a, b, out)
    np.testing.assert_allclose(out, _expected(a, b), rtol=1e-4, atol=1e-4)


def test_a_cached_plan_serves_new_operands_of_the_same_layout():
    """Plans are cached by shapes and strides with pointers relative to the operands:
    later operands at other addresses (and the vector of a GEMV) must be found."""
    rng = np.random.default_rng(5)
    keep = []
    for _ in range(3):
        for shape_a, shape_b in [*SHAPES, ((1, 700), (700, 3000)), ((3000, 700), (700, 1))]:
            a = rng.standard_normal(shape_a).astype(np.float32)
            keep.append(np.empty(1000, np.float32))  # moves the next arrays
            b = rng.standard_normal(shape_b).astype(np.float32)
            expected = _expected(a, b)
            out = np.full(expected.shape, np.nan, np.float32)
            gemm.matmul(a, b, out)
            np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-4)


def test_row_blocks_of_one_row_read_a_transposed_operand_through_its_stride():
    """Two rows split between two threads: each block is a GEMV whose vector is a row
    of the transposed left operand (stride lda, not 1)."""
    rng = np.random.default_rng(6)
    k = 1 << 17  # enough work for two threads
    a = np.ascontiguousarray(rng.standard_normal((k, 2)).astype(np.float32)).T
    b = rng.standard_normal((k, 1)).astype(np.float32)
    out = np.full((2, 1), np.nan, np.float32)
    jobs = gemm.plan_jobs(a, b, out, threads=2)
    assert len(jobs) == 2 and set(jobs[:, 0]) == {2} and set(jobs[:, 7]) == {2}
    gemm.matmul(a, b, out)
    np.testing.assert_allclose(out, _expected(a, b), rtol=1e-3, atol=1e-2)


def test_layouts_blas_cannot_read_and_other_dtypes_fall_back_to_numpy():
    rng = np.random.default_rng(4)
    strided = rng.standard_normal((20, 30)).astype(np.float32)[::2, ::3]  # no unit stride
    b = rng.standard_normal((10, 6)).astype(np.float32)
    assert gemm.plan_jobs(strided, b, np.empty((10, 6), np.float32), threads=2) is None
    out = np.empty((10, 6), np.float32)
    gemm.matmul(strided, b, out)
    np.testing.assert_allclose(out, _expected(strided, b), rtol=1e-4, atol=1e-4)
    ints = np.arange(12, dtype=np.int32).reshape(3, 4)
    out = np.empty((3, 3), np.int32)
    gemm.matmul(ints, ints.T.copy(), out)
    np.testing.assert_array_equal(out, ints @ ints.T)


def test_jobs_share_the_work_between_threads():
    f32 = np.float32
    # a large product: one column block per thread, starts on a 64-byte boundary
    jobs = gemm.plan_jobs(
        np.empty((32, 768), f32), np.empty((768, 2304), f32), np.empty((32, 2304), f32), 2
    )
    assert len(jobs) == 2 and list(jobs[:, 4]) == [1152, 1152] and set(jobs[:, 3]) == {32}
    # more rows than columns: row blocks
    jobs = gemm.plan_jobs(
        np.empty((512, 64), f32), np.empty((64, 16), f32), np.empty((512, 16), f32), 2
    )
    assert list(jobs[:, 3]) == [256, 256] and set(jobs[:, 4]) == {16}
    # an even batch: one whole product per job; an odd one: each item halved
    a, b = np.empty((4, 64, 64), f32), np.empty((4, 64, 64), f32)
    assert len(gemm.plan_jobs(a, b, np.empty((4, 64, 64), f32), 2)) == 4
    a, b = np.empty((3, 64, 64), f32), np.empty((3, 64, 64), f32)
    assert len(gemm.plan_jobs(a, b, np.empty((3, 64, 64), f32), 2)) == 6
    # a stack times one weight: the batch folded into the rows of one product
    jobs = gemm.plan_jobs(
        np.empty((3, 17, 8), f32), np.empty((8, 4096), f32), np.empty((3, 17, 4096), f32), 2
    )
    assert set(jobs[:, 3]) == {51} and len(jobs) == 2
    # a small product stays on the calling thread
    assert (
        len(gemm.plan_jobs(np.empty((4, 4), f32), np.empty((4, 4), f32), np.empty((4, 4), f32), 2))
        == 1
    )


def test_openblas_thread_count_is_restored():
    library = gemm.gemm_library()
    before = library.get_threads()
    a = np.ones((256, 256), np.float32)
    gemm.matmul(a, a, np.empty_like(a))
    assert library.get_threads() == before


@pytest.mark.parametrize("n", [0, 1, 2, 33])
def test_a_compiled_program_calls_it(n, monkeypatch):
    """The ``numpy.matmul`` library call of a program runs through it (same results as
    numpy for a symbolic row count, including 0 and 1)."""
    planned = []
    plan = gemm.plan_jobs
    monkeypatch.setattr(gemm, "plan_jobs", lambda *args: planned.append(1) or plan(*args))
    f = relax.jit(lambda x, w, v: rnp.tanh(x @ w) @ v)
    rng = np.random.default_rng(n)
    x = rng.standard_normal((2, n, 48)).astype(np.float32)
    w = rng.standard_normal((48, 96)).astype(np.float32)
    v = rng.standard_normal((96, 24)).astype(np.float32)
    f.trace(relax.Tensor((2, "n", 48), "float32"), w, v)
    expected = np.tanh(x.astype(np.float64) @ w) @ v
    np.testing.assert_allclose(np.asarray(f(x, w, v)), expected, rtol=1e-4, atol=1e-4)
    assert len(planned) == (2 if n else 0)  # an empty product needs no BLAS call


def test_the_pool_can_be_turned_off_for_comparison():
    """``RELAXJAX_BLAS_POOL=0``: no driver, products through numpy.matmul (a fresh
    process: the library is made once per process)."""
    import subprocess
    import sys

    code = (
        "import numpy as np; from relaxjax.runtime import gemm;"
        "a = np.ones((300, 300), np.float32); out = np.empty_like(a);"
        "gemm.matmul(a, a, out); print(gemm.gemm_library() is None, float(out[0, 0]))"
    )
    env = {**os.environ, "RELAXJAX_BLAS_POOL": "0"}
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert result.stdout.split() == ["True", "300.0"], result.stderr


@st.composite
def _operands(draw):
    """Two matmul operands of random sizes (0, 1 and more), batch shapes that broadcast,
    each matrix stored as it is or transposed, and a thread count."""
    m, k, n = (draw(st.sampled_from([0, 1, 2, 3, 17, 40])) for _ in range(3))
    batch = draw(st.lists(st.integers(1, 3), max_size=2))
    batch_a = tuple(d if draw(st.booleans()) else 1 for d in batch)
    batch_b = tuple(d if draw(st.booleans()) else 1 for d in batch)[
        draw(st.integers(0, len(batch))) :
    ]
    vector_a = not batch_a and draw(st.booleans())
    vector_b = not batch_b and draw(st.booleans())
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))

    def matrix(batch, rows, cols, transposed):
        if transposed:
            return np.ascontiguousarray(rng.standard_normal(batch + (cols, rows))).swapaxes(-1, -2)
        return rng.standard_normal(batch + (rows, cols))

    a = rng.standard_normal(k) if vector_a else matrix(batch_a, m, k, draw(st.booleans()))
    b = rng.standard_normal(k) if vector_b else matrix(batch_b, k, n, draw(st.booleans()))
    return a.astype(np.float32), b.astype(np.float32), draw(st.integers(1, 3))


@settings(max_examples=200)  # small products: about a second
@given(_operands())
def test_any_plan_on_any_thread_count_matches_numpy(operands):
    """Every job split (no size threshold) and thread count computes the product."""
    a, b, threads = operands
    expected = _expected(a, b)
    out = np.full(expected.shape, np.nan, np.float32)
    jobs = gemm.plan_jobs(a, b, out, threads, min_work=0) if out.size and a.shape[-1] else None
    if jobs is None:
        gemm.matmul(a, b, out)  # empty products and fallbacks
    else:
        gemm.run_jobs(jobs, out.dtype, threads)
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-4)
