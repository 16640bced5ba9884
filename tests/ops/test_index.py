"""take, strided_slice and ``x[key]`` (getitem): deduction against jax (oracle),
references against jax numerics, and every error path."""

from __future__ import annotations

import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import relaxjax as relax
import relaxjax.numpy as rnp
from relaxjax import arith
from relaxjax.errors import InconclusiveShapeError, ShapeError
from relaxjax.ir import TensorInfo
from relaxjax.ops import get
from relaxjax.ops.index import StridedSliceAttrs, TakeAttrs, slice_extent

sys.path.insert(0, str(Path(__file__).parent))
from oracle import (  # noqa: E402
    ALL_DTYPES,
    INT_DTYPES,
    M,
    N,
    assert_close,
    assert_precise,
    check_coarsening,
    check_lowering,
    check_sound,
    deduce,
    envs,
    random_array,
    shapes,
    tensors,
)

BOUNDS = (None, None, 0, 1, 2, -1, -2, 5, -5, N, M, N - 1, N + 1, M - 2)
STEPS = (1, 1, 2, 3, -1, -2)


def _subs(value, env):
    return value if value is None else arith.subs(value, env)


# --------------------------------------------------------------------------- take


@st.composite
def take_cases(draw):
    a = draw(tensors(min_rank=0))
    indices = TensorInfo(draw(shapes(0, 2)), draw(st.sampled_from(INT_DTYPES + ("bool",))))
    axis = draw(st.integers(-a.ndim - 1, a.ndim))
    mode = draw(st.sampled_from(["fill", "clip", "wrap"]))
    return a, indices, TakeAttrs(axis, mode)


@given(case=take_cases(), env=envs())
def test_take_oracle(case, env):
    a, indices, attrs = case
    fn = lambda x, i: jnp.take(x, i, axis=attrs.axis, mode=attrs.mode)  # noqa: E731
    check_sound("take", [a, indices], attrs, fn, env)
    check_coarsening("take", [a, indices], attrs)


def test_take_is_precise_and_checks_empty_axes():
    deduction = deduce("take", [TensorInfo((N, 4)), TensorInfo((M, 2), "int32")], TakeAttrs(0))
    assert_precise(deduction, (M, 2, 4))
    (check,) = deduction.checks
    assert check.holds({"n": 0, "m": 0}) and not check.holds({"n": 0, "m": 1})
    assert check.holds({"n": 3, "m": 1})
    assert "the axis is empty" in check.message
    deduction = deduce("take", [TensorInfo((N, 4)), TensorInfo((3,), "int64")], TakeAttrs(-1))
    assert_precise(deduction, (N, 3))
    assert deduction.checks == ()


@settings(max_examples=20)
@given(
    shape=st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple),
    dtype=st.sampled_from(ALL_DTYPES),
    mode=st.sampled_from(["fill", "clip", "wrap"]),
    data=st.data(),
)
def test_take_reference_matches_jax(shape, dtype, mode, data):
    rng = np.random.default_rng(0)
    x = random_array(rng, shape, dtype)
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    size = shape[axis]
    index_shape = data.draw(st.lists(st.integers(0, 3), max_size=2).map(tuple))
    indices = rng.integers(-2 * size, 2 * size, size=index_shape)
    ours = get("take").reference(x, indices, attrs=TakeAttrs(axis, mode))
    assert_close(ours, jnp.take(x, indices, axis=axis, mode=mode), f"take {mode}")


def test_index_mode_matches_jax_indexing():
    x = np.arange(12.0).reshape(6, 2)
    indices = np.array([-1, 6, -7, 100, 2])
    ours = get("take").reference(x, indices, attrs=TakeAttrs(0, "index"))
    assert_close(ours, jnp.asarray(x)[indices])


# --------------------------------------------------------------------------- strided_slice


