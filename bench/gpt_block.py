"""A GPT-2-small transformer block on (1, n, 768) float32, n in {1, 32, 128, 512}.

The block is written once in numpy style (pre-norm, causal self-attention with 12 heads
of 64, a tanh-gelu MLP, residuals) and run by relaxjax (one executable for every n: the
length is a symbolic dim), jax.jit, numpy and, when torch is importable, torch eager and
torch.compile. Attention is written out by hand (``softmax(where(causal, q @ k.T *
scale, -inf)) @ v``), as a new user would, and by relaxjax also through
``rnn.dot_product_attention`` (the fused kernel). Run it with::

    python bench/gpt_block.py [--repeats 9] [--lengths 1 32 128 512]

Calls are interleaved (one call of each system in turn, ``repeats`` rounds) and the
median per system printed in ms, with the ratio of relaxjax to the best other system.
"""

import argparse
import math
import os
import tempfile
import time

import jax
import jax.numpy as jnp
import numpy as np

import relaxjax as relax
import relaxjax.nn as rnn
import relaxjax.numpy as rnp

D, HEADS, EPS = 768, 12, 1e-5
WIDTH = D // HEADS


def block(np_, x, p, attention=None):
    """The block in the numpy API ``np_`` (numpy, jax.numpy or relaxjax.numpy)."""

    def layer_norm(h, g, b):
        mean = h.mean(-1, keepdims=True)
        centred = h - mean
        var = (centred * centred).mean(-1, keepdims=True)
        return centred / np_.sqrt(var + EPS) * g + b

    def gelu(h):
        return 0.5 * h * (1.0 + np_.tanh(math.sqrt(2.0 / math.pi) * (h + 0.044715 * h * h * h)))

    batch, n = x.shape[0], x.shape[1]
    h = layer_norm(x, p["ln1_g"], p["ln1_b"])
    qkv = h @ p["w_qkv"] + p["b_qkv"]
    q, k, v = (qkv[:, :, i * D : (i + 1) * D].reshape(batch, n, HEADS, WIDTH) for i in range(3))
    if attention is not None:
        y = attention(q, k, v, is_causal=True)
    else:
        q, k, v = (t.transpose(0, 2, 1, 3) for t in (q, k, v))
        scores = (q @ k.transpose(0, 1, 3, 2)) * (1.0 / math.sqrt(WIDTH))
        causal = np_.tril(np_.ones((n, n), dtype=bool))
        scores = np_.where(causal, scores, -math.inf)
        e = np_.exp(scores - scores.max(-1, keepdims=True))
        y = (e / e.sum(-1, keepdims=True)) @ v
        y = y.transpose(0, 2, 1, 3)
    x = x + y.reshape(batch, n, D) @ p["w_out"] + p["b_out"]
    h = layer_norm(x, p["ln2_g"], p["ln2_b"])
    return x + gelu(h @ p["w_fc"] + p["b_fc"]) @ p["w_proj"] + p["b_proj"]


def parameters(rng: np.random.Generator) -> dict:
    shapes = {
        "ln1_g": (D,), "ln1_b": (D,), "w_qkv": (D, 3 * D), "b_qkv": (3 * D,),
        "w_out": (D, D), "b_out": (D,), "ln2_g": (D,), "ln2_b": (D,),
        "w_fc": (D, 4 * D), "b_fc": (4 * D,), "w_proj": (4 * D, D), "b_proj": (D,),
    }  # fmt: skip
    return {
        name: (rng.standard_normal(shape) * (0.02 if len(shape) == 2 else 0.1)).astype(np.float32)
        for name, shape in shapes.items()
    }


def relax_block(p: dict, fused: bool):
    names = list(p)
    specs = [relax.Tensor((1, "n", D), "float32")] + [
        relax.Tensor(p[name].shape, "float32") for name in names
    ]

    def fn(x, *weights):
        attention = rnn.dot_product_attention if fused else None
        return block(rnp, x, dict(zip(names, weights)), attention)

    jitted = relax.jit(fn)
    jitted.trace(*specs)  # one executable for every n
    return lambda x: jitted(x, *(p[name] for name in names))


