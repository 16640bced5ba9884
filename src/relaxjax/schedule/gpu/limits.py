"""What a GPU allows one kernel launch: threads per block, grid size, shared memory.

The defaults are those of every NVIDIA GPU since Volta (sm_70), A100 and H100
included: 1024 threads per block (at most 1024 along x and y, 64 along z), a grid
of up to 2^31 - 1 blocks along x and 65535 along y and z, and 48 KB of static
shared memory per block.

Shared memory is always *static* here: every shared buffer gets a constant size
(the constant upper bound of its extents, e.g. ``min(16, n - 16 * i_0)`` -> 16), and a
kernel whose shared buffers have no constant bound, or whose bound exceeds
``max_shared_bytes``, is refused when it is finished for the GPU. (Dynamic shared
memory sized at launch would let a symbolic footprint compile and fail at run time
for large symbol values; the rules never need it.)
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["GpuLimits", "DEFAULT_LIMITS"]


@dataclass(frozen=True, slots=True)
class GpuLimits:
    """Launch limits checked by :func:`relaxjax.schedule.gpu.finish_gpu`."""

    max_threads_per_block: int = 1024
    max_block_dims: tuple[int, int, int] = (1024, 1024, 64)
    max_grid_dims: tuple[int, int, int] = (2**31 - 1, 65535, 65535)
    max_shared_bytes: int = 48 * 1024
    warp_size: int = 32

    def block_dim(self, tag: str) -> int:
        """The limit of one ``threadIdx`` axis."""
        return self.max_block_dims["xyz".index(tag[-1])]

    def grid_dim(self, tag: str) -> int:
        """The limit of one ``blockIdx`` axis."""
        return self.max_grid_dims["xyz".index(tag[-1])]


DEFAULT_LIMITS = GpuLimits()
