"""What the GPU rules need to know about the target: block sizes and vector width.

The schedule layer sits below the backends, so it reads what it needs from the
target given to ``default_schedule``: the name ``"cuda"``, or any object with
``kind == "cuda"`` (a backend's target) whose attributes override the defaults
(``threads``, ``max_threads``, ``vector_bytes``, ``limits``); its ``arch``
(``"sm_90"``) says whether tensor cores may be used.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields

from relaxjax import dtypes
from relaxjax.schedule.gpu.limits import DEFAULT_LIMITS, GpuLimits

__all__ = ["MMA_ARCH", "GpuParams", "gpu_params", "is_gpu_target"]

#: The first SM architecture with ``mma.sync.m16n8k16`` for float16 and bfloat16.
MMA_ARCH = 80


@dataclass(frozen=True, slots=True)
class GpuParams:
    """Sizes the GPU rules use.

    ``threads``: threads per block of elementwise kernels and of a row reduced by a
    whole block; ``vector_bytes``: the widest load/store (128-bit) an aligned
    elementwise access is grouped into; ``warp_rows``: rows per block when each row
    is reduced by one warp, which the rules do for rows of at most ``short_row``
    elements; matrix products: ``matmul_tile`` x ``matmul_tile`` tiles per block in
    steps of ``matmul_step`` along the reduction, ``matmul_regs`` x ``matmul_regs``
    accumulators per thread, the tiles double buffered unless ``double_buffer`` is
    False, and the matrix-vector schedule for at most ``gemv_rows`` rows (more, while
    they keep at most ``gemv_registers`` accumulators per thread, for a matrix read
    along its rows); float16 and
    bfloat16 products on tensor cores (``tensor_cores``: the target is sm_80 or newer)
    in ``mma_tile_m x mma_tile_n`` tiles per block of ``mma_warps`` (rows, columns)
    warps, in steps of ``mma_step``, or for at most ``rows`` rows the smaller tiles
    ``(rows, tile_m, tile_n, step, warps_m, warps_n)`` of ``mma_small_tiles`` (more
    blocks for the SMs, fewer idle rows, longer steps: fewer waits on memory); a
    reduction of everything to one value runs on ``partial_blocks`` blocks,
    then one; the ``parallel`` loops of kernels written as plain loops (a sort per
    row) run a thread per iteration in blocks of ``loop_threads``; ``limits``: what a
    launch may use.
    """

    threads: int = 256
    vector_bytes: int = 16
    warp_rows: int = 4
    short_row: int = 128
    warp: int = 32
    matmul_tile: int = 64
    matmul_regs: int = 4
    matmul_step: int = 16
    double_buffer: bool = True
    gemv_rows: int = 4
    gemv_registers: int = 64
    tensor_cores: bool = True
    mma_tile_m: int = 128
    mma_tile_n: int = 128
    mma_step: int = 32
    mma_warps: tuple[int, int] = (2, 4)
    mma_small_tiles: tuple[tuple[int, int, int, int, int, int], ...] = (
        (64, 32, 32, 128, 2, 1),
        (512, 64, 64, 64, 2, 2),
    )
    partial_blocks: int = 128
    loop_threads: int = 64
    limits: GpuLimits = field(default=DEFAULT_LIMITS)

    def lanes(self, dtype: str) -> int:
        """Elements of ``dtype`` per vector access."""
        return max(1, self.vector_bytes // dtypes.itemsize(dtype))


def is_gpu_target(target: object) -> bool:
    """Whether ``target`` names the CUDA target (``"cuda"`` or ``.kind == "cuda"``)."""
    return target == "cuda" or getattr(target, "kind", None) == "cuda"


def gpu_params(target: object = "cuda") -> GpuParams:
    """The parameters for ``target`` (a :class:`GpuParams` is taken as it is);
    ``ValueError`` when it is not a GPU target."""
    if isinstance(target, GpuParams):
        return target
    if not is_gpu_target(target):
        raise ValueError(f"the GPU schedule rules serve target 'cuda', got {target!r}")
    if isinstance(target, str):
        return GpuParams()
    given = {f.name: getattr(target, f.name) for f in fields(GpuParams) if hasattr(target, f.name)}
    arch = getattr(target, "arch", None)
    if isinstance(arch, str) and arch.startswith("sm_") and arch[3:].isdigit():
        given.setdefault("tensor_cores", int(arch[3:]) >= MMA_ARCH)
    return GpuParams(**given)
