"""One thread budget for the BLAS the runtime calls and the parallel loops it runs.

Library calls (``call_extern`` of ``numpy.matmul``, the LAPACK factorisations) run in
numpy's BLAS, OpenBLAS in numpy's wheels; the compiled kernels' parallel loops run on
libgomp. Matrix products run OpenBLAS on libgomp's threads (:mod:`relaxjax.runtime.gemm`);
what still runs on OpenBLAS's own pool (factorisations, products it cannot take) is
kept from spinning here. Both pools use every core, but never at the same time: a program runs one
launch after the other. What breaks the budget is what a pool does *after* a call.
libgomp's workers sleep at once (``OMP_WAIT_POLICY=passive``, set before it loads,
:mod:`relaxjax.backends.llvm.gomp`). OpenBLAS's workers spin (``sched_yield`` in a
loop) for about ``2**28`` cycles, a tenth of a second, after every call, waiting for
the next one: a kernel launched right after a matmul shares its cores with them and,
on two cores, runs at about half speed (measured: a sleeping process burns 0.2 to 0.8
of a core right after a matmul).

OpenBLAS reads that spin time from ``OPENBLAS_THREAD_TIMEOUT`` (``2**k`` cycles, ``k``
clamped to ``4..30``) when its pool starts, and numpy starts the pool when it is
imported, before relaxjax can set anything. :func:`share_blas_threads` therefore
restarts the pool once with the shortest timeout: it sets the variable, has OpenBLAS
re-read its environment (``openblas_read_env``) and shuts the pool down
(``blas_thread_shutdown_``); the next BLAS call starts it again with workers that
sleep right after each call, as libgomp's do. The number of BLAS threads is not
changed (limiting them, as threadpoolctl does, would leave cores idle during a
matmul and would not stop the spinning).

The library is found among the shared objects of the process (``/proc/self/maps``),
so numpy's bundled ``libscipy_openblas64_`` and a system ``libopenblas`` are both
covered; a BLAS that is not OpenBLAS (MKL, Accelerate), or an OpenBLAS without those
entry points, is left alone. A user who set ``OPENBLAS_THREAD_TIMEOUT`` keeps their
choice. It runs once per process, when the first executable with a library call is
built (never while one of ours runs a BLAS call).
"""

from __future__ import annotations

import ctypes
import functools
import os
import threading

__all__ = ["BLAS_THREAD_TIMEOUT", "blas_libraries", "share_blas_threads"]

#: ``OPENBLAS_THREAD_TIMEOUT`` set for the restarted pool: ``2**4`` cycles, the least
#: OpenBLAS accepts, so its workers go to sleep right after each call.
BLAS_THREAD_TIMEOUT = 4
_VARIABLE = "OPENBLAS_THREAD_TIMEOUT"
_lock = threading.Lock()


def blas_libraries() -> list[str]:
    """Paths of the OpenBLAS shared objects loaded in this process (Linux; [] elsewhere)."""
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
            lines = maps.readlines()
    except OSError:
        return []
    paths = []
    for line in lines:
        path = line.split(maxsplit=5)[-1].strip() if line.count(" ") >= 5 else ""
        name = os.path.basename(path).lower()
        if "openblas" in name and ".so" in name and path not in paths:
            paths.append(path)
    return paths


def _restart_pool(path: str) -> bool:
    """Restart one OpenBLAS's thread pool with the short timeout; False when it lacks
    the entry points."""
    try:
        library = ctypes.CDLL(path)
        read_env = library.openblas_read_env
        shutdown = library.blas_thread_shutdown_
    except (OSError, AttributeError):
        return False
    read_env.restype = None
    shutdown.restype = ctypes.c_int
    read_env()
    shutdown()
    return True


@functools.cache
def share_blas_threads() -> tuple[str, ...]:
    """Make OpenBLAS's workers sleep right after each call (see the module doc), once
    per process; returns the libraries whose pool was restarted."""
    if _VARIABLE in os.environ:
        return ()  # the user's choice
    import numpy  # noqa: F401  (the BLAS to configure is numpy's: make sure it is loaded)

    restarted = []
    with _lock:
        os.environ[_VARIABLE] = str(BLAS_THREAD_TIMEOUT)
        try:
            for path in blas_libraries():
                if _restart_pool(path):
                    restarted.append(path)
        finally:
            del os.environ[_VARIABLE]  # read already; child processes get the default
    return tuple(restarted)
