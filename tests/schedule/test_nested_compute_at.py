"""Block primitives inside common loops and with more inputs:

- compute_at / reverse_compute_at between a block and a loop that share outer loops (a
  tile loop made by an earlier compute_at, a batch loop), and their refusals: values
  that would cross iterations of the common loop, uses outside the target loop, blocks
  that update in place (no init) and would run twice;
- reverse_compute_inline of a consumer that reads other buffers besides its producer's
  output (parameters, intermediates complete before the producer);
- storage_align on several axes of one buffer, a repeated axis replacing its request.

Each allowed case: the loop nest, equivalence with the unscheduled kernel (reference
interpreter, several symbol values), the trace round trip; the LLVM build of each is
checked in ``test_new_cases_compile_and_match_the_interpreter``.
"""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from sched_kernels import (
    K,
    M,
    N,
    assert_equivalent,
    assert_replays,
    rowsum,
    stencil,
    two_stage,
)

from relaxjax import arith, schedule, tir
from relaxjax.schedule import ScheduleError
from relaxjax.tir import te

HERE = Path(__file__).parent


def check(sch):
    assert_replays(sch)
    assert_equivalent(sch.original, sch.func)


def three_stage() -> tir.PrimFunc:
    """``B = A + 1``, ``C = B * 2`` (intermediates), ``D = C - 3`` over ``(n, m)``."""
    a = te.placeholder((N, M), "float32", "A")
    b = te.compute((N, M), lambda i, j: a[i, j] + 1.0, name="B")
    c = te.compute((N, M), lambda i, j: b[i, j] * 2.0, name="C")
    d = te.compute((N, M), lambda i, j: c[i, j] - 3.0, name="D")
    return te.create_prim_func([a, d], name="three_stage")


def batched() -> tir.PrimFunc:
    """``B = A * 2`` (intermediate), ``C = B + A`` over ``(K, n, m)`` (``K`` batches)."""
    a = te.placeholder((K, N, M), "float32", "A")
    b = te.compute((K, N, M), lambda p, i, j: a[p, i, j] * 2.0, name="B")
    c = te.compute((K, N, M), lambda p, i, j: b[p, i, j] + a[p, i, j], name="C")
    return te.create_prim_func([a, c], name="batched")


def batched_norm() -> tir.PrimFunc:
    """``S[p, i] = sum_r A[p, i, r]`` (intermediate), ``Y = A / S`` per batch ``p``."""
    a = te.placeholder((K, N, M), "float32", "A")
    r = te.reduce_axis(M, "r")
    s = te.compute((K, N), lambda p, i: te.sum(a[p, i, r], axis=r), name="S")
    y = te.compute((K, N, M), lambda p, i, j: a[p, i, j] / s[p, i], name="Y")
    return te.create_prim_func([a, y], name="batched_norm")


def row_scale() -> tir.PrimFunc:
    """``S = rowsum(A)``, ``T = W * 0.5``, ``B = A * 2`` (intermediates), then
    ``Y[i, j] = B[i, j] / S[i] + W[j] * T[j]``: Y reads its producer B, two
    intermediates complete before B and a parameter."""
    a = te.placeholder((N, M), "float32", "A")
    w = te.placeholder((M,), "float32", "W")
    r = te.reduce_axis(M, "r")
    s = te.compute((N,), lambda i: te.sum(a[i, r], axis=r), name="S")
    t = te.compute((M,), lambda j: w[j] * 0.5, name="T")
    b = te.compute((N, M), lambda i, j: a[i, j] * 2.0, name="B")
    y = te.compute((N, M), lambda i, j: b[i, j] / s[i] + w[j] * t[j], name="Y")
    return te.create_prim_func([a, w, y], name="row_scale")


def cube() -> tir.PrimFunc:
    """``B = A + 1`` (intermediate) then ``C = B * 2`` over ``(n, m, K)``."""
    a = te.placeholder((N, M, K), "float32", "A")
    b = te.compute((N, M, K), lambda i, j, k: a[i, j, k] + 1.0, name="B")
    c = te.compute((N, M, K), lambda i, j, k: b[i, j, k] * 2.0, name="C")
    return te.create_prim_func([a, c], name="cube")


# --- compute_at under common loops -------------------------------------------------------


