"""Public modules export exactly their ``__all__`` (issue 10: clean namespaces)."""

import importlib

import pytest

PUBLIC = [
    "relaxjax.numpy",
    "relaxjax.numpy.linalg",
    "relaxjax.nn",
    "relaxjax.lax",
    "relaxjax.tree_util",
    "relaxjax.scipy",
    "relaxjax.scipy.special",
]


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


def test_linalg_is_a_submodule_and_an_attribute():
    import relaxjax.numpy as rnp
    import relaxjax.numpy.linalg as linalg

    assert rnp.linalg is linalg
    assert "linalg" in dir(rnp)


@pytest.mark.parametrize(
    "name",
    [
        "manipulation",
        "joining",
        "entries",
        "selection",
        "index_tricks",
        "contractions",
        "linalg",
        "polynomial",
        "signal",
    ],
)
def test_docstring_examples_of_the_array_families(name):
    import doctest

    module = importlib.import_module(f"relaxjax._numpy.{name}")
    failures, _ = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert failures == 0


def test_linalg_docstring_example():
    import doctest

    import relaxjax.numpy.linalg as module

    failures, tried = doctest.testmod(module)
    assert tried > 0 and failures == 0
