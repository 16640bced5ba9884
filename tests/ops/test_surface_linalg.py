"""Products, relaxjax.numpy.linalg, polynomials and signal functions against jax: the
table of surface_linalg.py (values through jit at several sizes, shapes through
eval_shape, eager evaluation, over dtypes), symbolic shapes, and every refused input."""

from __future__ import annotations

import sys
from pathlib import Path

import jax
import numpy as np
import pytest

import relaxjax as relax
import relaxjax.numpy as rnp
from relaxjax import arith
from relaxjax._numpy import contractions, factorizations, linalg, polynomial, signal
from relaxjax.errors import LoweringError

sys.path.insert(0, str(Path(__file__).parent))
from surface_harness import check_eager, check_shapes, check_values, covered_names  # noqa: E402
from surface_linalg import CASES  # noqa: E402

IDS = [case.id for case in CASES]


def test_every_name_has_a_case():
    names = set(contractions.__all__) | set(polynomial.__all__) | set(signal.__all__)
    names |= {f"linalg.{name}" for name in (*linalg.__all__, *factorizations.__all__)}
    names -= {"linalg.EighResult", "linalg.QRResult", "linalg.SVDResult", "linalg.SlogdetResult"}
    assert names - covered_names(CASES) == set()


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_values_through_jit(case):
    check_values(case)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_shapes_through_eval_shape(case):
    check_shapes(case)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_eager(case):
    check_eager(case)


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_eager_over_dtypes(case):
    check_eager(case, dtype_sets=True)


# --------------------------------------------------------------------------- symbolic shapes

N3 = relax.Tensor(("n", 3), "float32")
VN = relax.Tensor(("n",), "float32")
VM = relax.Tensor(("m",), "float32")


def _text(spec) -> str:
    shape = spec.shape
    return "(" + ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"


@pytest.mark.parametrize(
    ("fn", "specs", "expected"),
    [
        (lambda a, b: rnp.convolve(a, b), (VN, VM), "(m + n - 1,)"),
        (lambda a, b: rnp.convolve(a, b, "same"), (VN, VM), "(max(m, n),)"),
        (lambda a, b: rnp.correlate(a, b), (VN, VM), "(-min(m, n) + max(m, n) + 1,)"),
        (lambda a, b: rnp.polyadd(a, b), (VN, VM), "(max(m, n),)"),
        (lambda a, b: rnp.polymul(a, b), (VN, VM), "(m + n - 1,)"),
        (lambda a: rnp.polyder(a, 2), (VN,), "(max(2, n) - 2,)"),
        (lambda a: rnp.polyint(a, 2), (VN,), "(n + 2,)"),
        (lambda a, b: rnp.polyval(a, b), (VN, VM), "(m,)"),
        (lambda a: rnp.vander(a), (VN,), "(n, n)"),
        (lambda x: rnp.diff(x, axis=0), (N3,), "(max(1, n) - 1, 3)"),
        (lambda x: rnp.diff(x, 2), (N3,), "(n, 1)"),
        (lambda a: rnp.ediff1d(a, to_end=1.0), (VN,), "(max(1, n),)"),
        (lambda x: rnp.gradient(x, axis=0), (N3,), "(n, 3)"),
        (lambda x: rnp.trapezoid(x, axis=0), (N3,), "(3,)"),
        (lambda a, b: rnp.interp(a, b, b), (VN, VM), "(n,)"),
        (lambda x: rnp.cov(x), (N3,), "(n, n)"),
        (lambda x: rnp.corrcoef(x, rowvar=False), (N3,), "(3, 3)"),
        (lambda a: rnp.hamming(a.shape[0]), (VN,), "(n,)"),
        (lambda x: rnp.kron(x, x), (N3,), "(n * n, 9)"),
        (lambda x, b: rnp.tensordot(x, b, axes=0), (N3, VM), "(n, 3, m)"),
        (lambda x: rnp.linalg.norm(x, axis=1), (N3,), "(n,)"),
    ],
)
def test_symbolic_shapes_are_exact(fn, specs, expected):
    assert _text(relax.eval_shape(fn, *specs)) == expected


