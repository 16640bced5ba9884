"""Creation ops: symbolic shapes and arange lengths against jax, references, errors."""

from __future__ import annotations

import sys
from pathlib import Path

import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from relaxjax import arith, dtypes
from relaxjax.errors import ShapeError
from relaxjax.ir import TensorInfo
from relaxjax.ops import get
from relaxjax.ops.creation import ArangeAttrs, FullAttrs, LikeAttrs, ShapeDtypeAttrs

sys.path.insert(0, str(Path(__file__).parent))
from oracle import (  # noqa: E402
    ALL_DTYPES,
    SYMBOLIC_DIMS,
    M,
    N,
    assert_close,
    assert_precise,
    check_lowering,
    check_sound,
    deduce,
    dims,
    envs,
    per_op,
    random_array,
    shapes,
    weak_scalars,
)

# Dims that are negative for some symbol values exercise the run-time ``nonneg`` check.
MAYBE_NEGATIVE = (N - 1, M - 2, N - M)


FILLS = st.builds(TensorInfo, shapes(max_rank=2), st.sampled_from(ALL_DTYPES))


def creation_dims():
    return dims() | st.sampled_from(MAYBE_NEGATIVE)


def creation_shapes(max_rank=3):
    return st.lists(creation_dims(), max_size=max_rank).map(tuple)


def concrete_shape(shape, env):
    return tuple(arith.subs(d, env) for d in shape)


# --------------------------------------------------------------------------- oracle


@pytest.mark.parametrize("name", ["zeros", "ones"])
@per_op
@given(shape=creation_shapes(), dtype=st.sampled_from(ALL_DTYPES), env=envs())
def test_constant_fill_oracle(name, shape, dtype, env):
    fn = getattr(jnp, name)

    def jax_fn():
        return fn(concrete_shape(shape, env), dtypes.to_numpy(dtype))

    d = check_sound(name, [], ShapeDtypeAttrs(shape, dtype), jax_fn, env)
    assert_precise(d, shape)


@given(
    shape=creation_shapes(),
    fill=st.one_of(
        weak_scalars(), st.builds(TensorInfo, shapes(max_rank=2), st.sampled_from(ALL_DTYPES))
    ),
    dtype=st.sampled_from((None, "float32", "int8", "bool")),
    env=envs(),
)
def test_full_oracle(shape, fill, dtype, env):
    def jax_fn(value):
        return jnp.full(concrete_shape(shape, env), value, dtype and dtypes.to_numpy(dtype))

    check_sound("full", [fill], FullAttrs(shape, dtype), jax_fn, env)


@pytest.mark.parametrize("name", ["zeros_like", "ones_like"])
@per_op
@given(
    like=st.builds(TensorInfo, shapes(), st.sampled_from(ALL_DTYPES)),
    dtype=st.sampled_from((None, "float16", "int64")),
    shape=st.none() | creation_shapes(2),
    env=envs(),
)
def test_like_oracle(name, like, dtype, shape, env):
    fn = getattr(jnp, name)

    def jax_fn(a):
        new_shape = None if shape is None else concrete_shape(shape, env)
        return fn(a, dtype and dtypes.to_numpy(dtype), new_shape)

    d = check_sound(name, [like], LikeAttrs(dtype, shape), jax_fn, env)
    assert_precise(d, like.shape if shape is None else shape)


@given(
    like=st.builds(TensorInfo, shapes(), st.sampled_from(ALL_DTYPES)),
    fill=st.one_of(
        weak_scalars(), st.builds(TensorInfo, shapes(max_rank=2), st.sampled_from(ALL_DTYPES))
    ),
    dtype=st.sampled_from((None, "float32", "uint8")),
    shape=st.none() | creation_shapes(2),
    env=envs(),
)
def test_full_like_oracle(like, fill, dtype, shape, env):
    def jax_fn(a, value):
        new_shape = None if shape is None else concrete_shape(shape, env)
        return jnp.full_like(a, value, dtype and dtypes.to_numpy(dtype), new_shape)

    check_sound("full_like", [like, fill], LikeAttrs(dtype, shape), jax_fn, env)


