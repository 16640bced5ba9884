"""GPT-2 and Llama in plain jax, with no cache: the independent reference for the examples'
decoders. Written from the architectures' definitions over the same weight names (linear
weights ``(in, out)``); every position is recomputed, causally masked, in float32.

Row ``s`` of a batch may be left-padded: its first ``start[s]`` tokens are padding, which
no position attends to, and positions count from ``start[s]``.
"""

import jax
import jax.numpy as jnp
import numpy as np


def _layer_norm(x, g, b, eps):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / jnp.sqrt(var + eps) * g + b


def _rms_norm(x, g, eps):
    return x / jnp.sqrt((x * x).mean(-1, keepdims=True) + eps) * g


def _attention(q, k, v, start):
    """q (b, n, h, d), k/v (b, n, g, d) with h a multiple of g; causal, padding masked."""
    b, n, h, d = q.shape
    k = jnp.repeat(k, h // k.shape[2], axis=2)
    v = jnp.repeat(v, h // v.shape[2], axis=2)
    scores = jnp.einsum("bqhd,bkhd->bhqk", q, k) / np.float32(np.sqrt(d))
    i = jnp.arange(n)
    keep = (i[None, :] <= i[:, None])[None] & (i[None, None, :] >= start[:, None, None])
    # finite: a padding row (no key kept) stays finite, or its NaN keys would poison the
    # other rows through 0 * NaN in the weighted sum
    scores = jnp.where(keep[:, None], scores, jnp.finfo(jnp.float32).min)
    return jnp.einsum("bhqk,bkhd->bqhd", jax.nn.softmax(scores, axis=-1), v)


def _positions(tokens, start):
    return jnp.maximum(jnp.arange(tokens.shape[1])[None, :] - start[:, None], 0)


def gpt2_logits(w, cfg, tokens, start):
    """Logits ``(b, n, vocab)`` of every position."""
    w = {k: jnp.asarray(v, jnp.float32) for k, v in w.items()}
    b, n = tokens.shape
    x = w["wte.weight"][tokens] + w["wpe.weight"][_positions(tokens, start)]
    hd = cfg.width // cfg.heads
    for i in range(cfg.layers):
        p = f"h.{i}."
        h = _layer_norm(x, w[p + "ln_1.weight"], w[p + "ln_1.bias"], cfg.eps)
        qkv = h @ w[p + "attn.c_attn.weight"] + w[p + "attn.c_attn.bias"]
        q, k, v = (t.reshape(b, n, cfg.heads, hd) for t in jnp.split(qkv, 3, axis=-1))
        a = _attention(q, k, v, start).reshape(b, n, -1)
        x = x + a @ w[p + "attn.c_proj.weight"] + w[p + "attn.c_proj.bias"]
        h = _layer_norm(x, w[p + "ln_2.weight"], w[p + "ln_2.bias"], cfg.eps)
        h = jax.nn.gelu(h @ w[p + "mlp.c_fc.weight"] + w[p + "mlp.c_fc.bias"], approximate=True)
        x = x + h @ w[p + "mlp.c_proj.weight"] + w[p + "mlp.c_proj.bias"]
    return _layer_norm(x, w["ln_f.weight"], w["ln_f.bias"], cfg.eps) @ w["lm_head.weight"]


def _rotate(x, pos, theta):
    d = x.shape[-1]
    freq = 1.0 / theta ** (jnp.arange(0, d, 2, dtype=jnp.float32) / d)
    ang = pos[:, :, None, None].astype(jnp.float32) * freq
    cos, sin = jnp.cos(ang), jnp.sin(ang)
    x1, x2 = x[..., : d // 2], x[..., d // 2 :]
    rotated = jnp.concatenate([-x2, x1], axis=-1)  # rotate_half, as Hugging Face's Llama
    return x * jnp.concatenate([cos, cos], -1) + rotated * jnp.concatenate([sin, sin], -1)


def llama_logits(w, cfg, tokens, start):
    """Logits ``(b, n, vocab)`` of every position."""
    w = {k: jnp.asarray(v, jnp.float32) for k, v in w.items()}
    b, n = tokens.shape
    hd = cfg.width // cfg.heads
    pos = _positions(tokens, start)
    x = w["model.embed_tokens.weight"][tokens]
    for i in range(cfg.layers):
        p = f"model.layers.{i}."
        h = _rms_norm(x, w[p + "input_layernorm.weight"], cfg.eps)
        q = (h @ w[p + "self_attn.q_proj.weight"]).reshape(b, n, cfg.heads, hd)
        k = (h @ w[p + "self_attn.k_proj.weight"]).reshape(b, n, cfg.kv_heads, hd)
        v = (h @ w[p + "self_attn.v_proj.weight"]).reshape(b, n, cfg.kv_heads, hd)
        q, k = _rotate(q, pos, cfg.theta), _rotate(k, pos, cfg.theta)
        x = x + _attention(q, k, v, start).reshape(b, n, -1) @ w[p + "self_attn.o_proj.weight"]
        h = _rms_norm(x, w[p + "post_attention_layernorm.weight"], cfg.eps)
        gate = jax.nn.silu(h @ w[p + "mlp.gate_proj.weight"])
        x = x + (gate * (h @ w[p + "mlp.up_proj.weight"])) @ w[p + "mlp.down_proj.weight"]
    return _rms_norm(x, w["model.norm.weight"], cfg.eps) @ w["lm_head.weight"]
