"""Block primitives: compute_at, reverse_compute_at, compute_inline,
reverse_compute_inline, cache_read, cache_write, decompose_reduction, rfactor,
storage_align. Each: the expected loop nest, a trace round trip, and equivalence with
the unscheduled kernel (reference interpreter, several symbol values); each refusal
with its message."""

import numpy as np
import pytest
from sched_kernels import (
    assert_equivalent,
    assert_replays,
    elementwise,
    matmul,
    rowmax,
    rowsum,
    softmax,
    stencil,
    sum_then_scale,
    two_stage,
)

from relaxjax import schedule
from relaxjax.schedule import ScheduleError
from relaxjax.tir.interpreter import run


def check(sch):
    assert_replays(sch)
    assert_equivalent(sch.original, sch.func)


# --- compute_at ---------------------------------------------------------------------------

COMPUTE_AT = """\
        for i_1_0 in range((n + 3) // 4):
            for ax_v_i in range(4):
                for ax_v_j in range(m):
                    with block("B"):
                        v_i = axis.spatial(n, ax_v_i + i_1_0 * 4)
                        v_j = axis.spatial(m, ax_v_j)
                        where(ax_v_i + i_1_0 * 4 < n)
                        reads(A[v_i, v_j])
                        writes(B[v_i, v_j])
                        B[v_i, v_j] = A[v_i, v_j] + float32(1.0)
            for i_1_1 in range(4):
                for j_1 in range(m):
                    with block("C"):"""


def test_compute_at_a_tile():
    sch = schedule.Schedule(two_stage())
    i, _ = sch.get_loops(sch.get_block("C"))
    io, _ = sch.split(i, factors=[None, 4])
    sch.compute_at(sch.get_block("B"), io)
    assert COMPUTE_AT in str(sch.func)
    check(sch)
    sch.parallel(io)  # each tile computes its own part of B
    check(sch)


STENCIL_AT = """\
        for i_1_0 in range((n + 3) // 4):
            for ax_v_i in range(5):
                with block("B"):
                    v_i = axis.spatial(n + 1, ax_v_i + i_1_0 * 4)
                    where(ax_v_i + i_1_0 * 4 < n + 1)"""


def test_compute_at_a_stencil_covers_the_halo():
    sch = schedule.Schedule(stencil())
    (i,) = sch.get_loops(sch.get_block("C"))
    io, _ = sch.split(i, factors=[None, 4])
    sch.compute_at(sch.get_block("B"), io)
    assert STENCIL_AT in str(sch.func)
    check(sch)
    with pytest.raises(ScheduleError) as err:
        sch.parallel(io)  # neighbouring tiles both write the halo element of B
    assert str(err.value) == (
        "parallel: cannot parallelize loop i_1_0: cannot prove that different iterations of "
        "loop i_1_0 write different elements of B (block 'B' is bound to (ax_v_i + i_1_0 * 4))"
    )


SUM_AT = """\
        for i_1 in range(n):
            for ax_v_k in range(m):
                with block("S"):
                    v_i = axis.spatial(n, i_1)
                    v_k = axis.reduce(m, ax_v_k)"""


def test_compute_at_a_reduction_into_its_consumer_row():
    sch = schedule.Schedule(sum_then_scale())
    i, _ = sch.get_loops(sch.get_block("Y"))
    sch.compute_at(sch.get_block("S"), i)
    assert SUM_AT in str(sch.func)
    check(sch)
    sch.parallel(i)
    check(sch)


def test_compute_at_softmax_chain():
    sch = schedule.Schedule(softmax())
    i, _ = sch.get_loops(sch.get_block("y"))
    for name in ("s", "e", "mx"):
        sch.compute_at(sch.get_block(name), i)
    check(sch)
    sch.parallel(i)
    check(sch)


RCA = """\
            for ax_v_i_1 in range(4):
                for ax_v_j_1 in range(m):
                    with block("C"):
                        v_i_1 = axis.spatial(n, ax_v_i_1 + i_0 * 4)
                        v_j_1 = axis.spatial(m, ax_v_j_1)
                        where(ax_v_i_1 + i_0 * 4 < n)"""


def test_reverse_compute_at_a_tile():
    sch = schedule.Schedule(two_stage())
    i, _ = sch.get_loops(sch.get_block("B"))
    io, _ = sch.split(i, factors=[None, 4])
    sch.reverse_compute_at(sch.get_block("C"), io)
    assert RCA in str(sch.func)
    check(sch)


