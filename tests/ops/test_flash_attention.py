"""The fused attention kernel (ops/flash_attention.py) compiled, against jax.

Tiles of 16 query rows and 64 keys: the sizes cover empty axes, one row, tile
remainders and several key tiles; causal, boolean masks (rows fully masked included),
bias, grouped-query heads, float32 and float16. The kernel keeps no (T, S) tensor.
"""

from __future__ import annotations

import jax
import numpy as np
import pytest

import relaxjax as relax
import relaxjax.nn as rnn
from relaxjax import arith
from relaxjax.ir import TensorInfo
from relaxjax.ops import get
from relaxjax.ops.attention import AttentionAttrs
from relaxjax.runtime import build_executable
from relaxjax.schedule.rules.annotated import annotated_rule

HEADS, KV_HEADS, WIDTH = 4, 2, 8
TOL = {"float32": (2e-5, 2e-5), "float16": (2e-2, 2e-2)}


def _executable(dtype: str, causal: bool, mask: bool, bias: bool, kv_heads: int = KV_HEADS):
    q = relax.Tensor(("b", "t", HEADS, WIDTH), dtype)
    kv = relax.Tensor(("b", "s", kv_heads, WIDTH), dtype)
    specs = [q, kv, kv]
    if bias:
        specs.append(relax.Tensor(("b", 1, "t", "s"), dtype))
    if mask:
        specs.append(relax.Tensor(("b", HEADS, "t", "s"), "bool"))

    def fn(q, k, v, *rest):
        rest = list(rest)
        b = rest.pop(0) if bias else None
        m = rest.pop(0) if mask else None
        return rnn.dot_product_attention(q, k, v, bias=b, mask=m, is_causal=causal)

    return build_executable(relax.jit(fn).trace(*specs))


def _check(exe, dtype, causal, mask, bias, batch, t, s, kv_heads=KV_HEADS, seed=0):
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((batch, t, HEADS, WIDTH)).astype(dtype)
    k = rng.standard_normal((batch, s, kv_heads, WIDTH)).astype(dtype)
    v = rng.standard_normal((batch, s, kv_heads, WIDTH)).astype(dtype)
    args = [q, k, v]
    kwargs = {}
    if bias:
        args.append(rng.standard_normal((batch, 1, t, s)).astype(dtype))
        kwargs["bias"] = args[-1]
    if mask:
        keep = rng.random((batch, HEADS, t, s)) < 0.6
        if t:
            keep[0, 0, 0, :] = False  # a fully masked row: jax averages the values
        args.append(keep)
        kwargs["mask"] = keep
    (ours,) = exe(*args)
    theirs = jax.nn.dot_product_attention(q, k, v, is_causal=causal, **kwargs)
    rtol, atol = TOL[dtype]
    np.testing.assert_allclose(
        ours.astype(np.float64),
        np.asarray(theirs, np.float64),
        rtol=rtol,
        atol=atol,
        err_msg=f"{dtype} causal={causal} mask={mask} bias={bias} t={t} s={s}",
    )


CONFIGS = [
    # dtype, causal, mask, bias
    ("float32", True, False, False),
    ("float32", False, True, True),
    ("float16", True, False, False),
]
SLOW_CONFIGS = [*CONFIGS, ("float32", False, False, False), ("float32", True, True, False)]
SIZES = [(1, 0, 3), (2, 3, 0), (1, 1, 1), (2, 17, 17), (1, 5, 70), (1, 70, 130)]


@pytest.mark.parametrize(("dtype", "causal", "mask", "bias"), CONFIGS)
def test_fused_attention_matches_jax(dtype, causal, mask, bias):
    exe = _executable(dtype, causal, mask, bias)
    for batch, t, s in SIZES:
        _check(exe, dtype, causal, mask, bias, batch, t, s)


@pytest.mark.slow
@pytest.mark.parametrize(("dtype", "causal", "mask", "bias"), SLOW_CONFIGS)
def test_fused_attention_matches_jax_up_to_a_thousand_keys(dtype, causal, mask, bias):
    exe = _executable(dtype, causal, mask, bias)
    for n in (63, 64, 65, 257, 1030):
        _check(exe, dtype, causal, mask, bias, 1, n, n, seed=n)
    _check(exe, dtype, causal, mask, bias, 2, 1, 1030)  # one-token decode over a long cache


def test_a_single_kv_head_matches_jax():
    for kv_heads in (1,):
        exe = _executable("float32", True, False, False, kv_heads)
        _check(exe, "float32", True, False, False, 2, 19, 19, kv_heads)


def test_the_kernel_keeps_no_score_matrix_and_skips_causal_tiles():
    t, s = arith.syms("t s")
    q = TensorInfo((1, t, HEADS, WIDTH), "float32")
    kv = TensorInfo((1, s, KV_HEADS, WIDTH), "float32")
    kernel = get("dot_product_attention").lower([q, kv, kv], AttentionAttrs(is_causal=True), q)
    text = str(annotated_rule(kernel))
    assert "for task in parallel(((d0 + 15) // 16) * 4):" in text, text  # t is d0, s is d1
    # local tiles only: 16 rows x 8 of output, 8 x 64 keys, 64 logits
    assert 'allocate((8, 64), "float32", scope="local") as kt' in text
    allocations = [line for line in text.splitlines() if "allocate(" in line]
    assert len(allocations) == 8 and not any("d0" in a or "d1" in a for a in allocations)
    # causal: a task visits the key tiles up to its last query row only
    last_row = "min((task % ((d0 + 15) // 16)) * 16 + 16, d0, d1)"
    assert f"for st in range(({last_row} + 63) // 64):" in text
    plain = get("dot_product_attention").lower([q, kv, kv], AttentionAttrs(), q)
    assert "for st in range((d1 + 63) // 64):" in str(plain)


def test_annotated_rule_applies_the_loop_kinds_and_ignores_other_kernels():
    t, s = arith.syms("t s")
    q = TensorInfo((t, HEADS, WIDTH), "float32")
    kv = TensorInfo((s, HEADS, WIDTH), "float32")
    kernel = get("dot_product_attention").lower([q, kv, kv], AttentionAttrs(), q)
    assert "parallel(" not in str(kernel) and "vectorized(" not in str(kernel)
    scheduled = str(annotated_rule(kernel))
    assert "parallel(" in scheduled and "vectorized(" in scheduled
    assert "cpu_kind" not in scheduled
    softmax = get("softmax").lower([q], get("softmax").Attrs(axes=(2,)), q)
    assert annotated_rule(softmax) is None


@pytest.mark.parametrize(("t", "heads"), [(0, 2), (3, 0), (0, 0)])
def test_static_empty_queries_build_and_zero_heads_are_refused(t, heads):
    """A task index divides by the number of query tiles and heads: 0 of them builds."""
    q = relax.Tensor((1, t, heads, 2), "float32")
    kv = relax.Tensor((1, 4, heads, 2), "float32")
    fn = relax.jit(lambda q, k, v: rnn.dot_product_attention(q, k, v))
    if heads == 0:
        with pytest.raises(relax.ShapeError, match="multiple of"):
            fn.trace(q, kv, kv)
        return
    x, y = np.zeros((1, t, heads, 2), np.float32), np.ones((1, 4, heads, 2), np.float32)
    (out,) = build_executable(fn.trace(q, kv, kv))(x, y, y)
    assert out.shape == x.shape
