"""The default GPU rules (``default_schedule(func, target="cuda")``): which rule takes a
kernel, the schedule's shape (vector lanes, one block or one warp per row), and the
same results in the interpreter over random symbol values with remainders."""

from __future__ import annotations

import re
from dataclasses import replace

import numpy as np
import pytest
from gpu_kernels import matmul_func, run_both
from hypothesis import given, settings
from hypothesis import strategies as st
from tir_kernels import random_inputs as tir_random_inputs
from tir_kernels import random_kernels

from relaxjax import arith, tir
from relaxjax.errors import ScheduleError
from relaxjax.schedule.gpu import is_finished
from relaxjax.schedule.rules import RULE_ATTR, default_schedule
from relaxjax.schedule.rules.gpu import (
    GpuParams,
    fallback_rule,
    gpu_params,
    matmul_rule,
    vector_access,
)
from relaxjax.tir import te

n, m = arith.syms("n m")


def _scheduled(func: tir.PrimFunc, rule: str) -> tir.PrimFunc:
    done = default_schedule(func, "cuda")
    assert dict(done.attrs)[RULE_ATTR] == rule
    assert is_finished(done)
    return done


def _scale_shift(width, dtype="float32") -> tir.PrimFunc:
    x = te.placeholder((n, width), dtype, "x")
    g = te.placeholder((width,), dtype, "g")
    t = te.compute((n, width), lambda i, j: x[i, j] * g[j], name="t")
    y = te.compute((n, width), lambda i, j: tir.exp(t[i, j]) + tir.const(1.0, dtype), name="y")
    return te.create_prim_func([x, g, y], name="scale_shift")


@pytest.mark.parametrize(("dtype", "lanes"), [("float32", 4), ("float64", 2), ("float16", 8)])
def test_injective_rule_uses_128_bit_lanes_where_aligned(dtype, lanes):
    func = _scheduled(_scale_shift(768, dtype), "injective")
    assert f"in vectorized({lanes}):" in str(func)
    assert "t = " not in str(func)  # the intermediate was inlined
    rng = np.random.default_rng(0)
    for rows in (0, 1, 5):
        x = rng.random((rows, 768)).astype(dtype)
        g = rng.random(768).astype(dtype)
        ref = tir.interpreter.run(_scale_shift(768, dtype), x, g)
        np.testing.assert_array_equal(run_both(func, x, g), ref)


def test_injective_rule_keeps_scalar_accesses_when_unaligned():
    func = _scheduled(_scale_shift(37), "injective")
    assert "vectorized" not in str(func)
    x = np.random.default_rng(1).random((11, 37), dtype=np.float32)
    g = np.random.default_rng(2).random(37, dtype=np.float32)
    np.testing.assert_array_equal(run_both(func, x, g), np.exp(x * g) + 1)


def test_vector_access_classifies_lanes():
    v, i = arith.syms("v i")
    row = tir.Buffer("row", (n, 768), "float32")
    odd = tir.Buffer("odd", (n, 37), "float32")
    assert vector_access(row, (i, i * 4 + v), v, 4) == "contiguous"
    assert vector_access(row, (i, i * 4 + 1 + v), v, 4) == "other"  # misaligned start
    assert vector_access(row, (i, 0), v, 4) == "uniform"
    assert vector_access(row, (v, i), v, 4) == "other"  # strided
    assert vector_access(odd, (i, v), v, 4) == "other"  # a row pitch of 37


@given(st.integers(0, 40), st.integers(1, 50))
def test_a_transpose_is_spread_over_blocks(rows, cols):
    x = te.placeholder((n, m), "float32", "x")
    y = te.compute((m, n), lambda i, j: x[j, i] * 2.0, name="y")
    func = _scheduled(te.create_prim_func([x, y], name="tr"), "injective")
    a = np.random.default_rng(rows + cols).random((rows, cols), dtype=np.float32)
    np.testing.assert_array_equal(run_both(func, a), a.T * 2)


