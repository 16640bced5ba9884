"""What the CPU rules need to know about the target: vector width and tile sizes.

The schedule layer sits below the backends, so it does not import their ``Target``;
it reads what it needs from any object with a ``vector_bits`` attribute (the LLVM
backend's ``Target`` has one); for the name ``"llvm"`` it asks LLVM (through
llvmlite) which vector extensions the host CPU has.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from relaxjax import dtypes

__all__ = ["CpuParams", "cpu_params", "host_vector_bits"]

#: LLVM keeps 256-bit vectors on AVX-512 CPUs unless told otherwise (wider ones lower
#: the clock), so the rules plan for 256-bit lanes whatever the CPU offers.
_PLANNED_VECTOR_BITS = 256


@dataclass(frozen=True, slots=True)
class CpuParams:
    """Tile sizes the CPU rules use.

    ``vector_bits``: the SIMD width planned for; ``matmul_rows`` x
    ``matmul_vectors`` vectors of ``vector_bits``: the matmul register tile. On
    AVX-512, 8 x 48 float32 accumulators are 24 of the 32 zmm registers (the backend
    uses them at full width), leaving room for the panel loads and the broadcast;
    measured with ``bench/matmul.py`` against 6 x 32, 8 x 32 and 6 x 48, it was
    fastest once the column tail got its own 16-wide tiles. AVX2-only targets, with
    16 ymm registers, use 6 x 16 (12 accumulators). A product with fewer rows
    than the tile (a matrix-vector product) is split into ``gemv_parts`` slices of
    the reduction that run in parallel when ``k >= gemv_split_k`` (each slice streams
    whole rows of the matrix, which is what keeps it at memory speed), else into
    column chunks of ``gemv_block``. ``min_parallel_extent``: the
    smallest loop worth running on several threads (the backend also skips tiny
    parallel loops at run time); ``fast_tanh``: float32 ``tanh`` computed by a
    vectorisable rational approximation (:mod:`.approx`) instead of ``tanhf``;
    ``fast_erf``: float32 ``erf`` likewise (:mod:`.erf`) instead of ``erff``.
    """

    vector_bits: int = _PLANNED_VECTOR_BITS
    matmul_rows: int = 8
    matmul_vectors: int = 6
    gemv_block: int = 512
    gemv_parts: int = 16
    gemv_split_k: int = 256
    min_parallel_extent: int = 2
    fast_tanh: bool = True
    fast_erf: bool = True

    def lanes(self, dtype: str) -> int:
        """Elements of ``dtype`` per vector (at least 1)."""
        bits = 8 * dtypes.itemsize(dtype)
        return max(1, self.vector_bits // bits)


def cpu_params(target: object = "llvm") -> CpuParams:
    """Parameters for ``target``: ``"llvm"`` (host CPU), or an object with
    ``vector_bits`` (e.g. ``backends.llvm.Target``); ``ValueError`` otherwise."""
    if isinstance(target, str):
        if target != "llvm":
            raise ValueError(f"the CPU schedule rules serve target 'llvm', got {target!r}")
        return _params_for_bits(host_vector_bits())
    bits = getattr(target, "vector_bits", None)
    if not isinstance(bits, int) or bits <= 0:
        raise ValueError(
            f"cannot read the vector width of target {target!r}: expected 'llvm' or an object "
            "with an int vector_bits"
        )
    return _params_for_bits(bits)


def _params_for_bits(bits: int) -> CpuParams:
    planned = min(bits, _PLANNED_VECTOR_BITS)
    if bits >= 512:
        return CpuParams(vector_bits=planned, matmul_rows=8, matmul_vectors=6)
    return CpuParams(vector_bits=planned, matmul_rows=6, matmul_vectors=2)


@functools.cache
def host_vector_bits() -> int:
    """The widest SIMD register of the host CPU, in bits (as LLVM reports its features)."""
    import llvmlite.binding as llvm

    llvm.initialize_all_targets()
    features = set(llvm.get_host_cpu_features().flatten().split(","))
    if "+avx512f" in features:
        return 512
    return 256 if "+avx" in features else 128
