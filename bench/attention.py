"""Causal self-attention written by hand, (1, 12, n, 64) float32: fused or not.

``softmax(where(tril(ones((n, n))), q @ k.T / 8, -inf)) @ v`` compiled by relaxjax's
default pipeline (``fuse_attention`` turns it into the one fused kernel of
``dot_product_attention``: no (n, n) tensor), by the same pipeline without that pass
(two BLAS products and a fused row softmax), and by jax.jit (``jax.nn`` on the same
layout). Run it with::

    python bench/attention.py [--repeats 11] [--lengths 128 512 1024]

Calls are interleaved and the median printed in ms, with relaxjax's ratios to jax.jit.
Set ``OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1`` to compare single-threaded kernels.
"""

import argparse
import math
import time

import jax
import numpy as np

import relaxjax as relax
import relaxjax.numpy as rnp
from relaxjax.passes import Pipeline
from relaxjax.passes.attention import fuse_attention
from relaxjax.passes.pipeline import default_pipeline
from relaxjax.runtime import build_executable

HEADS, WIDTH = 12, 64


def attention(np_, q, k, v):
    n = q.shape[2]
    scores = (q @ k.swapaxes(-1, -2)) * (1.0 / math.sqrt(WIDTH))
    scores = np_.where(np_.tril(np_.ones((n, n), dtype=bool)), scores, -math.inf)
    e = np_.exp(scores - scores.max(-1, keepdims=True))
    return (e / e.sum(-1, keepdims=True)) @ v


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=11)
    parser.add_argument("--lengths", type=int, nargs="+", default=[128, 512, 1024])
    options = parser.parse_args()

    spec = relax.Tensor((1, HEADS, "n", WIDTH), "float32")
    traced = relax.jit(lambda q, k, v: attention(rnp, q, k, v)).trace(spec, spec, spec)
    full = default_pipeline("llvm", library=True)
    unfused = Pipeline(tuple(p for p in full.passes if p is not fuse_attention))
    fused_exe, unfused_exe = build_executable(full(traced)), build_executable(unfused(traced))

    def swap(x):
        return x.transpose(0, 2, 1, 3)

    jax_fn = jax.jit(
        lambda q, k, v: swap(
            jax.nn.dot_product_attention(swap(q), swap(k), swap(v), is_causal=True)
        )
    )
    print(f"causal attention (1, {HEADS}, n, {WIDTH}) float32, ms, median of {options.repeats}")
    print(f"{'n':>6s} {'fused':>10s} {'unfused':>10s} {'jax.jit':>10s}   fused/jax unfused/jax")
    for n in options.lengths:
        rng = np.random.default_rng(n)
        q, k, v = (rng.standard_normal((1, HEADS, n, WIDTH)).astype(np.float32) for _ in range(3))
        args = (q, k, v)
        systems = {
            "fused": lambda args=args: fused_exe(*args)[0],
            "unfused": lambda args=args: unfused_exe(*args)[0],
            "jax.jit": lambda args=args: np.asarray(jax_fn(*args)),
        }
        expected = attention(np, *(x.astype(np.float64) for x in (q, k, v)))
        for name, fn in systems.items():
            np.testing.assert_allclose(fn(), expected, rtol=1e-3, atol=1e-4, err_msg=name)
        times = {name: [] for name in systems}
        for _ in range(options.repeats):
            for name, fn in systems.items():
                start = time.perf_counter()
                fn()
                times[name].append(time.perf_counter() - start)
        ms = {name: 1e3 * float(np.median(t)) for name, t in times.items()}
        print(
            f"{n:6d} {ms['fused']:10.2f} {ms['unfused']:10.2f} {ms['jax.jit']:10.2f}   "
            f"{ms['fused'] / ms['jax.jit']:9.2f} {ms['unfused'] / ms['jax.jit']:11.2f}"
        )


if __name__ == "__main__":
    main()
