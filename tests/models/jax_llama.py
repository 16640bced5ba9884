"""Llama forward with a KV cache written as plain jax code (no relaxjax here): the tests load
this file twice, once as written and once with the three imports below pointing at relaxjax.

RMSNorm through ``lax.rsqrt``, rotary embeddings from ``jnp.outer``, grouped-query attention
through ``jnp.repeat``, SwiGLU, stacked layer weights and caches scanned with ``lax.scan``, the
new keys and values written with ``.at[].set`` at traced positions, named tuples throughout.
"""

from typing import NamedTuple

import jax.numpy as jnp
from jax import lax, nn


class Config(NamedTuple):
    n_head: int
    n_kv_head: int
    eps: float = 1e-6
    theta: float = 10000.0


class Layer(NamedTuple):
    """One decoder layer's weights; every field is stacked over the layers."""

    attn_norm: object
    wq: object
    wk: object
    wv: object
    wo: object
    ffn_norm: object
    w_gate: object
    w_up: object
    w_down: object


class Params(NamedTuple):
    embed: object
    layers: Layer
    norm: object
    lm_head: object


class Cache(NamedTuple):
    """Keys and values of every layer: (layers, batch, max_length, kv_heads, head_dim)."""

    k: object
    v: object


def rms_norm(x, w, eps):
    return x * lax.rsqrt(jnp.mean(jnp.square(x), axis=-1, keepdims=True) + eps) * w


def rope(x, positions, theta):
    half = x.shape[-1] // 2
    inv_freq = 1.0 / theta ** (jnp.arange(half, dtype=jnp.float32) / half)
    angles = jnp.outer(positions.astype(jnp.float32), inv_freq)
    cos, sin = jnp.cos(angles)[None, :, None, :], jnp.sin(angles)[None, :, None, :]
    x1, x2 = x[..., :half], x[..., half:]
    return jnp.concatenate([x1 * cos - x2 * sin, x1 * sin + x2 * cos], axis=-1)


def llama(params, ids, cache, pos, cfg):
    """Logits of the last position for tokens ``ids`` (batch, length) at positions
    ``pos .. pos + length - 1``, and the cache with their keys and values written."""
    batch, length = ids.shape
    slots = cache.k.shape[2]
    head_dim = params.layers.wq.shape[-1] // cfg.n_head
    positions = pos + jnp.arange(length)
    visible = jnp.arange(slots)[None, :] <= positions[:, None]

    def layer(x, inputs):
        w, k_cache, v_cache = inputs
        h = rms_norm(x, w.attn_norm, cfg.eps)
        q = (h @ w.wq).reshape(batch, length, cfg.n_head, head_dim)
        k = (h @ w.wk).reshape(batch, length, cfg.n_kv_head, head_dim)
        v = (h @ w.wv).reshape(batch, length, cfg.n_kv_head, head_dim)
        q, k = rope(q, positions, cfg.theta), rope(k, positions, cfg.theta)
        k_cache = k_cache.at[:, positions].set(k)
        v_cache = v_cache.at[:, positions].set(v)
        rep = cfg.n_head // cfg.n_kv_head
        keys, values = jnp.repeat(k_cache, rep, axis=2), jnp.repeat(v_cache, rep, axis=2)
        scores = jnp.einsum("bthd,bshd->bhts", q, keys) / jnp.sqrt(head_dim).astype(q.dtype)
        scores = jnp.where(visible[None, None], scores, -jnp.inf)
        out = jnp.einsum("bhts,bshd->bthd", nn.softmax(scores, axis=-1), values)
        x = x + out.reshape(batch, length, -1) @ w.wo
        h = rms_norm(x, w.ffn_norm, cfg.eps)
        x = x + (nn.silu(h @ w.w_gate) * (h @ w.w_up)) @ w.w_down
        return x, (k_cache, v_cache)

    x, (ks, vs) = lax.scan(layer, params.embed[ids], (params.layers, cache.k, cache.v))
    logits = rms_norm(x, params.norm, cfg.eps)[:, [-1], :] @ params.lm_head
    return logits, Cache(ks, vs)
