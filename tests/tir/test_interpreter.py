"""The reference interpreter: calling convention, checks, the value semantics of TIR,
and the vectorized fast path against iteration-by-iteration execution."""

import math
import sys
from pathlib import Path

import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
from hypothesis import given

from relaxjax import arith, tir
from relaxjax.errors import ShapeError
from relaxjax.tir import te
from relaxjax.tir.interpreter import run, source

sys.path.insert(0, str(Path(__file__).parent))
from tir_kernels import matmul, random_inputs, random_kernels  # noqa: E402

n, m = arith.syms("n m")
i, j = arith.syms("i j")


def unary_kernel(fn, in_dtype: str, out_dtype: str) -> tir.PrimFunc:
    a = te.placeholder((n,), in_dtype, "a")
    b = te.compute((n,), lambda i: fn(a[i]), name="b")
    f = te.create_prim_func([a, b], name="unary")
    assert f.outputs[0].dtype == out_dtype
    return f


def binary_kernel(fn, dtype: str) -> tir.PrimFunc:
    a = te.placeholder((n,), dtype, "a")
    b = te.placeholder((n,), dtype, "b")
    c = te.compute((n,), lambda i: fn(a[i], b[i]), name="c")
    return te.create_prim_func([a, b, c], name="binary")


# --- calling convention and checks ---------------------------------------------------------


def test_outputs_allocated_or_written_in_place():
    f = matmul()
    a, b = np.ones((2, 3), "float32"), np.ones((3, 4), "float32")
    c = run(f, a, b)
    assert c.shape == (2, 4) and (c == 3).all()
    out = np.zeros((2, 4), "float32")
    assert run(f, a, b, out) is out and (out == 3).all()


@pytest.mark.parametrize(
    "arrays, kwargs, error, message",
    [
        ((np.ones((2, 3), "float32"),), {}, TypeError, "takes 2 input array\\(s\\) \\(or all 3"),
        (
            (np.ones((2, 3), "float32"), np.ones((3, 4), "float64")),
            {},
            TypeError,
            "parameter B expects dtype float32, got float64",
        ),
        (
            (np.ones((2, 3), "float32"), np.ones(3, "float32")),
            {},
            ShapeError,
            "parameter B expects rank 2 \\(shape \\(K, m\\)\\), got rank 1",
        ),
        (
            (np.ones((2, 3), "float32"), np.ones((4, 4), "float32")),
            {},
            ShapeError,
            "parameter B axis 0 expects K = 3 \\(K=3, m=4, n=2\\), got 4",
        ),
        (
            (np.ones((2, 3), "float32"), [[1.0]]),
            {},
            TypeError,
            "parameter B must be a numpy array, got list",
        ),
        (
            (np.ones((2, 3), "float32"), np.ones((3, 4), "float32"), np.ones((2, 4), "float32")),
            {"q": 1},
            TypeError,
            "has no symbol\\(s\\) q; symbols: K, m, n",
        ),
        (
            (np.ones((2, 3), "float32"), np.ones((3, 4), "float32"), [[0.0]]),
            {},
            TypeError,
            "parameter C is an output and must be a numpy array, got list",
        ),
    ],
)
def test_argument_errors(arrays, kwargs, error, message):
    with pytest.raises(error, match=message):
        run(matmul(), *arrays, **kwargs)


def test_inputs_may_be_any_array_with_the_exact_dtype():
    a, b = jnp.ones((2, 3), "float32"), jnp.ones((3, 4), "float32")
    np.testing.assert_array_equal(run(matmul(), a, b), np.full((2, 4), 3.0))


def test_scalar_params_and_symbols_bound_only_by_outputs():
    a = te.placeholder((n * 2,), "float32", "a")
    b = te.compute((n * 2,), lambda i: a[i] + 1.0, name="b")
    f = te.create_prim_func([a, b])
    with pytest.raises(TypeError, match="missing value of symbol n \\(pass n=...\\)"):
        run(f, np.zeros(4, "float32"))
    with pytest.raises(ShapeError, match="parameter a axis 0 expects n \\* 2 = 6 \\(n=3\\), got 4"):
        run(f, np.zeros(4, "float32"), n=3)
    fill = te.create_prim_func([te.compute((m,), lambda i: tir.cast(i, "float32"), name="r")])
    np.testing.assert_array_equal(run(fill, m=3), [0.0, 1.0, 2.0])


