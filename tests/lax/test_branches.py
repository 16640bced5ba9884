"""lax.cond and lax.switch against jax: traced and Python predicates, clamped indices,
branches closing over values, one executable for every predicate, results whose dims
are checked at run time or known only after the branch ran, and jax's errors."""

import numpy as np
import pytest
from lax_oracle import Both, rand

import relaxjax as relax
import relaxjax.lax as lax
import relaxjax.numpy as rnp

N = relax.Tensor(("n",), "float32")
I64 = relax.Tensor((), "int64")


def _cond(L, m, x: N, y: N):
    return L.cond(
        x.sum() > 0, lambda a: (a * y, a.sum()), lambda a: (a - y, a.max(initial=-1.0)), x
    )


def test_cond_both_predicates_one_executable():
    both = Both(_cond)
    for seed in range(4):
        both.check(rand((3,), seed=seed), rand((3,), seed=10 + seed))
    both.check(rand((0,)), rand((0,)))
    assert both.ours.cache_size() == 1


def _numeric_pred(L, m, x: N, p: I64):
    return L.cond(p, lambda: x + 1.0, lambda: x - 1.0), L.cond(x[0], lambda: 1, lambda: 2)


@pytest.mark.parametrize("p", [0, 1, -7])
def test_cond_numeric_predicate_is_nonzero(p):
    Both(_numeric_pred).check(rand((2,)), np.int64(p))


def _python_pred(L, m, x: N):
    # a Python bool still traces both branches (as jax does)
    return L.cond(True, lambda: x * 2.0, lambda: x), L.cond(0, lambda: x * 2.0, lambda: x)


def test_cond_python_predicate():
    both = Both(_python_pred)
    both.check(rand((3,)))
    names = sorted(both.ours.trace().graph_functions())
    assert names.count("cond_true") + names.count("cond_true_1") == 2


def _switch(L, m, i: I64, x: N):
    branches = [lambda a: a + 1.0, lambda a: a * 2.0, lambda a: -a]
    return L.switch(i, branches, x)


def test_switch_clamps_out_of_range_indices():
    both = Both(_switch)
    for i in (-5, 0, 1, 2, 3, 2**40):
        both.check(np.int64(i), rand((3,)))
    assert both.ours.cache_size() == 1


def _switch_python(L, m, x: N):
    return [L.switch(k, [lambda: x, lambda: x * 2.0, lambda: x * 3.0]) for k in (-3, 1, 9)]


def test_switch_python_index():
    Both(_switch_python).check(rand((2,)))


def test_switch_of_one_branch_calls_it():
    @relax.jit
    def f(x: N):
        return lax.switch(x.shape[0], [lambda a: a + 1.0], x)

    np.testing.assert_allclose(f(np.zeros(2, np.float32)), np.ones(2))
    assert list(f.trace().graph_functions()) == ["f"]


def _cond_in_loop(L, m, x: N, n: I64):
    def body(i, c):
        return L.cond(
            i % 3 == 0, lambda: c * 0.5, lambda: L.cond(i % 3 == 1, lambda: c + x, lambda: c - 1.0)
        )

    return L.fori_loop(0, n, body, x)


def test_nested_cond_in_a_loop():
    both = Both(_cond_in_loop)
    for n in (0, 1, 5):
        both.check(rand((3,)), np.int64(n))
    assert both.ours.cache_size() == 1


def test_branch_dims_that_may_differ_are_checked_at_run_time():
    @relax.jit
    def f(p: relax.Tensor((), "bool"), x: N, y: relax.Tensor(("m",), "float32")):
        return lax.cond(p, lambda: x, lambda: y * 2.0)  # jax refuses n vs m; we check it

    x = rand((3,))
    np.testing.assert_allclose(f(np.bool_(True), x, x), x)
    np.testing.assert_allclose(f(np.bool_(False), x, x), x * 2)
    with pytest.raises(relax.ShapeError, match="the branches' results have equal shapes"):
        f(np.bool_(True), x, np.ones(4, np.float32))


