"""A cache of large host blocks, so that repeated calls reuse memory already mapped.

``np.empty`` of a few MiB or more gets fresh pages from the operating system on
every call (glibc serves large blocks with ``mmap`` and unmaps them on ``free``);
the first write to each 4 KiB page then faults and the OS zeroes it. For a
memory-bound kernel that costs as much as the kernel itself. The pool keeps such
blocks and hands them out again, as the caching allocators of jax and PyTorch do.

Ownership: the pool holds every block it made as a uint8 ndarray; an array it
lends out is a view of a block (``base`` is the block), and so is every view of
that array (numpy points views at the array owning the memory). A block is
therefore free exactly when the pool's own references are the only ones left,
which ``sys.getrefcount`` tells. No finaliser runs on the caller's side, and a
block cannot come back while any array still reaches its memory.

Small arrays (under ``min_bytes``) come from ``np.empty``, whose allocator already
reuses them cheaply (over-allocated by 64 bytes, so that they too start on a 64-byte
boundary, which jax needs to import a result through DLPack without copying it).
Blocks are grouped in size classes (eight per power of two, so a block is at most
12.5% larger than asked): a symbolic dimension that changes
a little between calls still finds its block. The pool holds at most
``max_bytes``; to stay under it, it drops free blocks, and beyond that lends
blocks it does not keep.
"""

from __future__ import annotations

import ctypes
import os
import sys
import threading

import numpy as np

__all__ = ["BufferPool", "default_pool", "size_class"]

#: Arrays start on a multiple of this many bytes (a cache line, an AVX-512 vector).
_ALIGNMENT = 64
_U8 = np.dtype(np.uint8)


def size_class(nbytes: int) -> int:
    """The block size serving ``nbytes``: rounded up to one of eight steps per power of two."""
    if nbytes <= _ALIGNMENT:
        return _ALIGNMENT
    step = max(_ALIGNMENT, 1 << (nbytes.bit_length() - 4))
    return -(-nbytes // step) * step


def _new_block(capacity: int) -> tuple[np.ndarray, int]:
    """A block of ``capacity`` usable bytes and the offset of its first aligned byte."""
    block = np.empty(capacity + _ALIGNMENT, _U8)
    return block, -block.ctypes.data % _ALIGNMENT


_address = ctypes.addressof
_byte_at = ctypes.c_byte.from_buffer


def _aligned_empty(shape: tuple[int, ...], dtype: np.dtype, nbytes: int) -> np.ndarray:
    """A small uninitialised array starting on an ``_ALIGNMENT`` boundary (numpy's own
    allocations are 16-byte aligned): jax imports results through DLPack without a copy
    only when they are 64-byte aligned."""
    if nbytes == 0:
        return np.empty(shape, dtype)
    block = np.empty(nbytes + _ALIGNMENT, _U8)
    offset = -_address(_byte_at(block)) % _ALIGNMENT
    return np.ndarray(shape, dtype, buffer=block, offset=offset)


def _free_refcount() -> int:
    """``sys.getrefcount`` of a block referenced only by the pool, as :meth:`_take` sees it."""
    entries = [_new_block(_ALIGNMENT)]
    for block, _ in entries:
        return sys.getrefcount(block)
    raise AssertionError("unreachable")


_FREE_REFS = _free_refcount()


class BufferPool:
    """Host memory for the runtime's large arrays (see the module doc)."""

    def __init__(self, min_bytes: int = 1 << 20, max_bytes: int = 1 << 30) -> None:
        self.min_bytes = min_bytes
        self.max_bytes = max_bytes
        self._blocks: dict[int, list[tuple[np.ndarray, int]]] = {}
        self._held_bytes = 0
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def empty(self, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
        """An uninitialised C-contiguous array, like ``np.empty(shape, dtype)``."""
        dtype = np.dtype(dtype)
        nbytes = dtype.itemsize
        for extent in shape:
            nbytes *= extent
        if nbytes < self.min_bytes:
            return _aligned_empty(shape, dtype, nbytes)
        with self._lock:  # the array must reference its block before another take scans it
            block, offset = self._take(size_class(nbytes))
            return np.ndarray(shape, dtype, buffer=block, offset=offset)

    @property
    def held_bytes(self) -> int:
        """Bytes of all blocks the pool keeps, lent or free."""
        return self._held_bytes

    @property
    def free_bytes(self) -> int:
        """Bytes of the kept blocks that no array uses."""
        with self._lock:
            return sum(
                capacity * sum(1 for block, _ in entries if sys.getrefcount(block) == _FREE_REFS)
                for capacity, entries in self._blocks.items()
            )

    def clear(self) -> None:
        """Forget every block; arrays lent out keep theirs, which numpy frees after them."""
        with self._lock:
            self._blocks.clear()
            self._held_bytes = 0

    def _take(self, capacity: int) -> tuple[np.ndarray, int]:
        entries = self._blocks.setdefault(capacity, [])
        for block, offset in entries:
            if sys.getrefcount(block) == _FREE_REFS:
                self.hits += 1
                return block, offset
        self.misses += 1
        entry = _new_block(capacity)
        if self._make_room(capacity):
            entries.append(entry)
            self._held_bytes += capacity
        return entry

    def _make_room(self, capacity: int) -> bool:
        """Drop free blocks until ``capacity`` more bytes fit under ``max_bytes``."""
        for size, entries in self._blocks.items():
            if self._held_bytes + capacity <= self.max_bytes:
                break
            kept = [(b, o) for b, o in entries if sys.getrefcount(b) > _FREE_REFS]
            self._held_bytes -= size * (len(entries) - len(kept))
            entries[:] = kept
        return self._held_bytes + capacity <= self.max_bytes


def _max_bytes() -> int:
    """``$RELAXJAX_POOL_MB`` MiB (default 1024; 0 keeps no block)."""
    text = os.environ.get("RELAXJAX_POOL_MB", "1024")
    try:
        megabytes = int(text)
    except ValueError:
        raise ValueError(f"RELAXJAX_POOL_MB must be a whole number of MiB, got {text!r}") from None
    return max(0, megabytes) << 20


#: The pool every executable allocates its large arrays from.
default_pool = BufferPool(max_bytes=_max_bytes())
