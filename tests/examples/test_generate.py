"""The examples' decoders (examples/decoders.py, examples/kv_cache.py): logits against an
independent jax implementation for prefill and 20 decode steps, generation with a cache
equal to generation without, the paged layout equal to the contiguous one, one executable
for every shape, cache writes in place, and the safetensors reader."""

from __future__ import annotations

import json
import struct

import jax
import jax_decoders
import numpy as np
import pytest
from decoders import (
    GPT2Config,
    LlamaConfig,
    load_weights,
    random_weights,
    read_safetensors,
    weight_shapes,
    write_safetensors,
)
from kv_cache import Decoder, pad_prompts

from relaxjax.ir import CALL_TIR_INPLACE, Call, Var

GPT2_SMALL = GPT2Config(vocab=97, context=64, width=32, layers=2, heads=4)
LLAMA_SMALL = LlamaConfig(vocab=97, context=64, width=48, layers=2, heads=6, kv_heads=2, hidden=64)
CONFIGS = {"gpt2": GPT2_SMALL, "llama": LLAMA_SMALL}
PROMPTS = [[5, 17, 3, 88, 41], [9, 2], [60, 61, 62, 7, 7, 30, 1]]
STEPS = 20


def _weights(cfg, seed: int = 0) -> dict[str, np.ndarray]:
    """random_weights made large enough that logits differ clearly between tokens, with
    norm gains and biases away from 1 and 0."""
    rng = np.random.default_rng(seed + 100)
    w = random_weights(cfg, seed)
    for name, array in w.items():
        if array.ndim == 2:
            w[name] = array * 15
        else:
            w[name] = array + rng.normal(0, 0.1, array.shape).astype(np.float32)
    embedding = "wte.weight" if isinstance(cfg, GPT2Config) else "model.embed_tokens.weight"
    w["lm_head.weight"] = np.ascontiguousarray(w[embedding].T)
    return w


@pytest.fixture(scope="module")
def decoders():
    made: dict[tuple[str, str], Decoder] = {}

    def get(arch: str, layout: str) -> Decoder:
        if (arch, layout) not in made:
            made[arch, layout] = Decoder(CONFIGS[arch], _weights(CONFIGS[arch]), layout)
        return made[arch, layout]

    yield get
    for decoder in made.values():  # every shape every test used: one executable each
        assert decoder.prefill_fn.cache_size() <= 1
        assert decoder.decode_fn.cache_size() <= 1
        assert decoder.full_fn.cache_size() <= 1


def _generate(decoder: Decoder, prompts, steps: int, capacity: int = 32, page_size: int = 4):
    """Greedy generation with the cache: the tokens and each step's logits."""
    side = "left" if decoder.layout == "contiguous" else "right"
    tokens, lengths = pad_prompts(prompts, side)
    cache = decoder.new_cache(len(prompts), capacity, page_size)
    logits, cache = decoder.prefill(tokens, cache, lengths)
    all_logits, generated = [logits], []
    for _ in range(steps):
        token = logits.argmax(-1).astype(np.int32)
        generated.append(token)
        logits, cache = decoder.decode(token[:, None], cache)
        all_logits.append(logits)
    return np.stack(generated, 1), np.stack(all_logits, 1)


@pytest.mark.parametrize("layout", ["contiguous", "paged"])
@pytest.mark.parametrize("arch", ["gpt2", "llama"])
def test_prefill_and_decode_logits_match_jax(decoders, arch, layout):
    decoder = decoders(arch, layout)
    reference = jax_decoders.gpt2_logits if arch == "gpt2" else jax_decoders.llama_logits
    generated, logits = _generate(decoder, PROMPTS, STEPS)
    sequences = [prompt + generated[s].tolist() for s, prompt in enumerate(PROMPTS)]
    tokens, lengths = pad_prompts(sequences, "left")  # one jax call: rows left-padded
    start = (tokens.shape[1] - lengths).astype(np.int32)
    want = np.asarray(
        jax.jit(reference, static_argnums=1)(decoder.weights, decoder.cfg, tokens, start)
    )
    np.testing.assert_allclose(logits, want[:, -STEPS - 1 :], rtol=1e-4, atol=1e-3)
    assert np.ptp(logits) > 10  # the logits are far from uniform: the comparison means something


