"""A caching device allocator: device memory reused across calls, not cuMemAlloc per call.

``cuMemAlloc``/``cuMemFree`` synchronise the device and cost microseconds to
milliseconds; a model called in a loop would pay them for every output and arena.
Blocks are rounded up to a *size class* and, when released, kept on a free list of
their class for the next request of that class:

- up to 1 MiB: powers of two from 512 bytes;
- above: 8 classes per power of two (steps of 1/8), so at most 12.5% is wasted.

All work of a device runs on one stream, in order, so a block released by one call
(its kernels still queued) may be handed to the next call at once: the stream runs
the old kernels before the new ones. At most ``max_cached_bytes`` are kept free;
beyond that released blocks go back to the driver. ``stats()`` counts driver
allocations, reuses and bytes; ``trim()`` frees the free lists.
"""

from __future__ import annotations

import contextlib
import threading
from dataclasses import dataclass

from relaxjax.runtime.cuda.driver import Driver

__all__ = ["AllocatorStats", "Block", "CachingAllocator", "size_class"]

_SMALLEST = 512
_held = threading.local()
_SMALL_LIMIT = 1 << 20


def size_class(nbytes: int) -> int:
    """The size of the block serving a request of ``nbytes`` (see the module doc)."""
    if nbytes < 0:
        raise ValueError(f"a device allocation needs nbytes >= 0, given {nbytes}")
    if nbytes <= _SMALLEST:
        return _SMALLEST
    if nbytes <= _SMALL_LIMIT:
        return 1 << (nbytes - 1).bit_length()
    step = 1 << ((nbytes - 1).bit_length() - 4)  # an eighth of the power of two below
    return (nbytes + step - 1) // step * step


@dataclass(frozen=True, slots=True)
class AllocatorStats:
    """``allocations``: blocks taken from the driver; ``reuses``: requests served from a
    free list; ``frees``: blocks returned to the driver; ``cached_bytes``: free blocks
    held; ``live_bytes``: blocks in use."""

    allocations: int = 0
    reuses: int = 0
    frees: int = 0
    cached_bytes: int = 0
    live_bytes: int = 0


class Block:
    """A device allocation of ``size`` bytes at ``pointer``; ``release()`` hands it back
    (once; arrays release their block when garbage-collected)."""

    __slots__ = ("__weakref__", "_allocator", "pointer", "size")

    def __init__(self, allocator: CachingAllocator, pointer: int, size: int) -> None:
        self._allocator: CachingAllocator | None = allocator
        self.pointer = pointer
        self.size = size

    def release(self) -> None:
        """Return the block to its allocator (idempotent)."""
        allocator, self._allocator = self._allocator, None
        if allocator is not None:
            allocator._release(self)

    def __del__(self) -> None:
        with contextlib.suppress(Exception):  # at interpreter exit the driver may be gone
            self.release()

    def __repr__(self) -> str:
        return f"<Block {self.size} bytes at {self.pointer:#x}>"


class CachingAllocator:
    """Device memory by size class, reused once released (see the module doc)."""

    def __init__(self, driver: Driver, max_cached_bytes: int = 1 << 32) -> None:
        self.driver = driver
        self.max_cached_bytes = max_cached_bytes
        self._free: dict[int, list[int]] = {}
        self._lock = threading.Lock()
        self._counts = dict.fromkeys(AllocatorStats.__slots__, 0)

    def allocate(self, nbytes: int) -> Block:
        """A block of at least ``nbytes`` bytes (a free one of its class when there is one)."""
        size = size_class(nbytes)
        with self._lock:
            free = self._free.get(size)
            if free:
                pointer = free.pop()
                self._count(reuses=1, cached_bytes=-size, live_bytes=size)
                return Block(self, pointer, size)
        pointer = self.driver.mem_alloc(size)
        with self._lock:
            self._count(allocations=1, live_bytes=size)
        return Block(self, pointer, size)

    def hold(self) -> _Hold:
        """While the returned context is active, blocks released on this thread are kept
        back and released when it ends (launches are queued only at its end)."""
        return _Hold(self)

    def _release(self, block: Block) -> None:
        held = getattr(_held, "blocks", None)
        if held is not None:
            held.append(block)
            return
        with self._lock:
            self._count(live_bytes=-block.size)
            if self._counts["cached_bytes"] + block.size <= self.max_cached_bytes:
                self._free.setdefault(block.size, []).append(block.pointer)
                self._count(cached_bytes=block.size)
                return
            self._count(frees=1)
        self.driver.mem_free(block.pointer)

    def trim(self) -> int:
        """Give every free block back to the driver; returns the bytes freed."""
        with self._lock:
            blocks = [(size, p) for size, pointers in self._free.items() for p in pointers]
            self._free.clear()
            freed = sum(size for size, _ in blocks)
            self._count(cached_bytes=-freed, frees=len(blocks))
        for _, pointer in blocks:
            self.driver.mem_free(pointer)
        return freed

    def stats(self) -> AllocatorStats:
        """A snapshot of the counters."""
        return AllocatorStats(**self._counts)

    def _count(self, **deltas: int) -> None:
        counts = self._counts
        for name, delta in deltas.items():
            counts[name] += delta


class _Hold:
    def __init__(self, allocator: CachingAllocator) -> None:
        self.allocator = allocator
        self._outer: list[Block] | None = None

    def __enter__(self) -> None:
        self._outer = getattr(_held, "blocks", None)
        _held.blocks = [] if self._outer is None else self._outer

    def __exit__(self, *exc: object) -> None:
        if self._outer is not None:
            return  # an enclosing hold releases them
        blocks, _held.blocks = _held.blocks, None
        for block in blocks:
            self.allocator._release(block)
