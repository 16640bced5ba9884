"""finish_gpu: a thread-bound kernel as launches (threads, cross-thread reductions,
compacted shared/local buffers, barriers), the same results in the interpreter over
random sizes with tile remainders, and every check's ScheduleError."""

from __future__ import annotations

import numpy as np
import pytest
from gpu_kernels import row_sum_schedule, run_both, tiled_matmul
from hypothesis import given
from hypothesis import strategies as st

from relaxjax import arith, schedule, tir
from relaxjax.errors import ScheduleError
from relaxjax.schedule.gpu import GpuLimits, finish_gpu, is_finished, launch_parts
from relaxjax.tir import te

MATMUL = finish_gpu(tiled_matmul().func)


def test_the_tiled_matmul_becomes_one_launch_with_compact_tiles_and_barriers():
    assert is_finished(MATMUL)
    text = str(MATMUL)
    assert 'with allocate((16, 8), "float32", scope="shared") as A_shared:' in text
    assert 'with allocate((8, 16), "float32", scope="shared") as B_shared:' in text
    assert text.count("evaluate(syncthreads())") == 2
    parts = launch_parts(MATMUL.body)
    assert [lp.thread_tag for lp in parts.blocks] == ["blockIdx.y", "blockIdx.x"]
    assert [(lp.thread_tag, lp.extent) for lp in parts.threads] == [
        ("threadIdx.y", 16),
        ("threadIdx.x", 16),
    ]
    assert {b.name for b in parts.shared} == {"A_shared", "B_shared"}
    assert finish_gpu(MATMUL) is MATMUL


