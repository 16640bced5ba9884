"""The rules' kernel transformations: lower_blocks, tighten_loops, stage, choose.

Each is checked twice: the loop nest it produces, and equivalence with the original
kernel on random inputs in the reference interpreter (symbol values that leave tails,
and 0).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from relaxjax import arith, schedule, tir
from relaxjax.errors import ScheduleError
from relaxjax.schedule.rules import choose, lower_blocks, stage, tighten_loops
from relaxjax.schedule.rules.flatten import has_blocks
from relaxjax.tir import Allocate, Buffer, BufferStore, For, PrimFunc, te
from relaxjax.tir.expr import IndexExpr, binop
from relaxjax.tir.interpreter import run

M, N, K = arith.syms("m n k")


def matmul_kernel() -> tir.PrimFunc:
    a = te.placeholder((M, K), "float32", "A")
    b = te.placeholder((K, N), "float32", "B")
    k = te.reduce_axis(K, "r")
    c = te.compute((M, N), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), name="C")
    return te.create_prim_func([a, b, c], name="mm")


def random_inputs(func: tir.PrimFunc, env: dict, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    arrays = []
    for param in func.inputs:
        shape = tuple(d if isinstance(d, int) else arith.evaluate(d, env) for d in param.shape)
        arrays.append(rng.standard_normal(shape).astype(param.dtype))
    return arrays


def assert_equivalent(a: tir.PrimFunc, b: tir.PrimFunc, envs) -> None:
    """Same outputs wherever ``a`` writes them (the interpreter NaN-fills outputs, and a
    reduction over an empty axis whose init sits in the block leaves them unwritten)."""
    for seed, env in enumerate(envs):
        inputs = random_inputs(a, env, seed)
        expected, got = run(a, *inputs), run(b, *inputs)
        written = ~np.isnan(expected)
        np.testing.assert_allclose(
            got[written], expected[written], rtol=1e-5, atol=1e-5, err_msg=str(env)
        )


SIZES = [
    {"m": 13, "n": 70, "k": 5},
    {"m": 0, "n": 3, "k": 2},
    {"m": 6, "n": 64, "k": 0},
    {"m": 7, "n": 33, "k": 9},
    {"m": 1, "n": 1, "k": 1},
]


def tiled_matmul() -> tuple[schedule.Schedule, tuple]:
    """A hand schedule with a peeled row tail and a predicated column tail."""
    sch = schedule.Schedule(matmul_kernel())
    block = sch.get_block("C")
    i, j, k = sch.get_loops(block)
    jo, ji = sch.split(j, factors=[None, 8])
    sch.reorder(jo, i, ji, k)
    io, ii = sch.split(i, factors=[None, 4], tail="peel")
    sch.reorder(io, k, ii, ji)
    if sch.get_block_node(block).init is not None:
        sch.decompose_reduction(block, k)
    return sch, (jo, ji, io, ii, k)


# ----------------------------------------------------------------------- lower_blocks


def test_lower_blocks_turns_predicates_and_inits_into_ifs():
    sch = schedule.Schedule(matmul_kernel())
    i, _, _ = sch.get_loops(sch.get_block("C"))
    sch.split(i, factors=[None, 4])
    lowered = lower_blocks(sch.func)
    text = str(lowered)
    assert "block(" not in text and not has_blocks(lowered) and has_blocks(sch.func)
    assert "if i_0 * 4 + i_1 < m:" in text
    assert "if r == 0:" in text
    assert_equivalent(sch.func, lowered, SIZES)


def test_lower_blocks_keeps_root_allocations_as_allocate():
    a = te.placeholder((N,), "float32", "A")
    b = te.compute((N,), lambda i: a[i] + 1.0, name="B")
    c = te.compute((N,), lambda i: b[i] * 2.0, name="C")
    func = te.create_prim_func([a, c], name="chain")
    lowered = lower_blocks(func)
    assert 'with allocate((n,), "float32") as B:' in str(lowered)
    assert_equivalent(func, lowered, [{"n": 0}, {"n": 5}])
    assert lower_blocks(lowered) is lowered


# ---------------------------------------------------------------------- tighten_loops


def test_tighten_moves_a_split_guard_into_the_loop_bound():
    sch, (jo, ji, *_rest) = tiled_matmul()
    lowered = lower_blocks(sch.func)
    assert "if j_0 * 8 + j_1 < n:" in str(lowered)
    tight = tighten_loops(lowered)
    text = str(tight)
    assert "j_0 * 8 + j_1 < n" not in text
    assert "for j_1 in range(-j_0 * 8 + max(j_0 * 8, min(j_0 * 8 + 8, n))):" in text
    assert_equivalent(sch.func, tight, SIZES)


def test_tighten_keeps_conditions_it_cannot_turn_into_bounds():
    a = te.placeholder((N, N), "float32", "A")
    b = te.compute((N, N), lambda i, j: tir.if_then_else(j <= i, a[i, j], 0.0) + 0.0, name="B")
    func = lower_blocks(te.create_prim_func([a, b], name="tril"))
    assert tighten_loops(func) is func  # no guard statement at all

    sch = schedule.Schedule(matmul_kernel())
    i, j, _ = sch.get_loops(sch.get_block("C"))
    sch.split(i, factors=[None, 4])  # the guard mixes i_0 and i_1: i_1 is innermost-first
    lowered = lower_blocks(sch.func)
    assert_equivalent(sch.func, tighten_loops(lowered), SIZES)


@settings(max_examples=15, deadline=None)
@given(factor=st.integers(1, 9), m=st.integers(0, 20), n=st.integers(0, 20))
def test_tighten_is_equivalent_for_any_split(factor, m, n):
    sch = schedule.Schedule(matmul_kernel())
    i, j, _ = sch.get_loops(sch.get_block("C"))
    sch.split(j, factors=[None, factor])
    sch.split(i, factors=[None, factor + 1])
    assert_equivalent(sch.func, tighten_loops(lower_blocks(sch.func)), [{"m": m, "n": n, "k": 3}])


# ------------------------------------------------------------------------------ stage


def test_stage_makes_a_register_tile_and_a_packed_panel():
    sch, (jo, ji, io, ii, k) = tiled_matmul()
    sch.parallel(jo)
    func = tighten_loops(lower_blocks(sch.func))
    packed = stage(func, jo.name, "B")
    tiled = stage(packed, io.name, "C")
    text = str(tiled)
    assert 'with allocate((k, 8), "float32", scope="local") as B_local:' in text
    assert 'with allocate((4, 8), "float32", scope="local") as C_local:' in text
    assert "C_local[i_1, j_1] = C_local[i_1, j_1] + A[i_0 * 4 + i_1, r] * B_local[r, j_1]" in text
    assert_equivalent(sch.func, tiled, SIZES)


def test_stage_shrinks_a_temporary_to_one_iteration_without_copies():
    x = te.placeholder((N, 16), "float32", "x")
    r = te.reduce_axis(16, "r")
    s = te.compute((N,), lambda i: te.sum(x[i, r], axis=r), name="s")
    y = te.compute((N, 16), lambda i, j: x[i, j] - s[i], name="y")
    func = te.create_prim_func([x, y], name="center")
    sch = schedule.Schedule(func)
    row, _ = sch.get_loops(sch.get_block("y"))
    sch.compute_at(sch.get_block("s"), row)
    block = sch.get_block("s")
    sch.decompose_reduction(block, sch.get_loops(block)[-1])
    staged = stage(lower_blocks(sch.func), row.name, "s")
    text = str(staged)
    assert 'allocate((n,), "float32") as s' not in text
    assert 'with allocate((1,), "float32", scope="local") as s_local:' in text
    assert "s_local[0] = float32(0.0)" in text
    assert_equivalent(func, staged, [{"n": 0}, {"n": 3}])


def test_stage_refuses_what_it_cannot_prove():
    sch, (jo, ji, io, ii, k) = tiled_matmul()
    func = lower_blocks(sch.func)  # guards still in place
    with pytest.raises(ScheduleError, match="^stage: an access of C under loop j_0 is under a"):
        stage(func, jo.name, "C")
    with pytest.raises(ScheduleError, match="^stage: kernel mm has no loop nope"):
        stage(tighten_loops(func), "nope", "C")
    with pytest.raises(ScheduleError, match="no parameter or allocated buffer called 'D'"):
        stage(func, jo.name, "D")
    with pytest.raises(ScheduleError, match="scope must be one of"):
        stage(func, jo.name, "C", scope="texture")


def _under_one_loop(func: tir.PrimFunc) -> tir.PrimFunc:
    """``func`` with its body inside ``for w in range(1)`` (a loop to stage at)."""
    lowered = lower_blocks(func)
    return lowered.with_body(tir.For(arith.sym("w"), 0, 1, "serial", lowered.body))


def test_stage_refuses_a_strided_access():
    a = te.placeholder((2 * N,), "float32", "A")
    b = te.compute((N,), lambda i: a[2 * i] * 2.0, name="B")
    func = _under_one_loop(te.create_prim_func([a, b], name="strided"))
    with pytest.raises(ScheduleError, match="index i \\* 2 of A skips elements: loop i steps by 2"):
        stage(func, "w", "A")


def test_stage_refuses_accesses_of_different_parts():
    a = te.placeholder((N, 2), "float32", "A")
    s = te.compute((N,), lambda i: a[i, 0] + a[i, 1], name="S")
    func = _under_one_loop(te.create_prim_func([a, s], name="pair"))
    with pytest.raises(ScheduleError, match="the accesses of A under loop w touch different parts"):
        stage(func, "w", "A")
    with pytest.raises(ScheduleError, match="loop i does not access S"):
        stage(stage(func, "w", "S"), "i", "S")


# ----------------------------------------------------------------------------- choose


def test_choose_runs_one_of_two_schedules_by_a_condition():
    base = matmul_kernel()
    sch_a, _ = tiled_matmul()
    first = tighten_loops(lower_blocks(sch_a.func))
    second = lower_blocks(base)
    both = choose(binop(">=", IndexExpr(M), 4), first, second)
    text = str(both)
    assert text.count("if m >= 4:") == 1 and "else:" in text
    assert "for i_1 in range(m):" in text or "for i_1" in text  # the second copy is renamed
    assert_equivalent(base, both, SIZES)


def test_choose_renames_to_names_the_second_kernel_does_not_bind():
    # The second kernel binds i and, inside it, i_1: its i clashes with the first's and
    # must not become a second i_1 (nested choices produce such names).
    a, b = Buffer("A", (M, N), "float32"), Buffer("B", (M, N), "float32")
    i, i_1, j = arith.syms("i i_1 j")

    def copy(outer, inner):
        store = BufferStore(b, a[outer, inner] * 2.0, (outer, inner))
        return PrimFunc(
            "copy", (a, b), For(outer, 0, M, "serial", For(inner, 0, N, "serial", store))
        )

    both = choose(binop(">=", IndexExpr(M), 3), copy(i, j), copy(i, i_1))
    assert "for i_2 in range(m):" in str(both)
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    for rows in (x, x[:2]):
        np.testing.assert_array_equal(run(both, rows), rows * 2.0)


def test_choose_renames_a_scratch_buffer_whose_shape_names_a_renamed_loop():
    # Both kernels allocate T with shape (i + 1,) under loop i: renaming i in the second
    # rebuilds T, which must still get a name of its own.
    a, b = Buffer("A", (M, N), "float32"), Buffer("B", (M, N), "float32")
    i, j = arith.syms("i j")

    def scratch(scale):
        tmp = Buffer("T", (i + 1,), "float32", scope="local")
        fill = BufferStore(tmp, a[i, j] * scale, (i,))
        store = BufferStore(b, tmp[i], (i, j))
        body = For(j, 0, N, "serial", Allocate(tmp, tir.seq(fill, store)))
        return PrimFunc("scratch", (a, b), For(i, 0, M, "serial", body))

    both = choose(binop(">=", IndexExpr(M), 3), scratch(2.0), scratch(3.0))
    text = str(both)
    assert "as T:" in text and "as T_1:" in text
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    np.testing.assert_array_equal(run(both, x), x * 2.0)
    np.testing.assert_array_equal(run(both, x[:2]), x[:2] * 3.0)


def test_choose_needs_one_signature():
    other = te.placeholder((N,), "float32", "A")
    out = te.compute((N,), lambda i: other[i], name="B")
    with pytest.raises(
        ScheduleError, match="^choose: kernels mm and copy have different signatures"
    ):
        choose(
            binop(">=", IndexExpr(M), 1),
            matmul_kernel(),
            te.create_prim_func([other, out], name="copy"),
        )