def deeper_in_the_tile():
    """D tiled by 4 rows; C then B computed at the tile; then B moved to C's row loop."""
    sch = schedule.Schedule(three_stage())
    io, _ = sch.split(sch.get_loops(sch.get_block("D"))[0], factors=[None, 4])
    sch.compute_at(sch.get_block("C"), io)
    sch.compute_at(sch.get_block("B"), io)
    _, row, _ = sch.get_loops(sch.get_block("C"))
    sch.compute_at(sch.get_block("B"), row)
    return sch, io


DEEPER = """\
        for i_2_0 in range((n + 3) // 4):
            for ax_v_i_1 in range(4):
                for ax_v_j_2 in range(m):
                    with block("B"):
                        v_i = axis.spatial(n, ax_v_i_1 + i_2_0 * 4)
                        v_j = axis.spatial(m, ax_v_j_2)
                        where(ax_v_i_1 + i_2_0 * 4 < n)
                        reads(A[v_i, v_j])
                        writes(B[v_i, v_j])
                        B[v_i, v_j] = A[v_i, v_j] + float32(1.0)
                for ax_v_j_1 in range(m):
                    with block("C"):
                        v_i_1 = axis.spatial(n, ax_v_i_1 + i_2_0 * 4)
                        v_j_1 = axis.spatial(m, ax_v_j_1)
                        where(ax_v_i_1 + i_2_0 * 4 < n)
                        reads(B[v_i_1, v_j_1])
                        writes(C[v_i_1, v_j_1])
                        C[v_i_1, v_j_1] = B[v_i_1, v_j_1] * float32(2.0)
            for i_2_1 in range(4):
                for j_2 in range(m):
                    with block("D"):"""


def test_compute_at_deeper_in_a_nest_it_already_shares():
    sch, io = deeper_in_the_tile()
    assert DEEPER in str(sch.func)
    check(sch)
    sch.parallel(io)
    check(sch)


BATCH = """\
        for p_1 in range(K):
            for i_1 in range(n):
                for ax_v_j_1 in range(m):
                    with block("B"):
                        v_p = axis.spatial(K, p_1)
                        v_i = axis.spatial(n, i_1)
                        v_j = axis.spatial(m, ax_v_j_1)
                        reads(A[v_p, v_i, v_j])
                        writes(B[v_p, v_i, v_j])
                        B[v_p, v_i, v_j] = A[v_p, v_i, v_j] * float32(2.0)
                for j_1 in range(m):
                    with block("C"):"""


def test_compute_at_under_a_common_batch_loop():
    sch = schedule.Schedule(batched())
    p, i, _ = sch.get_loops(sch.get_block("C"))
    sch.compute_at(sch.get_block("B"), p)
    check(sch)
    sch.compute_at(sch.get_block("B"), i)
    assert BATCH in str(sch.func)
    check(sch)
    sch.parallel(p)
    check(sch)


BATCH_NORM = """\
        for p_1 in range(K):
            for i_1 in range(n):
                for ax_v_r_1 in range(m):
                    with block("S"):
                        v_p = axis.spatial(K, p_1)
                        v_i = axis.spatial(n, i_1)
                        v_r = axis.reduce(m, ax_v_r_1)
                        reads(A[v_p, v_i, v_r])
                        writes(S[v_p, v_i])
                        with init():
                            S[v_p, v_i] = float32(0.0)
                        S[v_p, v_i] = S[v_p, v_i] + A[v_p, v_i, v_r]
                for j in range(m):
                    with block("Y"):"""


def test_compute_at_a_reduction_under_a_common_batch_loop():
    sch = schedule.Schedule(batched_norm())
    p, i, _ = sch.get_loops(sch.get_block("Y"))
    sch.compute_at(sch.get_block("S"), p)
    sch.compute_at(sch.get_block("S"), i)
    assert BATCH_NORM in str(sch.func)
    check(sch)
    sch.parallel(i)
    check(sch)


NESTED_HALO = """\
        for i_1_0 in range((n + 3) // 4):
            for i_1_1 in range(4):
                for ax_v_i_1 in range(2):
                    with block("B"):
                        v_i = axis.spatial(n + 1, ax_v_i_1 + i_1_0 * 4 + i_1_1)
                        where(ax_v_i_1 + i_1_0 * 4 + i_1_1 < n + 1)
                        reads(A[v_i])
                        writes(B[v_i])
                        B[v_i] = A[v_i] * float32(3.0)
                with block("C"):"""


def test_compute_at_a_stencil_deeper_recomputes_the_halo_per_row():
    sch = schedule.Schedule(stencil())
    io, ii = sch.split(sch.get_loops(sch.get_block("C"))[0], factors=[None, 4])
    sch.compute_at(sch.get_block("B"), io)  # 5 elements of B per tile of 4
    sch.compute_at(sch.get_block("B"), ii)  # its guard only bounds v_i: it moves again
    assert NESTED_HALO in str(sch.func)
    check(sch)


