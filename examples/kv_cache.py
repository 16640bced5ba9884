"""Prefill and decode with a KV cache, compiled once for every batch size, prompt length and
cache length, in two cache layouts.

``Decoder(cfg, weights, layout=...)`` gives ``prefill(tokens (b, n), cache) -> (logits,
cache)`` and ``decode(token (b, 1), cache) -> (logits, cache)``; ``logits`` are the
``(b, vocab)`` scores of each sequence's next token. Each runs one jitted function whose
batch ``b``, new-token count ``n``, cache length ``m`` and capacity are symbols, so
``decoder.prefill_fn.cache_size()`` stays 1 whatever the shapes. The cache argument is
donated (``relax.jit(..., donate_argnames="cache")``): its buffers are written in place and
come back as the new cache's, so a step costs the new keys and values, not a copy.

**Contiguous** (:class:`ContiguousCache`): per layer, keys and values ``(b, capacity,
kv_heads, head_dim)`` of which the first ``m`` positions are filled (``m``, a symbolic
scalar argument, is the same for every row). The new keys are written at ``m`` with
``lax.dynamic_update_slice`` (an in-place window write in the compiled program) and the
attention reads ``cache[:, :m + n]`` (a view). Prompts of different lengths are
left-padded: row ``s`` starts at ``start[s]``, its positions count from there and the keys
before it are masked.

**Paged** (:class:`PagedCache`): per layer, a pool of pages ``(pages, page_size, kv_heads,
head_dim)`` shared by the batch, and per sequence a row of the page table (which pages hold
its positions, in order) and its length. Sequences grow independently; the new keys of
sequence ``s`` at position ``p`` go to page ``table[s, p // page_size]``, slot ``p %
page_size`` (a scatter, in place), and attention gathers each sequence's pages. A prompt
batch is right-padded with each sequence's token count given; the padding writes nothing.
Pages are handed out by the Python side as sequences grow (:meth:`PagedCache.reserve`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from decoders import Config, Weights, architecture, forward

import relaxjax as relax
import relaxjax.lax as lax
import relaxjax.nn as rnn
import relaxjax.numpy as rnp

# -- the caches (plain Python state around the arrays the compiled functions take) --------------


@dataclass
class ContiguousCache:
    """Keys and values of ``length`` positions in a preallocated capacity (see the module
    doc); ``start[s]``: where row ``s``'s sequence begins (its left padding)."""

    k: list[np.ndarray]
    v: list[np.ndarray]
    start: np.ndarray
    length: int = 0

    @classmethod
    def empty(
        cls, cfg: Config, batch: int, capacity: int, dtype: str = "float32"
    ) -> ContiguousCache:
        shape = (batch, capacity, cfg.kv_heads, cfg.head_dim)
        k = [np.zeros(shape, dtype) for _ in range(cfg.layers)]
        v = [np.zeros(shape, dtype) for _ in range(cfg.layers)]
        return cls(k, v, np.zeros(batch, np.int32))

    @property
    def capacity(self) -> int:
        return self.k[0].shape[1]

    @property
    def lengths(self) -> np.ndarray:
        """Each sequence's own length (its positions in the cache)."""
        return self.length - self.start


