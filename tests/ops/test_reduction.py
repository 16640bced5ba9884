"""Reductions and cumsum: deduction against jax (oracle), references against jax
numerics, and every error path."""

from __future__ import annotations

import sys
from pathlib import Path

import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from relaxjax import arith
from relaxjax.errors import ShapeError
from relaxjax.ir import PrimInfo, TensorInfo
from relaxjax.ops import get
from relaxjax.ops.arg_reduction import ArgReduceAttrs
from relaxjax.ops.reduction import AccumulateAttrs, ReduceAttrs
from relaxjax.ops.scan import CumsumAttrs
from relaxjax.ops.statistics import VarAttrs

sys.path.insert(0, str(Path(__file__).parent))
from oracle import (  # noqa: E402
    ALL_DTYPES,
    FLOAT_DTYPES,
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
)

ACCUMULATE = {"sum": jnp.sum, "prod": jnp.prod, "mean": jnp.mean}
EXTREMA = {"max": jnp.max, "min": jnp.min}
ARG = {"argmax": jnp.argmax, "argmin": jnp.argmin}
# jax gives uint64 for these, which relaxjax does not support (tested separately)
SUPPORTED_SUM_DTYPES = tuple(d for d in ALL_DTYPES if d != "uint8")


@st.composite
def axis_specs(draw, rank: int):
    """None, an int or a tuple of distinct ints, in range (mostly) and possibly negative."""
    candidates = list(range(-rank, rank)) * 4 + [-rank - 1, rank]
    kind = draw(st.sampled_from(["none", "int", "tuple"]))
    if kind == "none":
        return None
    if kind == "int":
        return draw(st.sampled_from(candidates))
    return tuple(
        draw(
            st.lists(st.sampled_from(candidates), max_size=3).map(lambda a: tuple(dict.fromkeys(a)))
        )
    )


def _tuple(axis):
    return None if axis is None else (axis,) if isinstance(axis, int) else axis


# --------------------------------------------------------------------------- oracle


@given(
    data=st.data(),
    name=st.sampled_from(sorted(ACCUMULATE) + sorted(EXTREMA) * 2),
    shape=shapes(0, 3),
    dtype=st.sampled_from(SUPPORTED_SUM_DTYPES),
    keepdims=st.booleans(),
    env=envs(),
)
def test_reduction_oracle(data, name, shape, dtype, keepdims, env):
    axis = data.draw(axis_specs(len(shape)))
    x = TensorInfo(shape, dtype)
    if name in EXTREMA:
        attrs = ReduceAttrs(_tuple(axis), keepdims)
        fn = EXTREMA[name]
    else:
        attrs = AccumulateAttrs(_tuple(axis), keepdims)
        fn = ACCUMULATE[name]
    check_sound(name, [x], attrs, lambda a: fn(a, axis=axis, keepdims=keepdims), env)
    check_coarsening(name, [x], attrs)


@given(
    data=st.data(),
    name=st.sampled_from(sorted(ACCUMULATE)),
    shape=shapes(0, 3),
    source=st.sampled_from(ALL_DTYPES),
    target=st.sampled_from(ALL_DTYPES),
    env=envs(),
)
def test_reduction_dtype_argument_oracle(data, name, shape, source, target, env):
    if name == "mean" and target not in FLOAT_DTYPES:
        target = "float32"
    axis = data.draw(axis_specs(len(shape)))
    attrs = AccumulateAttrs(_tuple(axis), False, target)
    fn = ACCUMULATE[name]
    x = TensorInfo(shape, source)
    check_sound(name, [x], attrs, lambda a: fn(a, axis=axis, dtype=target), env)


@given(
    data=st.data(),
    shape=shapes(0, 3),
    dtype=st.sampled_from(ALL_DTYPES),
    ddof=st.integers(0, 3),
    keepdims=st.booleans(),
    env=envs(),
)
def test_var_oracle(data, shape, dtype, ddof, keepdims, env):
    axis = data.draw(axis_specs(len(shape)))
    attrs = VarAttrs(_tuple(axis), keepdims, None, ddof)
    fn = lambda a: jnp.var(a, axis=axis, ddof=ddof, keepdims=keepdims)  # noqa: E731
    check_sound("var", [TensorInfo(shape, dtype)], attrs, fn, env)