@st.composite
def slice_cases(draw):
    x = draw(tensors(min_rank=1))
    axes = draw(
        st.lists(st.integers(-x.ndim, x.ndim - 1), max_size=x.ndim, unique_by=lambda a: a % x.ndim)
    )
    begin, end, step, drop = [], [], [], []
    for axis in axes:
        if draw(st.integers(0, 3)) == 0:  # an integer index
            index = draw(st.sampled_from([0, 1, 3, -1, -2, N - 1, M]))
            begin.append(index)
            end.append(None if isinstance(index, int) and index == -1 else index + 1)
            step.append(1)
            drop.append(axis)
        else:
            begin.append(draw(st.sampled_from(BOUNDS)))
            end.append(draw(st.sampled_from(BOUNDS)))
            step.append(draw(st.sampled_from(STEPS)))
    attrs = StridedSliceAttrs(tuple(axes), tuple(begin), tuple(end), tuple(step), tuple(drop))
    return x, attrs


def _jax_key(attrs, ndim, env):
    key = [slice(None)] * ndim
    for axis, b, e, s in zip(attrs.axes, attrs.begin, attrs.end, attrs.step):
        if axis in attrs.drop:
            key[axis] = _subs(b, env)
        else:
            key[axis] = slice(_subs(b, env), _subs(e, env), s)
    return tuple(key)


@given(case=slice_cases(), env=envs())
def test_strided_slice_oracle(case, env):
    x, attrs = case
    key = _jax_key(attrs, x.ndim, env)
    check_sound("strided_slice", [x], attrs, lambda a: a[key], env)
    check_coarsening("strided_slice", [x], attrs)


@given(
    size=st.integers(0, 7),
    begin=st.one_of(st.none(), st.integers(-9, 9)),
    end=st.one_of(st.none(), st.integers(-9, 9)),
    step=st.sampled_from([1, 2, 3, -1, -2, -3]),
)
def test_slice_extent_is_python_slicing(size, begin, end, step):
    start, length = slice_extent(size, begin, end, step)
    expected = range(size)[begin:end:step]
    assert length == len(expected)
    if length:
        assert start == expected[0]


@given(
    n=st.integers(0, 6),
    begin=st.sampled_from(BOUNDS),
    end=st.sampled_from(BOUNDS),
    step=st.sampled_from(STEPS),
)
def test_symbolic_slice_extent_is_exact_for_every_value(n, begin, end, step):
    env = {"n": n, "m": 3}
    start, length = slice_extent(N, begin, end, step)
    expected = range(n)[slice(_subs(begin, env), _subs(end, env), step)]
    assert arith.subs(length, env) == len(expected)
    if len(expected):
        assert arith.subs(start, env) == expected[0]


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        ((slice(None, None, -1),), (N, 4)),
        ((slice(None, None, 2),), ((N + 1) // 2, 4)),
        ((slice(1, None), slice(1, 3)), (arith.max_(N, 1) - 1, 2)),
        ((slice(None, -1),), (arith.max_(N, 1) - 1, 4)),
        ((slice(None), 0), (N,)),
    ],
)
def test_standard_slices_are_precise(key, expected):
    spec = relax.Tensor((N, 4), "float32")
    result = relax.eval_shape(lambda x: x[key], spec)
    assert result.shape == expected
    for n in range(5):
        concrete = jax.eval_shape(lambda x: x[key], jax.ShapeDtypeStruct((n, 4), np.float32))
        assert tuple(arith.subs(d, {"n": n}) for d in result.shape) == concrete.shape


def test_symbolic_bounds_are_exact_and_clean_when_provably_nonnegative():
    p = arith.sym("p", lower=1)
    spec = relax.Tensor((p, 4), "float32")
    assert relax.eval_shape(lambda x: x[: p - 1], spec).shape == (p - 1, 4)
    assert relax.eval_shape(lambda x: x[1:], spec).shape == (p - 1, 4)
    # without a lower bound, p - 1 may be -1 (which counts from the end): still exact
    shape = relax.eval_shape(lambda x: x[: N - 1], relax.Tensor((N, 4), "float32")).shape
    assert [arith.subs(shape[0], {"n": v}) for v in range(5)] == [0, 0, 1, 2, 3]


