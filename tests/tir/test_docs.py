"""The examples in the tir docstrings run as written."""

import doctest
import importlib

import pytest

MODULES = ["buffer", "expr", "compute", "interpreter", "math", "functor", "simt"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(f"relaxjax.tir.{name}")
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
