"""jax.numpy / jax.nn keyword parity of the public wrappers: every keyword the wrappers
accept beyond the op's own attributes (``initial``, ``where``, ``promote_integers``,
``mean``, ``fill_value``, the attention masks and residual) against jax on random
inputs, edge cases included (empty axes, fully masked rows, out-of-range indices), and
every error path."""

from __future__ import annotations

import inspect

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import relaxjax as relax
import relaxjax.nn as rnn
import relaxjax.numpy as rnp


class _Lib:
    """The two implementations a test body runs against: ``m.np`` and ``m.nn``."""

    def __init__(self, np_module, nn_module) -> None:
        self.np, self.nn = np_module, nn_module


R, J = _Lib(rnp, rnn), _Lib(jnp, jax.nn)


def rand(shape, dtype="float32", low=-3.0, high=3.0, seed=0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return rng.random(shape) < 0.5
    if np.issubdtype(np.dtype(dtype), np.integer):
        return rng.integers(int(low), int(high) + 1, size=shape).astype(dtype)
    return rng.uniform(low, high, size=shape).astype(dtype)


def mask(shape, seed=1) -> np.ndarray:
    return rand(shape, "bool", seed=seed)


def _leaves(tree) -> list:
    return jax.tree_util.tree_leaves(tree)


def assert_like_jax(got, want, rtol=1e-6, atol=1e-6) -> None:
    got_leaves, want_leaves = _leaves(got), _leaves(want)
    assert len(got_leaves) == len(want_leaves)
    for ours, theirs in zip(got_leaves, want_leaves, strict=True):
        ours, theirs = np.asarray(ours), np.asarray(theirs)
        assert ours.dtype == theirs.dtype, (ours.dtype, theirs.dtype)
        assert ours.shape == theirs.shape, (ours.shape, theirs.shape)
        if ours.dtype.kind in "biu":
            np.testing.assert_array_equal(ours, theirs)
        else:
            np.testing.assert_allclose(
                ours.astype(np.float64), theirs.astype(np.float64), rtol=rtol, atol=atol
            )


def check(body, *args, rtol=1e-6, atol=1e-6) -> None:
    """``body(m, *args)`` compiled by relax.jit, evaluated eagerly and shape-deduced,
    against jax (values, dtypes and shapes)."""
    want = body(J, *(jnp.asarray(a) for a in args))
    assert_like_jax(relax.jit(lambda *a: body(R, *a))(*args), want, rtol, atol)
    assert_like_jax(body(R, *args), want, rtol, atol)
    specs = _leaves(relax.eval_shape(lambda *a: body(R, *a), *args))
    for spec, value in zip(specs, _leaves(want), strict=True):
        assert spec.shape == value.shape and spec.dtype == str(value.dtype)


# =========================================================================== signatures


@pytest.mark.parametrize(
    "ours, theirs",
    [
        (rnp.sum, jnp.sum),
        (rnp.prod, jnp.prod),
        (rnp.max, jnp.max),
        (rnp.min, jnp.min),
        (rnp.mean, jnp.mean),
        (rnp.var, jnp.var),
        (rnp.take, jnp.take),
        (rnp.reshape, jnp.reshape),
        (rnp.einsum, jnp.einsum),
        (rnn.softmax, jax.nn.softmax),
        (rnn.log_softmax, jax.nn.log_softmax),
        (rnn.dot_product_attention, jax.nn.dot_product_attention),
    ],
)
def test_keywords_and_defaults_are_jax_s(ours, theirs):
    ignored = {"out_sharding", "precision", "preferred_element_type", "_dot_general"}
    mine = inspect.signature(ours).parameters
    for name, param in inspect.signature(theirs).parameters.items():
        if name in ignored or param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        assert name in mine, name
        assert mine[name].default == param.default, name


# =========================================================================== sum, prod


@pytest.mark.parametrize("name", ["sum", "prod"])
@pytest.mark.parametrize("dtype", ["float32", "float16", "int8", "int32", "bool"])
def test_accumulation_with_where_and_initial(name, dtype):
    x = rand((3, 4), dtype, -2, 2)
    m = mask((3, 4))
    check(lambda l, a, w: getattr(l.np, name)(a, axis=1, where=w), x, m, rtol=2e-3)
    check(lambda l, a: getattr(l.np, name)(a, initial=2), x, rtol=2e-3)
    check(
        lambda l, a, w: getattr(l.np, name)(a, axis=0, keepdims=True, where=w, initial=3),
        x,
        m,
        rtol=2e-3,
    )


@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "int64", "uint8", "bool", "float16"])
def test_promote_integers_false_keeps_narrow_types(dtype):
    x = rand((5, 6), dtype, 0, 100)  # int8 sums wrap, as in jax
    check(lambda l, a: l.np.sum(a, axis=0, promote_integers=False), x, rtol=2e-3)
    check(lambda l, a: l.np.prod(a, axis=1, promote_integers=False), x, rtol=2e-3)
    check(lambda l, a: l.np.sum(a, promote_integers=False, initial=300), x, rtol=2e-3)