INT_BOUNDS = st.one_of(st.integers(-4, 6), st.sampled_from(SYMBOLIC_DIMS + (N - 3, -N)))


@given(
    start=INT_BOUNDS,
    stop=INT_BOUNDS,
    step=st.sampled_from([1, 2, 3, -1, -2]),
    env=envs(),
)
def test_arange_symbolic_oracle(start, stop, step, env):
    def jax_fn():
        return jnp.arange(arith.subs(start, env), arith.subs(stop, env), step)

    d = check_sound("arange", [], ArangeAttrs(start, stop, step, "int64"), jax_fn, env)
    assert_precise(d)


@given(
    start=st.floats(-5, 5, allow_nan=False).map(lambda v: round(v, 2)),
    stop=st.floats(-5, 5, allow_nan=False).map(lambda v: round(v, 2)),
    step=st.sampled_from([0.5, 0.3, -0.7, 1.0, 2]),
    dtype=st.sampled_from(["float64", "float32"]),
)
def test_arange_float_oracle(start, stop, step, dtype):
    def jax_fn():
        return jnp.arange(start, stop, step, dtypes.to_numpy(dtype))

    check_sound("arange", [], ArangeAttrs(start, stop, step, dtype), jax_fn, {})


# --------------------------------------------------------------------------- precision


def test_symbolic_shapes_are_kept():
    d = deduce("zeros", [], ShapeDtypeAttrs((N, 4), "float32"))
    assert_precise(d, (N, 4))
    assert d.checks == ()
    d = deduce("ones", [], ShapeDtypeAttrs((N - 1, 2 * M), "int8"))
    assert_precise(d, (N - 1, 2 * M))
    assert [c.relation() for c in d.checks] == ["n - 1 >= 0"]


def test_arange_lengths():
    length = deduce("arange", [], ArangeAttrs(0, N, 1, "int64"))
    assert length.info == TensorInfo((N,), "int64")
    shifted = deduce("arange", [], ArangeAttrs(2, N + 2, 1, "int64")).info.shape[0]
    assert arith.prove_equal(shifted, N)
    strided = deduce("arange", [], ArangeAttrs(0, 2 * N, 2, "int64")).info.shape[0]
    assert arith.prove_equal(strided, N)
    for n in range(6):
        for start, stop, step in [(1, N, 3), (N, 0, -2), (N, M, 1)]:
            got = deduce("arange", [], ArangeAttrs(start, stop, step, "int64")).info.shape[0]
            env = {"n": n, "m": 3}
            values = (arith.subs(start, env), arith.subs(stop, env), step)
            assert arith.subs(got, env) == len(range(*values))


def test_full_with_scalar_and_row_fill_is_precise():
    d = deduce("full", [TensorInfo((), "int32")], FullAttrs((N, 4)))
    assert d.info == TensorInfo((N, 4), "int32")
    d = deduce("full", [TensorInfo((4,), "float16")], FullAttrs((N, 4)))
    assert d.info == TensorInfo((N, 4), "float16") and d.checks == ()
    d = deduce("full", [TensorInfo((M,), "float16")], FullAttrs((N, 4)))
    assert d.info == TensorInfo((N, 4), "float16")
    (check,) = d.checks
    assert [check.holds({"n": 0, "m": m}) for m in range(6)] == [m in (1, 4) for m in range(6)]


def test_like_ops_keep_symbolic_shapes():
    like = TensorInfo((N, M + 1), "bfloat16")
    assert deduce("zeros_like", [like], LikeAttrs()).info == like
    assert deduce("ones_like", [like], LikeAttrs("int8")).info == TensorInfo((N, M + 1), "int8")
    d = deduce("full_like", [like, 2.0], LikeAttrs())
    assert d.info == like and d.checks == ()
    coarse = deduce("zeros_like", [TensorInfo(ndim=2, dtype="int8")], LikeAttrs())
    assert coarse.info == TensorInfo(ndim=2, dtype="int8")


