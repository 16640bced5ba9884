"""The whole GPU path with kernels that really run: the runtime on a driver that
emulates the generated kernels on the CPU thread by thread (tests/runtime/cuda/
emulator.py). Checks launch plans, thread indexing and guards, grids from symbols,
workspaces, arenas, copies and CUDA-graph node updates against numpy/jax."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest
from cuda_helpers import needs_ptxas

sys.path.insert(0, str(Path(__file__).parents[2] / "backends" / "cuda"))

import relaxjax as relax  # noqa: E402
import relaxjax.nn as rnn  # noqa: E402
import relaxjax.numpy as rnp  # noqa: E402
from models import NAMES, block_params, gpt_block, jax_block, mlp  # noqa: E402
from op_cases import assert_matches, expected, jitted, op_cases, random_arrays  # noqa: E402
from relaxjax.runtime.cuda import GraphPolicy  # noqa: E402

pytestmark = needs_ptxas
FAST = {"add", "exp", "gelu", "where", "sum", "argmax", "softmax", "layer_norm", "matmul",
        "concatenate", "take", "cumsum", "astype", "inv", "dynamic_update_slice"}  # fmt: skip
CASES = [
    pytest.param(case, id=case.op, marks=() if case.op in FAST else pytest.mark.slow)
    for case in op_cases(width=5, matmul_cols=3, einsum_cols=2, head_dim=4)
]


@pytest.mark.parametrize("case", CASES)
def test_ops_on_the_emulated_gpu_match_jax(emulated, case):
    f = jitted(case, "cuda")
    rng = np.random.default_rng(0)
    for n in (0, 1, 6):
        env = {"n": max(n, case.min_n), "m": 3}
        arrays = random_arrays(case, env, rng)
        ours = f(*arrays)
        leaves = ours if isinstance(ours, (tuple, list)) else [ours]
        what = f"{case.op} with n={env['n']} (emulated GPU)"
        assert_matches([np.asarray(x) for x in leaves], expected(case, arrays), case.rtol, what)
    assert f.cache_size() == 1


def test_mlp_and_gpt_block_with_one_executable(emulated):
    rng = np.random.default_rng(1)
    f = mlp(16, 32)
    w1 = (0.3 * rng.standard_normal((16, 32))).astype(np.float32)
    w2 = (0.3 * rng.standard_normal((32, 16))).astype(np.float32)
    import jax

    for n in (1, 3, 9):
        x = rng.standard_normal((n, 16)).astype(np.float32)
        np.testing.assert_allclose(
            np.asarray(f(x, w1, w2)), np.asarray(jax.nn.gelu(x @ w1) @ w2), rtol=1e-4, atol=1e-5
        )
    block = gpt_block(16, 2, 32)
    params = block_params(16, 32, rng)
    args = [params[name] for name in NAMES]
    for t in (1, 4, 7):
        x = rng.standard_normal((t, 16)).astype(np.float32)
        np.testing.assert_allclose(
            np.asarray(block(x, *args)), np.asarray(jax_block(x, params, 2)), rtol=2e-4, atol=2e-5
        )
    assert f.cache_size() == 1 and block.cache_size() == 1


def test_graph_replays_update_the_launches_for_new_symbol_values(emulated):
    driver, _ = emulated

    def fn(x: relax.Tensor(("n", 8), "float32"), y: relax.Tensor(("n", 8), "float32")):
        return rnp.tanh(x * y) + x

    f = relax.jit(fn, target="cuda", cuda_graphs=GraphPolicy(max_value=64, max_captures=4))
    rng = np.random.default_rng(2)
    for n in (5, 7, 6, 3, 100, 7):
        x, y = (rng.standard_normal((n, 8)).astype(np.float32) for _ in range(2))
        np.testing.assert_allclose(np.asarray(f(x, y)), np.tanh(x * y) + x, rtol=1e-6, atol=1e-6)
    (executable,) = f._executables.values()
    stats = executable.graphs.stats
    assert stats.captures == 2  # buckets 8 (n = 5, 7, 6) and 4 (n = 3); 100 > 64 uncaptured
    assert stats.replays == 5 and stats.uncaptured == 1 and driver.updates >= 3


# -- with the default GPU rules: barriers, shared memory and warp shuffles (SIMT) -----------

RULES = pytest.mark.skipif(
    importlib.util.find_spec("relaxjax.schedule.rules.gpu") is None,
    reason="the default GPU rules (relaxjax.schedule.rules.gpu) are not installed",
)
#: Ops whose kernels the GPU rules turn into cross-thread reductions and tiles, and a few
#: injective ones (vectorized lanes, guards).
SIMT_OPS = {"sum", "mean", "max", "argmax", "var", "prod", "softmax", "log_softmax",
            "layer_norm", "rms_norm", "matmul", "einsum", "dot_product_attention", "cumsum",
            "add", "gelu", "where", "take", "concatenate"}  # fmt: skip
#: Left to the slow run (the default run keeps one kernel of each kind).
SIMT_SLOW = {"mean", "max", "prod", "log_softmax", "rms_norm", "einsum", "gelu", "where",
             "concatenate"}  # fmt: skip
SIMT_CASES = [
    pytest.param(case, id=case.op, marks=pytest.mark.slow if case.op in SIMT_SLOW else ())
    for case in op_cases(width=70, matmul_cols=33, einsum_cols=5, head_dim=8)
    if case.op in SIMT_OPS
]


@pytest.fixture
def emulated_rules(emulated):
    """The emulating driver, compiling with the default GPU rules."""
    from relaxjax.runtime.cuda import set_gpu_schedule

    previous = set_gpu_schedule(None)
    yield emulated
    set_gpu_schedule(previous)


def _simt_entries(driver) -> set[str]:
    return {entry for module in driver.emulated.values() for entry in module.simt}


@RULES
@pytest.mark.parametrize("case", SIMT_CASES)
def test_ops_scheduled_by_the_gpu_rules_match_jax_on_the_emulated_gpu(emulated_rules, case):
    driver, _ = emulated_rules
    f = jitted(case, "cuda")
    rng = np.random.default_rng(0)
    for n in (1, 3):
        env = {"n": max(n, case.min_n), "m": 3}
        arrays = random_arrays(case, env, rng)
        ours = f(*arrays)
        leaves = ours if isinstance(ours, (tuple, list)) else [ours]
        what = f"{case.op} with n={env['n']} (GPU rules, emulated GPU)"
        assert_matches([np.asarray(x) for x in leaves], expected(case, arrays), case.rtol, what)
    assert f.cache_size() == 1


@RULES
def test_the_rules_reductions_synchronise_threads_and_run_simt(emulated_rules):
    driver, _ = emulated_rules
    f = relax.jit(_softmax, target="cuda")
    x = np.random.default_rng(4).standard_normal((3, 300)).astype(np.float32)
    expected_y = np.exp(x - x.max(-1, keepdims=True))
    expected_y /= expected_y.sum(-1, keepdims=True)
    np.testing.assert_allclose(np.asarray(f(x)), expected_y, rtol=1e-5, atol=1e-7)
    assert _simt_entries(driver), "no kernel with barriers or shuffles was run"


def _softmax(x: relax.Tensor(("n", "k"), "float32")):
    return rnn.softmax(x, axis=-1)


@RULES
@pytest.mark.slow
def test_mlp_and_gpt_block_with_the_gpu_rules(emulated_rules):
    rng = np.random.default_rng(5)
    block = gpt_block(32, 2, 64)
    params = block_params(32, 64, rng)
    args = [params[name] for name in NAMES]
    for t in (1, 5):
        x = rng.standard_normal((t, 32)).astype(np.float32)
        np.testing.assert_allclose(
            np.asarray(block(x, *args)), np.asarray(jax_block(x, params, 2)), rtol=3e-4, atol=3e-5
        )
    assert block.cache_size() == 1


def test_profile_times_every_gpu_launch(emulated):
    @relax.jit(target="cuda")
    def f(x: relax.Tensor(("n", 8), "float32"), w: relax.Tensor((8, 8), "float32")):
        return rnn.softmax(rnp.tanh(x @ w), axis=-1)

    rng = np.random.default_rng(4)
    x, w = rng.standard_normal((5, 8), np.float32), rng.standard_normal((8, 8), np.float32)
    profile = f.profile(x, w)
    e = np.exp(np.tanh(x @ w))
    np.testing.assert_allclose(np.asarray(profile.result), e / e.sum(-1, keepdims=True), 1e-5)
    kernels = [row for row in profile.rows if row.kind == "kernel"]
    assert len(kernels) >= 2 and all(row.calls == 1 for row in kernels), profile
    assert {row.rule for row in kernels} <= {"matmul", "reduction", "injective", "test_binding"}
    total = sum(row.total_ms for row in profile.rows)
    assert abs(total - profile.wall_ms) <= 0.1 * profile.wall_ms
    assert f.cache_size() == 1
