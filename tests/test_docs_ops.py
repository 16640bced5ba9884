"""docs/ops.md names every public function of relaxjax's jax-like modules, and every name of
jax.numpy, jax.numpy.linalg and jax.nn that relaxjax leaves out (issue 10)."""

import importlib
import re
from pathlib import Path

import pytest

DOC = Path(__file__).parents[1] / "docs" / "ops.md"
PAIRS = [
    ("jax.numpy", "relaxjax.numpy", ""),
    ("jax.numpy.linalg", "relaxjax.numpy.linalg", "linalg."),
    ("jax.nn", "relaxjax.nn", "nn."),
]
OURS = ["relaxjax.numpy", "relaxjax.numpy.linalg", "relaxjax.nn", "relaxjax.lax"]
OURS += ["relaxjax.scipy.special"]


def _code_names(text: str) -> set[str]:
    """Every dotted identifier inside a code span, and its last part."""
    names = set()
    for span in re.findall(r"`([^`]+)`", text):
        for token in re.findall(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*", span):
            names |= {token, token.split(".")[-1]}
    return names


def _left_out_section(text: str) -> str:
    start = text.index("## Every jax.numpy, jax.numpy.linalg and jax.nn name left out")
    return text[start : text.index("\n## ", start + 1)]


@pytest.mark.parametrize("module", OURS)
def test_every_public_name_is_documented(module):
    documented = _code_names(DOC.read_text())
    missing = [n for n in importlib.import_module(module).__all__ if n not in documented]
    assert not missing, f"{module}: add to docs/ops.md: {missing}"


@pytest.mark.parametrize(("theirs", "ours", "prefix"), PAIRS)
def test_every_left_out_jax_name_is_listed_with_its_reason(theirs, ours, prefix):
    listed = _code_names(_left_out_section(DOC.read_text()))
    public = {n for n in dir(importlib.import_module(theirs)) if not n.startswith("_")}
    left_out = public - set(importlib.import_module(ours).__all__)
    missing = sorted(n for n in left_out if prefix + n not in listed)
    assert not missing, f"{theirs}: list in docs/ops.md's left-out table: {missing}"


def test_the_checks_can_fail():
    assert "not_a_function" not in _code_names(DOC.read_text())
    assert "apply_along_axis" in _code_names(_left_out_section(DOC.read_text()))
    assert "sort" not in _code_names(_left_out_section(DOC.read_text()))
