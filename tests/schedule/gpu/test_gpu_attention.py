"""The GPU attention rule (schedule/rules/gpu/attention.py): the finished kernel run in
the reference interpreter (blocks and threads, shared tiles, barriers) against jax.

Query tiles of 32 rows and key tiles of 32 keys: the sizes cover empty axes, one row,
tile remainders on both sides (63, 65, 130), causal tiles skipped, grouped-query
heads, a key length other than the query's, bias, boolean masks (a fully masked row),
float32 and float16, and the three ways a row is split over threads (R = 1, 2, 4).
"""

from __future__ import annotations

import sys
from pathlib import Path

import jax
import numpy as np
import pytest

import relaxjax as relax
import relaxjax.nn as rnn
from relaxjax.passes import default_pipeline
from relaxjax.runtime import build_executable
from relaxjax.schedule.gpu import is_finished
from relaxjax.schedule.rules import RULE_ATTR, ScheduleKernels, default_schedule
from relaxjax.schedule.rules.gpu import GpuParams, attention_rule
from relaxjax.schedule.rules.gpu.attention import AttentionPlan, attention_plan

TOL = {
    "float64": (1e-6, 1e-6),  # the softmax runs in float32
    "float32": (2e-5, 2e-5),
    "float16": (2e-2, 2e-2),
}


def _traced(dtype, heads, kv_heads, width, causal, bias=False, mask=False, scale=None):
    q = relax.Tensor(("b", "t", heads, width), dtype)
    kv = relax.Tensor(("b", "s", kv_heads, width), dtype)
    specs = [q, kv, kv]
    if bias:
        specs.append(relax.Tensor(("b", 1, "t", "s"), dtype))
    if mask:
        specs.append(relax.Tensor(("b", heads, "t", "s"), "bool"))

    def fn(q, k, v, *rest):
        rest = list(rest)
        b = rest.pop(0) if bias else None
        m = rest.pop(0) if mask else None
        return rnn.dot_product_attention(q, k, v, bias=b, mask=m, scale=scale, is_causal=causal)

    return relax.jit(fn).trace(*specs)


def _gpu_module(traced):
    return ScheduleKernels("cuda")(default_pipeline("cuda")(traced))


def _attention_kernel(mod):
    (kernel,) = [k for name, k in mod.kernels().items() if name.startswith("dot_product")]
    return kernel


def _check(exe, dtype, heads, kv_heads, width, causal, batch, t, s, bias, mask, scale, seed):
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((batch, t, heads, width)).astype(dtype)
    k = rng.standard_normal((batch, s, kv_heads, width)).astype(dtype)
    v = rng.standard_normal((batch, s, kv_heads, width)).astype(dtype)
    args, kwargs = [q, k, v], {}
    if bias:
        args.append(rng.standard_normal((batch, 1, t, s)).astype(dtype))
        kwargs["bias"] = args[-1]
    if mask:
        keep = rng.random((batch, heads, t, s)) < 0.6
        if t:
            keep[0, 0, 0, :] = False  # a fully masked row: jax averages the values
        args.append(keep)
        kwargs["mask"] = keep
    (ours,) = exe(*args)
    theirs = jax.nn.dot_product_attention(q, k, v, scale=scale, is_causal=causal, **kwargs)
    rtol, atol = TOL[dtype]
    np.testing.assert_allclose(
        np.asarray(ours, np.float64),
        np.asarray(theirs, np.float64),
        rtol=rtol,
        atol=atol,
        err_msg=f"{dtype} H={width} causal={causal} t={t} s={s} heads={heads}/{kv_heads}",
    )


# dtype, heads, kv_heads, width, causal, bias, mask, scale, [(batch, t, s)]
CONFIGS = [
    pytest.param(
        "float32", 2, 1, 64, True, False, False, None, [(1, 0, 0), (1, 1, 1), (1, 40, 40)],
        id="causal-gqa-H64",
    ),
    pytest.param(
        "float32", 2, 1, 16, True, False, False, None, [(1, 63, 63), (1, 65, 65)],
        id="causal-gqa-H16",
    ),
    pytest.param(
        "float32", 2, 2, 32, False, False, False, None, [(1, 1, 40), (1, 33, 0), (1, 20, 45)],
        id="cross-H32",
    ),
    pytest.param(
        "float16", 2, 1, 16, True, True, True, 0.3, [(1, 1, 1), (1, 40, 40)],
        id="float16-bias-mask-H16",
    ),
    pytest.param(
        "float32", 4, 2, 8, False, True, True, None, [(2, 3, 5), (1, 34, 33)],
        id="bias-mask-gqa-H8",
    ),
]  # fmt: skip
SLOW_CONFIGS = [
    pytest.param(
        "float32",
        4,
        2,
        64,
        True,
        False,
        False,
        None,
        [(1, 63, 63), (1, 65, 65), (2, 130, 130)],
        id="causal-130",
    ),
    pytest.param("float32", 4, 4, 64, False, False, False, None, [(1, 130, 97)], id="full-130"),
    pytest.param("float16", 2, 1, 80, True, False, False, None, [(1, 77, 77)], id="float16-H80"),
    pytest.param("float64", 2, 2, 24, True, False, True, None, [(1, 50, 50)], id="float64-H24"),
]


def _run(dtype, heads, kv_heads, width, causal, bias, mask, scale, sizes):
    mod = _gpu_module(_traced(dtype, heads, kv_heads, width, causal, bias, mask, scale))
    kernel = _attention_kernel(mod)
    assert is_finished(kernel) and dict(kernel.attrs)[RULE_ATTR] == "attention"
    exe = build_executable(mod, target="reference")
    for seed, (batch, t, s) in enumerate(sizes):
        if causal and t != s:
            continue
        _check(exe, dtype, heads, kv_heads, width, causal, batch, t, s, bias, mask, scale, seed)