def test_unsigned_sum_with_promotion_is_refused_clearly():
    with pytest.raises(TypeError, match="uint64"):
        rnp.sum(np.ones(3, np.uint8))
    with pytest.raises(TypeError, match="uint64"):
        rnp.sum(np.ones(3, np.uint8), where=np.ones(3, bool))


@pytest.mark.parametrize("initial", [2.7, -2.7, np.float32(1.5), 2**40, True])
def test_initial_is_converted_to_the_computation_dtype(initial):
    x = rand((4,), "int32", -5, 5)
    check(lambda l, a: l.np.sum(a, initial=initial), x)
    check(lambda l, a: l.np.sum(a, initial=initial, promote_integers=False), x)
    check(lambda l, a: l.np.sum(a.astype("float16"), initial=initial), x, rtol=2e-3)


def test_bool_sum_with_explicit_bool_dtype_and_initial_is_an_or():
    x = np.zeros(3, bool)
    check(lambda l, a: l.np.sum(a, dtype=bool, initial=True), x)
    check(lambda l, a: l.np.prod(a, dtype=bool, initial=True), x)


def test_where_broadcasts_like_jax_and_axis_none_counts_the_array_axes():
    x = rand((4,), "float32")
    check(lambda l, a, w: l.np.sum(a, where=w), x, mask((3, 4)))
    check(lambda l, a, w: l.np.sum(a, where=w), rand((3, 4)), mask((4,)))


def test_traced_initial_and_mask():
    x = rand((2, 5))

    def body(lib, a, w, init):
        return (
            lib.np.sum(a, axis=-1, where=w, initial=init),
            lib.np.max(a, axis=-1, where=w, initial=init),
        )

    check(body, x, mask((2, 5)), np.float32(0.25))


def test_non_scalar_initial_and_non_bool_mask_are_errors():
    x = rand((3,))
    with pytest.raises(ValueError, match=r"initial value must be a scalar.*\(2,\)"):
        rnp.sum(x, initial=np.ones(2))
    with pytest.raises(ValueError, match="initial value must be a scalar"):
        relax.eval_shape(lambda a: rnp.max(a, initial=a), relax.Tensor((3,), "float32"))
    with pytest.raises(TypeError, match="where must be None or a boolean array, got dtype int64"):
        rnp.sum(x, where=np.array([1, 0, 1]))


@given(
    st.lists(st.floats(-10, 10, width=32), min_size=1, max_size=8),
    st.lists(st.booleans(), min_size=8, max_size=8),
)
def test_masked_sum_is_the_sum_of_the_selected_elements(values, selected):
    x = np.asarray(values, np.float32)
    w = np.asarray(selected[: len(values)])
    got = np.asarray(rnp.sum(x, where=w))
    np.testing.assert_allclose(got, np.sum(x[w], dtype=np.float32), rtol=1e-5, atol=1e-5)