def test_symbol_bounds_are_checked():
    bounded = arith.Sym("n", lower=2, upper=4)
    a = te.placeholder((bounded,), "float32", "a")
    f = te.create_prim_func([a, te.compute((bounded,), lambda i: a[i], name="b")])
    with pytest.raises(ShapeError, match="symbol n = 1 is outside its bounds \\[2, 4\\]"):
        run(f, np.zeros(1, "float32"))


def test_out_of_bounds_loads_and_iterators_raise():
    a = tir.Buffer("a", (n,), "float32")
    b = tir.Buffer("b", (n,), "float32")
    shifted = tir.For(i, 0, n, "serial", tir.BufferStore(b, a[i - 1], (i,)))
    f = tir.PrimFunc("shift", (a, b), shifted)
    with pytest.raises(
        IndexError, match="kernel shift: load a\\[i - 1\\] axis 0: index -1 is outside"
    ):
        run(f, np.zeros(3, "float32"))
    vi = arith.sym("vi")
    block = tir.Block("blk", (tir.IterVar(vi, n),), (), (), None, tir.BufferStore(b, a[vi], (vi,)))
    loop = tir.For(i, 0, n + 1, "serial", tir.BlockRealize((i,), True, block))
    g = tir.PrimFunc("over", (a, b), loop)
    with pytest.raises(
        IndexError, match="kernel over: block 'blk' iterator vi: index 3 is outside \\[0, 3\\)"
    ):
        run(g, np.zeros(3, "float32"))
    guarded = tir.For(i, 0, n + 1, "serial", tir.BlockRealize((i,), tir.IndexExpr(i) < n, block))
    np.testing.assert_array_equal(
        run(tir.PrimFunc("ok", (a, b), guarded), np.ones(3, "float32")), 1
    )


def test_lazy_if_then_else_guards_a_load_but_select_does_not():
    a = tir.Buffer("a", (n,), "float32")
    b = tir.Buffer("b", (n,), "float32")
    zero = tir.const(0.0, "float32")

    def kernel(pick):
        value = pick(tir.IndexExpr(i) > 0, a[i - 1], zero)
        return tir.PrimFunc(
            "pad", (a, b), tir.For(i, 0, n, "serial", tir.BufferStore(b, value, (i,)))
        )

    np.testing.assert_array_equal(run(kernel(tir.if_then_else), np.ones(3, "float32")), [0, 1, 1])
    with pytest.raises(IndexError, match="index -1"):
        run(kernel(tir.select), np.ones(3, "float32"))


def test_temporaries_are_poisoned():
    a = tir.Buffer("a", (n,), "float32")
    tmp = tir.Buffer("t", (n,), "float32", scope="local")
    body = tir.Allocate(tmp, tir.For(i, 0, n, "serial", tir.BufferStore(a, tmp[i], (i,))))
    out = run(tir.PrimFunc("poison", (a,), body, num_outputs=1), n=2)
    assert np.isnan(out).all()


def test_every_loop_kind_and_deep_nests_run():
    # 24 nested loops exceed Python's static nesting limit: the interpreter splits them.
    out = tir.Buffer("out", (1,), "int64")
    loop_vars = [arith.Sym(f"l{d}") for d in range(24)]
    total = tir.IndexExpr(sum(loop_vars[1:], loop_vars[0]))
    body: tir.Stmt = tir.BufferStore(out, out[0] + total, (0,))
    kinds = ["serial", "parallel", "vectorized", "unrolled"]
    for depth, var in reversed(list(enumerate(loop_vars))):
        kind = kinds[depth % 4]
        tag = None
        if depth == 0:
            kind, tag = "thread_binding", "blockIdx.x"
        body = tir.For(var, 0, 2 if depth % 8 == 0 else 1, kind, body, thread_tag=tag)
    f = tir.PrimFunc("deep", (out,), body)
    result = run(f, np.zeros(1, "int64"))
    assert result[0] == 3 * 4  # l0, l8 and l16 are 1 in half of the 8 iterations


def test_reverse_parallel_exposes_order_dependence():
    a = tir.Buffer("a", (n,), "int64")
    prefix = tir.BufferStore(a, a[i - 1] + a[i], (i,))
    for kind, changes in (("serial", False), ("parallel", True), ("thread_binding", True)):
        tag = "threadIdx.x" if kind == "thread_binding" else None
        f = tir.PrimFunc("scan", (a,), tir.For(i, 1, n - 1, kind, prefix, thread_tag=tag))
        forward = run(f, np.arange(5), n=5)
        backward = run(f, np.arange(5), n=5, reverse_parallel=True)
        np.testing.assert_array_equal(forward, [0, 1, 3, 6, 10])
        assert (not np.array_equal(forward, backward)) == changes
    assert "range(s_n - 1, 1 - 1, -1)" in source(f, reverse_parallel=True)


