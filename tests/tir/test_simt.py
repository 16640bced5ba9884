"""GPU intrinsics (syncthreads, shfl_xor, shfl_down): their type rules, text, and the
interpreter's SIMT semantics (threads as generators: phases between barriers for all
threads of a block, shuffles across the lanes of a warp)."""

from __future__ import annotations

import numpy as np
import pytest

from relaxjax import arith, tir
from relaxjax.errors import VerifyError
from relaxjax.tir import Buffer, BufferStore, For, IfThenElse, IndexExpr, PrimFunc, Var, seq
from relaxjax.tir.simt import is_barrier, shfl_down, shfl_xor, syncthreads, uses_sync

n = arith.sym("n")
bx, tx, ty = arith.syms("bx tx ty")


def _launch(body, threads: int, params, shared=(), ny: int = 1):
    inner = For(tx, 0, threads, "thread_binding", body, thread_tag="threadIdx.x")
    if ny > 1:
        inner = For(ty, 0, ny, "thread_binding", inner, thread_tag="threadIdx.y")
    for buffer in shared:
        inner = tir.Allocate(buffer, inner)
    outer = For(bx, 0, n, "thread_binding", inner, thread_tag="blockIdx.x")
    return PrimFunc("k", params, outer)


def test_intrinsics_type_rules_and_messages():
    v = Var("v", "float32")
    assert shfl_xor(v, 16).dtype == "float32"
    assert shfl_down(Var("i", "int32"), 1).dtype == "int32"
    assert syncthreads().value.dtype == "int32"
    with pytest.raises(
        TypeError, match="the lane operand of shfl_xor must be an integer, got float32"
    ):
        tir.Call("shfl_xor", (v, v))
    with pytest.raises(TypeError, match="shfl_down shuffles an int or float value, got bool"):
        tir.Call("shfl_down", (tir.const(True), tir.const(1, "int32")))
    with pytest.raises(
        ValueError, match=r"shfl_xor takes 2 arguments \(value, lane operand\), got 1"
    ):
        tir.Call("shfl_xor", (v,))
    with pytest.raises(ValueError, match="syncthreads takes no arguments, got 1"):
        tir.Call("syncthreads", (v,))
    assert is_barrier(syncthreads()) and not is_barrier(tir.Evaluate(v))
    assert uses_sync(seq(syncthreads())) and uses_sync(shfl_xor(v, 1)) and not uses_sync(v)


def _exchange(with_barrier: bool) -> PrimFunc:
    """Each block reverses its row through shared memory and adds a lane's neighbour."""
    A = Buffer("A", (n, 64), "float32")
    B = Buffer("B", (n, 64), "float32")
    S = Buffer("S", (64,), "float32", scope="shared")
    stmts = [BufferStore(S, A[bx, tx], (tx,))]
    if with_barrier:
        stmts.append(syncthreads())
    stmts.append(BufferStore(B, S[63 - tx] + shfl_xor(S[tx], 1), (bx, tx)))
    return _launch(seq(*stmts), 64, (A, B), (S,))


def test_barrier_orders_shared_memory_and_prints_back():
    func = _exchange(True)
    assert "evaluate(syncthreads())" in str(func)
    assert tir.parse_prim_func(str(func)) == func
    a = np.random.default_rng(0).random((3, 64), dtype=np.float32)
    expected = a[:, ::-1] + a[:, np.arange(64) ^ 1]
    for reverse in (False, True):
        np.testing.assert_array_equal(
            tir.interpreter.run(func, a, reverse_parallel=reverse), expected
        )


def test_missing_barrier_reads_unwritten_shared_memory():
    a = np.random.default_rng(1).random((2, 64), dtype=np.float32)
    # Thread 0 reads S[63] before thread 63 wrote it (NaN-filled): the race shows.
    assert np.isnan(tir.interpreter.run(_exchange(False), a)).any()


@pytest.mark.parametrize("threads", [32, 64, 96])
def test_shuffles_over_the_lanes_of_each_warp(threads):
    A = Buffer("A", (n, threads), "int32")
    X = Buffer("X", (n, threads), "int32")
    D = Buffer("D", (n, threads), "int32")
    body = seq(
        BufferStore(X, shfl_xor(A[bx, tx], 5), (bx, tx)),
        BufferStore(D, shfl_down(A[bx, tx], 4), (bx, tx)),
    )
    func = PrimFunc("k", (A, X, D), _launch(body, threads, (A, X, D)).body, num_outputs=2)
    a = np.random.default_rng(threads).integers(0, 1000, (2, threads), dtype=np.int32)
    lane = np.arange(threads)
    x, d = tir.interpreter.run(func, a)
    np.testing.assert_array_equal(x, a[:, lane ^ 5])
    # shfl_down keeps its own value where lane + 4 passes the end of its warp.
    np.testing.assert_array_equal(d, a[:, np.where(lane % 32 + 4 < 32, lane + 4, lane)])


def test_a_shuffle_from_a_lane_the_block_lacks_is_an_error():
    A = Buffer("A", (n, 40), "int32")
    X = Buffer("X", (n, 40), "int32")
    func = _launch(BufferStore(X, shfl_xor(A[bx, tx], 16), (bx, tx)), 40, (A, X))
    with pytest.raises(
        VerifyError,
        match=r"kernel k: shfl_xor in lane 0 reads lane 16, which the warp does not have "
        r"\(it has 8 thread\(s\)\)",
    ):
        tir.interpreter.run(func, np.zeros((1, 40), np.int32))


def test_a_barrier_some_threads_skip_is_a_divergence_error():
    A = Buffer("A", (n, 32), "float32")
    B = Buffer("B", (n, 32), "float32")
    guarded = IfThenElse(
        IndexExpr(tx) < 16, seq(syncthreads(), BufferStore(B, A[bx, tx], (bx, tx)))
    )
    func = _launch(guarded, 32, (A, B))
    with pytest.raises(
        VerifyError,
        match=r"kernel k: threads diverge at a barrier or shuffle: 16 of 32 thread\(s\) wait at "
        r"barrier #1 while 16 finished",
    ):
        tir.interpreter.run(func, np.zeros((1, 32), np.float32))


def test_a_barrier_outside_a_thread_nest_is_refused():
    A = Buffer("A", (n,), "float32")
    body = For(
        bx, 0, n, "serial", seq(syncthreads(), BufferStore(A, tir.const(1.0, "float32"), (bx,)))
    )
    with pytest.raises(
        TypeError, match="kernel k: syncthreads\\(\\) outside a thread_binding nest over threadIdx"
    ):
        tir.interpreter.run(PrimFunc("k", (A,), body), np.zeros(2, np.float32))


def test_two_dimensional_blocks_linearise_lanes_x_fastest():
    A = Buffer("A", (n, 4, 16), "int32")
    X = Buffer("X", (n, 4, 16), "int32")
    func = _launch(BufferStore(X, shfl_xor(A[bx, ty, tx], 16), (bx, ty, tx)), 16, (A, X), ny=4)
    a = np.arange(64, dtype=np.int32).reshape(1, 4, 16)
    out = tir.interpreter.run(func, a)
    # Lane = tx + 16 * ty within a warp of 32: xor 16 swaps rows 0<->1 and 2<->3.
    np.testing.assert_array_equal(out[0], a[0, [1, 0, 3, 2]])