def _softmax(width) -> tir.PrimFunc:
    x = te.placeholder((n, width), "float32", "x")
    k = te.reduce_axis(width, "k")
    top = te.compute((n,), lambda i: te.max(x[i, k], axis=k), name="top")
    k2 = te.reduce_axis(width, "k2")
    total = te.compute((n,), lambda i: te.sum(tir.exp(x[i, k2] - top[i]), axis=k2), name="total")
    y = te.compute((n, width), lambda i, j: tir.exp(x[i, j] - top[i]) / total[i], name="y")
    return te.create_prim_func([x, y], name="softmax")


def _softmax_numpy(a: np.ndarray) -> np.ndarray:
    e = np.exp(a - a.max(1, keepdims=True))
    return e / e.sum(1, keepdims=True)


def test_short_rows_reduce_with_one_warp_each():
    func = _scheduled(_softmax(64), "reduction")
    text = str(func)
    assert 'thread_binding(4, thread="threadIdx.y")' in text
    assert 'thread_binding(32, thread="threadIdx.x")' in text
    assert "_red_shared" not in text  # one warp: shuffles only
    for rows in (1, 6, 9):
        a = np.random.default_rng(rows).random((rows, 64), dtype=np.float32)
        np.testing.assert_allclose(run_both(func, a), _softmax_numpy(a), rtol=1e-5)


@pytest.mark.parametrize("width", [768, "m"])
def test_long_rows_reduce_with_one_block_each(width):
    func = _scheduled(_softmax(width), "reduction")
    text = str(func)
    assert 'thread_binding(256, thread="threadIdx.x")' in text
    assert 'with allocate((1,), "float32", scope="shared") as top:' in text
    cols = 768 if width == 768 else 300
    for rows in (1, 3):
        a = np.random.default_rng(rows).random((rows, cols), dtype=np.float32) * 4
        np.testing.assert_allclose(run_both(func, a), _softmax_numpy(a), rtol=1e-5)


def test_the_fallback_spreads_independent_loops_and_serialises_the_rest():
    x = te.placeholder((n, m), "float32", "x")
    k = te.reduce_axis(n, "k")
    s = te.compute((m,), lambda j: te.sum(x[k, j], axis=k), name="s")
    _, index = te.compute((m,), lambda j: te.argmax((x[k, j], k), axis=k), name="am")
    for func, expected in (
        (te.create_prim_func([x, s], name="colsum"), lambda a: a.sum(0)),
        (te.create_prim_func([x, index], name="colargmax"), lambda a: a.argmax(0)),
    ):
        done = fallback_rule(func)
        assert 'thread="threadIdx.x"' in str(done)
        for rows, cols in ((1, 1), (7, 3), (5, 300)):
            a = np.random.default_rng(rows * cols).random((rows, cols), dtype=np.float32)
            np.testing.assert_allclose(run_both(done, a), expected(a), rtol=1e-5)


def test_the_fallback_reduces_each_row_of_a_lone_reduction_over_threads():
    # Row sums and column maxima of one input: the nests' rows differ, so the reduction
    # rule refuses the kernel; the fallback gives each nest a block per row.
    x = te.placeholder((n, m), "float32", "x")
    k, k2 = te.reduce_axis(m, "k"), te.reduce_axis(n, "k2")
    r = te.compute((n,), lambda i: te.sum(x[i, k], axis=k), name="r")
    c = te.compute((m,), lambda j: te.max(x[k2, j], axis=k2), name="c")
    func = te.create_prim_func([x, r, c], name="both")
    assert "schedule_rule': 'fallback'" in str(_scheduled(func, "fallback"))
    done = fallback_rule(func, GpuParams(threads=64))  # two warps: few threads to interpret
    text = str(done)
    assert text.count('thread_binding(64, thread="threadIdx.x")') == 2
    assert "shfl_xor(r_red[()]" in text and "shfl_xor(c_red[()]" in text
    assert 'allocate((2,), "float32", scope="shared") as r_red_shared' in text
    for rows, cols in ((1, 1), (2, 70), (70, 2)):
        a = np.random.default_rng(rows + cols).random((rows, cols), dtype=np.float32)
        got_r, got_c = run_both(done, a)
        np.testing.assert_allclose(got_r, a.sum(1), rtol=1e-5)
        np.testing.assert_array_equal(got_c, a.max(0))