def test_reverse_compute_at_after_a_reduction_row():
    sch = schedule.Schedule(sum_then_scale())
    i, _ = sch.get_loops(sch.get_block("S"))
    sch.reverse_compute_at(sch.get_block("Y"), i)
    check(sch)
    sch.parallel(i)
    check(sch)


def test_compute_at_refusals():
    sch = schedule.Schedule(two_stage())
    i_b, _ = sch.get_loops(sch.get_block("B"))
    i_c, _ = sch.get_loops(sch.get_block("C"))
    with pytest.raises(ScheduleError, match="compute_at: loop i encloses block 'B' already"):
        sch.compute_at(sch.get_block("B"), i_b)
    with pytest.raises(ScheduleError) as err:
        sch.compute_at(sch.get_block("C"), i_b)
    assert str(err.value) == (
        "compute_at: block 'C' writes C, an output of the kernel; only the parts its consumers "
        "read would be computed (use reverse_compute_at)"
    )
    with pytest.raises(ScheduleError, match="reverse_compute_at: block 'B' does not come after"):
        sch.reverse_compute_at(sch.get_block("B"), i_c)


def test_compute_at_refuses_a_loop_that_leaves_consumers_outside():
    sch = schedule.Schedule(softmax())
    i_e, _ = sch.get_loops(sch.get_block("e"))
    with pytest.raises(ScheduleError) as err:
        sch.compute_at(sch.get_block("mx"), sch.get_loops(sch.get_block("s"))[0])
    assert "block 'e' uses mx outside loop i_2: every consumer of 'mx' must be under it" in str(
        err.value
    )


def test_reverse_compute_at_refuses_a_loop_that_does_not_cover_the_region():
    sch = schedule.Schedule(sum_then_scale())
    _, k = sch.get_loops(sch.get_block("S"))
    with pytest.raises(ScheduleError) as err:
        sch.reverse_compute_at(sch.get_block("Y"), k)
    assert str(err.value) == (
        "reverse_compute_at: loop k does not cover the reduction of 'S' (iterator v_k is bound "
        "to k): its results are not final inside one iteration"
    )
    sch = schedule.Schedule(rowsum_then_scale_columns())
    i, _ = sch.get_loops(sch.get_block("B"))
    with pytest.raises(ScheduleError) as err:
        sch.reverse_compute_at(sch.get_block("S"), i)
    assert "reads B axis 0 over [0, n - 1], beyond [i, i] produced in one iteration" in str(
        err.value
    )


def rowsum_then_scale_columns():
    """``B = A * 2`` then ``S[j] = sum_i B[i, j]``: S needs every row of B."""
    from sched_kernels import M, N

    from relaxjax.tir import te

    a = te.placeholder((N, M), "float32", "A")
    b = te.compute((N, M), lambda i, j: a[i, j] * 2.0, name="B")
    k = te.reduce_axis(N, "r")
    s = te.compute((M,), lambda j: te.sum(b[k, j], axis=k), name="S")
    return te.create_prim_func([a, s], name="colsum")


# --- inlining --------------------------------------------------------------------------------

INLINED = """\
        for i_1 in range(n):
            for j_1 in range(m):
                with block("C"):
                    v_i_1 = axis.spatial(n, i_1)
                    v_j_1 = axis.spatial(m, j_1)
                    reads(A[v_i_1, v_j_1])
                    writes(C[v_i_1, v_j_1])
                    C[v_i_1, v_j_1] = (A[v_i_1, v_j_1] + float32(1.0)) * float32(2.0)"""

REVERSE_INLINED = """\
        for i in range(n):
            for j in range(m):
                with block("B"):
                    v_i = axis.spatial(n, i)
                    v_j = axis.spatial(m, j)
                    reads(A[v_i, v_j])
                    writes(C[v_i, v_j])
                    C[v_i, v_j] = (A[v_i, v_j] + float32(1.0)) * float32(2.0)"""


def test_compute_inline():
    sch = schedule.Schedule(two_stage())
    sch.compute_inline(sch.get_block("B"))
    assert INLINED in str(sch.func)
    assert "alloc_buffer" not in str(sch.func)
    check(sch)
    with pytest.raises(ScheduleError, match="block 'B' no longer exists: it was inlined"):
        sch.get_loops(schedule.BlockRV("B", sch.get_block("C").schedule_id))