# The producer of T is overwritten at every iteration of i: B read at i - 1 must not be
# recomputed at i (it would read the T of iteration i).
LAGGED = """
@prim_func(outputs=1)
def lagged(A: Buffer((n,), "float32"), C: Buffer((n,), "float32")):
    with block("root"):
        T = alloc_buffer((1,), "float32")
        B = alloc_buffer((n,), "float32")
        for i in range(n):
            with block("T"):
                v_t = axis.spatial(n, i)
                T[0] = A[v_t]
            with block("B"):
                v_i = axis.spatial(n, i)
                B[v_i] = T[0] * float32(3.0)
            for j in range(1):
                with block("C"):
                    v_c = axis.spatial(n, i + j)
                    where(i >= 1)
                    C[v_c] = B[v_c] + B[v_c - 1]
"""

EARLY_READER = """
@prim_func(outputs=2)
def early(A: Buffer((n,), "float32"), C: Buffer((n,), "float32"), E: Buffer((n,), "float32")):
    with block("root"):
        B = alloc_buffer((n,), "float32")
        for i in range(n):
            with block("E"):
                v_e = axis.spatial(n, i)
                where(i >= 1)
                E[v_e] = B[v_e - 1]
            with block("B"):
                v_i = axis.spatial(n, i)
                B[v_i] = A[v_i] * float32(3.0)
            for j in range(1):
                with block("C"):
                    v_c = axis.spatial(n, i + j)
                    C[v_c] = B[v_c] + float32(1.0)
"""

LATE_READER = """
@prim_func(outputs=2)
def late(A: Buffer((n,), "float32"), C: Buffer((n,), "float32"), E: Buffer((n,), "float32")):
    with block("root"):
        B = alloc_buffer((n,), "float32")
        for i in range(n):
            with block("B"):
                v_i = axis.spatial(n, i)
                B[v_i] = A[v_i] * float32(3.0)
            for j in range(1):
                with block("C"):
                    v_c = axis.spatial(n, i + j)
                    C[v_c] = B[v_c] + float32(1.0)
        for k in range(n):
            with block("E"):
                v_e = axis.spatial(n, k)
                E[v_e] = B[v_e] * float32(2.0)
"""

BRANCHES = """
@prim_func(outputs=1)
def branches(A: Buffer((n,), "float32"), C: Buffer((n,), "float32")):
    with block("root"):
        B = alloc_buffer((n,), "float32")
        if n > 4:
            for i in range(n):
                with block("B"):
                    v_i = axis.spatial(n, i)
                    B[v_i] = A[v_i] * float32(3.0)
        else:
            for j in range(n):
                with block("C"):
                    v_c = axis.spatial(n, j)
                    C[v_c] = B[v_c] + float32(1.0)
"""


def refused(sch, primitive, block, loop) -> str:
    """The message of the ScheduleError that ``primitive`` raises; the kernel and the
    trace are unchanged."""
    before, steps = sch.func, len(sch.trace)
    with pytest.raises(ScheduleError) as err:
        getattr(sch, primitive)(block, loop)
    assert sch.func is before and len(sch.trace) == steps
    return str(err.value)


def parsed(text):
    sch = schedule.Schedule(tir.parse_prim_func(text))
    return sch, sch.get_block("B"), sch.get_loops(sch.get_block("C"))


def test_compute_at_refuses_values_that_cross_iterations_of_the_common_loop():
    sch, b, (_, j) = parsed(LAGGED)
    assert refused(sch, "compute_at", b, j) == (
        "compute_at: the blocks under loop j read B axis 0 over [i - 1, i] in one iteration "
        "of loop i, beyond [i, i] that 'B' writes in it"
    )


def test_compute_at_refuses_uses_outside_the_loop_around_the_common_loop():
    sch, b, (_, j) = parsed(EARLY_READER)
    assert refused(sch, "compute_at", b, j) == (
        "compute_at: block 'E' uses B outside loop j: every consumer of 'B' must be under it"
    )
    sch, b, (_, j) = parsed(LATE_READER)
    assert refused(sch, "compute_at", b, j) == (
        "compute_at: block 'E' after loop j reads B, which would only be partly computed"
    )


