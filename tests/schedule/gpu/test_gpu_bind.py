"""GPU schedule primitives in the loop form: bind (thread axes, cross-thread
reductions), shared/local copies computed under bound loops (buffers private to a
block or thread), set_scope. Each keeps the meaning (the interpreter runs the loop
form) or raises ScheduleError."""

from __future__ import annotations

import numpy as np
import pytest
from gpu_kernels import matmul_func, row_sum_func, row_sum_schedule, tiled_matmul

from relaxjax import arith, schedule, tir
from relaxjax.errors import ScheduleError
from relaxjax.tir import te


def test_bind_puts_a_commutative_reduction_on_threads():
    sch = row_sum_schedule(32, shared=False)
    text = str(sch.func)
    assert 'for k_1 in thread_binding(32, thread="threadIdx.x"):' in text
    a = np.random.default_rng(0).random((3, 45), dtype=np.float32)
    out = tir.interpreter.run(sch.func, a)
    np.testing.assert_allclose(out, a - a.sum(1, keepdims=True), atol=1e-5)


def test_bind_refuses_a_reduction_on_blocks():
    sch = schedule.Schedule(row_sum_func())
    _, k = sch.get_loops(sch.get_block("S"))
    with pytest.raises(
        ScheduleError,
        match="bind: cannot bind loop k: loop k is a reduction loop of block 'S': its iterations "
        "all update S",
    ):
        sch.bind(k, "blockIdx.x")


def test_bind_refuses_a_reduction_that_is_not_commutative():
    n, m = arith.syms("n m")
    x = te.placeholder((n, m), "float32", "x")
    k = te.reduce_axis(m, "k")
    _, index = te.compute((n,), lambda i: te.argmax((x[i, k], k), axis=k), name="am")
    sch = schedule.Schedule(te.create_prim_func([x, index], name="argmax"))
    _, loop = sch.get_loops(sch.get_block("am"))
    with pytest.raises(ScheduleError, match="bind: cannot bind loop k: loop k is a reduction"):
        sch.bind(loop, "threadIdx.x")


def test_shared_copies_under_block_loops_are_private_to_each_block():
    sch = tiled_matmul()
    text = str(sch.func)
    assert 'A_shared = alloc_buffer((n, K), "float32", scope="shared")' in text
    rng = np.random.default_rng(1)
    a, b = rng.random((21, 13), dtype=np.float32), rng.random((13, 19), dtype=np.float32)
    np.testing.assert_allclose(tir.interpreter.run(sch.func, a, b), a @ b, rtol=1e-5)


def test_a_global_copy_under_block_loops_is_not_private():
    sch = schedule.Schedule(matmul_func())
    c = sch.get_block("C")
    i, j, k = sch.get_loops(c)
    i0, i1 = sch.split(i, [None, 16])
    j0, j1 = sch.split(j, [None, 16])
    sch.reorder(i0, j0, k, i1, j1)
    sch.bind(j0, "blockIdx.x")
    copy = sch.cache_read(c, "A", "global")
    with pytest.raises(
        ScheduleError,
        match="compute_at: the result would make thread_binding loop j_0 unsound: block "
        "'A_global' does not depend on loop j_0: every iteration writes the same elements of "
        "A_global",
    ):
        sch.compute_at(copy, k)


def test_set_scope_is_recorded_and_checked():
    sch = schedule.Schedule(row_sum_func())
    s = sch.get_block("S")
    sch.set_scope(s, 0, "shared")
    assert 'S = alloc_buffer((n,), "float32", scope="shared")' in str(sch.func)
    assert "sch.set_scope(b_S, 0, 'shared')" in str(sch.trace)
    replay = sch.trace.apply(schedule.Schedule(row_sum_func()))
    assert replay.func == sch.func
    with pytest.raises(ScheduleError, match="set_scope: scope must be one of"):
        sch.set_scope(s, 0, "texture")
    with pytest.raises(ScheduleError, match="set_scope: block 'S' writes 1 buffer"):
        sch.set_scope(s, 1, "local")
    b = sch.get_block("B")
    with pytest.raises(ScheduleError, match="set_scope: B is a parameter of the kernel"):
        sch.set_scope(b, 0, "shared")


def test_set_scope_rechecks_bound_loops():
    sch = tiled_matmul()
    with pytest.raises(ScheduleError, match="set_scope: the result would make thread_binding"):
        sch.set_scope(sch.get_block("A_shared"), 0, "global")