def test_convolution_of_symbolic_lengths_runs_for_either_order():
    @relax.jit
    def f(a: VN, v: VM):
        return tuple(rnp.convolve(a, v, mode) for mode in ("full", "same", "valid")) + tuple(
            rnp.correlate(a, v, mode) for mode in ("full", "same", "valid")
        )

    for n, m in ((1, 4), (4, 1), (2, 5), (5, 2), (3, 3)):
        a, v = np.arange(1.0, n + 1, dtype=np.float32), np.arange(m, dtype=np.float32) - 1.5
        ours = f(a, v)
        for k, mode in enumerate(("full", "same", "valid")):
            np.testing.assert_allclose(ours[k], np.convolve(a, v, mode), rtol=1e-5)
            np.testing.assert_allclose(ours[3 + k], np.correlate(a, v, mode), rtol=1e-5)
    assert f.cache_size() == 1
    with pytest.raises(relax.ShapeError, match="inputs cannot be empty"):
        f(np.zeros(0, np.float32), np.ones(2, np.float32))


def test_polyval_of_a_symbolic_length_sums_powers():
    @relax.jit
    def f(p: VN, x: VM):
        return rnp.polyval(p, x)

    x = np.linspace(-2, 2, 5).astype(np.float32)
    for n in (0, 1, 4):
        p = np.arange(1, n + 1, dtype=np.float32)
        np.testing.assert_allclose(f(p, x), np.polyval(p, x) if n else np.zeros(5), rtol=1e-5)


def test_windows_of_a_symbolic_length_match_numpy():
    @relax.jit
    def f(a: VN):
        n = a.shape[0]
        return rnp.hamming(n), rnp.hanning(n), rnp.bartlett(n), rnp.blackman(n)

    for n in (0, 1, 2, 7):
        for ours, theirs in zip(
            f(np.zeros(n, np.float32)), (np.hamming, np.hanning, np.bartlett, np.blackman)
        ):
            np.testing.assert_allclose(ours, theirs(n), atol=1e-12)


def test_cov_of_a_symbolic_variable_count_stays_two_dimensional():
    spec = relax.eval_shape(lambda x: rnp.cov(x), relax.Tensor(("n", 5), "float32"))
    assert spec.shape == (arith.sym("n"),) * 2