def test_compute_inline_into_several_consumers_and_a_stencil():
    sch = schedule.Schedule(softmax())
    sch.compute_inline(sch.get_block("e"))
    check(sch)
    sch = schedule.Schedule(stencil())
    sch.compute_inline(sch.get_block("B"))
    check(sch)


def test_reverse_compute_inline():
    sch = schedule.Schedule(two_stage())
    sch.reverse_compute_inline(sch.get_block("C"))
    assert REVERSE_INLINED in str(sch.func)
    check(sch)


def test_inline_refusals():
    sch = schedule.Schedule(sum_then_scale())
    with pytest.raises(ScheduleError) as err:
        sch.compute_inline(sch.get_block("S"))
    assert str(err.value) == (
        "compute_inline: block 'S' is a reduction; only elementwise blocks inline"
    )
    sch = schedule.Schedule(two_stage())
    with pytest.raises(ScheduleError, match="C is a parameter of the kernel and must be kept"):
        sch.compute_inline(sch.get_block("C"))
    sch = schedule.Schedule(softmax())
    with pytest.raises(ScheduleError) as err:
        sch.reverse_compute_inline(sch.get_block("y"))
    assert str(err.value) == (
        "reverse_compute_inline: block 'y' reads e and s; it can only fold into 's', which "
        "writes the last of them (s), but block 's' is a reduction; only elementwise blocks "
        "inline"
    )
    sch = schedule.Schedule(stencil())
    with pytest.raises(ScheduleError, match="block 'C' reads B at several indices"):
        sch.reverse_compute_inline(sch.get_block("C"))


def test_compute_inline_refuses_a_buffer_with_two_writers():
    from relaxjax import arith, tir

    n = arith.sym("n")
    a = tir.Buffer("A", (n,), "float32")
    t = tir.Buffer("T", (n,), "float32")
    c = tir.Buffer("C", (n,), "float32")

    def nest(name, loop, target, value):
        v = arith.Sym(f"v_{name}")
        store = tir.BufferStore(target, value(v), (v,))
        block = tir.Block(name, (tir.IterVar(v, n),), (), (), None, store)
        return tir.For(
            arith.Sym(loop), 0, n, "serial", tir.BlockRealize((arith.Sym(loop),), True, block)
        )

    body = tir.seq(
        nest("P", "i", t, lambda v: tir.BufferLoad(a, (v,)) + 1.0),
        nest("Q", "j", t, lambda v: tir.BufferLoad(t, (v,)) * 2.0),
        nest("R", "k", c, lambda v: tir.BufferLoad(t, (v,))),
    )
    root = tir.BlockRealize((), True, tir.Block("root", (), (), (), None, body, (t,)))
    sch = schedule.Schedule(tir.PrimFunc("two_writers", (a, c), root))
    with pytest.raises(ScheduleError, match="compute_inline: block 'Q' also writes T"):
        sch.compute_inline(sch.get_block("P"))


# --- caching ---------------------------------------------------------------------------------

CACHE_READ = """\
        A_local = alloc_buffer((n, m), "float32", scope="local")
        for ax0 in range(n):
            for ax1 in range(m):
                with block("A_local"):
                    v_ax0 = axis.spatial(n, ax0)
                    v_ax1 = axis.spatial(m, ax1)
                    reads(A[v_ax0, v_ax1])
                    writes(A_local[v_ax0, v_ax1])
                    A_local[v_ax0, v_ax1] = A[v_ax0, v_ax1]
        for i in range(n):
            for j in range(m):
                with block("B"):
                    v_i = axis.spatial(n, i)
                    v_j = axis.spatial(m, j)
                    reads(A_local[v_i, v_j])
                    writes(B[v_i, v_j])
                    B[v_i, v_j] = A_local[v_i, v_j] * float32(2.0) + float32(1.0)"""

CACHE_WRITE = """\
                    writes(B_local[v_i, v_j])
                    B_local[v_i, v_j] = A[v_i, v_j] * float32(2.0) + float32(1.0)
        for ax0 in range(n):
            for ax1 in range(m):
                with block("B_local"):
                    v_ax0 = axis.spatial(n, ax0)
                    v_ax1 = axis.spatial(m, ax1)
                    reads(B_local[v_ax0, v_ax1])
                    writes(B[v_ax0, v_ax1])
                    B[v_ax0, v_ax1] = B_local[v_ax0, v_ax1]"""


