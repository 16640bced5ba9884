"""``x.at[key]`` functional updates of traced arrays, against jax: every method, index
form, value broadcasting, jax's dtype rules, modes, repeated indices, and bad input."""

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import relaxjax as relax
import relaxjax.numpy as rnp
from relaxjax.errors import ShapeError, TraceError

T = relax.Tensor

METHODS = ["add", "subtract", "multiply", "min", "max"]


def _jax(x, key, method, values, **options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # jax warns about unsafe casts
        return getattr(jnp.asarray(x).at[key], method)(values, **options)


KEYS = [
    lambda i: i,
    lambda i: (slice(None), i),
    lambda i: (i, slice(1, None)),
    lambda i: (1, i),
    lambda i: (i[:, None], i),
    lambda i: (slice(None, None, -2), [0, -1]),
    lambda i: (Ellipsis, 2),
    lambda i: (None, i, None),
    lambda i: (i, None, 0),
    lambda i: (slice(None), None),
    lambda i: 2,
    lambda i: (slice(None), i > 0),
    lambda i: (slice(2), np.array([True, False, True])),
]


def _key_method_params() -> list:
    """Every key with add and set by default, every method for the first keys; the whole
    product under the slow marker."""
    params = []
    for k, key in enumerate(KEYS):
        for method in [*METHODS, "set"]:
            fast = method in ("add", "set") or k < 3
            marks = () if fast else pytest.mark.slow
            params.append(pytest.param(key, method, id=f"{k}-{method}", marks=marks))
    return params


@pytest.mark.parametrize(("key", "method"), _key_method_params())
def test_updates_match_jax(key, method):
    """Repeated and out-of-range indices included (i has values in [-6, 6)); ``set`` uses
    one value, since jax leaves the order of repeated writes unspecified."""

    @relax.jit
    def f(x: T(("n", 3), "float32"), i: T((3,), "int32"), v):
        return getattr(x.at[key(i)], method)(v)

    for n, seed in ((4, 0), (6, 1)):
        rng = np.random.default_rng(seed)
        x = rng.uniform(-2, 2, (n, 3)).astype(np.float32)
        i = rng.integers(-6, 6, 3).astype(np.int32)
        value = np.float32(1.5) if method == "set" else rng.uniform(-2, 2, ()).astype(np.float32)
        expected = _jax(x, key(jnp.asarray(i)), method, value)
        np.testing.assert_allclose(f(x, i, value), expected, rtol=1e-6)
    assert f.cache_size() == 1


@settings(max_examples=25)
@given(
    method=st.sampled_from(METHODS),
    mode=st.sampled_from([None, "drop", "clip", "promise_in_bounds", "fill"]),
    wrap=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_values_broadcast_and_modes_match_jax(method, mode, wrap, seed):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-2, 2, (5, 4)).astype(np.float32)
    i = rng.integers(-7, 7, (2, 3)).astype(np.int64)
    values = rng.uniform(-2, 2, (2, 3, 1)).astype(np.float32)

    @relax.jit
    def f(x, i, v):
        return getattr(x.at[i], method)(v, mode=mode, wrap_negative_indices=wrap)

    expected = _jax(x, i, method, values, mode=mode, wrap_negative_indices=wrap)
    np.testing.assert_allclose(f(x, i, values), expected, rtol=1e-6)


def test_set_with_repeated_indices_keeps_the_last_value():
    out = relax.jit(lambda x, i, v: x.at[i].set(v))(
        np.zeros(4, np.float32), np.array([1, 3, 1, -3]), np.array([1, 2, 3, 4], np.float32)
    )
    np.testing.assert_array_equal(out, [0, 4, 0, 2])


@pytest.mark.parametrize(
    "x, method, value",
    [
        (np.array([1, 5], np.int32), "add", -0.6),  # computed in float64: 0.4 -> 0
        (np.array([1, 5], np.int32), "set", 2.7),
        (np.array([1, 5], np.int32), "set", 2**40),  # weak: wrapped to int32 (0)
        (np.array([1, 5], np.int32), "max", 2**40),  # max(1, 0)
        (np.array([1, 5], np.int8), "add", 300),
        (np.array([1, 5], np.uint8), "subtract", 3),
        (np.array([True, False]), "max", True),
        (np.array([True, False]), "set", 0),
        (np.array([1.0, 2.0], np.float16), "add", np.float32(1e5)),
        (np.array([1.0, 2.0], np.float32), "multiply", np.float64(1 / 3)),
        (np.array([1.0, 2.0], np.float32), "min", np.nan),
        (np.array([1, 5], np.int32), "divide", 2.5),  # int x: float32 result, as jax
        (np.array([1.0, 2.0], np.float32), "divide", 2),
        (np.array([2, 5], np.int64), "power", 3),
        (np.array([2.0, 5.0], np.float32), "power", 0.5),
    ],
)
def test_values_are_converted_as_jax_converts_them(x, method, value):
    ours = relax.jit(lambda x: getattr(x.at[0], method)(value))(x)
    expected = _jax(x, 0, method, value)
    assert ours.dtype == expected.dtype, (ours.dtype, expected.dtype)
    np.testing.assert_allclose(ours.astype(np.float64), np.asarray(expected, np.float64))


def test_repeated_indices_accumulate_for_divide_and_power():
    x = np.array([8.0, 2.0], np.float32)
    f = relax.jit(lambda x, i: (x.at[i].divide(2.0), x.at[i].power(2.0)))
    i = np.array([0, 0, 0])
    for ours, theirs in zip(f(x, i), (_jax(x, i, "divide", 2.0), _jax(x, i, "power", 2.0))):
        np.testing.assert_allclose(ours, theirs)


def test_get_matches_jax_modes_and_fill_values():
    x = np.arange(6.0, dtype=np.float32).reshape(3, 2)
    i = np.array([-4, -1, 0, 5])

    @relax.jit
    def f(x, i):
        ref = x.at[i, 1]
        return (
            ref.get(),
            ref.get(mode="fill", fill_value=-1.0),
            ref.get(mode="fill"),
            ref.get(mode="clip", wrap_negative_indices=False),
            ref.get(mode="promise_in_bounds", unique_indices=True, indices_are_sorted=True),
        )

    ref = jnp.asarray(x).at[i, 1]
    expected = (
        ref.get(),
        ref.get(mode="fill", fill_value=-1.0),
        ref.get(mode="fill"),
        ref.get(mode="clip", wrap_negative_indices=False),
        ref.get(mode="promise_in_bounds"),
    )
    for ours, theirs in zip(f(x, i), expected):
        np.testing.assert_array_equal(ours, theirs)


def test_apply_with_unique_indices():
    x = np.arange(6.0, dtype=np.float32)

    @relax.jit
    def f(x, i):
        return (
            x.at[1:4].apply(lambda v: v * 10),
            x.at[np.array([0, -1])].apply(lambda v: -v),
            x.at[i].apply(lambda v: v + 1, unique_indices=True),
        )

    i = np.array([2, 5])
    expected = (
        jnp.asarray(x).at[1:4].apply(lambda v: v * 10),
        jnp.asarray(x).at[np.array([0, -1])].apply(lambda v: -v),
        jnp.asarray(x).at[i].apply(lambda v: v + 1),
    )
    for ours, theirs in zip(f(x, i), expected):
        np.testing.assert_array_equal(ours, theirs)


def test_traced_masks_and_symbolic_indices():
    @relax.jit
    def f(x: T(("n", 3), "float32")):
        n = x.shape[0]
        return x.at[x[:, 0] > 0].set(0.0), x.at[n - 1].add(1.0), x.at[: n // 2].multiply(2.0)

    for n in (1, 4, 5):
        x = np.random.default_rng(n).uniform(-1, 1, (n, 3)).astype(np.float32)
        xj = jnp.asarray(x)
        expected = (
            xj.at[x[:, 0] > 0].set(0.0),
            xj.at[n - 1].add(1.0),
            xj.at[: n // 2].multiply(2.0),
        )
        for ours, theirs in zip(f(x), expected):
            np.testing.assert_array_equal(ours, theirs)
    assert f.cache_size() == 1


def test_kv_cache_write_at_a_traced_position():
    @relax.jit
    def step(cache: T((2, "t", 4), "float32"), kv: T((2, 4), "float32"), pos: T((), "int32")):
        return cache.at[:, pos].set(kv)

    cache = np.zeros((2, 5, 4), np.float32)
    kv = np.ones((2, 4), np.float32)
    out = step(cache, kv, np.int32(3))
    np.testing.assert_array_equal(out, jnp.asarray(cache).at[:, 3].set(kv))
    np.testing.assert_array_equal(cache, 0)  # functional: the argument is unchanged


def test_bad_updates_are_refused_with_their_message():
    spec = T((4, 3), "float32")
    with pytest.raises(ShapeError, match=r"broadcast_to: .*\(3,\).* \(4,\)"):
        relax.eval_shape(lambda x: x.at[:, 0].set(np.ones(3, np.float32)), spec)
    with pytest.raises(ValueError, match='Unknown gather mode "bogus"'):
        relax.eval_shape(lambda x: x.at[0].set(1.0, mode="bogus"), spec)
    with pytest.raises(NotImplementedError, match="mode 'one_hot' is not supported"):
        relax.eval_shape(lambda x: x.at[0].get(mode="one_hot"), spec)
    with pytest.raises(NotImplementedError, match="out_sharding is not supported"):
        relax.eval_shape(lambda x: x.at[0].add(1.0, out_sharding="x"), spec)
    with pytest.raises(TypeError, match="scatter: add does not accept bool values"):
        relax.eval_shape(lambda x: x.at[0].add(True), T((4,), "bool"))
    with pytest.raises(TypeError, match="Indexer must have integer or boolean type"):
        relax.eval_shape(lambda x: x.at[0.5].set(1.0), spec)
    with pytest.raises(TypeError, match=r"x.at\[key\].set: values must be an array or a number"):
        relax.eval_shape(lambda x: x.at[0].set("a"), spec)
    with pytest.raises(TypeError, match="values of dtype complex128 are not supported"):
        relax.eval_shape(lambda x: x.at[0].set(np.ones(3, complex)), spec)
    with pytest.raises(TypeError, match="get: fill_value must be a bool, int or float"):
        relax.eval_shape(lambda x: x.at[0].get(mode="fill", fill_value="a"), spec)
    with pytest.raises(TraceError, match="indexing needs the rank of the array"):
        relax.eval_shape(lambda x: x.at[0].set(1.0), T(dtype="float32"))
    with pytest.raises(NotImplementedError, match="indices that may repeat"):
        relax.eval_shape(lambda x, i: x.at[i].apply(lambda v: v), spec, T((2,), "int32"))
    with pytest.raises(NotImplementedError, match="indices that may repeat"):
        relax.eval_shape(lambda x: x.at[np.array([1, -3])].apply(lambda v: v), spec)


def test_updates_print_and_lower_as_one_scatter():
    mod = relax.jit(lambda x, i: x.at[i, 1:].add(1.0)).trace(
        T(("n", 3), "float32"), T((2,), "int64")
    )
    text = str(mod)
    assert "scatter(x, lv" in text and 'reduction="add"' in text and 'mode="drop"' in text
    assert jax.__version__  # jax is the oracle of this module


def test_weak_types_follow_jax():
    """Indexing and updates keep x's weak type; weak values promote as Python scalars."""
    cases = [
        lambda m, x: m.full((3,), 1).at[0].set(2.5),
        lambda m, x: m.full((3,), 1)[np.array([0, 1])],
        lambda m, x: x.at[0].add(m.full((), 2)),
        lambda m, x: x.astype("int32").at[1:].multiply(m.full((2,), 3)),
    ]
    for case in cases:
        ours = relax.eval_shape(lambda x, case=case: case(rnp, x), T((3,), "float32"))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            theirs = jax.eval_shape(
                lambda x, case=case: case(jnp, x), jax.ShapeDtypeStruct((3,), np.float32)
            )
        assert (ours.dtype, ours.weak) == (str(theirs.dtype), theirs.weak_type)


def test_slice_bounds_from_symbolic_scalars():
    @relax.jit
    def f(x: T(("n", 4), "float32"), m: relax.sym("m"), i: T((2,), "int32")):
        return x.at[:m].set(0.0), x[:m, i], x.at[i, m:].add(1.0)

    x = np.arange(24, dtype=np.float32).reshape(6, 4)
    i = np.array([0, 2], np.int32)
    for m in (0, 3, 5):
        xj = jnp.asarray(x)
        expected = (xj.at[:m].set(0.0), xj[:m, i], xj.at[i, m:].add(1.0))
        for ours, theirs in zip(f(x, m, i), expected):
            np.testing.assert_array_equal(ours, theirs)
    assert f.cache_size() == 1