def torch_systems(p: dict) -> dict:
    try:
        import torch
    except ImportError:
        return {}
    tp = {name: torch.from_numpy(value) for name, value in p.items()}

    def torch_block(x):
        """The same block in torch idioms."""
        f = torch.nn.functional
        n = x.shape[1]
        h = f.layer_norm(x, (D,), tp["ln1_g"], tp["ln1_b"], EPS)
        q, k, v = (h @ tp["w_qkv"] + tp["b_qkv"]).split(D, dim=-1)
        q, k, v = (t.reshape(1, n, HEADS, WIDTH).transpose(1, 2) for t in (q, k, v))
        scores = (q @ k.transpose(-1, -2)) * (1.0 / math.sqrt(WIDTH))
        causal = torch.ones((n, n), dtype=torch.bool).tril()
        y = torch.softmax(scores.masked_fill(~causal, -math.inf), -1) @ v
        x = x + y.transpose(1, 2).reshape(1, n, D) @ tp["w_out"] + tp["b_out"]
        h = f.layer_norm(x, (D,), tp["ln2_g"], tp["ln2_b"], EPS)
        return (
            x
            + f.gelu(h @ tp["w_fc"] + tp["b_fc"], approximate="tanh") @ tp["w_proj"]
            + tp["b_proj"]
        )

    def eager(x):
        with torch.no_grad():
            return torch_block(torch.from_numpy(x)).numpy()

    compiled_block = torch.compile(torch_block, dynamic=True)

    def compiled(x):
        with torch.no_grad():
            return compiled_block(torch.from_numpy(x)).numpy()

    return {"torch eager": eager, "torch.compile": compiled}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--lengths", type=int, nargs="+", default=[1, 32, 128, 512])
    options = parser.parse_args()
    os.environ.setdefault("RELAXJAX_CACHE_DIR", tempfile.mkdtemp(prefix="relaxjax-bench-"))

    rng = np.random.default_rng(0)
    p = parameters(rng)
    jp = {name: jnp.asarray(value) for name, value in p.items()}
    jax_block = jax.jit(lambda x: block(jnp, x, jp))
    systems = {
        "relaxjax": relax_block(p, fused=False),
        "relaxjax (rnn.attention)": relax_block(p, fused=True),
        "jax.jit": lambda x: np.asarray(jax_block(x)),
        "numpy": lambda x: block(np, x, p),
        **torch_systems(p),
    }
    ours = ("relaxjax", "relaxjax (rnn.attention)")
    print(f"GPT-2 block (1, n, {D}) float32, ms per call, median of {options.repeats} interleaved")
    print(f"{'n':>5s} " + " ".join(f"{name:>24s}" for name in systems) + "   ours / best other")
    for n in options.lengths:
        x = rng.standard_normal((1, n, D)).astype(np.float32)
        expected = block(np, x.astype(np.float64), {k: v.astype(np.float64) for k, v in p.items()})
        for name, fn in systems.items():
            np.testing.assert_allclose(
                np.asarray(fn(x)), expected, rtol=2e-3, atol=2e-3, err_msg=name
            )
        times = {name: [] for name in systems}
        for _ in range(options.repeats):
            for name, fn in systems.items():
                start = time.perf_counter()
                np.asarray(fn(x))
                times[name].append(time.perf_counter() - start)
        ms = {name: 1e3 * float(np.median(t)) for name, t in times.items()}
        best_other = min(v for name, v in ms.items() if name not in ours)
        ratios = " ".join(f"{ms[name] / best_other:5.2f}x" for name in ours)
        print(f"{n:5d} " + " ".join(f"{ms[name]:24.2f}" for name in systems) + f"   {ratios}")


if __name__ == "__main__":
    main()
