"""The table of the products, ``relaxjax.numpy.linalg``, polynomials and signal wrappers
(relaxjax/_numpy/contractions.py, linalg.py, polynomial.py, signal.py), run by
tests/ops/test_surface_linalg.py."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from surface_harness import NONEMPTY, Case  # noqa: E402

F, D, I, B = "float32", "float64", "int32", "bool"
X = (("n", 3), F)
V = (("n",), F)

SIZES_2 = ({"n": 2, "m": 1}, {"n": 3, "m": 3}, {"n": 5, "m": 2})
SQ = (("n", "n"), F)
SQUARE_SIZES = ({"n": 1, "m": 1}, {"n": 2, "m": 1}, {"n": 4, "m": 1})


def _spd(m, a):
    """``a @ a.T + n I``: symmetric positive definite and well conditioned."""
    n = a.shape[0]
    identity = (m.arange(n)[:, None] == m.arange(n)[None, :]).astype(a.dtype)
    return a @ a.T + identity * n


def _positive(rng, shape, dtype, position):
    return rng.uniform(0.5, 2.0, size=shape).astype(dtype)


def _sorted_points(rng, shape, dtype, position):
    """Increasing sample points for ``interp`` (position 1), values elsewhere."""
    if position == 1:
        return np.sort(rng.uniform(-2, 2, size=shape)).astype(dtype)
    return rng.uniform(-3, 3, size=shape).astype(dtype)


CASES = [
    # ------------------------------------------------------------------ products
    Case(
        ("outer", "inner", "vdot", "kron"),
        lambda m, x, v: (
            m.outer(x, v),
            m.outer(v, 2.0),
            m.inner(x, x),
            m.inner(v, v),
            m.inner(x, 2),
            m.vdot(x, x),
            m.kron(x, x[:2]),
            m.kron(v, x),
        ),
        (X, V),
        rtol=1e-4,
        dtype_sets=((I, I), (D, F)),
    ),
    Case(
        ("tensordot",),
        lambda m, a, b: (
            m.tensordot(a, b, axes=1),
            m.tensordot(a, b, 0),
            m.tensordot(a, a, axes=2),
            m.tensordot(a, b, axes=([1], [0])),
            m.tensordot(a, a, ((0, 1), (0, 1))),
            m.tensordot(a, b, (1, 0), preferred_element_type="float64"),
        ),
        (X, ((3, "m"), F)),
        rtol=1e-4,
        dtype_sets=((I, I), (F, D)),
    ),
    Case(
        ("vecdot", "matvec", "vecmat"),
        lambda m, x, y, w: (
            m.vecdot(x, y),
            m.vecdot(x, x, axis=0),
            m.matvec(w, y),
            m.vecmat(x[:, :2], w),
            m.matvec(w[None], x),
        ),
        (X, ((3,), F), ((2, 3), F)),
        rtol=1e-4,
        dtype_sets=((I, I, I), (F, D, F)),
    ),
    Case(
        ("cross",),
        lambda m, a, b: (
            m.cross(a, b),
            m.cross(a[:, :2], b),
            m.cross(a, b[:, :2]),
            m.cross(a[:, :2], b[:, :2]),
            m.cross(a.T, b.T, axisa=0, axisb=0),
            m.cross(a.T, b, axisa=0, axisc=0),
            m.cross(a.T, b.T, axis=0),
        ),
        (X, X),
        rtol=1e-4,
        dtype_sets=((I, I), (F, D)),
    ),
    # ------------------------------------------------------------------ linalg
    Case(
        ("linalg.norm", "linalg.vector_norm", "linalg.matrix_norm"),
        lambda m, x: (
            m.linalg.norm(x),
            m.linalg.norm(x, axis=1),
            m.linalg.norm(x, 1, axis=0),
            m.linalg.norm(x, np.inf, axis=-1, keepdims=True),
            m.linalg.norm(x, "fro"),
            m.linalg.norm(x, 1),
            m.linalg.norm(x, -1, keepdims=True),
            m.linalg.norm(x, np.inf),
            m.linalg.norm(x, -np.inf, axis=(1, 0)),
            m.linalg.norm(x[0], ord=3),
            m.linalg.vector_norm(x),
            m.linalg.vector_norm(x, ord=0, axis=0),
            m.linalg.vector_norm(x, ord=-np.inf, axis=1),
            m.linalg.vector_norm(x, ord=0.5, axis=(0, 1), keepdims=True),
            m.linalg.matrix_norm(x),
            m.linalg.matrix_norm(x[None], ord=1, keepdims=True),
        ),
        (X,),
        sizes=NONEMPTY,
        rtol=1e-4,
        dtype_sets=((D,),),
    ),
    Case(
        (
            "linalg.matmul",
            "linalg.outer",
            "linalg.tensordot",
            "linalg.vecdot",
            "linalg.trace",
            "linalg.diagonal",
            "linalg.matrix_transpose",
            "linalg.cross",
        ),
        lambda m, x, v: (
            m.linalg.matmul(x, x.T),
            m.linalg.matmul(x, x.T, preferred_element_type="float64"),
            m.linalg.outer(v, v),
            m.linalg.tensordot(x, x.T, axes=1),
            m.linalg.vecdot(x, x),
            m.linalg.trace(x),
            m.linalg.trace(x[None], offset=1, dtype="float64"),
            m.linalg.diagonal(x, offset=-1),
            m.linalg.matrix_transpose(x[None]),
            m.linalg.cross(x, x[::-1], axis=-1),
        ),
        (X, V),
        rtol=1e-4,
        dtype_sets=((I, I),),
    ),
    # ------------------------------------------------------------------ factorisations
    Case(
        ("linalg.det", "linalg.slogdet", "linalg.inv", "linalg.solve", "linalg.cholesky"),
        lambda m, a, b: (
            m.linalg.det(_spd(m, a)),
            m.linalg.slogdet(a),
            m.linalg.inv(_spd(m, a)),
            m.linalg.solve(_spd(m, a), b),
            m.linalg.solve(_spd(m, a), b[:, 0]),
            m.linalg.solve(_spd(m, a)[None], b[None]),
            m.linalg.cholesky(_spd(m, a)),
            m.linalg.cholesky(_spd(m, a), upper=True),
        ),
        (SQ, (("n", 2), F)),
        sizes=SQUARE_SIZES,
        rtol=1e-3,
        dtype_sets=((D, D), (I, I)),
    ),
    Case(
        ("linalg.qr", "linalg.eigh", "linalg.eigvalsh", "linalg.svd", "linalg.svdvals"),
        lambda m, a: (
            m.abs(m.linalg.qr(a, mode="r")),
            m.abs(m.linalg.qr(a).R),
            m.linalg.eigvalsh(_spd(m, a)),
            m.linalg.eigvalsh(a, UPLO="U", symmetrize_input=False),
            m.linalg.eigh(_spd(m, a)).eigenvalues,
            m.linalg.svdvals(a),
            m.linalg.svd(a, compute_uv=False),
            m.linalg.svd(a[:, :2], full_matrices=False).S,
        ),
        (SQ,),
        sizes=SQUARE_SIZES,
        rtol=1e-3,
        dtype_sets=((D,),),
    ),
    Case(
        (
            "linalg.pinv",
            "linalg.matrix_rank",
            "linalg.cond",
            "linalg.lstsq",
            "linalg.matrix_power",
            "linalg.multi_dot",
            "linalg.tensorinv",
            "linalg.tensorsolve",
        ),
        lambda m, a, b: (
            m.linalg.pinv(a),
            m.linalg.pinv(a[:, :2], rtol=1e-3),
            m.linalg.matrix_rank(a),
            m.linalg.matrix_rank(a[:, :1] * a[:1, :]),
            m.linalg.matrix_rank(b[:, 0], tol=0.5),
            m.linalg.cond(_spd(m, a)),
            m.linalg.cond(_spd(m, a), 1),
            m.linalg.lstsq(a, b),
            m.linalg.lstsq(a, b[:, 0], rcond=1e-3),
            m.linalg.matrix_power(a, 3),
            m.linalg.matrix_power(_spd(m, a), -2),
            m.linalg.matrix_power(a, 0),
            m.linalg.multi_dot([b[:, 0], a, a, b]),
            m.linalg.tensorinv(_spd(m, a), ind=1),
            m.linalg.tensorsolve(_spd(m, a), b[:, 1]),
            m.linalg.norm(a, 2),
            m.linalg.norm(a, -2, keepdims=True),
            m.linalg.norm(a[None], "nuc", axis=(2, 1)),
        ),
        (SQ, (("n", 2), F)),
        sizes=SQUARE_SIZES,
        rtol=1e-3,
        dtype_sets=((D, D),),
    ),
    # ------------------------------------------------------------------ polynomials
    Case(
        ("convolve", "correlate"),
        lambda m, a, v: (
            m.convolve(a, v),
            m.convolve(v, a, mode="same"),
            m.convolve(a, v, "valid"),
            m.correlate(a, v),
            m.correlate(v, a, mode="same"),
            m.correlate(a, v, mode="full"),
            m.convolve(a, v, preferred_element_type="float64"),
        ),
        (V, (("m",), F)),
        sizes=({"n": 1, "m": 1}, {"n": 2, "m": 5}, {"n": 6, "m": 3}, {"n": 4, "m": 4}),
        rtol=1e-4,
        dtype_sets=((I, I), (D, B)),
    ),
    Case(
        ("polyval", "polyadd", "polysub", "polymul"),
        lambda m, p, q, x: (
            m.polyval(p, x),
            m.polyval(q, x),
            m.polyval(p, 2.0),
            m.polyadd(p, q),
            m.polyadd(q, p),
            m.polysub(p, q),
            m.polymul(p, q),
        ),
        (V, ((3,), F), ((2, 2), F)),
        sizes=NONEMPTY,
        rtol=1e-4,
        dtype_sets=((I, I, I), (D, F, I)),
    ),
    Case(
        ("polyder", "polyint", "polydiv", "poly", "vander"),
        lambda m, p, q, r: (
            m.polyder(p),
            m.polyder(p, 2),
            m.polyder(p, m=0),
            m.polyint(p),
            m.polyint(p, 2, k=1.5),
            m.polyint(p, m=2, k=np.array([1.0, 2.0])),
            m.polydiv(q, r),
            m.polydiv(r, q),
            m.poly(r),
            m.poly(q[:0]),
            m.vander(p),
            m.vander(q, 2, increasing=True),
            m.vander(r, N=0),
        ),
        (V, ((4,), F), ((2,), F)),
        data=_positive,
        rtol=1e-4,
        dtype_sets=((I, I, I), (D, D, F)),
    ),
    Case(
        ("polyfit",),
        lambda m, x, y, w: (
            m.polyfit(x, y, 2),
            m.polyfit(x, y[:, None] * m.ones(2), 1, full=True),
            m.polyfit(x, y, 1, w=w, cov=True),
            m.polyfit(x, y, 0, cov="unscaled"),
            m.polyfit(x, y, 3, rcond=1e-3),
        ),
        ((("n",), F), (("n",), F), (("n",), F)),
        data=_positive,
        sizes=({"n": 5, "m": 1}, {"n": 6, "m": 1}, {"n": 9, "m": 1}),
        rtol=1e-3,
        dtype_sets=((D, D, D),),
    ),
    # ------------------------------------------------------------------ signal
    Case(
        ("diff", "ediff1d"),
        lambda m, x, v: (
            m.diff(x),
            m.diff(x, 2, axis=-1),
            m.diff(x, axis=0),
            m.diff(x, n=0),
            m.diff(v, prepend=1.0, append=v[:2]),
            m.diff(x > 0, axis=1),
            m.ediff1d(x),
            m.ediff1d(v, to_end=np.array([9.0, 8.0]), to_begin=-1),
        ),
        (X, V),
        edge=True,
        dtype_sets=((I, I), ("int8", D)),
    ),
    Case(
        ("gradient", "trapezoid"),
        lambda m, x, t: (
            m.gradient(x),
            m.gradient(x, axis=1),
            m.gradient(x, 2.0, axis=0),
            m.gradient(x, t, axis=0),
            m.gradient(x, 0.5, 2.0),
            m.trapezoid(x),
            m.trapezoid(x, dx=0.5, axis=0),
            m.trapezoid(x, x=t[:, None] * m.ones(3), axis=0),
            m.trapezoid(x.T, x=t),
        ),
        (X, (("n",), F)),
        data=_sorted_points,
        sizes=SIZES_2,
        rtol=1e-4,
        dtype_sets=((I, D),),
    ),
    Case(
        ("interp",),
        lambda m, x, xp, fp: (
            m.interp(x, xp, fp),
            m.interp(x, xp, fp, left=-9.0, right=9.0),
            m.interp(x, xp, fp, left="extrapolate", right="extrapolate"),
            m.interp(x[0], xp, fp),
        ),
        (X, (("m",), F), (("m",), F)),
        data=_sorted_points,
        sizes=({"n": 1, "m": 1}, {"n": 2, "m": 2}, {"n": 3, "m": 5}),
        rtol=1e-4,
        dtype_sets=((D, F, I),),
    ),
    Case(
        ("cov", "corrcoef"),
        lambda m, x, y, w: (
            m.cov(x),
            m.cov(x, rowvar=False),
            m.cov(x, bias=True),
            m.cov(x, ddof=0, dtype="float64"),
            m.cov(x, x, rowvar=False),
            m.cov(x[0], fweights=w, aweights=y[:3]),
            m.cov(x, rowvar=False, aweights=y),
            m.corrcoef(x),
            m.corrcoef(x, rowvar=False),
            m.corrcoef(x[0], y[:3]),
        ),
        ((("n", 3), F), (("n",), F), ((3,), I)),
        data=lambda rng, shape, dtype, k: (
            rng.integers(1, 4, size=shape) if k == 2 else rng.uniform(0.1, 3, size=shape)
        ).astype(dtype),
        sizes=({"n": 3, "m": 1}, {"n": 4, "m": 3}),
        rtol=1e-4,
        dtype_sets=((I, D, I),),
    ),
    Case(
        ("bartlett", "blackman", "hamming", "hanning", "kaiser"),
        lambda m, x: (
            m.bartlett(x.shape[0]),
            m.blackman(x.shape[0]),
            m.hamming(x.shape[0]),
            m.hanning(x.shape[0]),
            m.hamming(5),
            m.blackman(1),
            m.bartlett(0),
            m.kaiser(6, 2.5),
            m.kaiser(x.shape[0], 3.5),
            m.kaiser(4, x[0]),
            m.kaiser(x.shape[0], x[-1]),
        ),
        (V,),
        data=lambda rng, shape, dtype, k: rng.uniform(0.0, 6.0, size=shape).astype(dtype),
        sizes=NONEMPTY,
    ),
]