def test_cache_read_and_write():
    sch = schedule.Schedule(elementwise())
    copy = sch.cache_read(sch.get_block("B"), 0, "local")
    assert copy.name == "A_local"
    assert CACHE_READ in str(sch.func)
    check(sch)
    sch = schedule.Schedule(elementwise())
    back = sch.cache_write(sch.get_block("B"), "B", "local")
    assert back.name == "B_local"
    assert CACHE_WRITE in str(sch.func)
    check(sch)


def test_cache_read_of_a_tile_with_compute_at():
    sch = schedule.Schedule(matmul())
    c = sch.get_block("C")
    i, j, k = sch.get_loops(c)
    io, ii = sch.split(i, factors=[None, 4])
    sch.reorder(io, j, ii)
    a_local = sch.cache_read(c, "A", "local")
    sch.compute_at(a_local, io)
    c_local = sch.cache_write(c, 0, "local")
    sch.reverse_compute_at(c_local, io)
    check(sch)
    sch.parallel(io)
    check(sch)


def test_cache_refusals():
    sch = schedule.Schedule(elementwise())
    b = sch.get_block("B")
    with pytest.raises(ScheduleError, match=r"cache_read: storage scope must be one of .*got 'l2'"):
        sch.cache_read(b, 0, "l2")
    with pytest.raises(ScheduleError) as err:
        sch.cache_read(b, 3, "local")
    assert str(err.value) == "cache_read: block 'B' has 1 read buffer(s); index 3 is out of range"
    with pytest.raises(ScheduleError, match="cache_write: block 'B' does not write A; it writes B"):
        sch.cache_write(b, "A", "local")
    sch = schedule.Schedule(two_stage())
    i, _ = sch.get_loops(sch.get_block("C"))
    sch.compute_at(sch.get_block("B"), i)
    with pytest.raises(
        ScheduleError, match="cache_write: block 'B' does not cover its whole domain"
    ):
        sch.cache_write(sch.get_block("B"), 0, "local")


# --- reductions ----------------------------------------------------------------------------

DECOMPOSED = """\
        for i in range(n):
            for j_init in range(m):
                with block("C_init"):
                    v_i_init = axis.spatial(n, i)
                    v_j_init = axis.spatial(m, j_init)
                    writes(C[v_i_init, v_j_init])
                    C[v_i_init, v_j_init] = float32(0.0)
            for j in range(m):
                for k in range(K):
                    with block("C"):
                        v_i = axis.spatial(n, i)
                        v_j = axis.spatial(m, j)
                        v_k = axis.reduce(K, k)
                        reads(C[v_i, v_j], A[v_i, v_k], B[v_k, v_j])
                        writes(C[v_i, v_j])
                        C[v_i, v_j] = C[v_i, v_j] + A[v_i, v_k] * B[v_k, v_j]"""


def test_decompose_reduction():
    sch = schedule.Schedule(matmul())
    c = sch.get_block("C")
    _, j, _ = sch.get_loops(c)
    init = sch.decompose_reduction(c, j)
    assert init.name == "C_init"
    assert DECOMPOSED in str(sch.func)
    check(sch)


def test_decompose_reduction_of_a_split_reduction_drops_its_predicate():
    sch = schedule.Schedule(matmul())
    c = sch.get_block("C")
    i, j, k = sch.get_loops(c)
    k0, _ = sch.split(k, factors=[None, 4])
    jo, _ = sch.split(j, factors=[None, 8])
    sch.decompose_reduction(c, k0)
    text = str(sch.func)
    assert "where(j_0 * 8 + j_1 < m)" in text.split('with block("C_init")')[1].split("C[")[0]
    check(sch)


RFACTOR = """\
        for i in range(n):
            for k_0 in range((m + 3) // 4):
                for k_1 in range(4):
                    with block("S_rf"):
                        v_i_rf = axis.spatial(n, i)
                        v_k_0 = axis.reduce((m + 3) // 4, k_0)
                        v_k_1 = axis.spatial(4, k_1)
                        where(k_0 * 4 + k_1 < m)
                        reads(S_rf[v_i_rf, v_k_1], A[v_i_rf, v_k_0 * 4 + v_k_1])
                        writes(S_rf[v_i_rf, v_k_1])
                        S_rf[v_i_rf, v_k_1] = S_rf[v_i_rf, v_k_1] + A[v_i_rf, v_k_0 * 4 + v_k_1]
        for ax_v_i_wb in range(n):
            for ax_v_S_rf in range(4):
                with block("S"):
                    v_i_wb = axis.spatial(n, ax_v_i_wb)
                    v_S_rf = axis.reduce(4, ax_v_S_rf)
                    reads(S_rf[v_i_wb, v_S_rf])
                    writes(S[v_i_wb])
                    with init():
                        S[v_i_wb] = float32(0.0)
                    S[v_i_wb] = S[v_i_wb] + S_rf[v_i_wb, v_S_rf]"""