@pytest.mark.parametrize("dtype, heads, kv_heads, width, causal, bias, mask, scale, sizes", CONFIGS)
def test_the_attention_rule_matches_jax(
    dtype, heads, kv_heads, width, causal, bias, mask, scale, sizes
):
    _run(dtype, heads, kv_heads, width, causal, bias, mask, scale, sizes)


@pytest.mark.slow
@pytest.mark.parametrize(
    "dtype, heads, kv_heads, width, causal, bias, mask, scale, sizes", SLOW_CONFIGS
)
def test_the_attention_rule_matches_jax_on_longer_rows(
    dtype, heads, kv_heads, width, causal, bias, mask, scale, sizes
):
    _run(dtype, heads, kv_heads, width, causal, bias, mask, scale, sizes)


@pytest.mark.slow
def test_the_attention_rule_over_random_lengths():
    mod = _gpu_module(_traced("float32", 4, 2, 32, True))
    exe = build_executable(mod, target="reference")
    rng = np.random.default_rng(7)
    for seed, n in enumerate(rng.integers(0, 160, size=6)):
        _check(exe, "float32", 4, 2, 32, True, 1, int(n), int(n), False, False, None, seed)


def test_the_kernel_stages_tiles_in_shared_memory_with_barriers():
    kernel = _attention_kernel(_gpu_module(_traced("float32", 12, 12, 64, True)))
    text = str(kernel)
    # 32 keys x 64 columns of K and V, the partial logits of 128 threads (rows padded)
    assert 'with allocate((2048,), "float32", scope="shared") as K_shared:' in text
    assert 'with allocate((2048,), "float32", scope="shared") as V_shared:' in text
    assert 'with allocate((4223,), "float32", scope="shared") as P_shared:' in text
    assert 'thread_binding(128, thread="threadIdx.x")' in text
    assert 'with allocate((1, 16), "float32", scope="local") as acc:' in text
    assert text.count("syncthreads()") == 3
    # causal: the key tiles end at the block's last row
    # a block per (batch x head, 32 query rows): the tile count needs no division
    assert 'for bh in thread_binding(d0 * 12, thread="blockIdx.y"):' in text
    assert 'for qt in thread_binding((d1 + 31) // 32, thread="blockIdx.x"):' in text
    assert "for st in range((min(d1, d2, qt * 32 + 32) + 31) // 32):" in text


def test_the_plan_splits_rows_by_the_head_dim():
    params = GpuParams()
    cases = {8: (1, 8, 32), 32: (2, 16, 32), 64: (4, 16, 32), 80: (4, 20, 32), 128: (8, 16, 16)}
    # (128: 256 threads' partial logits and 32 keys of K and V would pass 48 KB)
    for width, (threads_per_row, columns, keys) in cases.items():
        plan = attention_plan(width, "float32", "float32", params)
        assert (plan.R, plan.C, plan.keys) == (threads_per_row, columns, keys), width
    # wide heads: the key tile shrinks until it fits in 48 KB, or the rule steps aside
    assert attention_plan(256, "float32", "float32", params) == AttentionPlan(8, 32, 8)
    assert attention_plan(512, "float64", "float64", params) is None  # 84 KB at 8 keys
    assert attention_plan(1024, "float32", "float32", params) is None  # 128 columns a thread
    assert attention_plan("h", "float32", "float32", params) is None


def test_other_kernels_and_symbolic_head_dims_are_left_to_the_next_rules():
    mod = default_pipeline("cuda")(_traced("float32", 2, 2, "h", True))
    kernel = _attention_kernel(mod)
    assert attention_rule(kernel) is None
    scheduled = default_schedule(kernel, target="cuda")
    assert dict(scheduled.attrs)[RULE_ATTR] == "fallback"
    softmax = relax.jit(lambda x: rnn.softmax(x))
    (other,) = (
        default_pipeline("cuda")(softmax.trace(relax.Tensor(("n", 8), "float32")))
        .kernels()
        .values()
    )
    assert attention_rule(other) is None


def test_no_kernel_of_the_gpt2_block_falls_back():
    """GPT-2 small (d=768, 12 heads of 64): attention takes its rule, and the reshape to
    heads (a leading axis of 1, ``(1, t, 12, 64)``) the injective one."""
    sys.path.insert(0, str(Path(__file__).parents[2] / "backends" / "cuda"))
    from models import gpt_block

    mod = _gpu_module(gpt_block(768, 12, 3072).trace())
    rules = {name: dict(k.attrs)[RULE_ATTR] for name, k in mod.kernels().items()}
    assert rules["dot_product_attention"] == "attention"
    assert "fallback" not in rules.values(), rules


def test_a_reshape_with_a_leading_unit_axis_is_injective_and_exact():
    f = relax.jit(lambda x: x.reshape(1, x.shape[0], 3, 16))
    mod = _gpu_module(f.trace(relax.Tensor(("n", 48), "float32")))
    (kernel,) = mod.kernels().values()
    assert dict(kernel.attrs)[RULE_ATTR] == "injective"
    assert 'thread_binding(240, thread="threadIdx.x")' in str(kernel)  # 5 rows of 48
    exe = build_executable(mod, target="reference")
    for n in (0, 1, 7, 33):
        x = np.random.default_rng(n).standard_normal((n, 48)).astype(np.float32)
        (ours,) = exe(x)
        np.testing.assert_array_equal(ours, x.reshape(1, n, 3, 16))
