"""The table of the array-manipulation wrappers (relaxjax/_numpy/manipulation.py), run by
tests/ops/test_surface_manipulation.py with the harness of surface_harness.py."""

from __future__ import annotations

import sys
from pathlib import Path

import jax.numpy as jnp
import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from surface_harness import NONEMPTY, Case  # noqa: E402

F, D, I, B = "float32", "float64", "int32", "bool"
X = (("n", 3), F)
V = (("n",), F)
NUMERIC = ((D,), (I,), (B,))


def _counts(rng, shape, dtype, position):
    """Repeat counts in [0, 3) (int data of the first operand otherwise)."""
    if position == 1:
        return rng.integers(0, 3, size=shape).astype(dtype)
    return rng.uniform(-3, 3, size=shape).astype(dtype)


def _sparse(rng, shape, dtype, position):
    """Mostly zeros, so trim_zeros and delete have work to do."""
    values = rng.integers(-2, 3, size=shape) * (rng.random(shape) < 0.4)
    return values.astype(dtype)


CASES = [
    Case(
        ("flip", "fliplr", "flipud"),
        lambda m, x: (m.flip(x), m.flip(x, axis=1), m.fliplr(x), m.flipud(x), m.flip(x, (0, -1))),
        (X,),
        edge=True,
        dtype_sets=NUMERIC,
    ),
    Case(
        ("roll",),
        lambda m, x: (
            m.roll(x, 2, axis=0),
            m.roll(x, -4, axis=1),
            m.roll(x, (1, 2), axis=(0, 1)),
            m.roll(x, 5),
            m.roll(x, shift=-1, axis=-1),
        ),
        (X,),
        dtype_sets=NUMERIC,
    ),
    Case(
        ("roll",),
        lambda m, x, s: (m.roll(x, s[0], axis=0), m.roll(x, s[1:3], axis=(0, 1))),
        (X, ((3,), "int32")),
        label="roll-traced-shift",
        low=-7,
        high=7,
    ),
    Case(
        ("rot90",),
        lambda m, x: (m.rot90(x), m.rot90(x, 2), m.rot90(x, k=3), m.rot90(x, -1, axes=(1, 0))),
        (X,),
        dtype_sets=NUMERIC,
    ),
    Case(
        ("repeat",),
        lambda m, x: (
            m.repeat(x, 2, axis=0),
            m.repeat(x, 3, axis=-1),
            m.repeat(x, 2),
            m.repeat(x, np.array([1, 0, 2]), axis=1),
            m.repeat(x, np.array([2, 1, 0]), axis=1, total_repeat_length=5),
        ),
        (X,),
        dtype_sets=NUMERIC,
    ),
    Case(
        ("repeat",),
        lambda m, x, r: m.repeat(x, r, axis=0),
        (X, (("n",), I)),
        data=_counts,
        label="repeat-traced-counts",
        shapes=False,
        jax_fn=lambda x, r: np.repeat(x, r, axis=0),
    ),
    Case(
        ("repeat",),
        lambda m, x, r: (m.repeat(x, r, axis=1, total_repeat_length=4), m.repeat(x[0], 3)),
        (X, ((3,), I)),
        data=_counts,
        sizes=NONEMPTY,
        label="repeat-total-length",
    ),
    Case(
        ("tile",),
        lambda m, x, v: (m.tile(x, 2), m.tile(x, (2, 1)), m.tile(v, (2, 1, 2)), m.tile(v, 0)),
        (X, V),
        dtype_sets=((D, D), (I, I), (B, B)),
    ),
    Case(
        ("resize",),
        lambda m, v: (m.resize(v, (2, 3)), m.resize(v, 7), m.resize(v, (0,))),
        (V,),
        sizes=NONEMPTY,
        dtype_sets=((I,),),
    ),
    Case(
        ("moveaxis", "rollaxis", "permute_dims", "matrix_transpose"),
        lambda m, x: (
            m.moveaxis(x, 0, -1),
            m.moveaxis(x, (0, 1), (2, 0)),
            m.rollaxis(x, 2),
            m.rollaxis(x, 0, 2),
            m.permute_dims(x, (1, 2, 0)),
            m.matrix_transpose(x),
        ),
        ((("n", 2, 3), F),),
        dtype_sets=((B,),),
    ),
    Case(
        ("ravel",),
        lambda m, x: (m.ravel(x), m.ravel(x, order="F"), m.ravel(x[0, 0])),
        (X,),
        sizes=NONEMPTY,
        dtype_sets=NUMERIC,
    ),
    Case(
        ("hstack", "vstack", "dstack", "column_stack", "concat"),
        lambda m, x, v: (
            m.hstack([x, x]),
            m.hstack((v, v), dtype="float64"),
            m.vstack([x, v[:3]]),
            m.vstack((v, v)),
            m.dstack([x, x]),
            m.dstack([v, v]),
            m.column_stack([v, v, m.zeros((v.shape[0], 2), "float32")]),
            m.concat([x, x], axis=1),
            m.concat([v, v]),
        ),
        ((("n", 3), F), ((3,), F)),
        dtype_sets=((I, I), (D, I), (B, B)),
    ),
    Case(
        ("block", "append"),
        lambda m, x, y: (
            m.block([[x, x], [x, x]]),
            m.block([x, x[:, :1]]),
            m.block([[y], [y]]),
            m.append(x, y),
            m.append(x, x, axis=0),
            m.append(y, 2.5),
        ),
        (X, (("m",), F)),
        dtype_sets=((I, D), (B, I)),
    ),
    Case(
        ("array_split", "hsplit", "vsplit", "dsplit"),
        lambda m, x: (
            m.array_split(x, 3),
            m.array_split(x, 2, axis=1),
            m.array_split(x, [1, 2], axis=1),
            m.hsplit(x, 3),
            m.hsplit(x[:, 0], [0]),
            m.vsplit(x, [0]),
            m.dsplit(x[:, :, None], 1),
        ),
        (X,),
        dtype_sets=NUMERIC,
    ),
    Case(
        ("unstack",),
        lambda m, x: (m.unstack(x, axis=1), m.unstack(x.T)),
        ((("n", 2), F),),
        dtype_sets=((B,),),
    ),
    Case(
        ("broadcast_shapes",),
        lambda m, x, y: m.zeros(m.broadcast_shapes(x.shape, (1, 3), y.shape[:1] + (1,))),
        (X, (("n",), F)),
        dtype_sets=((I, I),),
    ),
    Case(
        ("broadcast_arrays", "atleast_1d", "atleast_2d", "atleast_3d"),
        lambda m, x, v, s: (
            m.broadcast_arrays(x, v[:3], s),
            m.broadcast_arrays(s, 1.5),
            m.atleast_1d(s),
            m.atleast_1d(x, s),
            m.atleast_2d(v),
            m.atleast_2d(s, v, x),
            m.atleast_3d(s),
            m.atleast_3d(v),
            m.atleast_3d(x, x[None]),
        ),
        (X, ((3,), F), ((), F)),
        dtype_sets=((I, I, I), (D, F, B)),
    ),
    Case(
        ("insert",),
        lambda m, x, v: (
            m.insert(x, 1, x[:, 0], axis=1),
            m.insert(x, np.array([0, 2, 2]), 7.0, axis=1),
            m.insert(x, -1, v[:1], axis=1),
            m.insert(x, 2, 5),
            m.insert(v, slice(0, 3, 2), 9),
            m.insert(x, 0, 1.5, axis=0),
        ),
        (X, ((3,), F)),
        dtype_sets=((B, B),),
    ),
    Case(
        ("delete",),
        lambda m, x, v: (
            m.delete(x, 1, axis=1),
            m.delete(x, np.array([0, 2, 2]), axis=1),
            m.delete(x, slice(1, None), axis=1),
            m.delete(x, np.array([True, False, True]), axis=1),
            m.delete(v, 0),
        ),
        (X, ((4,), F)),
        dtype_sets=((I, I), (B, B)),
    ),
    Case(
        ("trim_zeros",),
        lambda m, v, x: (
            m.trim_zeros(v),
            m.trim_zeros(v, "f"),
            m.trim_zeros(v, trim="b"),
            m.trim_zeros(x),
            m.trim_zeros(x, axis=0),
        ),
        ((("n",), I), (("n", 3), F)),
        data=_sparse,
        shapes=False,
        jax_fn=lambda v, x: (
            np.trim_zeros(v),
            np.trim_zeros(v, "f"),
            np.trim_zeros(v, trim="b"),
            jnp.trim_zeros(x),
            jnp.trim_zeros(x, axis=0),
        ),
    ),
]
