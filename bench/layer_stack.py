"""A 12-layer GPT-2-small stack on (1, n, 768) float32 at n = 128: compile time and speed.

Each layer is a pre-norm block (causal self-attention, 12 heads of 64, written out by
hand as a new user would, and a tanh-gelu MLP, with residuals), each with its own
weights. Measured side by side:

1. **first result in a fresh process** (``python`` started for it; timed: importing
   the system, tracing, compiling, one call): relaxjax with an empty disk cache,
   relaxjax again with the disk cache the first run left (warm: the whole executable is
   loaded, see ``docs/architecture.md``), jax.jit with no persistent cache and again with
   the persistent compilation cache its first run filled, torch.compile when importable,
   numpy; each split into the import, the first call, and one more call (the run alone),
   so that the first call's overhead over a run shows;
2. **steady time per call**, interleaved (one call of each system in turn), medians:
   relaxjax, jax.jit, numpy, and torch eager / torch.compile when torch is importable;
3. relaxjax's ``f.profile`` of one steady call: where the time goes.

Run it with::

    python bench/layer_stack.py [--layers 12] [--n 128] [--repeats 7] [--systems relaxjax numpy]

Targets (issue 11): the first result in a fresh process <= jax.jit's; with a warm disk
cache <= 0.1 s + one run; steady <= 0.8x the best other system.
"""

import argparse
import functools
import json
import math
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

D, HEADS, EPS = 768, 12, 1e-5
WIDTH = D // HEADS
NAMES = ("ln1_g", "ln1_b", "w_qkv", "b_qkv", "w_o", "b_o", "ln2_g", "ln2_b", "w1", "b1", "w2", "b2")


def block(np_, x, p):
    """One layer in the numpy API ``np_`` (numpy, jax.numpy or relaxjax.numpy)."""

    def layer_norm(h, g, b):
        mean = np_.mean(h, axis=-1, keepdims=True)
        centred = h - mean
        var = np_.mean(centred * centred, axis=-1, keepdims=True)
        return centred / np_.sqrt(var + EPS) * g + b

    def gelu(h):
        return 0.5 * h * (1.0 + np_.tanh(math.sqrt(2.0 / math.pi) * (h + 0.044715 * h * h * h)))

    n = x.shape[1]
    h = layer_norm(x, p["ln1_g"], p["ln1_b"])
    qkv = h @ p["w_qkv"] + p["b_qkv"]
    q, k, v = (
        np_.transpose(qkv[:, :, i * D : (i + 1) * D].reshape(1, n, HEADS, WIDTH), (0, 2, 1, 3))
        for i in range(3)
    )
    scores = (q @ np_.transpose(k, (0, 1, 3, 2))) * (1.0 / math.sqrt(WIDTH))
    causal = np_.arange(n)[:, None] < np_.arange(n)[None, :]
    scores = np_.where(causal, -np.inf, scores)
    scores = np_.exp(scores - np_.max(scores, axis=-1, keepdims=True))
    attention = (scores / np_.sum(scores, axis=-1, keepdims=True)) @ v
    x = x + np_.transpose(attention, (0, 2, 1, 3)).reshape(1, n, D) @ p["w_o"] + p["b_o"]
    h = layer_norm(x, p["ln2_g"], p["ln2_b"])
    return x + gelu(h @ p["w1"] + p["b1"]) @ p["w2"] + p["b2"]


def stack(np_, x, layers):
    for p in layers:
        x = block(np_, x, p)
    return x


def make_layers(count: int, seed: int = 0) -> list[dict]:
    rng = np.random.default_rng(seed)
    shapes = {
        "w_qkv": (D, 3 * D),
        "b_qkv": (3 * D,),
        "w_o": (D, D),
        "w1": (D, 4 * D),
        "b1": (4 * D,),
        "w2": (4 * D, D),
    }
    layers = []
    for _ in range(count):
        p = {}
        for name in NAMES:
            shape = shapes.get(name, (D,))
            scale = 1.0 if name.endswith("_g") else 0.02
            base = 1.0 if name.endswith("_g") else 0.0
            p[name] = (base + scale * rng.standard_normal(shape)).astype(np.float32)
        layers.append(p)
    return layers


