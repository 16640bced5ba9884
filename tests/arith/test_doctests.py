"""The examples in arith's docstrings run and give what they show."""

import doctest
import importlib

import pytest

MODULES = ["expr", "bounds", "compare", "subst", "parse", "codegen", "symbols", "solve"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(f"relaxjax.arith.{name}")
    failures, tried = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert tried > 0 and failures == 0