def test_branch_result_known_only_after_it_ran():
    @relax.jit
    def f(p: relax.Tensor((), "bool"), x: N, y: relax.Tensor(("m",), "float32")):
        # broadcasting (n,) with (m,) has a size known only at run time
        return lax.cond(p, lambda: x + y, lambda: x * 2.0) + 1.0

    x = rand((3,))
    np.testing.assert_allclose(f(np.bool_(True), x, np.ones(1, np.float32)), x + 2.0)
    np.testing.assert_allclose(f(np.bool_(False), x, np.ones(1, np.float32)), x * 2 + 1)
    assert f.cache_size() == 1


# --------------------------------------------------------------------------- errors


def test_branch_dtype_mismatch():
    with pytest.raises(TypeError) as info:
        relax.eval_shape(lambda x: lax.cond(x[0] > 0, lambda: x, lambda: x.astype("float64")), N)
    assert str(info.value) == (
        "cond branches must have equal output types but they differ: the output of true_fun "
        "has type float32[n] but the corresponding output of false_fun has type float64[n], "
        "so the dtypes do not match"
    )


def test_branch_structure_mismatch():
    with pytest.raises(
        TypeError,
        match=r"cond branch outputs must have the same pytree "
        r"structure, but they differ: true_fun returns \* but false_fun returns \(\*, \*\)",
    ):
        relax.eval_shape(lambda x: lax.cond(x[0] > 0, lambda: x, lambda: (x, x)), N)


def test_branch_shape_mismatch():
    with pytest.raises(
        TypeError,
        match=r"switch branches must have equal output types .* "
        r"output of branch 0 has type float32\[3\] but the corresponding output "
        r"of branch 1 has type float32\[4\], so the shapes do not match",
    ):
        relax.eval_shape(
            lambda x: lax.switch(0, [lambda: x, lambda: rnp.concatenate([x, x[:1]])]),
            relax.Tensor((3,), "float32"),
        )


def test_bad_predicates_and_indices():
    with pytest.raises(
        TypeError, match=r"cond: pred must be a scalar, got a value of Tensor\(\(n,\), \"bool\"\)"
    ):
        relax.eval_shape(lambda x: lax.cond(x > 0, lambda: x, lambda: x), N)
    with pytest.raises(TypeError, match="switch: index type must be an integer, got float32"):
        relax.eval_shape(lambda x: lax.switch(x[0], [lambda: x, lambda: x]), N)
    with pytest.raises(TypeError, match="switch: index type must be an integer"):
        relax.eval_shape(lambda x: lax.switch(1.5, [lambda: x, lambda: x]), N)
    with pytest.raises(ValueError, match="empty branch sequence"):
        relax.eval_shape(lambda x: lax.switch(0, [], x), N)
    with pytest.raises(TypeError, match="true_fun and false_fun arguments should be callable"):
        lax.cond(True, 1, 2)


def test_outside_jit_runs_one_branch():
    calls = []
    result = lax.cond(
        np.float32(0.0), lambda: calls.append("t") or 1, lambda: calls.append("f") or 2
    )
    assert result == 2 and calls == ["f"]
    assert lax.switch(7, [lambda: "a", lambda: "b"]) == "b"


def test_a_branch_not_taken_never_fails_on_its_checks():
    @relax.jit
    def f(p: relax.Tensor((), "bool"), x: N, y: relax.Tensor(("m",), "float32")):
        return lax.cond(p, lambda: x + y[:1] * y.sum(), lambda: x * 2.0)

    x = rand((3,))
    np.testing.assert_allclose(f(np.bool_(False), x, np.zeros(0, np.float32)), x * 2)
    with pytest.raises(relax.ShapeError):
        f(np.bool_(True), x, np.zeros(0, np.float32))