def systems(only: str | None = None):
    """name -> a function of (x, layers) returning an array; with ``only``, that system
    alone (a fresh process imports nothing else)."""
    out = {}
    if only in (None, "relaxjax"):
        import relaxjax as relax
        import relaxjax.numpy as rnp

        out["relaxjax"] = relax.jit(lambda x, layers: stack(rnp, x, layers))
    if only in (None, "jax.jit"):
        import jax
        import jax.numpy as jnp

        out["jax.jit"] = jax.jit(lambda x, layers: stack(jnp, x, layers))
    if only in (None, "numpy"):
        out["numpy"] = lambda x, layers: stack(np, x, layers)
    if only not in (None, "torch.compile"):
        return out
    try:
        import torch

        def to_torch(layers):
            return [{k: torch.from_numpy(v) for k, v in p.items()} for p in layers]

        def eager(x, layers, _cache={}):  # noqa: B006 - converted weights kept per layers id
            key = id(layers)
            if key not in _cache:
                _cache[key] = to_torch(layers)
            with torch.no_grad():
                return stack(_TorchNp, torch.from_numpy(x), _cache[key]).numpy()

        out["torch eager"] = eager
        compiled = torch.compile(lambda x, layers: stack(_TorchNp, x, layers))

        def torch_compiled(x, layers, _cache={}):  # noqa: B006
            key = id(layers)
            if key not in _cache:
                _cache[key] = to_torch(layers)
            with torch.no_grad():
                return compiled(torch.from_numpy(x), _cache[key]).numpy()

        out["torch.compile"] = torch_compiled
    except ImportError:
        pass
    if only is not None:
        return {name: fn for name, fn in out.items() if name == only}
    return out


class _TorchNp:
    """The few numpy functions ``block`` uses, for torch tensors."""

    @staticmethod
    def mean(x, axis, keepdims):
        return x.mean(dim=axis, keepdim=keepdims)

    @staticmethod
    def sum(x, axis, keepdims):
        return x.sum(dim=axis, keepdim=keepdims)

    @staticmethod
    def max(x, axis, keepdims):
        return x.amax(dim=axis, keepdim=keepdims)

    @staticmethod
    def transpose(x, axes):
        return x.permute(*axes)

    @staticmethod
    def sqrt(x):
        import torch

        return torch.sqrt(x)

    @staticmethod
    def tanh(x):
        import torch

        return torch.tanh(x)

    @staticmethod
    def exp(x):
        import torch

        return torch.exp(x)

    @staticmethod
    def arange(n):
        import torch

        return torch.arange(n)

    @staticmethod
    def where(c, a, b):
        import torch

        return torch.where(c, torch.tensor(a, dtype=b.dtype), b)


# The clock starts after the weights are made (seconds of random numbers, the same for
# every system): it covers importing the system, tracing, compiling and the call. A second
# call times the run alone.
_FRESH = """
import json, sys, time
sys.path.insert(0, {here!r})
import numpy as np
import layer_stack as ls
layers = ls.make_layers({layers})
x = np.random.default_rng(1).standard_normal((1, {n}, ls.D)).astype(np.float32)
start = time.perf_counter()
fn = ls.systems({system!r})[{system!r}]
imported = time.perf_counter()
np.asarray(fn(x, layers))
first = time.perf_counter()
np.asarray(fn(x, layers))
print(json.dumps(dict(imports=imported - start, first_call=first - imported,
                      run=time.perf_counter() - first, total=first - start)))
"""


