"""The disk cache of whole executables: a new process skips the passes, LLVM and planning.

:func:`~relaxjax.runtime.build_executable` looks a traced module up here before it
runs ``passes.default_pipeline``. The entry holds what the pipeline and the backend
produced: the legalised module (its kernels scheduled, fused and planned into the
entry function), the name of the entry function, the machine code of its kernels
(:class:`~relaxjax.backends.llvm.KernelObject`) and the compiled Python of its host
program (``marshal``-ed code objects by the digest of their text). A hit links that
object into the process and writes the host program from the legalised module (the
generated Python of :mod:`relaxjax.runtime.program` refers to live objects and
addresses, so its namespace is rebuilt, not stored), taking the code of each text from
the entry (:func:`~relaxjax.runtime.source.known_code`): no pass, schedule rule,
codegen, LLVM or Python compiler runs.

**The key** is the SHA-256 of, in order:

- the entry format :data:`FORMAT`;
- the content of every ``.py`` file of the relaxjax package (:func:`package_fingerprint`,
  so any change to the compiler is a miss, released or not);
- the Python, numpy, ml_dtypes, llvmlite and LLVM versions, the host target's identity
  (triple, CPU name and features, optimisation level, codegen version) and the number
  of CPUs;
- the target, the entry's name and the ``library`` option of ``build_executable``;
- the pickle of the module as given (traced): every function, binding, spec, symbol
  and its bounds, op attribute, constant's bytes, source location and kernel of
  ``with_kernels``.

A module that pickles a reference to anything outside relaxjax, numpy, ml_dtypes and
the standard library's ``builtins`` (a user's op class, a user function) is not cached:
its key would name that object, not what it does (``ExecutableCacheStats.uncacheable``).
What the key does *not* cover: changes made to relaxjax's modules at run time
(monkeypatching a pass) — set ``RELAXJAX_DISK_CACHE=objects`` while doing that.

**Robustness.** Entries are framed and written atomically as the object cache's
(:func:`~relaxjax.backends.llvm.cache.write_frame`); a missing, truncated, altered or
unreadable entry, or one that fails to load (unpickling, linking), is a miss: the
executable is compiled as if there were no entry, and the entry rewritten.
``$RELAXJAX_DISK_CACHE`` set to ``objects`` or ``off`` disables this cache
(:func:`~relaxjax.backends.llvm.cache.disk_cache_mode`); entries live in
``cache_dir("executables")``. Loading an entry unpickles it: the cache directory must
be as trusted as the code it holds (the object cache links machine code from it).

Only ``target="llvm"`` is cached. Another target plugs in by storing its own compiled
payload in place of :class:`~relaxjax.backends.llvm.KernelObject` and adding its
toolchain's identity to the key (``target="cuda"`` keeps PTX and cubins in its own
object cache, ``cache_dir("cuda")``, and still runs the passes in every process).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import io
import marshal
import os
import pickle
import sys
import threading
import types
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from pathlib import Path

import llvmlite
import ml_dtypes
import numpy as np

import relaxjax
from relaxjax.backends.llvm import KernelObject, host_target
from relaxjax.backends.llvm.cache import cache_dir, disk_cache_mode, read_frame, write_frame
from relaxjax.ir import IRModule

__all__ = [
    "FORMAT",
    "Artifact",
    "ExecutableCacheStats",
    "count_hit",
    "count_unusable",
    "enabled",
    "executable_cache_stats",
    "executable_key",
    "load_artifact",
    "package_fingerprint",
    "reset_executable_cache_stats",
    "source_fingerprint",
    "store_artifact",
]

#: The layout of an entry; bumped whenever :class:`Artifact` or what it means changes.
FORMAT = 2
NAMESPACE = "executables"
#: Top-level modules whose objects a cacheable module may reference by name.
TRUSTED_MODULES = frozenset({"relaxjax", "numpy", "ml_dtypes", "builtins", "copyreg", "_codecs"})


@dataclass(frozen=True, slots=True)
class Artifact:
    """What an entry holds: the legalised ``module``, the ``entry`` function's name, the
    machine code of the kernels the call path runs (``None`` when it runs none), and
    ``code``: the host program's generated functions, text digest -> marshalled code."""

    module: IRModule
    entry: str
    kernels: KernelObject | None
    code: Mapping[str, bytes]

    def code_objects(self) -> dict[str, types.CodeType]:
        """``code`` unmarshalled (for :func:`~relaxjax.runtime.source.known_code`)."""
        return {digest: marshal.loads(data) for digest, data in self.code.items()}


@dataclass(frozen=True, slots=True)
class ExecutableCacheStats:
    """Counters of this process's whole-executable cache.

    ``hits``: executables loaded from disk; ``misses``: keys not on disk (or unusable,
    then also ``corrupt``); ``stores``: entries written; ``uncacheable``: modules the key
    cannot cover (see the module doc); ``write_errors``: entries that could not be stored.
    """

    hits: int = 0
    misses: int = 0
    stores: int = 0
    corrupt: int = 0
    uncacheable: int = 0
    write_errors: int = 0


_stats = ExecutableCacheStats()
_stats_lock = threading.Lock()


def executable_cache_stats() -> ExecutableCacheStats:
    """A snapshot of the counters since the process started (or the last reset)."""
    return _stats


def reset_executable_cache_stats() -> None:
    """Set every counter back to zero (for tests and benchmarks)."""
    global _stats
    with _stats_lock:
        _stats = ExecutableCacheStats()


