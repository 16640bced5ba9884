"""GPT-2 forward written as plain jax code (no relaxjax here): the tests load this file twice,
once as written and once with the three imports below pointing at relaxjax.

Stacked layer weights scanned with ``lax.scan``, a causal mask from ``jnp.tri``, named
tuples for the config, the weights and the result, ``h[:, [-1], :]`` for the last position.
"""

from typing import NamedTuple

import jax.numpy as jnp
from jax import lax, nn


class Config(NamedTuple):
    n_head: int
    eps: float = 1e-5


class Block(NamedTuple):
    """One transformer block's weights; every field is stacked over the layers."""

    ln1_g: object
    ln1_b: object
    w_qkv: object
    b_qkv: object
    w_proj: object
    b_proj: object
    ln2_g: object
    ln2_b: object
    w_fc: object
    b_fc: object
    w_out: object
    b_out: object


class Params(NamedTuple):
    wte: object
    wpe: object
    blocks: Block
    lnf_g: object
    lnf_b: object


class Output(NamedTuple):
    logits: object
    next_logits: object


def layer_norm(x, g, b, eps):
    mean = jnp.mean(x, axis=-1, keepdims=True)
    var = jnp.var(x, axis=-1, keepdims=True)
    return (x - mean) * lax.rsqrt(var + eps) * g + b


def attention(x, blk, n_head, mask):
    batch, length, width = x.shape
    q, k, v = jnp.split(x @ blk.w_qkv + blk.b_qkv, 3, axis=-1)

    def heads(t):
        return t.reshape(batch, length, n_head, width // n_head).transpose(0, 2, 1, 3)

    q, k, v = heads(q), heads(k), heads(v)
    scores = jnp.einsum("bhqd,bhkd->bhqk", q, k) / jnp.sqrt(q.shape[-1])
    scores = jnp.where(mask, scores, -jnp.inf)
    out = nn.softmax(scores, axis=-1) @ v
    out = out.transpose(0, 2, 1, 3).reshape(batch, length, width)
    return out @ blk.w_proj + blk.b_proj


def gpt2(params, ids, cfg):
    """Logits for token ids of shape (batch, length)."""
    length = ids.shape[1]
    x = params.wte[ids] + params.wpe[jnp.arange(length)]
    mask = jnp.tri(length, dtype=bool)

    def layer(h, blk):
        h = h + attention(layer_norm(h, blk.ln1_g, blk.ln1_b, cfg.eps), blk, cfg.n_head, mask)
        m = layer_norm(h, blk.ln2_g, blk.ln2_b, cfg.eps)
        h = h + nn.gelu(m @ blk.w_fc + blk.b_fc) @ blk.w_out + blk.b_out
        return h, None

    x, _ = lax.scan(layer, x, params.blocks)
    x = layer_norm(x, params.lnf_g, params.lnf_b, cfg.eps)
    return Output(x @ params.wte.T, x[:, [-1], :] @ params.wte.T)