@dataclass
class PagedCache:
    """A pool of pages per layer and, per sequence, its page-table row and length (see the
    module doc). ``free``: the pages no sequence holds."""

    k: list[np.ndarray]
    v: list[np.ndarray]
    table: np.ndarray
    lengths: np.ndarray
    free: list[int] = field(default_factory=list)

    @classmethod
    def empty(
        cls, cfg: Config, batch: int, pages: int, page_size: int = 16, dtype: str = "float32"
    ) -> PagedCache:
        shape = (pages, page_size, cfg.kv_heads, cfg.head_dim)
        k = [np.zeros(shape, dtype) for _ in range(cfg.layers)]
        v = [np.zeros(shape, dtype) for _ in range(cfg.layers)]
        table = np.zeros((batch, 0), np.int32)
        return cls(k, v, table, np.zeros(batch, np.int32), list(range(pages)))

    @property
    def page_size(self) -> int:
        return self.k[0].shape[1]

    def reserve(self, counts: np.ndarray) -> None:
        """Give each sequence the pages its next ``counts[s]`` positions need."""
        need = -(-(self.lengths + counts) // self.page_size)  # pages per sequence, rounded up
        held = np.count_nonzero(self.table >= 0, axis=1) if self.table.size else np.zeros_like(need)
        width = max(int(need.max(initial=0)), self.table.shape[1])
        if width > self.table.shape[1]:
            grown = np.full((self.table.shape[0], width), -1, np.int32)
            grown[:, : self.table.shape[1]] = self.table
            self.table = grown
        for s in range(len(need)):
            for slot in range(int(held[s]), int(need[s])):
                if not self.free:
                    raise MemoryError(
                        f"paged KV cache: out of pages ({self.k[0].shape[0]} of {self.page_size} "
                        "positions each); make the cache with more pages"
                    )
                self.table[s, slot] = self.free.pop(0)

    def release(self, s: int) -> None:
        """Free sequence ``s``'s pages (it may then start a new sequence)."""
        row = self.table[s]
        self.free += [int(p) for p in row[row >= 0]]
        row[:] = -1
        self.lengths[s] = 0


# -- the compiled steps -------------------------------------------------------------------------


def _cache_spec(cfg: Config, rows: str, positions: str) -> dict[str, list[relax.Tensor]]:
    spec = relax.Tensor((rows, positions, cfg.kv_heads, cfg.head_dim), "float32")
    return {"k": [spec] * cfg.layers, "v": [spec] * cfg.layers}


def _last(x, index):
    """``x[s, index[s]]`` for every row ``s``: ``(b, n, d) -> (b, d)``."""
    return rnp.take_along_axis(x, index[:, None, None], axis=1)[:, 0]


def contiguous_step(cfg: Config, new_tokens: str | int):
    """The contiguous layout's step as a plain function (for ``relax.jit``): ``new_tokens``
    is ``"n"`` for prefill and ``1`` for decode."""
    arch = architecture(cfg)

    def step(w, tokens, start, cache, m):
        n = tokens.shape[1]
        positions = rnp.maximum(m + rnp.arange(n, dtype="int32")[None, :] - start[:, None], 0)
        seen = relax.min(cache["k"][0].shape[1], m + n)  # the keys' length, as their slice has it
        keys = rnp.arange(seen, dtype="int32")
        queries = m + rnp.arange(n, dtype="int32")
        visible = (keys[None, None, :] <= queries[None, :, None]) & (
            keys[None, None, :] >= start[:, None, None]
        )
        mask = visible[:, None]  # (b, 1, n, m + n)
        k_out, v_out = [], []

        def attend(i, q, k, v):
            k_cache = lax.dynamic_update_slice(cache["k"][i], k, (0, m, 0, 0))
            v_cache = lax.dynamic_update_slice(cache["v"][i], v, (0, m, 0, 0))
            k_out.append(k_cache)
            v_out.append(v_cache)
            return rnn.dot_product_attention(q, k_cache[:, :seen], v_cache[:, :seen], mask=mask)

        x = forward(arch, w, tokens, positions, attend)
        logits = arch.logits(w, x[:, n - 1])
        return logits, {"k": k_out, "v": v_out}

    step.__annotations__ = {
        "tokens": relax.Tensor(("b", new_tokens), "int32"),
        "start": relax.Tensor(("b",), "int32"),
        "cache": _cache_spec(cfg, "b", "capacity"),
        "m": relax.sym("m"),
    }
    return step


def paged_step(cfg: Config, new_tokens: str | int):
    """The paged layout's step as a plain function (for ``relax.jit``)."""
    arch = architecture(cfg)

    def step(w, tokens, counts, table, lengths, cache):
        b, n = tokens.shape
        page_size = cache["k"][0].shape[1]
        pages = cache["k"][0].shape[0]
        positions = lengths[:, None] + rnp.arange(n, dtype="int32")[None, :]  # (b, n)
        valid = rnp.arange(n, dtype="int32")[None, :] < counts[:, None]
        page = rnp.take_along_axis(table, positions // page_size, axis=1)
        page = rnp.where(valid, page, pages)  # the padding's writes fall outside: dropped
        slot = positions % page_size
        width = table.shape[1] * page_size
        keys = rnp.arange(width, dtype="int32")
        mask = (keys[None, None, :] <= positions[:, :, None])[:, None]  # (b, 1, n, width)
        k_out, v_out = [], []

        def gathered(pool):
            return rnp.take(pool, table, axis=0).reshape(b, width, cfg.kv_heads, cfg.head_dim)

        def attend(i, q, k, v):
            k_pool = cache["k"][i].at[page, slot].set(k, mode="drop")
            v_pool = cache["v"][i].at[page, slot].set(v, mode="drop")
            k_out.append(k_pool)
            v_out.append(v_pool)
            return rnn.dot_product_attention(q, gathered(k_pool), gathered(v_pool), mask=mask)

        x = forward(arch, w, tokens, positions, attend)
        logits = arch.logits(w, _last(x, counts - 1))
        return logits, {"k": k_out, "v": v_out}

    step.__annotations__ = {
        "tokens": relax.Tensor(("b", new_tokens), "int32"),
        "counts": relax.Tensor(("b",), "int32"),
        "table": relax.Tensor(("b", "p"), "int32"),
        "lengths": relax.Tensor(("b",), "int32"),
        "cache": _cache_spec(cfg, "pages", "page_size"),
    }
    return step


def full_step(cfg: Config):
    """No cache: the logits of each sequence's last token, the whole prefix recomputed
    (left-padded rows start at ``start``), for checking generation with a cache."""
    arch = architecture(cfg)

    def step(w, tokens, start):
        n = tokens.shape[1]
        positions = rnp.maximum(rnp.arange(n, dtype="int32")[None, :] - start[:, None], 0)
        keys = rnp.arange(n, dtype="int32")
        visible = (keys[None, None, :] <= keys[None, :, None]) & (
            keys[None, None, :] >= start[:, None, None]
        )

        def attend(i, q, k, v):
            return rnn.dot_product_attention(q, k, v, mask=visible[:, None])

        x = forward(arch, w, tokens, positions, attend)
        return arch.logits(w, x[:, n - 1])

    step.__annotations__ = {
        "tokens": relax.Tensor(("b", "n"), "int32"),
        "start": relax.Tensor(("b",), "int32"),
    }
    return step


class Decoder:
    """``prefill`` and ``decode`` of a model with a KV cache (see the module doc), each one
    jitted function for ``target`` (``"llvm"``: the CPU; ``"cuda"``)."""

    def __init__(
        self, cfg: Config, weights: Weights, layout: str = "contiguous", target: str = "llvm"
    ) -> None:
        if layout not in ("contiguous", "paged"):
            raise ValueError(f"layout must be 'contiguous' or 'paged', got {layout!r}")
        self.cfg, self.layout, self.target = cfg, layout, target
        self._host_weights = dict(weights)
        self._weights: Weights | None = None
        make = contiguous_step if layout == "contiguous" else paged_step
        jit = relax.jit(target=target, donate_argnames="cache")
        self.prefill_fn = jit(make(cfg, "n"))
        self.decode_fn = jit(make(cfg, 1))
        self.full_fn = relax.jit(full_step(cfg), target=target)

    @property
    def weights(self) -> Weights:
        """The weights where the target computes: on the GPU for ``"cuda"`` (uploaded once,
        at first use, so that no call copies them again)."""
        if self._weights is None:
            self._weights = _on_target(self._host_weights, self.target)
        return self._weights

    def new_cache(self, batch: int, capacity: int, page_size: int = 16):
        """An empty cache for ``batch`` sequences of up to ``capacity`` positions each (in
        device memory for ``"cuda"``)."""
        if self.layout == "contiguous":
            cache = ContiguousCache.empty(self.cfg, batch, capacity)
        else:
            pages = batch * -(-capacity // page_size)
            cache = PagedCache.empty(self.cfg, batch, pages, page_size)
        cache.k = list(_on_target(dict(enumerate(cache.k)), self.target).values())
        cache.v = list(_on_target(dict(enumerate(cache.v)), self.target).values())
        return cache

    def prefill(self, tokens, cache, lengths=None):
        """Run prompts ``tokens (b, n)`` (``lengths[s]`` tokens of row ``s`` are the
        prompt: left-aligned in the paged layout, right-aligned in the contiguous one,
        see :func:`pad_prompts`) after what ``cache`` holds."""
        tokens = np.asarray(tokens, np.int32)
        counts = np.full(len(tokens), tokens.shape[1], np.int32) if lengths is None else lengths
        return self._step(self.prefill_fn, tokens, cache, np.asarray(counts, np.int32))

    def decode(self, token, cache):
        """One new token per sequence, ``token (b, 1)``."""
        token = np.asarray(token, np.int32)
        return self._step(self.decode_fn, token, cache, np.ones(len(token), np.int32))

    def _step(self, fn, tokens, cache, counts):
        n = tokens.shape[1]
        if isinstance(cache, ContiguousCache):
            if cache.length + n > cache.capacity:
                raise ValueError(
                    f"contiguous KV cache: {cache.length} + {n} positions exceed its capacity "
                    f"{cache.capacity}"
                )
            if cache.length == 0:
                cache.start = (n - counts).astype(np.int32)
            elif (counts != n).any():
                raise ValueError(
                    "contiguous KV cache: prompts of different lengths (left-padded) are for an "
                    f"empty cache; this one holds {cache.length} positions already"
                )
            arrays = {"k": cache.k, "v": cache.v}
            logits, arrays = fn(self.weights, tokens, cache.start, arrays, cache.length)
            return logits, ContiguousCache(arrays["k"], arrays["v"], cache.start, cache.length + n)
        cache.reserve(counts)
        table = np.where(cache.table >= 0, cache.table, 0).astype(np.int32)
        arrays = {"k": cache.k, "v": cache.v}
        logits, arrays = fn(self.weights, tokens, counts, table, cache.lengths, arrays)
        lengths = (cache.lengths + counts).astype(np.int32)
        return logits, PagedCache(arrays["k"], arrays["v"], cache.table, lengths, cache.free)

    def full(self, tokens, start=None):
        """The next-token logits with no cache, the whole prefix recomputed."""
        tokens = np.asarray(tokens, np.int32)
        start = np.zeros(len(tokens), np.int32) if start is None else np.asarray(start, np.int32)
        return self.full_fn(self.weights, tokens, start)


def _on_target(arrays: dict, target: str) -> dict:
    """``arrays`` in the target's memory: as they are for the CPU, device arrays for
    ``"cuda"`` (a call would otherwise copy every numpy argument to the GPU)."""
    if target != "cuda":
        return arrays
    from relaxjax.runtime.cuda import as_device_array, current_device

    device = current_device()
    return {name: as_device_array(device, array) for name, array in arrays.items()}


def pad_prompts(prompts: list[list[int]], side: str, pad: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Prompts of different lengths as one ``(b, longest)`` int32 array, padded on
    ``side`` (``"left"``: the contiguous layout; ``"right"``: the paged one), and their
    lengths."""
    lengths = np.array([len(p) for p in prompts], np.int32)
    tokens = np.full((len(prompts), int(lengths.max())), pad, np.int32)
    for s, prompt in enumerate(prompts):
        if side == "left":
            tokens[s, tokens.shape[1] - len(prompt) :] = prompt
        else:
            tokens[s, : len(prompt)] = prompt
    return tokens, lengths