@pytest.mark.slow
@pytest.mark.parametrize("layout", ["contiguous", "paged"])
@pytest.mark.parametrize("arch", ["gpt2", "llama"])
def test_real_widths_match_jax(arch, layout):
    """The real models' widths, heads and vocabularies (two layers): 20 decode steps."""
    full = GPT2Config() if arch == "gpt2" else LlamaConfig()
    cfg = type(full)(**{**full.__dict__, "layers": 2})
    weights = {k: v * (5 if v.ndim == 2 else 1) for k, v in random_weights(cfg).items()}
    decoder = Decoder(cfg, weights, layout)
    prompts = [list(range(100, 130)), list(range(7, 12))]
    generated, logits = _generate(decoder, prompts, STEPS, capacity=64, page_size=16)
    sequences = [prompt + generated[s].tolist() for s, prompt in enumerate(prompts)]
    tokens, lengths = pad_prompts(sequences, "left")
    start = (tokens.shape[1] - lengths).astype(np.int32)
    reference = jax_decoders.gpt2_logits if arch == "gpt2" else jax_decoders.llama_logits
    want = np.asarray(jax.jit(reference, static_argnums=1)(weights, cfg, tokens, start))
    np.testing.assert_allclose(logits, want[:, -STEPS - 1 :], rtol=1e-3, atol=2e-3)
    assert decoder.prefill_fn.cache_size() == 1 and decoder.decode_fn.cache_size() == 1


@pytest.mark.parametrize("arch", ["gpt2", "llama"])
def test_generation_with_cache_equals_generation_without(decoders, arch):
    decoder = decoders(arch, "contiguous")
    generated, _ = _generate(decoder, PROMPTS, 12)
    tokens, lengths = pad_prompts(PROMPTS, "left")
    start = tokens.shape[1] - lengths
    for step in range(12):  # the whole prefix recomputed, no cache
        token = decoder.full(tokens, start).argmax(-1).astype(np.int32)
        np.testing.assert_array_equal(token, generated[:, step], err_msg=f"step {step}")
        tokens = np.concatenate([tokens, token[:, None]], axis=1)


def test_paged_layout_equals_contiguous(decoders):
    prompts = [*PROMPTS, [4] * 13]  # a longer batch, a prompt over three pages
    contiguous = _generate(decoders("llama", "contiguous"), prompts, 10)
    paged = _generate(decoders("llama", "paged"), prompts, 10)
    np.testing.assert_array_equal(contiguous[0], paged[0])
    np.testing.assert_allclose(contiguous[1], paged[1], rtol=1e-5, atol=1e-4)