def _count(**increments: int) -> None:
    global _stats
    names = {f.name for f in fields(ExecutableCacheStats)}
    unknown = set(increments) - names
    if unknown:
        raise KeyError(f"unknown executable cache counters {sorted(unknown)}")
    with _stats_lock:
        _stats = replace(_stats, **{k: getattr(_stats, k) + v for k, v in increments.items()})


def enabled() -> bool:
    """Whether whole executables are cached on disk (``$RELAXJAX_DISK_CACHE`` is ``all``)."""
    return disk_cache_mode() == "all"


@functools.cache
def package_fingerprint() -> str:
    """SHA-256 of the path and content of every ``.py`` file of the relaxjax package
    (once per process)."""
    return source_fingerprint(os.path.dirname(os.path.abspath(relaxjax.__file__)))


def source_fingerprint(root: str) -> str:
    """SHA-256 of the relative path and content of every ``.py`` file under ``root``."""
    digest = hashlib.sha256()
    for directory, subdirectories, files in os.walk(root):
        subdirectories.sort()
        for name in sorted(files):
            if not name.endswith(".py"):
                continue
            path = os.path.join(directory, name)
            digest.update(os.path.relpath(path, root).encode() + b"\0")
            with open(path, "rb") as file:
                digest.update(file.read())
            digest.update(b"\0")
    return digest.hexdigest()


@functools.cache
def _environment() -> bytes:
    """Everything outside the module that the compiled code depends on, as bytes."""
    parts = (
        f"format-{FORMAT}",
        package_fingerprint(),
        sys.version,
        f"numpy-{np.__version__}",
        f"ml_dtypes-{ml_dtypes.__version__}",
        f"llvmlite-{llvmlite.__version__}",
        host_target().cache_identity(),
        f"cpus-{os.cpu_count()}",
    )
    return "\n".join(parts).encode()


class _UncoveredObject(Exception):
    """A pickled reference to an object outside :data:`TRUSTED_MODULES`."""


class _KeyPickler(pickle.Pickler):
    """Pickles a module for its key, refusing references the key would not cover.

    The bytes are never unpickled: a dataclass instance is written as its class and its
    fields' values (what pickle's own reduction of a dataclass writes, without looking
    the fields up per object)."""

    def reducer_override(self, obj: object) -> object:
        kind = type(obj)
        if isinstance(obj, type | types.FunctionType | types.BuiltinFunctionType):
            module = getattr(obj, "__module__", None)
        elif isinstance(obj, types.ModuleType):
            module = obj.__name__
        else:
            names = _dataclass_fields.get(kind, False)
            if names is False:
                names = _dataclass_fields[kind] = _plain_dataclass_fields(kind)
            module = kind.__module__
            if names is not None and module.partition(".")[0] in TRUSTED_MODULES:
                return kind, tuple(getattr(obj, name) for name in names)
        if (module or "").partition(".")[0] not in TRUSTED_MODULES:
            raise _UncoveredObject(f"{obj!r} of module {module}")
        return NotImplemented


_dataclass_fields: dict[type, tuple[str, ...] | None] = {}


def _plain_dataclass_fields(kind: type) -> tuple[str, ...] | None:
    """The field names of a dataclass that pickles by its fields (no ``__reduce__`` or
    ``__getstate__`` of its own), else None."""
    if not dataclasses.is_dataclass(kind) or not hasattr(kind, "__slots__"):
        return None
    if "__reduce__" in vars(kind) or "__reduce_ex__" in vars(kind):
        return None
    getstate = getattr(kind, "__getstate__", None)
    if getstate is not None and getattr(getstate, "__qualname__", "") != "_dataclass_getstate":
        return None
    return tuple(f.name for f in dataclasses.fields(kind))


def executable_key(mod: IRModule, target: str, entry: str | None, library: bool) -> str | None:
    """The content key of ``build_executable(mod, target, entry, library)``, or ``None``
    when the module cannot be keyed soundly (see the module doc)."""
    buffer = io.BytesIO()
    try:
        _KeyPickler(buffer, protocol=5).dump(mod)
    except Exception:  # noqa: BLE001 - a foreign object, or too deep to pickle: no key
        _count(uncacheable=1)
        return None
    digest = hashlib.sha256(_environment())
    digest.update(f"\n{target}\n{entry}\n{library}\n".encode())
    digest.update(buffer.getbuffer())
    return digest.hexdigest()


def _path(key: str) -> Path:
    return cache_dir(NAMESPACE) / f"{key}.pkl"


def load_artifact(key: str) -> Artifact | None:
    """The entry stored under ``key``, or ``None`` (counted as a miss) when there is none
    or it does not check out."""
    status, payload = read_frame(_path(key))
    if payload is not None:
        try:
            artifact = pickle.loads(payload)
        except Exception:  # noqa: BLE001 - anything unreadable is a miss, never a crash
            artifact = None
        if isinstance(artifact, Artifact):
            return artifact
        status = "corrupt"
    if status == "corrupt":
        _count(misses=1, corrupt=1)
    else:
        _count(misses=1)
    return None


def count_hit() -> None:
    """Count an entry that was loaded and became the executable."""
    _count(hits=1)


def count_unusable() -> None:
    """Count an entry that was read but failed to become an executable (e.g. linking):
    the call compiles instead."""
    _count(misses=1, corrupt=1)


def store_artifact(key: str, artifact: Artifact) -> None:
    """Write ``artifact`` under ``key`` (atomically; a failure is counted, not raised)."""
    try:
        payload = pickle.dumps(artifact, protocol=5)
    except Exception:  # noqa: BLE001 - not storable (e.g. too deep to pickle): not stored
        _count(uncacheable=1)
        return
    if write_frame(_path(key), payload):
        _count(stores=1)
    else:
        _count(write_errors=1)
