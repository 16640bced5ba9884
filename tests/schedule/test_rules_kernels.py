"""The CPU rules on kernels: matmul, injective, reduction, and default_schedule.

Every rule's output is compared with the unscheduled kernel (and numpy) in the reference
interpreter for several symbol values, tails and 0 included; the loop nests are checked
for the structure the rule promises; one matmul is compiled and run natively.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import relaxjax as relax
from relaxjax import arith, tir
from relaxjax.errors import ScheduleError
from relaxjax.ir import IRModule
from relaxjax.schedule.rules import (
    CPU_RULES,
    RULE_ATTR,
    CpuParams,
    cpu_params,
    default_schedule,
    injective_rule,
    is_scheduled,
    matmul_rule,
    reduction_rule,
    schedule_kernels,
)
from relaxjax.tir import te
from relaxjax.tir.interpreter import run

M, N, K, B = arith.syms("m n k b")


def matmul(dtype: str = "float32", transposed: bool = False, batch: bool = False):
    lead = (B,) if batch else ()
    a = te.placeholder((*lead, M, K), dtype, "A")
    b_shape = (*lead, N, K) if transposed else (*lead, K, N)
    b = te.placeholder(b_shape, dtype, "W")
    r = te.reduce_axis(K, "r")

    def product(*idx):
        *bt, i, j = idx
        rhs = b[(*bt, j, r)] if transposed else b[(*bt, r, j)]
        return te.sum(a[(*bt, i, r)] * rhs, axis=r)

    c = te.compute((*lead, M, N), product, name="C")
    return te.create_prim_func([a, b, c], name="mm")


def layer_norm(width: int | arith.Expr = 64):
    x = te.placeholder((N, width), "float32", "x")
    r1, r2 = te.reduce_axis(width, "r1"), te.reduce_axis(width, "r2")
    s = te.compute((N,), lambda i: te.sum(x[i, r1], axis=r1), name="s")
    q = te.compute(
        (N,),
        lambda i: te.sum((x[i, r2] - s[i] / 64.0) * (x[i, r2] - s[i] / 64.0), axis=r2),
        name="q",
    )
    y = te.compute(
        (N, width), lambda i, j: (x[i, j] - s[i] / 64.0) * tir.rsqrt(q[i] / 64.0 + 1e-5), name="y"
    )
    return te.create_prim_func([x, y], name="norm")


def inputs_for(func: tir.PrimFunc, env: dict, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    arrays = []
    for param in func.inputs:
        shape = tuple(d if isinstance(d, int) else arith.evaluate(d, env) for d in param.shape)
        if param.dtype.startswith("int"):
            arrays.append(rng.integers(-3, 4, shape).astype(param.dtype))
        else:
            arrays.append(rng.standard_normal(shape).astype(param.dtype))
    return arrays


def assert_equivalent(original: tir.PrimFunc, scheduled: tir.PrimFunc, envs, rtol=1e-5):
    for seed, env in enumerate(envs):
        inputs = inputs_for(original, env, seed)
        expected, got = run(original, *inputs), run(scheduled, *inputs)
        written = (
            ~np.isnan(expected) if expected.dtype.kind == "f" else np.ones_like(expected, bool)
        )
        np.testing.assert_allclose(
            got[written], expected[written], rtol=rtol, atol=rtol, err_msg=str(env)
        )


MATMUL_SIZES = [
    {"m": 13, "n": 70, "k": 5, "b": 2},
    {"m": 0, "n": 3, "k": 2, "b": 1},
    {"m": 6, "n": 64, "k": 1, "b": 1},
    {"m": 7, "n": 33, "k": 9, "b": 0},
    {"m": 8, "n": 32, "k": 4, "b": 1},
    {"m": 17, "n": 65, "k": 0, "b": 1},
    {"m": 1, "n": 5, "k": 3, "b": 3},
    {"m": 2, "n": 600, "k": 3, "b": 1},
    {"m": 9, "n": 95, "k": 2, "b": 1},  # two 16-wide tail panels and 15 last columns
    {"m": 16, "n": 112, "k": 3, "b": 1},  # one tail panel, no last columns
    {"m": 3, "n": 21, "k": 300, "b": 1},  # few rows, long k: slices of k in parallel
    {"m": 1, "n": 4, "k": 257, "b": 1},  # a ragged last slice
]


# ------------------------------------------------------------------------------ matmul


def test_matmul_rule_tiles_packs_and_switches_on_the_row_count():
    func = matmul()
    scheduled = matmul_rule(func)
    text = str(scheduled)
    params = cpu_params("llvm")
    rows, cols = params.matmul_rows, params.lanes("float32") * params.matmul_vectors
    tail = 2 * params.lanes("float32") if cols > 2 * params.lanes("float32") else 8
    assert f"if m >= {rows}:" in text  # tiled for >= rows rows, row by row below
    assert f"for i1_0 in parallel(n // {cols}):" in text
    assert f'with allocate((k, {cols}), "float32", scope="local") as W_local:' in text
    assert f'with allocate(({rows}, {cols}), "float32", scope="local") as C_local:' in text
    assert f"for i0_1 in unrolled({rows}):" in text and f"for i1_1 in vectorized({cols}):" in text
    # the columns left over by the wide panels get narrower tiles of their own
    assert f"for i1_tail_0 in range((n % {cols}) // {tail}):" in text
    assert f'with allocate((k, {tail}), "float32", scope="local") as W_local_1:' in text
    assert f"for i0_tail_0 in parallel(m // {rows}):" in text
    assert 'with allocate((1, 512), "float32", scope="local")' in text  # the row-by-row chunk
    # fewer rows with a long reduction: 16 slices of k summed at the end
    parts, split_k = params.gemv_parts, params.gemv_split_k
    assert f"if k >= {split_k}:" in text
    assert f'with allocate(({parts}, m, n), "float32") as C_rf:' in text
    assert f"in parallel({parts}):" in text
    assert_equivalent(func, scheduled, MATMUL_SIZES)


def test_matmul_rule_for_avx2_tiles_6x16_with_8_wide_tail_panels():
    class Avx2:
        vector_bits = 256

    func = matmul()
    scheduled = matmul_rule(func, Avx2())
    text = str(scheduled)
    assert "for i1_0 in parallel(n // 16):" in text and "for i0_1 in unrolled(6):" in text
    assert "for i1_tail_0 in range((n % 16) // 8):" in text
    assert_equivalent(func, scheduled, MATMUL_SIZES)


def test_matmul_rule_matches_numpy():
    scheduled = matmul_rule(matmul())
    rng = np.random.default_rng(0)
    shapes = [(13, 70, 5), (6, 32, 40), (8, 32, 40), (17, 33, 3), (3, 9, 1), (0, 4, 4), (19, 95, 7)]
    shapes += [(1, 40, 700), (5, 3, 256), (7, 9, 0)]
    for m, n, k in shapes:
        a = rng.standard_normal((m, k)).astype(np.float32)
        w = rng.standard_normal((k, n)).astype(np.float32)
        np.testing.assert_allclose(run(scheduled, a, w), a @ w, rtol=1e-5, atol=1e-5)


def test_matmul_rule_picks_one_schedule_for_static_rows():
    a = te.placeholder((2, K), "float32", "A")
    b = te.placeholder((K, N), "float32", "W")
    r = te.reduce_axis(K, "r")
    c = te.compute((2, N), lambda i, j: te.sum(a[i, r] * b[r, j], axis=r), name="C")
    func = te.create_prim_func([a, b, c], name="rows")
    text = str(matmul_rule(func))
    assert "if m >=" not in text and "if k >= 256:" in text  # only k is left to test
    assert "C_local" in text and "W_local" not in text  # no packing for two rows
    assert_equivalent(func, matmul_rule(func), MATMUL_SIZES[:3] + MATMUL_SIZES[-2:])

    a = te.placeholder((2, 512), "float32", "A")
    b = te.placeholder((512, N), "float32", "W")
    r = te.reduce_axis(512, "r")
    c = te.compute((2, N), lambda i, j: te.sum(a[i, r] * b[r, j], axis=r), name="C")
    long_k = te.create_prim_func([a, b, c], name="rows_long")
    text = str(matmul_rule(long_k))
    assert "if " not in text and "C_rf" in text  # k = 512: slices of k, decided statically


@pytest.mark.parametrize("transposed, batch", [(True, False), (False, True), (True, True)])
def test_matmul_rule_handles_transposed_and_batched_operands(transposed, batch):
    func = matmul(transposed=transposed, batch=batch)
    scheduled = matmul_rule(func)
    assert scheduled is not None
    assert_equivalent(func, scheduled, MATMUL_SIZES)


def test_matmul_rule_leaves_integer_products_to_the_reduction_rule():
    func = matmul("int32")
    assert matmul_rule(func) is None
    scheduled = default_schedule(func, strict=True)
    assert dict(scheduled.attrs)[RULE_ATTR] == "reduction"
    assert_equivalent(func, scheduled, MATMUL_SIZES)


def test_a_scheduled_matmul_compiles_and_matches_numpy():
    kernel = relax.build(default_schedule(matmul()))
    rng = np.random.default_rng(1)
    for m, n, k in [(67, 100, 45), (5, 1030, 17), (6, 32, 0)]:
        a = rng.standard_normal((m, k)).astype(np.float32)
        w = rng.standard_normal((k, n)).astype(np.float32)
        np.testing.assert_allclose(kernel(a, w), a @ w, rtol=1e-4, atol=1e-4)


# --------------------------------------------------------------------------- injective


def test_injective_rule_parallelises_rows_and_vectorises_columns():
    x = te.placeholder((N, 768), "float32", "x")
    g = te.placeholder((768,), "float32", "g")
    y = te.compute((N, 768), lambda i, j: x[i, j] * g[j], name="y")
    func = te.create_prim_func([x, g, y], name="scale")
    text = str(injective_rule(func))
    assert "for i in parallel(n):" in text and "for j in vectorized(768):" in text
    assert_equivalent(func, injective_rule(func), [{"n": 0}, {"n": 3}])


def test_injective_rule_merges_short_rows_and_inlines_intermediates():
    x = te.placeholder((N, 3), "float32", "x")
    t = te.compute((N, 3), lambda i, j: x[i, j] + 1.0, name="t")
    y = te.compute((N, 3), lambda i, j: t[i, j] * 2.0, name="y")
    func = te.create_prim_func([x, y], name="chain")
    scheduled = injective_rule(func)
    text = str(scheduled)
    assert "allocate" not in text  # t was inlined
    assert "parallel((n * 3 + 4094) // 4095)" in text
    assert_equivalent(func, scheduled, [{"n": 0}, {"n": 1}, {"n": 2000}])


def test_injective_rule_skips_reductions_and_empty_loops():
    assert injective_rule(layer_norm()) is None
    x = te.placeholder((N, 0), "float32", "x")
    y = te.compute((N, 0), lambda i, j: x[i, j], name="y")
    func = te.create_prim_func([x, y], name="empty")
    assert_equivalent(func, injective_rule(func), [{"n": 4}])


# --------------------------------------------------------------------------- reduction


def test_reduction_rule_runs_a_norm_row_by_row_with_partial_sums():
    func = layer_norm()
    scheduled = reduction_rule(func)
    text = str(scheduled)
    assert "for i_2 in parallel(n):" in text
    assert 'with allocate((1, 32), "float32", scope="local") as s_rf_local:' in text
    assert "for r1_1 in vectorized(32):" in text or "vectorized(32)" in text
    assert 'allocate((1,), "float32", scope="local")' in text  # per-row statistics
    assert_equivalent(func, scheduled, [{"n": 0}, {"n": 1}, {"n": 5}], rtol=1e-4)


def test_reduction_rule_keeps_a_symbolic_reduction_serial_but_correct():
    func = layer_norm(K)
    scheduled = reduction_rule(func)
    assert "_rf" not in str(scheduled)
    assert_equivalent(func, scheduled, [{"n": 3, "k": 0}, {"n": 2, "k": 37}], rtol=1e-4)


def test_reduction_rule_vectorises_the_kept_axis_of_a_column_sum():
    x = te.placeholder((N, M), "float32", "x")
    r = te.reduce_axis(N, "r")
    s = te.compute((M,), lambda j: te.sum(x[r, j], axis=r), name="s")
    func = te.create_prim_func([x, s], name="colsum")
    scheduled = reduction_rule(func)
    text = str(scheduled)
    assert "for r in range(n):" in text and "for j in vectorized(m):" in text
    assert text.index("for r in range(n):") < text.index("for j in vectorized(m):")
    assert_equivalent(func, scheduled, [{"n": 0, "m": 3}, {"n": 4, "m": 5}], rtol=1e-4)


@settings(max_examples=10, deadline=None)
@given(n=st.integers(0, 9), width=st.sampled_from([1, 7, 64, 96]))
def test_reduction_rule_is_equivalent_for_any_row_count_and_width(n, width):
    func = layer_norm(width)
    assert_equivalent(func, default_schedule(func, strict=True), [{"n": n}], rtol=1e-4)


# --------------------------------------------------------------------- default_schedule


def test_default_schedule_records_the_rule_and_is_idempotent():
    scheduled = default_schedule(matmul())
    assert dict(scheduled.attrs)[RULE_ATTR] == "matmul" and is_scheduled(scheduled)
    assert default_schedule(scheduled) is scheduled
    assert [name for name, _ in CPU_RULES] == ["matmul", "reduction", "injective"]


def test_default_schedule_falls_back_to_the_kernel_as_it_was():
    func = matmul()

    def broken(func, target):
        raise ScheduleError("broken: refused")

    def other_signature(func, target):
        x = te.placeholder((N,), "float32", "x")
        return te.create_prim_func([x, te.compute((N,), lambda i: x[i], name="y")], name="mm")

    fallback = default_schedule(func, rules=[("broken", broken), ("bad", other_signature)])
    assert dict(fallback.attrs)[RULE_ATTR] == "none"
    assert fallback.body is func.body
    with pytest.raises(ScheduleError, match="^broken: refused$"):
        default_schedule(func, rules=[("broken", broken)], strict=True)


def test_default_schedule_rejects_what_is_not_a_kernel_and_unknown_targets():
    with pytest.raises(TypeError, match="default_schedule expects a tir.PrimFunc, got str"):
        default_schedule("matmul")
    with pytest.raises(ValueError, match="the CPU schedule rules serve target 'llvm', got 'cuda'"):
        cpu_params("cuda")
    with pytest.raises(ValueError, match="cannot read the vector width of target 3"):
        cpu_params(3)

    class Avx2:
        vector_bits = 256

    assert cpu_params(Avx2()) == CpuParams(vector_bits=256, matmul_rows=6, matmul_vectors=2)
    assert CpuParams().lanes("float64") == 4 and CpuParams().lanes("bool") == 32


def test_schedule_kernels_schedules_every_kernel_of_a_module():
    mod = IRModule({"mm": matmul(), "norm": layer_norm()})
    scheduled = schedule_kernels(mod)
    rules = {name: dict(k.attrs)[RULE_ATTR] for name, k in scheduled.kernels().items()}
    assert rules == {"mm": "matmul", "norm": "reduction"}
    assert schedule_kernels(scheduled) is scheduled


# ------------------------------------------------------------------------------ approx


def test_float32_tanh_becomes_a_vectorisable_rational_function():
    x = te.placeholder((N,), "float32", "x")
    y = te.compute((N,), lambda i: tir.tanh(x[i]) * 0.5, name="y")
    func = te.create_prim_func([x, y], name="half_tanh")
    scheduled = default_schedule(func)
    text = str(scheduled)
    assert " tanh(" not in text and "min(max(x[" in text
    values = np.concatenate(
        [np.linspace(-12, 12, 4001), [0.0, 1e-30, -1e-8, np.inf, -np.inf, np.nan]]
    ).astype(np.float32)
    got = run(scheduled, values)
    expected = (np.tanh(values.astype(np.float64)) * 0.5).astype(np.float32)
    np.testing.assert_allclose(got, expected, rtol=5e-7, atol=1e-37)
    assert np.isnan(got[-1])


def test_float32_tanh_saturates_exactly_like_tanhf():
    # found by the fuzzer: gelu(-1e20) (tanh form) was -3e12, as 1 + tanh(x) stopped at an
    # ulp (5.96e-8) instead of 0 beyond the old clamp at 9
    x = te.placeholder((N,), "float32", "x")
    y = te.compute((N,), lambda i: tir.tanh(x[i]) + 1.0, name="y")
    scheduled = default_schedule(te.create_prim_func([x, y], name="one_plus_tanh"))
    values = np.array([-10.0, -10.5, -12.0, -50.0, -1e20, -np.inf, 10.0, 1e20] * 5, np.float32)
    got = run(scheduled, values)
    expected = np.tanh(values) + np.float32(1.0)  # numpy's float32 tanh: exactly +-1 here
    np.testing.assert_array_equal(got, expected)
    assert (got[values < 0] == 0).all()
    wide = np.linspace(-40, 40, 4001).astype(np.float32)
    assert np.abs(run(scheduled, wide) - 1).max() <= 1  # |tanh| <= 1 everywhere


def test_tanh_of_other_dtypes_is_left_to_the_math_library():
    x = te.placeholder((N,), "float64", "x")
    y = te.compute((N,), lambda i: tir.tanh(x[i]), name="y")
    assert "tanh(x[" in str(default_schedule(te.create_prim_func([x, y], name="t64")))


def test_tanh_coefficients_are_lamberts_convergent():
    from relaxjax.schedule.rules.approx import tanh_coefficients

    numerator, denominator = tanh_coefficients(2)
    # tanh(x) ~ x (15 + x^2) / (15 + 6 x^2): the second convergent of Lambert's fraction.
    assert (numerator, denominator) == ((15, 1), (15, 6))
    k, h = tanh_coefficients()
    assert len(k) == len(h) == 7 and h[0] == k[0]