# =========================================================================== max, min


@pytest.mark.parametrize("name", ["max", "min"])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "int8", "uint8", "bool"])
def test_extremum_with_initial_and_where(name, dtype):
    x = rand((3, 4), dtype, 0, 50)
    m = mask((3, 4))
    initial = {"bool": name == "min"}.get(dtype, 20)
    check(lambda l, a: getattr(l.np, name)(a, axis=1, initial=initial), x)
    check(lambda l, a, w: getattr(l.np, name)(a, axis=0, where=w, initial=initial), x, m)
    check(lambda l, a, w: getattr(l.np, name)(a, where=w, initial=initial, keepdims=True), x, m)


def test_extremum_of_an_empty_axis_gives_initial():
    empty = np.zeros((0, 3), np.float32)
    check(lambda l, a: l.np.max(a, axis=0, initial=-1.0), empty)
    check(lambda l, a: l.np.min(a, axis=0, initial=7.0), empty)
    f = relax.jit(lambda a: rnp.max(a, axis=0, initial=-1.0))
    spec = relax.Tensor(("n", 3), "float32")
    assert relax.eval_shape(f, spec) == relax.Tensor((3,), "float32")
    np.testing.assert_array_equal(f(empty), [-1.0, -1.0, -1.0])
    x = rand((2, 3))
    np.testing.assert_array_equal(f(x), np.maximum(x.max(axis=0), -1.0))


def test_extremum_over_a_symbolic_axis_with_initial_runs_for_size_zero():
    @relax.jit
    def f(a: relax.Tensor(("n", 3), "float32")):
        return rnp.min(a, axis=0, initial=0.5), rnp.max(a, initial=-2.0)

    low, high = f(np.zeros((0, 3), np.float32))
    np.testing.assert_array_equal(low, [0.5, 0.5, 0.5])
    assert float(high) == -2.0
    x = rand((4, 3), seed=3)
    low, high = f(x)
    np.testing.assert_allclose(low, np.minimum(x.min(axis=0), 0.5))
    np.testing.assert_allclose(high, max(x.max(), -2.0))


@pytest.mark.parametrize("initial", [2.7, 1000, -1000, 1e10, -1e10, float("nan"), float("inf")])
def test_extremum_initial_converts_like_jax(initial):
    x = np.array([-100, -120, 3], np.int8)
    check(lambda l, a: l.np.max(a, initial=initial), x)
    check(lambda l, a: l.np.min(a, initial=initial), x)


def test_nan_initial_propagates_for_floats():
    check(lambda l, a: l.np.max(a, initial=float("nan")), rand((3,)))


def test_extremum_where_without_initial_is_refused_like_jax():
    with pytest.raises(ValueError, match="does not have an identity.*specify 'initial'"):
        rnp.max(rand((3,)), where=mask((3,)))
    with pytest.raises(ValueError, match="does not have an identity"):
        rnp.min(rand((3,)), where=mask((3,)))


# =========================================================================== mean, var


@pytest.mark.parametrize("dtype", ["float32", "float16", "int32", "int64", "bool"])
def test_mean_and_var_with_where(dtype):
    x = rand((4, 5), dtype, -3, 3)
    m = mask((4, 5))
    tol = {"rtol": 2e-3, "atol": 2e-3}
    check(lambda l, a, w: l.np.mean(a, axis=1, where=w), x, m, **tol)
    check(lambda l, a, w: l.np.mean(a, where=w, keepdims=True), x, m, **tol)
    check(lambda l, a, w: l.np.var(a, axis=0, where=w), x, m, **tol)
    check(lambda l, a, w: l.np.var(a, axis=1, where=w, ddof=1, keepdims=True), x, m, **tol)


def test_fully_masked_mean_and_var_are_nan():
    x = rand((2, 3))
    w = np.array([[False] * 3, [True, False, True]])
    check(lambda l, a, m: (l.np.mean(a, axis=1, where=m), l.np.var(a, axis=1, where=m)), x, w)
    check(lambda l, a, m: l.np.var(a, axis=1, where=m, ddof=2), x, w)


