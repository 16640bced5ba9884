"""The graph passes on programs with data-dependent sizes (a count bound by a match_cast).

Dead-code elimination keeps the count and the ``match_cast`` that defines the symbol
(an effect: later shapes use the symbol), fusion joins kernels on either side of it but
never moves a use of the symbol before its definition, and ``verify`` passes after every
pass of the pipeline.
"""

from __future__ import annotations

import numpy as np

import relaxjax as relax
import relaxjax.numpy as rnp
from relaxjax.ir import Binding, MatchCast, verify
from relaxjax.passes import default_pipeline, eliminate_dead_code
from relaxjax.runtime import build_executable


def _bindings(mod, name):
    return [b for block in mod[name].body.blocks for b in block.bindings]


def _program(x: relax.Tensor(("n", 4), "float32")):
    h = rnp.exp(x) * 2.0
    mask = h[:, 0] > 2.0
    kept = h[mask] * 3.0 + 1.0  # take, multiply and add fuse after the match_cast
    other = rnp.tanh(x) * 5.0
    return kept, other, x[mask].shape[0]


def test_pipeline_keeps_the_definition_before_every_use():
    mod = relax.jit(_program).trace()
    lowered = default_pipeline("llvm", verify=True)(mod)
    verify(lowered)
    bindings = _bindings(lowered, "program")
    casts = [i for i, b in enumerate(bindings) if isinstance(b, MatchCast)]
    assert len(casts) == 1
    k = bindings[casts[0]].info.value
    for position, binding in enumerate(bindings):
        uses_k = k.name in str(binding.var.info)
        if uses_k and position != casts[0]:
            assert position > casts[0], f"{binding.var.name_hint} uses {k} before its definition"
    text = str(lowered)
    assert "fused_take_multiply_add" in text
    assert text.index("match_cast") < text.index("fused_take_multiply_add")


def test_dead_code_keeps_the_count_and_its_symbol():
    def only_the_length(x: relax.Tensor(("n",), "float32")):
        selected = x[x > 0]
        unused = rnp.exp(selected)  # dead
        del unused
        return selected.shape[0] * 2

    mod = relax.jit(only_the_length).trace()
    cleaned = eliminate_dead_code(mod)
    verify(cleaned)
    names = [
        b.value.op_name
        for b in _bindings(cleaned, "only_the_length")
        if isinstance(b, Binding) and hasattr(b.value, "op_name")
    ]
    assert "nonzero_count" in names and "exp" not in names and "take" not in names
    assert any(isinstance(b, MatchCast) for b in _bindings(cleaned, "only_the_length"))
    exe = build_executable(mod)
    (out,) = exe(np.array([1.0, -1.0, 2.0, 3.0], np.float32))
    assert int(out) == 6


def test_lowered_program_runs_in_two_segments():
    exe = build_executable(relax.jit(_program).trace())
    source = exe.source
    assert source.count("arena1 = ") == 1 and "arena2" not in source
    x = np.random.default_rng(0).standard_normal((6, 4)).astype(np.float32)
    kept, other, count = exe(x)
    h = np.exp(x) * 2.0
    expected = h[h[:, 0] > 2.0] * 3.0 + 1.0
    np.testing.assert_allclose(kept, expected, rtol=1e-5)
    np.testing.assert_allclose(other, np.tanh(x) * 5.0, rtol=1e-5)
    assert int(count) == len(expected)
