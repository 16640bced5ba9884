"""The GNU OpenMP runtime (libgomp) that ``parallel`` loops run on.

Compiled code calls ``GOMP_parallel(body, context, 0, 0)``; the threads size the
chunks they claim from ``omp_get_num_threads``. The library must be
in the process before the JIT links such code: when a symbol is missing the
link fails (a clear error here) instead of crashing later.

Shared machines: idle OpenMP workers spin by default, which collapses throughput
when another process holds a core, so ``OMP_WAIT_POLICY=passive`` is set before
libgomp is loaded unless the user chose a policy. A process that has run a
parallel region must not ``fork`` (the child hangs in libgomp): use ``spawn``.
"""

from __future__ import annotations

import ctypes
import functools
import os

from ...errors import LoweringError

__all__ = ["GOMP_SYMBOLS", "LIBGOMP", "ensure_libgomp"]

LIBGOMP = "libgomp.so.1"

# The entry points generated code calls, with their C signatures (for documentation
# and for the load-time check; the IR declarations live in ``parallel.py``).
GOMP_SYMBOLS = {
    "GOMP_parallel": "void (void (*fn)(void *), void *data, unsigned num_threads, unsigned flags)",
    "omp_get_num_threads": "int (void)",
}


@functools.cache
def ensure_libgomp() -> ctypes.CDLL:
    """Load libgomp into the process for the JIT, once; raise if it cannot be found.

    The library is opened with ``RTLD_GLOBAL`` (the JIT resolves ``GOMP_parallel``
    through the process's global scope) and its handle is kept for the life of the
    process. Not through ``llvm.load_library_permanently``: LLVM closes the libraries
    it opened from a static destructor at exit, which unmaps libgomp under its worker
    threads (a segfault at exit when they spin, ``OMP_WAIT_POLICY=active``).

    Raises:
        LoweringError: libgomp is not installed or lacks an entry point.
    """
    os.environ.setdefault("OMP_WAIT_POLICY", "passive")
    try:
        library = ctypes.CDLL(LIBGOMP, mode=os.RTLD_NOW | os.RTLD_GLOBAL)
    except OSError as err:
        raise LoweringError(
            f"parallel loops need the GNU OpenMP runtime: cannot load {LIBGOMP} ({err}); "
            "install it (Debian/Ubuntu package libgomp1) or schedule the loop serially"
        ) from err
    missing = [name for name in GOMP_SYMBOLS if not hasattr(library, name)]
    if missing:
        raise LoweringError(f"{LIBGOMP} was loaded but lacks {', '.join(missing)}")
    return library
