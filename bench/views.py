"""Layout views: what the reshape/transpose/slice copies of a transformer cost, and what
views save.

Two workloads, each compiled twice from the same trace - with views (the default
pipeline) and with ``make_views`` left out (every layout op a copy kernel) - and run
side by side with numpy and jax.jit in one process, interleaved, medians:

- ``heads``: a GPT-2-small attention block's layout work at (1, n, 768): qkv
  projection, split, reshape to heads, transposes, scores, softmax, values, merge of the
  heads and the output projection;
- ``logits``: ``h @ wte.T`` for one decoded token, h (1, 768), wte (50257, 768) - the
  transpose of the embedding was copied on every call.

Run ``python bench/views.py`` (``--quick`` for fewer sizes and repeats; ``--cpu-time``
on a busy machine, best with ``OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1``). Ratios are
relaxjax's time over each other system's (below 1: relaxjax is faster).
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import relaxjax as relax
import relaxjax.nn as rnn
import relaxjax.numpy as rnp
from relaxjax.passes import Pipeline, default_pipeline, make_views
from relaxjax.runtime import build_executable

C, H = 768, 12
D = C // H


def heads(x, w_qkv, b_qkv, w_out, xp):
    """The layout work of one attention block, written as a user writes it."""
    n = x.shape[1]
    qkv = x @ w_qkv + b_qkv
    q, k, v = xp.split(qkv, 3, axis=-1)
    q = q.reshape(1, n, H, D).transpose(0, 2, 1, 3)
    k = k.reshape(1, n, H, D).transpose(0, 2, 3, 1)
    v = v.reshape(1, n, H, D).transpose(0, 2, 1, 3)
    s = (q @ k) * (1.0 / D**0.5)
    if xp is np:
        e = np.exp(s - s.max(-1, keepdims=True))
        p = e / e.sum(-1, keepdims=True)
    else:
        p = (rnn if xp is rnp else _jax_nn()).softmax(s, axis=-1)
    y = (p @ v).transpose(0, 2, 1, 3).reshape(1, n, C)
    return y @ w_out


def logits(h, wte, xp):
    return h @ wte.T


def _jax_nn():
    import jax

    return jax.nn


def _without_views(mod):
    passes = tuple(p for p in default_pipeline("llvm", library=True).passes if p is not make_views)
    return Pipeline(passes)(mod)


CLOCK = time.perf_counter


def _median_ms(fn, args, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = CLOCK()
        _ready(fn(*args))
        times.append(CLOCK() - start)
    return statistics.median(times) * 1e3


def _ready(result) -> None:
    """Wait for an asynchronous (jax) result."""
    for leaf in result if isinstance(result, (tuple, list)) else (result,):
        wait = getattr(leaf, "block_until_ready", None)
        if wait is not None:
            wait()


def _systems(traced_fn, numpy_fn, jax_fn):
    """name -> callable: relaxjax with/without views, numpy, jax.jit."""
    mod = traced_fn.trace()
    systems = {
        "relaxjax views": build_executable(default_pipeline("llvm", library=True)(mod)),
        "relaxjax copies": build_executable(_without_views(mod)),
        "numpy": numpy_fn,
    }
    if jax_fn is not None:
        systems["jax.jit"] = jax_fn
    return systems


def _run(title, systems, args, rounds: int, repeats: int) -> None:
    for fn in systems.values():  # warm up (and compile jax)
        fn(*args)
    results = {name: [] for name in systems}
    for _ in range(rounds):  # interleaved: A, B, C, A, B, C, ...
        for name, fn in systems.items():
            results[name].append(_median_ms(fn, args, repeats))
    medians = {name: statistics.median(v) for name, v in results.items()}
    ours = medians["relaxjax views"]
    cells = "  ".join(f"{name} {ms:8.3f} ms" for name, ms in medians.items())
    ratios = "  ".join(
        f"x{ours / ms:5.2f} vs {name}" for name, ms in medians.items() if name != "relaxjax views"
    )
    print(f"{title:<22} {cells}")
    print(f"{'':<22} ratios (views / other): {ratios}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument(
        "--cpu-time",
        action="store_true",
        help="time with the process's CPU time (all threads): steadier on a busy machine",
    )
    options = parser.parse_args()
    if options.cpu_time:
        global CLOCK
        CLOCK = time.process_time
    sizes = (32, 128) if options.quick else (32, 128, 512)
    rounds, repeats = (3, 3) if options.quick else (5, 5)
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        jax = jnp = None
    rng = np.random.default_rng(0)
    w_qkv = (rng.standard_normal((C, 3 * C)) * 0.02).astype(np.float32)
    b_qkv = (rng.standard_normal(3 * C) * 0.02).astype(np.float32)
    w_out = (rng.standard_normal((C, C)) * 0.02).astype(np.float32)

    @relax.jit
    def heads_rj(
        x: relax.Tensor((1, "n", C), "float32"),
        wq: relax.Tensor((C, 3 * C), "float32"),
        bq: relax.Tensor((3 * C,), "float32"),
        wo: relax.Tensor((C, C), "float32"),
    ):
        return heads(x, wq, bq, wo, rnp)

    jax_heads = None if jax is None else jax.jit(lambda x, a, b, c: heads(x, a, b, c, jnp))
    systems = _systems(heads_rj, lambda *a: heads(*a, np), jax_heads)  # one executable
    for n in sizes:
        x = rng.standard_normal((1, n, C)).astype(np.float32)
        _run(f"heads n={n}", systems, (x, w_qkv, b_qkv, w_out), rounds, repeats)

    vocab = 50257
    wte = (rng.standard_normal((vocab, C)) * 0.02).astype(np.float32)
    h = rng.standard_normal((1, C)).astype(np.float32)

    @relax.jit
    def logits_rj(h: relax.Tensor(("m", C), "float32"), wte: relax.Tensor(("v", C), "float32")):
        return logits(h, wte, rnp)

    jax_logits = None if jax is None else jax.jit(lambda a, b: logits(a, b, jnp))
    systems = _systems(logits_rj, lambda a, b: logits(a, b, np), jax_logits)
    _run("logits h @ wte.T", systems, (h, wte), rounds, repeats)


if __name__ == "__main__":
    main()
