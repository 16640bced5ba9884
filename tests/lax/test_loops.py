"""lax.fori_loop, lax.while_loop and lax.scan against jax: symbolic trip counts (zero
included), data-dependent conditions, pytree carries, nesting, closures, weak types, one
executable for every trip count, and the errors for carries a body changes."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from lax_oracle import Both, rand

import relaxjax as relax
import relaxjax.lax as lax
import relaxjax.numpy as rnp

N = relax.Tensor(("n",), "float32")
NM = relax.Tensor(("n", "m"), "float32")
I64 = relax.Tensor((), "int64")


# --------------------------------------------------------------------------- fori_loop


def _power_sum(L, m, x: N):
    # trip count = a symbolic dim; the body closes over x
    return L.fori_loop(0, x.shape[0], lambda i, acc: acc + x * i.astype("float32"), m.zeros_like(x))


def test_fori_symbolic_trip_count_including_zero_one_executable():
    both = Both(_power_sum)
    for n in (0, 1, 3, 7):
        both.check(rand((n,), seed=n))
    assert both.ours.cache_size() == 1


def _traced_bounds(L, m, x: N, lo: I64, hi: I64):
    return L.fori_loop(lo, hi, lambda i, c: c * 0.5 + i, x)


_TRACED_BOUNDS = Both(_traced_bounds)


@given(st.integers(-3, 8), st.integers(-3, 8))
def test_fori_traced_bounds(lo, hi):
    _TRACED_BOUNDS.check(rand((3,)), np.int64(lo), np.int64(hi))
    assert _TRACED_BOUNDS.ours.cache_size() == 1


def _index_dtype(L, m, x: N, hi: relax.Tensor((), "int32")):
    # a Python lower bound takes the traced bound's int32; the index is int32
    return L.fori_loop(0, hi, lambda i, c: (c[0] + i, c[1] + x), (m.zeros((), "int32"), x))


def test_fori_index_dtype_follows_jax():
    both = Both(_index_dtype)
    out = both.check(rand((2,)), np.int32(4))
    assert out[0].dtype == np.int32


def test_fori_bounds_of_different_types_raise():
    def bad(x: N):
        return lax.fori_loop(x[0].astype("int32"), x[0].astype("int64"), lambda i, c: c, x)

    with pytest.raises(TypeError, match="must have equal types, got int32 and int64"):
        relax.jit(bad).trace()


# --------------------------------------------------------------------------- while_loop


def _collatz(L, m, n: I64):
    # a data-dependent condition: the trip count is only known at run time
    def body(s):
        k, steps = s
        k = L.cond(k % 2 == 0, lambda: k // 2, lambda: 3 * k + 1)
        return k, steps + 1

    return L.while_loop(lambda s: s[0] != 1, body, (n, 0))


def test_while_data_dependent_condition():
    both = Both(_collatz)
    for n in (1, 6, 27):
        both.check(np.int64(n))
    assert both.ours.cache_size() == 1


def _doubling(L, m, x: N):
    def keep_going(s):
        return (s[1].sum() < 100.0) & (s[0] < 10)

    return L.while_loop(keep_going, lambda s: (s[0] + 1, s[1] * 2.0 + 1.0), (0, x))


def test_while_zero_iterations_and_pytree_carry():
    both = Both(_doubling)
    both.check(np.full((3,), 50.0, np.float32))  # the condition is false at once
    both.check(np.full((3,), 0.5, np.float32))
    both.check(np.zeros((0,), np.float32))
    assert both.ours.cache_size() == 1


# --------------------------------------------------------------------------- scan


def _cumulative(L, m, xs: NM, c0: relax.Tensor(("m",), "float32")):
    def step(c, x):
        c = c * 0.5 + x
        return c, {"sum": c.sum(), "twice": x * 2.0}

    return L.scan(step, c0, xs)


def test_scan_symbolic_length_stacks_ys():
    both = Both(_cumulative)
    for n in (0, 1, 4):
        both.check(rand((n, 3), seed=n), rand((3,), seed=9))
    assert both.ours.cache_size() == 1


def _reverse(L, m, xs: N):
    return L.scan(lambda c, x: (c + x, (c, x * c)), 0.0, xs, reverse=True)


def test_scan_reverse():
    both = Both(_reverse)
    for n in (0, 5):
        both.check(rand((n,), seed=n))


def _pytree_xs(L, m, a: NM, b: N):
    def step(carry, x):
        total, count = carry
        row, weight = x["row"], x["w"]
        return (total + row * weight, count + 1), row.max()

    return L.scan(step, (m.zeros_like(a[0]), 0), {"row": a, "w": b})


def test_scan_pytree_carry_and_xs():
    both = Both(_pytree_xs)
    both.check(rand((4, 2)), rand((4,), seed=1))


def _length_only(L, m, x: N):
    return L.scan(lambda c, _: (c * 2.0, c.sum()), x, None, length=3)


def test_scan_without_xs_takes_length():
    Both(_length_only).check(rand((2,)))


def _symbolic_length(L, m, x: N):
    return L.scan(lambda c, _: (c + 1.0, c), 0.0, None, length=x.shape[0])


def test_scan_length_symbolic_dim():
    both = Both(_symbolic_length)
    for n in (0, 3):
        both.check(rand((n,)))
    assert both.ours.cache_size() == 1


def test_scan_argument_errors():
    x = relax.Tensor((3,), "float32")
    with pytest.raises(ValueError, match="`length` argument of 5 which disagrees"):
        relax.eval_shape(lambda x: lax.scan(lambda c, a: (c, a), 0.0, x, length=5), x)
    with pytest.raises(ValueError, match="different leading axis sizes: 3, 2"):
        relax.eval_shape(lambda x: lax.scan(lambda c, a: (c, a), 0.0, (x, x[:2])), x)
    with pytest.raises(ValueError, match="no values to scan over and `length` not provided"):
        relax.eval_shape(lambda x: lax.scan(lambda c, a: (c, a), 0.0, None), x)
    with pytest.raises(TypeError, match="body output must be a pair, got float32"):
        relax.eval_shape(lambda x: lax.scan(lambda c, a: c + a, x[0], x), x)


# --------------------------------------------------------------------------- nesting, closures


def _nested(L, m, x: N, n: I64):
    def outer(i, acc):
        def inner(j, a):
            return L.cond(j % 2 == 0, lambda: a + x * j, lambda: a - i)

        return L.fori_loop(0, i, inner, acc)

    return L.fori_loop(0, n, outer, x)


def test_cond_in_loop_in_loop_closing_over_every_level():
    both = Both(_nested)
    for n in (0, 1, 4):
        both.check(rand((3,)), np.int64(n))
    assert both.ours.cache_size() == 1


def _scan_in_fori(L, m, xs: NM):
    def outer(i, c):
        return L.scan(lambda cc, x: (cc * 0.5 + x + i, cc), c, xs)[0]

    return L.fori_loop(0, 3, outer, xs[0])


def test_scan_inside_fori():
    both = Both(_scan_in_fori)
    for n in (1, 3):
        both.check(rand((n, 2), seed=n))


def _while_in_while(L, m, x: N):
    def body(s):
        k, v = s
        v = L.while_loop(lambda t: t[0] < k, lambda t: (t[0] + 1, t[1] + x), (0, v))[1]
        return k + 1, v

    return L.while_loop(lambda s: s[0] < 4, body, (0, x))


def test_while_inside_while():
    Both(_while_in_while).check(rand((3,)))


def _closure_dims(L, m, x: N):
    n = x.shape[0]  # a symbol of the enclosing function, used inside the body
    return L.fori_loop(0, 2, lambda i, c: c + m.ones((n,), "float32") * n, x)


def test_body_uses_symbols_of_the_enclosing_function():
    both = Both(_closure_dims)
    both.check(rand((3,)))
    both.check(rand((0,)))


def test_jitted_function_called_in_a_body_stays_one_function():
    @relax.jit
    def layer(h, w):
        return rnp.tanh(h @ w)

    @relax.jit
    def model(x: relax.Tensor(("b", 4), "float32"), ws: relax.Tensor(("L", 4, 4), "float32")):
        return lax.scan(lambda h, w: (layer(h, w), None), x, ws)[0]

    x, ws = rand((2, 4)), rand((3, 4, 4), seed=1) * 0.5
    expected = x
    for w in ws:
        expected = np.tanh(expected @ w)
    np.testing.assert_allclose(model(x, ws), expected, rtol=1e-5)
    functions = model.trace().graph_functions()
    assert sorted(functions) == ["layer", "model", "scan_body"]


# --------------------------------------------------------------------------- weak types


def _weak_int_init(L, m, x: N):
    # 0 is a weak int; the body makes it a float: promoted (to a strong float64), as jax
    total = L.fori_loop(0, 3, lambda i, c: c + 1.5, 0)
    return total, x * total


def _weak_stays_weak(L, m, x: N):
    count = L.fori_loop(0, 3, lambda i, c: c + 1, 0)
    return count, x * count


def _weak_meets_float32(L, m, x: N):
    return L.fori_loop(0, 3, lambda i, c: c + x[0], 0.0)


@pytest.mark.parametrize("fn", [_weak_int_init, _weak_stays_weak, _weak_meets_float32])
def test_weak_typed_carries_follow_jax(fn):
    Both(fn).check(rand((3,)))


# --------------------------------------------------------------------------- errors


def test_carry_shape_change_names_the_carry():
    def body(i, c):
        return {"a": c["a"], "b": rnp.concatenate([c["b"], c["b"]])}

    with pytest.raises(TypeError) as info:
        spec = relax.Tensor((3,), "float32")
        relax.eval_shape(lambda x: lax.fori_loop(0, 2, body, {"a": 1.0, "b": x}), spec)
    assert str(info.value) == (
        "fori_loop: the body changes the carry: carry['b'] has type float32[3] before the "
        "body but float32[6] after it, so the shapes do not match. A loop carry keeps "
        "its shape and dtype in every iteration (as in jax): convert or reshape the value "
        "the body returns"
    )


def test_symbolic_carry_dims_equal_for_some_sizes_are_checked_at_run_time():
    # (n * 2,) is (n,) when n == 0: the loop checks it when it runs
    @relax.jit
    def f(x: N):
        return lax.fori_loop(0, 2, lambda i, c: rnp.concatenate([c, c]), x)

    assert f(np.zeros(0, np.float32)).shape == (0,)
    with pytest.raises(
        relax.ShapeError, match=r"carry 0 axis 0 keeps its size: requires n \* 2 == n"
    ):
        f(np.zeros(2, np.float32))


def test_carry_dtype_change_names_the_carry():
    def fn(x):
        return lax.while_loop(
            lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1].astype("float64")), (0, x)
        )

    with pytest.raises(
        TypeError,
        match=r"carry\[1\] has type float32\[n\] before the body but "
        r"float64\[n\] after it, so the dtypes do not match",
    ):
        relax.eval_shape(fn, N)


def test_scan_carry_rank_change():
    with pytest.raises(
        TypeError,
        match=r"scan: the body changes the carry: carry has type "
        r"float32\[\] before the body but float32\[1\] after it",
    ):
        relax.eval_shape(lambda x: lax.scan(lambda c, a: (c + a[None], a), x[0], x), N)


def test_carry_structure_change():
    with pytest.raises(
        TypeError,
        match=r"fori_loop: the body must return the carry in the "
        r"structure it receives .*: \* before the body, \(\*, \*\) after it",
    ):
        relax.eval_shape(lambda x: lax.fori_loop(0, 2, lambda i, c: (c, c), x), N)


def test_while_condition_must_be_a_bool_scalar():
    with pytest.raises(
        TypeError, match=r"cond_fun must return a boolean scalar, but got float32\[n\]"
    ):
        relax.eval_shape(lambda x: lax.while_loop(lambda c: c, lambda c: c + 1.0, x), N)


def test_bad_bounds_and_callables():
    with pytest.raises(TypeError, match="loop bounds must be integers, got float32"):
        relax.eval_shape(lambda x: lax.fori_loop(0, x[0], lambda i, c: c, x), N)
    with pytest.raises(TypeError, match="body_fun argument should be callable"):
        relax.eval_shape(lambda x: lax.fori_loop(0, 1, None, x), N)


def test_carry_dims_that_may_differ_are_checked_at_run_time():
    # the body returns y (m) for the carry x (n): equal only when n == m
    @relax.jit
    def f(x: N, y: relax.Tensor(("m",), "float32")):
        return lax.fori_loop(0, 2, lambda i, c: y * 2.0, x)

    np.testing.assert_allclose(f(rand((3,)), np.ones(3, np.float32)), np.full(3, 2.0))
    with pytest.raises(relax.ShapeError, match="carry 0 axis 0 keeps its size: requires m == n"):
        f(rand((3,)), np.ones(4, np.float32))


# --------------------------------------------------------------------------- shapes, eager


def test_eval_shape():
    carry, ys = relax.eval_shape(
        lambda xs, c0: _cumulative(lax, rnp, xs, c0), NM, relax.Tensor(("m",), "float32")
    )
    assert repr(carry) == 'Tensor((m,), "float32")'
    assert repr(ys["sum"]) == 'Tensor((n,), "float32")'
    assert repr(ys["twice"]) == 'Tensor((n, m), "float32")'


def test_outside_jit_runs_in_python():
    x = rand((3,))
    np.testing.assert_allclose(lax.fori_loop(1, 4, lambda i, c: c * i, x), x * 6)
    assert lax.while_loop(lambda k: k < 5, lambda k: k + 2, 0) == 6
    carry, ys = lax.scan(lambda c, a: (c + a, c * a), 1.0, np.arange(3.0))
    assert carry == 4.0 and ys.tolist() == [0.0, 1.0, 4.0]
    carry, ys = lax.scan(lambda c, a: (c + a, c), 0.0, np.zeros((0,), np.float32))
    assert carry == 0.0 and ys.shape == (0,)
    with pytest.raises(TypeError, match="carry has shape"):
        lax.fori_loop(0, 2, lambda i, c: np.concatenate([c, c]), x)


def test_body_checks_run_only_when_the_body_runs():
    @relax.jit
    def f(x: N, y: relax.Tensor(("m",), "float32"), k: I64):
        return lax.fori_loop(0, k, lambda i, c: c + y.reshape(c.shape), x)  # needs m == n

    x = rand((3,))
    np.testing.assert_allclose(f(x, rand((2,)), np.int64(0)), x)  # never runs: no error
    np.testing.assert_allclose(f(x, np.ones(3, np.float32), np.int64(2)), x + 2)
    with pytest.raises(relax.ShapeError, match="reshape") as info:
        f(x, rand((2,)), np.int64(1))
    assert "c + y.reshape(c.shape)" in str(info.value)  # the body's own line


def test_carry_whose_dims_are_known_only_at_run_time():
    def fn(x, y):
        return lax.fori_loop(0, 2, lambda i, c: c + y, x)  # broadcast(n, m): rank only

    with pytest.raises(
        TypeError,
        match=r"carry has type float32\[n\] before the body but "
        r"float32\[\?\] after it, so its dims are only known at run time",
    ):
        relax.eval_shape(fn, N, relax.Tensor(("m",), "float32"))


def test_with_compound_specs_symbolic_scalars_and_data_dependent_lengths():
    n = relax.sym("n")

    @relax.jit
    def f(x: relax.Tensor((2 * n,), "float32"), m: relax.sym("m")):
        # a symbolic scalar as the trip count, a carry of shape (2n,)
        y = lax.fori_loop(0, m, lambda i, c: c * 2.0 + x[: x.shape[0] // 2].sum(), x)
        # a branch with a data-dependent size inside; a scan over a data-dependent length
        z = lax.cond(x.sum() > 0, lambda: x[x > 0].sum(), lambda: rnp.zeros((), "float32"))
        w = lax.scan(lambda c, r: (c + r, c), 0.0, x[x > 0])[1]
        return y, z, w

    x = np.array([1, -2, 3, 4], np.float32)
    y, z, w = f(x, 3)
    expected = x.copy()
    for _ in range(3):
        expected = expected * 2 + x[:2].sum()
    np.testing.assert_allclose(y, expected)
    assert float(z) == 8.0 and w.tolist() == [0.0, 1.0, 4.0]
    y, z, w = f(np.array([1, -1], np.float32), 0)
    assert y.tolist() == [1.0, -1.0] and float(z) == 0.0 and w.tolist() == [0.0]
    assert f.cache_size() == 1
