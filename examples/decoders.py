"""GPT-2 and Llama decoders written with ``relaxjax.numpy`` / ``relaxjax.nn`` over a dict of
weights, as a user would write them.

A model is its configuration plus a dict of named weight arrays (Hugging Face names, every
linear weight stored ``(in, out)`` so that a layer is ``x @ w``; ``lm_head.weight`` is
``(width, vocab)``). The architecture classes give the pieces a decoder step is made of:

- ``embed(w, tokens, positions)``: the residual stream of tokens ``(b, n)`` at positions
  ``(b, n)`` (GPT-2 adds learned position embeddings; Llama's positions act in ``qkv``);
- ``qkv(w, i, x, positions)``: layer ``i``'s queries ``(b, n, heads, head_dim)``, keys and
  values ``(b, n, kv_heads, head_dim)`` (Llama: RMSNorm, rotary embeddings, grouped-query);
- ``finish(w, i, x, attended)``: the output projection, the residual and the MLP (GPT-2:
  LayerNorm and gelu; Llama: RMSNorm and SwiGLU);
- ``logits(w, x)``: the final norm and the language-model head.

:func:`forward` chains them for any attention (``attend(i, q, k, v)``), which is where the
KV cache layouts of :mod:`kv_cache` differ. The defaults are the real small configurations,
GPT-2 124M and SmolLM-135M (a Llama with 9 query and 3 key/value heads), with random weights
of those shapes (:func:`random_weights`), or real ones from a ``safetensors`` file
(:func:`load_weights`, read with numpy alone).
"""

from __future__ import annotations

import json
import struct
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

import relaxjax.nn as rnn
import relaxjax.numpy as rnp

Weights = Mapping[str, np.ndarray]


@dataclass(frozen=True)
class GPT2Config:
    """GPT-2 (the defaults are GPT-2 small, 124M parameters)."""

    vocab: int = 50257
    context: int = 1024
    width: int = 768
    layers: int = 12
    heads: int = 12
    eps: float = 1e-5

    @property
    def kv_heads(self) -> int:
        return self.heads

    @property
    def head_dim(self) -> int:
        return self.width // self.heads


@dataclass(frozen=True)
class LlamaConfig:
    """Llama (the defaults are SmolLM-135M's: 30 layers, grouped-query attention, tied
    embeddings)."""

    vocab: int = 49152
    context: int = 2048
    width: int = 576
    layers: int = 30
    heads: int = 9
    kv_heads: int = 3
    hidden: int = 1536
    eps: float = 1e-5
    theta: float = 10000.0

    @property
    def head_dim(self) -> int:
        return self.width // self.heads


Config = GPT2Config | LlamaConfig


class GPT2:
    """GPT-2's pieces (see the module doc): LayerNorm, learned positions, gelu."""

    def __init__(self, cfg: GPT2Config) -> None:
        self.cfg = cfg

    def embed(self, w: Weights, tokens, positions):
        return rnp.take(w["wte.weight"], tokens, axis=0) + rnp.take(
            w["wpe.weight"], positions, axis=0
        )

    def _norm(self, w: Weights, x, name: str):
        return rnn.layer_norm(x, w[name + ".weight"], w[name + ".bias"], eps=self.cfg.eps)

    def _linear(self, w: Weights, x, name: str):
        return x @ w[name + ".weight"] + w[name + ".bias"]

    def qkv(self, w: Weights, i: int, x, positions):
        cfg = self.cfg
        b, n = x.shape[0], x.shape[1]
        h = self._linear(w, self._norm(w, x, f"h.{i}.ln_1"), f"h.{i}.attn.c_attn")
        q, k, v = rnp.split(h.reshape(b, n, 3, cfg.heads, cfg.head_dim), 3, axis=2)
        return q[:, :, 0], k[:, :, 0], v[:, :, 0]

    def finish(self, w: Weights, i: int, x, attended):
        b, n = x.shape[0], x.shape[1]
        x = x + self._linear(w, attended.reshape(b, n, self.cfg.width), f"h.{i}.attn.c_proj")
        h = rnn.gelu(self._linear(w, self._norm(w, x, f"h.{i}.ln_2"), f"h.{i}.mlp.c_fc"))
        return x + self._linear(w, h, f"h.{i}.mlp.c_proj")

    def logits(self, w: Weights, x):
        return self._norm(w, x, "ln_f") @ w["lm_head.weight"]


