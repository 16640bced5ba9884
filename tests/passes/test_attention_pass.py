"""fuse_attention: hand-written attention becomes the fused dot_product_attention op.

Checked: which programs are rewritten (causal masks from tril/triu or from comparisons
of aranges as nanoGPT/picoGPT write them, masked with -inf or -1e10, softmax as the op
or written out, scale by multiply/divide/none) and which are not (a general mask, a
mask that is not causal, a masking constant too small to vanish, a shared intermediate,
float64), well-formedness after the pass, numerics against numpy and jax for sequence
lengths 1 .. 70 and the written program's error for an empty one.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import relaxjax as relax
import relaxjax.nn as rnn
import relaxjax.numpy as rnp
from relaxjax import ir
from relaxjax.passes import eliminate_dead_code
from relaxjax.passes.attention import fuse_attention
from relaxjax.runtime import build_executable


def _ops(mod) -> list[str]:
    function = next(iter(mod.graph_functions().values()))
    return [
        b.value.op.name
        for block in function.body.blocks
        for b in block.bindings
        if isinstance(b.value, ir.Call)
    ]


def _causal_tril(q, k, v):
    n = q.shape[-2]
    s = (q @ k.swapaxes(-1, -2)) * 0.125
    s = rnp.where(rnp.tril(rnp.ones((n, n), dtype=bool)), s, -math.inf)
    e = rnp.exp(s - s.max(-1, keepdims=True))
    return (e / e.sum(-1, keepdims=True)) @ v


def _causal_triu(q, k, v):
    n = q.shape[-2]
    s = (q @ k.swapaxes(-1, -2)) / 4.0
    s = rnp.where(rnp.triu(rnp.ones((n, n), dtype=bool), 1), -math.inf, s)
    return rnn.softmax(s, axis=-1) @ v


def _plain(q, k, v):
    return rnn.softmax(q @ k.swapaxes(-1, -2), axis=-1) @ v


def _arange_masks(np_):
    """Causal attention with the mask written as comparisons of aranges, in ``np_``."""

    def keep_ge(q, k, v):  # picoGPT's -1e10, the column index a 1-D arange
        n = q.shape[-2]
        s = (q @ np_.swapaxes(k, -1, -2)) / 4.0
        s = np_.where(np_.arange(n)[:, None] >= np_.arange(n), s, -1e10)
        e = np_.exp(s - s.max(-1, keepdims=True))
        return (e / e.sum(-1, keepdims=True)) @ v

    def drop_lt(q, k, v):  # the layer_stack bench's form
        n = q.shape[-2]
        s = (q @ np_.swapaxes(k, -1, -2)) * 0.125
        s = np_.where(np_.arange(n)[:, None] < np_.arange(n)[None, :], -np.inf, s)
        e = np_.exp(s - s.max(-1, keepdims=True))
        return (e / e.sum(-1, keepdims=True)) @ v

    def keep_le_swapped(q, k, v):  # column index first, the row index a reshape
        n = q.shape[-2]
        s = q @ np_.swapaxes(k, -1, -2)
        keep = np_.arange(n)[None, :] <= np_.arange(n).reshape(n, 1)
        s = np_.where(keep, s, -np.inf)
        e = np_.exp(s - s.max(-1, keepdims=True))
        return (e / e.sum(-1, keepdims=True)) @ v

    def nanogpt(q, k, v):  # masked_fill(tril(ones) == 0, -inf), the float buffer's way
        n = q.shape[-2]
        s = (q @ np_.swapaxes(k, -1, -2)) * 0.125
        s = np_.where(np_.tril(np_.ones((n, n))) == 0, -np.inf, s)
        return _softmax(np_, s) @ v

    def negated(q, k, v):  # logical_not of the strict upper triangle, as bool
        n = q.shape[-2]
        upper = np_.arange(n)[:, None] < np_.arange(n)[None, :]
        return (
            _softmax(np_, np_.where(np_.logical_not(upper), q @ np_.swapaxes(k, -1, -2), -np.inf))
            @ v
        )

    return {
        "keep_ge": keep_ge,
        "drop_lt": drop_lt,
        "keep_le_swapped": keep_le_swapped,
        "nanogpt": nanogpt,
        "negated": negated,
    }


def _softmax(np_, s):
    e = np_.exp(s - s.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _reference(fn, q, k, v):
    q, k, v = (x.astype(np.float64) for x in (q, k, v))
    n = q.shape[-2]
    s = q @ k.swapaxes(-1, -2)
    if fn is _causal_tril:
        s = np.where(np.tril(np.ones((n, n), bool)), s * 0.125, -np.inf)
    elif fn is _causal_triu:
        s = np.where(np.triu(np.ones((n, n), bool), 1), -np.inf, s / 4.0)
    e = np.exp(s - s.max(-1, keepdims=True))
    return (e / e.sum(-1, keepdims=True)) @ v


@pytest.mark.parametrize(
    ("fn", "spec", "causal", "scale"),
    [
        (_causal_tril, (1, 4, "n", 16), True, 0.125),
        (_causal_triu, (3, "n", 8), True, 0.25),
        (_plain, (2, 3, "n", 8), False, 1.0),
    ],
    ids=["tril-by-hand", "triu-softmax-op", "no-mask"],
)
def test_hand_written_attention_becomes_the_fused_op(fn, spec, causal, scale):
    t = relax.Tensor(spec, "float32")
    traced = relax.jit(fn).trace(t, t, t)
    mod = eliminate_dead_code(fuse_attention(traced))
    ir.verify(mod)
    ops = _ops(mod)
    assert ops.count("dot_product_attention") == 1 and "matmul" not in ops, ops
    assert not {"exp", "softmax", "where", "max", "tril", "triu"} & set(ops), ops
    function = next(iter(mod.graph_functions().values()))
    (call,) = [
        b.value
        for block in function.body.blocks
        for b in block.bindings
        if isinstance(b.value, ir.Call) and b.value.op.name == "dot_product_attention"
    ]
    assert call.attrs.is_causal is causal and call.attrs.scale == scale
    exe = build_executable(traced)
    for n in (1, 2, 17, 70):
        shape = tuple(n if d == "n" else d for d in spec)
        rng = np.random.default_rng(n)
        q, k, v = (rng.standard_normal(shape).astype(np.float32) for _ in range(3))
        (ours,) = exe(q, k, v)
        np.testing.assert_allclose(ours, _reference(fn, q, k, v), rtol=1e-4, atol=1e-5)
    empty = np.zeros(tuple(0 if d == "n" else d for d in spec), np.float32)
    if fn is _causal_tril:
        with pytest.raises(relax.ShapeError, match="max: zero-size array"):
            exe(empty, empty, empty)  # as written: the max over no keys
    else:
        assert exe(empty, empty, empty)[0].shape == empty.shape  # the softmax op allows it


@pytest.mark.parametrize(
    ("name", "spec", "scale"),
    [
        ("keep_ge", (2, 3, "n", 8), 0.25),
        ("drop_lt", (3, "n", 16), 0.125),
        ("keep_le_swapped", (2, "n", 8), 1.0),
        ("nanogpt", (1, 2, "n", 8), 0.125),
        ("negated", (2, "n", 8), 1.0),
    ],
)
def test_arange_comparison_masks_become_the_causal_op(name, spec, scale):
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp

    t = relax.Tensor(spec, "float32")
    traced = relax.jit(_arange_masks(rnp)[name]).trace(t, t, t)
    mod = eliminate_dead_code(fuse_attention(traced))
    ir.verify(mod)
    ops = _ops(mod)
    assert ops.count("dot_product_attention") == 1 and "matmul" not in ops, ops
    assert not {"exp", "where", "arange", "less", "greater_equal"} & set(ops), ops
    (call,) = [
        b.value
        for block in next(iter(mod.graph_functions().values())).body.blocks
        for b in block.bindings
        if isinstance(b.value, ir.Call) and b.value.op.name == "dot_product_attention"
    ]
    assert call.attrs.is_causal is True and call.attrs.scale == scale
    exe = build_executable(traced)
    expected_fn = jax.jit(_arange_masks(jnp)[name])
    for n in (1, 2, 33, 70):
        shape = tuple(n if d == "n" else d for d in spec)
        rng = np.random.default_rng(n)
        q, k, v = (rng.standard_normal(shape).astype(np.float32) for _ in range(3))
        (ours,) = exe(q, k, v)
        expected = expected_fn(*(x.astype(np.float64) for x in (q, k, v)))
        np.testing.assert_allclose(ours, np.asarray(expected), rtol=1e-4, atol=1e-5)
    empty = np.zeros(tuple(0 if d == "n" else d for d in spec), np.float32)
    with pytest.raises(relax.ShapeError, match="max: zero-size array"):
        exe(empty, empty, empty)  # as written (jax too): the max over no keys


def _pico_mha(np_, heads: int = 3):
    """picoGPT's attention: one 2-D attention per head, the causal mask an additive
    ``(1 - tri(n)) * -1e10`` shared by every head, softmax written out."""

    def softmax(x):
        exp_x = np_.exp(x - np_.max(x, axis=-1, keepdims=True))
        return exp_x / np_.sum(exp_x, axis=-1, keepdims=True)

    def attention(q, k, v, mask):
        return softmax(q @ k.T / math.sqrt(q.shape[-1]) + mask) @ v

    def mha(q, k, v):  # (n, heads * 8) each
        causal_mask = (1 - np_.tri(q.shape[0], dtype=q.dtype)) * -1e10
        split = [np_.split(x, heads, axis=-1) for x in (q, k, v)]
        return np_.hstack([attention(*qkv, causal_mask) for qkv in zip(*split)])

    return mha


def test_picogpt_attention_per_head_with_an_additive_mask():
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp

    t = relax.Tensor(("n", 24), "float32")
    traced = relax.jit(_pico_mha(rnp)).trace(t, t, t)
    mod = eliminate_dead_code(fuse_attention(traced))
    ir.verify(mod)
    ops = _ops(mod)
    assert ops.count("dot_product_attention") == 3 and "matmul" not in ops, ops
    assert not {"exp", "add", "multiply", "arange", "greater_equal"} & set(ops), ops
    exe = build_executable(traced)
    expected_fn = jax.jit(_pico_mha(jnp))
    for n in (1, 2, 40):
        rng = np.random.default_rng(n)
        q, k, v = (rng.standard_normal((n, 24)).astype(np.float32) for _ in range(3))
        (ours,) = exe(q, k, v)
        expected = expected_fn(*(x.astype(np.float64) for x in (q, k, v)))
        np.testing.assert_allclose(ours, np.asarray(expected), rtol=1e-4, atol=1e-5)
    empty = np.zeros((0, 24), np.float32)
    with pytest.raises(relax.ShapeError, match="max: zero-size array"):
        exe(empty, empty, empty)


def _additive(dtype: str, masked: float, indicator: str = "dropped"):
    def fn(q, k, v):
        n = q.shape[-2]
        tri = rnp.tri(n, dtype=dtype)
        mask = (1 - tri if indicator == "dropped" else tri) * masked
        return rnn.softmax(q @ k.swapaxes(-1, -2) + mask, axis=-1) @ v

    return fn


@pytest.mark.parametrize(
    ("dtype", "masked", "indicator"),
    [
        ("float32", -np.inf, "dropped"),  # 0 * -inf is nan on the kept entries as written
        ("float16", -1e10, "dropped"),  # -1e10 is -inf in float16: nan as written
        ("float32", -1e10, "kept"),  # masks the kept entries: not causal
        ("float32", -10.0, "dropped"),  # too small to vanish under exp
    ],
    ids=["inf-times-zero", "float16", "kept-entries", "small-constant"],
)
def test_additive_masks_that_are_not_the_causal_op_stay_as_written(dtype, masked, indicator):
    t = relax.Tensor((2, "n", 8), dtype)
    traced = relax.jit(_additive(dtype, masked, indicator)).trace(t, t, t)
    assert "dot_product_attention" not in _ops(eliminate_dead_code(fuse_attention(traced)))


def test_an_additive_causal_mask_becomes_the_causal_op():
    t = relax.Tensor((2, "n", 8), "float32")
    traced = relax.jit(_additive("float32", -1e10)).trace(t, t, t)
    assert "dot_product_attention" in _ops(eliminate_dead_code(fuse_attention(traced)))


def _arange_variant(relation: str, masked: float, start: int = 0):
    def fn(q, k, v):
        n = q.shape[-2]
        rows, cols = rnp.arange(start, n + start)[:, None], rnp.arange(start, n + start)[None, :]
        keep = {
            "ge": rows >= cols,
            "gt": rows > cols,
            "le": rows <= cols,
            "tril_eq0": rnp.tril(rnp.ones((n, n))) == 0,  # true on the dropped entries
        }[relation]
        return rnn.softmax(rnp.where(keep, q @ k.swapaxes(-1, -2), masked), axis=-1) @ v

    return fn


@pytest.mark.parametrize(
    ("relation", "masked", "start"),
    [
        ("gt", -np.inf, 0),
        ("le", -np.inf, 0),
        ("ge", -1e3, 0),
        ("ge", -np.inf, 1),
        ("tril_eq0", -np.inf, 0),
    ],
    ids=[
        "strict-drops-the-diagonal",
        "upper-triangle",
        "small-constant",
        "arange-from-1",
        "keeps-the-dropped-side",
    ],
)
def test_arange_masks_that_are_not_the_causal_op_stay_as_written(relation, masked, start):
    t = relax.Tensor((2, "n", 8), "float32")
    traced = relax.jit(_arange_variant(relation, masked, start)).trace(t, t, t)
    assert "dot_product_attention" not in _ops(eliminate_dead_code(fuse_attention(traced)))


def test_other_masks_shared_intermediates_and_float64_stay_as_written():
    def general_mask(q, k, v, m):
        s = rnp.where(m, q @ k.swapaxes(-1, -2), -math.inf)
        return rnn.softmax(s, axis=-1) @ v

    def shared(q, k, v):
        p = rnn.softmax(q @ k.swapaxes(-1, -2), axis=-1)
        return p @ v, p

    f32 = relax.Tensor((2, "n", 8), "float32")
    mask = relax.Tensor(("n", "n"), "bool")
    for traced in (
        relax.jit(general_mask).trace(f32, f32, f32, mask),
        relax.jit(shared).trace(f32, f32, f32),
        relax.jit(_plain).trace(*[relax.Tensor((2, "n", 8), "float64")] * 3),
    ):
        assert fuse_attention(traced) is traced
