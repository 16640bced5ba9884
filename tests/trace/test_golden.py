"""Golden text of traced programs: a small MLP and a transformer block with symbolic
batch and sequence length; their numerics through the ops' references against jax."""

import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import relaxjax as relax
import relaxjax.nn as rnn
import relaxjax.numpy as rnp
from relaxjax.ir.printer import module_to_text

dot_product_attention = rnn.dot_product_attention

T = relax.Tensor
D, H, F = 8, 2, 32


@relax.jit
def mlp(
    x: T(("n", 16), "float32"),
    w1: T((16, 64), "float32"),
    b1: T((64,), "float32"),
    w2: T((64, 4), "float32"),
):
    return rnn.relu(x @ w1 + b1) @ w2


MLP_TEXT = """\
@function
def mlp(x: Tensor((n, 16), "float32"), w1: Tensor((16, 64), "float32"), b1: Tensor((64,), "float32"), w2: Tensor((64, 4), "float32")) -> Tensor((n, 4), "float32"):
    with dataflow():
        lv0: Tensor((n, 64), "float32") = matmul(x, w1)
        lv1: Tensor((n, 64), "float32") = add(lv0, b1)
        lv2: Tensor((n, 64), "float32") = relu(lv1)
        lv3: Tensor((n, 4), "float32") = matmul(lv2, w2)
        gv: Tensor((n, 4), "float32") = output(lv3)
    return gv
"""  # noqa: E501 - golden text


