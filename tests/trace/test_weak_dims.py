"""Arithmetic on symbolic dims used as values stays weakly typed, as jax's on static ints.

``x * x.shape[-1] ** -0.5`` is the attention scale of every transformer: in jax the
dim is a Python int, so the scale is a weak float and the product stays float32.
With a symbolic dim the scale is computed at run time, and must promote the same way.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import relaxjax as relax
import relaxjax.numpy as rnp

jax.config.update("jax_enable_x64", True)

EXPRESSIONS = {
    "pow": lambda np_, q, i: q * q.shape[-1] ** -0.5,
    "pow-left": lambda np_, q, i: q.shape[-1] ** -0.5 * q,
    "sqrt": lambda np_, q, i: q / np_.sqrt(q.shape[-1]),
    "reciprocal": lambda np_, q, i: q * (1.0 / q.shape[-1]),
    "int-dim": lambda np_, q, i: q + q.shape[0],
    "chain": lambda np_, q, i: (q.shape[-1] ** -0.5) * (q.shape[0] ** 0.5) + q,
    "exp": lambda np_, q, i: np_.exp(q.shape[-1] * 0.1) * q,
    "compare": lambda np_, q, i: q > q.shape[-1] / 2.0,
    "int-tensor": lambda np_, q, i: i * q.shape[-1] ** 0.5,
    "int-tensor-add": lambda np_, q, i: i + q.shape[-1] * 2.5,
    "float16": lambda np_, q, i: q.astype(np_.float16) * q.shape[-1] ** -0.5,
}


@pytest.mark.parametrize("name", list(EXPRESSIONS))
def test_dim_arithmetic_promotes_like_jax(name):
    expression = EXPRESSIONS[name]

    @relax.jit
    def traced(q: relax.Tensor(("n", "h"), "float32"), i: relax.Tensor(("h",), "int32")):
        return expression(rnp, q, i)

    rng = np.random.default_rng(1)
    for n, h in [(3, 4), (2, 7)]:
        q = rng.standard_normal((n, h)).astype(np.float32)
        i = np.arange(h, dtype=np.int32)
        ours = np.asarray(traced(q, i))
        expected = np.asarray(expression(jnp, jnp.asarray(q), jnp.asarray(i)))
        assert ours.dtype == expected.dtype, (ours.dtype, expected.dtype)
        np.testing.assert_allclose(ours.astype(np.float64), expected.astype(np.float64), rtol=2e-3)
    assert traced.cache_size() == 1


def test_eval_shape_agrees_with_jax_on_the_scale():
    def scale(q):
        return q * q.shape[-1] ** -0.5

    ours = relax.eval_shape(scale, relax.Tensor(("n", "h"), "float16"))
    theirs = jax.eval_shape(scale, jax.ShapeDtypeStruct((2, 8), jnp.float16))
    assert ours.dtype == theirs.dtype == "float16"


def test_a_weak_scale_is_converted_where_it_meets_a_typed_tensor():
    """The scale is a weakly typed float64 (as jax's ``weak_type``); the product's kernel
    converts it to float32, as jax converts a weak operand to the strong one's dtype."""

    @relax.jit
    def scale(q: relax.Tensor(("n", "h"), "float32")):
        return q * q.shape[-1] ** -0.5

    text = str(scale.trace())
    assert 'lv1: Tensor((), "float64", weak=True) = power(lv0, -0.5)' in text  # in double
    assert 'lv2: Tensor((n, h), "float32") = multiply(q, lv1)' in text
    assert "astype" not in text


def test_the_returned_scale_alone_is_a_float64_scalar():
    @relax.jit
    def scale(q: relax.Tensor(("n", "h"), "float32")):
        return q.shape[-1] ** -0.5

    value = np.asarray(scale(np.ones((2, 16), np.float32)))
    assert value.shape == () and value.dtype == np.float64 and float(value) == 0.25
