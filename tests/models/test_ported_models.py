"""Models written for jax or numpy run under relax.jit with only their imports changed
(issue 10): the same source file is loaded as written and with its imports pointing at
relaxjax, both versions are run and the results compared."""

from __future__ import annotations

import sys
from pathlib import Path
from types import ModuleType

import jax
import numpy as np
import pytest

import relaxjax as relax

HERE = Path(__file__).parent
JAX_TO_RELAX = {
    "import jax.numpy as jnp": "import relaxjax.numpy as jnp",
    "from jax import lax, nn": "from relaxjax import lax, nn",
}


def load(file: str, swaps: dict[str, str] | None = None) -> ModuleType:
    """The module in ``file``, with each import line of ``swaps`` replaced (each must occur)."""
    source = (HERE / file).read_text()
    for old, new in (swaps or {}).items():
        assert source.count(old + "\n") == 1, f"{file} has no line {old!r}"
        source = source.replace(old + "\n", new + "\n")
    name = f"ported_{Path(file).stem}_{'relax' if swaps else 'orig'}"
    module = ModuleType(name)
    module.__file__ = str(HERE / file)
    sys.modules[name] = module  # dataclasses and NamedTuples look their module up
    exec(compile(source, str(HERE / file), "exec"), module.__dict__)
    return module


def _weights(rng: np.random.Generator, *shape: int, scale: float = 0.2) -> np.ndarray:
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def _close(ours: object, theirs: object) -> None:
    np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=2e-4, atol=2e-5)


# -- GPT-2, jax style --------------------------------------------------------------------------

LAYERS, WIDTH, HEADS, VOCAB, CONTEXT = 2, 16, 4, 23, 12


def _gpt2_params(module: ModuleType, rng: np.random.Generator):
    def stacked(*shape: int, scale: float = 0.2) -> np.ndarray:
        return _weights(rng, LAYERS, *shape, scale=scale)

    ones = np.ones((LAYERS, WIDTH), np.float32)
    blocks = module.Block(
        ln1_g=ones + stacked(WIDTH, scale=0.1), ln1_b=stacked(WIDTH, scale=0.1),
        w_qkv=stacked(WIDTH, 3 * WIDTH), b_qkv=stacked(3 * WIDTH),
        w_proj=stacked(WIDTH, WIDTH), b_proj=stacked(WIDTH),
        ln2_g=ones + stacked(WIDTH, scale=0.1), ln2_b=stacked(WIDTH, scale=0.1),
        w_fc=stacked(WIDTH, 4 * WIDTH), b_fc=stacked(4 * WIDTH),
        w_out=stacked(4 * WIDTH, WIDTH), b_out=stacked(WIDTH),
    )  # fmt: skip
    return module.Params(
        wte=_weights(rng, VOCAB, WIDTH, scale=0.5),
        wpe=_weights(rng, CONTEXT, WIDTH, scale=0.1),
        blocks=blocks,
        lnf_g=np.ones(WIDTH, np.float32),
        lnf_b=np.zeros(WIDTH, np.float32),
    )


def _as(module: ModuleType, params):
    """The same weights in ``module``'s named tuples (each copy has its own classes)."""
    blocks = module.Block(*params.blocks)
    return module.Params(params.wte, params.wpe, blocks, params.lnf_g, params.lnf_b)


IDS = relax.Tensor(("batch", "length"), "int32")


@pytest.fixture(scope="module")
def gpt2():
    """(the jax original, the ported module, weights in its tuples, one executable for every
    batch and length)."""
    orig, ported = load("jax_gpt2.py"), load("jax_gpt2.py", JAX_TO_RELAX)
    params = _as(ported, _gpt2_params(orig, np.random.default_rng(0)))
    cfg = ported.Config(n_head=HEADS)

    @relax.jit
    def compiled(params, ids: IDS):
        return ported.gpt2(params, ids, cfg)

    return orig, ported, params, compiled


def test_jax_gpt2_runs_under_relax_jit_with_the_imports_changed(gpt2):
    orig, ported, params, compiled = gpt2
    reference = jax.jit(orig.gpt2, static_argnames="cfg")
    rng = np.random.default_rng(1)
    for batch, length in ((2, 5), (1, 1), (3, CONTEXT)):
        ids = rng.integers(0, VOCAB, (batch, length)).astype(np.int32)
        theirs = reference(_as(orig, params), ids, orig.Config(n_head=HEADS))
        ours = compiled(params, ids)
        assert type(ours) is ported.Output
        assert np.asarray(ours.logits).shape == (batch, length, VOCAB)
        assert np.asarray(ours.next_logits).shape == (batch, 1, VOCAB)
        _close(ours.logits, theirs.logits)
        _close(ours.next_logits, theirs.next_logits)
    assert compiled.cache_size() == 1


def test_jax_gpt2_is_causal_and_scans_instead_of_unrolling(gpt2):
    _, ported, params, compiled = gpt2
    ids = np.random.default_rng(2).integers(0, VOCAB, (1, 6)).astype(np.int32)
    changed = ids.copy()
    changed[0, -1] = (ids[0, -1] + 1) % VOCAB
    first, second = compiled(params, ids), compiled(params, changed)
    _close(np.asarray(first.logits)[:, :-1], np.asarray(second.logits)[:, :-1])
    assert not np.allclose(np.asarray(first.logits)[:, -1], np.asarray(second.logits)[:, -1])
    text = str(compiled.trace(params, IDS))
    assert text.count("scan(") == 1 and text.count("softmax(") == 1, text
    spec = relax.eval_shape(compiled, params, IDS)
    assert spec == ported.Output(
        relax.Tensor(("batch", "length", VOCAB), "float32"),
        relax.Tensor(("batch", 1, VOCAB), "float32"),
    )


