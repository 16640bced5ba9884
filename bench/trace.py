"""Time to trace and deduce shapes for a 12-layer GPT-2-small-shaped model.

relaxjax traces with a symbolic sequence length (``eval_shape`` of the whole model:
tracing, struct info deduction for every binding); jax traces the same Python model
with ``jax.make_jaxpr`` at a concrete sequence length. Both run in this process;
the best of several fresh traces is reported, with the ratio.

    python bench/trace.py [--layers 12] [--repeat 5] [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import time

import jax
import jax.numpy as jnp

import relaxjax as relax
import relaxjax.nn as rnn
import relaxjax.numpy as rnp

dot_product_attention = rnn.dot_product_attention

VOCAB, CONTEXT, D, HEADS, MLP = 50257, 1024, 768, 12, 3072


def jax_layer_norm(x, gamma, beta, eps=1e-5):
    """jax has no layer_norm function in jax.nn: the usual composition."""
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) * jax.lax.rsqrt(var + eps) * gamma + beta


RELAXJAX = {"np": rnp, "gelu": rnn.gelu, "ln": rnn.layer_norm, "attn": dot_product_attention}
JAX = {"np": jnp, "gelu": jax.nn.gelu, "ln": jax_layer_norm, "attn": jax.nn.dot_product_attention}


def gpt(params, tokens, lib):
    """GPT-2: token + position embeddings, pre-norm blocks, tied output projection."""
    batch, seq = tokens.shape
    x = params["wte"][tokens] + params["wpe"][:seq]
    for layer in params["layers"]:
        h = lib["ln"](x, layer["ln1_g"], layer["ln1_b"])
        qkv = h @ layer["w_qkv"] + layer["b_qkv"]
        q, k, v = lib["np"].split(qkv, 3, axis=-1)
        q, k, v = (t.reshape(batch, seq, HEADS, D // HEADS) for t in (q, k, v))
        attn = lib["attn"](q, k, v, is_causal=True).reshape(batch, seq, D)
        x = x + attn @ layer["w_out"] + layer["b_out"]
        h = lib["ln"](x, layer["ln2_g"], layer["ln2_b"])
        x = x + lib["gelu"](h @ layer["w_up"] + layer["b_up"]) @ layer["w_down"] + layer["b_down"]
    x = lib["ln"](x, params["lnf_g"], params["lnf_b"])
    return x @ params["wte"].T


def param_shapes(layers: int) -> dict:
    """The parameter pytree as shapes."""
    layer = {
        "ln1_g": (D,),
        "ln1_b": (D,),
        "w_qkv": (D, 3 * D),
        "b_qkv": (3 * D,),
        "w_out": (D, D),
        "b_out": (D,),
        "ln2_g": (D,),
        "ln2_b": (D,),
        "w_up": (D, MLP),
        "b_up": (MLP,),
        "w_down": (MLP, D),
        "b_down": (D,),
    }
    return {
        "wte": (VOCAB, D),
        "wpe": (CONTEXT, D),
        "lnf_g": (D,),
        "lnf_b": (D,),
        "layers": [dict(layer) for _ in range(layers)],
    }


def _specs(shapes, make):
    return jax.tree_util.tree_map(make, shapes, is_leaf=lambda s: isinstance(s, tuple))


def trace_relaxjax(layers: int) -> tuple[float, object]:
    """Seconds for one fresh trace with a symbolic sequence length, and its output spec."""
    params = _specs(param_shapes(layers), lambda s: relax.Tensor(s, "float32"))
    seq = relax.sym("s", lower=1, upper=CONTEXT)
    tokens = relax.Tensor(("b", seq), "int64")

    def model(params, tokens):
        return gpt(params, tokens, RELAXJAX)

    start = time.perf_counter()
    out = relax.eval_shape(model, params, tokens)
    return time.perf_counter() - start, out


def trace_jax(layers: int, seq: int = 128) -> tuple[float, object]:
    """Seconds for one fresh ``jax.make_jaxpr`` at a concrete sequence length."""
    params = _specs(param_shapes(layers), lambda s: jax.ShapeDtypeStruct(s, jnp.float32))
    tokens = jax.ShapeDtypeStruct((1, seq), jnp.int64)

    def model(params, tokens):
        return gpt(params, tokens, JAX)

    start = time.perf_counter()
    jaxpr = jax.make_jaxpr(model)(params, tokens)
    return time.perf_counter() - start, jaxpr.out_avals


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=12)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--profile", action="store_true", help="profile one relaxjax trace")
    args = parser.parse_args()
    jax.config.update("jax_enable_x64", True)
    jax.config.update("jax_platforms", "cpu")

    ours = min(trace_relaxjax(args.layers)[0] for _ in range(args.repeat))
    theirs = min(trace_jax(args.layers)[0] for _ in range(args.repeat))
    out = trace_relaxjax(args.layers)[1]
    print(f"GPT-2-small shape, {args.layers} layers; output {out}")
    print(f"relaxjax trace + deduce (symbolic seq len): {ours * 1e3:8.1f} ms")
    print(f"jax.make_jaxpr (seq len 128):               {theirs * 1e3:8.1f} ms")
    print(f"ratio relaxjax / jax:                       {ours / theirs:8.2f}")
    if args.profile:
        profiler = cProfile.Profile()
        profiler.runcall(trace_relaxjax, args.layers)
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(30)


if __name__ == "__main__":
    main()