def test_paged_cache_serves_a_new_sequence_in_a_finished_one_s_place(decoders):
    """Continuous batching: row 1 finishes, its pages are freed, a new prompt is prefilled
    into its place while rows 0 and 2 keep their caches; then all three decode on."""
    decoder = decoders("llama", "paged")
    tokens, lengths = pad_prompts(PROMPTS, "right")
    cache = decoder.new_cache(3, 16, page_size=4)
    logits, cache = decoder.prefill(tokens, cache, lengths)
    sequences = [list(p) for p in PROMPTS]
    for _ in range(3):
        token = logits.argmax(-1).astype(np.int32)
        for row, t in zip(sequences, token):
            row.append(int(t))
        logits, cache = decoder.decode(token[:, None], cache)
    cache.release(1)
    new_prompt = [3, 1, 4, 1, 5, 9]
    only_row_1 = np.zeros((3, len(new_prompt)), np.int32)
    only_row_1[1] = new_prompt
    fresh, cache = decoder.prefill(only_row_1, cache, lengths=[0, len(new_prompt), 0])
    logits[1] = np.asarray(fresh)[1]  # rows 0 and 2 wrote nothing: their next logits stand
    sequences[1] = list(new_prompt)
    steps = []
    for _ in range(4):
        token = logits.argmax(-1).astype(np.int32)
        for row, t in zip(sequences, token):
            row.append(int(t))
        logits, cache = decoder.decode(token[:, None], cache)
        steps.append(np.asarray(logits))
    np.testing.assert_array_equal(cache.lengths, [len(s) for s in sequences])
    padded, lengths = pad_prompts(sequences, "left")
    start = (padded.shape[1] - lengths).astype(np.int32)
    reference = jax.jit(jax_decoders.llama_logits, static_argnums=1)
    want = np.asarray(reference(decoder.weights, decoder.cfg, padded, start))[:, -1]
    np.testing.assert_allclose(steps[-1], want, rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("layout", ["contiguous", "paged"])
def test_one_executable_for_every_batch_prompt_and_cache_length(decoders, layout):
    decoder = decoders("gpt2", layout)
    for batch, length, steps in ((1, 3, 2), (4, 6, 5), (2, 1, 9)):
        prompts = [[(7 * s + i) % 97 for i in range(length)] for s in range(batch)]
        _generate(decoder, prompts, steps)
    assert decoder.prefill_fn.cache_size() == 1 and decoder.decode_fn.cache_size() == 1


@pytest.mark.parametrize("layout", ["contiguous", "paged"])
def test_decode_writes_the_cache_in_place(decoders, layout):
    decoder = decoders("gpt2", layout)
    function = decoder.decode_fn.lower(decoder.weights).functions["step"]
    cache_params = [p for p in function.params if p.name_hint.startswith("cache_")]
    assert len(cache_params) == 2 * decoder.cfg.layers
    uses = {p: [] for p in cache_params}
    for block in function.body.blocks:
        for binding in block.bindings:
            value = binding.value
            if not isinstance(value, Call):
                continue
            for arg in value.args:
                fields = getattr(arg, "fields", (arg,))
                for var in fields:
                    if isinstance(var, Var) and var in uses:
                        uses[var].append(value.op)
    # each cache buffer is read by exactly one op, the in-place window write or scatter
    assert all(ops == [CALL_TIR_INPLACE] for ops in uses.values()), uses
    cache = decoder.new_cache(2, 16, 4)
    _, cache = decoder.prefill(np.ones((2, 3), np.int32), cache)
    before = cache.k[0]
    _, cache = decoder.decode(np.ones((2, 1), np.int32), cache)
    assert cache.k[0] is before  # the same buffer handed back


def test_contiguous_cache_refuses_to_overflow(decoders):
    decoder = decoders("gpt2", "contiguous")
    cache = decoder.new_cache(1, 4)
    _, cache = decoder.prefill(np.ones((1, 4), np.int32), cache)
    with pytest.raises(ValueError, match=r"4 \+ 1 positions exceed its capacity 4"):
        decoder.decode(np.ones((1, 1), np.int32), cache)
    cache = decoder.new_cache(2, 8)
    _, cache = decoder.prefill(np.ones((2, 2), np.int32), cache)
    with pytest.raises(ValueError, match="different lengths .* holds 2 positions already"):
        decoder.prefill(np.ones((2, 3), np.int32), cache, lengths=[3, 1])


def test_paged_cache_runs_out_of_pages(decoders):
    decoder = decoders("gpt2", "paged")
    cache = decoder.new_cache(1, 8, page_size=4)  # two pages
    _, cache = decoder.prefill(np.ones((1, 8), np.int32), cache)
    with pytest.raises(MemoryError, match=r"out of pages \(2 of 4 positions each\)"):
        decoder.decode(np.ones((1, 1), np.int32), cache)
    cache.release(0)
    assert sorted(cache.free) == [0, 1] and cache.lengths[0] == 0


def test_unknown_layout_is_refused():
    with pytest.raises(ValueError, match="layout must be 'contiguous' or 'paged', got 'ring'"):
        Decoder(GPT2_SMALL, _weights(GPT2_SMALL), "ring")


# -- safetensors --------------------------------------------------------------------------------


def _write_by_hand(path, tensors: dict[str, tuple[str, tuple[int, ...], bytes]]) -> None:
    """A safetensors file as its format describes it: u64 header size, JSON, data."""
    header, data = {"__metadata__": {"format": "pt"}}, b""
    for name, (dtype, shape, raw) in tensors.items():
        header[name] = {
            "dtype": dtype,
            "shape": list(shape),
            "data_offsets": [len(data), len(data) + len(raw)],
        }
        data += raw
    text = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(text)) + text + data)


def test_read_safetensors_dtypes(tmp_path):
    a = np.arange(6, dtype="<f4").reshape(2, 3) / 4
    b = np.array([1, -2, 3], "<i8")
    c = np.array([0.5, -1.25], "<f2")
    bf16 = np.array([1.0, -2.5, 3.140625], np.float32)  # exactly representable in bfloat16
    bf16_raw = (bf16.view(np.uint32) >> 16).astype("<u2").tobytes()
    path = tmp_path / "t.safetensors"
    _write_by_hand(path, {
        "a": ("F32", a.shape, a.tobytes()), "b": ("I64", b.shape, b.tobytes()),
        "c": ("F16", c.shape, c.tobytes()), "d": ("BF16", (3,), bf16_raw),
    })  # fmt: skip
    got = read_safetensors(path)
    assert sorted(got) == ["a", "b", "c", "d"]
    np.testing.assert_array_equal(got["a"], a)
    np.testing.assert_array_equal(got["b"], b)
    np.testing.assert_array_equal(got["c"], c)
    np.testing.assert_array_equal(got["d"], bf16)
    assert got["d"].dtype == np.float32 and got["a"].flags.c_contiguous


def test_read_safetensors_matches_the_safetensors_package(tmp_path):
    safetensors_numpy = pytest.importorskip("safetensors.numpy")
    tensors = {"x": np.random.default_rng(0).standard_normal((3, 5)).astype(np.float32),
               "y": np.arange(4, dtype=np.int32)}  # fmt: skip
    ours, theirs = tmp_path / "ours.safetensors", tmp_path / "theirs.safetensors"
    safetensors_numpy.save_file(tensors, str(theirs))
    write_safetensors(ours, tensors)
    for name, back in read_safetensors(theirs).items():
        np.testing.assert_array_equal(back, tensors[name])
    for name, back in safetensors_numpy.load_file(str(ours)).items():
        np.testing.assert_array_equal(back, tensors[name])