class Llama:
    """Llama's pieces (see the module doc): RMSNorm, rotary embeddings, SwiGLU, GQA."""

    def __init__(self, cfg: LlamaConfig) -> None:
        self.cfg = cfg
        half = cfg.head_dim // 2
        self.inv_freq = (1.0 / cfg.theta ** (np.arange(half) / half)).astype(np.float32)

    def embed(self, w: Weights, tokens, positions):
        return rnp.take(w["model.embed_tokens.weight"], tokens, axis=0)

    def _rope(self, x, cos, sin):
        half = self.cfg.head_dim // 2
        x1, x2 = x[..., :half], x[..., half:]
        return rnp.concatenate([x1 * cos - x2 * sin, x1 * sin + x2 * cos], axis=-1)

    def qkv(self, w: Weights, i: int, x, positions):
        cfg, p = self.cfg, f"model.layers.{i}"
        b, n = x.shape[0], x.shape[1]
        h = rnn.rms_norm(x, w[f"{p}.input_layernorm.weight"], eps=cfg.eps)
        q = (h @ w[f"{p}.self_attn.q_proj.weight"]).reshape(b, n, cfg.heads, cfg.head_dim)
        k = (h @ w[f"{p}.self_attn.k_proj.weight"]).reshape(b, n, cfg.kv_heads, cfg.head_dim)
        v = (h @ w[f"{p}.self_attn.v_proj.weight"]).reshape(b, n, cfg.kv_heads, cfg.head_dim)
        angles = positions.astype("float32")[:, :, None, None] * self.inv_freq
        cos, sin = rnp.cos(angles), rnp.sin(angles)
        return self._rope(q, cos, sin), self._rope(k, cos, sin), v

    def finish(self, w: Weights, i: int, x, attended):
        cfg, p = self.cfg, f"model.layers.{i}"
        b, n = x.shape[0], x.shape[1]
        x = x + attended.reshape(b, n, self.cfg.width) @ w[f"{p}.self_attn.o_proj.weight"]
        h = rnn.rms_norm(x, w[f"{p}.post_attention_layernorm.weight"], eps=cfg.eps)
        gate = rnn.silu(h @ w[f"{p}.mlp.gate_proj.weight"])
        return x + (gate * (h @ w[f"{p}.mlp.up_proj.weight"])) @ w[f"{p}.mlp.down_proj.weight"]

    def logits(self, w: Weights, x):
        return rnn.rms_norm(x, w["model.norm.weight"], eps=self.cfg.eps) @ w["lm_head.weight"]


def architecture(cfg: Config) -> GPT2 | Llama:
    """The pieces of ``cfg``'s architecture."""
    return GPT2(cfg) if isinstance(cfg, GPT2Config) else Llama(cfg)


Attend = Callable[[int, object, object, object], object]


def forward(arch: GPT2 | Llama, w: Weights, tokens, positions, attend: Attend):
    """The residual stream after every layer; ``attend(i, q, k, v)`` is layer ``i``'s
    attention of the new queries over whatever keys it keeps (a cache, or just ``k``)."""
    x = arch.embed(w, tokens, positions)
    for i in range(arch.cfg.layers):
        q, k, v = arch.qkv(w, i, x, positions)
        x = arch.finish(w, i, x, attend(i, q, k, v))
    return x


# -- weights ------------------------------------------------------------------------------------