def test_mean_mask_must_broadcast_to_the_array():
    with pytest.raises(ValueError):
        rnp.mean(rand((3,)), where=mask((2, 3)))


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "float16"])
def test_var_with_a_given_mean(dtype):
    x = rand((3, 4), dtype, -4, 4)
    mu = rand((3, 1), "float32", seed=5)
    tol = {"rtol": 2e-3, "atol": 2e-3}
    check(lambda l, a, m: l.np.var(a, axis=1, mean=m), x, mu, **tol)
    check(lambda l, a: l.np.var(a, mean=0.5, ddof=1), x, **tol)
    check(lambda l, a, m, w: l.np.var(a, axis=1, mean=m, where=w), x, mu, mask((3, 4)), **tol)


def test_var_with_where_over_symbolic_shapes():
    @relax.jit
    def f(a: relax.Tensor(("n", "k"), "float32"), w: relax.Tensor(("n", "k"), "bool")):
        return rnp.var(a, axis=1, where=w), rnp.mean(a, where=w)

    for n, k in ((3, 5), (1, 1), (4, 0)):
        x, m = rand((n, k), seed=n), mask((n, k), seed=k)
        want = (jnp.var(x, axis=1, where=m), jnp.mean(x, where=m))
        assert_like_jax(f(x, m), want, 1e-5, 1e-5)


# =========================================================================== take


@pytest.mark.parametrize(
    "dtype, fill",
    [
        ("float32", 7.5),
        ("float32", 1e40),
        ("int8", 7),
        ("int8", 300),
        ("int8", 2.7),
        ("int8", -2.7),
        ("uint8", -1),
        ("bool", False),
        ("bool", 2),
        ("float16", np.float32(3)),
    ],
)
def test_take_fill_value(dtype, fill):
    a = rand((3, 4), dtype, -5, 5)
    indices = np.array([[0, 5], [-1, -6]])
    check(lambda l, x, i: l.np.take(x, i, axis=1, fill_value=fill), a, indices)
    check(lambda l, x, i: l.np.take(x, i, fill_value=fill), a, indices)


def test_take_default_fill_and_hints():
    a = rand((5,), "int32", -5, 5)
    indices = np.array([0, 9, -5, -6, 4])
    check(lambda l, x, i: l.np.take(x, i), a, indices)
    check(lambda l, x, i: l.np.take(x, i, unique_indices=True, indices_are_sorted=True), a, indices)
    check(lambda l, x, i: l.np.take(x.astype("float64"), i, mode="fill"), a, indices)


@pytest.mark.parametrize("mode", ["clip", "wrap"])
def test_take_fill_value_is_ignored_outside_fill_mode(mode):
    a = rand((3, 4))
    indices = np.array([0, 5, -1, -9])
    check(lambda l, x, i: l.np.take(x, i, axis=0, mode=mode, fill_value=7.0), a, indices)


def test_take_fill_value_over_a_symbolic_axis():
    @relax.jit
    def f(x: relax.Tensor(("n",), "int64"), i: relax.Tensor(("m",), "int64")):
        return rnp.take(x, i, fill_value=-1)

    indices = np.array([0, 3, -1, -4])
    for n in (1, 3, 5):
        x = np.arange(n, dtype=np.int64) * 10
        np.testing.assert_array_equal(f(x, indices), jnp.take(x, indices, fill_value=-1))


def test_take_errors():
    a = rand((3,))
    with pytest.raises(ValueError, match="invalid mode 'raise'"):
        rnp.take(a, np.array([0]), mode="raise")
    with pytest.raises(ValueError, match="invalid mode 'bogus'"):
        rnp.take(a, np.array([0]), mode="bogus")
    with pytest.raises(ValueError, match=r"fill_value must be a scalar.*\(2,\)"):
        rnp.take(a, np.array([0]), fill_value=np.ones(2))
    with pytest.raises(TypeError, match="fill_value must be a static scalar"):
        relax.eval_shape(
            lambda x: rnp.take(x, np.array([0]), fill_value=x[0]), relax.Tensor((3,), "float32")
        )


