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
import relaxjax.numpy as rnp  # noqa: E402
from models import block_params, gpt_block, jax_block, mlp  # noqa: E402
from op_cases import assert_matches, expected, jitted, op_cases, random_arrays  # noqa: E402
from relaxjax import dtypes, nn  # noqa: E402
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


# -- cuBLAS (relax.jit's default for float matmuls on the GPU) -------------------------------

_CUBLAS_TOLERANCE = {"float32": 1e-4, "float16": 2e-2, "bfloat16": 1e-1}


def _cublas_check(got, a, b, dtype, what):
    expected = np.matmul(a.astype(np.float64), b.astype(np.float64))
    tolerance = _CUBLAS_TOLERANCE[dtype] * max(1.0, np.sqrt(a.shape[-1]) / 4)
    np.testing.assert_allclose(
        np.asarray(got).astype(np.float64), expected, tolerance, tolerance, err_msg=what
    )


def _uses_cublas(f) -> bool:
    (executable,) = f._executables.values()
    return 'extern("cublas.matmul' in str(executable.program.module)


def test_cublas_loads_on_the_gpu():
    library = current_device().matmul_library()
    assert library.library.handle is not None
    assert library.library.workspace.size >= 4 << 20


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_cublas_matmul_and_transposed_operands(dtype):
    T = relax.Tensor

    def fn(x: T(("m", 96), dtype), w: T((64, 96), dtype), v: T((96, 64), dtype)):
        return x @ v, x @ w.T, w @ x.T

    f = relax.jit(fn, target="cuda")
    rng = np.random.default_rng(7)
    np_dtype = dtypes.to_numpy(dtype)
    w = rng.standard_normal((64, 96)).astype(np_dtype)
    v = rng.standard_normal((96, 64)).astype(np_dtype)
    for m in (0, 1, 7, 300):
        x = rng.standard_normal((m, 96)).astype(np_dtype)
        plain, right_t, left_t = f(x, w, v)
        _cublas_check(plain, x, v, dtype, f"x @ v, m={m}")
        _cublas_check(right_t, x, w.T, dtype, f"x @ w.T, m={m}")
        _cublas_check(left_t, w, x.T, dtype, f"w @ x.T, m={m}")
    assert f.cache_size() == 1 and _uses_cublas(f)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_cublas_batched_matmul(dtype):
    T = relax.Tensor

    def fn(q: T(("b", "m", 32), dtype), k: T(("b", "n", 32), dtype), w: T((32, 48), dtype)):
        return q @ rnp.swapaxes(k, 1, 2), q @ w

    f = relax.jit(fn, target="cuda")
    rng = np.random.default_rng(8)
    np_dtype = dtypes.to_numpy(dtype)
    w = rng.standard_normal((32, 48)).astype(np_dtype)
    for b, m, n in [(4, 0, 5), (4, 1, 5), (3, 7, 9), (2, 300, 17)]:
        q = rng.standard_normal((b, m, 32)).astype(np_dtype)
        k = rng.standard_normal((b, n, 32)).astype(np_dtype)
        scores, projected = f(q, k, w)
        _cublas_check(scores, q, np.swapaxes(k, 1, 2), dtype, f"scores b={b} m={m} n={n}")
        _cublas_check(projected, q, w, dtype, f"q @ w b={b} m={m}")
    assert f.cache_size() == 1 and _uses_cublas(f)


def test_cublas_inside_cuda_graph_replay():
    T = relax.Tensor

    def fn(x: T(("n", 64), "float32"), w: T((64, 64), "float32")):
        return rnp.tanh(x @ w) @ w.T

    f = relax.jit(fn, target="cuda", cuda_graphs=GraphPolicy(max_value=512, max_captures=8))
    rng = np.random.default_rng(9)
    w = (0.1 * rng.standard_normal((64, 64))).astype(np.float32)
    for n in (3, 4, 3, 100, 77, 300, 300, 3, 1000):
        x = rng.standard_normal((n, 64)).astype(np.float32)
        expected = np.tanh(x.astype(np.float64) @ w) @ w.T
        np.testing.assert_allclose(np.asarray(f(x, w)), expected, rtol=1e-4, atol=1e-4)
    (executable,) = f._executables.values()
    stats = executable.graphs.stats
    assert _uses_cublas(f)
    # buckets 4 (n = 3, 4), 128 (100, 77), 512 (300, 300): the first call of each runs
    # uncaptured (cuBLAS's setup), the next is captured; 1000 > 512 runs uncaptured
    assert stats.captures == 3 and not stats.refused_buckets, stats
    assert stats.replays == 5 and stats.uncaptured == 4, stats


