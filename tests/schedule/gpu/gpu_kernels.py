"""Kernels and schedules the GPU tests share: a tiled matmul through shared memory and a
row reduction over the threads of a block."""

from __future__ import annotations

import numpy as np

from relaxjax import arith, schedule, tir
from relaxjax.tir import te

n, m, K = arith.syms("n m K")


def matmul_func() -> tir.PrimFunc:
    A = te.placeholder((n, K), "float32", "A")
    B = te.placeholder((K, m), "float32", "B")
    k = te.reduce_axis(K, "k")
    C = te.compute((n, m), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    return te.create_prim_func([A, B, C], name="matmul")


def tiled_matmul(tile: int = 16, step: int = 8) -> schedule.Schedule:
    """The textbook GPU matmul: a block per tile of C, a thread per element, operands
    staged tile by tile through shared memory by all threads of the block."""
    sch = schedule.Schedule(matmul_func())
    c = sch.get_block("C")
    i, j, k = sch.get_loops(c)
    i0, i1 = sch.split(i, [None, tile])
    j0, j1 = sch.split(j, [None, tile])
    k0, _ = sch.split(k, [None, step])
    sch.reorder(i0, j0, k0, i1, j1)
    sch.bind(i0, "blockIdx.y")
    sch.bind(j0, "blockIdx.x")
    for name in ("A", "B"):
        copy = sch.cache_read(c, name, "shared")
        sch.compute_at(copy, k0)
        fused = sch.fuse(*sch.get_loops(copy)[-2:])
        _, lanes = sch.split(fused, [None, tile])
        sch.bind(lanes, "threadIdx.x")
    sch.bind(i1, "threadIdx.y")
    sch.bind(j1, "threadIdx.x")
    return sch


def row_sum_func() -> tir.PrimFunc:
    A = te.placeholder((n, m), "float32", "A")
    k = te.reduce_axis(m, "k")
    S = te.compute((n,), lambda i: te.sum(A[i, k], axis=k), name="S")
    B = te.compute((n, m), lambda i, j: A[i, j] - S[i], name="B")
    return te.create_prim_func([A, B], name="center")


def row_sum_schedule(threads: int, shared: bool = True) -> schedule.Schedule:
    """A block per row: the row sum reduced over ``threads`` threads, then the row
    centred by the same threads."""
    sch = schedule.Schedule(row_sum_func())
    s, b = sch.get_block("S"), sch.get_block("B")
    i, k = sch.get_loops(s)
    sch.bind(i, "blockIdx.x")
    k0, k1 = sch.split(k, [None, threads])
    sch.reorder(k1, k0)
    sch.bind(k1, "threadIdx.x")
    sch.reverse_compute_at(b, i)
    _, j1 = sch.split(sch.get_loops(b)[-1], [None, threads])
    sch.bind(j1, "threadIdx.x")
    if shared:
        sch.set_scope(s, 0, "shared")
    return sch


def run_both(func: tir.PrimFunc, *arrays):
    """The interpreter's result with the threads of each phase in order and reversed
    (a race shows as a difference)."""
    forward = tir.interpreter.run(func, *arrays)
    backward = tir.interpreter.run(func, *arrays, reverse_parallel=True)
    pairs = zip(forward, backward) if isinstance(forward, tuple) else [(forward, backward)]
    for one, other in pairs:
        np.testing.assert_array_equal(one, other)
    return forward