# --------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: rnp.outer(np.ones(2), np.ones(2), out=1), NotImplementedError, "'out'"),
        (lambda: rnp.tensordot(np.ones(2), np.ones(2), 3), TypeError, "exceeds input ranks"),
        (lambda: rnp.tensordot(np.ones(2), np.ones(2), "x"), TypeError, "axes argument"),
        (lambda: rnp.tensordot(np.ones(2), np.ones(2), ([0], [0, 0])), TypeError, "equal length"),
        (lambda: rnp.tensordot(np.ones(2), np.ones(2), ([0], 0)), TypeError, "either ints"),
        (lambda: rnp.tensordot(np.ones(2), np.ones(3), 1), relax.ShapeError, "incompatible"),
        (lambda: rnp.vecdot(np.ones(2), np.ones(3)), ValueError, "axes must match"),
        (lambda: rnp.matvec(np.ones(2), np.ones(2)), ValueError, "at least 2"),
        (lambda: rnp.cross(np.ones(4), np.ones(3)), ValueError, "either 2 or 3"),
        (lambda: rnp.linalg.cross(np.ones(2), np.ones(2)), ValueError, "3-dimensional vectors"),
        (lambda: rnp.linalg.outer(np.ones((2, 2)), np.ones(2)), ValueError, "one-dimensional"),
        (lambda: rnp.linalg.det(np.ones((2, 3))), relax.ShapeError, "square matrices"),
        (lambda: rnp.linalg.det(np.ones(3)), relax.ShapeError, "at least 2 dimensions"),
        (lambda: rnp.linalg.inv(np.ones((2, 2), np.float16)), TypeError, "float32 and float64"),
        (lambda: rnp.linalg.solve(np.eye(2), np.ones(3)), relax.ShapeError, "does not match"),
        (lambda: rnp.linalg.qr(np.ones((2, 2)), mode="x"), ValueError, "Unsupported QR"),
        (lambda: rnp.linalg.eigh(np.eye(2), UPLO="X"), ValueError, "UPLO"),
        (lambda: rnp.linalg.slogdet(np.eye(2), method="x"), ValueError, "Unknown slogdet"),
        (lambda: rnp.linalg.svd(np.eye(2), subset_by_index=(0, 1)), NotImplementedError, "subset"),
        (lambda: rnp.linalg.matrix_power(np.eye(2), 1.5), TypeError, "exponent must be an integer"),
        (lambda: rnp.linalg.matrix_power(np.ones(2), 2), TypeError, "at least two-dimensional"),
        (lambda: rnp.linalg.matrix_power(np.ones((2, 3)), 2), TypeError, "square"),
        (lambda: rnp.linalg.multi_dot([np.eye(2)]), ValueError, "at least two arrays"),
        (
            lambda: rnp.linalg.multi_dot([np.eye(2), np.ones((2, 2, 2))]),
            ValueError,
            "two-dimensional",
        ),
        (lambda: rnp.linalg.tensorinv(np.eye(2), 0), ValueError, "positive integer"),
        (lambda: rnp.linalg.tensorsolve(np.eye(2), np.ones(3)), ValueError, "leading shape"),
        (lambda: rnp.linalg.lstsq(np.eye(2), np.ones(3)), ValueError, "Leading dimensions"),
        (lambda: rnp.linalg.lstsq(np.ones((2, 2, 2)), np.ones(2)), TypeError, "two-dimensional"),
        (lambda: rnp.linalg.matrix_rank(np.eye(2), 0.1, tol=0.1), ValueError, "only one of"),
        (lambda: rnp.linalg.norm(np.ones((2, 2)), 3), ValueError, "Invalid order '3'"),
        (lambda: rnp.linalg.norm(np.ones((2, 2)), "x", axis=(0, 1)), ValueError, "matrix norm"),
        (lambda: rnp.linalg.norm(np.ones((2, 2, 2)), 1), ValueError, "Improper number of axes"),
        (lambda: rnp.linalg.vector_norm(np.ones(2), ord="inf"), ValueError, "jax.numpy.inf"),
        (lambda: rnp.convolve(np.ones((2, 2)), np.ones(2)), ValueError, "1-dimensional"),
        (lambda: rnp.convolve(np.ones(2), np.ones(2), "x"), ValueError, "mode must be one of"),
        (lambda: rnp.correlate(np.ones(0), np.ones(2)), ValueError, "cannot be empty"),
        (lambda: rnp.polyval(np.float64(1.0), 2.0), ValueError, "at least 1-dimensional"),
        (lambda: rnp.polyder(np.ones(3), -1), ValueError, "must be positive"),
        (lambda: rnp.polyint(np.ones(3), -1), ValueError, "must be positive"),
        (lambda: rnp.polyint(np.ones(3), 2, k=np.ones(3)), ValueError, "length 1 or m"),
        (lambda: rnp.poly(np.ones((2, 2))), NotImplementedError, "eigvals"),
        (lambda: rnp.poly(np.ones((2, 3))), ValueError, "1d or non-empty square"),
        (lambda: rnp.vander(np.ones((2, 2))), ValueError, "one-dimensional"),
        (lambda: rnp.vander(np.ones(2), -1), ValueError, "nonnegative"),
        (lambda: rnp.diff(np.ones(3), -1), ValueError, "non-negative"),
        (lambda: rnp.diff(np.float64(1.0)), ValueError, "at least one dimensional"),
        (lambda: rnp.gradient(np.ones(3), edge_order=2), NotImplementedError, "edge_order"),
        (lambda: rnp.gradient(np.ones(1)), ValueError, "at least 2 elements"),
        (lambda: rnp.gradient(np.ones(3), 1.0, 2.0), TypeError, "spacing arguments"),
        (lambda: rnp.gradient(np.ones(3), np.ones(2)), ValueError, "same length"),
        (lambda: rnp.gradient(np.ones(3), np.ones((3, 1))), ValueError, "1D arrays or scalars"),
        (lambda: rnp.interp(1.0, np.ones(3), np.ones(2)), ValueError, "equal size"),
        (lambda: rnp.interp(1.0, np.ones(2), np.ones(2), left="x"), ValueError, "extrapolate"),
        (
            lambda: rnp.interp(1.0, np.ones(2), np.ones(2), period=1.0),
            NotImplementedError,
            "period",
        ),
        (lambda: rnp.cov(np.ones((2, 2, 2))), ValueError, "more than 2 dimensions"),
        (lambda: rnp.cov(np.ones((2, 2)), dtype="int32"), ValueError, "dtype must be"),
        (
            lambda: rnp.cov(np.ones((2, 2)), fweights=np.ones(2)),
            TypeError,
            "fweights must be integer",
        ),
        (
            lambda: rnp.cov(np.ones((2, 2)), aweights=np.ones(3)),
            RuntimeError,
            "incompatible numbers",
        ),
        (
            lambda: rnp.cov(np.ones((2, 2)), aweights=np.ones((2, 1))),
            RuntimeError,
            "multidimensional",
        ),
        (lambda: rnp.corrcoef(np.ones((2, 2)), dtype="int32"), ValueError, "dtype must be"),
        (lambda: rnp.hamming(1.5), TypeError, "must be an int"),
    ],
)
def test_bad_inputs_raise_clear_errors(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_functions_that_loop_over_coefficients_need_static_lengths():
    with pytest.raises(relax.TraceError, match="must be static"):
        relax.eval_shape(lambda a, b: rnp.polydiv(a, b), VN, VM)
    with pytest.raises(relax.TraceError, match="must be static"):
        relax.eval_shape(rnp.poly, VN)


# --------------------------------------------------------------------------- factorisations


SQ = relax.Tensor(("b", "n", "n"), "float64")


def test_factorisations_are_library_calls_in_the_ir():
    from relaxjax.runtime import build_executable

    @relax.jit
    def f(x: SQ):
        return rnp.linalg.inv(x), rnp.linalg.qr(x, mode="complete"), rnp.linalg.eigh(x)

    text = str(build_executable(f.trace(), library=True).module)
    for symbol in ("numpy.linalg.inv", "numpy.linalg.qr.mode_complete", "numpy.linalg.eigh."):
        assert f'call_extern(extern("{symbol}' in text
    with pytest.raises(LoweringError, match="is a library call"):
        f.lower()


def test_vectors_of_qr_eigh_svd_reconstruct_through_jit():
    @relax.jit
    def f(x: SQ):
        q, r = rnp.linalg.qr(x)
        w, v = rnp.linalg.eigh(x + rnp.swapaxes(x, -1, -2))
        u, s, vh = rnp.linalg.svd(x[:, :, :2], full_matrices=False)
        return q, r, w, v, u, s, vh

    rng = np.random.default_rng(3)
    for b, n in ((1, 1), (2, 3), (3, 5)):
        x = rng.normal(size=(b, n, n))
        q, r, w, v, u, s, vh = f(x)
        np.testing.assert_allclose(q @ r, x, atol=1e-10)
        np.testing.assert_allclose(np.triu(r), r)
        sym = x + x.swapaxes(-1, -2)
        np.testing.assert_allclose(v @ (w[..., None] * v.swapaxes(-1, -2)), sym, atol=1e-10)
        np.testing.assert_allclose(w, np.linalg.eigvalsh(sym), atol=1e-10)
        np.testing.assert_allclose((u * s[..., None, :]) @ vh, x[:, :, :2], atol=1e-10)
    assert f.cache_size() == 1


def test_failed_factorisations_give_nans_as_jax():
    singular = np.array([[1.0, 2.0], [2.0, 4.0]])
    assert np.isnan(rnp.linalg.inv(singular)).all()
    np.testing.assert_array_equal(
        rnp.linalg.cholesky(-np.eye(2)), np.asarray(jax.numpy.linalg.cholesky(-np.eye(2)))
    )
    stack = np.stack([np.eye(2), singular])
    inverses = rnp.linalg.inv(stack)
    np.testing.assert_array_equal(inverses[0], np.eye(2))
    assert np.isnan(inverses[1]).all()
