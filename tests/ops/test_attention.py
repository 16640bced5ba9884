"""dot_product_attention: deduction against jax (oracle), the reference against
jax.nn.dot_product_attention's numerics, and every error path."""

from __future__ import annotations

import sys
from pathlib import Path

import jax
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import relaxjax as relax
from relaxjax import arith
from relaxjax._nn.attention import dot_product_attention
from relaxjax.errors import ShapeError
from relaxjax.ir import TensorInfo
from relaxjax.ops import get
from relaxjax.ops.attention import AttentionAttrs

sys.path.insert(0, str(Path(__file__).parent))
from oracle import (  # noqa: E402
    FLOAT_DTYPES,
    M,
    N,
    assert_close,
    assert_precise,
    check_coarsening,
    check_lowering,
    check_sound,
    deduce,
    dims,
    envs,
    random_array,
)

B, T, S = arith.syms("b t s")


# jax accepts any bias/mask batch and sequence sizes when the output has no elements (its
# final reshape then succeeds); cases with masks draw no zero sizes to stay off that quirk.
NONZERO_DIMS = st.sampled_from((1, 1, 2, 3, N, M, N + 1, 2 * N))


def _sometimes(draw, dim, dims):
    """Usually ``dim``; now and then 1 or another dim (to exercise mismatches)."""
    return dim if draw(st.integers(0, 5)) else draw(st.one_of(st.just(1), dims))


@st.composite
def attention_cases(draw, with_masks: bool = True):
    dims_ = NONZERO_DIMS if with_masks else dims()
    batch, target, source, width = (draw(dims_) for _ in range(4))
    kv_heads = draw(st.sampled_from([1, 2, N]))
    groups = draw(st.sampled_from([1, 2]))
    heads = kv_heads * groups if draw(st.integers(0, 5)) else draw(dims_)
    rank = draw(st.sampled_from([3, 4, 4]))
    lead = (batch,) if rank == 4 else ()
    dtype = draw(st.sampled_from(FLOAT_DTYPES))
    query = TensorInfo(lead + (target, heads, _sometimes(draw, width, dims_)), dtype)
    key = TensorInfo(lead + (source, kv_heads, width), dtype)
    value = TensorInfo(lead + (_sometimes(draw, source, dims_), kv_heads, width), dtype)
    operands = [query, key, value]
    attrs = {"is_causal": draw(st.booleans())}
    full = (batch, heads, target, source)
    for name in ("bias", "mask"):
        if with_masks and draw(st.booleans()):
            shape = tuple(d if draw(st.booleans()) else 1 for d in full)
            shape = tuple(_sometimes(draw, d, dims_) for d in shape)[draw(st.integers(0, 2)) :]
            operands.append(TensorInfo(shape, "bool" if name == "mask" else dtype))
            attrs[f"has_{name}"] = True
    if draw(st.booleans()):
        attrs["scale"] = 0.5
    return operands, AttentionAttrs(**attrs)


def _jax_fn(attrs):
    def fn(query, key, value, *rest):
        rest = list(rest)
        bias = rest.pop(0) if attrs.has_bias else None
        mask = rest.pop(0) if attrs.has_mask else None
        return jax.nn.dot_product_attention(
            query, key, value, bias, mask, scale=attrs.scale, is_causal=attrs.is_causal
        )

    return fn


@settings(max_examples=25)
@given(case=attention_cases(), env=envs(1, 4))
def test_attention_with_masks_oracle(case, env):
    operands, attrs = case
    check_sound("dot_product_attention", operands, attrs, _jax_fn(attrs), env)
    check_coarsening("dot_product_attention", operands, attrs)


@settings(max_examples=25)
@given(case=attention_cases(with_masks=False), env=envs())
def test_attention_oracle(case, env):
    operands, attrs = case
    check_sound("dot_product_attention", operands, attrs, _jax_fn(attrs), env)