# --------------------------------------------------------------------------- numerics


@pytest.mark.parametrize("dtype", ["bool", "int32", "bfloat16", "float64"])
def test_references_match_jax(dtype):
    rng = np.random.default_rng(0)
    a = random_array(rng, (2, 3), dtype)
    attrs = ShapeDtypeAttrs((2, 3), dtype)
    assert_close(get("zeros").reference(attrs=attrs), jnp.zeros((2, 3), dtypes.to_numpy(dtype)))
    assert_close(get("ones").reference(attrs=attrs), jnp.ones((2, 3), dtypes.to_numpy(dtype)))
    row = random_array(rng, (3,), dtype)
    assert_close(get("full").reference(row, attrs=FullAttrs((2, 3))), jnp.full((2, 3), row))
    assert_close(
        get("full").reference(1.5, attrs=FullAttrs((2,), dtype)),
        jnp.full((2,), 1.5, dtypes.to_numpy(dtype)),
    )
    assert_close(get("full").reference(3, attrs=FullAttrs((2,))), jnp.full((2,), 3))
    assert_close(get("zeros_like").reference(a, attrs=LikeAttrs()), jnp.zeros_like(a))
    assert_close(
        get("ones_like").reference(a, attrs=LikeAttrs("float16", (4,))),
        jnp.ones_like(a, jnp.float16, (4,)),
    )
    assert_close(get("full_like").reference(a, row, attrs=LikeAttrs()), jnp.full_like(a, row))
    assert_close(
        get("full_like").reference(a, 7, attrs=LikeAttrs(shape=(3,))),
        jnp.full_like(a, 7, shape=(3,)),
    )


@pytest.mark.parametrize(
    "bounds",
    [(0, 5, 1), (2, 11, 3), (5, -3, -2), (4, 4, 1), (0.5, 3.2, 0.4), (3.0, -1.0, -0.75)]
    + [(0.5, 5.5, 1.5), (-0.5, 5.5, 2.5), (1.7, 9, 2.9)],
)
@pytest.mark.parametrize("dtype", ["int64", "int8", "float32", "float64", "bfloat16"])
def test_arange_reference_matches_jax(bounds, dtype):
    ours = get("arange").reference(attrs=ArangeAttrs(*bounds, dtype))
    assert_close(ours, jnp.arange(*bounds, dtype=dtypes.to_numpy(dtype)), f"arange{bounds}")


# --------------------------------------------------------------------------- errors


def test_negative_dimension_errors():
    with pytest.raises(
        ShapeError, match=r"zeros: negative dimensions are not allowed: axis 1 of shape \(2, -3\)"
    ):
        get("zeros").deduce([], ShapeDtypeAttrs((2, -3), "float32"))
    with pytest.raises(ShapeError, match=r"ones: negative dimensions.*-n - 1"):
        get("ones").deduce([], ShapeDtypeAttrs((-N - 1,), "float32"))
    with pytest.raises(ValueError, match="negative dimensions"):
        get("zeros").reference(attrs=ShapeDtypeAttrs((-1,), "float32"))


def test_fill_value_that_cannot_broadcast():
    message = (
        r"full: cannot broadcast fill_value of shape \(3,\) to shape \(n, 4\): "
        r"axis 1 has size 3, expected 1 or 4"
    )
    with pytest.raises(ShapeError, match=message):
        get("full").deduce([TensorInfo((3,))], FullAttrs((N, 4)))
    message = r"full_like: cannot broadcast fill_value of shape \(2, 2, 2\) to shape \(n, 4\)"
    with pytest.raises(ShapeError, match=message + ": rank 3 > 2"):
        get("full_like").deduce([TensorInfo((N, 4)), TensorInfo((2, 2, 2))], LikeAttrs())


