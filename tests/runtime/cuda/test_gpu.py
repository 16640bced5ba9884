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


def _attention(dtype, heads, kv_heads, causal, masked=False, target="cuda"):
    """``dot_product_attention`` over ``n`` tokens, head dim 64 (the GPU attention rule);
    with ``masked``, a bias and a boolean mask too."""
    q = relax.Tensor((1, "n", heads, 64), dtype)
    kv = relax.Tensor((1, "n", kv_heads, 64), dtype)

    def plain(q: q, k: kv, v: kv):
        return relax.nn.dot_product_attention(q, k, v, is_causal=causal)

    def with_mask(
        q: q,
        k: kv,
        v: kv,
        bias: relax.Tensor((1, 1, "n", "n"), dtype),
        mask: relax.Tensor((1, heads, "n", "n"), "bool"),
    ):
        return relax.nn.dot_product_attention(q, k, v, bias=bias, mask=mask, is_causal=causal)

    return relax.jit(with_mask if masked else plain, target=target)


@pytest.mark.parametrize(
    "dtype, heads, kv_heads, causal, masked",
    [
        ("float32", 12, 12, True, False),
        ("float32", 12, 12, False, False),
        ("float32", 8, 2, True, False),
        ("float32", 4, 2, False, True),
        ("float16", 12, 12, True, False),
        ("float16", 8, 2, False, False),
    ],
)
def test_attention_matches_jax_on_the_gpu(dtype, heads, kv_heads, causal, masked):
    import jax

    f = _attention(dtype, heads, kv_heads, causal, masked)
    rng = np.random.default_rng(4)
    tol = 2e-2 if dtype == "float16" else 1e-4
    for n in (1, 77, 512, 1030):
        q = rng.standard_normal((1, n, heads, 64)).astype(dtype)
        k = rng.standard_normal((1, n, kv_heads, 64)).astype(dtype)
        v = rng.standard_normal((1, n, kv_heads, 64)).astype(dtype)
        extra, kwargs = [], {}
        if masked:
            bias = rng.standard_normal((1, 1, n, n)).astype(dtype)
            mask = rng.random((1, heads, n, n)) < 0.7
            extra, kwargs = [bias, mask], {"bias": bias, "mask": mask}
        with jax.default_matmul_precision("float32"):  # no TF32 in the reference
            theirs = jax.nn.dot_product_attention(q, k, v, is_causal=causal, **kwargs)
        np.testing.assert_allclose(
            np.asarray(f(q, k, v, *extra), np.float64),
            np.asarray(theirs, np.float64),
            rtol=tol,
            atol=tol,
            err_msg=f"{dtype} heads={heads}/{kv_heads} causal={causal} n={n}",
        )
    assert f.cache_size() == 1


def test_gpt2_block_matches_jax_on_the_gpu():
    """The GPT-2 small block (d=768, 12 heads of 64): the attention rule's kernel in it."""
    rng = np.random.default_rng(5)
    block = gpt_block(768, 12, 3072)
    params = block_params(768, 3072, rng)
    args = [
        params[name] for name in ("wq", "wk", "wv", "wo", "w_fc", "w_proj", "g1", "b1", "g2", "b2")
    ]
    import jax

    for t in (1, 128, 512):
        x = rng.standard_normal((t, 768)).astype(np.float32)
        with jax.default_matmul_precision("float32"):  # no TF32 in the reference
            theirs = np.asarray(jax_block(x, params, 12))
        np.testing.assert_allclose(np.asarray(block(x, *args)), theirs, rtol=2e-3, atol=2e-3)
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