def test_attention_is_precise():
    q = TensorInfo((B, T, N, 64), "float16")
    kv = TensorInfo((B, S, M, 64), "float16")
    deduction = deduce("dot_product_attention", [q, kv, kv], AttentionAttrs())
    assert_precise(deduction, (B, T, N, 64))
    assert [c.kind for c in deduction.checks] == ["le", "divides"]  # GQA: m >= 1 divides n
    mha = TensorInfo((B, S, N, 64), "float16")
    deduction = deduce("dot_product_attention", [q, mha, mha], AttentionAttrs(is_causal=True))
    assert_precise(deduction, (B, T, N, 64))
    mask = TensorInfo((T, S), "bool")
    deduction = deduce("dot_product_attention", [q, mha, mha, mask], AttentionAttrs(has_mask=True))
    assert_precise(deduction, (B, T, N, 64))
    unbatched = TensorInfo((T, N, 8), "float32")
    kv3 = TensorInfo((S, N, 8), "float32")
    assert_precise(deduce("dot_product_attention", [unbatched, kv3, kv3], AttentionAttrs()))


def test_wrapper_traces_and_evaluates_eagerly():
    q = relax.Tensor(("b", "t", 8, 16), "float32")
    kv = relax.Tensor(("b", "s", 2, 16), "float32")
    result = relax.eval_shape(
        lambda q, k, v: dot_product_attention(q, k, v, is_causal=True), q, kv, kv
    )
    assert str(result) == str(relax.Tensor(("b", "t", 8, 16), "float32"))
    rng = np.random.default_rng(0)
    qa = random_array(rng, (2, 3, 4, 8), "float32")
    ka = random_array(rng, (2, 5, 2, 8), "float32")
    va = random_array(rng, (2, 5, 2, 8), "float32")
    mask = rng.random((3, 5)) < 0.7
    ours = dot_product_attention(qa, ka, va, mask=mask, scale=0.3)
    assert_close(ours, jax.nn.dot_product_attention(qa, ka, va, mask=mask, scale=0.3))


# --------------------------------------------------------------------------- numerics


@settings(max_examples=4)
@given(case=attention_cases(), seed=st.integers(0, 2**16))
def test_attention_reference_matches_jax(case, seed):
    _check_reference(case, seed)


@pytest.mark.slow
@settings(max_examples=60)
@given(case=attention_cases(), seed=st.integers(0, 2**16))
def test_attention_reference_matches_jax_exhaustively(case, seed):
    _check_reference(case, seed)


def _check_reference(case, seed):
    operands, attrs = case
    env = {"n": 2, "m": 3}
    rng = np.random.default_rng(seed)
    arrays = [
        random_array(rng, tuple(arith.subs(d, env) for d in o.shape), o.dtype, low=-1, high=1)
        for o in operands
    ]
    try:
        expected = _jax_fn(attrs)(*arrays)
    except (ValueError, TypeError, AssertionError, ZeroDivisionError):
        return
    ours = get("dot_product_attention").reference(*arrays, attrs=attrs)
    _assert_close(ours, expected, f"attention {[a.shape for a in arrays]} {attrs}")


def _assert_close(ours, expected, what=""):
    """``assert_close``, at float32 precision for float64: jax's softmax runs in float32."""
    if ours.dtype == np.float64:
        assert np.asarray(expected).dtype == np.float64, what
        np.testing.assert_allclose(ours, expected, rtol=2e-5, atol=2e-5, err_msg=what)
    else:
        assert_close(ours, expected, what)


def test_fully_masked_rows_and_float64_match_jax():
    rng = np.random.default_rng(1)
    q = random_array(rng, (1, 3, 2, 4), "float64")
    k = random_array(rng, (1, 3, 2, 4), "float64")
    mask = np.zeros((1, 1, 3, 3), dtype=bool)
    mask[..., 0, :] = True
    attrs = AttentionAttrs(has_mask=True, is_causal=True)
    ours = get("dot_product_attention").reference(q, k, k, mask, attrs=attrs)
    _assert_close(ours, jax.nn.dot_product_attention(q, k, k, mask=mask, is_causal=True))


# --------------------------------------------------------------------------- lowering


@settings(max_examples=25)
@given(case=attention_cases(), env=envs(1, 4))
def test_attention_lowering_matches_reference(case, env):
    operands, attrs = case
    if deduce("dot_product_attention", operands, attrs).error is None:
        check_lowering(
            "dot_product_attention", operands, attrs, env, precision=_precision(operands)
        )


