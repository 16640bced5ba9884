"""numpy-style indexing of tracers: shapes against jax.eval_shape, static and symbolic."""

import jax
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import relaxjax as relax
import relaxjax.numpy as rnp
from relaxjax import arith

T = relax.Tensor

bounds = st.none() | st.integers(-8, 8)
steps = st.none() | st.sampled_from([1, 2, 3, -1, -2, -3])


@st.composite
def static_cases(draw):
    """A shape and a key of ints, slices, None and at most one Ellipsis, in range."""
    shape = tuple(draw(st.lists(st.integers(0, 6), min_size=1, max_size=3)))
    entries = []
    axis = 0
    while axis < len(shape) and draw(st.booleans()):
        kind = draw(st.sampled_from(["int", "slice", "none", "slice"]))
        if kind == "none":
            entries.append(None)
            continue
        if kind == "int" and shape[axis] > 0:
            entries.append(draw(st.integers(-shape[axis], shape[axis] - 1)))
        else:
            entries.append(slice(draw(bounds), draw(bounds), draw(steps)))
        axis += 1
    if draw(st.booleans()):
        entries.insert(draw(st.integers(0, len(entries))), Ellipsis)
    if draw(st.booleans()):
        entries.append(None)
    return shape, tuple(entries)


def _compare(fn, spec, env):
    ours = relax.eval_shape(fn, spec)
    concrete = tuple(arith.subs(d, env) for d in spec.shape)
    theirs = jax.eval_shape(fn, jax.ShapeDtypeStruct(concrete, spec.dtype))
    assert ours.ndim == len(theirs.shape), (ours, theirs)
    assert ours.dtype == str(theirs.dtype)
    return ours, theirs


@given(static_cases())
def test_static_indexing_matches_jax_exactly(case):
    shape, key = case
    ours, theirs = _compare(lambda x: x[key], T(shape, "float32"), {})
    assert ours.shape == theirs.shape, (shape, key)


@st.composite
def symbolic_cases(draw):
    """Slices whose bounds are symbolic (n - k, k, negative offsets) on symbolic dims."""
    values = {"n": draw(st.integers(1, 9)), "m": draw(st.integers(1, 9))}
    offsets = st.integers(-3, 3)
    entries = []
    for axis in range(2):
        form = draw(st.sampled_from(["dim-stop", "dim-start", "int", "plain", "reverse", "last"]))
        entries.append((form, axis, draw(offsets), draw(steps)))
    return values, entries


def _build_key(entries, shape):
    key = []
    for form, axis, offset, step in entries:
        dim = shape[axis]
        if form == "dim-stop":
            key.append(slice(None, dim + offset, step))
        elif form == "dim-start":
            key.append(slice(dim - abs(offset), None, step))
        elif form == "int":
            key.append(0 if offset >= 0 else -1)
        elif form == "plain":
            key.append(slice(abs(offset), None, step))
        elif form == "reverse":
            key.append(slice(None, None, -abs(step or 1)))
        else:
            key.append(slice(-abs(offset) - 1, None))
    return tuple(key)


@given(symbolic_cases())
def test_symbolic_indexing_is_sound_against_jax(case):
    values, entries = case
    n, m = relax.sym("n", lower=1), relax.sym("m", lower=1)
    ours, theirs = _compare(
        lambda x: x[_build_key(entries, x.shape)], T((n, m, 3), "float32"), values
    )
    if ours.shape is not None:
        assert tuple(arith.subs(d, values) for d in ours.shape) == theirs.shape


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        (lambda x: x[1:], "(n - 1, 4)"),
        (lambda x: x[: x.shape[0] - 1], "(n - 1, 4)"),
        (lambda x: x[::-1, None], "(n, 1, 4)"),
        (lambda x: x[..., 0], "(n,)"),
        (lambda x: x[-1], "(4,)"),
        (lambda x: x[:, 1:3], "(n, 2)"),
    ],
)
def test_common_symbolic_slices_are_precise(key, expected):
    out = relax.eval_shape(key, T((relax.sym("n", lower=1), 4), "float32"))
    assert str(out.shape) == expected


def test_integer_array_index_takes_along_the_axis():
    idx = np.array([0, 2, 2], np.int64)
    ours = relax.eval_shape(lambda x: x[:, idx], T(("n", 4), "float32"))
    assert ours == T(("n", 3), "float32")


