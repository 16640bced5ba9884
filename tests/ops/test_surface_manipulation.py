"""relaxjax.numpy's array manipulation against jax: the table of surface_manipulation.py
(values through jit at several sizes, shapes through eval_shape, eager evaluation, over
dtypes), the symbolic shapes of data-dependent results, and every refused input."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import relaxjax as relax
import relaxjax.numpy as rnp
from relaxjax import arith
from relaxjax._numpy import entries, joining, manipulation

sys.path.insert(0, str(Path(__file__).parent))
from surface_harness import check_eager, check_shapes, check_values, covered_names  # noqa: E402
from surface_manipulation import CASES  # noqa: E402

IDS = [case.id for case in CASES]


def test_every_name_has_a_case():
    names = {*manipulation.__all__, *joining.__all__, *entries.__all__}
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


@pytest.mark.parametrize(
    ("fn", "expected"),
    [
        (lambda x: rnp.repeat(x, 3, axis=0), "(n * 3, 3)"),
        (lambda x: rnp.tile(x, (2, 2)), "(n * 2, 6)"),
        (lambda x: rnp.roll(x, 1, axis=0), "(n, 3)"),
        (lambda x: rnp.flip(x), "(n, 3)"),
        (lambda x: rnp.rot90(x), "(3, n)"),
        (lambda x: rnp.ravel(x), "(n * 3,)"),
        (lambda x: rnp.array_split(x, 3)[0], "((n + 2) // 3, 3)"),
        (lambda x: rnp.array_split(x, 3)[2], "(n // 3, 3)"),
        (lambda x: rnp.insert(x, 1, 0.0, axis=0), "(n + 1, 3)"),
        (lambda x: rnp.insert(x, [-1, -1], 0.0, axis=0), "(n + 2, 3)"),
        (lambda x: rnp.delete(x, 1, axis=0), "(n - 1, 3)"),
        (lambda x: rnp.delete(x, [0, 2], axis=0), "(n - 2, 3)"),
        (lambda x: rnp.delete(x, [0, -1], axis=0), "(k0, 3)"),  # the same entry when n == 1
        (lambda x: rnp.resize(x, (x.shape[0], 2)), "(n, 2)"),
        (lambda x: rnp.broadcast_arrays(x, x[0])[1], "(n, 3)"),
        (lambda x: rnp.hstack([x, x]), "(n, 6)"),
    ],
)
def test_symbolic_shapes_are_exact(fn, expected):
    spec = relax.eval_shape(fn, N3)
    assert str(spec) == f'Tensor({expected}, "float32")'


def test_repeat_by_traced_counts_has_an_unbounded_data_dependent_length():
    spec = relax.eval_shape(
        lambda x, r: rnp.repeat(x, r, axis=0), N3, relax.Tensor(("n",), "int32")
    )
    (k, three) = spec.shape
    assert three == 3 and isinstance(k, arith.Sym) and (k.lower, k.upper) == (0, None)
    fixed = relax.eval_shape(
        lambda x, r: rnp.repeat(x, r, axis=0, total_repeat_length=7),
        N3,
        relax.Tensor(("n",), "int32"),
    )
    assert fixed.shape == (7, 3)


def test_data_dependent_lengths_are_bounded_symbols():
    trimmed = relax.eval_shape(rnp.trim_zeros, VN).shape[0]
    assert trimmed.upper == arith.sym("n")
    index = relax.Tensor(("m",), "int64")
    deleted = relax.eval_shape(lambda x, i: rnp.delete(x, i), VN, index).shape[0]
    assert isinstance(deleted, arith.Sym) and deleted.upper == arith.sym("n")
    unique = relax.eval_shape(lambda x, i: rnp.delete(x, i, assume_unique_indices=True), VN, index)
    assert unique.shape == (arith.sym("n") - arith.sym("m"),)


def test_delete_of_traced_indices_matches_numpy():
    @relax.jit
    def f(x: VN, i: relax.Tensor(("m",), "int64")):
        return rnp.delete(x, i), rnp.delete(x, i, assume_unique_indices=True)

    x = np.arange(6, dtype=np.float32)
    for i in ([0, 5], [-1, 2], [], [3]):
        i = np.asarray(i, np.int64)
        ours, unique = f(x, i)
        np.testing.assert_array_equal(ours, np.delete(x, i))
        np.testing.assert_array_equal(unique, np.delete(x, i))
    assert f.cache_size() == 1


def test_delete_out_of_range_on_a_symbolic_axis_fails_at_run_time():
    @relax.jit
    def f(x: VN):
        return rnp.delete(x, 4)

    np.testing.assert_array_equal(f(np.arange(6.0, dtype=np.float32)), np.delete(np.arange(6.0), 4))
    with pytest.raises(relax.ShapeError, match="n - 1"):
        f(np.arange(3.0, dtype=np.float32))


def test_repeat_traced_counts_through_jit():
    @relax.jit
    def f(x: N3, r: relax.Tensor(("n",), "int32")):
        return rnp.repeat(x, r, axis=0) * 2.0

    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    for r in ([0, 0, 0, 0], [1, 2, 0, 3], [-1, 5, 0, 0]):
        r = np.asarray(r, np.int32)
        np.testing.assert_array_equal(f(x, r), np.repeat(x, np.maximum(r, 0), axis=0) * 2)
    assert f.cache_size() == 1


# --------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: rnp.fliplr(np.ones(3)), ValueError, "at least 2 dimensions"),
        (lambda: rnp.flip(np.ones(3), 1), relax.ShapeError, "axis 1 is out of bounds"),
        (lambda: rnp.rot90(np.ones(3)), ValueError, "ndim at least two"),
        (lambda: rnp.rot90(np.ones((2, 2)), axes=(1, 1)), ValueError, "Axes must be different"),
        (lambda: rnp.roll(np.ones((2, 2)), (1, 2, 3), axis=(0, 1)), ValueError, "scalars or 1D"),
        (lambda: rnp.repeat(np.ones(3), [1, 2]), ValueError, "2 repeats for an axis of size 3"),
        (lambda: rnp.repeat(np.ones(3), 1.5), TypeError, "integers"),
        (lambda: rnp.repeat(np.ones(3), -1), ValueError, "non-negative"),
        (lambda: rnp.tile(np.ones(3), 1.5), TypeError, "tile reps must be ints"),
        (lambda: rnp.resize(np.ones(3), (-1, 2)), ValueError, "non-negative"),
        (lambda: rnp.moveaxis(np.ones((2, 3)), (0, 1), 0), ValueError, "Inconsistent number"),
        (lambda: rnp.rollaxis(np.ones((2, 3)), 0, 5), ValueError, "start=5 must satisfy"),
        (lambda: rnp.matrix_transpose(np.ones(3)), ValueError, "at least two-dimensional"),
        (lambda: rnp.ravel(np.ones(3), order="K"), NotImplementedError, "order='K'"),
        (lambda: rnp.hstack([]), ValueError, "at least one array"),
        (lambda: rnp.vstack(3), TypeError, "sequence of arrays"),
        (lambda: rnp.block([]), ValueError, "empty list"),
        (lambda: rnp.block((np.ones(2),)), ValueError, "does not allow tuples"),
        (lambda: rnp.block([[np.ones(2)], np.ones(2)]), ValueError, "Mismatched list depths"),
        (lambda: rnp.array_split(np.ones(3), 0), ValueError, "larger than 0"),
        (lambda: rnp.hsplit(np.ones(()), 1), ValueError, "1 or more dimensions"),
        (lambda: rnp.vsplit(np.ones(3), 1), ValueError, "2 or more dimensions"),
        (lambda: rnp.dsplit(np.ones((2, 2)), 1), ValueError, "3 or more dimensions"),
        (lambda: rnp.unstack(np.ones(())), ValueError, "rank > 0"),
        (lambda: rnp.broadcast_shapes((2,), (3,)), ValueError, "Incompatible shapes"),
        (lambda: rnp.broadcast_arrays(np.ones(2), np.ones(3)), ValueError, "Incompatible"),
        (lambda: rnp.delete(np.ones(3), 5), IndexError, "out of bounds"),
        (lambda: rnp.delete(np.ones(3), np.array([True])), ValueError, "boolean indices"),
        (lambda: rnp.delete(np.ones(3), np.array([0.5])), ValueError, "must be integer or bool"),
        (lambda: rnp.insert(np.ones(3), [[1]], 0), ValueError, "one-dimensional array"),
        (lambda: rnp.insert(np.ones(3), [0.5], 0), ValueError, "integer typed"),
    ],
)
def test_bad_inputs_raise_clear_errors(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_traced_arguments_that_must_be_static_are_refused():
    with pytest.raises(relax.TraceError, match="insert: obj must be static"):
        relax.eval_shape(lambda x, i: rnp.insert(x, i, 0.0), VN, relax.Tensor((), "int64"))
    with pytest.raises(relax.TraceError, match="a tuple needs a static length"):
        relax.eval_shape(lambda x: rnp.unstack(x), VN)
    with pytest.raises(relax.TraceError, match="cannot be ordered while tracing"):
        relax.eval_shape(lambda x: rnp.insert(x, [1, -1], 0.0), VN)
    with pytest.raises(TypeError, match="repeats must be integers"):
        relax.eval_shape(lambda x, r: rnp.repeat(x, r), VN, relax.Tensor(("n",), "float32"))
