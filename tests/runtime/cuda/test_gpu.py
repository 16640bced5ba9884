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
from relaxjax import nn  # noqa: E402
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


# --- generated matrix products (tensor cores for float16/bfloat16, the GEMV for few rows)


def _matmul_program(dtype: str, k: int, n: int, epilogue: bool):
    """``a @ b`` (or ``gelu(a @ b + bias) * 0.5 + r``) for any number of rows ``m``."""

    def program(a, b, bias, r):
        y = a @ b
        return nn.gelu(y + bias) * 0.5 + r if epilogue else y

    program.__annotations__ = {
        "a": relax.Tensor(("m", k), dtype),
        "b": relax.Tensor((k, n), dtype),
        "bias": relax.Tensor((n,), dtype),
        "r": relax.Tensor(("m", n), dtype),
    }
    return relax.jit(program, target="cuda")


def _matmul_reference(a, b, bias, r, epilogue: bool):
    """jax on the same dtypes (float32 accumulation, rounded to the dtype once)."""
    import jax
    import jax.numpy as jnp

    y = jnp.matmul(
        jnp.asarray(a),
        jnp.asarray(b),
        preferred_element_type=jnp.float32,
        precision=jax.lax.Precision.HIGHEST,  # no TF32 for the float32 reference
    )
    y = y.astype(a.dtype)
    if epilogue:
        y = jax.nn.gelu(y + jnp.asarray(bias)) * jnp.asarray(0.5, a.dtype) + jnp.asarray(r)
    return np.asarray(y, np.float32)


@pytest.mark.parametrize("epilogue", [False, True], ids=["plain", "epilogue"])
@pytest.mark.parametrize(("k", "n"), [(320, 264), (100, 70), (4096, 4096)])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
def test_generated_matmuls_match_jax_at_several_row_counts(dtype, k, n, epilogue):
    import ml_dtypes  # noqa: F401 - numpy's bfloat16

    f = _matmul_program(dtype, k, n, epilogue)
    rng = np.random.default_rng(k + n)
    b = (rng.standard_normal((k, n)) / np.sqrt(k)).astype(dtype)
    bias = rng.standard_normal(n).astype(dtype)
    tol = 1e-4 if dtype == "float32" else 2e-2
    for m in (1, 16, 77, 256):
        a = rng.standard_normal((m, k)).astype(dtype)
        r = rng.standard_normal((m, n)).astype(dtype)
        ours = np.asarray(f(a, b, bias, r)).astype(np.float32)
        want = _matmul_reference(a, b, bias, r, epilogue)
        np.testing.assert_allclose(ours, want, rtol=tol, atol=tol, err_msg=f"{dtype} m={m}")
    assert f.cache_size() == 1