def test_the_fallback_reduces_short_rows_in_one_thread_each():
    # Rows of 8 (attention scores over a head): a thread per row, not a warp with idle lanes.
    x = te.placeholder((n, 8), "float32", "x")
    k, k2 = te.reduce_axis(8, "k"), te.reduce_axis(n, "k2")
    r = te.compute((n,), lambda i: te.sum(x[i, k], axis=k), name="r")
    c = te.compute((8,), lambda j: te.max(x[k2, j], axis=k2), name="c")
    done = fallback_rule(te.create_prim_func([x, r, c], name="both"), GpuParams(threads=64))
    text = str(done)
    assert "shfl_xor(r_red[()]" not in text and "shfl_xor(c_red[()]" in text
    a = np.random.default_rng(13).random((70, 8), dtype=np.float32)
    got_r, got_c = run_both(done, a)
    np.testing.assert_allclose(got_r, a.sum(1), rtol=1e-5)
    np.testing.assert_array_equal(got_c, a.max(0))


def test_a_scratch_allocated_in_a_loop_moves_to_global_memory():
    func = tir.parse_prim_func(
        """
@prim_func(outputs=1)
def rev(x: Buffer((n, 5), "float32"), y: Buffer((n, 5), "float32")):
    for j in range(5):
        with allocate((n,), "float32", scope="local") as col:
            for i in range(n):
                col[i] = x[i, j]
            for i_1 in range(n):
                y[i_1, j] = col[n - 1 - i_1]
"""
    )
    done = _scheduled(func, "fallback")
    text = str(done)
    assert text.index('with allocate((n,), "float32") as col:') < text.index("serial_block")
    a = np.random.default_rng(6).random((7, 5), dtype=np.float32)
    np.testing.assert_array_equal(run_both(done, a), a[::-1])


_REVERSE_COLUMNS = """
@prim_func(outputs=1)
def rev(x: Buffer((n, COLS), "float32"), y: Buffer((n, COLS), "float32")):
    for j in parallel(COLS):
        with allocate((n,), "float32", scope="local") as col:
            with allocate((1,), "float32", scope="local") as total:
                total[0] = float32(0.0)
                for i in range(n):
                    col[i] = x[i, j]
                    total[0] = total[0] + x[i, j]
                for i_1 in range(n):
                    y[i_1, j] = col[n - 1 - i_1] + total[0]
"""


@pytest.mark.parametrize("cols", ["5", "m"])
def test_parallel_plain_loops_run_a_thread_per_iteration(cols):
    # Each column's scratch of n elements gets a slice of one global buffer; the
    # constant-size one stays in the thread's registers.
    func = tir.parse_prim_func(_REVERSE_COLUMNS.replace("COLS", cols))
    done = fallback_rule(func, GpuParams(loop_threads=8))
    text = str(done)
    assert f'with allocate(({cols}, n), "float32") as col:' in text
    assert 'with allocate((1,), "float32", scope="local") as total:' in text
    assert "serial_block" not in text
    # 5 columns: one block of 5 threads; m columns: blocks of 8, the tail guarded.
    lanes = 'thread_binding(5, thread="threadIdx.x")' if cols == "5" else "if j_b * 8 + "
    assert lanes in text
    rng = np.random.default_rng(11)
    for rows, width in ((0, 5), (1, 5), (6, 5), (3, 1), (2, 19)):
        if cols == "5" and width != 5:
            continue
        a = rng.random((rows, width), dtype=np.float32)
        np.testing.assert_allclose(run_both(done, a), a[::-1] + a.sum(0), rtol=1e-6)


