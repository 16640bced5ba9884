"""relaxjax.lax is a public module: it exports exactly its ``__all__``, with jax.lax's
signatures."""

import inspect

import jax
import pytest

import relaxjax.lax as lax


def test_dir_lists_the_public_api_only():
    public = sorted(name for name in dir(lax) if not name.startswith("_"))
    assert public == sorted(lax.__all__)
    for name in lax.__all__:
        assert getattr(lax, name).__doc__, name


@pytest.mark.parametrize("name", sorted(lax.__all__))
def test_signatures_follow_jax(name):
    ours = inspect.signature(getattr(lax, name))
    theirs = inspect.signature(getattr(jax.lax, name))
    names = [p.name for p in ours.parameters.values()]
    their_names = [p.name for p in theirs.parameters.values()]
    assert names == their_names[: len(names)], (names, their_names)
    for param in ours.parameters.values():
        other = theirs.parameters[param.name]
        assert param.kind == other.kind, param.name
        if param.default is not inspect.Parameter.empty:
            assert param.default == other.default, param.name