def test_vectorized_path_is_used_for_elementwise_loops():
    a = te.placeholder((n, m), "float32", "a")
    b = te.compute((n, m), lambda i, j: a[i, j] * 2.0, name="b")
    text = source(te.create_prim_func([a, b]))
    assert "arange" in text and "for s_j" not in text
    reduction = source(matmul())
    assert "_rt_fold(_rt_np.add" in reduction and "for s_k" not in reduction


def test_reduction_fast_path_restarts_at_the_init_inside_a_split_loop():
    # k = ko * 4 + ki with ki innermost: the init (k == 0) happens inside the ki loop of
    # ko == 0 only; later ko iterations continue the accumulation.
    x = tir.Buffer("x", (n, 8), "float32")
    y = tir.Buffer("y", (n,), "float32")
    ko, ki, vi, vk = arith.syms("ko ki vi vk")
    block = tir.Block(
        "s",
        (tir.IterVar(vi, n), tir.IterVar(vk, 8, "reduce")),
        (x[vi, 0:8],),
        (y[vi],),
        tir.BufferStore(y, tir.const(0.5, "float32"), (vi,)),
        tir.BufferStore(y, y[vi] + x[vi, vk] * x[vi, vk], (vi,)),
    )
    realize = tir.BlockRealize((i, ko * 4 + ki), True, block)
    nest = tir.For(
        i, 0, n, "parallel", tir.For(ko, 0, 2, "serial", tir.For(ki, 0, 4, "serial", realize))
    )
    f = tir.PrimFunc("split_sum", (x, y), nest)
    assert "_rt_fold" in source(f)
    data = np.random.default_rng(1).standard_normal((3, 8)).astype("float32")
    fast, slow = run(f, data), run(f, data, vectorize=False)
    np.testing.assert_array_equal(fast, slow)
    np.testing.assert_allclose(fast, 0.5 + (data**2).sum(1), rtol=1e-6)
    # k = t % 8 over t in [0, 12): the init runs at t = 0 and again at t = 8
    t = arith.sym("t")
    wrap = tir.For(
        i, 0, n, "serial", tir.For(t, 0, 12, "serial", tir.BlockRealize((i, t % 8), True, block))
    )
    g = tir.PrimFunc("wrap_sum", (x, y), wrap)
    assert "_rt_fold" in source(g)
    fast, slow = run(g, data), run(g, data, vectorize=False)
    np.testing.assert_array_equal(fast, slow)
    np.testing.assert_allclose(fast, 0.5 + (data[:, :4] ** 2).sum(1), rtol=1e-6)


@given(random_kernels())
def test_vectorized_equals_iteration_by_iteration(f):
    arrays = random_inputs(f, {"n": 3, "m": 4})
    fast = run(f, *arrays, n=3, m=4)
    slow = run(f, *arrays, n=3, m=4, vectorize=False)
    for x, y in zip(
        fast if isinstance(fast, tuple) else (fast,), slow if isinstance(slow, tuple) else (slow,)
    ):
        assert x.dtype == y.dtype
        assert np.array_equal(x.view(np.uint8), y.view(np.uint8))


# --- value semantics -------------------------------------------------------------------------


