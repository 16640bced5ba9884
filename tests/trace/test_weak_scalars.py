"""Python scalars are weakly typed (API.md §3): ops on them alone stay weak, as in jax,
so they never promote a float32 tensor to float64."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import relaxjax as relax
import relaxjax.numpy as rnp

CASES = {
    "sqrt_of_static_dim": (lambda m, q: q / m.sqrt(q.shape[-1])),
    "maximum_of_scalars": (lambda m, q: m.maximum(1, 2.5) * q),
    "exp_of_float": (lambda m, q: q * m.exp(1.0)),
    "nested": (lambda m, q: q - m.log(m.sqrt(16.0) + 1)),
    "int_scalars": (lambda m, q: q * m.add(2, 3)),
    "comparison": (lambda m, q: q * m.greater(3, 2)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_scalar_only_ops_stay_weak_like_jax(name):
    fn = CASES[name]
    q = np.random.default_rng(0).standard_normal((3, 16)).astype(np.float32)
    want = jax.jit(lambda a: fn(jnp, a))(q)
    spec = relax.eval_shape(lambda a: fn(rnp, a), relax.Tensor((3, 16), "float32"))
    assert spec == relax.Tensor((3, 16), str(want.dtype))
    got = relax.jit(lambda a: fn(rnp, a))(q)
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_a_returned_scalar_is_a_0d_tensor():
    spec = relax.eval_shape(lambda a: (a, rnp.sqrt(4)), relax.Tensor((2,), "float32"))
    assert spec[1] == relax.Tensor((), "float64", weak=True)  # as jax's weak_type