def test_compute_at_refuses_a_loop_in_another_branch():
    sch, b, (j,) = parsed(BRANCHES)
    assert refused(sch, "compute_at", b, j) == (
        "compute_at: block 'B' and loop j are not in one sequence of statements"
    )
    (i,) = sch.get_loops(b)
    assert refused(sch, "reverse_compute_at", sch.get_block("C"), i) == (
        "reverse_compute_at: block 'C' and loop i are not in one sequence of statements"
    )


def test_compute_at_refuses_a_consumer_after_the_loop_in_the_common_loop():
    a = te.placeholder((N, M), "float32", "A")
    b = te.compute((N, M), lambda i, j: a[i, j] + 1.0, name="B")
    c = te.compute((N, M), lambda i, j: b[i, j] * 2.0, name="C")
    d = te.compute((N, M), lambda i, j: c[i, j] - b[i, j], name="D")
    sch = schedule.Schedule(te.create_prim_func([a, d], name="diamond"))
    io, _ = sch.split(sch.get_loops(sch.get_block("D"))[0], factors=[None, 4])
    sch.compute_at(sch.get_block("C"), io)
    sch.compute_at(sch.get_block("B"), io)
    check(sch)
    _, row, _ = sch.get_loops(sch.get_block("C"))
    assert refused(sch, "compute_at", sch.get_block("B"), row) == (
        "compute_at: block 'D' after loop ax_v_i_1 reads B, which would only be partly computed"
    )
    assert refused(sch, "compute_at", sch.get_block("C"), sch.get_loops(sch.get_block("B"))[1]) == (
        "compute_at: block 'C' does not come before loop ax_v_i"
    )


def test_compute_at_refuses_a_hiding_predicate_under_a_common_loop():
    sch = schedule.Schedule(rowsum())
    _, k = sch.get_loops(sch.get_block("S"))
    _, k1 = sch.split(k, factors=[None, 8])  # m % 8 != 0: the guard hides partial sums
    rf = sch.rfactor(k1)
    row, _, _ = sch.get_loops(rf)
    sch.reverse_compute_at(sch.get_block("S"), row)
    check(sch)
    _, lanes = sch.get_loops(sch.get_block("S"))
    assert refused(sch, "compute_at", rf, lanes) == (
        "compute_at: block 'S_rf' has a predicate that may hide points of its domain; which "
        "elements it writes in one iteration of loop i is unknown"
    )


def test_compute_at_refuses_an_in_place_update_computed_twice():
    """S_init then an S without init: recomputing S's halo would add its terms twice."""
    a = te.placeholder((N + 1, M), "float32", "A")
    r = te.reduce_axis(M, "r")
    s = te.compute((N + 1,), lambda i: te.sum(a[i, r], axis=r), name="S")
    c = te.compute((N,), lambda i: s[i] + s[i + 1], name="C")
    sch = schedule.Schedule(te.create_prim_func([a, c], name="pair_sums"))
    s_block = sch.get_block("S")
    sch.decompose_reduction(s_block, sch.get_loops(s_block)[0])
    (i,) = sch.get_loops(sch.get_block("C"))
    assert refused(sch, "compute_at", s_block, i) == (
        "compute_at: block 'S' updates what it writes in place (it has no init), so it must "
        "run once per element: cannot prove that different iterations of loop i_1 write "
        "different elements of S (block 'S' is bound to (ax_v_i + i_1, ax_v_r))"
    )
    check(sch)


def test_compute_at_of_an_in_place_update_once_per_element():
    """rfactor's partial sums (no init: a separate init block) computed per lane of the
    write-back: each partial sum is still updated once per element of A."""
    sch = schedule.Schedule(rowsum())
    _, k = sch.get_loops(sch.get_block("S"))
    rf = sch.rfactor(k)
    _, lanes = sch.get_loops(sch.get_block("S"))
    sch.compute_at(rf, lanes)
    assert "S_rf[v_k_1, v_i_rf] = S_rf[v_k_1, v_i_rf] + A[v_i_rf, v_k_1]" in str(sch.func)
    check(sch)


def test_compute_at_refuses_to_move_an_in_place_update_again():
    sch = schedule.Schedule(rowsum())
    _, k = sch.get_loops(sch.get_block("S"))
    rf = sch.rfactor(k)
    row, _ = sch.get_loops(sch.get_block("S"))
    sch.compute_at(rf, row)
    check(sch)
    _, lanes = sch.get_loops(sch.get_block("S"))
    assert refused(sch, "compute_at", rf, lanes) == (
        "compute_at: block 'S_rf' updates what it writes in place (it has no init) and does "
        "not cover its whole domain: it may not run once per element"
    )