def test_indexing_with_a_traced_bool_mask_has_a_data_dependent_length():
    def f(x):
        return x[x > 0]

    out = relax.eval_shape(f, T((3,), "float32"))
    (k,) = out.shape
    assert k.name == "k0" and (k.lower, k.upper) == (0, 3)


# --------------------------------------------------------------------------- advanced indexing

#: index-array shapes that broadcast together (to (2, 3))
BATCH_SHAPES = [(), (3,), (2, 1), (1, 3), (2, 3)]


@st.composite
def advanced_keys(draw, shape):
    """A key over ``shape`` mixing ints, slices, None, one Ellipsis, integer arrays and
    lists (values possibly out of range: both clamp), boolean masks and scalar bools."""
    entries = []
    axis = 0
    ellipsis = False
    while axis < len(shape) and (not entries or draw(st.integers(0, 4)) > 0):
        size = shape[axis]
        kind = draw(
            st.sampled_from(["int", "slice", "none", "array", "list", "mask", "bool", "ellipsis"])
        )
        if kind == "none":
            entries.append(None)
        elif kind == "bool":
            entries.append(draw(st.booleans()))
        elif kind == "ellipsis" and not ellipsis:
            ellipsis = True
            entries.append(Ellipsis)
            axis = len(shape) - (draw(st.integers(0, len(shape) - axis)))
        elif kind == "int" and size > 0:
            entries.append(draw(st.integers(-size, size - 1)))
            axis += 1
        elif kind in ("array", "list"):
            batch = draw(st.sampled_from(BATCH_SHAPES))
            values = draw(
                st.lists(
                    st.integers(-size - 2, size + 1),
                    min_size=int(np.prod(batch)),
                    max_size=int(np.prod(batch)),
                )
            )
            array = np.array(values, np.int64).reshape(batch)
            entries.append(array.tolist() if kind == "list" and batch else array)
            axis += 1
        elif kind == "mask":
            entries.append(np.array(draw(st.lists(st.booleans(), min_size=size, max_size=size))))
            axis += 1
        else:
            entries.append(slice(draw(bounds), draw(bounds), draw(steps)))
            axis += 1
    return tuple(entries)


@st.composite
def advanced_cases(draw):
    shape = tuple(draw(st.lists(st.integers(0, 4), min_size=1, max_size=3)))
    return shape, draw(advanced_keys(shape))


def _jax_or_error(fn):
    try:
        return fn()
    except Exception as error:  # noqa: BLE001 - any jax failure is an outcome
        return error


def _jax_misplaces(key) -> bool:
    """jax 0.10 places the axis of a scalar bool differently from numpy when other
    advanced indices or None are around it (``x[None, False]`` of a (3, 3, 4) array has
    shape (1, 0, 1, 3, 4) in jax, (1, 0, 3, 3, 4) in numpy; ``x[:, 0, False, 0]`` of a
    (2, 3, 4) array (0, 2) in jax, (2, 0) in numpy), or when there are several
    (``x[..., True, :, True]`` of a (2, 3) array: (2, 1, 3) in jax, (1, 2, 3) in numpy):
    we follow numpy, the oracle there."""
    entries = key if isinstance(key, tuple) else (key,)
    others = [e for e in entries if not isinstance(e, bool | slice) and e is not Ellipsis]
    bools = sum(isinstance(e, bool) for e in entries)
    return bools > 1 or (bools == 1 and bool(others))


@settings(max_examples=150)
@given(advanced_cases())
def test_every_index_form_matches_jax(case):
    """Shapes (eval_shape) and values (the ops' references) against jax, or both fail."""
    shape, key = case
    data = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    if _jax_misplaces(key):
        expected = _jax_or_error(lambda: data[key])
        if isinstance(expected, Exception):
            return  # numpy refuses out-of-range array indices, which jax (and we) clamp
    else:
        expected = _jax_or_error(lambda: jax.numpy.asarray(data)[key])
    if isinstance(expected, Exception):
        try:
            deduced = relax.eval_shape(lambda x: x[key], T(shape, "float32"))
            ours = rnp.getitem(data, key)
        except (IndexError, TypeError, ValueError):
            return
        # jax refuses some gathers of no elements from an empty axis (a 0-d index into a
        # (0, 0) array) that it accepts with other index shapes; an empty result is right
        assert ours.size == 0 and deduced.shape == ours.shape, (shape, key, expected)
        return
    deduced = relax.eval_shape(lambda x: x[key], T(shape, "float32"))
    assert deduced.shape == expected.shape, (shape, key)
    np.testing.assert_array_equal(rnp.getitem(data, key), expected, err_msg=repr(key))


