"""Compile time: identical layers are lowered and merged once (legalize's memo of op
lowerings, merge_kernels' memo of merges), with the same program as a result."""

from __future__ import annotations

import numpy as np

import relaxjax as relax
import relaxjax.nn as rnn
from relaxjax.ir import CALL_TIR, Call
from relaxjax.ops import get
from relaxjax.passes import legalize
from relaxjax.passes.fuse import fuse_ops
from relaxjax.runtime import build_executable
from relaxjax.schedule.rules import merge

T = relax.Tensor


def _layer(x, g, b):
    return rnn.gelu(rnn.layer_norm(x, g, b) * 2.0 + 1.0)


def _stack(
    x: T(("n", 32), "float32"),
    g: T((32,), "float32"),
    b: T((32,), "float32"),
    w: T((32, 32), "float32"),
):
    for _ in range(4):
        x = _layer(x, g, b) @ w  # the matmul keeps the layers' norm chains apart
    return x


def test_legalize_lowers_identical_calls_once(monkeypatch):
    op = get("layer_norm")
    calls = []
    lower = type(op).lower

    def counting(self, *args, **kwargs):
        calls.append(self.name)
        return lower(self, *args, **kwargs)

    monkeypatch.setattr(type(op), "lower", counting)
    mod = legalize(relax.jit(_stack).trace())
    assert calls.count("layer_norm") == 1
    assert sum(1 for name in mod.kernels() if name.startswith("layer_norm")) == 1


def test_identical_fused_chains_are_merged_once(monkeypatch):
    mod = legalize(relax.jit(_stack).trace())
    merges = []
    real = merge._merge
    monkeypatch.setattr(merge, "_merge", lambda *a: merges.append(a[0]) or real(*a))
    monkeypatch.setattr(merge, "_MERGED", {})
    fused = fuse_ops(mod)
    assert merges and len(merges) == len(set(merges)), merges
    calls = [
        b.value.args[0].name
        for block in fused["stack"].body.blocks
        for b in block.bindings
        if isinstance(b.value, Call)
        and b.value.op is CALL_TIR
        and b.value.args[0].name.startswith("fused_layer_norm")
    ]
    assert len(calls) == 4 and len(set(calls)) == 1, calls  # the layers share one kernel


def test_the_stack_with_shared_kernels_matches_numpy():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((5, 32)).astype(np.float32)
    g = (1 + 0.1 * rng.standard_normal(32)).astype(np.float32)
    b = (0.1 * rng.standard_normal(32)).astype(np.float32)
    w = (np.eye(32) + 0.05 * rng.standard_normal((32, 32))).astype(np.float32)
    exe = build_executable(relax.jit(_stack).trace())
    expected = x.astype(np.float64)
    for _ in range(4):
        mean = expected.mean(-1, keepdims=True)
        var = ((expected - mean) ** 2).mean(-1, keepdims=True)
        h = (expected - mean) / np.sqrt(var + 1e-5) * g + b
        h = h * 2.0 + 1.0
        h = 0.5 * h * (1 + np.tanh(np.sqrt(2 / np.pi) * (h + 0.044715 * h**3)))
        expected = h @ w
    np.testing.assert_allclose(exe(x, g, b, w)[0], expected, rtol=2e-4, atol=2e-5)