# --- reverse_compute_at under common loops -------------------------------------------------


def consumer_deeper_in_the_tile():
    """B tiled by 4 rows; C then D computed at the tile; then D moved to C's row loop."""
    sch = schedule.Schedule(three_stage())
    io, _ = sch.split(sch.get_loops(sch.get_block("B"))[0], factors=[None, 4])
    sch.reverse_compute_at(sch.get_block("C"), io)
    sch.reverse_compute_at(sch.get_block("D"), io)
    _, row, _ = sch.get_loops(sch.get_block("C"))
    sch.reverse_compute_at(sch.get_block("D"), row)
    return sch, io


REVERSE_DEEPER = """\
            for ax_v_i_1 in range(4):
                for ax_v_j_1 in range(m):
                    with block("C"):
                        v_i_1 = axis.spatial(n, ax_v_i_1 + i_0 * 4)
                        v_j_1 = axis.spatial(m, ax_v_j_1)
                        where(ax_v_i_1 + i_0 * 4 < n)
                        reads(B[v_i_1, v_j_1])
                        writes(C[v_i_1, v_j_1])
                        C[v_i_1, v_j_1] = B[v_i_1, v_j_1] * float32(2.0)
                for ax_v_j_2_1 in range(m):
                    with block("D"):
                        v_i_2 = axis.spatial(n, ax_v_i_1 + i_0 * 4)
                        v_j_2 = axis.spatial(m, ax_v_j_2_1)
                        where(ax_v_i_1 + i_0 * 4 < n)"""


def test_reverse_compute_at_deeper_in_a_nest_it_already_shares():
    sch, io = consumer_deeper_in_the_tile()
    assert REVERSE_DEEPER in str(sch.func)
    check(sch)
    sch.parallel(io)
    check(sch)


REVERSE_BATCH = """\
        for p in range(K):
            for i in range(n):
                for r in range(m):
                    with block("S"):
                        v_p = axis.spatial(K, p)
                        v_i = axis.spatial(n, i)
                        v_r = axis.reduce(m, r)
                        reads(A[v_p, v_i, v_r])
                        writes(S[v_p, v_i])
                        with init():
                            S[v_p, v_i] = float32(0.0)
                        S[v_p, v_i] = S[v_p, v_i] + A[v_p, v_i, v_r]
                for ax_v_j_1 in range(m):
                    with block("Y"):
                        v_p_1 = axis.spatial(K, p)
                        v_i_1 = axis.spatial(n, i)
                        v_j = axis.spatial(m, ax_v_j_1)"""


def test_reverse_compute_at_under_a_common_batch_loop():
    sch = schedule.Schedule(batched_norm())
    p, i, _ = sch.get_loops(sch.get_block("S"))
    sch.reverse_compute_at(sch.get_block("Y"), p)
    check(sch)
    sch.reverse_compute_at(sch.get_block("Y"), i)
    assert REVERSE_BATCH in str(sch.func)
    check(sch)
    sch.parallel(p)
    check(sch)


# D[w0, w1] = B[w1, w0] with w0 bound to i: at iteration i it needs a column of B, but
# the rows of B are made one per iteration of i.
TRANSPOSED = """
@prim_func(outputs=1)
def transposed(A: Buffer((n, n), "float32"), D: Buffer((n, n), "float32")):
    with block("root"):
        B = alloc_buffer((n, n), "float32")
        for i in range(n):
            for j in range(n):
                with block("B"):
                    v0 = axis.spatial(n, i)
                    v1 = axis.spatial(n, j)
                    B[v0, v1] = A[v0, v1] + float32(1.0)
            for j2 in range(n):
                with block("D"):
                    w0 = axis.spatial(n, i)
                    w1 = axis.spatial(n, j2)
                    D[w0, w1] = B[w1, w0] * float32(2.0)
"""


def test_reverse_compute_at_refuses_to_move_across_iterations_of_the_common_loop():
    sch = schedule.Schedule(tir.parse_prim_func(TRANSPOSED))
    _, j = sch.get_loops(sch.get_block("B"))
    assert refused(sch, "reverse_compute_at", sch.get_block("D"), j) == (
        "reverse_compute_at: block 'D' runs w0 over [i, i] in one iteration of loop i, but "
        "loop j makes its inputs for [0, n - 1]: it would move across iterations of loop i"
    )


