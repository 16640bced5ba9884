"""``relaxjax.backends.build``: targets, one kernel or several in one module, errors."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from relaxjax import arith
from relaxjax.backends import build
from relaxjax.backends.llvm import CompiledKernel, Target, cache_stats, host_target
from relaxjax.backends.llvm import reset_cache_stats as reset
from relaxjax.errors import LoweringError
from relaxjax.tir import Buffer, BufferStore, For, PrimFunc

N, I = arith.syms("n i")


def scale(name: str, factor: float) -> PrimFunc:
    a, c = Buffer("A", (N,), "float32"), Buffer("C", (N,), "float32")
    return PrimFunc(name, (a, c), For(I, 0, N, "serial", BufferStore(c, a[I] * factor, (I,))))


def test_one_kernel_builds_to_a_compiled_kernel():
    kernel = build(scale("double", 2.0))
    assert isinstance(kernel, CompiledKernel)
    np.testing.assert_array_equal(kernel(np.arange(4, dtype=np.float32)), [0, 2, 4, 6])


def test_several_kernels_compile_as_one_module():
    reset()
    kernels = build([scale("triple", 3.0), scale("halve", 0.5)])
    assert sorted(kernels) == ["halve", "triple"]
    assert cache_stats().compiles + cache_stats().hits == 1  # one object for both
    x = np.ones(3, np.float32)
    np.testing.assert_array_equal(kernels["triple"](x), 3 * x)
    np.testing.assert_array_equal(kernels["halve"](x), x / 2)
    assert build([]) == {}


def test_a_mapping_names_kernels_by_its_keys():
    # e.g. an IRModule's global names, which need not equal PrimFunc.name
    kernels = build({"scale_a": scale("same", 2.0), "scale_b": scale("same", 3.0)})
    assert sorted(kernels) == ["scale_a", "scale_b"]
    assert kernels["scale_b"].symbol == "relaxjax_scale_b"
    np.testing.assert_array_equal(kernels["scale_b"](np.ones(2, np.float32)), [3, 3])
    with pytest.raises(TypeError, match="kernel names must be non-empty strings, given 3"):
        build({3: scale("x", 1.0)})


def test_explicit_target():
    portable = replace(host_target(), cpu="x86-64-v2", features="")
    assert isinstance(portable, Target)
    kernel = build(scale("portable", 5.0), target=portable)
    np.testing.assert_array_equal(kernel(np.ones(2, np.float32)), [5, 5])


def test_cuda_builds_launch_plans_without_a_gpu():
    from relaxjax.backends.cuda import CudaKernel

    kernel = build(scale("gpu", 1.0), target="cuda")
    assert isinstance(kernel, CudaKernel) and kernel.entries == ("relaxjax_gpu",)
    (launch,) = kernel.plan.launches  # no thread bindings: one thread
    assert launch.grid == (1, 1, 1) and launch.block == (1, 1, 1)
    assert ".entry relaxjax_gpu" in kernel.module.ptx


def test_unknown_target():
    with pytest.raises(LoweringError, match="unknown target 'tpu'; expected 'llvm' or 'cuda'"):
        build(scale("x", 1.0), target="tpu")


def test_kernels_built_together_need_distinct_names():
    with pytest.raises(LoweringError, match=r"distinct names; repeated: \['same'\]"):
        build([scale("same", 1.0), scale("same", 2.0)])


def test_only_prim_funcs_are_built():
    with pytest.raises(TypeError, match="build expects tir.PrimFunc kernels, given str"):
        build(["not a kernel"])


def test_kernel_names_that_are_c_library_functions_do_not_clash():
    # exported as relaxjax_malloc, so the kernel cannot capture the C library's malloc
    kernel = build(scale("malloc", 7.0))
    assert kernel.symbol == "relaxjax_malloc"
    np.testing.assert_array_equal(kernel(np.ones(2, np.float32)), [7, 7])


def test_invalid_target_settings_are_refused():
    with pytest.raises(ValueError, match=r"Target.opt_level: expected 0..3, given 4"):
        replace(host_target(), opt_level=4)
    with pytest.raises(ValueError, match=r"Target.max_unroll: expected >= 0, given -1"):
        replace(host_target(), max_unroll=-1)


def test_target_describes_its_vector_width():
    base = host_target()
    assert replace(base, features="+avx,+avx2,+avx512f").vector_bits == 512
    assert replace(base, features="+avx,+avx2,-avx512f").vector_bits == 256
    assert replace(base, features="+sse2").vector_bits == 128
    assert base.kind == "llvm"
    assert base.cpu in base.cache_identity() and "codegen-" in base.cache_identity()