# =========================================================================== reshape, einsum


def test_reshape_copy_and_einsum_optimize_are_accepted():
    x = rand((2, 6))
    for copy in (None, True, False):
        check(lambda l, a, copy=copy: l.np.reshape(a, (3, 4), copy=copy), x)
    for optimize in ("auto", "greedy", "optimal", True, False):
        check(
            lambda l, a, optimize=optimize: l.np.einsum("ij,kj->ik", a, a, optimize=optimize),
            x,
            rtol=1e-5,
        )
    with pytest.raises(TypeError, match="copy must be None, True or False"):
        rnp.reshape(x, (12,), copy="yes")


# =========================================================================== softmax


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
@pytest.mark.parametrize("axis", [-1, 0, (0, 2), None])
def test_masked_softmax(name, axis):
    x = rand((2, 3, 4), seed=7)
    w = mask((2, 3, 4), seed=8)
    w[0, 1] = False  # a fully masked row along the last axis
    check(lambda l, a, m: getattr(l.nn, name)(a, axis=axis, where=m), x, w, rtol=1e-5)


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_masked_softmax_broadcast_mask_and_fully_masked_rows(name):
    x = rand((2, 3, 4), seed=9)
    w = np.ones((2, 1, 4), bool)
    w[0] = False
    w[1, 0, 2] = False
    check(lambda l, a, m: getattr(l.nn, name)(a, where=m), x, w, rtol=1e-5)
    check(lambda l, a, m: getattr(l.nn, name)(a.astype("float16"), where=m), x, w, rtol=2e-3)


def test_masked_softmax_over_a_symbolic_row():
    @relax.jit
    def f(x: relax.Tensor(("n", "k"), "float32"), w: relax.Tensor((1, "k"), "bool")):
        return rnn.softmax(x, where=w)

    for k in (1, 4, 0):
        x, w = rand((3, k), seed=k), mask((1, k), seed=k + 1)
        assert_like_jax(f(x, w), jax.nn.softmax(x, where=w), 1e-5, 1e-5)


# =========================================================================== attention


def _qkv(b=2, t=5, s=6, n=4, k=2, h=8, dtype="float32", seed=20):
    q = rand((b, t, n, h), dtype, -1, 1, seed)
    kk = rand((b, s, k, h), dtype, -1, 1, seed + 1)
    v = rand((b, s, k, h), dtype, -1, 1, seed + 2)
    return q, kk, v


@pytest.mark.parametrize("window", [0, 1, (2, 0), (0, 3), (1, 2)])
@pytest.mark.parametrize("causal", [False, True])
def test_attention_local_window(window, causal):
    def body(lib, q, k, v):
        return lib.nn.dot_product_attention(q, k, v, is_causal=causal, local_window_size=window)

    check(body, *_qkv(), rtol=1e-5, atol=1e-5)


def test_attention_sequence_lengths():
    q, k, v = _qkv()
    q_len = np.array([3, 5], np.int32)
    kv_len = np.array([6, 0], np.int32)  # batch 1 attends to no key: uniform, as jax

    def body(lib, q, k, v, ql, kl):
        return (
            lib.nn.dot_product_attention(q, k, v, query_seq_lengths=ql),
            lib.nn.dot_product_attention(q, k, v, key_value_seq_lengths=kl),
            lib.nn.dot_product_attention(
                q, k, v, query_seq_lengths=ql, key_value_seq_lengths=kl, is_causal=True
            ),
        )

    check(body, q, k, v, q_len, kv_len, rtol=1e-5, atol=1e-5)