def test_a_parallel_loop_that_races_runs_on_one_thread():
    # Mislabelled: every iteration adds into y[0]. The launch checks refuse a thread per
    # iteration, so the loop runs in order on one thread.
    func = tir.parse_prim_func(
        """
@prim_func(outputs=1)
def total(x: Buffer((n,), "float32"), y: Buffer((1,), "float32")):
    y[0] = float32(0.0)
    for i in parallel(n):
        y[0] = y[0] + x[i]
"""
    )
    done = fallback_rule(func)
    assert str(done).count("serial_block") == 2
    a = np.random.default_rng(12).random(9, dtype=np.float32)
    np.testing.assert_allclose(run_both(done, a), [a.sum()], rtol=1e-6)


def test_a_kernel_written_as_plain_loops_runs_on_one_thread():
    func = tir.parse_prim_func(
        """
@prim_func(outputs=1)
def scan(x: Buffer((n,), "float32"), y: Buffer((n,), "float32")):
    with allocate((n,), "float32", scope="local") as acc:
        for i in range(n):
            acc[i] = if_then_else(i > 0, acc[i - 1], float32(0.0)) + x[i]
            y[i] = acc[i]
"""
    )
    done = _scheduled(func, "fallback")
    text = str(done)
    assert 'for serial_block in thread_binding(1, thread="blockIdx.x"):' in text
    assert 'with allocate((n,), "float32") as acc:' in text  # moved to global memory
    a = np.random.default_rng(5).random(9, dtype=np.float32)
    np.testing.assert_allclose(run_both(done, a), np.cumsum(a), rtol=1e-6)


def test_gpu_params_come_from_the_target():
    assert gpu_params("cuda") == GpuParams()

    class Target:
        kind = "cuda"
        threads = 128

    assert gpu_params(Target()).threads == 128
    with pytest.raises(ValueError, match="the GPU schedule rules serve target 'cuda', got 'llvm'"):
        gpu_params("llvm")


def test_no_gpu_rule_is_a_schedule_error():
    def never(func, target):
        raise ScheduleError("never: refused")

    with pytest.raises(
        ScheduleError,
        match="^default_schedule: no GPU rule schedules kernel softmax: never: refused$",
    ):
        default_schedule(_softmax(8), "cuda", rules=[("never", never)])


SMALL_TILES = GpuParams(matmul_tile=16, matmul_regs=2, matmul_step=4)


def test_matmul_rule_tiles_shared_memory_and_registers():
    func = _scheduled(matmul_func(), "matmul")
    text = str(func)
    assert text.startswith("@prim_func") and "    if n <= 4:" in text  # decode variants
    assert "        if n <= 16:" in text  # up to 16 rows of float32 still read B once
    for line in (
        'with allocate((2, 64, 16), "float32", scope="shared") as A_shared:',  # two stages
        'with allocate((2, 16, 64), "float32", scope="shared") as B_shared:',
        'with allocate((4, 4), "float32", scope="local") as C_local',  # _1: gemv's is C_local
        "for i_2 in unrolled(4):",
        "if k_0 + 1 < (K + 15) // 16:",  # the next step's tiles load during this one's
    ):
        assert line in text
    # Double buffered: a barrier after the first tiles, then one per step.
    assert text.split("else:\n")[-1].count("evaluate(syncthreads())") == 2
    step = text.split("for k_0 in range((K + 15) // 16):\n")[1]
    assert step.count("syncthreads") == 1 and "A_shared[k_0 % 2, " in step
    # Zero-padded tiles: the multiply-add runs unguarded, the copies pad.
    inner = text.split("for j_2 in unrolled(4):\n")[1].lstrip()
    assert re.match(r"(C_local\w*)\[i_2, j_2\] = \1\[i_2, j_2\] \+ A_shared\[", inner)
    assert "A_shared[" in text and "= if_then_else(" in text
    rng = np.random.default_rng(7)
    for rows, depth, cols in ((3, 9, 5), (65, 3, 2), (9, 0, 3)):  # no steps: zeros
        a = rng.random((rows, depth), dtype=np.float32)
        b = rng.random((depth, cols), dtype=np.float32)
        np.testing.assert_allclose(run_both(func, a, b), a @ b, rtol=1e-5)