@settings(max_examples=60)
@given(key=advanced_keys((6, 3, 4)), n=st.integers(3, 7))
def test_advanced_indexing_with_symbolic_dims_matches_jax(key, n):
    """Keys drawn for a first axis of 6, applied to (n, 3, 4): masks on axis 0 only fit
    n = 6; the deduced dims at n are jax's, or jax fails where a check fails."""
    spec = T((relax.sym("n", lower=3), 3, 4), "float32")
    if _jax_misplaces(key):
        return
    expected = _jax_or_error(
        lambda: jax.eval_shape(lambda x: x[key], jax.ShapeDtypeStruct((n, 3, 4), np.float32))
    )
    try:
        deduced = relax.eval_shape(lambda x: x[key], spec)
    except (IndexError, TypeError, ValueError) as error:
        assert isinstance(expected, Exception), f"{key}: we raised {error!r}, jax gives {expected}"
        return
    if isinstance(expected, Exception):
        return  # a run-time check (a mask's length, a broadcast) is what fails at this n
    assert deduced.ndim == len(expected.shape)
    if deduced.shape is not None:
        dims = tuple(arith.subs(d, {"n": n}) for d in deduced.shape)
        free = [d for d in dims if not isinstance(d, int)]
        assert all(s.name.startswith("k") for d in free for s in arith.free_symbols(d))
        assert all(d == e for d, e in zip(dims, expected.shape) if isinstance(d, int))


SYMBOLIC_KEYS = [
    lambda i, m: (slice(None), [-1], slice(None)),
    lambda i, m: (i, slice(None), np.array([[0], [3]])),
    lambda i, m: (np.array([0, -1]), None, i),
    lambda i, m: (Ellipsis, i % 4),
    lambda i, m: (m, slice(1, None), [2, 0]),
    lambda i, m: (i, 1),
    lambda i, m: (slice(None, None, -1), [1, 1]),
    lambda i, m: (True, m, 0),
]


@pytest.mark.parametrize("key", SYMBOLIC_KEYS, ids=range(len(SYMBOLIC_KEYS)))
def test_traced_indices_and_masks_run_against_jax(key):
    """Traced integer and mask indices, symbolic dims, one executable for every n."""

    @relax.jit
    def f(x: T(("n", 3, 4), "float32"), i: T((2,), "int32"), m: T(("n",), "bool")):
        return x[key(i, m)]

    for n, seed in ((3, 0), (5, 1), (4, 2)):
        rng = np.random.default_rng(seed)
        x = rng.standard_normal((n, 3, 4)).astype(np.float32)
        i = rng.integers(-n - 1, n + 1, 2).astype(np.int32)
        m = rng.random(n) < 0.5
        expected = jax.numpy.asarray(x)[key(jax.numpy.asarray(i), m)]
        np.testing.assert_array_equal(f(x, i, m), expected)
    assert f.cache_size() == 1


def test_lists_of_traced_values_are_stacked():
    out = relax.jit(lambda x, i: x[[i, i + 1], 0])(np.arange(12.0).reshape(4, 3), np.int64(1))
    np.testing.assert_array_equal(out, [3.0, 6.0])


@pytest.mark.parametrize("positions", [range(3), range(4, 0, -2), range(2, 2), range(-1, -5, -1)])
def test_a_range_indexes_as_numpy_s_integer_array(positions):
    """numpy accepts ``x[range(...)]`` (picoGPT's ``wpe[range(len(inputs))]``); jax refuses it."""
    x = np.arange(15.0).reshape(5, 3)
    out = relax.jit(lambda x: (x[positions], x[:, range(2)], x.at[positions].add(1.0)))(x)
    np.testing.assert_array_equal(out[0], x[positions])
    np.testing.assert_array_equal(out[1], x[:, range(2)])
    expected = x.copy()
    expected[positions] += 1.0
    np.testing.assert_array_equal(out[2], expected)
    assert out[0].dtype == np.float64 and out[0].shape == x[positions].shape


def test_numpy_constants_indexed_by_traced_values():
    table = np.arange(12.0).reshape(4, 3)

    @relax.jit
    def f(idx):
        return rnp.asarray(table)[idx], rnp.take(table, idx, axis=0), table[:2] + idx[:, None]

    idx = np.array([3, 0])
    rows, taken, summed = f(idx)
    np.testing.assert_array_equal(rows, table[idx])
    np.testing.assert_array_equal(taken, table[idx])
    np.testing.assert_array_equal(summed, table[:2] + idx[:, None])
