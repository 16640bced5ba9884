"""float32 matrix products: relaxjax's generated code (default rules, no tuning, no BLAS)
against numpy (OpenBLAS) and jax.jit, side by side.

Shapes: ``1024 x 1024 x 1024`` and ``(n, 4096) @ (4096, 4096)`` for n in 1, 16, 256.
relaxjax compiles ONE kernel for every shape (all three dims symbolic) through the
default pipeline with library dispatch off, so the matmul runs the code the
``matmul`` schedule rule generates. Run it with::

    python bench/matmul.py [--repeats 5] [--threads N] [--settle 0.1]

``--threads`` sets OMP_NUM_THREADS / OPENBLAS_NUM_THREADS before anything loads
(default: leave them as they are). It prints GFLOP/s (best of ``repeats`` calls,
interleaved so that the three see the same machine load) and relaxjax's ratio to each.
Each timed call starts ``--settle`` seconds after the previous one: OpenBLAS's and
XLA's worker threads busy-wait for a while after a call returns, and on two cores
the next contender would otherwise share its cores with them (``--settle 0`` shows
that cost; it falls on whoever runs next).
"""

import argparse
import os
import sys
import time


def _parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--settle", type=float, default=0.1)
    return parser.parse_args()


ARGS = _parse() if __name__ == "__main__" else None
if ARGS is not None and ARGS.threads is not None:
    for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ[name] = str(ARGS.threads)

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import relaxjax as relax  # noqa: E402
from relaxjax.runtime import build_executable  # noqa: E402

SHAPES = [(1024, 1024, 1024), (1, 4096, 4096), (16, 4096, 4096), (256, 4096, 4096)]


@relax.jit
def product(a: relax.Tensor(("m", "k"), "float32"), b: relax.Tensor(("k", "n"), "float32")):
    return a @ b


def best_times(fns: dict, repeats: int, settle: float = 0.0) -> dict:
    """Best wall time of each function, calls interleaved round-robin after a warm-up,
    each ``settle`` seconds after the previous one returned."""
    for fn in fns.values():
        fn()
    best = {name: float("inf") for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            time.sleep(settle)
            start = time.perf_counter()
            fn()
            best[name] = min(best[name], time.perf_counter() - start)
    return best


def _contenders(exe, jax_matmul, a: np.ndarray, b: np.ndarray, out: np.ndarray) -> dict:
    """The three products of ``a @ b``, as functions of no arguments."""
    ja, jb = jnp.asarray(a), jnp.asarray(b)
    return {
        "relaxjax": lambda: exe(a, b),
        "numpy": lambda: np.matmul(a, b, out=out),
        "jax": lambda: jax_matmul(ja, jb).block_until_ready(),
    }


def main() -> None:
    repeats = ARGS.repeats if ARGS is not None else 5
    settle = ARGS.settle if ARGS is not None else 0.1
    start = time.perf_counter()
    exe = build_executable(product.trace(), library=False)
    compile_s = time.perf_counter() - start
    rules = {name: dict(k.attrs).get("schedule_rule") for name, k in exe.module.kernels().items()}
    jax_matmul = jax.jit(jnp.matmul)
    threads = os.environ.get("OMP_NUM_THREADS", "default")
    print(
        f"float32 matmul, GFLOP/s (best of {repeats}, {settle} s apart), threads={threads}, "
        f"cpus={os.cpu_count()}"
    )
    print(f"relaxjax: one kernel for every shape, compiled in {compile_s:.2f} s, rules {rules}")
    print(
        f"{'m x k x n':>20} {'relaxjax':>9} {'numpy':>9} {'jax':>9} {'vs numpy':>9} {'vs jax':>7}"
    )
    rng = np.random.default_rng(0)
    for m, k, n in SHAPES:
        a = rng.standard_normal((m, k), dtype=np.float32)
        b = rng.standard_normal((k, n), dtype=np.float32)
        out = np.empty((m, n), np.float32)
        (ours,) = exe(a, b)
        np.testing.assert_allclose(ours, a @ b, rtol=1e-3, atol=1e-2)
        times = best_times(_contenders(exe, jax_matmul, a, b, out), repeats, settle)
        flops = 2.0 * m * k * n
        rate = {name: flops / t / 1e9 for name, t in times.items()}
        print(
            f"{f'{m} x {k} x {n}':>20} {rate['relaxjax']:9.1f} {rate['numpy']:9.1f} "
            f"{rate['jax']:9.1f} {rate['relaxjax'] / rate['numpy']:8.2f}x "
            f"{rate['relaxjax'] / rate['jax']:6.2f}x"
        )
        sys.stdout.flush()


if __name__ == "__main__":
    main()
