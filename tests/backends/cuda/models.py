"""Models the GPU tests (and bench/gpu.py) compile: a GPT-2 style block and an MLP,
as functions of their sizes, with jax references."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

import relaxjax as relax
import relaxjax.nn as rnn

NAMES = ("wq", "wk", "wv", "wo", "w_fc", "w_proj", "g1", "b1", "g2", "b2")


def block(x, p, nn, attention, heads: int):
    """Pre-norm block: causal self-attention and a gelu MLP, each with a residual."""
    t, d = x.shape
    h = nn["layer_norm"](x, p["g1"], p["b1"])
    q = (h @ p["wq"]).reshape(1, t, heads, d // heads)
    k = (h @ p["wk"]).reshape(1, t, heads, d // heads)
    v = (h @ p["wv"]).reshape(1, t, heads, d // heads)
    a = attention(q, k, v, is_causal=True).reshape(t, d)
    x = x + a @ p["wo"]
    h = nn["layer_norm"](x, p["g2"], p["b2"])
    return x + nn["gelu"](h @ p["w_fc"]) @ p["w_proj"]


def _jax_layer_norm(x, g, b, eps=1e-5):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / jnp.sqrt(var + eps) * g + b


JAX_NN = {"layer_norm": _jax_layer_norm, "gelu": jax.nn.gelu}
RELAX_NN = {"layer_norm": rnn.layer_norm, "gelu": rnn.gelu}


def shapes(d: int, hidden: int) -> dict:
    """Parameter shapes of a block of width ``d``."""
    square = (d, d)
    return {
        "wq": square, "wk": square, "wv": square, "wo": square,
        "w_fc": (d, hidden), "w_proj": (hidden, d),
        "g1": (d,), "b1": (d,), "g2": (d,), "b2": (d,),
    }  # fmt: skip


def gpt_block(d: int, heads: int, hidden: int, target: str = "cuda", dtype: str = "float32"):
    """A jitted block for sequences of any length ``t``: ``f(x, *params)``."""
    specs = {name: relax.Tensor(shape, dtype) for name, shape in shapes(d, hidden).items()}

    def fn(x, wq, wk, wv, wo, w_fc, w_proj, g1, b1, g2, b2):
        p = dict(zip(NAMES, (wq, wk, wv, wo, w_fc, w_proj, g1, b1, g2, b2)))
        return block(x, p, RELAX_NN, rnn.dot_product_attention, heads)

    fn.__annotations__ = {"x": relax.Tensor(("t", d), dtype), **specs}
    return relax.jit(fn, target=target)


def block_params(d: int, hidden: int, rng: np.random.Generator) -> dict:
    """Random parameters of a block (small weights, norms near 1)."""
    params = {}
    for name, shape in shapes(d, hidden).items():
        if name in ("g1", "g2"):
            params[name] = (1 + 0.1 * rng.standard_normal(shape)).astype(np.float32)
        else:
            params[name] = (0.1 * rng.standard_normal(shape)).astype(np.float32)
    return params


def jax_block(x, params: dict, heads: int):
    """The jax reference of :func:`gpt_block`."""
    return block(x, params, JAX_NN, jax.nn.dot_product_attention, heads)


def mlp(d: int, hidden: int, target: str = "cuda"):
    """``gelu(x @ w1) @ w2`` for ``x: (n, d)``."""

    def fn(x, w1, w2):
        return rnn.gelu(x @ w1) @ w2

    fn.__annotations__ = {
        "x": relax.Tensor(("n", d), "float32"),
        "w1": relax.Tensor((d, hidden), "float32"),
        "w2": relax.Tensor((hidden, d), "float32"),
    }
    return relax.jit(fn, target=target)
