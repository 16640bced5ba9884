"""Loop primitives: split, fuse, reorder, tile, parallel, vectorize, unroll, bind,
annotate. Each: the expected loop nest, a trace round trip, and equivalence with the
unscheduled kernel under the reference interpreter for several symbol values."""

import pytest
from sched_kernels import (
    assert_equivalent,
    assert_replays,
    elementwise,
    matmul,
    rowsum,
    two_stage,
)

from relaxjax import schedule
from relaxjax.schedule import ScheduleError


def loops_of(sch, block="B"):
    return sch.get_loops(sch.get_block(block))


def check(sch):
    """Round trip and equivalence: what every test ends with."""
    assert_replays(sch)
    assert_equivalent(sch.original, sch.func)


SPLIT_J = """\
@prim_func(outputs=1)
def elementwise(A: Buffer((n, m), "float32"), B: Buffer((n, m), "float32")):
    with block("root"):
        for i in range(n):
            for j_0 in range((m + 3) // 4):
                for j_1 in range(4):
                    with block("B"):
                        v_i = axis.spatial(n, i)
                        v_j = axis.spatial(m, j_0 * 4 + j_1)
                        where(j_0 * 4 + j_1 < m)
                        reads(A[v_i, v_j])
                        writes(B[v_i, v_j])
                        B[v_i, v_j] = A[v_i, v_j] * float32(2.0) + float32(1.0)"""


def test_split_symbolic_extent_guards_the_tail():
    sch = schedule.Schedule(elementwise())
    _, j = loops_of(sch)
    j0, j1 = sch.split(j, factors=[None, 4])
    assert (j0.name, j1.name) == ("j_0", "j_1")
    assert str(sch.func) == SPLIT_J
    check(sch)


def test_split_three_ways_and_exact_static_split_has_no_predicate():
    a = schedule.Schedule(elementwise())
    i, _ = loops_of(a)
    a.split(i, factors=[2, None, 3])
    assert "where(" in str(a.func)
    check(a)
    from relaxjax import arith

    f = elementwise().specialize({arith.sym("m"): 12})
    b = schedule.Schedule(f)
    _, j = loops_of(b)
    outer, inner = b.split(j, factors=[3, 4], tail="exact")
    assert "where(" not in str(b.func)
    assert b.get_loop_node(outer).extent == 3
    assert_replays(b)
    assert_equivalent(f, b.func, [{"n": 3}, {"n": 0}])


def test_split_by_a_symbolic_factor():
    from relaxjax import arith
    from relaxjax.tir import te

    n, t = arith.sym("n"), arith.sym("t", lower=1)
    a = te.placeholder((n, t), "float32", "A")
    b = te.compute((n, t), lambda i, j: a[i, j] + 1.0, name="B")
    f = te.create_prim_func([a, b], name="by_t")
    sch = schedule.Schedule(f)
    i, _ = loops_of(sch)
    outer, inner = sch.split(i, factors=[None, t])
    assert sch.get_loop_node(inner).extent == t
    assert "factors=[None, 't']" in str(sch.trace)
    assert_replays(sch)
    assert_equivalent(f, sch.func, [{"n": 7, "t": 3}, {"n": 0, "t": 2}, {"n": 2, "t": 5}])
    sch = schedule.Schedule(elementwise())
    i, _ = loops_of(sch)
    with pytest.raises(
        ScheduleError, match="split: loop i: cannot prove that factor m is positive"
    ):
        sch.split(i, factors=[None, "m"])
    with pytest.raises(ScheduleError, match="factor u uses u, which is not a symbol of the kernel"):
        sch.split(i, factors=[None, "u"])


SPLIT_PEEL = """\
        for i_0 in range(n // 4):
            for i_1 in range(4):
                for j in range(m):
                    with block("B"):
                        v_i = axis.spatial(n, i_0 * 4 + i_1)
                        v_j = axis.spatial(m, j)
                        reads(A[v_i, v_j])
                        writes(B[v_i, v_j])
                        B[v_i, v_j] = A[v_i, v_j] * float32(2.0) + float32(1.0)
        for i_tail in range(n % 4):
            for j_tail in range(m):
                with block("B_tail"):
                    v_i_tail = axis.spatial(n, i_tail + (n // 4) * 4)
                    v_j_tail = axis.spatial(m, j_tail)"""


