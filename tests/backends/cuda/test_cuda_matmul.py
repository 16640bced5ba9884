"""The generated matrix products assemble for sm_80 and sm_90 without spills: tensor
cores (``mma.sync``) for float16/bfloat16, 128-bit staging copies, the GEMV for few
rows (no GPU needed: ptxas from the wheel)."""

from __future__ import annotations

import functools
import warnings

import pytest
from cuda_helpers import needs_ptxas

import relaxjax as relax
from relaxjax import nn
from relaxjax.backends.cuda import CudaTarget
from relaxjax.runtime.cuda import compile_program, set_gpu_schedule
from relaxjax.schedule.rules import default_schedule


@pytest.fixture(autouse=True)
def gpu_rules(test_binding):
    """The default GPU rules instead of the directory's test binding."""
    previous = set_gpu_schedule(functools.partial(default_schedule, target="cuda"))
    yield
    set_gpu_schedule(previous)


def _program(dtype: str, rows: object, epilogue: bool):
    def program(a, b, bias):
        y = a @ b
        return nn.gelu(y + bias) if epilogue else y

    program.__annotations__ = {
        "a": relax.Tensor((rows, 4096), dtype),
        "b": relax.Tensor((4096, 4096), dtype),
        "bias": relax.Tensor((4096,), dtype),
    }
    return relax.jit(program, target="cuda")


@needs_ptxas
@pytest.mark.parametrize(
    ("dtype", "arch"),
    [
        ("float16", "sm_80"),
        pytest.param("float16", "sm_90", marks=pytest.mark.slow),
        pytest.param("bfloat16", "sm_90", marks=pytest.mark.slow),
    ],
)
def test_half_matmuls_assemble_on_tensor_cores_without_spills(dtype, arch):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        program = compile_program(
            _program(dtype, "m", False).trace(), CudaTarget(arch), assemble=True, library=False
        )
    (kernel,) = program.cuda.kernels.values()
    assert dict(kernel.func.attrs)["schedule_rule"] == "matmul"
    kind = "bf16" if dtype == "bfloat16" else "f16"
    ptx = program.cuda.ptx
    # Per warp and step, 16x8 products x steps of 16: 4 x 4 x 2 (128x128 tiles, steps of
    # 32, over 512 rows), 2 x 4 x 4 (64x64, steps of 64), 1 x 4 x 8 (32x32, steps of 128,
    # up to 64 rows); ldmatrix: A's row tiles, B's column tiles in pairs (.trans).
    mma = f"mma.sync.aligned.m16n8k16.row.col.f32.{kind}.{kind}.f32"
    assert ptx.count(mma) == 3 * 32
    assert ptx.count("ldmatrix.sync.aligned.m8n8.x4.shared.b16") == 4 * 2 + 2 * 4 + 1 * 8
    assert ptx.count("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16") == 2 * 2 + 2 * 4 + 2 * 8
    assert "ld.global.nc.v4.u32" in ptx and "st.shared.v4.u32" in ptx  # 128-bit staging
    resources = kernel.resources()
    assert len(resources) == 5  # the GEMVs (m <= 4, m <= 8) and three tile sizes
    for entry, used in resources.items():
        assert not used.spills and used.registers <= 255, f"{arch} {entry}: {used}"
    shared = sorted(used.shared_bytes for used in resources.values())
    # Two stages of 128x32 and 32x128 tiles, rows padded by 8 (but not after the last).
    assert shared[-1] == 2 * ((2 * 128 * 40 - 8) + (2 * 32 * 136 - 8))


@needs_ptxas
@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_one_row_products_and_epilogues_are_one_kernel_each(dtype):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        program = compile_program(
            _program(dtype, 1, True).trace(), CudaTarget("sm_90"), assemble=True, library=False
        )
    rules = {name: dict(k.func.attrs)["schedule_rule"] for name, k in program.cuda.kernels.items()}
    assert sorted(rules.values()) == ["injective", "matmul"], rules  # no fallback
    for kernel in program.cuda.kernels.values():
        for entry, used in kernel.resources().items():
            assert not used.spills, f"{entry}: {used}"
    # The matrix in 128-bit loads (float16: raw bits, converted in registers).
    wide = "ld.global.nc.v4.f32" if dtype == "float32" else "ld.global.nc.v4.u32"
    assert wide in program.cuda.ptx
