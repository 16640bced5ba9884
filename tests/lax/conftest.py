"""relaxjax.lax tests: helpers importable as ``lax_oracle``; every graph module built while
a test runs (entry functions and regions) verifies and prints/parses back unchanged."""

import sys
from pathlib import Path

import pytest

from relaxjax import ir, ops
from relaxjax.ir import parse_module, structural_equal, verify
from relaxjax.ir.printer import module_to_text

sys.path.insert(0, str(Path(__file__).parent))


def check_roundtrip(mod: ir.IRModule) -> None:
    """``mod`` verifies and ``parse(print(mod)) == mod``."""
    verify(mod)
    meta: list = []
    text = module_to_text(mod, meta=meta)
    parsed = parse_module(text, ops.registry(), meta=meta)
    assert structural_equal(parsed, mod), text


@pytest.fixture(autouse=True)
def roundtrip_every_module(monkeypatch):
    """Record every module a builder finalises during the test; check them afterwards."""
    built = []
    original = ir.BlockBuilder.finalize

    def finalize(self):
        mod = original(self)
        built.append(mod)
        return mod

    monkeypatch.setattr(ir.BlockBuilder, "finalize", finalize)
    yield built
    for mod in built:
        if not mod.kernels():
            check_roundtrip(mod)