def weight_shapes(cfg: Config) -> dict[str, tuple[int, ...]]:
    """The name and shape of every weight (linear weights ``(in, out)``)."""
    d, v = cfg.width, cfg.vocab
    shapes: dict[str, tuple[int, ...]] = {}
    if isinstance(cfg, GPT2Config):
        shapes |= {"wte.weight": (v, d), "wpe.weight": (cfg.context, d)}
        for i in range(cfg.layers):
            p = f"h.{i}"
            for norm in ("ln_1", "ln_2"):
                shapes |= {f"{p}.{norm}.weight": (d,), f"{p}.{norm}.bias": (d,)}
            for name, fan_in, fan_out in (
                ("attn.c_attn", d, 3 * d), ("attn.c_proj", d, d),
                ("mlp.c_fc", d, 4 * d), ("mlp.c_proj", 4 * d, d),
            ):  # fmt: skip
                shapes |= {f"{p}.{name}.weight": (fan_in, fan_out), f"{p}.{name}.bias": (fan_out,)}
        shapes |= {"ln_f.weight": (d,), "ln_f.bias": (d,)}
    else:
        kv, hidden = cfg.kv_heads * cfg.head_dim, cfg.hidden
        shapes["model.embed_tokens.weight"] = (v, d)
        for i in range(cfg.layers):
            p = f"model.layers.{i}"
            shapes |= {
                f"{p}.input_layernorm.weight": (d,),
                f"{p}.self_attn.q_proj.weight": (d, d),
                f"{p}.self_attn.k_proj.weight": (d, kv),
                f"{p}.self_attn.v_proj.weight": (d, kv),
                f"{p}.self_attn.o_proj.weight": (d, d),
                f"{p}.post_attention_layernorm.weight": (d,),
                f"{p}.mlp.gate_proj.weight": (d, hidden),
                f"{p}.mlp.up_proj.weight": (d, hidden),
                f"{p}.mlp.down_proj.weight": (hidden, d),
            }
        shapes["model.norm.weight"] = (d,)
    shapes["lm_head.weight"] = (d, v)
    return shapes


def random_weights(cfg: Config, seed: int = 0, dtype: str = "float32") -> dict[str, np.ndarray]:
    """Weights of ``cfg``'s shapes, drawn as GPT-2 initialises them (N(0, 0.02), norms at
    one, biases at zero); the language-model head is the token embedding, transposed."""
    rng = np.random.default_rng(seed)
    weights = {}
    for name, shape in weight_shapes(cfg).items():
        if name == "lm_head.weight":
            continue
        if len(shape) == 1:
            is_norm = "norm" in name or "ln_" in name
            fill = 1.0 if is_norm and name.endswith(".weight") else 0.0
            weights[name] = np.full(shape, fill, dtype)
        else:
            weights[name] = (rng.standard_normal(shape, np.float32) * 0.02).astype(dtype)
    embedding = "wte.weight" if isinstance(cfg, GPT2Config) else "model.embed_tokens.weight"
    weights["lm_head.weight"] = np.ascontiguousarray(weights[embedding].T)
    return weights


def parameter_count(weights: Weights) -> int:
    """Parameters, counting a head tied to the embedding once."""
    total = sum(a.size for a in weights.values())
    head, embedding = weights["lm_head.weight"], _embedding(weights)
    return total - head.size if np.array_equal(head.T, embedding) else total


def _embedding(weights: Weights) -> np.ndarray:
    return (
        weights["wte.weight"] if "wte.weight" in weights else weights["model.embed_tokens.weight"]
    )


# -- safetensors ------------------------------------------------------------------------------

_SAFETENSORS_DTYPES = {
    "F64": "<f8", "F32": "<f4", "F16": "<f2", "I64": "<i8", "I32": "<i4", "I16": "<i2",
    "I8": "i1", "U8": "u1", "BOOL": "?",
}  # fmt: skip