@given(
    data=st.data(),
    name=st.sampled_from(sorted(ARG)),
    shape=shapes(0, 3),
    dtype=st.sampled_from(ALL_DTYPES),
    keepdims=st.booleans(),
    env=envs(),
)
def test_arg_reduction_oracle(data, name, shape, dtype, keepdims, env):
    axis = data.draw(st.one_of(st.none(), st.integers(-len(shape) - 1, len(shape))))
    attrs = ArgReduceAttrs(axis, keepdims)
    fn = ARG[name]
    x = TensorInfo(shape, dtype)
    check_sound(name, [x], attrs, lambda a: fn(a, axis=axis, keepdims=keepdims), env)
    check_coarsening(name, [x], attrs)


@given(
    shape=shapes(0, 3),
    dtype=st.sampled_from(ALL_DTYPES),
    target=st.one_of(st.none(), st.sampled_from(ALL_DTYPES)),
    data=st.data(),
    env=envs(),
)
def test_cumsum_oracle(shape, dtype, target, data, env):
    axis = data.draw(st.one_of(st.none(), st.integers(-len(shape) - 1, len(shape))))
    attrs = CumsumAttrs(axis, target)
    x = TensorInfo(shape, dtype)
    check_sound("cumsum", [x], attrs, lambda a: jnp.cumsum(a, axis=axis, dtype=target), env)
    check_coarsening("cumsum", [x], attrs)


# --------------------------------------------------------------------------- precision


@pytest.mark.parametrize(
    ("name", "attrs", "expected"),
    [
        ("sum", AccumulateAttrs((1,)), (N,)),
        ("sum", AccumulateAttrs((1,), keepdims=True), (N, 1)),
        ("sum", AccumulateAttrs(), ()),
        ("mean", AccumulateAttrs((0, 1)), ()),
        ("prod", AccumulateAttrs((0,), keepdims=True), (1, M)),
        ("var", VarAttrs((0,)), (M,)),
        ("max", ReduceAttrs((1,)), (N,)),
        ("min", ReduceAttrs(None, keepdims=True), (1, 1)),
        ("argmax", ArgReduceAttrs(0), (M,)),
        ("argmin", ArgReduceAttrs(None, keepdims=True), (1, 1)),
        ("cumsum", CumsumAttrs(1), (N, M)),
        ("cumsum", CumsumAttrs(None), (N * M,)),
    ],
)
def test_reductions_of_symbolic_shapes_are_precise(name, attrs, expected):
    deduction = deduce(name, [TensorInfo((N, M), "float32")], attrs)
    assert_precise(deduction, expected)


def test_extrema_check_that_the_reduced_axes_are_not_empty():
    deduction = deduce("max", [TensorInfo((N, 3), "float32")], ReduceAttrs((0,)))
    (check,) = deduction.checks
    assert check.kind == "le" and check.args == (1, N)
    assert not check.holds({"n": 0}) and check.holds({"n": 2})
    assert "zero-size array" in check.message
    # a reduced axis that is provably nonempty needs no check
    assert deduce("max", [TensorInfo((N, 3), "float32")], ReduceAttrs((1,))).checks == ()
    assert deduce("sum", [TensorInfo((N, 3), "float32")], AccumulateAttrs((0,))).checks == ()


def test_unknown_rank_and_unknown_dims():
    unknown_rank = TensorInfo(dtype="float32")
    assert get("sum").deduce([unknown_rank], AccumulateAttrs())[0] == TensorInfo((), "float32")
    assert get("sum").deduce([unknown_rank], AccumulateAttrs((0,)))[0] == unknown_rank
    rank2 = TensorInfo(dtype="int32", ndim=2)
    assert get("sum").deduce([rank2], AccumulateAttrs((0,)))[0] == TensorInfo(dtype="int64", ndim=1)
    assert get("max").deduce([rank2], ReduceAttrs((0,), True))[0] == TensorInfo(
        dtype="int32", ndim=2
    )
    assert get("cumsum").deduce([rank2], CumsumAttrs())[0] == TensorInfo(dtype="int32", ndim=1)