def test_split_peel_copies_the_tail():
    sch = schedule.Schedule(elementwise())
    i, _ = loops_of(sch)
    sch.split(i, factors=[None, 4], tail="peel")
    assert SPLIT_PEEL in str(sch.func)
    assert "where(" not in str(sch.func)
    check(sch)


def test_split_peel_of_a_reduction_loop():
    sch = schedule.Schedule(rowsum())
    _, k = sch.get_loops(sch.get_block("S"))
    sch.split(k, factors=[None, 4], tail="peel")
    check(sch)


FUSED = """\
        for i_j_fused in range(m * n):
            with block("B"):
                v_i = axis.spatial(n, i_j_fused // m)
                v_j = axis.spatial(m, i_j_fused % m)"""


def test_fuse():
    sch = schedule.Schedule(elementwise())
    i, j = loops_of(sch)
    fused = sch.fuse(i, j)
    assert fused.name == "i_j_fused"
    assert FUSED in str(sch.func)
    check(sch)


def test_fuse_loops_after_a_split_then_parallelize_the_fused_loop():
    sch = schedule.Schedule(matmul())
    i, j, k = loops_of(sch, "C")
    i0, i1 = sch.split(i, factors=[None, 2])
    fused = sch.fuse(i1, j)
    sch.parallel(fused)
    assert "for i_1_j_fused in parallel(m * 2):" in str(sch.func)
    check(sch)
    with pytest.raises(ScheduleError, match="fuse: loop i_1_j_fused is parallel"):
        sch.fuse(i0, fused)


REORDERED = """\
        for k in range(K):
            for j in range(m):
                for i in range(n):
                    with block("C"):
                        v_i = axis.spatial(n, i)
                        v_j = axis.spatial(m, j)
                        v_k = axis.reduce(K, k)"""


def test_reorder_moves_given_loops_only():
    sch = schedule.Schedule(matmul())
    i, j, k = loops_of(sch, "C")
    sch.reorder(k, i)
    assert REORDERED in str(sch.func)
    check(sch)


def test_reorder_split_reduction_loops_is_allowed_for_a_sum():
    sch = schedule.Schedule(matmul())
    i, j, k = loops_of(sch, "C")
    k0, k1 = sch.split(k, factors=[None, 2])
    io, ii = sch.split(i, factors=[None, 4])
    sch.reorder(io, k1, j, k0, ii)
    check(sch)


def test_reorder_after_fuse_and_split():
    sch = schedule.Schedule(elementwise())
    i, j = loops_of(sch)
    fused = sch.fuse(i, j)
    outer, inner = sch.split(fused, factors=[None, 8])
    sch.reorder(inner, outer)
    check(sch)


@pytest.mark.parametrize("kernel", [elementwise, rowsum, matmul])
def test_reorder_moves_a_loop_of_extent_one_anywhere(kernel):
    sch = schedule.Schedule(kernel())
    (block,) = sch.get_child_blocks(sch.get_block("root"))
    loops = sch.get_loops(block)
    _, one = sch.split(loops[-1], factors=[None, 1])
    sch.reorder(one, loops[0])
    assert [lp.name for lp in sch.get_loops(block)][0] == one.name
    check(sch)


def test_a_loop_of_extent_one_does_not_hide_its_neighbours_iterations():
    sch = schedule.Schedule(elementwise())
    _, j = loops_of(sch)
    j0, j1 = sch.split(j, factors=[None, 1])
    sch.parallel(j1)
    sch.vectorize(j0)
    assert "for j_0 in vectorized(m)" in str(sch.func)
    check(sch)


def test_a_reduction_loop_of_extent_one_carries_nothing():
    sch = schedule.Schedule(rowsum())
    _, k = sch.get_loops(sch.get_block("S"))
    k0, k1 = sch.split(k, factors=[None, 1])
    sch.parallel(k1)
    with pytest.raises(ScheduleError, match="cannot parallelize loop k_0: loop k_0 is a reduction"):
        sch.parallel(k0)
    check(sch)


def test_tile_is_split_and_reorder():
    sch = schedule.Schedule(elementwise())
    i, j = loops_of(sch)
    tiles = sch.tile(i, j, factors=[8, 4])
    assert [t.name for t in tiles] == ["i_0", "j_0", "i_1", "j_1"]
    assert str(sch.trace).splitlines()[2:] == [
        "i_0, i_1 = sch.split(i, factors=[None, 8])",
        "j_0, j_1 = sch.split(j, factors=[None, 4])",
        "sch.reorder(i_0, j_0, i_1, j_1)",
    ]
    check(sch)