@settings(max_examples=20)
@given(case=slice_cases(), seed=st.integers(0, 2**16))
def test_strided_slice_reference_matches_jax(case, seed):
    x, attrs = case
    env = {"n": 3, "m": 2}
    concrete = StridedSliceAttrs(
        attrs.axes,
        tuple(_subs(b, env) for b in attrs.begin),
        tuple(_subs(e, env) for e in attrs.end),
        attrs.step,
        attrs.drop,
    )
    array = random_array(
        np.random.default_rng(seed), tuple(arith.subs(d, env) for d in x.shape), x.dtype
    )
    key = _jax_key(attrs, x.ndim, env)
    try:
        expected = jnp.asarray(array)[key]
    except IndexError:
        with pytest.raises(ShapeError, match="index out of bounds"):
            get("strided_slice").reference(array, attrs=concrete)
        return
    assert_close(get("strided_slice").reference(array, attrs=concrete), expected, str(key))


# --------------------------------------------------------------------------- getitem


KEYS = [
    0,
    -1,
    (slice(None), 1),
    (1, slice(None, None, -1)),
    (None, 0),
    (Ellipsis, 2),
    (Ellipsis, None),
    (0, Ellipsis, None, slice(1, None)),
    (slice(2, 0, -1), None, slice(None), None),
    (slice(None),),
    (),
    np.array([0, 2, -1]),
    (slice(None), np.array([[1], [0]])),
    (Ellipsis, np.array([1, 1])),
    (None, np.array([1])),
    (slice(1, None), np.array([2, 0]), 0),
    (0, np.array([2, 0])),
    (np.array(1), None, slice(None, None, 2)),
]


@pytest.mark.parametrize("key", KEYS, ids=repr)
def test_getitem_matches_jax(key):
    spec = relax.Tensor((N, 3, 4), "float32")
    deduced = relax.eval_shape(lambda x: x[key], spec)
    for n in (1, 3):
        concrete = jax.ShapeDtypeStruct((n, 3, 4), np.float32)
        expected = jax.eval_shape(lambda x: x[key], concrete)
        shape = tuple(arith.subs(d, {"n": n}) for d in deduced.shape)
        assert shape == expected.shape and deduced.dtype == expected.dtype
    data = np.arange(2 * 3 * 4, dtype=np.float32).reshape(2, 3, 4)
    assert_close(rnp.getitem(data, key), jnp.asarray(data)[key], repr(key))


def test_getitem_with_symbolic_index_and_traced_index():
    spec = relax.Tensor((N, 4), "float32")
    assert relax.eval_shape(lambda x: x[N - 1], spec).shape == (4,)
    index = relax.Tensor((), "int32")
    assert relax.eval_shape(lambda x, i: x[i], spec, index).shape == (4,)
    assert relax.eval_shape(lambda x, i: x[:, i], spec, index).shape == (N,)


def test_getitem_errors():
    spec = relax.Tensor((N, 4), "float32")
    with pytest.raises(ShapeError, match=r"too many indices for array: array is 2-dimensional"):
        relax.eval_shape(lambda x: x[0, 0, 0], spec)
    with pytest.raises(ShapeError, match=r"index 5 is out of bounds for axis 1 of \(n, 4\)"):
        relax.eval_shape(lambda x: x[:, 5], spec)
    with pytest.raises(IndexError, match=r"an index can only have a single ellipsis"):
        relax.eval_shape(lambda x: x[..., ...], spec)
    with pytest.raises(TypeError, match=r"Using a non-tuple sequence"):
        relax.eval_shape(lambda x: x[[0, 1]], spec)
    with pytest.raises(TypeError, match=r"Indexer must have integer or boolean type, got "):
        relax.eval_shape(lambda x: x[1.0], spec)
    with pytest.raises(TypeError, match=r"indexer with type float32"):
        relax.eval_shape(lambda x: x[x[:, 0]], spec)
    with pytest.raises(TypeError, match=r"string indexing is not supported; got index 'a'"):
        relax.eval_shape(lambda x: x["a"], spec)
    with pytest.raises(TypeError, match=r"unsupported index \{\} of type dict"):
        relax.eval_shape(lambda x: x[{}], spec)
    with pytest.raises(TypeError, match=r"slice start must be a static int or a symbolic dim"):
        relax.eval_shape(lambda x, i: x[i:], spec, relax.Tensor((), "int32"))
    with pytest.raises(ValueError, match=r"slice step cannot be zero"):
        relax.eval_shape(lambda x: x[::0], spec)
    with pytest.raises(InconclusiveShapeError, match=r"the sign of the slice step n - 1"):
        relax.eval_shape(lambda x: x[:: N - 1], spec)