def test_arange_attribute_errors():
    with pytest.raises(ValueError, match="arange: step must not be zero"):
        ArangeAttrs(0, 5, 0, "int64")
    with pytest.raises(TypeError, match="arange: step must be a constant, got the symbolic n"):
        ArangeAttrs(0, 5, N, "int64")
    with pytest.raises(TypeError, match="symbolic bounds need integer start, stop and step"):
        ArangeAttrs(0.5, N, 1, "float64")
    with pytest.raises(TypeError, match="arange: stop must be an int, a float or a symbolic dim"):
        ArangeAttrs(0, "5", 1, "int64")
    with pytest.raises(TypeError, match="needs concrete bounds"):
        get("arange").reference(attrs=ArangeAttrs(0, N, 1, "int64"))


def test_shape_attribute_errors():
    with pytest.raises(TypeError, match="a shape must hold ints or symbolic dims"):
        ShapeDtypeAttrs((2, 1.5), "float32")
    with pytest.raises(TypeError, match="unsupported dtype"):
        ShapeDtypeAttrs((2,), "complex128")
    with pytest.raises(TypeError, match="zeros takes 0 argument"):
        get("zeros").deduce([TensorInfo((2,))], ShapeDtypeAttrs((2,), "float32"))


# --------------------------------------------------------------------------- lowering


@pytest.mark.parametrize("name", ["zeros", "ones"])
@per_op
@given(shape=creation_shapes(), dtype=st.sampled_from(ALL_DTYPES), env=envs(0, 3))
def test_constant_fill_lowering(name, shape, dtype, env):
    check_lowering(name, [], ShapeDtypeAttrs(shape, dtype), env)


@given(
    shape=creation_shapes(),
    fill=st.one_of(weak_scalars(), FILLS),
    dtype=st.sampled_from((None, "float32", "int8", "bool")),
    env=envs(0, 3),
)
def test_full_lowering(shape, fill, dtype, env):
    if deduce("full", [fill], FullAttrs(shape, dtype)).error is None:
        check_lowering("full", [fill], FullAttrs(shape, dtype), env)


@pytest.mark.parametrize("name", ["zeros_like", "ones_like", "full_like"])
@per_op
@given(
    like=st.builds(TensorInfo, shapes(), st.sampled_from(ALL_DTYPES)),
    fill=st.one_of(weak_scalars(), FILLS),
    dtype=st.sampled_from((None, "float16", "int64")),
    shape=st.none() | creation_shapes(2),
    env=envs(0, 3),
)
def test_like_lowering(name, like, fill, dtype, shape, env):
    operands = [like, fill] if name == "full_like" else [like]
    if deduce(name, operands, LikeAttrs(dtype, shape)).error is None:
        check_lowering(name, operands, LikeAttrs(dtype, shape), env)


@given(
    start=INT_BOUNDS,
    stop=INT_BOUNDS,
    step=st.sampled_from([1, 2, 3, -1, -2]),
    dtype=st.sampled_from(["int64", "int32", "float32"]),
    env=envs(0, 3),
)
def test_arange_lowering(start, stop, step, dtype, env):
    check_lowering("arange", [], ArangeAttrs(start, stop, step, dtype), env)


@pytest.mark.parametrize(
    "bounds", [(0.5, 3.2, 0.4), (3.0, -1.0, -0.75), (0.5, 5.5, 1.5), (1.7, 9, 2.9)]
)
@pytest.mark.parametrize("dtype", ["int64", "int8", "float32", "float64", "bfloat16"])
def test_float_arange_lowering(bounds, dtype):
    check_lowering("arange", [], ArangeAttrs(*bounds, dtype), {})


