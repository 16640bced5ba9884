"""The tensor-core intrinsic ``mma_m16n8k16``: its fragment layout and semantics in the
interpreter (one warp's 32 lanes), its checks, and the matmul rule's kernels that use it
(float16/bfloat16 on sm_80+), equal to numpy over sizes with remainders."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from gpu_kernels import run_both
from hypothesis import given, settings
from hypothesis import strategies as st

from relaxjax import arith, tir
from relaxjax.schedule.rules.gpu import GpuParams, gpu_params, matmul_rule
from relaxjax.tir import te
from relaxjax.tir.buffer import Buffer
from relaxjax.tir.expr import BufferLoad, Call, IntImm, const
from relaxjax.tir.function import PrimFunc
from relaxjax.tir.intrinsics import LDMATRIX, MMA
from relaxjax.tir.simt import mma_fragments
from relaxjax.tir.stmt import Allocate, BufferStore, For, seq


def _one_warp_mma(dtype: str) -> PrimFunc:
    """D = A @ B + C for one 16x16 x 16x8 tile, each lane loading its fragments."""
    A = Buffer("A", (16, 16), dtype)
    B = Buffer("B", (16, 8), dtype)
    C = Buffer("C", (16, 8), "float32")
    D = Buffer("D", (16, 8), "float32")
    d = Buffer("d", (4,), "float32", None, "local")
    lane = arith.Sym("lane")
    g, t = lane // 4, lane % 4
    a = [BufferLoad(A, (g + 8 * ((e // 2) % 2), 2 * t + e % 2 + 8 * (e // 4))) for e in range(8)]
    b = [BufferLoad(B, (2 * t + e % 2 + 8 * (e // 2), g)) for e in range(4)]
    c = [BufferLoad(C, (g + 8 * (q // 2), 2 * t + q % 2)) for q in range(4)]
    products = [BufferStore(d, Call(MMA, (IntImm(q, "int32"), *a, *b, *c)), (q,)) for q in range(4)]
    stores = [
        BufferStore(D, BufferLoad(d, (q,)), (g + 8 * (q // 2), 2 * t + q % 2)) for q in range(4)
    ]
    body = For(
        lane,
        0,
        32,
        "thread_binding",
        Allocate(d, seq(*products, *stores)),
        thread_tag="threadIdx.x",
    )
    block = For(arith.Sym("blk"), 0, 1, "thread_binding", body, thread_tag="blockIdx.x")
    return PrimFunc("mma_tile", (A, B, C, D), block, num_outputs=1)


def test_mma_fragments_cover_each_tile_once():
    a, b, c = set(), set(), set()
    for lane in range(32):
        fa, fb, fc = mma_fragments(lane)
        a |= set(fa)
        b |= set(fb)
        c |= set(fc)
    assert len(a) == 256 and len(b) == 128 and len(c) == 128
    # The PTX ISA's examples: lane 5 (group 1, thread 1) holds A[1, 2:4], A[9, 2:4], ...
    fa, fb, fc = mma_fragments(5)
    assert fa[:4] == [(1, 2), (1, 3), (9, 2), (9, 3)] and fa[4] == (1, 10)
    assert fb == [(2, 1), (3, 1), (10, 1), (11, 1)]
    assert fc == [(1, 2), (1, 3), (9, 2), (9, 3)]


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_mma_in_the_interpreter_is_the_product_of_the_warp(dtype):
    func = _one_warp_mma(dtype)
    import ml_dtypes  # noqa: F401 - numpy's bfloat16

    rng = np.random.default_rng(3)
    a = rng.standard_normal((16, 16)).astype(dtype)
    b = rng.standard_normal((16, 8)).astype(dtype)
    c = rng.standard_normal((16, 8)).astype(np.float32)
    want = a.astype(np.float64) @ b.astype(np.float64) + c
    np.testing.assert_allclose(run_both(func, a, b, c), want, rtol=1e-6, atol=1e-6)


def _one_warp_ldmatrix(trans: int) -> PrimFunc:
    """Each lane's 8 elements of ``ldmatrix_x4`` over a 16x16 tile staged in shared
    memory: lane ``L`` points at row ``L % 8 + 8 * (L // 8 % 2)``, columns
    ``8 * (L // 16)`` onward (the A-fragment addressing)."""
    X = Buffer("X", (16, 16), "float16")
    Y = Buffer("Y", (32, 8), "float16")
    sh = Buffer("sh", (16, 16), "float16", None, "shared")
    lane = arith.Sym("lane")
    c = arith.Sym("c")
    fill = For(
        c,
        0,
        8,
        "serial",
        BufferStore(
            sh, BufferLoad(X, (lane // 2, (lane % 2) * 8 + c)), (lane // 2, (lane % 2) * 8 + c)
        ),
    )
    row, col = lane % 8 + 8 * ((lane // 8) % 2), 8 * (lane // 16)
    args = [BufferLoad(sh, (row, col + e)) for e in range(8)]
    loads = [
        BufferStore(
            Y, Call(LDMATRIX, (IntImm(trans, "int32"), IntImm(q, "int32"), *args)), (lane, q)
        )
        for q in range(8)
    ]
    from relaxjax.tir.simt import syncthreads

    body = For(
        lane, 0, 32, "thread_binding", seq(fill, syncthreads(), *loads), thread_tag="threadIdx.x"
    )
    block = For(
        arith.Sym("blk"), 0, 1, "thread_binding", Allocate(sh, body), thread_tag="blockIdx.x"
    )
    return PrimFunc("ldm", (X, Y), block, num_outputs=1)


@pytest.mark.parametrize("trans", [0, 1])
def test_ldmatrix_deals_out_four_8x8_matrices(trans):
    x = np.arange(256, dtype=np.float16).reshape(16, 16)
    got = run_both(_one_warp_ldmatrix(trans), x)
    # Matrices 0..3: rows 0-7/8-15 of columns 0-7, then of columns 8-15.
    mats = [x[0:8, 0:8], x[8:16, 0:8], x[0:8, 8:16], x[8:16, 8:16]]
    for lane in range(32):
        for q in range(8):
            r, c = lane // 4, 2 * (lane % 4) + q % 2
            want = mats[q // 2][c, r] if trans else mats[q // 2][r, c]
            assert got[lane, q] == want, (lane, q)
    if not trans:  # without .trans the lanes hold exactly the mma A fragment
        for lane in range(32):
            frag = [x[i, j] for i, j in mma_fragments(lane)[0]]
            assert list(got[lane]) == frag


def test_ldmatrix_checks_its_operands():
    sh = Buffer("sh", (16, 16), "float16", None, "shared")
    row = [BufferLoad(sh, (0, e)) for e in range(8)]
    with pytest.raises(ValueError, match="takes 10 arguments"):
        Call(LDMATRIX, (IntImm(0, "int32"), *row))
    with pytest.raises(ValueError, match="q of ldmatrix_x4 must be a constant 0..7"):
        Call(LDMATRIX, (IntImm(0, "int32"), IntImm(8, "int32"), *row))
    wide = Buffer("w", (16, 16), "float32", None, "shared")
    with pytest.raises(TypeError, match="loads 16-bit elements, got float32"):
        Call(
            LDMATRIX,
            (IntImm(1, "int32"), IntImm(0, "int32"), *[BufferLoad(wide, (0, e)) for e in range(8)]),
        )


def test_mma_checks_its_operands():
    half = [const(1.0, "float16")] * 12
    single = [const(0.0, "float32")] * 4
    with pytest.raises(ValueError, match="takes 17 arguments"):
        Call(MMA, (IntImm(0, "int32"), *half))
    with pytest.raises(ValueError, match="must be a constant 0..3"):
        Call(MMA, (IntImm(4, "int32"), *half, *single))
    with pytest.raises(TypeError, match="must all be one of float16, bfloat16"):
        Call(MMA, (IntImm(0, "int32"), *single * 3, *single))
    with pytest.raises(TypeError, match="c fragment of mma_m16n8k16 must be float32"):
        Call(MMA, (IntImm(0, "int32"), *half, *half[:4]))
    assert Call(MMA, (IntImm(1, "int32"), *half, *single)).dtype == "float32"


# --- the matmul rule on tensor cores ---------------------------------------------------

n, K, m = arith.syms("n K m")
SMALL = GpuParams(mma_tile_m=32, mma_tile_n=32, mma_step=16, mma_warps=(1, 2), mma_small_tiles=())


def _product(dtype: str, epilogue: bool, batch: bool = False) -> PrimFunc:
    """``cast(A @ B)`` with float32 accumulation (as the ops lower it), optionally
    ``+ bias`` then ``* 0.5`` in the epilogue; a batch axis in front with ``batch``."""
    lead = (arith.sym("b"),) if batch else ()
    A = te.placeholder((*lead, n, K), dtype, "A")
    B = te.placeholder((*lead, K, m), dtype, "B")
    bias = te.placeholder((m,), dtype, "bias")
    k = te.reduce_axis(K, "k")

    def product(*ix):
        *z, i, j = ix
        return te.sum(
            tir.cast(A[(*z, i, k)], "float32") * tir.cast(B[(*z, k, j)], "float32"), axis=k
        )

    acc = te.compute((*lead, n, m), product, name="acc")

    def finish(*ix):
        value = acc[ix]
        if epilogue:
            value = (value + tir.cast(bias[ix[-1]], "float32")) * tir.const(0.5, "float32")
        return tir.cast(value, dtype)

    out = te.compute((*lead, n, m), finish, name="C")
    return te.create_prim_func([A, B, bias, out], name="mm")


def _reference(a, b, bias, epilogue: bool):
    acc = a.astype(np.float64) @ b.astype(np.float64)
    if epilogue:
        acc = (acc + bias.astype(np.float64)) * 0.5
    return acc


def _check(func, dtype, shape, epilogue, rng, batch=None):
    rows, depth, cols = shape
    lead = (batch,) if batch else ()
    a = rng.standard_normal((*lead, rows, depth)).astype(dtype)
    b = rng.standard_normal((*lead, depth, cols)).astype(dtype)
    bias = rng.standard_normal(cols).astype(dtype)
    got = run_both(func, a, b, bias).astype(np.float64)
    want = _reference(a, b, bias, epilogue)
    # One rounding to the dtype (8 or 11 bits) of a float32 sum.
    tol = 2**-7 if dtype == "bfloat16" else 2**-10
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * max(1, np.sqrt(depth)))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_the_matmul_rule_runs_half_products_on_tensor_cores(dtype):
    import ml_dtypes  # noqa: F401 - numpy's bfloat16

    func = matmul_rule(_product(dtype, epilogue=True), SMALL)
    text = str(func)
    # The GEMV for up to 4, then 8 rows (16 accumulators of 8 lanes per thread).
    assert "mma_m16n8k16(int32(0), " in text and "    if n <= 4:" in text and "if n <= 8:" in text
    tiled = text.split("else:\n")[-1]
    # Double-buffered shared tiles, rows padded by 8 elements (the strides only).
    assert f'allocate((2, 32, 16), "{dtype}", strides=(768, 24, 1), scope="shared")' in tiled
    assert f'allocate((2, 16, 32), "{dtype}", strides=(640, 40, 1), scope="shared")' in tiled
    assert tiled.count("evaluate(syncthreads())") == 2
    assert 'allocate((2, 2, 4), "float32", scope="local")' in tiled  # 16x8 accumulators
    # The epilogue runs on the registers: bias, scale and cast in the one store.
    assert "* float32(0.5), " in tiled.split("mma_m16n8k16")[-1]
    rng = np.random.default_rng(5)
    for shape in ((40, 40, 40), (5, 24, 9), (33, 1, 70), (7, 0, 3)):
        _check(func, dtype, shape, True, rng)


def test_tensor_core_products_of_any_sizes_and_batches():
    func = matmul_rule(_product("float16", epilogue=False, batch=True), SMALL)
    assert 'thread="blockIdx.z"' in str(func) and "mma_m16n8k16" in str(func)
    rng = np.random.default_rng(6)
    for shape in ((17, 19, 33), (32, 32, 32)):  # K, N not multiples of 8: guarded lanes
        _check(func, "float16", shape, False, rng, batch=2)


@pytest.mark.slow
def test_few_rows_take_smaller_tensor_core_tiles_chosen_at_run_time():
    # rows <= 8: the GEMVs; <= 12: 16x16 tiles in steps of 32 (one warp); more: 32x32.
    params = replace(SMALL, mma_small_tiles=((12, 16, 16, 32, 1, 1),))
    func = matmul_rule(_product("float16", epilogue=True), params)
    text = str(func)
    assert "if n <= 4:" in text and "if n <= 8:" in text and "if n <= 12:" in text
    assert 'allocate((2, 16, 32), "float16", strides=(640, 40, 1), scope="shared")' in text
    rng = np.random.default_rng(8)
    for rows in (3, 6, 10, 20):
        _check(func, "float16", (rows, 45, 21), True, rng)


def test_tensor_cores_follow_the_target_architecture():
    class Target:
        kind = "cuda"

        def __init__(self, arch):
            self.arch = arch

    assert gpu_params(Target("sm_90")).tensor_cores and gpu_params(Target("sm_80")).tensor_cores
    assert not gpu_params(Target("sm_75")).tensor_cores
    without = matmul_rule(_product("float16", False), replace(SMALL, tensor_cores=False))
    assert "mma_m16n8k16" not in str(without) and "A_shared" in str(without)
    f32 = te.placeholder((n, K), "float32", "A"), te.placeholder((K, m), "float32", "B")
    k = te.reduce_axis(K, "k")
    c = te.compute((n, m), lambda i, j: te.sum(f32[0][i, k] * f32[1][k, j], axis=k), name="C")
    assert "mma_m16n8k16" not in str(matmul_rule(te.create_prim_func([*f32, c], name="f")))


@pytest.mark.slow
@settings(max_examples=20, deadline=None)
@given(
    st.sampled_from(["float16", "bfloat16"]),
    st.integers(1, 70),
    st.integers(0, 50),
    st.integers(1, 70),
    st.booleans(),
)
def test_tensor_core_products_match_numpy_over_random_sizes(dtype, rows, depth, cols, epilogue):
    import ml_dtypes  # noqa: F401

    func = matmul_rule(_product(dtype, epilogue), SMALL)
    _check(func, dtype, (rows, depth, cols), epilogue, np.random.default_rng(rows * depth + cols))
