"""fuse_ops: chains of kernel calls merged into one kernel that touches each tensor once.

Checked on traced programs: which calls fuse (and which must not), the fused kernel's
shape (intermediates inlined, no temporary tensor left), the run-time checks carried
over, well-formedness, and numerics of the compiled program against jax.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import relaxjax as relax
import relaxjax.nn as rnn
import relaxjax.numpy as rnp
from relaxjax import ir
from relaxjax.ir import CALL_TIR, Binding, Call, Check
from relaxjax.passes import Pipeline, dedup_kernels, eliminate_dead_code, legalize
from relaxjax.passes.fuse import fuse_ops, kernel_kind
from relaxjax.passes.walk import rebuild_function
from relaxjax.runtime import build_executable

LEGALIZE = Pipeline((eliminate_dead_code, legalize, dedup_kernels, eliminate_dead_code))
D = 64


def _calls(mod) -> list[str]:
    """The kernels the main function calls, in order."""
    function = next(iter(mod.graph_functions().values()))
    names = []
    for block in function.body.blocks:
        for binding in block.bindings:
            value = binding.value
            if isinstance(value, Call) and value.op is CALL_TIR:
                names.append(value.args[0].name)
    return names


def _fused(fn) -> tuple[ir.IRModule, ir.IRModule]:
    before = LEGALIZE(fn.trace())
    after = fuse_ops(before)
    ir.verify(after)
    return before, after


@relax.jit
def norm_chain(
    x: relax.Tensor(("n", D), "float32"),
    r: relax.Tensor(("n", D), "float32"),
    g: relax.Tensor((D,), "float32"),
    b: relax.Tensor((D,), "float32"),
):
    return rnn.gelu(rnn.layer_norm(x + r, g, b) * g + b)


def _norm_chain_jax(x, r, g, b):
    h = x + r
    mean = h.mean(-1, keepdims=True)
    var = ((h - mean) ** 2).mean(-1, keepdims=True)
    return jax.nn.gelu((h - mean) / jnp.sqrt(var + 1e-5) * g * g + b * g + b)


def test_a_norm_with_its_prologue_and_epilogue_becomes_one_kernel():
    before, after = _fused(norm_chain)
    assert _calls(before) == ["add", "layer_norm", "multiply", "add_1", "gelu"]
    assert _calls(after) == ["fused_add_layer_norm_multiply_add_1_gelu"]
    assert sorted(after.kernels()) == ["fused_add_layer_norm_multiply_add_1_gelu"]
    kernel = after.kernels()["fused_add_layer_norm_multiply_add_1_gelu"]
    assert [p.name for p in kernel.params] == ["x", "y", "gamma", "beta", "gelu"]
    assert [str(d) for d in kernel.params[0].shape] == ["d0", "64"]
    text = str(kernel)
    assert "gelu[" in text and "x[" in text and "r[" in text
    # The norm reads x + r three times: the merged kernel keeps it for the rules, which
    # compute it once per row into a row buffer; no (n, 64) temporary is left.
    scheduled = str(build_executable(norm_chain.trace()).module.kernels()[kernel.name])
    assert "for i0_5 in parallel(d0):" in scheduled
    assert 'allocate((1, 64), "float32", scope="local") as add_local' in scheduled
    assert "alloc_buffer((d0, 64)" not in scheduled and "allocate((d0, 64)" not in scheduled


def test_the_fused_program_matches_jax():
    rng = np.random.default_rng(0)
    g = rng.uniform(0.5, 1.5, D).astype(np.float32)
    b = rng.standard_normal(D).astype(np.float32)
    for n in (0, 1, 9):
        x = rng.standard_normal((n, D)).astype(np.float32)
        r = rng.standard_normal((n, D)).astype(np.float32)
        np.testing.assert_allclose(
            norm_chain(x, r, g, b), _norm_chain_jax(x, r, g, b), rtol=2e-5, atol=2e-5
        )
    exe = build_executable(norm_chain.trace())
    assert list(exe.module.kernels()) == ["fused_add_layer_norm_multiply_add_1_gelu"]


def test_an_elementwise_chain_fuses_and_keeps_its_checks():
    @relax.jit
    def chain(x: relax.Tensor(("n", 8), "float32"), y: relax.Tensor(("n", 8), "float32")):
        return rnp.exp(rnp.tanh(x + y) * 2.0)

    before = LEGALIZE(chain.trace())
    # Give the first call a run-time check, as a coarse broadcast would have.
    function = before["chain"]
    bindings = list(function.body.blocks[0].bindings)
    n = function.params[0].info.shape[0]
    check = Check("le", (n, 1000), "add: at most 1000 rows")
    bindings[0] = Binding(
        bindings[0].var, dataclasses.replace(bindings[0].value, checks=(check,)), None
    )
    before = before.with_function("chain", rebuild_function(function, [bindings]))
    after = fuse_ops(before)
    ir.verify(after)
    fused = [b.value for b in after["chain"].body.blocks[0].bindings if isinstance(b.value, Call)]
    assert len(fused) == 1 and _calls(after) == ["fused_add_tanh_multiply_exp"]
    assert fused[0].checks == (check,)
    assert "allocate" not in str(after.kernels()["fused_add_tanh_multiply_exp"])
    x = np.ones((3, 8), np.float32)
    np.testing.assert_allclose(chain(x, x), np.exp(np.tanh(x + x) * 2.0), rtol=1e-6)
    (y,) = build_executable(after)(x, x)
    np.testing.assert_allclose(y, np.exp(np.tanh(x + x) * 2.0), rtol=1e-6)
    with pytest.raises(relax.ShapeError, match="add: at most 1000 rows"):
        build_executable(after)(np.ones((1001, 8), np.float32), np.ones((1001, 8), np.float32))


def test_calls_with_shapes_known_only_at_run_time_stay_apart():
    @relax.jit
    def coarse(x: relax.Tensor(("n", 8), "float32"), y: relax.Tensor(("m", 8), "float32")):
        return rnp.exp(x + y)

    assert _calls(_fused(coarse)[1]) == ["add", "exp"]


def test_shared_intermediates_and_matmuls_do_not_fuse_two_norms_over_the_same_rows_do():
    @relax.jit
    def shared(x: relax.Tensor(("n", D), "float32")):
        h = rnp.exp(x)
        return h * 2.0, h + 1.0  # h has two readers

    @relax.jit
    def two_norms(x: relax.Tensor(("n", D), "float32"), g: relax.Tensor((D,), "float32")):
        return rnn.softmax(rnn.rms_norm(x, g))

    @relax.jit
    def product(x: relax.Tensor(("n", D), "float32"), w: relax.Tensor((D, D), "float32")):
        return rnn.relu(x @ w)

    assert _calls(_fused(shared)[1]) == ["exp", "multiply", "add"]
    assert _calls(_fused(two_norms)[1]) == ["fused_rms_norm_softmax"]
    assert _calls(_fused(product)[1]) == ["matmul", "relu"]
    x = np.random.default_rng(1).standard_normal((5, D)).astype(np.float32)
    g = np.ones(D, np.float32)
    ours = two_norms(x, g)
    rms = x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-6)
    np.testing.assert_allclose(ours, jax.nn.softmax(rms), rtol=1e-5, atol=1e-6)


def _layer_norm(np_, x, g, b):
    mean = x.mean(-1, keepdims=True)
    centred = x - mean
    var = (centred * centred).mean(-1, keepdims=True)
    return centred / np_.sqrt(var + 1e-5) * g + b


def _rms_norm(np_, x, g, b):
    return x * (1.0 / np_.sqrt((x * x).mean(-1, keepdims=True) + 1e-6)) * g


def _softmax(np_, x, g, b):
    e = np_.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _log_softmax(np_, x, g, b):
    shifted = x - x.max(-1, keepdims=True)
    return shifted - np_.log(np_.exp(shifted).sum(-1, keepdims=True))


@pytest.mark.parametrize(
    ("written", "min_k"),
    [(_layer_norm, 0), (_rms_norm, 0), (_softmax, 1), (_log_softmax, 1)],
    ids=["layer_norm", "rms_norm", "softmax", "log_softmax"],
)
def test_a_norm_or_softmax_written_out_by_hand_is_one_row_kernel(written, min_k):
    """Mean, centre, variance, rsqrt, scale (or max, shift, exp, sum, divide) written as
    separate ops fuse into one kernel over the rows, equal to jax for any shape."""
    spec = relax.Tensor(("b", "n", "k"), "float32")
    vector = relax.Tensor(("k",), "float32")
    fn = relax.jit(lambda x, g, b: written(rnp, x, g, b))
    mod = Pipeline((*LEGALIZE.passes, fuse_ops), verify=True)(fn.trace(spec, vector, vector))
    assert len(_calls(mod)) == 1, _calls(mod)
    exe = build_executable(fn.trace(spec, vector, vector))
    (kernel,) = exe.module.kernels().values()
    assert "in parallel(d0 * d1):" in str(kernel), kernel
    rng = np.random.default_rng(2)
    for b, n, k in [(1, 0, 5), (1, 1, 1), (2, 3, 37), (1, 2, 300), (1, 4, max(min_k, 0))]:
        x = rng.standard_normal((b, n, k)).astype(np.float32)
        g, bias = (
            rng.standard_normal(k).astype(np.float32),
            rng.standard_normal(k).astype(np.float32),
        )
        (ours,) = exe(x, g, bias)
        with np.errstate(all="ignore"):
            theirs = written(jnp, jnp.asarray(x, jnp.float64), g.astype(np.float64), bias)
        np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=1e-5, err_msg=f"{(b, n, k)}")


def test_reductions_over_different_rows_stay_apart():
    @relax.jit
    def columns_then_rows(x: relax.Tensor(("n", D), "float32")):
        return rnn.softmax(x - x.mean(0, keepdims=True))

    assert len(_calls(_fused(columns_then_rows)[1])) >= 2
    x = np.random.default_rng(3).standard_normal((7, D)).astype(np.float32)
    expected = jax.nn.softmax(x - x.mean(0, keepdims=True))
    np.testing.assert_allclose(columns_then_rows(x), expected, rtol=1e-5, atol=1e-6)


def test_kernel_kind_classifies_what_fusion_may_merge():
    kernels = LEGALIZE(norm_chain.trace()).kernels()
    assert kernel_kind(kernels["layer_norm"]) == "reduction"
    assert kernel_kind(kernels["gelu"]) == "spatial"
    matmul = LEGALIZE(
        relax.jit(lambda x, w: x @ w).trace(
            relax.Tensor((4, 8), "float32"), relax.Tensor((8, 2), "float32")
        )
    ).kernels()
    assert [kernel_kind(k) for k in matmul.values()] == [None]
    assert kernel_kind("not a kernel") is None


def test_fuse_ops_leaves_a_module_without_chains_unchanged():
    @relax.jit
    def single(x: relax.Tensor(("n",), "float32")):
        return rnp.exp(x)

    before, after = _fused(single)
    assert after is before
