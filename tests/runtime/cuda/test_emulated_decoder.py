"""examples/kv_cache.py on the emulated GPU (the CUDA runtime and code generation, each
kernel run thread by thread on the CPU): a tiny decoder's prefill and decode steps give the
CPU's logits, and the device cache is written in place. Slow (each kernel is interpreted):
``-m slow``; tests/runtime/cuda/test_gpu.py runs the same on a real GPU."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parents[3] / "examples"))
from decoders import GPT2Config, LlamaConfig, random_weights  # noqa: E402
from kv_cache import Decoder, pad_prompts  # noqa: E402

from relaxjax.runtime.cuda import DeviceArray  # noqa: E402

CONFIGS = {
    "gpt2": GPT2Config(vocab=11, context=16, width=8, layers=1, heads=2),
    "llama": LlamaConfig(vocab=11, context=16, width=8, layers=1, heads=2, kv_heads=1, hidden=12),
}


@pytest.mark.slow
@pytest.mark.parametrize("layout", ["contiguous", "paged"])
@pytest.mark.parametrize("arch", ["gpt2", "llama"])
def test_decoder_on_the_emulated_gpu_matches_the_cpu(emulated, arch, layout):
    cfg = CONFIGS[arch]
    weights = {k: v * (20 if v.ndim == 2 else 1) for k, v in random_weights(cfg).items()}
    tokens, lengths = pad_prompts([[1, 2, 3], [4]], "left" if layout == "contiguous" else "right")
    runs, chosen = {}, []
    for target in ("llvm", "cuda"):
        decoder = Decoder(cfg, weights, layout, target)
        cache = decoder.new_cache(2, 8, page_size=2)
        logits, cache = decoder.prefill(tokens, cache, lengths)
        steps = [np.asarray(logits)]
        for step in range(2):
            if target == "llvm":
                chosen.append(steps[-1].argmax(-1).astype(np.int32))
            before = getattr(cache.k[0], "__cuda_array_interface__", {}).get("data", (None,))[0]
            logits, cache = decoder.decode(chosen[step][:, None], cache)
            if target == "cuda":
                assert isinstance(cache.k[0], DeviceArray)
                assert before is None or cache.k[0].__cuda_array_interface__["data"][0] == before
            steps.append(np.asarray(logits))
        runs[target] = np.stack(steps)
    assert np.ptp(runs["llvm"]) > 0.1
    np.testing.assert_allclose(runs["cuda"], runs["llvm"], rtol=1e-4, atol=1e-4)