def test_python_scalars_reduce_as_0d_tensors():
    info, _ = get("sum").deduce([PrimInfo("int64", 3, weak=True)], AccumulateAttrs())
    assert info == TensorInfo((), "int64")
    assert get("sum").reference(3, attrs=AccumulateAttrs()).dtype == np.int64


# --------------------------------------------------------------------------- numerics


@st.composite
def concrete_cases(draw, dtypes=ALL_DTYPES):
    shape = tuple(draw(st.lists(st.integers(1, 4), max_size=3)))
    dtype = draw(st.sampled_from(dtypes))
    axis = draw(axis_specs(len(shape)).filter(lambda a: _valid(a, len(shape))))
    return shape, dtype, axis


def _valid(axis, rank):
    axes = _tuple(axis) or ()
    normalised = [a % rank if rank else a for a in axes]
    return all(-rank <= a < rank for a in axes) and len(set(normalised)) == len(axes)


@settings(max_examples=25)
@given(
    case=concrete_cases(SUPPORTED_SUM_DTYPES),
    name=st.sampled_from(sorted(ACCUMULATE) + sorted(EXTREMA) + ["var"]),
    keepdims=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_reduction_reference_matches_jax(case, name, keepdims, seed):
    shape, dtype, axis = case
    x = random_array(np.random.default_rng(seed), shape, dtype, low=-2, high=2)
    if name in EXTREMA:
        attrs, fn = ReduceAttrs(_tuple(axis), keepdims), EXTREMA[name]
    elif name == "var":
        attrs, fn = (
            VarAttrs(_tuple(axis), keepdims, None, 1),
            lambda a, **k: jnp.var(a, ddof=1, **k),
        )
    else:
        attrs, fn = AccumulateAttrs(_tuple(axis), keepdims), ACCUMULATE[name]
    ours = get(name).reference(x, attrs=attrs)
    assert_close(ours, fn(x, axis=axis, keepdims=keepdims), f"{name} {shape} {dtype} {axis}")


@settings(max_examples=15)
@given(
    case=concrete_cases(),
    name=st.sampled_from(sorted(ARG)),
    keepdims=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_arg_reduction_reference_matches_jax(case, name, keepdims, seed):
    shape, dtype, _ = case
    axis = None if not shape else len(shape) - 1
    x = random_array(np.random.default_rng(seed), shape, dtype, low=-2, high=2)
    ours = get(name).reference(x, attrs=ArgReduceAttrs(axis, keepdims))
    assert_close(ours, ARG[name](x, axis=axis, keepdims=keepdims), f"{name} {shape} {dtype}")


@settings(max_examples=15)
@given(
    case=concrete_cases(),
    target=st.sampled_from((None, "int8", "float32", "int64", "bool")),
    data=st.data(),
)
def test_cumsum_reference_matches_jax(case, target, data):
    shape, dtype, _ = case
    axis = data.draw(st.sampled_from([None, *range(-len(shape), len(shape))]))
    x = random_array(np.random.default_rng(0), shape, dtype, low=-2, high=2)
    ours = get("cumsum").reference(x, attrs=CumsumAttrs(axis, target))
    assert_close(ours, jnp.cumsum(x, axis=axis, dtype=target), f"cumsum {shape} {axis}")


@pytest.mark.parametrize("dtype", ["int8", "bool", "float16"])
def test_sum_and_prod_with_dtype_match_jax(dtype):
    x = random_array(np.random.default_rng(1), (3, 5), dtype, low=-4, high=4)
    for name, fn in [("sum", jnp.sum), ("prod", jnp.prod)]:
        for target in ("int8", "float32", "bool"):
            ours = get(name).reference(x, attrs=AccumulateAttrs((1,), False, target))
            assert_close(ours, fn(x, axis=1, dtype=target), f"{name} {dtype} -> {target}")


def test_nan_handling_matches_jax():
    x = np.array([[1.0, np.nan, 3.0], [np.nan, 0.0, -1.0]], dtype=np.float32)
    for name, fn in {**EXTREMA, **ARG}.items():
        assert_close(get(name).reference(x, attrs=get(name).Attrs()), fn(x), name)
        attrs = ReduceAttrs((1,)) if name in EXTREMA else ArgReduceAttrs(1)
        assert_close(get(name).reference(x, attrs=attrs), fn(x, axis=1), name)


def test_mean_and_var_of_empty_axes_are_nan_like_jax():
    x = np.zeros((0, 3), np.float32)
    assert_close(get("mean").reference(x, attrs=AccumulateAttrs((0,))), jnp.mean(x, axis=0))
    assert_close(get("var").reference(x, attrs=VarAttrs((0,))), jnp.var(x, axis=0))
    y = np.ones((2, 3), np.float32)
    assert_close(get("var").reference(y, attrs=VarAttrs((1,), ddof=3)), jnp.var(y, axis=1, ddof=3))


# --------------------------------------------------------------------------- lowering


def _lowers(name, operands, attrs, env):
    """Check the lowered kernel against the reference when the program is valid."""
    if deduce(name, operands, attrs).error is None:
        check_lowering(name, operands, attrs, env)


@settings(max_examples=80)
@given(
    data=st.data(),
    name=st.sampled_from(sorted(ACCUMULATE) + sorted(EXTREMA) + ["var"]),
    shape=shapes(0, 3),
    dtype=st.sampled_from(SUPPORTED_SUM_DTYPES),
    keepdims=st.booleans(),
    env=envs(),
)
def test_reduction_lowering_matches_reference(data, name, shape, dtype, keepdims, env):
    axis = _tuple(data.draw(axis_specs(len(shape))))
    if name in EXTREMA:
        attrs = ReduceAttrs(axis, keepdims)
    elif name == "var":
        attrs = VarAttrs(axis, keepdims, None, data.draw(st.integers(0, 2)))
    else:
        target = data.draw(st.sampled_from([None, "float32", "int8", "bool"]))
        attrs = AccumulateAttrs(axis, keepdims, "float64" if name == "mean" and target else target)
    _lowers(name, [TensorInfo(shape, dtype)], attrs, env)


@settings(max_examples=30)
@given(
    data=st.data(),
    name=st.sampled_from(sorted(ARG) + ["cumsum"]),
    shape=shapes(0, 3),
    dtype=st.sampled_from(ALL_DTYPES),
    env=envs(),
)
def test_arg_reduction_and_cumsum_lowering_matches_reference(data, name, shape, dtype, env):
    axis = data.draw(st.one_of(st.none(), st.integers(-len(shape), max(len(shape) - 1, 0))))
    if name == "cumsum":
        attrs = CumsumAttrs(axis, data.draw(st.sampled_from([None, "int8", "float32"])))
    else:
        attrs = ArgReduceAttrs(axis, data.draw(st.booleans()))
    _lowers(name, [TensorInfo(shape, dtype)], attrs, env)


def test_lowered_nan_handling_matches_reference():
    x = TensorInfo((N, M), "float32")

    def data(rng, shape, dtype, position):
        values = rng.uniform(-3, 3, size=shape).astype(dtype)
        values[rng.random(shape) < 0.3] = np.nan
        return values

    for name, attrs in [("max", ReduceAttrs((1,))), ("argmax", ArgReduceAttrs(1))]:
        assert check_lowering(name, [x], attrs, {"n": 4, "m": 5}, data=data)


@pytest.mark.parametrize(
    ("name", "attrs", "expected"),
    [
        ("sum", AccumulateAttrs((0,)), 0.0),
        ("prod", AccumulateAttrs((0,)), 1.0),
        ("mean", AccumulateAttrs((0,)), np.nan),
        ("var", VarAttrs((0,)), np.nan),
    ],
)
def test_empty_reductions_write_their_identity(name, attrs, expected):
    from relaxjax.tir import interpreter

    kernel = get(name).lower([TensorInfo((N, 3))], attrs, TensorInfo((3,)))
    out = np.full((3,), 7.0, np.float32)  # an empty reduction must not leave this
    interpreter.run(kernel, np.zeros((0, 3), np.float32), out)
    np.testing.assert_array_equal(out, np.full((3,), expected, np.float32))


def test_kernels_are_shape_generic_and_dedupe():
    k = arith.sym("k")
    first = get("sum").lower([TensorInfo((N, 4))], AccumulateAttrs((0,)), TensorInfo((4,)))
    second = get("sum").lower([TensorInfo((k, 4))], AccumulateAttrs((0,)), TensorInfo((4,)))
    assert first == second
    assert [p.name for p in first.params] == ["x", "sum"]
    assert "d0" in str(first)


# --------------------------------------------------------------------------- errors


def test_axis_errors_name_the_axis_and_rank():
    x = TensorInfo((2, 3), "float32")
    with pytest.raises(ShapeError, match=r"sum: axis 2 is out of bounds for an array of rank 2"):
        get("sum").deduce([x], AccumulateAttrs((2,)))
    with pytest.raises(ShapeError, match=r"max: duplicate value in axis \(0, -2\)"):
        get("max").deduce([x], ReduceAttrs((0, -2)))
    with pytest.raises(ShapeError, match=r"argmax: axis -3 is out of bounds"):
        get("argmax").deduce([x], ArgReduceAttrs(-3))
    with pytest.raises(ShapeError, match=r"cumsum: axis 0 is out of bounds for an array of rank 0"):
        get("cumsum").deduce([TensorInfo((), "float32")], CumsumAttrs(0))


def test_reducing_a_provably_empty_axis_raises():
    with pytest.raises(ShapeError, match=r"max: zero-size array .* has 0 elements, expected >= 1"):
        get("max").deduce([TensorInfo((0, 3), "float32")], ReduceAttrs((0,)))
    with pytest.raises(ShapeError, match=r"argmin: zero-size array"):
        get("argmin").deduce([TensorInfo((3, 0), "float32")], ArgReduceAttrs(1))


def test_dtype_errors():
    with pytest.raises(TypeError, match=r"sum of uint8 gives uint64 in jax.numpy.*pass dtype="):
        get("sum").deduce([TensorInfo((3,), "uint8")], AccumulateAttrs())
    with pytest.raises(TypeError, match=r"mean: dtype must be a floating dtype, got int32"):
        get("mean").deduce([TensorInfo((3,), "float32")], AccumulateAttrs(dtype="int32"))
    with pytest.raises(TypeError, match=r"var: dtype must be a floating dtype, got bool"):
        get("var").deduce([TensorInfo((3,), "float32")], VarAttrs(dtype="bool"))
    assert get("sum").deduce([TensorInfo((3,), "uint8")], AccumulateAttrs(dtype="int32"))[0] == (
        TensorInfo((), "int32")
    )


def test_attrs_are_validated():
    with pytest.raises(TypeError, match=r"ReduceAttrs.axis must be a tuple of ints or None"):
        ReduceAttrs(axis=0)
    with pytest.raises(ShapeError, match=r"duplicate value in axis \(1, 1\)"):
        AccumulateAttrs(axis=(1, 1))
    with pytest.raises(TypeError, match=r"keepdims must be a bool"):
        ReduceAttrs(keepdims=1)
    with pytest.raises(TypeError, match=r"ddof must be an int"):
        VarAttrs(ddof=1.5)
    with pytest.raises(TypeError, match=r"AccumulateAttrs.dtype: unsupported dtype"):
        AccumulateAttrs(dtype="complex64")
    with pytest.raises(TypeError, match=r"ArgReduceAttrs.axis must be an int"):
        ArgReduceAttrs(axis=(0,))
    assert CumsumAttrs(dtype=np.float32).dtype == "float32"
    with pytest.raises(TypeError, match=r"expects attributes of type ReduceAttrs"):
        get("max").deduce([TensorInfo((2,), "float32")], AccumulateAttrs())


def test_arity_is_checked():
    with pytest.raises(TypeError, match=r"sum takes 1 argument"):
        get("sum").deduce([TensorInfo((2,)), TensorInfo((2,))], AccumulateAttrs())


def test_symbolic_check_message_names_shape():
    k = arith.sym("k")
    deduction = deduce("argmax", [TensorInfo((k, 4), "float32")], ArgReduceAttrs(None))
    (check,) = deduction.checks
    assert "(k, 4)" in check.message and "k * 4" in check.message