def test_reverse_compute_at_refuses_a_consumer_before_the_loop_in_the_common_loop():
    sch, _ = consumer_deeper_in_the_tile()
    _, _, columns = sch.get_loops(sch.get_block("D"))
    assert refused(sch, "reverse_compute_at", sch.get_block("C"), columns) == (
        "reverse_compute_at: block 'C' does not come after loop ax_v_j_2_1"
    )


# --- reverse_compute_inline with other inputs ----------------------------------------------

ROW_SCALE_INLINED = """\
        for i_1 in range(n):
            for j_1 in range(m):
                with block("B"):
                    v_i_1 = axis.spatial(n, i_1)
                    v_j_1 = axis.spatial(m, j_1)
                    reads(A[v_i_1, v_j_1], S[v_i_1], W[v_j_1], T[v_j_1])
                    writes(Y[v_i_1, v_j_1])
                    Y[v_i_1, v_j_1] = A[v_i_1, v_j_1] * float32(2.0) / S[v_i_1] + """


def test_reverse_compute_inline_copies_the_other_reads():
    sch = schedule.Schedule(row_scale())
    sch.reverse_compute_inline(sch.get_block("Y"))
    assert str(sch.func).endswith(ROW_SCALE_INLINED + "W[v_j_1] * T[v_j_1]")
    assert [b.name for b in sch.func.body.block.alloc_buffers] == ["S", "T"]
    check(sch)


def test_reverse_compute_inline_of_a_tile_with_a_parameter():
    """A consumer that also reads a parameter folds into its split producer."""
    a = te.placeholder((N, M), "float32", "A")
    w = te.placeholder((M,), "float32", "W")
    b = te.compute((N, M), lambda i, j: a[i, j] + 1.0, name="B")
    c = te.compute((N, M), lambda i, j: b[i, j] * w[j], name="C")
    sch = schedule.Schedule(te.create_prim_func([a, w, c], name="weighted"))
    io, _ = sch.split(sch.get_loops(sch.get_block("B"))[0], factors=[None, 4])
    sch.reverse_compute_inline(sch.get_block("C"))
    assert "C[v_i, v_j] = (A[v_i, v_j] + float32(1.0)) * W[v_j]" in str(sch.func)
    check(sch)
    sch.parallel(io)
    check(sch)


def test_reverse_compute_inline_refuses_an_input_not_complete_before_the_producer():
    a = te.placeholder((N + 1, M), "float32", "A")
    t = te.compute((N + 1, M), lambda i, j: a[i, j] + 1.0, name="T")
    u = te.compute((N, M), lambda i, j: t[i, j] * 2.0, name="U")
    y = te.compute((N, M), lambda i, j: u[i, j] + t[i + 1, j], name="Y")
    sch = schedule.Schedule(te.create_prim_func([a, y], name="pair"))
    row, _ = sch.get_loops(sch.get_block("T"))
    # T is written row by row beside U: folded into U, Y would read row i + 1 too early
    sch.reverse_compute_at(sch.get_block("U"), row)
    check(sch)
    before = sch.func
    with pytest.raises(ScheduleError) as err:
        sch.reverse_compute_inline(sch.get_block("Y"))
    assert str(err.value) == (
        "reverse_compute_inline: block 'Y' reads T and U; it can only fold into 'U', which "
        "writes the last of them (U), but block 'T' writes T, which 'Y' reads"
    )
    assert sch.func is before


def test_reverse_compute_inline_refuses_the_last_input_read_elsewhere():
    a = te.placeholder((N,), "float32", "A")
    b = te.compute((N,), lambda i: a[i] * 2.0, name="B")
    t = te.compute((N + 1,), lambda i: a[0] + 1.0, name="T")
    y = te.compute((N,), lambda i: b[i] + t[i + 1], name="Y")
    sch = schedule.Schedule(te.create_prim_func([a, y], name="shifted"))
    with pytest.raises(ScheduleError) as err:
        sch.reverse_compute_inline(sch.get_block("Y"))
    assert str(err.value) == (
        "reverse_compute_inline: block 'Y' reads B and T; it can only fold into 'T', which "
        "writes the last of them (T), but block 'Y' must read T at exactly its iterators, "
        "got [v_i_2 + 1]"
    )


# --- storage_align on several axes ---------------------------------------------------------


def strides_at(sch, env):
    (buffer,) = sch.func.body.block.alloc_buffers
    return [arith.evaluate(s, env) for s in buffer.strides]


