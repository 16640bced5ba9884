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


@pytest.mark.parametrize("layout", ["contiguous", "paged"])
@pytest.mark.parametrize("arch", ["gpt2", "llama"])
def test_kv_cache_decoding_on_the_gpu_matches_the_cpu(arch, layout):
    """examples/kv_cache.py: prefill a ragged batch and decode 6 tokens on the GPU; logits
    as the CPU's, the cache stays on the device and is written in place."""
    sys.path.insert(0, str(Path(__file__).parents[3] / "examples"))
    from decoders import GPT2Config, LlamaConfig, random_weights
    from kv_cache import Decoder, pad_prompts

    if arch == "gpt2":
        cfg = GPT2Config(vocab=97, context=64, width=64, layers=2, heads=4)
    else:
        cfg = LlamaConfig(vocab=97, context=64, width=64, layers=2, heads=4, kv_heads=2, hidden=96)
    weights = {k: v * (10 if v.ndim == 2 else 1) for k, v in random_weights(cfg).items()}
    prompts = [[5, 17, 3, 88, 41], [9, 2], [60, 61, 62, 7, 7, 30, 1]]
    tokens, lengths = pad_prompts(prompts, "left" if layout == "contiguous" else "right")
    runs, chosen = {}, []
    for target in ("llvm", "cuda"):  # the GPU is fed the tokens the CPU chose
        decoder = Decoder(cfg, weights, layout, target)
        cache = decoder.new_cache(len(prompts), 16, page_size=4)
        logits, cache = decoder.prefill(tokens, cache, lengths)
        steps = [np.asarray(logits)]
        for step in range(6):
            if target == "llvm":
                chosen.append(steps[-1].argmax(-1).astype(np.int32))
            pointer = getattr(cache.k[0], "__cuda_array_interface__", {}).get("data", (None,))[0]
            logits, cache = decoder.decode(chosen[step][:, None], cache)
            if target == "cuda":
                assert isinstance(cache.k[0], DeviceArray)
                after = cache.k[0].__cuda_array_interface__["data"][0]
                assert pointer is None or after == pointer  # written in place on the device
            steps.append(np.asarray(logits))
        runs[target] = np.stack(steps)
        assert decoder.prefill_fn.cache_size() == 1 and decoder.decode_fn.cache_size() == 1
    assert np.ptp(runs["llvm"]) > 1
    np.testing.assert_allclose(runs["cuda"], runs["llvm"], rtol=1e-3, atol=1e-3)