def test_gpt_block_with_cublas_and_with_generated_matmuls():
    rng = np.random.default_rng(10)
    params = block_params(64, 256, rng)
    names = ("wq", "wk", "wv", "wo", "w_fc", "w_proj", "g1", "b1", "g2", "b2")
    args = [params[name] for name in names]
    with_library = gpt_block(64, 4, 256)
    generated = relax.jit(with_library.fn, target="cuda", library=False)
    for t in (1, 5, 77):
        x = rng.standard_normal((t, 64)).astype(np.float32)
        expected = np.asarray(jax_block(x, params, 4))
        for f in (with_library, generated):
            np.testing.assert_allclose(np.asarray(f(x, *args)), expected, rtol=3e-4, atol=3e-4)
    assert _uses_cublas(with_library) and not _uses_cublas(generated)


@pytest.mark.parametrize("case", [c for c in CASES if c.op == "matmul"], ids=lambda c: c.op)
def test_the_generated_matmul_matches_jax_on_the_gpu(case):
    f = jitted(case, "cuda", library=False)
    rng = np.random.default_rng(0)
    for n in (0, 1, 7, 64):
        env = {"n": max(n, case.min_n), "m": 3}
        arrays = random_arrays(case, env, rng)
        ours = f(*arrays)
        leaves = ours if isinstance(ours, (tuple, list)) else [ours]
        assert_matches([np.asarray(x) for x in leaves], expected(case, arrays), case.rtol, "gen")
    assert not _uses_cublas(f)


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


def test_cublas_inside_a_scan_on_the_gpu():
    import relaxjax.lax as lax

    T = relax.Tensor

    def fn(xs: T(("t", 64), "float32"), h: T((64,), "float32"), w: T((64, 64), "float32")):
        def body(carry, x_t):
            carry = rnp.tanh((carry + x_t) @ w)
            return carry, carry @ w.T

        return lax.scan(body, h, xs)

    f = relax.jit(fn, target="cuda")
    rng = np.random.default_rng(12)
    w = (0.2 * rng.standard_normal((64, 64))).astype(np.float32)
    for t in (0, 1, 9):
        xs = rng.standard_normal((t, 64)).astype(np.float32)
        h = rng.standard_normal(64).astype(np.float32)
        carry, ys = f(xs, h, w)
        expected, rows = h.astype(np.float64), []
        for x_t in xs:
            expected = np.tanh((expected + x_t) @ w)
            rows.append(expected @ w.T)
        np.testing.assert_allclose(np.asarray(carry), expected, rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(
            np.asarray(ys), np.array(rows).reshape(t, 64), rtol=1e-4, atol=1e-4
        )
    assert _uses_cublas(f)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_elementwise_and_rows_on_the_gpu(dtype):
    import ml_dtypes

    import relaxjax.nn as rnn

    @relax.jit(target="cuda")
    def f(x: relax.Tensor(("n", 96), dtype)):
        return rnn.softmax(rnn.gelu(x) * 2.0 + x, axis=-1), x.astype("float32") * 0.5

    numpy_dtype = np.float16 if dtype == "float16" else ml_dtypes.bfloat16
    rng = np.random.default_rng(7)
    for n in (1, 33, 500):
        x = rng.standard_normal((n, 96)).astype(numpy_dtype)
        y, z = f(x)
        wide = x.astype(np.float32)
        h = 0.5 * wide * (1 + np.tanh(0.7978845608 * (wide + 0.044715 * wide**3))) * 2 + wide
        e = np.exp(h - h.max(-1, keepdims=True))
        tolerance = 2e-2 if dtype == "bfloat16" else 4e-3
        np.testing.assert_allclose(
            np.asarray(y).astype(np.float32), e / e.sum(-1, keepdims=True), atol=tolerance
        )
        np.testing.assert_array_equal(np.asarray(z), wide * 0.5)
    assert f.cache_size() == 1


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
