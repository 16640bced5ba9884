"""The jax oracle of the relaxjax.lax tests: one function, run by both libraries.

A test function takes ``(lax, np_like, *args)``; :class:`Both` jits it with relaxjax
(``relaxjax.lax``, ``relaxjax.numpy``) and with jax (``jax.lax``, ``jax.numpy``) and
compares every output leaf: shape, dtype (x64 rules) and values.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

import relaxjax as relax
import relaxjax.lax as rlax
import relaxjax.numpy as rnp


class Both:
    """``fn`` jitted by relaxjax (``.ours``, one executable for all calls when its
    parameters are annotated with symbolic specs) and by jax (``.theirs``)."""

    def __init__(self, fn: Callable, rtol: float = 1e-6) -> None:
        self.ours = relax.jit(functools.partial(fn, rlax, rnp))
        self.theirs = jax.jit(functools.partial(fn, jax.lax, jnp))
        self.rtol = rtol

    def check(self, *args: object) -> object:
        """Run both on ``args``; assert the results match (and their dtypes and weak types
        through ``eval_shape``); return ours."""
        ours = self.ours(*args)
        theirs = self.theirs(*args)
        assert_same(ours, theirs, self.rtol)
        specs = jax.tree_util.tree_leaves(self.ours.eval_shape(*args))
        their_specs = jax.tree_util.tree_leaves(jax.eval_shape(self.theirs, *args))
        for spec, other in zip(specs, their_specs):
            assert (spec.dtype, spec.weak) == (str(other.dtype), other.weak_type), (spec, other)
        return ours


def assert_same(ours: object, theirs: object, rtol: float = 1e-6) -> None:
    """Same pytree structure, and per leaf the same shape, dtype and values."""
    leaves, tree = jax.tree_util.tree_flatten(ours)
    their_leaves, their_tree = jax.tree_util.tree_flatten(theirs)
    assert tree == their_tree, (tree, their_tree)
    for mine, other in zip(leaves, their_leaves):
        mine, other = np.asarray(mine), np.asarray(other)
        assert mine.shape == other.shape, (mine.shape, other.shape)
        assert mine.dtype == other.dtype, (mine.dtype, other.dtype)
        np.testing.assert_allclose(mine, other, rtol=rtol, atol=rtol)


def rand(shape: tuple, dtype: str = "float32", seed: int = 0) -> np.ndarray:
    """Reproducible random data of ``shape`` in [-2, 2)."""
    rng = np.random.default_rng(seed)
    return (rng.random(shape) * 4 - 2).astype(dtype)
