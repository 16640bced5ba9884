"""The GPU attention rule's kernels assemble with ptxas for sm_80 and sm_90 without
spills or a stack frame (their score, probability and accumulator tiles are unrolled
registers): float32 and float16, causal and masked, grouped-query heads, the head dims
of GPT-2 (64) and LLaMA (128). (About 7 s a kernel: the GPT-2 one runs by default.)"""

from __future__ import annotations

import functools

import pytest
from cuda_helpers import needs_ptxas

import relaxjax as relax
import relaxjax.nn as rnn
from relaxjax.backends.cuda import CudaTarget, build_cuda
from relaxjax.passes import default_pipeline
from relaxjax.schedule.rules import RULE_ATTR, default_schedule

# dtype, heads, kv_heads, head dim, causal, bias and mask
VARIANTS = [
    ("float32", 12, 12, 64, True, False),
    pytest.param(("float16", 8, 2, 64, False, True), marks=pytest.mark.slow),
    pytest.param(("float16", 32, 8, 128, True, False), marks=pytest.mark.slow),
    pytest.param(("float64", 4, 4, 32, True, False), marks=pytest.mark.slow),
]


@functools.cache
def _kernel(dtype, heads, kv_heads, width, causal, masked):
    specs = [
        relax.Tensor((1, "n", heads, width), dtype),
        relax.Tensor((1, "s", kv_heads, width), dtype),
        relax.Tensor((1, "s", kv_heads, width), dtype),
    ]
    if masked:
        specs += [relax.Tensor((1, 1, "n", "s"), dtype), relax.Tensor((1, heads, "n", "s"), "bool")]

    def fn(q, k, v, *rest):
        bias, mask = rest if masked else (None, None)
        return rnn.dot_product_attention(q, k, v, bias=bias, mask=mask, is_causal=causal)

    mod = default_pipeline("cuda")(relax.jit(fn).trace(*specs))
    (kernel,) = [k for name, k in mod.kernels().items() if name.startswith("dot_product")]
    return default_schedule(kernel, target="cuda")


@needs_ptxas
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: "-".join(map(str, v)))
def test_attention_kernels_assemble_without_spills(arch, variant):
    kernel = _kernel(*variant)
    assert dict(kernel.attrs)[RULE_ATTR] == "attention"
    module = build_cuda({"attention": kernel}, CudaTarget(arch), assemble_cubin=True)
    (used,) = module.kernels["attention"].resources().values()
    assert not used.spills and used.stack_bytes == 0, f"{arch} {variant}: {used}"
    assert 0 < used.registers <= 255 and 0 < used.shared_bytes <= 48 * 1024
