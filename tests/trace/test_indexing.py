"""numpy-style indexing of tracers: shapes against jax.eval_shape, static and symbolic."""

import jax
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import relaxjax as relax
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
