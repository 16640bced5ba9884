"""End-to-end models with symbolic dims: compiled once, run for many sizes, equal to jax."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import relaxjax as relax
import relaxjax.nn as rnn

D, HEADS, HIDDEN = 32, 4, 64
HEAD_DIM = D // HEADS


def _params(rng: np.random.Generator, shapes: dict) -> dict:
    return {
        name: (rng.standard_normal(shape) / np.sqrt(shape[0])).astype(np.float32)
        for name, shape in shapes.items()
    }


# -- a two-layer MLP ------------------------------------------------------------------------


@relax.jit
def mlp(
    x: relax.Tensor(("n", 16), "float32"),
    w1: relax.Tensor((16, HIDDEN), "float32"),
    b1: relax.Tensor((HIDDEN,), "float32"),
    w2: relax.Tensor((HIDDEN, 8), "float32"),
):
    return rnn.gelu(x @ w1 + b1) @ w2


def mlp_jax(x, w1, b1, w2):
    return jax.nn.gelu(x @ w1 + b1) @ w2


def test_mlp_matches_jax_for_every_batch_size():
    rng = np.random.default_rng(0)
    params = _params(rng, {"w1": (16, HIDDEN), "w2": (HIDDEN, 8)})
    b1 = rng.standard_normal(HIDDEN).astype(np.float32)
    for n in (1, 7, 0, 33, 4):
        x = rng.standard_normal((n, 16)).astype(np.float32)
        ours = mlp(x, params["w1"], b1, params["w2"])
        assert isinstance(ours, np.ndarray) and ours.shape == (n, 8)
        theirs = np.asarray(mlp_jax(x, params["w1"], b1, params["w2"]))
        np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=1e-4)
    assert mlp.cache_size() == 1
    assert relax.eval_shape(mlp) == relax.Tensor(("n", 8), "float32")


# -- a GPT-style transformer block -----------------------------------------------------------

BLOCK_SHAPES = {
    "wq": (D, D),
    "wk": (D, D),
    "wv": (D, D),
    "wo": (D, D),
    "w_fc": (D, HIDDEN),
    "w_proj": (HIDDEN, D),
}


def block(x, p, nn, attention):
    """Pre-norm block: causal self-attention and a gelu MLP, each with a residual."""
    t = x.shape[0]
    h = nn["layer_norm"](x, p["g1"], p["b1"])
    q = (h @ p["wq"]).reshape(1, t, HEADS, HEAD_DIM)
    k = (h @ p["wk"]).reshape(1, t, HEADS, HEAD_DIM)
    v = (h @ p["wv"]).reshape(1, t, HEADS, HEAD_DIM)
    a = attention(q, k, v, is_causal=True).reshape(t, D)
    x = x + a @ p["wo"]
    h = nn["layer_norm"](x, p["g2"], p["b2"])
    return x + nn["gelu"](h @ p["w_fc"]) @ p["w_proj"]


def _jax_layer_norm(x, g, b, eps=1e-5):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / jnp.sqrt(var + eps) * g + b


JAX_NN = {"layer_norm": _jax_layer_norm, "gelu": jax.nn.gelu}
RELAX_NN = {"layer_norm": rnn.layer_norm, "gelu": rnn.gelu}
NAMES = ("wq", "wk", "wv", "wo", "w_fc", "w_proj", "g1", "b1", "g2", "b2")


def _block_params(rng: np.random.Generator) -> dict:
    params = _params(rng, BLOCK_SHAPES)
    for name in ("g1", "g2"):
        params[name] = (1 + 0.1 * rng.standard_normal(D)).astype(np.float32)
    for name in ("b1", "b2"):
        params[name] = (0.1 * rng.standard_normal(D)).astype(np.float32)
    return params


def _spec(name: str) -> relax.Tensor:
    return relax.Tensor(BLOCK_SHAPES.get(name, (D,)), "float32")


@relax.jit
def gpt_block(
    x: relax.Tensor(("t", D), "float32"),
    wq: _spec("wq"),
    wk: _spec("wk"),
    wv: _spec("wv"),
    wo: _spec("wo"),
    w_fc: _spec("w_fc"),
    w_proj: _spec("w_proj"),
    g1: _spec("g1"),
    b1: _spec("b1"),
    g2: _spec("g2"),
    b2: _spec("b2"),
):
    p = dict(zip(NAMES, (wq, wk, wv, wo, w_fc, w_proj, g1, b1, g2, b2)))
    return block(x, p, RELAX_NN, rnn.dot_product_attention)


@pytest.fixture(scope="module")
def block_params():
    return _block_params(np.random.default_rng(1))


def test_gpt_block_matches_jax_for_every_sequence_length(block_params):
    rng = np.random.default_rng(2)
    args = [block_params[name] for name in NAMES]
    for t in (1, 5, 16, 3):
        x = rng.standard_normal((t, D)).astype(np.float32)
        ours = gpt_block(x, *args)
        theirs = block(jnp.asarray(x), block_params, JAX_NN, jax.nn.dot_product_attention)
        assert ours.shape == (t, D)
        np.testing.assert_allclose(ours, np.asarray(theirs), rtol=2e-4, atol=2e-4)
    assert gpt_block.cache_size() == 1
    assert relax.eval_shape(gpt_block) == relax.Tensor(("t", D), "float32")


def test_gpt_block_rejects_a_bad_width_before_running(block_params):
    args = [block_params[name] for name in NAMES]
    with pytest.raises(relax.ShapeError, match="argument 'x' axis 1: expected 32, got 31"):
        gpt_block(np.ones((4, D - 1), np.float32), *args)