def test_bad_safetensors_files_are_refused(tmp_path):
    path = tmp_path / "short.safetensors"
    path.write_bytes(b"\x01\x00")
    with pytest.raises(ValueError, match="not a safetensors file"):
        read_safetensors(path)
    path.write_bytes(struct.pack("<Q", 100) + b"{}")
    with pytest.raises(ValueError, match="header of 100 bytes runs past the end of the file"):
        read_safetensors(path)
    _write_by_hand(path, {"a": ("F32", (3,), b"\x00" * 8)})
    with pytest.raises(ValueError, match=r"tensor 'a' of shape \(3,\) has 2 elements of data"):
        read_safetensors(path)


def test_load_gpt2_checkpoint_with_hugging_face_names(tmp_path):
    w = _weights(GPT2_SMALL, seed=3)
    hf = {"transformer." + k: v for k, v in w.items() if k != "lm_head.weight"}  # tied head
    hf["transformer.h.0.attn.bias"] = np.tril(np.ones((1, 1, 64, 64), np.float32))  # a buffer
    path = tmp_path / "gpt2.safetensors"
    _write_by_hand(
        path, {k: ("F32", v.shape, np.ascontiguousarray(v).tobytes()) for k, v in hf.items()}
    )
    loaded = load_weights(path, GPT2_SMALL)
    assert loaded.keys() == w.keys()
    for name in w:
        np.testing.assert_array_equal(loaded[name], w[name], err_msg=name)


def test_load_llama_checkpoint_transposes_torch_linears(tmp_path):
    cfg = LLAMA_SMALL
    w = _weights(cfg, seed=4)
    w["lm_head.weight"] = (
        np.random.default_rng(1).standard_normal((cfg.width, cfg.vocab)).astype(np.float32)
    )
    torch_layout = {k: (v.T if v.ndim == 2 and "embed" not in k else v) for k, v in w.items()}
    path = tmp_path / "llama.safetensors"
    write_safetensors(path, torch_layout)
    loaded = load_weights(path, cfg)
    for name in w:
        np.testing.assert_array_equal(loaded[name], w[name], err_msg=name)
    del torch_layout["model.layers.1.mlp.up_proj.weight"]
    write_safetensors(path, torch_layout)
    with pytest.raises(ValueError, match="no tensor 'model.layers.1.mlp.up_proj.weight'"):
        load_weights(path, cfg)
    torch_layout["model.layers.1.mlp.up_proj.weight"] = np.zeros((cfg.hidden, 5), np.float32)
    write_safetensors(path, torch_layout)
    with pytest.raises(ValueError, match=r"has shape \(5, 64\), expected \(48, 64\)"):
        load_weights(path, cfg)
    assert weight_shapes(cfg)["model.layers.1.mlp.up_proj.weight"] == (48, 64)


# -- examples/generate.py -----------------------------------------------------------------------


def test_sampling_greedy_top_k_and_temperature():
    from generate import sample

    rng = np.random.default_rng(0)
    logits = rng.standard_normal((4, 50)).astype(np.float32) * 3
    best = logits.argmax(-1)
    np.testing.assert_array_equal(sample(logits, rng, 0.0, 0), best)
    np.testing.assert_array_equal(sample(logits, rng, 1.5, 1), best)  # top-1 is greedy
    top3 = np.argsort(logits, -1)[:, -3:]
    draws = np.stack([sample(logits, rng, 1.0, 3) for _ in range(200)])
    assert all(np.isin(draws[:, s], top3[s]).all() for s in range(4))
    assert all(len(np.unique(draws[:, s])) > 1 for s in range(4))  # it does sample
    cold = np.stack([sample(logits, rng, 0.05, 0) for _ in range(50)])
    assert (cold == best).mean() > 0.9  # a low temperature is nearly greedy


def test_generate_continues_each_prompt(decoders):
    from generate import generate

    decoder = decoders("llama", "paged")
    greedy, timing = generate(decoder, PROMPTS, 6, progress=False)
    expected, _ = _generate(decoder, PROMPTS, 5)
    np.testing.assert_array_equal(np.array(greedy)[:, :5], expected)
    assert [len(row) for row in greedy] == [6, 6, 6] and timing["tokens_per_s"] > 0
    sampled, _ = generate(decoder, PROMPTS, 6, temperature=1.0, top_k=5, seed=1, progress=False)
    again, _ = generate(decoder, PROMPTS, 6, temperature=1.0, top_k=5, seed=1, progress=False)
    assert sampled == again and sampled != greedy  # seeded, and not the greedy choice