@settings(max_examples=8)
@given(st.integers(1, 40), st.integers(1, 20), st.integers(1, 40), st.booleans())
def test_matmul_tiles_match_over_sizes_with_remainders(rows, depth, cols, double):
    func = matmul_rule(matmul_func(), replace(SMALL_TILES, double_buffer=double))
    assert ("A_shared[k_0 % 2, " in str(func)) == double
    rng = np.random.default_rng(rows * 10000 + depth * 100 + cols)
    a = rng.random((rows, depth), dtype=np.float32)
    b = rng.random((depth, cols), dtype=np.float32)
    np.testing.assert_allclose(run_both(func, a, b), a @ b, rtol=1e-5, atol=1e-6)


def test_batched_matmul_uses_the_third_grid_axis():
    b_, n_, k_, m_ = arith.syms("b n k m")
    A = te.placeholder((b_, n_, k_), "float32", "A")
    B = te.placeholder((b_, k_, m_), "float32", "B")
    r = te.reduce_axis(k_, "r")
    C = te.compute((b_, n_, m_), lambda z, i, j: te.sum(A[z, i, r] * B[z, r, j], axis=r), name="C")
    func = matmul_rule(te.create_prim_func([A, B, C], name="bmm"), SMALL_TILES)
    assert 'thread="blockIdx.z"' in str(func)
    rng = np.random.default_rng(8)
    a, b = rng.random((3, 17, 5), dtype=np.float32), rng.random((3, 5, 9), dtype=np.float32)
    np.testing.assert_allclose(run_both(func, a, b), a @ b, rtol=1e-5)


@pytest.mark.parametrize("transposed", [False, True])
def test_one_row_products_read_the_matrix_once(transposed):
    k_, m_ = arith.syms("k m")
    x = te.placeholder((1, k_), "float32", "x")
    shape = (m_, k_) if transposed else (k_, m_)
    w = te.placeholder(shape, "float32", "w")
    r = te.reduce_axis(k_, "r")
    y = te.compute(
        (1, m_),
        lambda i, j: te.sum(x[i, r] * (w[j, r] if transposed else w[r, j]), axis=r),
        name="y",
    )
    func = matmul_rule(te.create_prim_func([x, w, y], name="gemv"))
    text = str(func)
    assert "w_shared" not in text and "x_shared" not in text and "if n" not in text
    # W[j, k]: the threads of a block reduce each output together; W[k, j]: a block per
    # 8 columns, two threads of 128-bit loads across each 32-byte row segment, the rows
    # split over 128 slices of threads (summed by shuffles, then across the warps).
    assert "shfl_xor" in text
    if not transposed:
        assert 'for j_b in thread_binding((m + 7) // 8, thread="blockIdx.x"):' in text
        assert 'with allocate((1, 4), "float32", scope="local") as acc:' in text
        assert "for k_step in range(k // 512):" in text  # unguarded, 4 rows in flight
        assert "y[threadIdx_y, j_b * 8 + threadIdx_x * 4 + v_7] = total[()]" in text
    rng = np.random.default_rng(9)
    for depth, cols in ((300, 70), (5, 257)) + (() if transposed else ((0, 3),)):
        a = rng.random((1, depth), dtype=np.float32)
        b = rng.random((cols, depth) if transposed else (depth, cols), dtype=np.float32)
        want = a @ (b.T if transposed else b)
        np.testing.assert_allclose(run_both(func, a, b), want, rtol=1e-5)