def _precision(operands) -> str | None:
    """The softmax runs in float32 whatever the dtype (jax's semantics) and the fused
    kernel normalises it at the end: float64 attention is float32-accurate."""
    return "float32" if operands[0].dtype == "float64" else None


@settings(max_examples=15)
@given(case=attention_cases(with_masks=False), env=envs(0, 3))
def test_attention_lowering_with_empty_axes_matches_reference(case, env):
    operands, attrs = case
    if deduce("dot_product_attention", operands, attrs).error is None:
        check_lowering(
            "dot_product_attention", operands, attrs, env, precision=_precision(operands)
        )


def test_attention_kernel_is_shape_generic():
    q = TensorInfo((B, T, N, 16), "float32")
    kv = TensorInfo((B, S, N, 16), "float32")
    kernel = get("dot_product_attention").lower([q, kv, kv], AttentionAttrs(), q)
    q2 = TensorInfo((M, S, T, 16), "float32")
    kv2 = TensorInfo((M, B, T, 16), "float32")
    assert get("dot_product_attention").lower([q2, kv2, kv2], AttentionAttrs(), q2) == kernel
    assert [p.name for p in kernel.params] == ["query", "key", "value", "dot_product_attention"]


# --------------------------------------------------------------------------- errors


def _deduce(*operands, **attrs):
    return get("dot_product_attention").deduce(list(operands), AttentionAttrs(**attrs))


def test_attention_errors():
    q = TensorInfo((2, 5, 4, 8))
    kv = TensorInfo((2, 7, 3, 8))
    with pytest.raises(ShapeError, match=r"query heads 4 must be a multiple of .* heads 3"):
        _deduce(q, kv, kv)
    kv = TensorInfo((2, 7, 2, 8))
    with pytest.raises(ShapeError, match=r"value shape must equal key shape"):
        _deduce(q, kv, TensorInfo((2, 7, 2, 6)))
    with pytest.raises(ShapeError, match=r"query and key batch sizes differ"):
        _deduce(TensorInfo((3, 5, 4, 8)), kv, kv)
    with pytest.raises(ShapeError, match=r"query and key head dims differ"):
        _deduce(TensorInfo((2, 5, 4, 6)), kv, kv)
    with pytest.raises(
        ShapeError, match=r"mask must broadcast to \(B, N, T, S\).*axis 1 has size 3"
    ):
        _deduce(q, kv, kv, TensorInfo((3, 5, 7), "bool"), has_mask=True)
    with pytest.raises(ShapeError, match=r"query must have rank <= 4"):
        _deduce(TensorInfo((1, 2, 5, 4, 8)), kv, kv)
    with pytest.raises(TypeError, match=r"mask dtype must be bool, got float32"):
        _deduce(q, kv, kv, TensorInfo((5, 7)), has_mask=True)
    with pytest.raises(TypeError, match=r"query dtype must equal the key dtype float64"):
        _deduce(q, TensorInfo((2, 7, 2, 8), "float64"), TensorInfo((2, 7, 2, 8), "float64"))
    with pytest.raises(TypeError, match=r"takes 4 argument"):
        _deduce(q, kv, kv, has_bias=True, has_mask=False, is_causal=False) if False else (
            get("dot_product_attention").deduce([q, kv, kv], AttentionAttrs(has_mask=True))
        )
    with pytest.raises(TypeError, match=r"AttentionAttrs.is_causal must be a bool"):
        AttentionAttrs(is_causal=1)


def test_symbolic_mask_checks_are_exact():
    q = TensorInfo((B, T, N, 8))
    kv = TensorInfo((B, S, N, 8))
    mask = TensorInfo((M, S), "bool")
    deduction = deduce("dot_product_attention", [q, kv, kv, mask], AttentionAttrs(has_mask=True))
    heads, check = deduction.checks  # n >= 1 (n % n needs it), then the mask's axis 2
    assert heads.args == (1, N)
    assert check.holds({"m": 1, "t": 4}) and check.holds({"m": 4, "t": 4})
    assert not check.holds({"m": 2, "t": 4})
