"""relaxjax.backends.cuda: loop-level kernels with thread bindings to PTX and cubins.

``build_cuda(funcs, target=CudaTarget("sm_90"), compiler="auto")`` emits NVVM IR
(:mod:`.codegen`, sharing the lowering of :mod:`relaxjax.backends.llvm`), compiles it
to PTX with libnvvm in a child process or with llvmlite's NVPTX back end
(:mod:`.compile`), assembles a cubin with ptxas or nvJitLink, and caches both on disk.
Each kernel becomes one or more launches (:mod:`.launches`). No GPU is needed to build;
running is :mod:`relaxjax.runtime.cuda`'s. See ``docs/gpu.md``.
"""

from .build import CudaKernel, CudaModule, build_cuda, describe_toolchain, emit_ptx
from .compile import (
    COMPILERS,
    EntryResources,
    assemble,
    available_compilers,
    compile_ptx,
    nvvm_available,
    ptx_isa,
)
from .launches import KernelPlan, LaunchPlan, Workspace, plan_kernel
from .target import ARCHITECTURES, CudaTarget, toolchain_versions

__all__ = [
    "ARCHITECTURES",
    "COMPILERS",
    "CudaKernel",
    "CudaModule",
    "CudaTarget",
    "EntryResources",
    "KernelPlan",
    "LaunchPlan",
    "Workspace",
    "assemble",
    "available_compilers",
    "build_cuda",
    "compile_ptx",
    "describe_toolchain",
    "emit_ptx",
    "nvvm_available",
    "plan_kernel",
    "ptx_isa",
    "toolchain_versions",
]