def read_safetensors(path: str | Path) -> dict[str, np.ndarray]:
    """Every tensor of a ``.safetensors`` file, read with numpy: an 8-byte little-endian
    header length, a JSON header (per tensor: ``dtype``, ``shape``, ``data_offsets`` into
    the data that follows), then the raw little-endian data. BF16 becomes float32."""
    data = Path(path).read_bytes()
    if len(data) < 8:
        raise ValueError(f"{path}: not a safetensors file (shorter than its 8-byte header size)")
    (size,) = struct.unpack("<Q", data[:8])
    if 8 + size > len(data):
        raise ValueError(f"{path}: header of {size} bytes runs past the end of the file")
    header = json.loads(data[8 : 8 + size])
    body = memoryview(data)[8 + size :]
    tensors = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        begin, end = entry["data_offsets"]
        shape = tuple(entry["shape"])
        if entry["dtype"] == "BF16":
            raw = np.frombuffer(body[begin:end], "<u2").astype(np.uint32) << 16
            array = raw.view(np.float32)
        elif entry["dtype"] in _SAFETENSORS_DTYPES:
            array = np.frombuffer(body[begin:end], _SAFETENSORS_DTYPES[entry["dtype"]])
        else:
            raise ValueError(f"{path}: tensor {name!r} has unsupported dtype {entry['dtype']}")
        if array.size != int(np.prod(shape)):
            raise ValueError(
                f"{path}: tensor {name!r} of shape {shape} has {array.size} elements of data"
            )
        tensors[name] = array.reshape(shape).astype(array.dtype.newbyteorder("="))
    return tensors


def write_safetensors(path: str | Path, tensors: Mapping[str, np.ndarray]) -> None:
    """Write ``tensors`` as a ``.safetensors`` file (the inverse of :func:`read_safetensors`
    for the dtypes numpy has)."""
    codes = {np.dtype(v).str.lstrip("<|"): k for k, v in _SAFETENSORS_DTYPES.items()}
    header, offset, chunks = {}, 0, []
    for name, array in tensors.items():
        array = np.ascontiguousarray(array)
        raw = array.astype(array.dtype.newbyteorder("<")).tobytes()
        code = codes[array.dtype.str.lstrip("<>|=")]
        header[name] = {
            "dtype": code,
            "shape": list(array.shape),
            "data_offsets": [offset, offset + len(raw)],
        }
        chunks.append(raw)
        offset += len(raw)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)  # the data starts 8-byte aligned, as the format's writer does
    Path(path).write_bytes(struct.pack("<Q", len(text)) + text + b"".join(chunks))


def load_weights(path: str | Path, cfg: Config) -> dict[str, np.ndarray]:
    """A Hugging Face checkpoint of ``cfg``'s architecture as this module's weight dict:
    float32, linear weights ``(in, out)`` (Llama's ``nn.Linear`` weights are transposed,
    GPT-2's ``Conv1D`` ones already are), the head tied to the embedding where the file has
    none, and every expected name and shape checked."""
    raw = read_safetensors(path)
    raw = {name.removeprefix("transformer."): array for name, array in raw.items()}
    expected = weight_shapes(cfg)
    weights = {}
    for name, shape in expected.items():
        if name == "lm_head.weight" and name not in raw:
            embedding = "wte.weight" if isinstance(cfg, GPT2Config) else "model.embed_tokens.weight"
            weights[name] = np.ascontiguousarray(weights[embedding].T)
            continue
        if name not in raw:
            raise ValueError(f"{path}: no tensor {name!r} (a {type(cfg).__name__} needs it)")
        array = raw[name].astype(np.float32)
        is_torch_linear = isinstance(cfg, LlamaConfig) and array.ndim == 2 and "embed" not in name
        if is_torch_linear:
            array = array.T
        if array.shape != shape:
            raise ValueError(f"{path}: tensor {name!r} has shape {array.shape}, expected {shape}")
        weights[name] = np.ascontiguousarray(array)
    return weights
