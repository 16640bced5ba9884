"""A memory-bound chain, ``gelu(layer_norm(x) * g + b)`` on (2048, 4096) float32.

Bandwidth is counted as the bytes a perfect single pass moves: read x once and write
the result once (g and b are negligible), divided by the best time. The machine's
reference is the copy bandwidth of two threads copying 256 MiB into a preallocated
buffer (read + write). Run it with::

    python bench/elementwise.py [--repeats 10]

It prints GB/s for relaxjax, jax.jit and numpy, and each as a fraction of the copy
bandwidth.
"""

import argparse
import concurrent.futures
import os
import tempfile
import time

import jax
import numpy as np

import relaxjax as relax
import relaxjax.nn as rnn

ROWS, COLS, EPS = 2048, 4096, 1e-5


def best_seconds(fn, args, repeats: int) -> float:
    """The best of ``repeats`` timed calls, after one warm-up call."""
    np.asarray(fn(*args))
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        np.asarray(fn(*args))
        best = min(best, time.perf_counter() - start)
    return best


def numpy_chain(x: np.ndarray, g: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The chain in plain numpy (layer_norm over the last axis, tanh-approximate gelu)."""
    mean = x.mean(axis=-1, keepdims=True)
    centred = x - mean
    var = np.mean(centred * centred, axis=-1, keepdims=True)
    y = centred / np.sqrt(var + np.float32(EPS)) * g + b
    inner = np.float32(np.sqrt(2.0 / np.pi)) * (y + np.float32(0.044715) * y**3)
    return np.float32(0.5) * y * (np.float32(1.0) + np.tanh(inner))


def copy_bandwidth(repeats: int, threads: int = 2) -> float:
    """GB/s of copying 256 MiB into a preallocated destination on ``threads`` threads,
    each copying its own part with ``np.copyto`` (bytes read + bytes written)."""
    src = np.ones(256 * 2**20 // 4, dtype=np.float32)
    dst = np.empty_like(src)
    parts = np.array_split(np.arange(src.size), threads)
    bounds = [(int(p[0]), int(p[-1]) + 1) for p in parts]
    with concurrent.futures.ThreadPoolExecutor(threads) as pool:

        def copy() -> np.ndarray:
            jobs = [pool.submit(np.copyto, dst[lo:hi], src[lo:hi]) for lo, hi in bounds]
            for job in jobs:
                job.result()
            return dst

        best = best_seconds(copy, (), repeats)
    return 2 * src.nbytes / best / 1e9


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=10)
    options = parser.parse_args()

    os.environ.setdefault("RELAXJAX_CACHE_DIR", tempfile.mkdtemp(prefix="relaxjax-bench-"))

    jax.config.update("jax_enable_x64", True)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((ROWS, COLS)).astype(np.float32)
    g = rng.standard_normal(COLS).astype(np.float32)
    b = rng.standard_normal(COLS).astype(np.float32)

    @relax.jit
    def chain_relax(
        x: relax.Tensor(("n", COLS), "float32"),
        g: relax.Tensor((COLS,), "float32"),
        b: relax.Tensor((COLS,), "float32"),
    ):
        return rnn.gelu(rnn.layer_norm(x, g, b, eps=EPS))

    @jax.jit
    def chain_jax(x, g, b):
        return jax.nn.gelu(jax.nn.standardize(x, axis=-1, epsilon=EPS) * g + b)

    expected = numpy_chain(x, g, b)
    np.testing.assert_allclose(np.asarray(chain_relax(x, g, b)), expected, rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(np.asarray(chain_jax(x, g, b)), expected, rtol=1e-3, atol=1e-3)

    moved = 2 * x.nbytes
    copy = copy_bandwidth(options.repeats)
    rates = {
        name: moved / best_seconds(fn, (x, g, b), options.repeats) / 1e9
        for name, fn in (("relaxjax", chain_relax), ("jax.jit", chain_jax), ("numpy", numpy_chain))
    }
    print(f"gelu(layer_norm(x) * g + b), x: ({ROWS}, {COLS}) float32, best of {options.repeats}")
    print(f"  {'copy (2 threads, 256 MiB)':24s} {copy:7.2f} GB/s")
    for name, rate in rates.items():
        print(
            f"  {name:24s} {rate:7.2f} GB/s   {rate / copy:5.2f} of copy   "
            f"{rate / rates['jax.jit']:5.2f}x jax.jit"
        )


if __name__ == "__main__":
    main()
