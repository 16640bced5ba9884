"""relaxjax.numpy's selection and index tricks against jax: the table of
surface_indexing.py (values through jit at several sizes, shapes through eval_shape, eager
evaluation, over dtypes), symbolic shapes, and every refused input."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import relaxjax as relax
import relaxjax.numpy as rnp
from relaxjax import arith
from relaxjax._numpy import index_tricks, selection, updates

sys.path.insert(0, str(Path(__file__).parent))
from surface_harness import check_eager, check_shapes, check_values, covered_names  # noqa: E402
from surface_indexing import CASES  # noqa: E402

IDS = [case.id for case in CASES]


def test_every_name_has_a_case():
    names = set(selection.__all__) | set(index_tricks.__all__) | set(updates.__all__)
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
NN = relax.Tensor(("n", "n"), "float32")
VN = relax.Tensor(("n",), "float32")


@pytest.mark.parametrize(
    ("fn", "spec", "expected"),
    [
        (lambda x: rnp.diagonal(x), N3, "(min(3, n),)"),
        (lambda x: rnp.diagonal(x, 1), NN, "(max(1, n) - 1,)"),
        (lambda v: rnp.diag(v, 2), VN, "(n + 2, n + 2)"),
        (lambda x: rnp.take_along_axis(x, rnp.zeros((1, 5), "int32"), 1), N3, "(n, 5)"),
        (lambda x: rnp.tril_indices(x.shape[0])[0], N3, "((n * n + n) // 2,)"),
        (lambda x: rnp.mgrid[0 : x.shape[0], 0:3], N3, "(2, n, 3)"),
        (lambda v: rnp.r_[v, v], VN, "(n * 2,)"),
        (lambda x: rnp.fill_diagonal(x, 1.0, inplace=False), N3, "(n, 3)"),
    ],
)
def test_symbolic_shapes_are_exact(fn, spec, expected):
    shape = relax.eval_shape(fn, spec).shape
    assert "(" + ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")" == (
        expected
    )


@pytest.mark.parametrize("k", [-3, -1, 0, 1, 2, 5])
def test_triangle_index_counts_are_jax_closed_form(k):
    n, m = arith.sym("n"), arith.sym("m")
    tril = relax.eval_shape(
        lambda x: rnp.tril_indices(x.shape[0], k, x.shape[1]), relax.Tensor((n, m), "float32")
    )
    triu = relax.eval_shape(
        lambda x: rnp.triu_indices(x.shape[0], k, x.shape[1]), relax.Tensor((n, m), "float32")
    )
    for rows in range(5):
        for columns in range(5):
            env = {"n": rows, "m": columns}
            assert arith.subs(tril[0].shape[0], env) == len(np.tril_indices(rows, k, columns)[0])
            assert arith.subs(triu[1].shape[0], env) == len(np.triu_indices(rows, k, columns)[0])


def test_triangle_indices_of_symbolic_sizes_through_jit():
    @relax.jit
    def f(x: N3):
        return rnp.tril_indices(x.shape[0], -1, 3), rnp.triu_indices_from(x, 1)

    for n in (0, 1, 4):
        (i, j), (p, q) = f(np.zeros((n, 3), np.float32))
        np.testing.assert_array_equal(i, np.tril_indices(n, -1, 3)[0])
        np.testing.assert_array_equal(j, np.tril_indices(n, -1, 3)[1])
        np.testing.assert_array_equal(p, np.triu_indices(n, 1, 3)[0])
        np.testing.assert_array_equal(q, np.triu_indices(n, 1, 3)[1])
    assert f.cache_size() == 1


def test_mask_indices_without_size_are_data_dependent():
    i, j = rnp.mask_indices(4, rnp.tril, -1)
    np.testing.assert_array_equal(i, np.mask_indices(4, np.tril, -1)[0])
    np.testing.assert_array_equal(j, np.mask_indices(4, np.tril, -1)[1])
    spec = relax.eval_shape(lambda x: rnp.mask_indices(x.shape[0], rnp.triu), N3)
    assert isinstance(spec[0].shape[0], arith.Sym)


def test_ix_of_an_empty_array_is_int64_as_jax():
    (a, b) = rnp.ix_(np.zeros(0, np.int32), np.arange(2, dtype=np.int32))
    assert a.dtype == np.int64 and a.shape == (0, 1) and b.dtype == np.int32


def test_index_objects_print_their_names():
    assert repr(rnp.mgrid) == "relaxjax.numpy.mgrid" and repr(rnp.c_) == "relaxjax.numpy.c_"
    assert rnp.s_[1:2] == slice(1, 2) and rnp.index_exp[1] == (1,)


# --------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: rnp.take_along_axis(np.ones((2, 2)), np.ones((2, 2)), 0), TypeError, "integer"),
        (
            lambda: rnp.take_along_axis(np.ones((2, 2)), np.ones(2, int), 0),
            ValueError,
            "same number of dimensions",
        ),
        (
            lambda: rnp.take_along_axis(np.ones((2, 2)), np.ones((1, 1), int), None),
            ValueError,
            "1D if axis=None",
        ),
        (
            lambda: rnp.take_along_axis(np.ones(2), np.ones(1, int), 0, mode="wrap"),
            ValueError,
            "'fill' or 'clip'",
        ),
        (
            lambda: rnp.take_along_axis(np.ones((2, 3)), np.ones((3, 1), int), 1),
            ValueError,
            "incompatible sizes",
        ),
        (lambda: rnp.choose(np.array([0.5]), [np.ones(1)]), ValueError, "integer typed"),
        (lambda: rnp.choose(np.array([2]), [np.ones(1)]), ValueError, "invalid entry"),
        (lambda: rnp.choose(np.array([0]), [np.ones(1)], mode="x"), ValueError, "not understood"),
        (lambda: rnp.choose(np.array([0]), [np.ones(1)], out=1), NotImplementedError, "'out'"),
        (lambda: rnp.select([True], [1, 2]), ValueError, "length equal"),
        (lambda: rnp.select([], []), ValueError, "non-empty"),
        (
            lambda: rnp.piecewise(np.ones(2), [True], [1, 2, 3]),
            ValueError,
            "either 1 or 2 functions",
        ),
        (lambda: rnp.place(np.ones(2), np.ones(2, bool), 1.0), ValueError, "inplace=False"),
        (lambda: rnp.put(np.ones(2), [0], 1.0), ValueError, "Pass inplace=False"),
        (
            lambda: rnp.put(np.ones(2), [0], 1.0, mode="raise", inplace=False),
            NotImplementedError,
            "'raise' mode to jnp.put",
        ),
        (
            lambda: rnp.put(np.ones(2), [0], 1.0, mode="x", inplace=False),
            ValueError,
            "mode should be one of 'wrap' or 'clip'; got mode='x'",
        ),
        (lambda: rnp.put_along_axis(np.ones(2), [0], 1.0, 0), ValueError, "inplace=False"),
        (
            lambda: rnp.put_along_axis(np.ones((2, 2)), np.ones(2, int), 1.0, 0, inplace=False),
            ValueError,
            "must have same ndim. Got arr.ndim=2 and indices.ndim=1",
        ),
        (
            lambda: rnp.put_along_axis(np.ones(2), np.ones(1, int), [1, 2, 3], 0, inplace=False),
            ValueError,
            "'values' must be broadcastable to 'indices'",
        ),
        (
            lambda: rnp.place(np.ones(2), np.ones(3, bool), 1.0, inplace=False),
            ValueError,
            "same size",
        ),
        (
            lambda: rnp.place(np.ones(2), np.ones(2, bool), [], inplace=False),
            ValueError,
            "empty array",
        ),
        (lambda: rnp.fill_diagonal(np.ones((2, 2)), 1.0), NotImplementedError, "inplace=False"),
        (
            lambda: rnp.fill_diagonal(np.ones((2, 2)), 1.0, True, inplace=False),
            NotImplementedError,
            "wrap",
        ),
        (lambda: rnp.fill_diagonal(np.ones(2), 1.0, inplace=False), ValueError, "at least 2-d"),
        (
            lambda: rnp.fill_diagonal(np.ones((2, 2, 3)), 1.0, inplace=False),
            ValueError,
            "equal length",
        ),
        (lambda: rnp.diagonal(np.ones(2)), ValueError, "at least two dimensions"),
        (lambda: rnp.diagonal(np.ones((2, 2)), 0, 1, 1), relax.ShapeError, "cannot be the same"),
        (lambda: rnp.diagonal(np.ones((2, 2)), 0.5), TypeError, "must be an int"),
        (lambda: rnp.trace(np.ones((2, 2)), out=1), NotImplementedError, "'out'"),
        (lambda: rnp.diag(np.ones((2, 2, 2))), ValueError, "1d or 2d"),
        (lambda: rnp.tril_indices(-1), ValueError, "non-negative"),
        (lambda: rnp.tril_indices_from(np.ones(3)), ValueError, "2-dimensional"),
        (lambda: rnp.diag_indices(3, -1), ValueError, "nonnegative"),
        (lambda: rnp.diag_indices_from(np.ones((2, 3))), ValueError, "equal length"),
        (lambda: rnp.ix_(np.ones((2, 2), int)), ValueError, "1-dimensional"),
        (lambda: rnp.ix_(np.ones(2, bool)), NotImplementedError, "Boolean"),
        (
            lambda: rnp.ravel_multi_index((np.array([0]),), (2, 2)),
            ValueError,
            "len\\(multi_index\\)",
        ),
        (lambda: rnp.ravel_multi_index((np.array([2]),), (2,)), ValueError, "invalid entry"),
        (
            lambda: rnp.ravel_multi_index((np.array([0.5]),), (2,), mode="clip"),
            ValueError,
            "not an integer type",
        ),
        (
            lambda: rnp.ravel_multi_index((np.array([0.5]),), (2,), dtype="int64"),
            TypeError,
            "only int",
        ),
        (
            lambda: rnp.ravel_multi_index((np.array([0]),), (2,), mode="x"),
            ValueError,
            "invalid mode",
        ),
        (
            lambda: rnp.ravel_multi_index((np.array([0]),), (2,), order="K"),
            ValueError,
            "invalid order",
        ),
        (lambda: rnp.r_["x", 1], ValueError, "directive"),
        (lambda: rnp.r_[1, "0"], ValueError, "beginning"),
    ],
)
def test_bad_inputs_raise_clear_errors(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_traced_arguments_that_must_be_static_are_refused():
    index = relax.Tensor(("n",), "int32")
    with pytest.raises(relax.TraceError, match="mode='wrap' or mode='clip'"):
        relax.eval_shape(lambda i: rnp.choose(i, [1.0, 2.0]), index)
    with pytest.raises(relax.TraceError, match="mode='wrap' or mode='clip'"):
        relax.eval_shape(lambda i: rnp.ravel_multi_index((i,), (3,)), index)


def test_weak_types_of_diagonals_follow_jax():
    """jax takes the main diagonal of a square matrix by a product with a (strong) identity
    matrix, other diagonals by a gather that keeps the weak type."""
    spec = relax.Tensor((4,), "int32")
    square = relax.eval_shape(lambda v: rnp.diagonal(rnp.reshape(v, (2, 2)) + 1.5), spec)
    offset = relax.eval_shape(lambda v: rnp.diagonal(rnp.reshape(v, (2, 2)) + 1.5, 1), spec)
    gathered = relax.eval_shape(lambda v: rnp.take_along_axis(v + 1.5, v, 0), spec)
    assert (square.weak, offset.weak, gathered.weak) == (False, True, True)
