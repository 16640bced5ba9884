"""Data-dependent sizes: ``nonzero``, ``argwhere``, ``flatnonzero``, one-argument
``where``, boolean-mask indexing, ``compress`` and ``count_nonzero``.

Each function is jitted once with symbolic dims and run on several inputs (all false,
all true, random with NaN and -0.0, empty), compared with jax and numpy; one
executable serves them all. The fresh symbols' bounds appear in ``eval_shape`` specs
and in the printed IR and are used by later deductions; ``size=`` variants match jax.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import relaxjax as relax
import relaxjax.numpy as rnp
from relaxjax import arith, ops
from relaxjax.errors import ShapeError, TraceError
from relaxjax.ir import module_to_text, parse_module, verify

DIMS = ("a", "b", "c")
SHAPES = {1: (7,), 2: (3, 4), 3: (2, 3, 2)}


def _inputs(shape: tuple[int, ...], dtype: str, seed: int) -> list[np.ndarray]:
    """All false, all true, random (with NaN and -0.0 for floats), empty."""
    rng = np.random.default_rng(seed)
    random = rng.integers(-2, 3, shape).astype(dtype)
    if np.dtype(dtype).kind == "f":
        flat = random.reshape(-1)
        flat[::3] = np.where(flat[::3] == 0, -0.0, flat[::3])
        flat[1::5] = np.nan
    empty = (0,) + shape[1:]
    return [
        np.zeros(shape, dtype),
        np.ones(shape, dtype),
        random,
        np.zeros(empty, dtype),
    ]


def _mask_leading(m, x):
    return x[x[..., 0] != 0] if x.ndim > 1 else x[x != 0]


def _mask_middle(m, x):
    return x[:, x[0] != 0] if x.ndim > 1 else x[x > 0]


def _compress(m, x):
    condition = x[(0,) * (x.ndim - 1)] != 0 if x.ndim > 1 else x != 0
    return m.compress(condition, x, axis=-1)


CASES = {
    "nonzero": lambda m, x: m.nonzero(x),
    "where": lambda m, x: m.where(x),
    "argwhere": lambda m, x: m.argwhere(x),
    "flatnonzero": lambda m, x: m.flatnonzero(x),
    "mask_all": lambda m, x: x[x != 0],
    "mask_leading": _mask_leading,
    "mask_middle": _mask_middle,
    "compress": _compress,
    "compress_flat": lambda m, x: m.compress(x.reshape(-1) != 0, x),
    "count_nonzero": lambda m, x: m.count_nonzero(x, axis=0),
}
#: (rank, dtype) combinations run by default; every combination runs under -m slow.
DEFAULT = [(1, "bool"), (2, "float32"), (3, "int32")]
EXHAUSTIVE = [
    (r, d) for r in (1, 2, 3) for d in ("bool", "int32", "float32") if (r, d) not in DEFAULT
]


def _leaves(value) -> list[np.ndarray]:
    if isinstance(value, (tuple, list)):
        return [leaf for v in value for leaf in _leaves(v)]
    return [np.asarray(value)]


def _assert_same(ours, theirs, what: str) -> None:
    ours, theirs = _leaves(ours), _leaves(theirs)
    assert len(ours) == len(theirs), what
    for a, b in zip(ours, theirs):
        assert a.shape == b.shape and a.dtype == b.dtype, (what, a, b)
        np.testing.assert_array_equal(a, b, err_msg=what)


def _jitted(case: str, rank: int, dtype: str):
    fn = CASES[case]

    def program(x: relax.Tensor(DIMS[:rank], dtype)):
        return fn(rnp, x)

    return relax.jit(program)


def _value_params() -> list:
    """Each case at one (rank, dtype) of DEFAULT by default (every rank and dtype is
    covered), at every combination under -m slow."""
    params = []
    for index, case in enumerate(CASES):
        for position, (rank, dtype) in enumerate(DEFAULT + EXHAUSTIVE):
            default = position == index % len(DEFAULT)
            marks = () if default else pytest.mark.slow
            params.append(pytest.param(case, rank, dtype, marks=marks))
    return params


@pytest.mark.parametrize("case, rank, dtype", _value_params())
def test_values_against_jax_with_one_executable(case, rank, dtype):
    program = _jitted(case, rank, dtype)
    for x in _inputs(SHAPES[rank], dtype, rank):
        if case in ("mask_middle", "compress") and x.shape[0] == 0 and rank > 1:
            continue  # x[0] of an empty array: jax and numpy refuse too
        expected = CASES[case](jnp, jnp.asarray(x))
        _assert_same(program(x), expected, f"{case} of {x!r}")
        if case in ("nonzero", "argwhere", "flatnonzero", "count_nonzero"):
            _assert_same(
                program(x),
                getattr(np, case)(x, **({"axis": 0} if case == "count_nonzero" else {})),
                f"numpy {case}",
            )
    assert program.cache_size() == 1


@pytest.mark.parametrize("case", sorted(CASES))
def test_eager_evaluation_matches_jax(case):
    for x in _inputs((3, 4), "float32", 5):
        if case in ("mask_middle", "compress") and x.shape[0] == 0:
            continue
        _assert_same(CASES[case](rnp, x), CASES[case](jnp, jnp.asarray(x)), f"eager {case}")


# -- unique ----------------------------------------------------------------------------------

UNIQUE_CASES = {
    "plain": {},
    "all": {"return_index": True, "return_inverse": True, "return_counts": True},
    "nan_apart": {"return_counts": True, "equal_nan": False},
    "rows": {"axis": 0, "return_index": True, "return_inverse": True, "return_counts": True},
    "columns": {"axis": -1, "return_counts": True},
    "size": {"size": 4, "return_index": True, "return_counts": True},
    "size_fill": {"size": 9, "fill_value": -5, "return_index": True, "return_inverse": True},
}


def _unique_inputs(shape: tuple[int, ...], dtype: str) -> list[np.ndarray]:
    rng = np.random.default_rng(len(shape))
    values = rng.integers(-2, 3, shape).astype(dtype)
    if np.dtype(dtype).kind == "f":
        flat = values.reshape(-1)
        flat[::4] = np.nan
        flat[1::7] = -0.0
        flat[2::9] = np.inf
    return [values, np.zeros(shape, dtype), np.ones(shape, dtype)]


_SLOW = pytest.mark.slow  # jax's eager unique compiles for every result size it meets


@pytest.mark.parametrize(
    "case, shape, dtype",
    [
        pytest.param("plain", (9,), "float32", marks=_SLOW),
        ("all", (3, 4), "float32"),
        pytest.param("all", (2, 3, 2), "int32", marks=_SLOW),
        pytest.param("nan_apart", (8,), "float64", marks=_SLOW),
        ("rows", (6, 2), "int32"),
        pytest.param("columns", (2, 5), "bool", marks=_SLOW),
        pytest.param("size", (7,), "int8", marks=_SLOW),
        ("size_fill", (2, 3), "float32"),
    ],
)
def test_unique_against_jax_with_one_executable(case, shape, dtype):
    kwargs = UNIQUE_CASES[case]
    dims = DIMS[: len(shape)]

    def program(x: relax.Tensor(dims, dtype)):
        return rnp.unique(x, **kwargs)

    jitted = relax.jit(program)
    inputs = _unique_inputs(shape, dtype)
    for x in inputs + [_unique_inputs(tuple(d + 3 for d in shape), dtype)[0]]:
        expected = jnp.unique(jnp.asarray(x), **kwargs)
        _assert_same(jitted(x), expected, f"unique {kwargs} of {x!r}")
        _assert_same(rnp.unique(x, **kwargs), expected, f"eager unique {kwargs}")
    assert jitted.cache_size() == 1
    if case == "plain":  # numpy agrees on values (NaNs merged as numpy >= 1.24 does)
        np.testing.assert_array_equal(jitted(inputs[0]), np.unique(inputs[0]))


def test_unique_of_empty_and_scalar_arrays():
    @relax.jit
    def f(x: relax.Tensor(("n",), "float32")):
        return rnp.unique(x, return_index=True, return_inverse=True, return_counts=True)

    empty = np.zeros(0, np.float32)
    _assert_same(f(empty), jnp.unique(empty, True, True, True), "unique of nothing")
    scalar = np.float32(3.0)
    _assert_same(
        rnp.unique(scalar, return_inverse=True), jnp.unique(scalar, return_inverse=True), "0-d"
    )
    with pytest.raises(ValueError, match="for zero-sized input with nonzero size argument"):
        rnp.unique(empty, size=2)


def test_unique_shapes_and_bounds():
    spec = relax.Tensor(("n", 3), "float32")
    values, index, inverse, counts = relax.eval_shape(
        lambda x: rnp.unique(x, return_index=True, return_inverse=True, return_counts=True), spec
    )
    (k,) = values.shape
    assert str(k) == "k0" and k.upper == arith.sym("n") * 3
    assert index.shape == counts.shape == (k,) and str(inverse.shape) == "(n, 3)"
    rows = relax.eval_shape(lambda x: rnp.unique(x, axis=0, return_inverse=True), spec)
    assert str(rows[0].shape) == "(k0, 3)" and rows[0].shape[0].upper == arith.sym("n")
    assert str(rows[1].shape) == "(n,)"
    padded = relax.eval_shape(lambda x: rnp.unique(x, size=5, fill_value=0), spec)
    assert padded.shape == (5,)
    # the distinct values of the distinct values are as many: one more count, no more
    twice = relax.eval_shape(lambda x: rnp.unique(rnp.unique(x))[: x.shape[0] * 3], spec)
    assert str(twice.shape) == "(k1,)"


# -- size= and fill_value= --------------------------------------------------------------

SIZE_CASES = [
    ("nonzero", {"size": 3}),
    ("nonzero", {"size": 9, "fill_value": -1}),
    ("nonzero", {"size": 9, "fill_value": (7, 8)}),
    ("nonzero", {"size": 0}),
    ("nonzero", {"size": 4, "fill_value": 2.5}),  # jax promotes the indices to float64
    ("argwhere", {"size": 2}),
    ("argwhere", {"size": 8, "fill_value": (1, 9)}),
    ("flatnonzero", {"size": 10, "fill_value": -1}),
    ("flatnonzero", {"size": 1}),
    ("where", {"size": 6, "fill_value": 5}),
]


@pytest.mark.parametrize("name, kwargs", SIZE_CASES)
def test_static_size_matches_jax_jitted_and_eager(name, kwargs):
    def program(x: relax.Tensor(("a", 4), "float32")):
        return getattr(rnp, name)(x, **kwargs)

    jitted = relax.jit(program)
    for x in _inputs((3, 4), "float32", 1):
        expected = getattr(jnp, name)(jnp.asarray(x), **kwargs)
        _assert_same(getattr(rnp, name)(x, **kwargs), expected, f"{name}{kwargs} eager")
        if x.size == 0 and isinstance(kwargs.get("fill_value"), float):
            # jax gives int64 zeros for an empty array whatever the fill; with a symbolic
            # shape the dtype cannot depend on it: float64 zeros here
            expected = tuple(np.asarray(e, np.float64) for e in expected)
        _assert_same(jitted(x), expected, f"{name}{kwargs} jitted")
    assert jitted.cache_size() == 1
    spec = relax.eval_shape(program)
    size = kwargs["size"]
    assert all(leaf.shape[0] == size for leaf in _spec_leaves(spec))


def test_compress_with_size_matches_jax():
    def program(c: relax.Tensor(("a",), "bool"), x: relax.Tensor(("a", 3), "float32")):
        return rnp.compress(c, x, axis=0, size=2, fill_value=-7.5)

    jitted = relax.jit(program)
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    for c in ([True, False, True, True], [False] * 4, [False, True, False, False]):
        c = np.array(c)
        expected = jnp.compress(c, x, axis=0, size=2, fill_value=-7.5)
        _assert_same(jitted(c, x), expected, f"compress {c}")
    assert relax.eval_shape(program).shape == (2, 3)


def test_symbolic_size_gives_that_length():
    def program(x: relax.Tensor(("a", "b"), "float32")):
        return rnp.flatnonzero(x, size=x.shape[1], fill_value=-1)

    assert str(relax.eval_shape(program).shape) == "(b,)"
    x = np.array([[0, 2, 0], [1, 0, 3]], np.float32)
    np.testing.assert_array_equal(relax.jit(program)(x), [1, 3, 5])


def _spec_leaves(spec):
    return list(spec) if isinstance(spec, (tuple, list)) else [spec]


# -- fresh symbols: specs, bounds, deductions, IR text -------------------------------------


def test_eval_shape_shows_fresh_symbols_with_bounds():
    spec = relax.Tensor(("n", 4), "float32")
    nz = relax.eval_shape(lambda x: rnp.nonzero(x), spec)
    assert str(nz) == '(Tensor((k0,), "int64"), Tensor((k0,), "int64"))'
    (k,) = nz[0].shape
    assert (k.lower, k.upper) == (0, arith.sym("n") * 4)
    assert str(relax.eval_shape(lambda x: rnp.argwhere(x), spec)) == 'Tensor((k0, 2), "int64")'
    assert str(relax.eval_shape(lambda x: x[x > 0], spec)) == 'Tensor((k0,), "float32")'
    assert str(relax.eval_shape(lambda x: x[x[:, 0] > 0], spec)) == 'Tensor((k0, 4), "float32")'
    rows = relax.eval_shape(lambda x: x[:, np.array([True, False, True, True])], spec)
    assert str(rows) == 'Tensor((n, 3), "float32")'  # a numpy mask: a static size, as jax
    counted = relax.eval_shape(lambda x: rnp.count_nonzero(x, axis=1, keepdims=True), spec)
    assert str(counted) == 'Tensor((n, 1), "int64")'
    assert str(relax.eval_shape(lambda x: rnp.flatnonzero(x), spec)) == 'Tensor((k0,), "int64")'
    where = relax.eval_shape(lambda x: rnp.where(x > 0), spec)
    assert str(where) == '(Tensor((k0,), "int64"), Tensor((k0,), "int64"))'
    kept = relax.eval_shape(lambda x: rnp.compress(x[:, 0] > 0, x, axis=0), spec)
    assert str(kept) == 'Tensor((k0, 4), "float32")' and kept.shape[0].upper == arith.sym("n")
    flat = relax.eval_shape(lambda x: rnp.compress(x.reshape(-1) > 0, x), spec)
    assert str(flat) == 'Tensor((k0,), "float32")'


def test_bounds_flow_into_later_deductions():
    spec = relax.Tensor(("n", 4), "float32")

    def sliced(x):
        kept = x[x > 0]
        return kept[: x.shape[0] * 4], kept[:5], rnp.sum(kept), kept + kept

    shapes = [str(s.shape) for s in relax.eval_shape(sliced, spec)]
    # k0 <= n * 4 makes min(k0, n * 4) = k0; k0 against 5 stays a min
    assert shapes == ["(k0,)", "(min(5, k0),)", "()", "(k0,)"]

    def same_mask(x, y):
        mask = x > 0
        return x[mask] * y[mask]  # one count of one mask: the same k0, no check

    out = relax.eval_shape(same_mask, spec, spec)
    assert str(out) == 'Tensor((k0,), "float32")'


def test_printed_ir_binds_the_symbol_and_round_trips():
    @relax.jit
    def f(x: relax.Tensor(("n", 4), "float32")):
        return rnp.exp(x[x > 0])

    mod = f.trace()
    text = str(mod)
    assert '@function(bounds={"k0": (0, n * 4)})' in text
    assert 'Prim("int64") = nonzero_count(lv0)' in text
    assert 'Prim("int64", value=k0) = match_cast(lv1, Prim("int64", value=k0))' in text
    assert "flatnonzero(lv0, size=k0" in text
    verify(mod)
    again = parse_module(text, ops.registry())
    assert again == mod and module_to_text(again, locations=False) == module_to_text(
        mod, locations=False
    )
    lowered = f.lower()
    verify(lowered)
    assert "nonzero_count" in str(lowered)

    @relax.jit
    def g(x: relax.Tensor(("n", 3), "int32")):
        return rnp.unique(x, return_counts=True, axis=0), rnp.unique(x, size=2, fill_value=7)

    mod = g.trace()
    verify(mod)
    text = module_to_text(mod, locations=False)
    assert "unique(x, lv0, size=k0, axis=0" in text and "size=2, axis=None" in text
    again = parse_module(text, ops.registry())
    assert again == mod and module_to_text(again, locations=False) == text


# -- mixed with later ops and memory ---------------------------------------------------------


def test_a_program_mixing_data_dependent_and_later_ops():
    @relax.jit
    def f(
        x: relax.Tensor(("n", 4), "float32"),
        w: relax.Tensor((4, 3), "float32"),
        b: relax.Tensor((3,), "float32"),
    ):
        h = rnp.tanh(x @ w) + b  # segment 1 temporaries
        rows = h[h[:, 0] > 0]  # k0 rows
        scores = rnp.exp(rows) * 2.0  # segment 2 memory, sized by k0
        return scores @ w.T, rnp.sum(scores, axis=0), h.shape[0] - rows.shape[0]

    rng = np.random.default_rng(0)
    w = rng.standard_normal((4, 3)).astype(np.float32)
    b = rng.standard_normal(3).astype(np.float32)
    for n in (0, 1, 5, 40):
        x = rng.standard_normal((n, 4)).astype(np.float32)
        h = np.tanh(x @ w) + b
        scores = np.exp(h[h[:, 0] > 0]) * 2.0
        out, total, dropped = f(x, w, b)
        np.testing.assert_allclose(out, scores @ w.T, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(total, scores.sum(0), rtol=1e-5, atol=1e-5)
        assert int(dropped) == n - len(scores)
    assert f.cache_size() == 1


# -- bad inputs --------------------------------------------------------------------------------


def test_mask_of_the_wrong_shape():
    spec = relax.Tensor((3, 4), "float32")
    with pytest.raises(
        ShapeError,
        match=r"boolean index did not match shape of indexed array in index 0: got \(4,\), "
        r"expected \(3,\)",
    ):
        relax.eval_shape(lambda x: x[np.ones(4, bool)], spec)
    with pytest.raises(ShapeError, match=r"in index 1: got \(3,\), expected \(4,\)"):
        relax.eval_shape(lambda x: x[:, x[:, 0] > 0], spec)


def test_mask_shape_checked_at_run_time():
    @relax.jit
    def f(x: relax.Tensor(("n", 4), "float32"), m: relax.Tensor(("m",), "bool")):
        return x[m]

    x = np.ones((3, 4), np.float32)
    np.testing.assert_array_equal(f(x, np.array([True, False, True])), np.ones((2, 4)))
    with pytest.raises(ShapeError, match=r"match_cast .*axis 0: expected n = 3"):
        f(x, np.array([True, False]))


def test_refused_forms_and_bad_arguments():
    spec = relax.Tensor(("n", 4), "float32")
    # a mask among other array indices is its nonzero() index arrays (numpy's rule)
    out = relax.eval_shape(lambda x: x[x[:, 0] > 0, np.array([1])], spec)
    assert str(out) == 'Tensor((k0,), "float32")'
    out = relax.eval_shape(lambda x: x[x[:, 0, 0] > 0, :, 1], relax.Tensor(("n", 4, 2)))
    assert str(out) == 'Tensor((k0, 4), "float32")'  # separated: the index axes in front
    with pytest.raises(ValueError, match=r"calling nonzero on 0d arrays is not allowed"):
        relax.eval_shape(lambda x: rnp.nonzero(x), relax.Tensor((), "float32"))
    with pytest.raises(ValueError, match=r"fill_value must be a scalar or a tuple of length 2"):
        relax.eval_shape(lambda x: rnp.nonzero(x, size=2, fill_value=(1, 2, 3)), spec)
    with pytest.raises(ValueError, match=r"nonzero: size must be >= 0, got -1"):
        relax.eval_shape(lambda x: rnp.nonzero(x, size=-1), spec)
    with pytest.raises(TypeError, match=r"size must be a static int or a symbolic dim"):
        relax.eval_shape(lambda x, s: rnp.nonzero(x, size=s), spec, relax.Tensor((), "int64"))
    with pytest.raises(ValueError, match=r"condition must be a 1D array"):
        relax.eval_shape(lambda x: rnp.compress(x > 0, x), spec)
    with pytest.raises(ValueError, match=r"Either both or neither of the x and y arguments"):
        rnp.where(np.ones(3), 1)
    with pytest.raises(ValueError, match=r"size and fill_value arguments cannot be used"):
        rnp.where(np.ones(2, bool), 1, 2, size=2)
    with pytest.raises(ValueError, match=r"condition contains entries that are out of bounds"):
        rnp.compress(np.array([True, False, True]), np.ones(2))
    with pytest.raises(TraceError, match=r"nonzero needs the rank of its argument"):
        relax.eval_shape(lambda x: rnp.nonzero(x), relax.Tensor(dtype="float32"))


# -- the sort kernel ---------------------------------------------------------------------------

_SORT_KERNELS: dict = {}


def _sort_kernel(dtype: str, ndim: int, axis):
    from relaxjax.backends import build
    from relaxjax.ir import TensorInfo
    from relaxjax.ops.unique import SortAttrs

    key = (dtype, ndim, axis)
    if key not in _SORT_KERNELS:
        info = TensorInfo(DIMS[:ndim], dtype)
        op, attrs = ops.get("sort_permutation"), SortAttrs(axis)
        func = op.lower([info], attrs, op.deduce([info], attrs)[0])
        _SORT_KERNELS[key] = (func, build(func))
    return _SORT_KERNELS[key]


values = st.sampled_from([0.0, -0.0, 1.0, -1.0, 2.5, np.nan, np.inf, -np.inf])


@given(st.lists(values, max_size=40))
def test_sort_permutation_is_numpys_stable_order(items):
    from relaxjax.tir import interpreter

    x = np.array(items, np.float64)
    func, kernel = _sort_kernel("float64", 1, None)
    expected = np.argsort(x, kind="stable")
    native, interpreted = np.empty(len(x), np.int64), np.empty(len(x), np.int64)
    kernel(x, native)
    interpreter.run(func, x, interpreted)
    np.testing.assert_array_equal(native, expected)
    np.testing.assert_array_equal(interpreted, expected)


@given(st.lists(st.tuples(st.integers(0, 2), st.integers(0, 2)), max_size=30))
def test_sort_permutation_of_rows_is_lexicographic_and_stable(rows):
    x = np.array(rows, np.int32).reshape(-1, 2)
    _, kernel = _sort_kernel("int32", 2, 0)
    native = np.empty(len(x), np.int64)
    kernel(x, native)
    np.testing.assert_array_equal(native, np.lexsort(x.T[::-1]))


def test_tutorial_data_dependent_shapes():
    """docs/tutorial.md, section "Data-dependent shapes"."""

    @relax.jit
    def positive_rows(x: relax.Tensor(("n", 4), "float32")):
        rows = x[x[:, 0] > 0]
        return rows * 2.0, rows[: x.shape[0]].sum(axis=0)

    assert str(relax.eval_shape(positive_rows)) == (
        '(Tensor((k0, 4), "float32"), Tensor((4,), "float32"))'
    )
    k = relax.eval_shape(positive_rows)[0].shape[0]
    assert f"{k} {k.lower} {k.upper}" == "k0 0 n"
    text = str(positive_rows.trace())
    assert text.startswith('@function(bounds={"k0": (0, n)})')
    for line in (
        'lv2: Prim("int64") = nonzero_count(lv1)',
        'lv3: Prim("int64", value=k0) = match_cast(lv2, Prim("int64", value=k0))',
        'lv4: Tensor((k0,), "int64") = flatnonzero(lv1, size=k0, fill_value=(), dtype="int64")',
        'lv5: Tensor((k0, 4), "float32") = take(x, lv4, axis=0, mode="index", fill_value=None)',
    ):
        assert line in text, line
    x = np.array([[1, 2, 3, 4], [-1, 0, 0, 0], [5, 6, 7, 8]], np.float32)
    doubled, total = positive_rows(x)
    np.testing.assert_array_equal(doubled, [[2, 4, 6, 8], [10, 12, 14, 16]])
    np.testing.assert_array_equal(total, [6, 8, 10, 12])
    assert positive_rows(np.zeros((0, 4), np.float32))[0].shape == (0, 4)
    assert positive_rows.cache_size() == 1
    counted = relax.eval_shape(
        lambda v: rnp.unique(v, return_counts=True), relax.Tensor(("n",), "int32")
    )
    assert str(counted) == '(Tensor((k0,), "int32"), Tensor((k0,), "int64"))'
    (padded,) = rnp.nonzero(np.array([0, 3, 0, 5]), size=3, fill_value=-1)
    np.testing.assert_array_equal(padded, [1, 3, -1])


def test_docstring_examples():
    import doctest

    import relaxjax._numpy.datadep as module

    failures, tried = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert tried > 0 and failures == 0
