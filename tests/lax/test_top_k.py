"""``relaxjax.lax.top_k`` against ``jax.lax.top_k``: values, indices, dtypes, symbolic k."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import relaxjax as relax
import relaxjax.lax as lax


def test_top_k_is_exported_by_lax():
    assert "top_k" in lax.__all__ and "top_k" in dir(lax)


@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_top_k_matches_jax_for_every_row_length(dtype):
    @relax.jit
    def best(x: relax.Tensor(("b", "n"), dtype)):
        return lax.top_k(x, 3)

    rng = np.random.default_rng(0)
    for n in (3, 4, 17):
        x = rng.integers(-5, 5, size=(2, n)).astype(dtype)  # ties: ordered by position
        values, indices = best(x)
        want_values, want_indices = jax.lax.top_k(jnp.asarray(x), 3)
        np.testing.assert_array_equal(values, want_values)
        np.testing.assert_array_equal(indices, want_indices)
        assert indices.dtype == np.int32
    assert best.cache_size() == 1


def test_top_k_with_a_symbolic_k_and_nan():
    @relax.jit
    def best(x: relax.Tensor(("n",), "float32"), k: relax.sym("k")):
        return lax.top_k(x, k)

    x = np.array([1.0, np.nan, -0.0, 0.0, 5.0], np.float32)
    for k in (0, 2, 5):
        values, indices = best(x, k)
        want_values, want_indices = jax.lax.top_k(jnp.asarray(x), k)
        np.testing.assert_array_equal(values, want_values)
        np.testing.assert_array_equal(indices, want_indices)
    assert best.cache_size() == 1


def test_top_k_refuses_k_larger_than_the_axis():
    with pytest.raises(ValueError, match="k argument to top_k must be no larger than size"):
        relax.eval_shape(lambda x: lax.top_k(x, 4), relax.Tensor((3,), "float32"))