# --------------------------------------------------------------------------- lowering


def _index_data(rng, shape, dtype, position):
    """Indices well out of range on both sides (position 1), other operands uniform."""
    if position == 1:
        return rng.integers(-9, 9, size=shape).astype(dtype)
    return random_array(rng, shape, dtype)


@settings(max_examples=60)
@given(case=take_cases(), index_mode=st.booleans(), env=envs())
def test_take_lowering_matches_reference(case, index_mode, env):
    a, indices, attrs = case
    if index_mode:
        attrs = TakeAttrs(attrs.axis, "index")
    if deduce("take", [a, indices], attrs).error is None:
        check_lowering("take", [a, indices], attrs, env, data=_index_data)


@settings(max_examples=60)
@given(case=slice_cases(), env=envs())
def test_strided_slice_lowering_matches_reference(case, env):
    x, attrs = case
    if deduce("strided_slice", [x], attrs).error is None:
        check_lowering("strided_slice", [x], attrs, env)


# --------------------------------------------------------------------------- errors


def test_take_errors():
    with pytest.raises(TypeError, match=r"take: indices must have an integer type, got float32"):
        get("take").deduce([TensorInfo((3,)), TensorInfo((2,), "float32")], TakeAttrs(0))
    with pytest.raises(ShapeError, match=r"take: axis 1 is out of bounds for an array of rank 1"):
        get("take").deduce([TensorInfo((3,)), TensorInfo((2,), "int32")], TakeAttrs(1))
    with pytest.raises(ShapeError, match=r"take: cannot take \(2,\) indices from axis 0 of \(0,\)"):
        get("take").deduce([TensorInfo((0,)), TensorInfo((2,), "int32")], TakeAttrs(0))
    with pytest.raises(ValueError, match=r"take: mode must be one of"):
        TakeAttrs(0, "promise_in_bounds")
    with pytest.raises(ValueError, match=r"take: invalid mode 'raise'"):
        rnp.take(np.arange(3), np.array([0]), mode="raise")


def test_strided_slice_attr_errors():
    with pytest.raises(ValueError, match=r"axes, begin, end and step must have the same length"):
        StridedSliceAttrs((0,), (None,), (), (1,))
    with pytest.raises(ValueError, match=r"drop axes \(1,\) must be among \(0,\)"):
        StridedSliceAttrs((0,), (0,), (1,), (1,), (1,))
    with pytest.raises(ValueError, match=r"strided_slice: duplicate axis in \(0, 0\)"):
        StridedSliceAttrs((0, 0), (0, 0), (1, 1), (1, 1))
    with pytest.raises(TypeError, match=r"slice bounds must be ints, dims or None"):
        StridedSliceAttrs((0,), (0.5,), (None,), (1,))
    with pytest.raises(ShapeError, match=r"strided_slice: axis 2 is out of bounds"):
        get("strided_slice").deduce([TensorInfo((2, 3))], StridedSliceAttrs((2,), (0,), (1,), (1,)))


def test_unknown_rank_and_dims():
    unknown = TensorInfo(dtype="int8")
    attrs = StridedSliceAttrs((0,), (1,), (None,), (1,), ())
    assert get("strided_slice").deduce([unknown], attrs)[0] == unknown
    ranked = TensorInfo(dtype="int8", ndim=2)
    attrs = StridedSliceAttrs((0,), (1,), (2,), (1,), (0,))
    assert get("strided_slice").deduce([ranked], attrs)[0] == TensorInfo(dtype="int8", ndim=1)
    info, _ = get("take").deduce([ranked, TensorInfo((3, 3), "int32")], TakeAttrs(1))
    assert info == TensorInfo(dtype="int8", ndim=3)
