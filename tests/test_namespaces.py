"""Public modules export exactly their ``__all__`` (issue 10: clean namespaces)."""

import importlib

import pytest

PUBLIC = ["relaxjax.numpy", "relaxjax.nn", "relaxjax.scipy", "relaxjax.scipy.special"]


@pytest.mark.parametrize("name", PUBLIC)
def test_dir_lists_exactly_all(name):
    module = importlib.import_module(name)
    assert sorted(dir(module)) == sorted(module.__all__)
    assert len(set(module.__all__)) == len(module.__all__)


@pytest.mark.parametrize("name", PUBLIC)
def test_every_exported_name_is_public_and_defined(name):
    module = importlib.import_module(name)
    for export in module.__all__:
        assert not export.startswith("_"), export
        assert hasattr(module, export), export


def test_implementation_names_are_not_exported():
    import relaxjax.numpy as rnp

    for leaked in ("np", "builtins", "annotations", "emit", "Tracer", "ArangeAttrs", "arith"):
        assert leaked not in dir(rnp)