def fresh_process(system: str, layers: int, n: int, cache_dir: str, env=None) -> dict:
    """Seconds to the first result in a new Python (``total``: importing the system,
    tracing, compiling and the call, not making the weights), split into ``imports`` and
    ``first_call``, and ``run``: a second call. ``env``: extra environment variables."""
    env = dict(os.environ, RELAXJAX_CACHE_DIR=cache_dir, **(env or {}))
    code = _FRESH.format(
        here=os.path.dirname(os.path.abspath(__file__)), layers=layers, n=n, system=system
    )
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"{system} failed in a fresh process:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def _jax_persistent_cache(directory: str) -> dict:
    """Environment variables turning on jax's persistent compilation cache in ``directory``
    for every compiled program (however small or fast to compile)."""
    return {
        "JAX_COMPILATION_CACHE_DIR": directory,
        "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
        "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "0",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=12)
    parser.add_argument("--n", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--systems", nargs="*", help="steady part: only these (default: all)")
    parser.add_argument("--no-fresh", action="store_true", help="skip the fresh processes")
    args = parser.parse_args()

    print(f"# {args.layers}-layer GPT-2-small stack, x (1, {args.n}, {D}) float32")
    if not args.no_fresh:
        first_results(args)
    steady(args)


def first_results(args) -> None:
    print("\n## first result in a fresh process (s)")
    fresh = functools.partial(fresh_process, layers=args.layers, n=args.n)
    rows = {}
    with tempfile.TemporaryDirectory() as cache:
        rows["relaxjax (empty disk cache)"] = fresh("relaxjax", cache_dir=cache)
        rows["relaxjax (warm disk cache)"] = fresh("relaxjax", cache_dir=cache)
    with tempfile.TemporaryDirectory() as cache:
        rows["jax.jit"] = fresh("jax.jit", cache_dir=cache)
        persistent = _jax_persistent_cache(os.path.join(cache, "jax"))
        fresh("jax.jit", cache_dir=cache, env=persistent)  # fills jax's cache
        rows["jax.jit (persistent cache)"] = fresh("jax.jit", cache_dir=cache, env=persistent)
        if "torch.compile" in systems("torch.compile"):
            rows["torch.compile"] = fresh("torch.compile", cache_dir=cache)
        rows["numpy"] = fresh("numpy", cache_dir=cache)
    print(f"{'':30s} {'total':>8s} {'imports':>8s} {'1st call':>8s} {'run':>8s} {'1st-run':>8s}")
    for name, r in rows.items():
        overhead = r["total"] - r["run"]
        print(
            f"{name:30s} {r['total']:8.2f} {r['imports']:8.2f} {r['first_call']:8.2f} "
            f"{r['run']:8.2f} {overhead:8.2f}"
        )
    cold, warm = rows["relaxjax (empty disk cache)"], rows["relaxjax (warm disk cache)"]
    jax_cold, jax_warm = rows["jax.jit"], rows["jax.jit (persistent cache)"]
    print(
        f"ratio relaxjax / jax.jit: {cold['total'] / jax_cold['total']:.2f} (empty caches), "
        f"{warm['total'] / jax_warm['total']:.2f} (warm caches)"
    )
    print(
        f"relaxjax warm: first result - one run = {warm['total'] - warm['run']:.3f} s "
        f"(imports {warm['imports']:.3f} s; target 0.1 s)"
    )


def steady(args) -> None:
    layers = make_layers(args.layers)
    x = np.random.default_rng(1).standard_normal((1, args.n, D)).astype(np.float32)
    fns = systems()
    if args.systems:
        fns = {name: fn for name, fn in fns.items() if name in args.systems or name == "numpy"}
    reference = np.asarray(fns["numpy"](x, layers))
    for name, fn in fns.items():  # compile, warm up, check
        got = np.asarray(fn(x, layers))
        np.testing.assert_allclose(got, reference, rtol=2e-2, atol=2e-2, err_msg=name)
    times: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(args.repeats):
        for name, fn in fns.items():
            start = time.perf_counter()
            np.asarray(fn(x, layers))
            times[name].append(time.perf_counter() - start)
    medians = {name: 1e3 * sorted(t)[len(t) // 2] for name, t in times.items()}
    print(f"\n## steady time per call (ms, median of {args.repeats}, interleaved)")
    for name, ms in medians.items():
        print(f"{name:28s} {ms:8.2f}")
    best = min(ms for name, ms in medians.items() if name != "relaxjax")
    print(f"ratio relaxjax / best other: {medians['relaxjax'] / best:.2f}")

    print("\n## relaxjax profile of one steady call")
    print(fns["relaxjax"].profile(x, layers))


if __name__ == "__main__":
    main()