def test_storage_align_several_axes_and_a_replaced_request():
    sch = schedule.Schedule(cube())
    b = sch.get_block("B")
    sch.storage_align(b, 0, 1, 8, 1)
    assert strides_at(sch, {"m": 3, "K": 5}) == [27, 9, 1]
    sch.storage_align(b, 0, 0, 16, 3)
    # axis 1: 5 -> 9 (9 % 8 == 1); axis 0: 9 * 3 = 27 -> 35 (35 % 16 == 3)
    assert strides_at(sch, {"m": 3, "K": 5}) == [35, 9, 1]
    # axis 1: 8 -> 9; axis 0: 9 * 4 = 36 -> 51
    assert strides_at(sch, {"m": 4, "K": 8}) == [51, 9, 1]
    sch.storage_align(b, 0, 1, 4, 2)  # replaces the request on axis 1: 5 -> 6
    assert strides_at(sch, {"m": 3, "K": 5}) == [19, 6, 1]
    text = str(sch.func)
    assert "block_attr({'storage_align': (('B', 0, 16, 3), ('B', 1, 4, 2))})" in text
    check(sch)
    fresh = schedule.Schedule(cube())
    fresh.storage_align(fresh.get_block("B"), 0, 0, 16, 3)
    fresh.storage_align(fresh.get_block("B"), 0, 1, 4, 2)
    assert fresh.func == sch.func


def test_storage_align_requests_go_with_an_inlined_buffer():
    sch = schedule.Schedule(two_stage())
    sch.storage_align(sch.get_block("B"), 0, 0, 8, 1)
    sch.storage_align(sch.get_block("B"), 0, 0, 8, 1)  # the same request again: no change
    assert "'storage_align'" in str(sch.func)
    sch.compute_inline(sch.get_block("B"))
    assert "block_attr" not in str(sch.func)
    check(sch)


FIXED_STRIDES = """
@prim_func(outputs=1)
def fixed(A: Buffer((n, m), "float32"), C: Buffer((n, m), "float32")):
    with block("root"):
        B = alloc_buffer((n, m), "float32", strides=(m + 1, 1))
        for i in range(n):
            for j in range(m):
                with block("B"):
                    v_i = axis.spatial(n, i)
                    v_j = axis.spatial(m, j)
                    reads(A[v_i, v_j])
                    writes(B[v_i, v_j])
                    B[v_i, v_j] = A[v_i, v_j] + float32(1.0)
        for i_1 in range(n):
            for j_1 in range(m):
                with block("C"):
                    v_i_1 = axis.spatial(n, i_1)
                    v_j_1 = axis.spatial(m, j_1)
                    C[v_i_1, v_j_1] = B[v_i_1, v_j_1] * float32(2.0)
"""


def test_storage_align_refusals():
    sch = schedule.Schedule(tir.parse_prim_func(FIXED_STRIDES))
    with pytest.raises(ScheduleError) as err:
        sch.storage_align(sch.get_block("B"), 0, 0, 8, 1)
    assert str(err.value) == (
        "storage_align: B already has explicit strides (m + 1, 1) that storage_align did not set"
    )
    stale = FIXED_STRIDES.replace(
        "        B = alloc_buffer",
        "        block_attr({'storage_align': (('B', 0, 8, 1),)})\n        B = alloc_buffer",
    )
    sch = schedule.Schedule(tir.parse_prim_func(stale))
    with pytest.raises(ScheduleError) as err:
        sch.storage_align(sch.get_block("B"), 0, 0, 4, 1)
    assert str(err.value) == (
        "storage_align: B has strides (m + 1, 1), not those of its storage_align requests "
        "{0: (8, 1)}"
    )
    sch = schedule.Schedule(cube())
    with pytest.raises(ScheduleError) as err:
        sch.storage_align(sch.get_block("B"), 0, 2, 8, 1)
    assert str(err.value) == (
        "storage_align: axis must be in [0, 2) (the innermost axis has stride 1), got 2"
    )


# --- random schedules with nested moves ------------------------------------------------------

KERNELS = {
    "three_stage": three_stage,
    "batched": batched,
    "batched_norm": batched_norm,
    "stencil": stencil,
    "row_scale": row_scale,
}

STEPS = ("split", "compute_at", "compute_at", "reverse_compute_at", "reverse_compute_at")

RANDOM_SIZES = ({"n": 0, "m": 3, "K": 2}, {"n": 5, "m": 7, "K": 3}, {"n": 6, "m": 4, "K": 1})


def blocks_and_loops(sch):
    blocks = sch.get_child_blocks(sch.get_block("root"))
    return blocks, {b: sch.get_loops(b) for b in blocks}


