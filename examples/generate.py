"""Generate tokens with a GPT-2 or Llama decoder and a KV cache, compiled once by relaxjax.

A batch of prompts of different lengths is prefilled in one call, then decoded one token
per sequence per call, greedily or sampled (temperature, top-k). ``prefill`` and
``decode`` are each one executable for every batch size, prompt length and cache length
(printed at the end). Weights are random, of the real model's shapes, unless a Hugging Face
``model.safetensors`` is given (with ``--tokenizer tokenizer.json`` prompts may be text).

    python examples/generate.py                                  # GPT-2 124M, greedy
    python examples/generate.py --model llama --layout paged --temperature 0.8 --top-k 40
    python examples/generate.py --weights gpt2/model.safetensors --tokenizer gpt2/tokenizer.json \\
        --prompt "The capital of France is" --prompt "Once upon a time"
    python examples/generate.py --target cuda                    # on an NVIDIA GPU
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np
from decoders import GPT2Config, LlamaConfig, load_weights, parameter_count, random_weights
from kv_cache import Decoder, pad_prompts


def sample(
    logits: np.ndarray, rng: np.random.Generator, temperature: float, top_k: int
) -> np.ndarray:
    """The next token of each row: the argmax at temperature 0, else a draw from the
    softmax of ``logits / temperature`` over the ``top_k`` best (0: all)."""
    logits = np.asarray(logits, np.float64)
    if temperature <= 0:
        return logits.argmax(-1).astype(np.int32)
    scaled = logits / temperature
    if 0 < top_k < scaled.shape[-1]:
        kth = np.partition(scaled, -top_k, axis=-1)[:, -top_k, None]
        scaled = np.where(scaled >= kth, scaled, -np.inf)
    probs = np.exp(scaled - scaled.max(-1, keepdims=True))
    probs /= probs.sum(-1, keepdims=True)
    return np.array([rng.choice(len(p), p=p) for p in probs], np.int32)


class Progress:
    """A one-line progress bar on stderr with the decode rate."""

    def __init__(self, total: int, batch: int, width: int = 30) -> None:
        self.total, self.batch, self.width = total, batch, width
        self.start = time.perf_counter()

    def update(self, done: int) -> None:
        elapsed = time.perf_counter() - self.start
        rate = done * self.batch / elapsed if elapsed > 0 else 0.0
        filled = self.width * done // max(self.total, 1)
        bar = "#" * filled + "." * (self.width - filled)
        sys.stderr.write(f"\rdecode [{bar}] {done}/{self.total}  {rate:7.1f} tokens/s")
        if done == self.total:
            sys.stderr.write("\n")
        sys.stderr.flush()


def generate(
    decoder: Decoder,
    prompts: list[list[int]],
    new_tokens: int,
    temperature: float = 0.0,
    top_k: int = 0,
    seed: int = 0,
    progress: bool = True,
) -> tuple[list[list[int]], dict[str, float]]:
    """Each prompt continued by ``new_tokens`` tokens, and the timings."""
    rng = np.random.default_rng(seed)
    side = "left" if decoder.layout == "contiguous" else "right"
    tokens, lengths = pad_prompts(prompts, side)
    capacity = tokens.shape[1] + new_tokens
    cache = decoder.new_cache(len(prompts), capacity)
    start = time.perf_counter()
    logits, cache = decoder.prefill(tokens, cache, lengths)
    token = sample(logits, rng, temperature, top_k)
    prefill_s = time.perf_counter() - start
    out = [[int(t)] for t in token]
    bar = Progress(new_tokens - 1, len(prompts)) if progress else None
    start = time.perf_counter()
    for step in range(new_tokens - 1):
        logits, cache = decoder.decode(token[:, None], cache)
        token = sample(logits, rng, temperature, top_k)
        for row, t in zip(out, token):
            row.append(int(t))
        if bar is not None:
            bar.update(step + 1)
    decode_s = time.perf_counter() - start
    rate = len(prompts) * (new_tokens - 1) / decode_s if new_tokens > 1 else float("nan")
    return out, {"prefill_s": prefill_s, "decode_s": decode_s, "tokens_per_s": rate}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=("gpt2", "llama"), default="gpt2")
    parser.add_argument("--layers", type=int, help="fewer layers than the real model (quick runs)")
    parser.add_argument("--weights", help="a Hugging Face model.safetensors of the model")
    parser.add_argument("--tokenizer", help="a tokenizer.json (needs the tokenizers package)")
    parser.add_argument("--prompt", action="append", help="a prompt (text with --tokenizer)")
    parser.add_argument("--batch", type=int, default=4, help="random prompts when none given")
    parser.add_argument("--max-new-tokens", type=int, default=32)
    parser.add_argument("--temperature", type=float, default=0.0, help="0: greedy")
    parser.add_argument("--top-k", type=int, default=0, help="0: sample from all tokens")
    parser.add_argument("--layout", choices=("contiguous", "paged"), default="contiguous")
    parser.add_argument("--target", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--seed", type=int, default=0)
    options = parser.parse_args(argv)

    cfg = GPT2Config() if options.model == "gpt2" else LlamaConfig()
    if options.layers:
        cfg = type(cfg)(**{**cfg.__dict__, "layers": options.layers})
    weights = load_weights(options.weights, cfg) if options.weights else random_weights(cfg)
    source = options.weights or "random weights"
    print(f"{options.model}: {parameter_count(weights) / 1e6:.0f}M parameters ({source}), "
          f"{cfg.layers} layers, {options.layout} KV cache, target {options.target}")  # fmt: skip

    tokenizer = None
    if options.tokenizer:
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_file(options.tokenizer)
    rng = np.random.default_rng(options.seed)
    if options.prompt:
        prompts = [
            tokenizer.encode(p).ids if tokenizer else [int(t) for t in p.split()]
            for p in options.prompt
        ]
    else:  # prompts of different lengths
        prompts = [rng.integers(0, cfg.vocab, 5 + 7 * s).tolist() for s in range(options.batch)]

    decoder = Decoder(cfg, weights, options.layout, "llvm" if options.target == "cpu" else "cuda")
    start = time.perf_counter()
    decoder.prefill(np.zeros((1, 2), np.int32), decoder.new_cache(1, 4))  # compile prefill
    decoder.decode(*_one_token(decoder))  # and decode
    print(f"compiled prefill and decode in {time.perf_counter() - start:.1f} s")

    out, timing = generate(
        decoder, prompts, options.max_new_tokens, options.temperature, options.top_k, options.seed
    )
    for prompt, new in zip(prompts, out):
        if tokenizer:
            print(repr(tokenizer.decode(prompt)), "->", repr(tokenizer.decode(new)))
        else:
            print(f"[{len(prompt)} tokens] ... {prompt[-4:]} -> {new}")
    print(
        f"prefill {timing['prefill_s'] * 1e3:.0f} ms for {sum(map(len, prompts))} prompt tokens; "
        f"decode {timing['tokens_per_s']:.1f} tokens/s (batch {len(prompts)})"
    )
    print(
        f"executables: prefill {decoder.prefill_fn.cache_size()}, "
        f"decode {decoder.decode_fn.cache_size()} (for every batch, prompt and cache length)"
    )


def _one_token(decoder: Decoder):
    cache = decoder.new_cache(1, 4)
    _, cache = decoder.prefill(np.zeros((1, 1), np.int32), cache)
    return np.zeros((1, 1), np.int32), cache


if __name__ == "__main__":
    main()
