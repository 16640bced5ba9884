"""relaxjax.backends.llvm: loop-level kernels to x86-64 machine code through llvmlite.

``build(func_or_funcs, target="llvm", fast_math=False, contract=True)`` compiles ``tir.PrimFunc``
kernels (several at once into one LLVM module) and returns ``CompiledKernel``
objects calling them in-process. Compiled objects are cached on disk
(``$RELAXJAX_CACHE_DIR``, default ``~/.cache/relaxjax``); ``cache_stats()`` counts
hits, misses and compiles. See ``docs/internals.md`` (section ``backends/``) for
the kernel ABI.
"""

from .build import KernelObject, build, build_kernels, kernel_object, link_kernels
from .cache import CacheStats, cache_dir, cache_stats, reset_cache_stats
from .kernel import KERNEL_CFUNCTYPE, CompiledKernel
from .target import Target, host_target

__all__ = [
    "KERNEL_CFUNCTYPE",
    "CacheStats",
    "CompiledKernel",
    "KernelObject",
    "Target",
    "build",
    "build_kernels",
    "cache_dir",
    "cache_stats",
    "host_target",
    "kernel_object",
    "link_kernels",
    "reset_cache_stats",
]