KINDS = """\
        for i in parallel(n):
            for j in vectorized(m):
                for k in unrolled(K):"""

BOUND = """\
        for i in thread_binding(n, thread="blockIdx.x"):
            for j in thread_binding(m, thread="threadIdx.x"):
                for k in serial(K, annotations={'pragma_unroll': 4}):"""


def test_parallel_vectorize_unroll():
    sch = schedule.Schedule(matmul())
    i, j, k = loops_of(sch, "C")
    sch.parallel(i)
    sch.vectorize(j)
    sch.unroll(k)
    assert KINDS in str(sch.func)
    check(sch)


def test_bind_and_annotate():
    sch = schedule.Schedule(matmul())
    i, j, k = loops_of(sch, "C")
    sch.bind(i, "blockIdx.x")
    sch.bind(j, "threadIdx.x")
    sch.annotate(k, "pragma_unroll", 4)
    sch.annotate(sch.get_block("C"), "meta", "x")
    assert BOUND in str(sch.func)
    assert "block_attr({'meta': 'x'})" in str(sch.func)
    check(sch)


def test_parallel_a_fused_loop_and_vectorize_a_split_inner_loop():
    sch = schedule.Schedule(elementwise())
    i, j = loops_of(sch)
    sch.parallel(sch.fuse(i, j))
    check(sch)
    sch = schedule.Schedule(elementwise())
    i, j = loops_of(sch)
    _, inner = sch.split(j, factors=[None, 8])
    sch.vectorize(inner)
    sch.parallel(i)
    check(sch)


def test_same_kind_twice_is_a_no_op():
    sch = schedule.Schedule(elementwise())
    i, _ = loops_of(sch)
    sch.parallel(i)
    before = sch.func
    sch.parallel(i)
    assert sch.func is before


def test_get_child_blocks():
    sch = schedule.Schedule(two_stage())
    root = sch.get_block("root")
    assert [b.name for b in sch.get_child_blocks(root)] == ["B", "C"]
    (i, _) = loops_of(sch, "C")
    assert [b.name for b in sch.get_child_blocks(i)] == ["C"]


# --- refusals ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("factors", "message"),
    [
        ([None, None], "split: loop j: at most one factor may be None, got [None, None]"),
        ([0, None], "split: loop j: factors must be positive, got 0"),
        ([-2, 4], "split: loop j: factors must be positive, got -2"),
        ([4], "split: loop j: give at least two factors, got [4]"),
        ([2, 3], "split: loop j: factors [2, 3] multiply to 6, which cannot be proven to cover"),
        ([True, 4], "split: loop j: a factor must be an int, got True"),
    ],
)
def test_split_refuses_bad_factors(factors, message):
    sch = schedule.Schedule(elementwise())
    _, j = loops_of(sch)
    with pytest.raises(ScheduleError) as err:
        sch.split(j, factors=factors)
    assert message in str(err.value)


def test_split_refuses_too_small_static_factors_and_a_remainder_when_exact():
    from relaxjax import arith

    sch = schedule.Schedule(elementwise().specialize({arith.sym("m"): 12}))
    _, j = loops_of(sch)
    with pytest.raises(ScheduleError, match=r"multiply to 10, which is smaller than its extent 12"):
        sch.split(j, factors=[2, 5])
    with pytest.raises(
        ScheduleError, match=r"multiply to 15, not to its extent 12, and tail='exact'"
    ):
        sch.split(j, factors=[3, 5], tail="exact")
    with pytest.raises(ScheduleError, match=r"tail must be one of"):
        sch.split(j, factors=[3, 4], tail="wrap")
    with pytest.raises(ScheduleError, match=r"tail='peel' takes factors \[None, inner\]"):
        sch.split(j, factors=[3, 4], tail="peel")


def test_split_of_a_parallel_loop_is_refused():
    sch = schedule.Schedule(elementwise())
    i, _ = loops_of(sch)
    sch.parallel(i)
    with pytest.raises(ScheduleError, match="split: loop i is parallel; restructure loops before"):
        sch.split(i, factors=[None, 2])


def test_fuse_refuses_non_adjacent_loops():
    sch = schedule.Schedule(matmul())
    i, j, k = loops_of(sch, "C")
    with pytest.raises(ScheduleError) as err:
        sch.fuse(i, k)
    assert str(err.value) == (
        "fuse: loops i and k are not adjacent: the body of i must be exactly loop k"
    )
    with pytest.raises(ScheduleError, match="fuse: give at least two loops, got 1"):
        sch.fuse(i)
    with pytest.raises(ScheduleError, match="fuse: loops j and i are not adjacent"):
        sch.fuse(j, i)