def test_few_row_batched_products_keep_rows_in_the_thread_and_batches_on_the_grid():
    b_, k_, m_ = arith.syms("b k m")
    A = te.placeholder((b_, 3, k_), "float32", "A")
    B = te.placeholder((b_, k_, m_), "float32", "B")
    r = te.reduce_axis(k_, "r")
    C = te.compute((b_, 3, m_), lambda z, i, j: te.sum(A[z, i, r] * B[z, r, j], axis=r), name="C")
    func = matmul_rule(te.create_prim_func([A, B, C], name="bgemv"), GpuParams(threads=32))
    text = str(func)
    assert 'with allocate((3, 4), "float32", scope="local") as acc:' in text  # W read once
    assert 'thread="blockIdx.z"' in text and "blockIdx.y" not in text
    rng = np.random.default_rng(14)
    a, b = rng.random((2, 3, 9), dtype=np.float32), rng.random((2, 9, 40), dtype=np.float32)
    np.testing.assert_allclose(run_both(func, a, b), a @ b, rtol=1e-5)


def test_a_reduction_to_one_value_runs_on_many_blocks_then_one():
    x = te.placeholder((n, m), "float32", "x")
    k0, k1 = te.reduce_axis(n, "k0"), te.reduce_axis(m, "k1")
    s = te.compute((), lambda: te.sum(x[k0, k1], axis=[k0, k1]), name="s")
    func = _scheduled(te.create_prim_func([x, s], name="total"), "reduction")
    text = str(func)
    assert 'with allocate((128,), "float32") as s_rf:' in text  # the partials, in global memory
    assert 'for k0_k1_fused_0 in thread_binding(128, thread="blockIdx.x"):' in text
    for shape in ((0, 3), (1, 1), (3, 5), (90, 500)):
        a = np.random.default_rng(shape[0]).random(shape, dtype=np.float32)
        np.testing.assert_allclose(run_both(func, a), a.sum(), rtol=1e-5)


def test_a_consumer_reading_the_rows_across_its_loops_runs_at_the_row():
    # softmax over axis 0: the reductions' rows are columns of the output nest.
    x = te.placeholder((n, 37), "float32", "x")
    k = te.reduce_axis(n, "k")
    top = te.compute((37,), lambda j: te.max(x[k, j], axis=k), name="top")
    y = te.compute((n, 37), lambda i, j: x[i, j] - top[j], name="y")
    func = _scheduled(te.create_prim_func([x, y], name="shift"), "reduction")
    a = np.random.default_rng(10).random((23, 37), dtype=np.float32)
    np.testing.assert_array_equal(run_both(func, a), a - a.max(0))


KERNELS = ("elementwise", "rowsum", "rowmax", "matmul", "two_stage", "sum_then_scale")
KERNELS += ("stencil", "softmax")


@pytest.mark.parametrize("name", KERNELS)
def test_the_schedule_test_kernels_keep_their_meaning_on_the_gpu(name):
    import sched_kernels

    func = getattr(sched_kernels, name)()
    done = default_schedule(func, "cuda")
    assert is_finished(done)
    # x / sum(x) of normal samples: a sum near 0 magnifies the reordered additions.
    sched_kernels.assert_equivalent(func, done, rtol=1e-2 if name == "sum_then_scale" else 1e-5)


@settings(max_examples=15)
@given(random_kernels())
def test_random_kernels_keep_their_meaning_on_the_gpu(func):
    done = default_schedule(func, "cuda")
    inputs = len(func.inputs)
    for sizes in ({"n": 3, "m": 5}, {"n": 0, "m": 2}, {"n": 1, "m": 1}):
        arrays = tir_random_inputs(func, sizes)
        bound = {
            s.sym.name for s in func.symbol_sources() if s.param is not None and s.param < inputs
        }
        scalars = {
            k: v
            for k, v in sizes.items()
            if k not in bound and k in {s.name for s in func.symbols()}
        }
        want = tir.interpreter.run(func, *arrays, **scalars)
        have = tir.interpreter.run(done, *arrays, reverse_parallel=True, **scalars)
        for a, b in zip(*(r if isinstance(r, tuple) else (r,) for r in (want, have))):
            np.testing.assert_array_equal(a, b)


def test_a_kernel_scheduled_by_hand_is_only_finished():
    from gpu_kernels import tiled_matmul

    by_hand = tiled_matmul().func
    done = _scheduled(by_hand, "user")
    assert 'with allocate((16, 8), "float32", scope="shared") as A_shared:' in str(done)
