"""Language-model generation with a KV cache: GPT-2 124M float32 on the CPU, side by side.

Measured, each system on the same weights (random, GPT-2 small's shapes):

- **prefill**: ms to run a prompt of n tokens (n in --n) into an empty cache, batch b;
- **decode**: tokens/s of one-token steps with m positions already cached (m in --m);
- for relaxjax, the decode's achieved GB/s of weight reads (every weight read once per
  step) against the machine's copy bandwidth (two threads, as bench/elementwise.py);
- how many times each system compiled.

Systems:

- ``relaxjax``: examples/kv_cache.py, a contiguous cache grown in place (prefill and decode
  each compiled once for every b, n and m);
- ``jax``: jax.jit with the cache at its length (``concatenate``): one compile per new n
  and per new m, counted; steady times are those of a second call at the same shapes;
- ``jax-padded``: jax.jit with a fixed-capacity cache written by ``dynamic_update_slice``
  and the prompt padded to one bucket (the largest n): one compile each, attention over the
  whole capacity, masked;
- ``torch``: torch eager with its own preallocated KV cache (when torch is installed).

Run it with::

    python bench/generate.py                       # the full table (minutes on a quiet machine)
    python bench/generate.py --n 16 --m 128 --batch 1 --layers 2 --steps 3   # a quick look
    python bench/generate.py --profile             # relaxjax's decode profile, m=512, b=1
    python bench/generate.py --target cuda         # on a GPU (relaxjax with CUDA graphs)

Targets (issue 13): decode tokens/s >= 1.25x the best other system at every m, the first
token of a new prompt length with no recompile, decode weight reads >= 70% of the copy
bandwidth.
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "examples"))

from decoders import GPT2Config, random_weights  # noqa: E402
from kv_cache import Decoder  # noqa: E402


def _copy_bandwidth() -> float:
    spec = importlib.util.spec_from_file_location(
        "bench_elementwise", ROOT / "bench" / "elementwise.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module.copy_bandwidth(repeats=5)


def _device_copy_bandwidth(nbytes: int = 1 << 30, repeats: int = 5) -> float:
    """GB/s of a device-to-device copy on the GPU (bytes read plus bytes written)."""
    from relaxjax.runtime.cuda import current_device
    from relaxjax.runtime.cuda.array import copy_device, device_empty

    device = current_device()
    source = device_empty(device, (nbytes,), np.uint8)
    destination = device_empty(device, (nbytes,), np.uint8)
    copy_device(destination, source)
    device.synchronize()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        copy_device(destination, source)
        device.synchronize()
        times.append(time.perf_counter() - start)
    return 2 * nbytes / float(np.median(times)) / 1e9


def _median_seconds(run, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


# -- relaxjax --------------------------------------------------------------------------------------


class Relax:
    name = "relaxjax"

    def __init__(self, cfg: GPT2Config, w: dict[str, np.ndarray], target: str) -> None:
        self.decoder = Decoder(cfg, w, target="llvm" if target == "cpu" else "cuda")

    def prefill(self, tokens: np.ndarray, capacity: int):
        cache = self.decoder.new_cache(len(tokens), capacity)
        return self.decoder.prefill(tokens, cache)

    def decode(self, state, token):
        logits, state = self.decoder.decode(token, state)
        return np.asarray(logits), state

    def compiles(self) -> int:
        return self.decoder.prefill_fn.cache_size() + self.decoder.decode_fn.cache_size()


# -- jax -------------------------------------------------------------------------------------------


def _jax_gpt2(cfg: GPT2Config):
    """GPT-2 in jax over the weight dict: ``step(w, tokens, k, v, m, last)`` with per-layer
    caches ``(b, S, h, d)`` of which positions ``< m + n`` are valid (keys beyond masked)."""
    import jax
    import jax.numpy as jnp

    def norm(x, w, name):
        mu = x.mean(-1, keepdims=True)
        var = ((x - mu) ** 2).mean(-1, keepdims=True)
        return (x - mu) * jax.lax.rsqrt(var + cfg.eps) * w[name + ".weight"] + w[name + ".bias"]

    def layer(w, i, x, k_cache, v_cache, m, write):
        b, n, _ = x.shape
        p = f"h.{i}."
        h = norm(x, w, p + "ln_1") @ w[p + "attn.c_attn.weight"] + w[p + "attn.c_attn.bias"]
        q, k, v = (t.reshape(b, n, cfg.heads, cfg.head_dim) for t in jnp.split(h, 3, -1))
        k_cache, v_cache = write(k_cache, k), write(v_cache, v)
        s = k_cache.shape[1]
        scores = jnp.einsum("bqhd,bkhd->bhqk", q, k_cache) / math.sqrt(cfg.head_dim)
        visible = jnp.arange(s)[None, :] <= (m + jnp.arange(n))[:, None]
        scores = jnp.where(visible, scores, -1e30)
        a = jnp.einsum("bhqk,bkhd->bqhd", jax.nn.softmax(scores, -1), v_cache).reshape(b, n, -1)
        x = x + a @ w[p + "attn.c_proj.weight"] + w[p + "attn.c_proj.bias"]
        h = jax.nn.gelu(norm(x, w, p + "ln_2") @ w[p + "mlp.c_fc.weight"] + w[p + "mlp.c_fc.bias"])
        return x + h @ w[p + "mlp.c_proj.weight"] + w[p + "mlp.c_proj.bias"], k_cache, v_cache

    def run(w, tokens, ks, vs, m, last, write):
        n = tokens.shape[1]
        x = w["wte.weight"][tokens] + w["wpe.weight"][m + jnp.arange(n)]
        new_k, new_v = [], []
        for i in range(cfg.layers):
            x, k, v = layer(w, i, x, ks[i], vs[i], m, lambda c, u: write(c, u, m))
            new_k.append(k)
            new_v.append(v)
        x = jax.lax.dynamic_index_in_dim(x, last, axis=1, keepdims=False)
        return norm(x, w, "ln_f") @ w["lm_head.weight"], new_k, new_v

    return run


class Jax:
    """jax.jit, the cache at its length (concatenate): a compile per new shape."""

    name = "jax"

    def __init__(self, cfg: GPT2Config, w: dict[str, np.ndarray]) -> None:
        import jax
        import jax.numpy as jnp

        self.cfg, self.traces = cfg, 0
        run = _jax_gpt2(cfg)

        def step(w, tokens, ks, vs):
            self.traces += 1
            m = ks[0].shape[1]
            return run(w, tokens, ks, vs, m, tokens.shape[1] - 1,
                       lambda c, u, m: jnp.concatenate([c, u], axis=1))  # fmt: skip

        self.step = jax.jit(step)
        self.w = {k: jnp.asarray(v) for k, v in w.items()}

    def prefill(self, tokens: np.ndarray, capacity: int):
        shape = (len(tokens), 0, self.cfg.heads, self.cfg.head_dim)
        empty = [np.zeros(shape, np.float32)] * self.cfg.layers
        logits, k, v = self.step(self.w, tokens, empty, empty)
        return np.asarray(logits), (k, v)

    def decode(self, state, token):
        logits, k, v = self.step(self.w, token, *state)
        return np.asarray(logits), (k, v)

    def compiles(self) -> int:
        return self.traces


class JaxPadded:
    """jax.jit with a fixed-capacity cache (dynamic_update_slice) and prompts padded to one
    bucket: one compile for prefill, one for decode."""

    name = "jax-padded"

    def __init__(self, cfg: GPT2Config, w: dict[str, np.ndarray], bucket: int) -> None:
        import jax
        import jax.numpy as jnp

        self.cfg, self.bucket, self.traces = cfg, bucket, 0
        run = _jax_gpt2(cfg)

        def write(cache, update, m):
            return jax.lax.dynamic_update_slice(
                cache, update, (jnp.int32(0), m, jnp.int32(0), jnp.int32(0))
            )

        def step(w, tokens, ks, vs, m, last):
            self.traces += 1
            return run(w, tokens, ks, vs, m, last, write)

        self.step = jax.jit(step, donate_argnums=(2, 3))
        self.w = {k: jnp.asarray(v) for k, v in w.items()}

    def prefill(self, tokens: np.ndarray, capacity: int):
        b, n = tokens.shape
        padded = np.zeros((b, max(self.bucket, n)), np.int32)
        padded[:, :n] = tokens
        shape = (b, capacity + padded.shape[1], self.cfg.heads, self.cfg.head_dim)
        ks = [np.zeros(shape, np.float32) for _ in range(self.cfg.layers)]
        vs = [np.zeros(shape, np.float32) for _ in range(self.cfg.layers)]
        logits, k, v = self.step(self.w, padded, ks, vs, np.int32(0), np.int32(n - 1))
        return np.asarray(logits), (k, v, n)

    def decode(self, state, token):
        k, v, m = state
        logits, k, v = self.step(self.w, token, k, v, np.int32(m), np.int32(0))
        return np.asarray(logits), (k, v, m + 1)

    def compiles(self) -> int:
        return self.traces


# -- torch ---------------------------------------------------------------------------------------


class Torch:
    """torch eager, its own preallocated KV cache written in place."""

    name = "torch"

    def __init__(self, cfg: GPT2Config, w: dict[str, np.ndarray], target: str) -> None:
        import torch

        self.torch, self.cfg = torch, cfg
        self.device = "cpu" if target == "cpu" else "cuda"
        self.w = {k: torch.from_numpy(v).to(self.device) for k, v in w.items()}

    def _norm(self, x, name):
        f = self.torch.nn.functional
        return f.layer_norm(
            x, x.shape[-1:], self.w[name + ".weight"], self.w[name + ".bias"], self.cfg.eps
        )

    def _run(self, tokens, state):
        torch, cfg, w = self.torch, self.cfg, self.w
        f = torch.nn.functional
        ks, vs, m = state
        b, n = tokens.shape
        with torch.no_grad():
            x = w["wte.weight"][tokens] + w["wpe.weight"][m : m + n]
            for i in range(cfg.layers):
                p = f"h.{i}."
                h = torch.addmm(
                    w[p + "attn.c_attn.bias"],
                    self._norm(x, p + "ln_1").view(b * n, -1),
                    w[p + "attn.c_attn.weight"],
                )
                q, k, v = h.view(b, n, 3, cfg.heads, cfg.head_dim).permute(2, 0, 3, 1, 4)
                ks[i][:, :, m : m + n] = k
                vs[i][:, :, m : m + n] = v
                a = f.scaled_dot_product_attention(
                    q, ks[i][:, :, : m + n], vs[i][:, :, : m + n],
                    attn_mask=torch.ones(n, m + n, dtype=torch.bool, device=self.device).tril(m),
                )  # fmt: skip
                a = a.transpose(1, 2).reshape(b * n, -1)
                x = x + torch.addmm(w[p + "attn.c_proj.bias"], a, w[p + "attn.c_proj.weight"]).view(
                    b, n, -1
                )
                h = f.gelu(
                    torch.addmm(
                        w[p + "mlp.c_fc.bias"],
                        self._norm(x, p + "ln_2").view(b * n, -1),
                        w[p + "mlp.c_fc.weight"],
                    ),
                    approximate="tanh",
                )
                x = x + torch.addmm(w[p + "mlp.c_proj.bias"], h, w[p + "mlp.c_proj.weight"]).view(
                    b, n, -1
                )
            logits = self._norm(x[:, -1], "ln_f") @ w["lm_head.weight"]
        return logits.cpu().numpy(), (ks, vs, m + n)

    def prefill(self, tokens: np.ndarray, capacity: int):
        torch, cfg = self.torch, self.cfg
        shape = (len(tokens), cfg.heads, capacity, cfg.head_dim)
        ks = [torch.zeros(shape, device=self.device) for _ in range(cfg.layers)]
        vs = [torch.zeros(shape, device=self.device) for _ in range(cfg.layers)]
        return self._run(torch.from_numpy(tokens.astype(np.int64)).to(self.device), (ks, vs, 0))

    def decode(self, state, token):
        return self._run(self.torch.from_numpy(token.astype(np.int64)).to(self.device), state)

    def compiles(self) -> int:
        return 0


# -- the table -----------------------------------------------------------------------------------


def _systems(names, cfg, w, bucket, target):
    made = []
    for name in names:
        if name == "relaxjax":
            made.append(Relax(cfg, w, target))
        elif name == "jax":
            made.append(Jax(cfg, w))
        elif name == "jax-padded":
            made.append(JaxPadded(cfg, w, bucket))
        elif name == "torch":
            try:
                import torch

                torch.set_num_threads(os.cpu_count() or 1)
            except ImportError:
                print("torch: not installed, left out")
                continue
            made.append(Torch(cfg, w, target))
    return made


def _prompt(rng, cfg, b, n):
    return rng.integers(0, cfg.vocab, (b, n)).astype(np.int32)


def prefill_times(system, cfg, ns, batches, repeats, capacity) -> dict:
    """(b, n) -> (steady seconds, first call's seconds, compile included)."""
    rng = np.random.default_rng(0)
    out = {}
    for b in batches:
        for n in ns:
            tokens = _prompt(rng, cfg, b, n)
            start = time.perf_counter()
            system.prefill(tokens, capacity)
            first = time.perf_counter() - start
            steady = _median_seconds(lambda: system.prefill(tokens, capacity), repeats)  # noqa: B023
            out[b, n] = (steady, first)
    return out


def decode_times(system, cfg, ms, batches, steps, capacity) -> dict:
    """(b, m) -> the median seconds of a decode step after m cached positions."""
    rng = np.random.default_rng(1)
    out = {}
    for b in batches:
        for m in ms:
            logits, state = system.prefill(_prompt(rng, cfg, b, m), capacity)
            token = np.asarray(logits).argmax(-1).astype(np.int32)[:, None]
            if system.name == "jax":  # a compile per new m: time a step at a seen shape
                system.decode(state, token)
            else:  # the first step compiles, once per system (per b for jax-padded)
                logits, state = system.decode(state, token)
                token = np.asarray(logits).argmax(-1).astype(np.int32)[:, None]
            times = []
            for _ in range(steps):
                start = time.perf_counter()
                if system.name == "jax":
                    logits, _ = system.decode(state, token)  # the same m again: no compile
                else:
                    logits, state = system.decode(state, token)
                times.append(time.perf_counter() - start)
                token = np.asarray(logits).argmax(-1).astype(np.int32)[:, None]
            out[b, m] = float(np.median(times))
    return out


def print_tables(names, prefill, decode, weight_bytes, copy_gbs, steps) -> None:
    print(
        "\nprefill: ms per prompt of n tokens (median; first call, compile included, in brackets)"
    )
    print(f"  {'b':>2} {'n':>5}  " + "  ".join(f"{name:>20}" for name in names))
    for key in next(iter(prefill.values()), {}):
        cells = [
            f"{prefill[s][key][0] * 1e3:8.1f} ({prefill[s][key][1] * 1e3:7.0f})" for s in names
        ]
        print(f"  {key[0]:>2} {key[1]:>5}  " + "  ".join(f"{c:>20}" for c in cells))
    print(
        f"\ndecode: tokens/s, median of {steps} steps after m cached positions (one step first, "
        "untimed); relaxjax: weight GB/s and its share of the copy bandwidth"
    )
    print(f"  {'b':>2} {'m':>5}  " + "  ".join(f"{name:>20}" for name in names))
    for key in next(iter(decode.values()), {}):
        cells = []
        for name in names:
            seconds = decode[name][key]
            cell = f"{key[0] / seconds:8.1f}"
            if name == "relaxjax":
                gbs = weight_bytes / seconds / 1e9
                cell += f" {gbs:5.1f}GB/s" + (f" {gbs / copy_gbs:4.0%}" if copy_gbs else "")
            cells.append(cell)
        print(f"  {key[0]:>2} {key[1]:>5}  " + "  ".join(f"{c:>20}" for c in cells))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, nargs="+", default=[16, 128, 512])
    parser.add_argument("--m", type=int, nargs="+", default=[128, 512, 1024])
    parser.add_argument("--batch", type=int, nargs="+", default=[1, 8])
    parser.add_argument("--layers", type=int, default=12)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--systems", nargs="+", default=["relaxjax", "jax-padded", "jax", "torch"])
    parser.add_argument("--profile", action="store_true", help="relaxjax's decode profile only")
    gpu = "cuda: relaxjax (CUDA graphs on), torch and jax on the GPU"
    parser.add_argument("--target", choices=("cpu", "cuda"), default="cpu", help=gpu)
    options = parser.parse_args()
    os.environ.setdefault("RELAXJAX_CACHE_DIR", tempfile.mkdtemp(prefix="relaxjax-bench-"))
    import jax

    jax.config.update("jax_enable_x64", True)
    if options.target == "cpu":
        jax.config.update("jax_platforms", "cpu")

    # positions beyond GPT-2's 1024 (m = 1024 plus the decoded steps): a longer wpe
    longest = max(max(options.m), max(options.n)) + options.steps + 2
    cfg = GPT2Config(layers=options.layers, context=max(1024, longest))
    w = random_weights(cfg)
    weight_bytes = sum(a.nbytes for k, a in w.items() if k != "wte.weight" and k != "wpe.weight")
    if options.profile:
        _profile(cfg, w)
        return
    cpu = options.target == "cpu"
    copy_gbs = _copy_bandwidth() if cpu else _device_copy_bandwidth()
    print(
        f"GPT-2 {cfg.layers} layers, float32, target {options.target}, {os.cpu_count()} CPUs; "
        f"copy bandwidth ({'2 threads' if cpu else 'device to device'}) {copy_gbs:.1f} GB/s; "
        "decode reads "
        f"{weight_bytes / 1e9:.2f} GB of weights per step"
    )
    capacity = max(max(options.m), max(options.n)) + options.steps + 2
    # one system after the other (not interleaved): another library's worker threads, still
    # spinning from its last call, would slow the next system down
    prefill, decode, compiles = {}, {}, {}
    for name in options.systems:
        made = _systems([name], cfg, w, max(options.n), options.target)
        if not made:
            continue
        system = made[0]
        prefill[name] = prefill_times(
            system, cfg, options.n, options.batch, options.repeats, capacity
        )
        decode[name] = decode_times(system, cfg, options.m, options.batch, options.steps, capacity)
        compiles[name] = system.compiles()
        print(f"  ({name} done)", flush=True)
        del made, system
    print_tables(list(prefill), prefill, decode, weight_bytes, copy_gbs, options.steps)
    print("\ncompiles: " + ", ".join(f"{name} {count}" for name, count in compiles.items()))


def _profile(cfg: GPT2Config, w) -> None:
    decoder = Decoder(cfg, w)
    cache = decoder.new_cache(1, 1024)
    tokens = np.random.default_rng(0).integers(0, cfg.vocab, (1, 512)).astype(np.int32)
    logits, cache = decoder.prefill(tokens, cache)
    token = np.asarray(logits).argmax(-1).astype(np.int32)[:, None]
    logits, cache = decoder.decode(token, cache)  # compile
    arrays = {"k": cache.k, "v": cache.v}
    print(decoder.decode_fn.profile(decoder.weights, token, cache.start, arrays, cache.length))


if __name__ == "__main__":
    main()