def test_arange_kernel_takes_unresolved_symbols_as_scalar_params():
    d0 = arith.sym("d0")
    attrs = ArangeAttrs(d0, d0 + M, 1, "int64")
    kernel = get("arange").lower([], attrs, deduce("arange", [], attrs).info)
    assert [s.name for s in kernel.scalar_params] == ["d0"]
    assert kernel.params[0].shape == (arith.sym("d1"),)
    assert check_lowering("arange", [], attrs, {"d0": 3, "m": 2})


# --------------------------------------------------------------------------- relaxjax.numpy


def test_creation_wrappers_with_symbolic_dims():
    import relaxjax as relax
    import relaxjax.numpy as rnp

    spec = relax.Tensor(("n", 3), "float32")
    n = arith.sym("n")

    def shapes_of(fn):
        return relax.eval_shape(fn, spec)

    assert shapes_of(lambda x: rnp.zeros((x.shape[0], 4))) == TensorInfo((n, 4), "float64")
    assert shapes_of(lambda x: rnp.ones(x.shape[0], "int8")) == TensorInfo((n,), "int8")
    assert shapes_of(lambda x: rnp.arange(x.shape[0])) == TensorInfo((n,), "int64")
    assert shapes_of(lambda x: rnp.arange(x.shape[0], 2 * x.shape[0])) == TensorInfo((n,), "int64")
    assert shapes_of(lambda x: rnp.arange(1.0, 2.0, 0.25)) == TensorInfo((4,), "float64")
    assert shapes_of(lambda x: rnp.full((2, x.shape[0], 3), x)) == TensorInfo((2, n, 3), "float32")
    # a Python int fill is weakly typed, as jnp.full's result
    assert shapes_of(lambda x: rnp.full(x.shape, 7)) == TensorInfo((n, 3), "int64", weak=True)
    assert shapes_of(lambda x: rnp.zeros_like(x)) == spec
    assert shapes_of(lambda x: rnp.ones_like(x, "bool", (5,))) == TensorInfo((5,), "bool")
    assert shapes_of(lambda x: rnp.full_like(x, 2, shape=(x.shape[0],))) == TensorInfo(
        (n,), "float32"
    )


def test_creation_wrappers_evaluate_eagerly_like_jax():
    import relaxjax.numpy as rnp

    a = np.arange(6, dtype=np.int32).reshape(2, 3)
    cases = [
        (rnp.zeros((2, 3)), jnp.zeros((2, 3))),
        (rnp.ones(4, np.float16), jnp.ones(4, jnp.float16)),
        (rnp.full((2, 2), 1.5), jnp.full((2, 2), 1.5)),
        (rnp.full((2, 3), a[0]), jnp.full((2, 3), a[0])),
        (rnp.zeros_like(a), jnp.zeros_like(a)),
        (rnp.ones_like(a, shape=3), jnp.ones_like(a, shape=3)),
        (rnp.full_like(a, 2.7), jnp.full_like(a, 2.7)),
        (rnp.arange(5), jnp.arange(5)),
        (rnp.arange(2, 11, 3), jnp.arange(2, 11, 3)),
        (rnp.arange(np.int64(3)), jnp.arange(3)),
        (rnp.arange(0.5, 2.0, 0.5, np.float32), jnp.arange(0.5, 2.0, 0.5, jnp.float32)),
    ]
    for ours, theirs in cases:
        assert_close(np.asarray(ours), theirs)


def test_creation_wrapper_errors():
    import relaxjax as relax
    import relaxjax.numpy as rnp

    with pytest.raises(TypeError, match="a shape must be an int, a dim or a sequence"):
        rnp.zeros(2.5)
    with pytest.raises(TypeError, match="a dimension must be an int or a symbolic dim"):
        rnp.ones((2, "3"))
    with pytest.raises(TypeError, match="arange: stop must be an int, a float or a symbolic dim"):
        relax.eval_shape(lambda x: rnp.arange(x), relax.Tensor((), "int64"))
    with pytest.raises(ShapeError, match="negative dimensions are not allowed"):
        rnp.zeros((2, -1))