def test_rfactor_makes_the_factored_loop_parallel():
    sch = schedule.Schedule(rowsum())
    _, k = sch.get_loops(sch.get_block("S"))
    _, k1 = sch.split(k, factors=[None, 4])
    with pytest.raises(ScheduleError, match="cannot vectorize loop k_1: loop k_1 is a reduction"):
        sch.vectorize(k1)
    rf = sch.rfactor(k1, factor_axis=1)
    assert rf.name == "S_rf"
    assert RFACTOR in str(sch.func)
    check(sch)
    sch.vectorize(k1)
    check(sch)


@pytest.mark.parametrize("kernel", [rowsum, rowmax])
def test_rfactor_outer_loop(kernel):
    sch = schedule.Schedule(kernel())
    _, k = sch.get_loops(sch.get_block("S"))
    k0, _ = sch.split(k, factors=[None, 3])
    sch.rfactor(k0)
    check(sch)


RFACTOR_COMPUTED_AT = """\
        for ax_v_i_wb in range(n):
            for ax_v_k_0 in range((m + 7) // 8):
                for ax_v_k_1 in range(8):
                    with block("S_rf"):
                        v_i_rf = axis.spatial(n, ax_v_i_wb)
                        v_k_0 = axis.reduce((m + 7) // 8, ax_v_k_0)
                        v_k_1 = axis.spatial(8, ax_v_k_1)
                        where(ax_v_k_0 * 8 + ax_v_k_1 < m)"""


def rfactor_of_a_split_rowsum(factors):
    """rowsum with its reduction split by ``factors`` (not dividing ``m``), rfactored
    over the innermost part: the partial sums' predicate hides points of their domain."""
    sch = schedule.Schedule(rowsum())
    _, k = sch.get_loops(sch.get_block("S"))
    parts = sch.split(k, factors=factors)
    return sch, sch.rfactor(parts[-1])


def test_compute_at_after_rfactor_keeps_the_split_predicate():
    sch, rf = rfactor_of_a_split_rowsum([None, 8])
    row, _ = sch.get_loops(sch.get_block("S"))
    sch.compute_at(rf, row)
    assert RFACTOR_COMPUTED_AT in str(sch.func)
    a = np.random.default_rng(0).standard_normal((3, 13)).astype("float32")
    np.testing.assert_allclose(run(sch.func, a), a.sum(axis=1), rtol=1e-5)
    check(sch)


@pytest.mark.parametrize("factors", [[None, 2, 4], [None, 3, 2], [2, None]])
def test_compute_at_after_rfactor_of_a_multi_level_split(factors):
    sch, rf = rfactor_of_a_split_rowsum(factors)
    row, _ = sch.get_loops(sch.get_block("S"))
    sch.compute_at(rf, row)
    assert "where(" in str(sch.func).split('with block("S_rf")')[1]
    check(sch)


def test_compute_at_after_rfactor_and_a_split_of_the_partial_nest():
    sch, rf = rfactor_of_a_split_rowsum([None, 4])
    _, _, k1 = sch.get_loops(rf)
    sch.split(k1, factors=[None, 3])
    row, _ = sch.get_loops(sch.get_block("S"))
    sch.compute_at(rf, row)
    assert "where(ax_v_k_0 * 4 + ax_v_k_1 < m)" in str(sch.func)
    check(sch)


def test_compute_at_refuses_a_partial_nest_whose_predicate_it_cannot_invert():
    sch, rf = rfactor_of_a_split_rowsum([None, 4])
    _, _, k1 = sch.get_loops(rf)
    sch.split(k1, factors=[None, 3])
    fused = sch.fuse(*sch.get_loops(rf)[1:3])
    sch.split(fused, factors=[None, 5])
    row, _ = sch.get_loops(sch.get_block("S"))
    before = sch.func
    with pytest.raises(ScheduleError) as err:
        sch.compute_at(rf, row)
    assert str(err.value).startswith("compute_at: block 'S_rf' has the predicate ")
    assert str(err.value).endswith(
        "which cannot be expressed over its iterators; it cannot be moved"
    )
    assert sch.func is before
    check(sch)


