"""The on-disk cache of compiled object code, so a second process starts warm.

Key: SHA-256 of the emitted LLVM IR text and the target's identity (triple, CPU
name, CPU features, optimisation level, llvmlite and LLVM versions). Value: the
ELF object, framed as ``MAGIC | payload length (u64) | SHA-256(payload) | payload``.

Writes go to a temporary file in the same directory, then ``os.replace``: a
reader never sees a half-written entry, and concurrent writers of one key are
harmless (both write the same bytes). An entry whose frame does not check out
(truncated, corrupted, foreign) is counted, ignored and rewritten.

The directory is ``$RELAXJAX_CACHE_DIR`` (read at every lookup) or
``~/.cache/relaxjax``; entries live under ``llvm/`` (the CUDA backend keeps its PTX and
cubins under ``cuda/``, through the same functions with ``namespace="cuda"``; the
counters are shared; whole executables live under ``executables/``, see
:mod:`relaxjax.runtime.artifact`, which frames its entries with :func:`read_frame` and
:func:`write_frame` and keeps counters of its own). If it cannot be written,
compilation still succeeds and the failure is counted in ``write_errors``.

``$RELAXJAX_DISK_CACHE`` (read at every lookup) says what is cached on disk: ``all``
(the default: objects and whole executables), ``objects`` (compiled code only; every
new process traces, runs the passes and plans again), ``off`` (nothing is read or
written; every new process compiles from scratch).
"""

from __future__ import annotations

import hashlib
import os
import struct
import tempfile
import threading
from dataclasses import dataclass, fields, replace
from pathlib import Path

__all__ = [
    "DISK_CACHE_MODES",
    "CacheStats",
    "cache_dir",
    "cache_key",
    "cache_stats",
    "disk_cache_mode",
    "read_entry",
    "read_frame",
    "write_entry",
    "write_frame",
]

#: Values of ``$RELAXJAX_DISK_CACHE``: what the disk cache holds (see the module doc).
DISK_CACHE_MODES = ("all", "objects", "off")

MAGIC = b"RJLLVMO1"
_HEADER = struct.Struct("<8sQ32s")
_STATS_LOCK = threading.Lock()


@dataclass(frozen=True, slots=True)
class CacheStats:
    """Counters of this process's compilation cache activity.

    ``hits``: objects read from disk; ``misses``: keys not on disk (or unusable);
    ``compiles``: LLVM optimisation + code generation runs; ``memory_hits``: builds
    answered by a library already loaded in this process; ``corrupt``: disk entries
    rejected by their length/checksum frame; ``write_errors``: entries that could
    not be stored.
    """

    hits: int = 0
    misses: int = 0
    compiles: int = 0
    memory_hits: int = 0
    corrupt: int = 0
    write_errors: int = 0


_stats = CacheStats()


def cache_stats() -> CacheStats:
    """A snapshot of the counters since the process started (or the last reset)."""
    return _stats


def reset_cache_stats() -> None:
    """Set every counter back to zero (for tests and benchmarks)."""
    global _stats
    with _STATS_LOCK:
        _stats = CacheStats()


def count(**increments: int) -> None:
    """Add to counters by name, e.g. ``count(hits=1)``."""
    global _stats
    names = {f.name for f in fields(CacheStats)}
    unknown = set(increments) - names
    if unknown:
        raise KeyError(f"unknown cache counters {sorted(unknown)}; known: {sorted(names)}")
    with _STATS_LOCK:
        _stats = replace(_stats, **{k: getattr(_stats, k) + v for k, v in increments.items()})


def cache_dir(namespace: str = "llvm") -> Path:
    """Where entries are stored: ``$RELAXJAX_CACHE_DIR/<namespace>`` or
    ``~/.cache/relaxjax/<namespace>``."""
    root = os.environ.get("RELAXJAX_CACHE_DIR") or os.path.join("~", ".cache", "relaxjax")
    return Path(root).expanduser() / namespace


def disk_cache_mode() -> str:
    """``$RELAXJAX_DISK_CACHE`` (``all`` when unset or empty): one of :data:`DISK_CACHE_MODES`.

    Raises:
        ValueError: the variable holds anything else.
    """
    mode = os.environ.get("RELAXJAX_DISK_CACHE", "").strip().lower() or "all"
    if mode not in DISK_CACHE_MODES:
        raise ValueError(
            f"RELAXJAX_DISK_CACHE must be one of {', '.join(DISK_CACHE_MODES)}, got {mode!r}"
        )
    return mode


def cache_key(ir_text: str, target_identity: str) -> str:
    """The content hash naming a compiled object: hex SHA-256 of target identity and IR."""
    digest = hashlib.sha256()
    digest.update(target_identity.encode())
    digest.update(b"\0")
    digest.update(ir_text.encode())
    return digest.hexdigest()


def entry_path(key: str, namespace: str = "llvm") -> Path:
    """The file holding the entry for ``key``."""
    return cache_dir(namespace) / f"{key}.o"


def read_entry(key: str, namespace: str = "llvm") -> bytes | None:
    """The cached object for ``key``, or ``None`` if absent, failing its frame check, or
    the disk cache is off."""
    if disk_cache_mode() == "off":
        return None
    status, payload = read_frame(entry_path(key, namespace))
    if status == "miss":
        count(misses=1)
    elif status == "corrupt":
        count(misses=1, corrupt=1)
    else:
        count(hits=1)
    return payload


def write_entry(key: str, payload: bytes, namespace: str = "llvm") -> None:
    """Store ``payload`` under ``key`` atomically (temporary file, then rename); nothing
    when the disk cache is off."""
    if disk_cache_mode() == "off":
        return
    if not write_frame(entry_path(key, namespace), payload):
        count(write_errors=1)


def read_frame(path: Path) -> tuple[str, bytes | None]:
    """``("hit", payload)`` for a file whose frame checks out, ``("miss", None)`` for no
    readable file, ``("corrupt", None)`` for a truncated, altered or foreign one. Counts
    nothing."""
    try:
        data = path.read_bytes()
    except OSError:
        return "miss", None
    payload = _unframe(data)
    return ("corrupt", None) if payload is None else ("hit", payload)


def write_frame(path: Path, payload: bytes) -> bool:
    """Write ``payload`` framed to ``path`` atomically: a temporary file in the same
    directory, then ``os.replace`` (a reader never sees half a file; concurrent writers of
    one path each replace it whole). Whether it was written; counts nothing."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem[:16]}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as file:
                file.write(_frame(payload))
            os.replace(temp, path)
        except BaseException:
            os.unlink(temp)
            raise
    except OSError:
        return False
    return True


def _frame(payload: bytes) -> bytes:
    return _HEADER.pack(MAGIC, len(payload), hashlib.sha256(payload).digest()) + payload


def _unframe(data: bytes) -> bytes | None:
    if len(data) < _HEADER.size:
        return None
    magic, length, checksum = _HEADER.unpack_from(data)
    payload = data[_HEADER.size :]
    if magic != MAGIC or length != len(payload) or hashlib.sha256(payload).digest() != checksum:
        return None
    return payload