@given(kernel=st.sampled_from(sorted(KERNELS)), data=st.data())
def test_random_nested_moves_are_sound(kernel, data):
    """Splits, and moves of a block to a loop of another block (once blocks share a loop,
    moves inside it): each step keeps the meaning or raises ScheduleError leaving the
    kernel as it was."""
    func = KERNELS[kernel]()
    sch = schedule.Schedule(func)
    for _ in range(data.draw(st.integers(2, 7), label="steps")):
        blocks, loops = blocks_and_loops(sch)
        step = data.draw(st.sampled_from(STEPS), label="step")
        block = data.draw(st.sampled_from(blocks), label="block")
        others = [lp for b in blocks if b != block for lp in loops[b] if lp not in loops[block]]
        before = sch.func
        try:
            if step == "split" and loops[block]:
                loop = data.draw(st.sampled_from(loops[block]), label="loop")
                factors = data.draw(st.sampled_from([[None, 2], [None, 3], [2, None]]))
                sch.split(loop, factors=factors)
            elif step != "split" and others:
                getattr(sch, step)(block, data.draw(st.sampled_from(others), label="loop"))
        except ScheduleError:
            assert sch.func is before
    assert_equivalent(func, sch.func, RANDOM_SIZES, rtol=1e-4)
    assert_replays(sch)


# --- LLVM build -----------------------------------------------------------------------------

CHILD = """
import numpy as np
import relaxjax as relax
from relaxjax import schedule
from sched_kernels import SIZES, outputs_of, random_inputs, stencil
from test_nested_compute_at import (
    batched, batched_norm, consumer_deeper_in_the_tile, cube, deeper_in_the_tile, row_scale,
)


def batch_loop():
    sch = schedule.Schedule(batched())
    p, i, _ = sch.get_loops(sch.get_block("C"))
    sch.compute_at(sch.get_block("B"), p)
    sch.compute_at(sch.get_block("B"), i)
    sch.parallel(p)
    return sch


def batch_norm_reverse():
    sch = schedule.Schedule(batched_norm())
    p, i, _ = sch.get_loops(sch.get_block("S"))
    sch.reverse_compute_at(sch.get_block("Y"), p)
    sch.reverse_compute_at(sch.get_block("Y"), i)
    sch.parallel(p)
    return sch


def nested_halo():
    sch = schedule.Schedule(stencil())
    io, ii = sch.split(sch.get_loops(sch.get_block("C"))[0], factors=[None, 4])
    sch.compute_at(sch.get_block("B"), io)
    sch.compute_at(sch.get_block("B"), ii)
    return sch


def inline_with_inputs():
    sch = schedule.Schedule(row_scale())
    sch.reverse_compute_inline(sch.get_block("Y"))
    return sch


def aligned():
    sch = schedule.Schedule(cube())
    sch.storage_align(sch.get_block("B"), 0, 1, 8, 1)
    sch.storage_align(sch.get_block("B"), 0, 0, 16, 3)
    return sch


def parallel_tile(make):
    sch, io = make()
    sch.parallel(io)
    return sch


cases = [
    parallel_tile(deeper_in_the_tile), parallel_tile(consumer_deeper_in_the_tile), batch_loop(),
    batch_norm_reverse(), nested_halo(), inline_with_inputs(), aligned(),
]
funcs = [sch.func.with_name(f"case{k}") for k, sch in enumerate(cases)]
compiled = relax.build(funcs, target="llvm")
for k, sch in enumerate(cases):
    kernel = compiled[f"case{k}"]
    names = {s.name for s in sch.original.symbols()}
    for seed, env in enumerate(SIZES):
        env = {key: v for key, v in env.items() if key in names}
        arrays = random_inputs(sch.original, env, seed)
        want = outputs_of(sch.original, arrays, env)
        outs = [np.full_like(w, np.nan) for w in want]
        kernel(*arrays, *outs)
        for w, got in zip(want, outs):
            got = np.where(np.isnan(w), w, got)
            np.testing.assert_allclose(got, w, rtol=1e-5, atol=1e-5, err_msg=f"case{k} {env}")
    print("ok", k)
"""


def test_new_cases_compile_and_match_the_interpreter(private_cache):
    env = dict(os.environ)
    src = HERE.parents[1] / "src"
    env["PYTHONPATH"] = os.pathsep.join([str(src), str(HERE), env.get("PYTHONPATH", "")])
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(CHILD)],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    assert [line for line in result.stdout.split("\n") if line.startswith("ok")] == [
        f"ok {k}" for k in range(7)
    ]