def test_domain_predicate_refuses_a_predicate_the_bindings_do_not_determine():
    from relaxjax import arith, tir
    from relaxjax.schedule.predicate import domain_predicate
    from relaxjax.tir.expr import IndexExpr, binop
    from relaxjax.tir.stmt import Block, BlockRealize, BufferStore, For, IterVar

    i, v = arith.syms("i v_i")
    out = tir.Buffer("B", (4,), "float32")
    store = BufferStore(out, tir.const(1.0, "float32"), (v,))
    block = Block("B", (IterVar(v, 4, "spatial"),), (), (), None, store)
    guard = binop("<", IndexExpr(i), IndexExpr(5))
    realize = BlockRealize((i % 4,), guard, block)
    loop = For(i, 0, 8, "serial", realize)
    with pytest.raises(ScheduleError) as err:
        domain_predicate("compute_at", realize, (loop,))
    assert str(err.value) == (
        "compute_at: block 'B' has the predicate i < 5, which cannot be expressed over its "
        "iterators; it cannot be moved"
    )
    implied = BlockRealize((i,), binop("<", IndexExpr(i), IndexExpr(4)), block)
    assert domain_predicate("compute_at", implied, (For(i, 0, 8, "serial", implied),)) is None


def test_decompose_reduction_refuses_a_loop_inside_the_reduction():
    sch = schedule.Schedule(matmul())
    c = sch.get_block("C")
    i, j, k = sch.get_loops(c)
    sch.reorder(k, i)
    with pytest.raises(ScheduleError) as err:
        sch.decompose_reduction(c, j)
    assert str(err.value) == (
        "decompose_reduction: loop k around loop j binds a reduction iterator of 'C': the init "
        "would run again at each of its iterations"
    )
    sch.decompose_reduction(c, k)
    check(sch)


def test_decompose_reduction_refuses_a_loop_that_recomputes_the_block():
    # After compute_at, S is recomputed at every j: an init hoisted above j would run
    # once per i, and S would accumulate over the j iterations (a wrong result).
    sch = schedule.Schedule(sum_then_scale())
    s_block = sch.get_block("S")
    _, j = sch.get_loops(sch.get_block("Y"))
    sch.compute_at(s_block, j)
    *_, k = sch.get_loops(s_block)
    with pytest.raises(ScheduleError) as err:
        sch.decompose_reduction(s_block, j)
    assert str(err.value) == (
        "decompose_reduction: loop j binds no iterator of 'S', which it runs again at each "
        "iteration (e.g. after compute_at): decomposing at loop j would initialise it only once"
    )
    sch.decompose_reduction(s_block, k)
    check(sch)


def test_reduction_refusals():
    sch = schedule.Schedule(elementwise())
    b = sch.get_block("B")
    i, j = sch.get_loops(b)
    with pytest.raises(ScheduleError, match="decompose_reduction: block 'B' has no init"):
        sch.decompose_reduction(b, i)
    with pytest.raises(ScheduleError, match="rfactor: block 'B' is not a reduction"):
        sch.rfactor(j)
    sch = schedule.Schedule(matmul())
    i, j, k = sch.get_loops(sch.get_block("C"))
    with pytest.raises(ScheduleError, match="rfactor: loop i is not a reduction loop of block 'C'"):
        sch.rfactor(i)
    with pytest.raises(ScheduleError, match=r"rfactor: factor_axis must be in \[0, 2\], got 5"):
        sch.rfactor(k, factor_axis=5)


# --- storage_align ----------------------------------------------------------------------------


def test_storage_align_pads_an_intermediate():
    sch = schedule.Schedule(two_stage())
    sch.storage_align(sch.get_block("B"), 0, 0, 32, 1)
    buffer = sch.func.body.block.alloc_buffers[0]
    from relaxjax import arith

    assert [arith.evaluate(buffer.strides[0], {"m": m}) for m in (3, 32, 64)] == [33, 33, 65]
    check(sch)
    with pytest.raises(ScheduleError, match="storage_align: C is a parameter of the kernel"):
        sch.storage_align(sch.get_block("C"), 0, 0, 32, 1)
    sch = schedule.Schedule(two_stage())
    with pytest.raises(ScheduleError, match=r"axis must be in \[0, 1\) \(the innermost axis"):
        sch.storage_align(sch.get_block("B"), 0, 1, 32, 1)
    with pytest.raises(ScheduleError, match="need factor > 0 and 0 <= offset < factor"):
        sch.storage_align(sch.get_block("B"), 0, 0, 8, 8)