# -- Llama with a KV cache, jax style ----------------------------------------------------------

L_LAYERS, L_WIDTH, L_HEADS, L_KV_HEADS, L_HIDDEN, L_VOCAB, SLOTS = 2, 16, 4, 2, 24, 19, 8
HEAD_DIM = L_WIDTH // L_HEADS


def _llama_params(module: ModuleType, rng: np.random.Generator):
    def stacked(*shape: int) -> np.ndarray:
        return _weights(rng, L_LAYERS, *shape)

    norm = np.ones((L_LAYERS, L_WIDTH), np.float32)
    layers = module.Layer(
        attn_norm=norm + stacked(L_WIDTH) * 0.5, wq=stacked(L_WIDTH, L_WIDTH),
        wk=stacked(L_WIDTH, L_KV_HEADS * HEAD_DIM), wv=stacked(L_WIDTH, L_KV_HEADS * HEAD_DIM),
        wo=stacked(L_WIDTH, L_WIDTH), ffn_norm=norm + stacked(L_WIDTH) * 0.5,
        w_gate=stacked(L_WIDTH, L_HIDDEN), w_up=stacked(L_WIDTH, L_HIDDEN),
        w_down=stacked(L_HIDDEN, L_WIDTH),
    )  # fmt: skip
    return module.Params(
        embed=_weights(rng, L_VOCAB, L_WIDTH, scale=0.5),
        layers=layers,
        norm=np.ones(L_WIDTH, np.float32),
        lm_head=_weights(rng, L_WIDTH, L_VOCAB, scale=0.5),
    )


def _empty_cache(module: ModuleType, batch: int):
    shape = (L_LAYERS, batch, SLOTS, L_KV_HEADS, HEAD_DIM)
    return module.Cache(np.zeros(shape, np.float32), np.zeros(shape, np.float32))


def test_jax_llama_prefill_and_decode_with_a_kv_cache_under_relax_jit():
    orig, ported = load("jax_llama.py"), load("jax_llama.py", JAX_TO_RELAX)
    theirs_params = _llama_params(orig, np.random.default_rng(3))
    ours_params = ported.Params(
        theirs_params.embed, ported.Layer(*theirs_params.layers), *theirs_params[2:]
    )
    cfg_theirs = orig.Config(n_head=L_HEADS, n_kv_head=L_KV_HEADS)
    cfg_ours = ported.Config(n_head=L_HEADS, n_kv_head=L_KV_HEADS)
    reference = jax.jit(orig.llama, static_argnames="cfg")

    @relax.jit
    def step(params, ids: IDS, cache, pos: relax.Tensor((), "int32")):
        return ported.llama(params, ids, cache, pos, cfg_ours)

    batch = 2
    ids = np.random.default_rng(4).integers(0, L_VOCAB, (batch, 5)).astype(np.int32)
    theirs_cache, ours_cache, pos = _empty_cache(orig, batch), _empty_cache(ported, batch), 0
    for _ in range(3):  # a prompt of 5 tokens, then two greedy decoding steps
        theirs, theirs_cache = reference(
            theirs_params, ids, theirs_cache, np.int32(pos), cfg_theirs
        )
        ours, ours_cache = step(ours_params, ids, ours_cache, np.int32(pos))
        assert type(ours_cache) is ported.Cache
        _close(ours, theirs)
        _close(ours_cache.k, theirs_cache.k)
        _close(ours_cache.v, theirs_cache.v)
        pos += ids.shape[1]
        assert not np.asarray(ours_cache.k)[:, :, pos:].any()  # later slots untouched
        ids = np.asarray(ours).argmax(-1).astype(np.int32)
    assert step.cache_size() == 1


# -- GPT-2, numpy style (picoGPT) --------------------------------------------------------------


def _numpy_gpt2_params(rng: np.random.Generator) -> dict:
    def linear(n_in: int, n_out: int) -> dict:
        return {"w": _weights(rng, n_in, n_out), "b": _weights(rng, n_out)}

    def norm() -> dict:
        return {"g": 1 + _weights(rng, WIDTH, scale=0.1), "b": _weights(rng, WIDTH, scale=0.1)}

    blocks = [
        {
            "mlp": {"c_fc": linear(WIDTH, 4 * WIDTH), "c_proj": linear(4 * WIDTH, WIDTH)},
            "attn": {"c_attn": linear(WIDTH, 3 * WIDTH), "c_proj": linear(WIDTH, WIDTH)},
            "ln_1": norm(),
            "ln_2": norm(),
        }
        for _ in range(LAYERS)
    ]
    return {
        "wte": _weights(rng, VOCAB, WIDTH, scale=0.5),
        "wpe": _weights(rng, CONTEXT, WIDTH, scale=0.1),
        "blocks": blocks,
        "ln_f": norm(),
    }


def test_numpy_gpt2_runs_under_relax_jit_with_the_import_changed():
    orig = load("numpy_gpt2.py")
    ported = load("numpy_gpt2.py", {"import numpy as np": "import relaxjax.numpy as np"})
    rng = np.random.default_rng(5)
    params = _numpy_gpt2_params(rng)
    compiled = relax.jit(ported.gpt2, static_argnames=("n_head",))
    inputs = rng.integers(0, VOCAB, 7)
    theirs = orig.gpt2(inputs, **params, n_head=HEADS)
    ours = compiled(inputs, **params, n_head=HEADS)
    assert np.asarray(ours).shape == (7, VOCAB)
    _close(ours, theirs)
    # eagerly, outside jit, the ported module computes the same with numpy's references
    _close(
        ported.gpt2(inputs[:3], **params, n_head=HEADS),
        orig.gpt2(inputs[:3], **params, n_head=HEADS),
    )
