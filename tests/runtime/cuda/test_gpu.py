"""On a GPU (marked ``gpu``; skipped with the reason without one): every op against jax,
the MLP and GPT block at several n with one executable, DLPack round trips with
torch/jax/cupy, CUDA-graph replay with changing symbol values, allocator reuse."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parents[2] / "backends" / "cuda"))
import relaxjax as relax  # noqa: E402
from models import block_params, gpt_block, jax_block, mlp  # noqa: E402
from op_cases import assert_matches, expected, jitted, op_cases, random_arrays  # noqa: E402
from relaxjax.runtime.cuda import DeviceArray, GraphPolicy, current_device, probe  # noqa: E402

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not probe().available, reason=f"no GPU: {probe().reason}"),
]
CASES = op_cases(width=33, matmul_cols=17, einsum_cols=5, head_dim=8)


@pytest.fixture(autouse=True)
def real_device():
    from relaxjax.runtime.cuda import reset_device

    reset_device()
    yield


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.op)
def test_every_op_matches_jax_on_the_gpu(case):
    f = jitted(case, "cuda")
    rng = np.random.default_rng(0)
    for n in (0, 1, 7, 64):
        env = {"n": max(n, case.min_n), "m": 3}
        arrays = random_arrays(case, env, rng)
        ours = f(*arrays)
        leaves = ours if isinstance(ours, (tuple, list)) else [ours]
        what = f"{case.op} with n={env['n']} on the GPU"
        assert_matches([np.asarray(x) for x in leaves], expected(case, arrays), case.rtol, what)
    assert f.cache_size() == 1


def test_mlp_and_gpt_block_at_several_n_with_one_executable():
    rng = np.random.default_rng(1)
    f = mlp(64, 256)
    w1 = (0.1 * rng.standard_normal((64, 256))).astype(np.float32)
    w2 = (0.1 * rng.standard_normal((256, 64))).astype(np.float32)
    import jax

    for n in (1, 3, 128, 500):
        x = rng.standard_normal((n, 64)).astype(np.float32)
        np.testing.assert_allclose(
            np.asarray(f(x, w1, w2)), np.asarray(jax.nn.gelu(x @ w1) @ w2), rtol=2e-4, atol=2e-4
        )
    assert f.cache_size() == 1
    block = gpt_block(64, 4, 256)
    params = block_params(64, 256, rng)
    args = [
        params[name] for name in ("wq", "wk", "wv", "wo", "w_fc", "w_proj", "g1", "b1", "g2", "b2")
    ]
    for t in (1, 5, 77):
        x = rng.standard_normal((t, 64)).astype(np.float32)
        np.testing.assert_allclose(
            np.asarray(block(x, *args)), np.asarray(jax_block(x, params, 4)), rtol=3e-4, atol=3e-4
        )
    assert block.cache_size() == 1


@relax.jit(target="cuda")
def _scale(x: relax.Tensor(("n", 4), "float32")):
    return x * 2.0 + 1.0


@pytest.mark.parametrize("library", ["torch", "jax", "cupy"])
def test_dlpack_round_trips(library):
    module = pytest.importorskip(library)
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    if library == "torch":
        given = module.from_numpy(x).cuda()
        y = _scale(given)
        back = module.from_dlpack(y)
        assert back.is_cuda
        np.testing.assert_allclose(back.cpu().numpy(), x * 2 + 1)
    elif library == "jax":
        import jax

        given = jax.device_put(x, jax.devices("gpu")[0])
        y = _scale(given)
        back = jax.dlpack.from_dlpack(y)
        np.testing.assert_allclose(np.asarray(back), x * 2 + 1)
    else:
        given = module.asarray(x)
        y = _scale(given)
        back = module.from_dlpack(y)
        np.testing.assert_allclose(module.asnumpy(back), x * 2 + 1)
    assert isinstance(y, DeviceArray)


def test_cuda_graph_replay_with_changing_symbol_values():
    g = relax.jit(_graph_fn, target="cuda", cuda_graphs=GraphPolicy(max_value=256, max_captures=4))
    rng = np.random.default_rng(3)
    for n in (3, 4, 2, 100, 65, 300, 3):
        x = rng.standard_normal((n, 16)).astype(np.float32)
        np.testing.assert_allclose(np.asarray(g(x)), np.tanh(x) * 3.0, rtol=1e-5, atol=1e-6)
    (executable,) = g._executables.values()
    stats = executable.graphs.stats
    assert stats.captures == 3  # buckets 4, 2 and 128; 300 > 256 runs uncaptured
    assert stats.uncaptured >= 1 and stats.replays >= 4


def _graph_fn(x: relax.Tensor(("n", 16), "float32")):
    return relax.numpy.tanh(x) * 3.0


def test_the_allocator_reuses_memory_across_calls():
    x = np.ones((1000, 4), np.float32)
    _scale(x)
    allocator = current_device().allocator
    before = allocator.stats().allocations
    for _ in range(5):
        y = _scale(x)
        del y
    assert allocator.stats().allocations == before
    assert allocator.stats().reuses >= 5


def test_profile_rows_sum_to_the_wall_time_on_the_gpu():
    rng = np.random.default_rng(5)
    block = gpt_block(64, 4, 256)
    params = block_params(64, 256, rng)
    args = [
        params[name] for name in ("wq", "wk", "wv", "wo", "w_fc", "w_proj", "g1", "b1", "g2", "b2")
    ]
    x = rng.standard_normal((33, 64)).astype(np.float32)
    block(x, *args)
    profile = block.profile(x, *args)
    np.testing.assert_allclose(
        np.asarray(profile.result), np.asarray(jax_block(x, params, 4)), rtol=3e-4, atol=3e-4
    )
    assert sum(row.calls for row in profile.rows if row.kind == "kernel") >= 5, profile
    total = sum(row.total_ms for row in profile.rows)
    assert abs(total - profile.wall_ms) <= 0.1 * profile.wall_ms, profile


def test_control_flow_and_calls_on_the_gpu():
    import importlib.util

    import jax

    import relaxjax.lax as lax
    import relaxjax.numpy as rnp

    @relax.jit
    def inner(a: relax.Tensor(("n", 5), "float32")):
        return rnp.tanh(a) * 2.0

    @relax.jit(target="cuda")
    def f(xs: relax.Tensor(("t", "n", 5), "float32"), h: relax.Tensor(("n", 5), "float32")):
        carry, ys = lax.scan(lambda c, x: (inner(c + x), c * 0.5), h, xs)
        return lax.fori_loop(0, 3, lambda i, v: v + i.astype("float32"), carry), ys

    rng = np.random.default_rng(6)
    for t, n in ((0, 2), (1, 1), (7, 3)):
        xs = rng.standard_normal((t, n, 5)).astype(np.float32)
        h = rng.standard_normal((n, 5)).astype(np.float32)
        c, ys = h, []
        for step in range(t):
            ys.append(c * 0.5)
            c = np.tanh(c + xs[step]) * 2.0
        carry, stacked = f(xs, h)
        np.testing.assert_allclose(np.asarray(carry), c + 3.0, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(
            np.asarray(stacked), np.array(ys).reshape(t, n, 5), rtol=1e-5, atol=1e-5
        )
    assert f.cache_size() == 1

    # the jax-style GPT-2 of tests/models (scan over stacked layers), on the GPU
    path = Path(__file__).parents[2] / "models" / "test_ported_models.py"
    spec = importlib.util.spec_from_file_location("ported_models_for_gpu", path)
    ported_tests = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ported_tests)
    orig = ported_tests.load("jax_gpt2.py")
    ported = ported_tests.load("jax_gpt2.py", ported_tests.JAX_TO_RELAX)
    params = ported_tests._as(ported, ported_tests._gpt2_params(orig, rng))
    cfg = ported.Config(n_head=ported_tests.HEADS)
    compiled = relax.jit(lambda p, ids: ported.gpt2(p, ids, cfg), target="cuda")
    reference = jax.jit(orig.gpt2, static_argnames="cfg")
    for batch, length in ((2, 5), (1, 1)):
        ids = rng.integers(0, ported_tests.VOCAB, (batch, length)).astype(np.int32)
        ours = compiled(params, ids)
        theirs = reference(
            ported_tests._as(orig, params), ids, orig.Config(n_head=ported_tests.HEADS)
        )
        np.testing.assert_allclose(np.asarray(ours.logits), theirs.logits, rtol=2e-4, atol=2e-5)
