"""The table of the selection and index-trick wrappers (relaxjax/_numpy/selection.py,
relaxjax/_numpy/index_tricks.py), run by tests/ops/test_surface_indexing.py."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from surface_harness import NONEMPTY, Case  # noqa: E402

F, D, I, B = "float32", "float64", "int32", "bool"
X = (("n", 3), F)
SQUARE = (("n", "n"), F)
NUMERIC = ((D,), (I,), (B,))


def _indices(rng, shape, dtype, position):
    """Indices in [-4, 5): some negative, some out of range of a size-3 axis."""
    if position == 0:
        return rng.uniform(-3, 3, size=shape).astype(dtype)
    return rng.integers(-4, 5, size=shape).astype(dtype)


def _small_ints(rng, shape, dtype, position):
    return rng.integers(-1, 4, size=shape).astype(dtype)


CASES = [
    Case(
        ("take_along_axis",),
        lambda m, x, i: (
            m.take_along_axis(x, i, axis=1),
            m.take_along_axis(x, i, 1, mode="clip"),
            m.take_along_axis(x, i, axis=-1, fill_value=-1.0),
            m.take_along_axis(x, i[:1], axis=0, mode="clip"),
            m.take_along_axis(x, i[:, :1], axis=1),
            m.take_along_axis(x[:, :1], i, axis=0, mode="clip"),
            m.take_along_axis(x, m.ravel(i)[:2], axis=None, mode="clip"),
        ),
        (X, (("n", 3), I)),
        data=_indices,
        sizes=NONEMPTY,
        dtype_sets=((D, "int64"), (I, "int8"), (B, I)),
    ),
    Case(
        ("put", "put_along_axis"),
        lambda m, x, i: (
            m.put(x, i, 5, inplace=False),
            m.put(x, i, 5, mode="clip", inplace=False),
            m.put(x, i, 2, mode="wrap", inplace=False),
            m.put(x, m.ravel(i)[:1], x[:1, :1] * 3, mode="wrap", inplace=False),
            m.put(x, i[:, :2], x[0], mode="clip", inplace=False)[:1],
            m.put_along_axis(x, i, 7, axis=1, inplace=False),
            m.put_along_axis(x, i[:, :1], x[:, 1:2], axis=1, inplace=False),
            m.put_along_axis(x, i[:, :1], x[:, :1], axis=-1, inplace=False, mode="clip"),
            m.put_along_axis(x, m.ravel(i)[:1], 2, axis=None, inplace=False),
        ),
        (X, (("n", 3), I)),
        data=_indices,
        sizes=NONEMPTY,
        dtype_sets=((D, "int64"), (I, "int8"), (B, I)),
    ),
    Case(
        ("choose", "select", "piecewise"),
        lambda m, a, x: (
            m.choose(a, [x, -x, 2 * x], mode="clip"),
            m.choose(a, (x, x + 1), mode="wrap"),
            m.select([x > 1, x < -1], [x, -x]),
            m.select([a == 0, x > 0], [x, a], default=-2.5),
            m.piecewise(x, [x < 0, x > 1], [lambda v: v * 2, 7, lambda v: -v]),
            m.piecewise(x, [x > 0], [lambda v: v**2]),
        ),
        ((("n", 3), I), X),
        data=_small_ints,
        dtype_sets=((I, D), ("int64", I)),
    ),
    Case(
        ("extract",),
        lambda m, x: (m.extract(x > 0, x), m.extract(x, x * 2)),
        (X,),
        shapes=False,
        jax_fn=lambda x: (np.extract(x > 0, x), np.extract(x, x * 2)),
    ),
    Case(
        ("extract",),
        lambda m, x: (m.extract(x > 0, x, size=3), m.extract(x > 0, x, size=2, fill_value=-1)),
        (X,),
        label="extract-size",
        sizes=NONEMPTY,
        dtype_sets=NUMERIC,
    ),
    Case(
        ("place", "fill_diagonal"),
        lambda m, x, c, v: (
            m.place(x, x > 0, v, inplace=False),
            m.place(x, c, 5.0, inplace=False),
            m.fill_diagonal(x, 9.0, inplace=False),
            m.fill_diagonal(x, v, inplace=False),
            m.fill_diagonal(c, True, inplace=False),
        ),
        (X, (("n", 3), B), ((2,), F)),
        dtype_sets=((I, B, F), (D, B, I)),
    ),
    Case(
        ("fill_diagonal",),
        lambda m, x: m.fill_diagonal(x, -1, inplace=False),
        ((("n", "n", "n"), F),),
        label="fill_diagonal-3d",
    ),
    Case(
        ("diagonal", "diag", "diagflat", "trace"),
        lambda m, x, v: (
            m.diagonal(x),
            m.diagonal(x, 1),
            m.diagonal(x, offset=-1),
            m.diag(x, k=2),
            m.diag(v),
            m.diag(v, -2),
            m.diag(v, k=1),
            m.diagflat(x),
            m.diagflat(v, 1),
            m.trace(x),
            m.trace(x, 1, dtype="float64"),
        ),
        (X, (("n",), F)),
        edge=True,
        dtype_sets=((I, I), (B, B), (D, "int8")),
    ),
    Case(
        ("diagonal", "trace"),
        lambda m, x: (
            m.diagonal(x, 0, 0, 2),
            m.diagonal(x, -1, axis1=2, axis2=1),
            m.trace(x, 1, 1, 0),
        ),
        ((("n", 2, 4), F),),
        label="diagonal-3d",
        dtype_sets=((I,),),
    ),
    Case(
        ("tril_indices", "triu_indices", "tril_indices_from", "triu_indices_from"),
        lambda m, x: (
            m.tril_indices(x.shape[0]),
            m.tril_indices(x.shape[0], 1, 3),
            m.triu_indices(x.shape[0], k=-1, m=x.shape[1]),
            m.triu_indices(3, 2),
            m.tril_indices_from(x, -2),
            m.triu_indices_from(x),
        ),
        (X,),
    ),
    Case(
        ("diag_indices", "diag_indices_from", "mask_indices", "ix_"),
        lambda m, x, v: (
            m.diag_indices(x.shape[0]),
            m.diag_indices(4, ndim=3),
            m.diag_indices_from(x),
            m.mask_indices(3, m.triu, 1, size=3),
            m.ix_(v, v[:2], m.arange(3)),
        ),
        (SQUARE, (("n",), I)),
        sizes=NONEMPTY,  # ix_ of a statically empty array is int64 (jax), see the tests
    ),
    Case(
        ("ravel_multi_index", "unravel_index"),
        lambda m, i, j: (
            m.ravel_multi_index((i, j), (4, 3), mode="clip"),
            m.ravel_multi_index((i, j), (5, 2), mode="wrap", order="F"),
            m.unravel_index(i * 3 + j, (4, 3)),
            m.unravel_index(i, (2, 2, 2)),
        ),
        ((("n",), I), (("n",), "int64")),
        data=lambda rng, shape, dtype, k: rng.integers(-2, 6, size=shape).astype(dtype),
        dtype_sets=(("int64", "int8"),),
    ),
    Case(
        ("mgrid", "ogrid", "r_", "c_", "s_", "index_exp"),
        lambda m, x, v: (
            m.mgrid[0 : x.shape[0], 1:4:2],
            m.mgrid[0:1:5j],
            m.ogrid[0 : x.shape[0], 0:3],
            m.r_[v, 0, 1:4],
            m.r_["0,2", v, v],
            m.r_["0,2,0", v, v],
            m.r_["c", v, v],
            m.c_[x, x],
            m.c_[v, v],
            m.c_["r", v, v],
            x[m.s_[1:, ::-1]],
            x[m.index_exp[:, 1]],
        ),
        (X, (("n",), F)),
    ),
]