def test_reorder_refuses_loops_of_different_subtrees():
    sch = schedule.Schedule(two_stage())
    (i, _) = loops_of(sch, "B")
    (i2, _) = loops_of(sch, "C")
    with pytest.raises(ScheduleError) as err:
        sch.reorder(i2, i)
    assert "are in different subtrees: only loops of one nest can be reordered" in str(err.value)


def test_reorder_refuses_an_imperfect_nest():
    sch = schedule.Schedule(two_stage())
    i, _ = loops_of(sch, "C")
    sch.compute_at(sch.get_block("B"), i)
    i, j = loops_of(sch, "C")
    with pytest.raises(ScheduleError) as err:
        sch.reorder(j, i)
    assert (
        "the nest from loop i_1 to loop j_1 is not perfect: the body of loop i_1 is a SeqStmt"
        in (str(err.value))
    )


def test_reorder_refuses_swapping_a_reduction_loop_that_is_not_commutative():
    from relaxjax import arith
    from relaxjax.tir import te

    n, m = arith.syms("n m")
    a = te.placeholder((n, m), "float32", "A")
    k = te.reduce_axis(m, "k")
    val, idx = te.compute((n,), lambda i: te.argmax((a[i, k], k), axis=k), name="I")
    f = te.create_prim_func([a, val, idx], name="argmax")
    sch = schedule.Schedule(f)
    block = sch.get_block(sch._block_names()[0])
    i, kk = sch.get_loops(block)
    k0, k1 = sch.split(kk, factors=[None, 4])
    with pytest.raises(ScheduleError, match=r"reorder: loops k_0 and k_1 both carry dependences"):
        sch.reorder(k1, k0)
    sch.reorder(k0, i)  # a reduction loop may move across spatial loops
    assert_equivalent(f, sch.func, [{"n": 3, "m": 9}, {"n": 0, "m": 2}])


@pytest.mark.parametrize("primitive", ["parallel", "vectorize"])
def test_parallel_and_vectorize_refuse_a_reduction_loop(primitive):
    sch = schedule.Schedule(matmul())
    _, _, k = loops_of(sch, "C")
    with pytest.raises(ScheduleError) as err:
        getattr(sch, primitive)(k)
    verb = "parallelize" if primitive == "parallel" else "vectorize"
    assert str(err.value) == (
        f"{primitive}: cannot {verb} loop k: loop k is a reduction loop of block 'C': its "
        "iterations all update C"
    )


def test_parallel_refuses_a_loop_whose_iterations_write_the_same_element():
    from relaxjax import arith, tir

    n = arith.sym("n")
    a = tir.Buffer("A", (n,), "float32")
    b = tir.Buffer("B", (1,), "float32")
    i, v = arith.Sym("i"), arith.Sym("v")
    store = tir.BufferStore(b, tir.BufferLoad(a, (v,)), (0,))
    block = tir.Block("last", (tir.IterVar(v, n),), (), (), None, store)
    loop = tir.For(i, 0, n, "serial", tir.BlockRealize((i,), True, block))
    root = tir.BlockRealize((), True, tir.Block("root", (), (), (), None, loop))
    f = tir.PrimFunc("last", (a, b), root)
    sch = schedule.Schedule(f)
    with pytest.raises(ScheduleError) as err:
        sch.parallel(sch.get_loops(sch.get_block("last"))[0])
    assert "different values of its iterator v may write the same element" in str(err.value)


def test_bind_refuses_an_unknown_thread_axis_and_a_second_kind():
    sch = schedule.Schedule(elementwise())
    i, j = loops_of(sch)
    with pytest.raises(ScheduleError, match=r"bind: thread axis must be one of .*got 'warp.x'"):
        sch.bind(i, "warp.x")
    sch.unroll(j)
    with pytest.raises(ScheduleError, match="vectorize: loop j is already unrolled"):
        sch.vectorize(j)


def test_annotate_refuses_bad_values():
    sch = schedule.Schedule(elementwise())
    i, _ = loops_of(sch)
    with pytest.raises(ScheduleError, match="annotate: the key must be a str"):
        sch.annotate(i, 3, 4)
    with pytest.raises(ScheduleError, match="annotate: loop i: annotation 'x': value must be"):
        sch.annotate(i, "x", object())
