"""The emulator's SIMT semantics on hand-written NVVM IR: barriers and warp shuffles as
on the GPU, and the synchronisation errors a GPU would hang or read garbage on."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest
from emulator import EmulationError, emulate

_DECLARATIONS = """
declare i32 @"llvm.nvvm.read.ptx.sreg.tid.x"()
declare void @"llvm.nvvm.barrier0"()
declare float @"llvm.nvvm.shfl.sync.down.f32"(i32, float, i32, i32)
declare i32 @"llvm.nvvm.shfl.sync.bfly.i32"(i32, i32, i32, i32)
"""

#: B[0] = sum(A[0:64]) by one block of 64 threads: a shfl.down tree per warp, the warps'
#: sums through shared memory and a barrier.
BLOCK_SUM = (
    '@"partial" = internal addrspace(3) global [2 x float] zeroinitializer\n'
    + _DECLARATIONS
    + """
define void @"block_sum"(ptr %A, ptr %B) {
entry:
  %t = call i32 @"llvm.nvvm.read.ptx.sreg.tid.x"()
  %p = getelementptr float, ptr %A, i32 %t
  %v0 = load float, ptr %p
  %s1 = call float @"llvm.nvvm.shfl.sync.down.f32"(i32 -1, float %v0, i32 16, i32 31)
  %v1 = fadd float %v0, %s1
  %s2 = call float @"llvm.nvvm.shfl.sync.down.f32"(i32 -1, float %v1, i32 8, i32 31)
  %v2 = fadd float %v1, %s2
  %s3 = call float @"llvm.nvvm.shfl.sync.down.f32"(i32 -1, float %v2, i32 4, i32 31)
  %v3 = fadd float %v2, %s3
  %s4 = call float @"llvm.nvvm.shfl.sync.down.f32"(i32 -1, float %v3, i32 2, i32 31)
  %v4 = fadd float %v3, %s4
  %s5 = call float @"llvm.nvvm.shfl.sync.down.f32"(i32 -1, float %v4, i32 1, i32 31)
  %v5 = fadd float %v4, %s5
  %lane = and i32 %t, 31
  %warp = lshr i32 %t, 5
  %first_lane = icmp eq i32 %lane, 0
  br i1 %first_lane, label %publish, label %sync
publish:
  %slot = getelementptr [2 x float], ptr addrspace(3) @"partial", i32 0, i32 %warp
  store float %v5, ptr addrspace(3) %slot
  br label %sync
sync:
  call void @"llvm.nvvm.barrier0"()
  %first = icmp eq i32 %t, 0
  br i1 %first, label %total, label %done
total:
  %a = load float, ptr addrspace(3) @"partial"
  %q = getelementptr [2 x float], ptr addrspace(3) @"partial", i32 0, i32 1
  %b = load float, ptr addrspace(3) %q
  %sum = fadd float %a, %b
  store float %sum, ptr %B
  br label %done
done:
  ret void
}
"""
)

#: A[t] = the value of lane t ^ 16 (bfly), by one block.
XOR16 = (
    _DECLARATIONS
    + """
define void @"xor16"(ptr %A) {
entry:
  %t = call i32 @"llvm.nvvm.read.ptx.sreg.tid.x"()
  %v = call i32 @"llvm.nvvm.shfl.sync.bfly.i32"(i32 -1, i32 %t, i32 16, i32 31)
  %p = getelementptr i32, ptr %A, i32 %t
  store i32 %v, ptr %p
  ret void
}
"""
)

#: Lanes 0-15 shuffle by 1, the others by 2: one warp at two different shuffles.
DIVERGENT = (
    _DECLARATIONS
    + """
define void @"divergent"(ptr %A) {
entry:
  %t = call i32 @"llvm.nvvm.read.ptx.sreg.tid.x"()
  %low = icmp ult i32 %t, 16
  %mask = select i1 %low, i32 1, i32 2
  %v = call i32 @"llvm.nvvm.shfl.sync.bfly.i32"(i32 -1, i32 %t, i32 %mask, i32 31)
  %p = getelementptr i32, ptr %A, i32 %t
  store i32 %v, ptr %p
  ret void
}
"""
)

#: Thread 0 returns before the barrier the others wait at.
EARLY_EXIT = (
    _DECLARATIONS
    + """
define void @"early_exit"(ptr %A) {
entry:
  %t = call i32 @"llvm.nvvm.read.ptx.sreg.tid.x"()
  %first = icmp eq i32 %t, 0
  br i1 %first, label %out, label %sync
sync:
  call void @"llvm.nvvm.barrier0"()
  br label %out
out:
  ret void
}
"""
)


def _params(*arrays: np.ndarray) -> tuple:
    return tuple((array.ctypes.data, ctypes.c_void_p) for array in arrays)


def test_a_block_reduction_through_shuffles_shared_memory_and_a_barrier():
    module = emulate(BLOCK_SUM, ["block_sum"])
    assert module.simt == {"block_sum"}
    a = np.random.default_rng(0).standard_normal(64).astype(np.float32)
    b = np.zeros(1, np.float32)
    for blocks in (1, 3):  # every block computes the same sum; shared memory is reused
        module.launch("block_sum", (blocks, 1, 1), (64, 1, 1), _params(a, b))
        np.testing.assert_allclose(b[0], a.sum(dtype=np.float64), rtol=1e-5)


def test_bfly_shuffles_exchange_lanes_within_each_warp():
    module = emulate(XOR16, ["xor16"])
    out = np.full(64, -1, np.int32)
    module.launch("xor16", (1, 1, 1), (64, 1, 1), _params(out))
    np.testing.assert_array_equal(out, np.arange(64) ^ 16)


def test_a_shuffle_from_a_lane_the_partial_warp_lacks_is_an_error():
    module = emulate(XOR16, ["xor16"])
    out = np.zeros(40, np.int32)  # the second warp has 8 lanes: lane 0 reads lane 16
    with pytest.raises(EmulationError, match="reads a lane its warp does not have"):
        module.launch("xor16", (1, 1, 1), (40, 1, 1), _params(out))


def test_lanes_at_different_shuffles_are_an_error():
    module = emulate(DIVERGENT, ["divergent"])
    out = np.zeros(32, np.int32)
    with pytest.raises(EmulationError, match="lanes of one warp are at different shuffles"):
        module.launch("divergent", (1, 1, 1), (32, 1, 1), _params(out))


def test_a_thread_missing_a_barrier_is_reported_not_hung(monkeypatch):
    import emulator

    monkeypatch.setattr(emulator, "TIMEOUT", 0.5)
    module = emulate(EARLY_EXIT, ["early_exit"])
    with pytest.raises(EmulationError, match="threads still wait after"):
        module.launch("early_exit", (1, 1, 1), (4, 1, 1), _params(np.zeros(4, np.float32)))
