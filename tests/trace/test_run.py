"""Calling jitted functions end to end: traced, compiled by the runtime, run on arrays."""

import jax
import numpy as np
import pytest

import relaxjax as relax
import relaxjax.nn as rnn
import relaxjax.numpy as rnp

T = relax.Tensor


@relax.jit
def mlp(x: T(("n", 8), "float32"), w1: T((8, 16), "float32"), w2: T((16, 8), "float32")):
    return rnn.gelu(x @ w1) @ w2


@jax.jit
def _jax_mlp(x, w1, w2):
    return jax.nn.gelu(x @ w1) @ w2


def _mlp_weights(rng):
    w1 = rng.standard_normal((8, 16)).astype(np.float32) * 0.3
    w2 = rng.standard_normal((16, 8)).astype(np.float32) * 0.3
    return w1, w2


def test_one_executable_for_every_value_of_n():
    rng = np.random.default_rng(0)
    w1, w2 = _mlp_weights(rng)
    for n in (1, 3, 17, 0):
        x = rng.standard_normal((n, 8)).astype(np.float32)
        expected = _jax_mlp(x, w1, w2)
        out = mlp(x, w1, w2)
        assert isinstance(out, np.ndarray) and out.dtype == np.float32
        np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-5)
    assert mlp.cache_size() == 1


def test_keyword_arguments_and_output_structure():
    @relax.jit
    def f(x: T(("n",), "float32"), *, scale: T((), "float32")):
        y = x * scale
        return {"y": y, "both": (y + 1, -x)}

    x = np.arange(4, dtype=np.float32)
    out = f(x, scale=np.float32(2.0))
    np.testing.assert_allclose(out["y"], x * 2)
    np.testing.assert_allclose(out["both"][0], x * 2 + 1)
    np.testing.assert_allclose(out["both"][1], -x)
    assert f.cache_size() == 1


def test_unannotated_arguments_specialise():
    @relax.jit
    def f(x, y):
        return x * y + 1

    a = np.ones((2, 3), np.float32)
    np.testing.assert_allclose(f(a, a), a * a + 1)
    np.testing.assert_allclose(f(a * 2, a), a * 2 + 1)
    assert f.cache_size() == 1
    np.testing.assert_allclose(f(a[:1], a[:1]), a[:1] * a[:1] + 1)
    assert f.cache_size() == 2


def test_bad_inputs_raise_before_running():
    w1, w2 = _mlp_weights(np.random.default_rng(1))
    with pytest.raises(relax.ShapeError, match="'x'"):
        mlp(np.ones((3, 9), np.float32), w1, w2)
    with pytest.raises(TypeError, match="'x'"):
        mlp(np.ones((3, 8), np.float64), w1, w2)


def test_match_cast_is_checked_at_run_time():
    @relax.jit
    def f(x: T(("n",), "float32"), y: T(("m",), "float32")):
        z = relax.match_cast(x + y, T(("n",), "float32"))
        return rnp.exp(z)

    x = np.zeros(3, np.float32)
    np.testing.assert_allclose(f(x, np.ones(1, np.float32)), np.exp(np.ones(3)), rtol=1e-6)
    with pytest.raises(relax.ShapeError):
        f(x, np.ones(2, np.float32))