def block_body(x, ln1_g, ln1_b, w_qkv, w_out, ln2_g, ln2_b, w_up, w_down, nn, np_, attention):
    """One pre-norm transformer block, written once for relaxjax and for jax."""
    b, s, _ = x.shape
    h = nn.layer_norm(x, ln1_g, ln1_b) if nn is rnn else _jax_layer_norm(x, ln1_g, ln1_b)
    q, k, v = np_.split(h @ w_qkv, 3, axis=-1)
    heads = [t.reshape(b, s, H, D // H) for t in (q, k, v)]
    attn = attention(*heads, is_causal=True)
    x = x + attn.reshape(b, s, D) @ w_out
    h = nn.layer_norm(x, ln2_g, ln2_b) if nn is rnn else _jax_layer_norm(x, ln2_g, ln2_b)
    return x + nn.gelu(h @ w_up) @ w_down


def _jax_layer_norm(x, gamma, beta, eps=1e-5):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / jnp.sqrt(var + eps) * gamma + beta


@relax.jit
def block(
    x: T(("b", "s", D), "float32"),
    ln1_g: T((D,), "float32"),
    ln1_b: T((D,), "float32"),
    w_qkv: T((D, 3 * D), "float32"),
    w_out: T((D, D), "float32"),
    ln2_g: T((D,), "float32"),
    ln2_b: T((D,), "float32"),
    w_up: T((D, F), "float32"),
    w_down: T((F, D), "float32"),
):
    weights = (ln1_g, ln1_b, w_qkv, w_out, ln2_g, ln2_b, w_up, w_down)
    return block_body(x, *weights, nn=rnn, np_=rnp, attention=dot_product_attention)


BLOCK_TEXT = """\
@function
def block(x: Tensor((b, s, 8), "float32"), ln1_g: Tensor((8,), "float32"), ln1_b: Tensor((8,), "float32"), w_qkv: Tensor((8, 24), "float32"), w_out: Tensor((8, 8), "float32"), ln2_g: Tensor((8,), "float32"), ln2_b: Tensor((8,), "float32"), w_up: Tensor((8, 32), "float32"), w_down: Tensor((32, 8), "float32")) -> Tensor((b, s, 8), "float32"):
    with dataflow():
        lv0: Tensor((b, s, 8), "float32") = layer_norm(x, ln1_g, ln1_b, eps=1e-05)
        lv1: Tensor((b, s, 24), "float32") = matmul(lv0, w_qkv)
        lv2: Tuple(Tensor((b, s, 8), "float32"), Tensor((b, s, 8), "float32"), Tensor((b, s, 8), "float32")) = split(lv1, sections=3, indices=None, axis=2)
        lv3: Tensor((b, s, 8), "float32") = lv2[0]
        lv4: Tensor((b, s, 8), "float32") = lv2[1]
        lv5: Tensor((b, s, 8), "float32") = lv2[2]
        lv6: Tensor((b, s, 2, 4), "float32") = reshape(lv3, shape=(b, s, 2, 4))
        lv7: Tensor((b, s, 2, 4), "float32") = reshape(lv4, shape=(b, s, 2, 4))
        lv8: Tensor((b, s, 2, 4), "float32") = reshape(lv5, shape=(b, s, 2, 4))
        lv9: Tensor((b, s, 2, 4), "float32") = dot_product_attention(lv6, lv7, lv8, scale=None, is_causal=True, has_bias=False, has_mask=False)
        lv10: Tensor((b, s, 8), "float32") = reshape(lv9, shape=(b, s, 8))
        lv11: Tensor((b, s, 8), "float32") = matmul(lv10, w_out)
        lv12: Tensor((b, s, 8), "float32") = add(x, lv11)
        lv13: Tensor((b, s, 8), "float32") = layer_norm(lv12, ln2_g, ln2_b, eps=1e-05)
        lv14: Tensor((b, s, 32), "float32") = matmul(lv13, w_up)
        lv15: Tensor((b, s, 32), "float32") = gelu(lv14, approximate=True)
        lv16: Tensor((b, s, 8), "float32") = matmul(lv15, w_down)
        lv17: Tensor((b, s, 8), "float32") = add(lv12, lv16)
        gv: Tensor((b, s, 8), "float32") = output(lv17)
    return gv
"""  # noqa: E501 - golden text


def test_mlp_golden_text():
    assert module_to_text(mlp.trace(), locations=False) == MLP_TEXT
    assert relax.eval_shape(mlp) == T(("n", 4), "float32")


def test_transformer_block_golden_text():
    assert module_to_text(block.trace(), locations=False) == BLOCK_TEXT
    assert relax.eval_shape(block) == T(("b", "s", D), "float32")


def test_printed_bindings_name_the_users_source_lines():
    text = str(mlp.trace())
    with open(__file__) as source:
        line = 1 + source.read().splitlines().index("    return rnn.relu(x @ w1 + b1) @ w2")
    name = os.path.basename(__file__)
    assert f'lv0: Tensor((n, 64), "float32") = matmul(x, w1)  # {name}:{line}' in text
    assert f"= relu(lv1)  # {name}:{line}" in text


@jax.jit
def _jax_block(x, *weights):
    """The same block in jax, compiled once (eager jax dispatch is slow on small ops)."""
    return block_body(x, *weights, nn=jax.nn, np_=jnp, attention=jax.nn.dot_product_attention)


def _weights(rng):
    shapes = [(D,), (D,), (D, 3 * D), (D, D), (D,), (D,), (D, F), (F, D)]
    return [rng.standard_normal(s).astype(np.float32) * 0.5 for s in shapes]


@pytest.mark.parametrize(("b", "s"), [(1, 1), (2, 5)])
def test_transformer_block_numerics_match_jax(reference_runtime, b, s):
    rng = np.random.default_rng(s)
    x = rng.standard_normal((b, s, D)).astype(np.float32)
    weights = _weights(rng)
    ours = block(x, *weights)
    theirs = _jax_block(x, *weights)
    np.testing.assert_allclose(ours, theirs, rtol=2e-4, atol=2e-4)
    assert block.cache_size() == 1


def test_constants_print_inline_or_as_meta_and_round_trip():
    small, large = np.arange(3, dtype=np.float32), np.arange(40, dtype=np.float32)

    def f(x, y):
        return x + small, y * large

    jitted = relax.jit(f)
    text = module_to_text(
        jitted.trace(T(("n", 3), "float32"), T((40,), "float32")), locations=False
    )
    assert 'add(x, const([0.0, 1.0, 2.0], "float32"))' in text
    assert 'multiply(y, const(meta[0], "float32"))' in text
