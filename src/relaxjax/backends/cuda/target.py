"""The CUDA target: which GPU architecture to emit for, its limits, and the toolchain.

A :class:`CudaTarget` is a frozen description (part of the disk-cache key, with the
versions of the tools that turn NVVM IR into a cubin). ``arch`` is the SM
architecture (``"sm_80"`` for A100, ``"sm_90"`` for H100/H200): libnvvm compiles for
``compute_XX`` and ptxas/nvJitLink assemble for ``sm_XX``. Without a device, any
supported architecture can be requested; with one, :func:`device_target` reads it.

The tools come from the NVIDIA wheels (``nvidia-nvvm``, ``nvidia-cuda-nvcc``,
``nvidia-nvjitlink``; the ``cuda`` extra of relaxjax), found by ``cuda.pathfinder``
in site-packages, never from ``PATH``: a ptxas older than the libnvvm that wrote
the PTX rejects it, so all come pinned to one release (13.0, whose PTX ISA 9.0 the
CUDA 13.0 driver loads).
"""

from __future__ import annotations

import functools
import importlib.metadata
from dataclasses import dataclass

from ...errors import LoweringError

__all__ = [
    "ARCHITECTURES",
    "CODEGEN_VERSION",
    "CudaTarget",
    "toolchain_versions",
]

#: The SM architectures the backend emits for (Ampere, Hopper).
ARCHITECTURES = ("sm_80", "sm_86", "sm_89", "sm_90")

# Bump when the NVVM IR emitted for the same TIR changes meaning or form, so that cached
# PTX made by an older backend is not reused.
CODEGEN_VERSION = 1

_WHEELS = ("nvidia-nvvm", "nvidia-cuda-nvcc", "nvidia-nvjitlink", "cuda-bindings", "llvmlite")


@dataclass(frozen=True, slots=True)
class CudaTarget:
    """What GPU code to emit, and the limits code generation respects.

    ``max_threads_per_block`` and ``max_shared_bytes`` (static shared memory per block)
    are the device's limits; a launch over them is refused. Constant-extent
    ``unrolled`` loops up to ``max_unroll`` iterations are unrolled while emitting.
    ``max_stack_bytes`` bounds a thread's constant-size local buffers (registers or
    local memory); larger or symbolic ones are refused.
    """

    arch: str = "sm_90"
    opt_level: int = 3
    max_threads_per_block: int = 1024
    max_shared_bytes: int = 48 * 1024
    max_unroll: int = 64
    max_stack_bytes: int = 1 << 16
    parallel_min_work: int = 0

    def __post_init__(self) -> None:
        if self.arch not in ARCHITECTURES:
            raise LoweringError(
                f"CudaTarget.arch: expected one of {', '.join(ARCHITECTURES)}, given {self.arch!r}"
            )
        if not 0 <= self.opt_level <= 3:
            raise ValueError(f"CudaTarget.opt_level: expected 0..3, given {self.opt_level}")
        for name in ("max_threads_per_block", "max_shared_bytes", "max_unroll", "max_stack_bytes"):
            if getattr(self, name) < 0:
                raise ValueError(f"CudaTarget.{name}: expected >= 0, given {getattr(self, name)}")

    @property
    def kind(self) -> str:
        """The backend name, as accepted by ``build(target=...)``."""
        return "cuda"

    @property
    def sm(self) -> int:
        """The architecture as a number (90 for ``sm_90``)."""
        return int(self.arch[3:])

    @property
    def compute(self) -> str:
        """The virtual architecture libnvvm compiles for (``compute_90``)."""
        return f"compute_{self.sm}"

    @property
    def vector_bits(self) -> int:
        """The widest load a thread issues (128-bit), for rules that read targets."""
        return 128

    def cache_identity(self) -> str:
        """Everything about the target and toolchain that changes the code, as stable text."""
        versions = ",".join(f"{k}={v}" for k, v in toolchain_versions().items())
        return f"{self.arch}|O{self.opt_level}|codegen-{CODEGEN_VERSION}|{versions}"


@functools.cache
def toolchain_versions() -> dict[str, str]:
    """Installed versions of the wheels that compile GPU code (``"none"`` when missing)."""
    versions = {}
    for wheel in _WHEELS:
        try:
            versions[wheel] = importlib.metadata.version(wheel)
        except importlib.metadata.PackageNotFoundError:
            versions[wheel] = "none"
    return versions
