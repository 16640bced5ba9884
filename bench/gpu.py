"""GPU benchmarks (run on a machine with an NVIDIA GPU): ratios side by side, one run.

    python bench/gpu.py [--quick]

1. Fused elementwise (gelu(x) * y + x) and layer norm over (n, 4096) float32 vs a
   device-to-device copy of the same bytes (the HBM bandwidth of this run): GB/s and
   the share of copy bandwidth (the issue's target: >= 85%).
2. float16 and float32 matmul 4096^3 and (n, 4096) x (4096, 4096), n in {1, 16, 256},
   vs cuBLAS through torch (or cupy): ms and ratio (target: >= 0.7x cuBLAS).
3. A GPT-2-small block (d=768, 12 heads, MLP 3072) at n in {1, 128, 512} vs torch
   eager, torch.compile and jax.jit: ms and ratios.

Every timing is the median of repeated calls after warm-up, synchronised with the
device; outputs of relaxjax stay on the device (no host copies inside the timing).
Missing libraries (torch, cupy, jax) are reported and their columns skipped.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "backends" / "cuda"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import relaxjax as relax  # noqa: E402
import relaxjax.nn as rnn  # noqa: E402
from relaxjax.runtime.cuda import as_device_array, current_device, probe  # noqa: E402


def _optional(name: str):
    try:
        return __import__(name)
    except Exception as err:  # noqa: BLE001
        print(f"  ({name} unavailable: {err})")
        return None


def timed(fn, args: tuple, sync, repeat: int) -> float:
    """Median milliseconds of ``fn(*args)`` after two warm-up calls."""
    fn(*args)
    fn(*args)
    sync()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn(*args)
        sync()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def device_sync() -> None:
    current_device().synchronize()


def bench_bandwidth(repeat: int, torch) -> None:
    print("\n== fused elementwise / norm vs device-to-device copy, (n, 4096) float32")
    device = current_device()

    @relax.jit(target="cuda")
    def fused(x: relax.Tensor(("n", 4096), "float32"), y: relax.Tensor(("n", 4096), "float32")):
        return rnn.gelu(x) * y + x

    @relax.jit(target="cuda")
    def norm(x: relax.Tensor(("n", 4096), "float32"), g: relax.Tensor((4096,), "float32"),
             b: relax.Tensor((4096,), "float32")):  # fmt: skip
        return rnn.layer_norm(x, g, b)

    print(
        f"{'n':>6} {'copy GB/s':>10} {'fused GB/s':>11} {'share':>6} {'norm GB/s':>10} {'share':>6}"
    )
    for n in (1024, 8192, 32768):
        x = as_device_array(device, np.random.rand(n, 4096).astype(np.float32))
        y = as_device_array(device, np.random.rand(n, 4096).astype(np.float32))
        g = as_device_array(device, np.ones(4096, np.float32))
        b = as_device_array(device, np.zeros(4096, np.float32))
        out = x.copy()
        nbytes = x.nbytes
        copy_ms = timed(
            device.driver.copy_device, (out.ptr, x.ptr, nbytes, device.stream), device_sync, repeat
        )
        copy_gbs = 2 * nbytes / copy_ms / 1e6
        fused_gbs = 3 * nbytes / timed(fused, (x, y), device_sync, repeat) / 1e6
        norm_gbs = 2 * nbytes / timed(norm, (x, g, b), device_sync, repeat) / 1e6
        print(
            f"{n:>6} {copy_gbs:>10.0f} {fused_gbs:>11.0f} {fused_gbs / copy_gbs:>6.2f} "
            f"{norm_gbs:>10.0f} {norm_gbs / copy_gbs:>6.2f}"
        )


def bench_matmul(repeat: int, torch, cupy) -> None:
    print("\n== matmul vs cuBLAS (torch, else cupy)")
    device = current_device()
    print(f"{'dtype':>8} {'shape':>22} {'relax ms':>9} {'cuBLAS ms':>10} {'ratio':>6}")
    for dtype in ("float16", "float32"):

        def program(a, b):
            return a @ b

        program.__annotations__ = {
            "a": relax.Tensor(("m", 4096), dtype),
            "b": relax.Tensor((4096, 4096), dtype),
        }
        f = relax.jit(program, target="cuda")
        for m in (1, 16, 256, 4096):
            a_host = np.random.rand(m, 4096).astype(dtype)
            b_host = np.random.rand(4096, 4096).astype(dtype)
            a, b = as_device_array(device, a_host), as_device_array(device, b_host)
            ours = timed(f, (a, b), device_sync, repeat)
            if torch is not None:
                ta, tb = torch.from_numpy(a_host).cuda(), torch.from_numpy(b_host).cuda()
                theirs = timed(torch.matmul, (ta, tb), torch.cuda.synchronize, repeat)
            elif cupy is not None:
                ca, cb = cupy.asarray(a_host), cupy.asarray(b_host)
                theirs = timed(cupy.matmul, (ca, cb), cupy.cuda.Device().synchronize, repeat)
            else:
                theirs = float("nan")
            shape = f"({m},4096)x(4096,4096)"
            print(f"{dtype:>8} {shape:>22} {ours:>9.3f} {theirs:>10.3f} {theirs / ours:>6.2f}")


def bench_gpt2(repeat: int, torch, jax) -> None:
    from models import NAMES, block_params, gpt_block, jax_block

    print("\n== GPT-2-small block (d=768, 12 heads, MLP 3072), float32")
    device = current_device()
    rng = np.random.default_rng(0)
    params = block_params(768, 3072, rng)
    f = gpt_block(768, 12, 3072)
    device_params = [as_device_array(device, params[n]) for n in NAMES]
    header = f"{'n':>5} {'relax ms':>9} {'eager ms':>9} {'compile ms':>11} {'jax ms':>8}"
    print(header + f" {'eager/relax':>11} {'compile/relax':>13} {'jax/relax':>9}")
    torch_block = _torch_block(torch, params) if torch is not None else None
    compiled = torch.compile(torch_block) if torch_block is not None else None
    jitted = jax.jit(lambda x, p: jax_block(x, p, 12)) if jax is not None else None
    for n in (1, 128, 512):
        x_host = rng.standard_normal((n, 768)).astype(np.float32)
        x = as_device_array(device, x_host)
        ours = timed(f, (x, *device_params), device_sync, repeat)
        eager = compile_ms = jax_ms = float("nan")
        if torch_block is not None:
            tx = torch.from_numpy(x_host).cuda()
            eager = timed(torch_block, (tx,), torch.cuda.synchronize, repeat)
            compile_ms = timed(compiled, (tx,), torch.cuda.synchronize, repeat)
        if jitted is not None:
            jparams = {k: jax.device_put(v) for k, v in params.items()}
            jx = jax.device_put(x_host)
            jax_ms = timed(_ready(jitted), (jx, jparams), lambda: None, repeat)
        print(
            f"{n:>5} {ours:>9.3f} {eager:>9.3f} {compile_ms:>11.3f} {jax_ms:>8.3f} "
            f"{eager / ours:>11.2f} {compile_ms / ours:>13.2f} {jax_ms / ours:>9.2f}"
        )


def profile_gpt2() -> None:
    """``f.profile`` of the GPT-2 block on the GPU: where the time goes, kernel by kernel."""
    from models import NAMES, block_params, gpt_block

    device = current_device()
    params = block_params(768, 3072, np.random.default_rng(0))
    f = gpt_block(768, 12, 3072)
    device_params = [as_device_array(device, params[n]) for n in NAMES]
    for n in (128, 512):
        x = as_device_array(device, np.random.default_rng(n).standard_normal((n, 768), np.float32))
        f(x, *device_params)
        print(f"\n== f.profile of the GPT-2-small block at n={n}")
        print(f.profile(x, *device_params))


def _ready(jitted):
    """A jax function that waits for its result."""
    return lambda *args: jitted(*args).block_until_ready()


def _torch_block(torch, params):
    p = {k: torch.from_numpy(v).cuda() for k, v in params.items()}
    functional = torch.nn.functional

    def run(x):
        t, d = x.shape
        h = functional.layer_norm(x, (d,), p["g1"], p["b1"])
        q, k, v = (
            (h @ p[w]).reshape(1, t, 12, d // 12).transpose(1, 2) for w in ("wq", "wk", "wv")
        )
        a = functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + a.transpose(1, 2).reshape(t, d) @ p["wo"]
        h = functional.layer_norm(x, (d,), p["g2"], p["b2"])
        return x + functional.gelu(h @ p["w_fc"]) @ p["w_proj"]

    return run


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    parser.add_argument("--profile", action="store_true", help="per-kernel GPT-2 block profiles")
    args = parser.parse_args()
    found = probe()
    if not found.available:
        print(f"bench/gpu.py needs a GPU: {found.reason}")
        return 1
    device = current_device()
    print(f"device: {device.driver.device_name()} ({device.arch})")
    from relaxjax.runtime.cuda import gpu_schedule, set_gpu_schedule

    if gpu_schedule() is None:  # the default GPU rules are not installed: the test binding
        from binding import bind_kernel

        set_gpu_schedule(bind_kernel)
        print("  (no relaxjax.schedule.rules.gpu: kernels bound by tests/backends/cuda/binding.py)")
    repeat = 5 if args.quick else 20
    torch, cupy, jax = _optional("torch"), _optional("cupy"), _optional("jax")
    bench_bandwidth(repeat, torch)
    bench_matmul(repeat, torch, cupy)
    bench_gpt2(repeat, torch, jax)
    if args.profile:
        profile_gpt2()
    return 0


if __name__ == "__main__":
    sys.exit(main())