def test_attention_all_masks_together_with_bias():
    q, k, v = _qkv(seed=30)
    bias = rand((1, 4, 5, 6), seed=33)
    user_mask = mask((2, 1, 5, 6), seed=34)

    def body(lib, q, k, v, bias, m, ql, kl):
        return lib.nn.dot_product_attention(
            q,
            k,
            v,
            bias,
            m,
            query_seq_lengths=ql,
            key_value_seq_lengths=kl,
            local_window_size=(2, 1),
            scale=0.3,
        )

    lengths = np.array([4, 2], np.int32), np.array([5, 6], np.int32)
    check(body, q, k, v, bias, user_mask, *lengths, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_attention_return_residual(dtype):
    q, k, v = _qkv(dtype=dtype, seed=40)
    tol = {"rtol": 5e-3, "atol": 5e-3} if dtype == "float16" else {"rtol": 1e-5, "atol": 1e-5}

    def body(lib, q, k, v, m):
        return (
            lib.nn.dot_product_attention(q, k, v, return_residual=True),
            lib.nn.dot_product_attention(q, k, v, mask=m, is_causal=True, return_residual=True),
        )

    check(body, q, k, v, mask((2, 4, 5, 6), seed=41), **tol)


def test_attention_return_residual_with_sequence_lengths_and_rank_3():
    q, k, v = _qkv(seed=50)

    def body(lib, q, k, v, ql):
        return lib.nn.dot_product_attention(
            q, k, v, query_seq_lengths=ql, local_window_size=1, return_residual=True
        )

    check(body, q, k, v, np.array([2, 5], np.int32), rtol=1e-5, atol=1e-5)

    def rank3(lib, q, k, v, ql):
        return lib.nn.dot_product_attention(
            q[0], k[0], v[0], query_seq_lengths=ql, return_residual=True
        )

    check(rank3, q, k, v, np.array([3], np.int32), rtol=1e-5, atol=1e-5)


def test_attention_masks_over_symbolic_lengths():
    spec = relax.Tensor(("b", "t", 4, 8), "float32")
    kv = relax.Tensor(("b", "s", 2, 8), "float32")

    @relax.jit
    def f(q: spec, k: kv, v: kv, ql: relax.Tensor(("b",), "int32")):
        return rnn.dot_product_attention(
            q, k, v, query_seq_lengths=ql, local_window_size=(1, 2), return_residual=True
        )

    out, residual = relax.eval_shape(f)
    assert out == spec and residual == relax.Tensor(("b", "t", 4), "float32")
    for t, s in ((5, 6), (1, 3)):
        q, k, v = _qkv(t=t, s=s, seed=t)
        ql = np.array([t, 1], np.int32)
        want = jax.nn.dot_product_attention(
            q, k, v, query_seq_lengths=ql, local_window_size=(1, 2), return_residual=True
        )
        assert_like_jax(f(q, k, v, ql), want, 1e-5, 1e-5)


def test_attention_implementation_argument():
    q, k, v = _qkv()
    for implementation in (None, "xla"):
        check(
            lambda l, q, k, v, impl=implementation: l.nn.dot_product_attention(
                q, k, v, implementation=impl
            ),
            q,
            k,
            v,
            rtol=1e-5,
            atol=1e-5,
        )
    with pytest.raises(ValueError, match="implementation='cudnn'.*not available"):
        rnn.dot_product_attention(q, k, v, implementation="cudnn")
    with pytest.raises(ValueError, match="unsupported implementation 'tpu'"):
        rnn.dot_product_attention(q, k, v, implementation="tpu")


def test_attention_keyword_errors():
    q, k, v = _qkv()
    with pytest.raises(TypeError, match="query_seq_lengths dtype should be int32, got int64"):
        rnn.dot_product_attention(q, k, v, query_seq_lengths=np.array([1, 2]))
    with pytest.raises(relax.ShapeError, match=r"key_value_seq_lengths should have shape \(B,\)"):
        rnn.dot_product_attention(q, k, v, key_value_seq_lengths=np.array([1, 2, 3], np.int32))
    with pytest.raises(TypeError, match="local_window_size must be an int or a"):
        rnn.dot_product_attention(q, k, v, local_window_size=(1, 2, 3))
