"""Markers and kernels shared by the GPU tests (imported by name: the test directories
are on ``sys.path``)."""

from __future__ import annotations

import pytest

from relaxjax import schedule, tir
from relaxjax.backends.cuda.compile import libdevice_path, nvvm_available, ptxas_path
from relaxjax.tir import te

needs_ptxas = pytest.mark.skipif(
    ptxas_path() is None, reason="ptxas (the nvidia-cuda-nvcc wheel, relaxjax[cuda]) is missing"
)
needs_libdevice = pytest.mark.skipif(
    libdevice_path() is None,
    reason="libdevice (the nvidia-nvvm wheel, relaxjax[cuda]) is missing: kernels calling "
    "math functions cannot be compiled",
)
needs_nvvm = pytest.mark.skipif(
    not nvvm_available(), reason="libnvvm (the nvidia-nvvm wheel, relaxjax[cuda]) is missing"
)


def bound_elementwise(threads: int = 256) -> tir.PrimFunc:
    """``B = exp(A) * 2 + max(A, 0.5)`` over ``(n, 64)``, fused and bound to blocks of
    ``threads`` threads."""
    a = te.placeholder(("n", 64), "float32", name="A")
    b = te.compute(("n", 64), lambda i, j: tir.exp(a[i, j]) * 2.0 + tir.max(a[i, j], 0.5), name="B")
    sch = schedule.Schedule(te.create_prim_func([a, b], name="ew"))
    i, j = sch.get_loops(sch.get_block("B"))
    outer, inner = sch.split(sch.fuse(i, j), factors=[None, threads])
    sch.bind(outer, "blockIdx.x")
    sch.bind(inner, "threadIdx.x")
    return sch.func


VARIANTS = """@prim_func(outputs=1)
def v(A: Buffer((n,), "float32"), B: Buffer((n,), "float32")):
    if n >= 8:
        for bx in thread_binding((n + 127) // 128, thread="blockIdx.x"):
            for tx in thread_binding(128, thread="threadIdx.x"):
                if bx * 128 + tx < n:
                    B[bx * 128 + tx] = A[bx * 128 + tx] * float32(2.0)
    else:
        for tx_1 in thread_binding(8, thread="threadIdx.x"):
            if tx_1 < n:
                B[tx_1] = A[tx_1] * float32(2.0)
"""


def variants() -> tir.PrimFunc:
    """A kernel with two launch variants chosen on the host (``if n >= 8``)."""
    return tir.parse_prim_func(VARIANTS)