@given(st.integers(1, 40), st.integers(1, 20), st.integers(1, 40))
def test_the_tiled_matmul_matches_over_sizes_with_remainders(rows, depth, cols):
    rng = np.random.default_rng(rows * 10000 + depth * 100 + cols)
    a = rng.random((rows, depth), dtype=np.float32)
    b = rng.random((depth, cols), dtype=np.float32)
    np.testing.assert_allclose(run_both(MATMUL, a, b), a @ b, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("threads", [8, 32, 128])
def test_cross_thread_reductions_match_for_any_row_length(threads):
    func = finish_gpu(row_sum_schedule(threads).func)
    text = str(func)
    assert "shfl_xor" in text
    assert ("_red_shared" in text) == (threads > 32)
    rng = np.random.default_rng(threads)
    for rows, cols in ((3, 1), (2, threads), (4, threads * 3 + 5), (1, 300)):
        a = rng.random((rows, cols), dtype=np.float32)
        expected = a - a.sum(1, keepdims=True)
        np.testing.assert_allclose(run_both(func, a), expected, rtol=1e-5, atol=1e-5)


def test_a_cross_thread_reduction_is_one_butterfly_per_row():
    text = str(finish_gpu(row_sum_schedule(128).func))
    # 5 steps within each warp, then 2 across the 4 warps of the row.
    assert text.count("shfl_xor") == 7
    assert "S_red_shared[threadIdx_x // 32] = S_red[()]" in text
    assert 'with allocate((1,), "float32", scope="shared") as S:' in text


# --- errors ------------------------------------------------------------------------------


def _parse(text: str) -> tir.PrimFunc:
    return tir.parse_prim_func(text)


def test_an_unbound_loop_is_refused():
    n = arith.sym("n")
    A = te.placeholder((n,), "float32", "A")
    B = te.compute((n,), lambda i: A[i] * 2.0, name="B")
    with pytest.raises(
        ScheduleError,
        match=r"^finish_gpu: loop i is not bound to a GPU thread axis: bind it, or a loop around "
        r"it, to blockIdx/threadIdx \(the outermost loops of a GPU kernel must be "
        r"thread-bound\)$",
    ):
        finish_gpu(te.create_prim_func([A, B], name="scale"))


def test_a_serial_loop_around_block_loops_is_refused():
    func = _parse(
        """
@prim_func(outputs=1)
def k(A: Buffer((n, 64), "float32"), B: Buffer((n, 64), "float32")):
    for i in range(n):
        for t in thread_binding(64, thread="threadIdx.x"):
            B[i, t] = A[i, t]
"""
    )
    with pytest.raises(ScheduleError, match="^finish_gpu: loop i is not bound to a GPU thread"):
        finish_gpu(func)


def _bound(threads: int, tag: str = "threadIdx.x", extent: str = "n") -> tir.PrimFunc:
    return _parse(
        f"""
@prim_func(outputs=1)
def k(A: Buffer(({extent}, {threads}), "float32"), B: Buffer(({extent}, {threads}), "float32")):
    for i in thread_binding({extent}, thread="blockIdx.x"):
        for t in thread_binding({threads}, thread="{tag}"):
            B[i, t] = A[i, t]
"""
    )


def test_thread_extents_over_the_limit_are_refused():
    with pytest.raises(
        ScheduleError,
        match=r"^finish_gpu: the GPU kernel at loop i runs 2048 threads along threadIdx.x: the "
        r"limit is 1024, and it must hold for every value of the symbols$",
    ):
        finish_gpu(_bound(2048))
    with pytest.raises(ScheduleError, match="runs 128 threads along threadIdx.z: the limit is 64"):
        finish_gpu(_bound(128, "threadIdx.z"))
    assert is_finished(finish_gpu(_bound(1024)))


def test_a_symbolic_thread_extent_needs_a_provable_bound():
    n, m = arith.sym("n"), arith.sym("m")
    A = te.placeholder((n, m), "float32", "A")
    B = te.compute((n, m), lambda i, j: A[i, j] + 1.0, name="B")
    sch = schedule.Schedule(te.create_prim_func([A, B], name="k"))
    i, j = sch.get_loops(sch.get_block("B"))
    sch.bind(i, "blockIdx.x")
    sch.bind(j, "threadIdx.x")
    with pytest.raises(
        ScheduleError,
        match=r"^finish_gpu: the GPU kernel at loop i runs m threads along threadIdx.x: the limit "
        r"is 1024, and it must hold for every value of the symbols$",
    ):
        finish_gpu(sch.func)
    bounded = sch.func.specialize({"m": arith.sym("m", upper=512)})
    assert is_finished(finish_gpu(bounded))


def test_threads_per_block_over_the_limit_are_refused():
    func = _parse(
        """
@prim_func(outputs=1)
def k(A: Buffer((n, 64, 32), "float32"), B: Buffer((n, 64, 32), "float32")):
    for i in thread_binding(n, thread="blockIdx.x"):
        for y in thread_binding(64, thread="threadIdx.y"):
            for x in thread_binding(32, thread="threadIdx.x"):
                B[i, y, x] = A[i, y, x]
"""
    )
    with pytest.raises(
        ScheduleError,
        match=r"^finish_gpu: the GPU kernel at loop i runs 2048 threads per block: the limit is "
        r"1024, and it must hold for every value of the symbols$",
    ):
        finish_gpu(func)


def test_blocks_over_the_grid_limit_are_refused():
    func = _parse(
        """
@prim_func(outputs=1)
def k(A: Buffer((70000, 32), "float32"), B: Buffer((70000, 32), "float32")):
    for i in thread_binding(70000, thread="blockIdx.y"):
        for t in thread_binding(32, thread="threadIdx.x"):
            B[i, t] = A[i, t]
"""
    )
    with pytest.raises(
        ScheduleError,
        match="^finish_gpu: the GPU kernel at loop i runs 70000 blocks along blockIdx.y: the "
        "limit is 65535$",
    ):
        finish_gpu(func)


def _staged_row(columns: str) -> tir.PrimFunc:
    """Each block copies its row into shared memory, then reads it reversed."""
    return _parse(
        f"""
@prim_func(outputs=1)
def k(A: Buffer((n, {columns}), "float32"), B: Buffer((n, {columns}), "float32")):
    with allocate((n, {columns}), "float32", scope="shared") as S:
        for i in thread_binding(n, thread="blockIdx.x"):
            for c in range({columns}):
                for t in thread_binding(1, thread="threadIdx.x"):
                    S[i, c] = A[i, c]
            for c_1 in range({columns}):
                for t_1 in thread_binding(1, thread="threadIdx.x"):
                    B[i, c_1] = S[i, {columns} - 1 - c_1]
"""
    )


def test_shared_memory_over_the_static_limit_is_refused():
    assert is_finished(finish_gpu(_staged_row("12288")))  # 48 KB exactly
    with pytest.raises(
        ScheduleError,
        match=r"^finish_gpu: the GPU kernel at loop i uses 65536 bytes of shared memory: the "
        r"limit is 49152$",
    ):
        finish_gpu(_staged_row("16384"))
    with pytest.raises(
        ScheduleError, match="uses 65536 bytes of shared memory: the limit is 65535"
    ):
        finish_gpu(_staged_row("16384"), GpuLimits(max_shared_bytes=65535))


def test_shared_memory_without_a_constant_bound_is_refused():
    with pytest.raises(
        ScheduleError,
        match=r"^finish_gpu: the GPU kernel at loop i uses m \* 4 bytes of shared memory, which "
        r"has no constant bound: it can exceed 49152 bytes for some value of the symbols$",
    ):
        finish_gpu(_staged_row("m"))


def test_the_staged_row_runs_in_the_interpreter():
    func = finish_gpu(_staged_row("m").specialize({"m": arith.sym("m", upper=100)}))
    a = np.random.default_rng(3).random((3, 7), dtype=np.float32)
    np.testing.assert_array_equal(run_both(func, a), a[:, ::-1])


def test_two_threads_writing_one_element_race():
    func = _parse(
        """
@prim_func(outputs=1)
def k(A: Buffer((n, 64), "float32"), B: Buffer((n,), "float32")):
    for i in thread_binding(n, thread="blockIdx.x"):
        for t in thread_binding(64, thread="threadIdx.x"):
            B[i] = A[i, t]
"""
    )
    with pytest.raises(
        ScheduleError,
        match=r"^finish_gpu: the GPU kernel at loop i races: two threads may write B\[i\] \(a "
        r"store must move apart along every thread axis, or run where the axis has one value\)$",
    ):
        finish_gpu(func)


def test_blocks_writing_one_element_race():
    func = _parse(
        """
@prim_func(outputs=1)
def k(A: Buffer((n, 64), "float32"), B: Buffer((64,), "float32")):
    for i in thread_binding(n, thread="blockIdx.x"):
        for t in thread_binding(64, thread="threadIdx.x"):
            B[t] = A[i, t]
"""
    )
    with pytest.raises(ScheduleError, match=r"races: two threads may write B\[threadIdx_x\]"):
        finish_gpu(func)


_PICK = """
@prim_func(outputs=1)
def pick(x: Buffer((n, 8), "float32"), idx: Buffer((n,), "int64"), y: Buffer((n,), "float32")):
    for i in thread_binding(n, thread="blockIdx.x"):
        with allocate((8,), "float32", scope="local") as row:
            for k in range(8):
                row[k] = x[i, k] * float32(2.0)
            with let_sym(p, idx[i]):
                y[STORE] = row[p - 1]
"""


def test_an_index_through_a_let_reaches_the_whole_local_buffer():
    # row[p - 1] with p = idx[i]: the buffer keeps its 8 elements (no size or offset in p),
    # and the store y[i] under the let still moves apart along the blocks.
    done = finish_gpu(_parse(_PICK.replace("STORE", "i")))
    assert 'with allocate((8,), "float32", scope="local") as row:' in str(done)
    x = np.random.default_rng(5).random((5, 8), dtype=np.float32)
    idx = np.array([3, 1, 8, 7, 1])
    np.testing.assert_array_equal(run_both(done, x, idx), x[np.arange(5), idx - 1] * 2)


def test_a_store_through_a_let_on_blocks_races():
    with pytest.raises(ScheduleError, match=r"races: two threads may write y\[p\]"):
        finish_gpu(_parse(_PICK.replace("STORE", "p")))


def test_a_local_buffer_shared_between_threads_is_refused():
    func = _parse(
        """
@prim_func(outputs=1)
def k(A: Buffer((n, 64), "float32"), B: Buffer((n, 64), "float32")):
    with allocate((64,), "float32", scope="local") as L:
        for i in thread_binding(n, thread="blockIdx.x"):
            for t in thread_binding(64, thread="threadIdx.x"):
                L[t] = A[i, t]
            for t_1 in thread_binding(64, thread="threadIdx.x"):
                B[i, t_1] = L[63 - t_1]
"""
    )
    with pytest.raises(
        ScheduleError,
        match=r"^finish_gpu: local buffer L carries values between threads \(a thread reads what "
        r"another wrote\): give it scope 'shared'$",
    ):
        finish_gpu(func)


def test_the_same_exchange_through_shared_memory_gets_a_barrier():
    func = _parse(
        """
@prim_func(outputs=1)
def k(A: Buffer((n, 64), "float32"), B: Buffer((n, 64), "float32")):
    with allocate((n, 64), "float32", scope="shared") as L:
        for i in thread_binding(n, thread="blockIdx.x"):
            for t in thread_binding(64, thread="threadIdx.x"):
                L[i, t] = A[i, t]
            for t_1 in thread_binding(64, thread="threadIdx.x"):
                B[i, t_1] = L[i, 63 - t_1]
"""
    )
    done = finish_gpu(func)
    assert str(done).count("syncthreads") == 1
    a = np.random.default_rng(4).random((2, 64), dtype=np.float32)
    np.testing.assert_array_equal(run_both(done, a), a[:, ::-1])


def test_a_barrier_needed_where_threads_diverge_is_refused():
    func = _parse(
        """
@prim_func(outputs=1)
def k(A: Buffer((n, 8, 64), "float32"), B: Buffer((n, 8, 64), "float32")):
    with allocate((n, 8, 64), "float32", scope="shared") as L:
        for i in thread_binding(n, thread="blockIdx.x"):
            for y in thread_binding(8, thread="threadIdx.y"):
                for t in thread_binding(64, thread="threadIdx.x"):
                    B[i, y, t] = A[i, y, t]
            for y_1 in thread_binding(4, thread="threadIdx.y"):
                for t_1 in thread_binding(64, thread="threadIdx.x"):
                    L[i, y_1, t_1] = A[i, y_1, t_1]
                for t_2 in thread_binding(64, thread="threadIdx.x"):
                    B[i, y_1, t_2] = L[i, y_1, 63 - t_2]
"""
    )
    with pytest.raises(
        ScheduleError,
        match=r"^finish_gpu: threads must synchronise \(one reads or writes what another wrote\) "
        r"where they diverge, under threadIdx_y < 4: give the loops of each threadIdx axis equal "
        r"extents, or move the statement out of the condition$",
    ):
        finish_gpu(func)


def test_a_shared_buffer_used_by_two_launches_is_refused():
    func = _parse(
        """
@prim_func(outputs=1)
def k(A: Buffer((n, 64), "float32"), B: Buffer((n, 64), "float32")):
    with allocate((n, 64), "float32", scope="shared") as L:
        for i in thread_binding(n, thread="blockIdx.x"):
            for t in thread_binding(64, thread="threadIdx.x"):
                L[i, t] = A[i, t]
        for i_1 in thread_binding(n, thread="blockIdx.x"):
            for t_1 in thread_binding(64, thread="threadIdx.x"):
                B[i_1, t_1] = L[i_1, t_1]
"""
    )
    with pytest.raises(
        ScheduleError,
        match=r"^finish_gpu: shared buffer L is used by two GPU kernels \(loops i and i_1\): it "
        r"lives in one launch$",
    ):
        finish_gpu(func)


def _reduction_bound_to(tag: str, threads: int) -> tir.PrimFunc:
    return _parse(
        f"""
@prim_func(outputs=1)
def k(A: Buffer((n, {threads}), "float32"), S: Buffer((n,), "float32")):
    with block("root"):
        for i in thread_binding(n, thread="blockIdx.x"):
            for t in thread_binding({threads}, thread="{tag}"):
                with block("S"):
                    v_i = axis.spatial(n, i)
                    v_k = axis.reduce({threads}, t)
                    reads(A[v_i, v_k])
                    writes(S[v_i])
                    with init():
                        S[v_i] = float32(0.0)
                    S[v_i] = S[v_i] + A[v_i, v_k]
"""
    )


def test_a_cross_thread_reduction_must_use_threadidx_x():
    with pytest.raises(
        ScheduleError,
        match=r"^finish_gpu: the cross-thread reduction of block 'S' is bound to threadIdx.y: bind "
        r"the reduction loop t to threadIdx.x \(the lanes of a warp\)$",
    ):
        finish_gpu(_reduction_bound_to("threadIdx.y", 32))


def test_a_cross_thread_reduction_needs_whole_warps_or_a_power_of_two():
    with pytest.raises(
        ScheduleError,
        match=r"^finish_gpu: the cross-thread reduction of block 'S' runs over 48 threadIdx.x "
        r"threads: use a power of two up to 32 or a multiple of 32$",
    ):
        finish_gpu(_reduction_bound_to("threadIdx.x", 48))
    for threads in (4, 96):
        func = finish_gpu(_reduction_bound_to("threadIdx.x", threads))
        a = np.random.default_rng(threads).random((3, threads), dtype=np.float32)
        np.testing.assert_allclose(run_both(func, a), a.sum(1), rtol=1e-5)


def test_vectorized_loops_are_aligned_vector_accesses_or_made_serial():
    func = _parse(
        """
@prim_func(outputs=1)
def k(A: Buffer((n, 64), "float32"), B: Buffer((n, 64), "float32")):
    for i in thread_binding(n, thread="blockIdx.x"):
        for t in thread_binding(16, thread="threadIdx.x"):
            for v in vectorized(4):
                if i < n - 1:
                    B[i, t * 4 + v] = A[i, t * 4 + v] + A[i, 0]
            for w in vectorized(4):
                B[i, w * 16 + t] = A[i, w * 16 + t]
"""
    )
    done = finish_gpu(func)
    text = str(done)
    # The lane-independent guard moves out; the strided loop is no vector access.
    assert "if i < n - 1:\n                for v in vectorized(4):" in text
    assert "for w in range(4):" in text
    assert "syncthreads" in text  # both loops write B's row: another thread's elements
    a = np.random.default_rng(11).random((3, 64), dtype=np.float32)
    np.testing.assert_array_equal(run_both(done, a), a)