def test_integer_arithmetic_wraps_and_floors():
    a = np.array([100, -7, 7, -128], "int8")
    b = np.array([100, 2, -2, 3], "int8")
    np.testing.assert_array_equal(run(binary_kernel(lambda x, y: x + y, "int8"), a, b), a + b)
    np.testing.assert_array_equal(run(binary_kernel(lambda x, y: x // y, "int8"), a, b), a // b)
    np.testing.assert_array_equal(run(binary_kernel(lambda x, y: x % y, "int8"), a, b), a % b)
    assert run(binary_kernel(lambda x, y: x + y, "int8"), a, b)[0] == -56


def test_float_floordiv_mod_and_nan_propagating_min_max():
    a = np.array([-1.5, 7.0, np.nan, 2.0], "float32")
    b = np.array([1.0, -2.0, 1.0, np.nan], "float32")
    np.testing.assert_array_equal(run(binary_kernel(lambda x, y: x // y, "float32"), a, b), a // b)
    np.testing.assert_array_equal(
        run(binary_kernel(lambda x, y: x % y, "float32"), a, b), np.mod(a, b)
    )
    got = run(binary_kernel(tir.max, "float32"), a, b)
    np.testing.assert_array_equal(got, np.maximum(a, b))
    assert np.isnan(got[2]) and np.isnan(got[3])


def test_casts_truncate_and_bfloat16_rounds_from_float32():
    x = np.array([2.7, -2.7, 0.0, 1e-3], "float64")
    np.testing.assert_array_equal(
        run(unary_kernel(lambda v: tir.cast(v, "int32"), "float64", "int32"), x), [2, -2, 0, 0]
    )
    np.testing.assert_array_equal(
        run(unary_kernel(lambda v: tir.cast(v, "bool"), "float64", "bool"), x),
        [True, True, False, True],
    )
    # float64 -> bfloat16 rounds through float32 (double rounding), as jax does
    tricky = np.array([1 + 2**-8 + 2**-30], "float64")
    got = run(unary_kernel(lambda v: tir.cast(v, "bfloat16"), "float64", "bfloat16"), tricky)
    assert got.dtype == ml_dtypes.bfloat16
    via_f32 = tricky.astype(np.float32).astype(ml_dtypes.bfloat16)
    np.testing.assert_array_equal(got, via_f32)
    np.testing.assert_array_equal(got, np.asarray(jnp.asarray(tricky).astype(jnp.bfloat16)))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_precision_arithmetic_rounds_each_result(dtype):
    np_dtype = np.dtype(ml_dtypes.bfloat16) if dtype == "bfloat16" else np.dtype(dtype)
    a = (np.linspace(-3, 3, 7)).astype(np_dtype)
    b = (np.linspace(0.5, 2, 7)).astype(np_dtype)
    f = binary_kernel(lambda x, y: x * y + tir.exp(x) / y, dtype)
    expected = (a * b + np.exp(a) / b).astype(np_dtype)
    np.testing.assert_array_equal(run(f, a, b), expected)
    jax_expected = np.asarray(
        jnp.asarray(a) * jnp.asarray(b) + jnp.exp(jnp.asarray(a)) / jnp.asarray(b)
    )
    np.testing.assert_allclose(
        run(f, a, b).astype("float32"), jax_expected.astype("float32"), rtol=2e-2
    )


INTRINSIC_CASES = [
    (tir.exp, np.exp),
    (tir.exp2, np.exp2),
    (tir.expm1, np.expm1),
    (lambda v: tir.log1p(tir.abs(v)), lambda v: np.log1p(np.abs(v))),
    (tir.tanh, np.tanh),
    (tir.sin, np.sin),
    (tir.cos, np.cos),
    (tir.atan, np.arctan),
    (tir.sinh, np.sinh),
    (tir.floor, np.floor),
    (tir.ceil, np.ceil),
    (tir.trunc, np.trunc),
    (tir.round, np.round),
    (tir.abs, np.abs),
    (lambda v: tir.sqrt(tir.abs(v)), lambda v: np.sqrt(np.abs(v))),
    (lambda v: tir.log(tir.abs(v)), lambda v: np.log(np.abs(v))),
    (lambda v: tir.log2(tir.abs(v)), lambda v: np.log2(np.abs(v))),
    (lambda v: tir.log10(tir.abs(v)), lambda v: np.log10(np.abs(v))),
    (lambda v: tir.rsqrt(tir.abs(v)), lambda v: 1 / np.sqrt(np.abs(v))),
    (tir.sigmoid, lambda v: 1 / (1 + np.exp(-v))),
    (tir.erf, np.vectorize(math.erf)),
    (lambda v: tir.pow(tir.abs(v), v), lambda v: np.power(np.abs(v), v)),
    (lambda v: tir.atan2(v, v + 1.0), lambda v: np.arctan2(v, v + 1)),
    (lambda v: tir.fma(v, v, v), lambda v: v * v + v),
    (lambda v: tir.sin(tir.asin(tir.min(tir.max(v, -1.0), 1.0))), lambda v: np.clip(v, -1, 1)),
    (lambda v: tir.cos(tir.acos(tir.min(tir.max(v, -1.0), 1.0))), lambda v: np.clip(v, -1, 1)),
    (lambda v: tir.tan(v) * tir.cosh(v), lambda v: np.tan(v) * np.cosh(v)),
]


@pytest.mark.parametrize("case", range(len(INTRINSIC_CASES)))
def test_intrinsics_match_numpy_in_float64(case):
    build, reference = INTRINSIC_CASES[case]
    x = np.array([-2.5, -0.5, 0.25, 0.5, 1.5, 3.0], "float64")
    got = run(unary_kernel(build, "float64", "float64"), x)
    np.testing.assert_allclose(got, reference(x), rtol=1e-12, atol=1e-15)


def test_isnan_isinf_isfinite():
    x = np.array([np.nan, np.inf, -np.inf, 1.0], "float32")
    for fn, ref in ((tir.isnan, np.isnan), (tir.isinf, np.isinf), (tir.isfinite, np.isfinite)):
        np.testing.assert_array_equal(run(unary_kernel(fn, "float32", "bool"), x), ref(x))


def test_intrinsics_in_float32_round_once():
    x = np.linspace(-4, 4, 17).astype("float32")
    got = run(unary_kernel(tir.erf, "float32", "float32"), x)
    exact = np.vectorize(math.erf)(x.astype("float64")).astype("float32")
    np.testing.assert_array_equal(got, exact)
    sig = run(unary_kernel(tir.sigmoid, "float32", "float32"), x)
    np.testing.assert_allclose(
        sig, np.asarray(jnp.asarray(x) * 0 + 1 / (1 + jnp.exp(-jnp.asarray(x)))), rtol=1e-6
    )


# --- fast paths: taken where exact, refused where not ------------------------------------------


def both_paths(f, *arrays, **scalars):
    """Runs both ways on copies (outputs may be among the arrays); they must agree."""
    fast = run(f, *(x.copy() for x in arrays), **scalars)
    slow = run(f, *(x.copy() for x in arrays), vectorize=False, **scalars)
    np.testing.assert_array_equal(fast, slow)
    return fast


def test_split_loop_with_predicate_is_masked():
    a = tir.Buffer("a", (n,), "float32")
    b = tir.Buffer("b", (n,), "float32")
    io, ii, vi = arith.syms("io ii vi")
    block = tir.Block(
        "dbl",
        (tir.IterVar(vi, n),),
        (a[vi],),
        (b[vi],),
        None,
        tir.BufferStore(b, a[vi] * 2.0, (vi,)),
    )
    realize = tir.BlockRealize((io * 4 + ii,), tir.IndexExpr(io * 4 + ii) < n, block)
    f = tir.PrimFunc(
        "split",
        (a, b),
        tir.For(io, 0, (n + 3) // 4, "serial", tir.For(ii, 0, 4, "vectorized", realize)),
    )
    assert "s_ii = s_ii[" in source(f)
    data = np.arange(7, dtype="float32")
    np.testing.assert_array_equal(both_paths(f, data), data * 2)


def test_fused_producer_consumer_blocks_vectorize_together():
    a = tir.Buffer("a", (n, m), "float32")
    c = tir.Buffer("c", (n, m), "float32")
    t = tir.Buffer("t", (n, m), "float32")
    vi, vj, wi, wj = arith.syms("vi vj wi wj")
    produce = tir.Block(
        "t",
        (tir.IterVar(vi, n), tir.IterVar(vj, m)),
        (a[vi, vj],),
        (t[vi, vj],),
        None,
        tir.BufferStore(t, a[vi, vj] * 2.0, (vi, vj)),
    )
    consume = tir.Block(
        "c",
        (tir.IterVar(wi, n), tir.IterVar(wj, m)),
        (t[wi, wj],),
        (c[wi, wj],),
        None,
        tir.BufferStore(c, t[wi, wj] + 1.0, (wi, wj)),
    )
    body = tir.seq(tir.BlockRealize((i, j), True, produce), tir.BlockRealize((i, j), True, consume))
    root = tir.Block(
        "root", (), (), (), None, tir.For(i, 0, n, "serial", tir.For(j, 0, m, "serial", body)), (t,)
    )
    f = tir.PrimFunc("fused", (a, c), tir.BlockRealize((), True, root))
    assert "for s_j" not in source(f)
    data = np.arange(6, dtype="float32").reshape(2, 3)
    np.testing.assert_array_equal(both_paths(f, data), data * 2 + 1)


def test_order_dependent_loops_stay_sequential():
    a = tir.Buffer("a", (n,), "int64")
    prefix = tir.PrimFunc(
        "prefix", (a,), tir.For(i, 1, n - 1, "serial", tir.BufferStore(a, a[i - 1] + a[i], (i,)))
    )
    assert "for s_i" in source(prefix)
    np.testing.assert_array_equal(both_paths(prefix, np.arange(5)), np.cumsum(np.arange(5)))
    b = tir.Buffer("b", (n,), "int64")
    halves = tir.PrimFunc(
        "halves",
        (a, b),
        tir.For(i, 0, n, "serial", tir.BufferStore(b, b[i // 2] + a[i], (i // 2,))),
    )
    assert "for s_i" in source(halves)
    np.testing.assert_array_equal(
        both_paths(halves, np.arange(6), np.zeros(6, "int64")), [1, 5, 9, 0, 0, 0]
    )
