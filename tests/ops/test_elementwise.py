"""Elementwise ops: shape/dtype deduction against jax (oracle), references against jax
numerics, and every error path."""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from relaxjax import arith, dtypes
from relaxjax.errors import ShapeError
from relaxjax.ir import PrimInfo, TensorInfo
from relaxjax.ops import get, registry
from relaxjax.ops.elementwise import AstypeAttrs, ClipAttrs

sys.path.insert(0, str(Path(__file__).parent))
from oracle import (  # noqa: E402
    ALL_DTYPES,
    INT_DTYPES,
    SYMBOLIC_DIMS,
    M,
    N,
    assert_close,
    assert_precise,
    check_coarsening,
    check_eval_shape,
    check_lowering,
    check_sound,
    deduce,
    dims,
    dtype_params,
    envs,
    per_op,
    random_array,
    shapes,
    weak_scalars,
)

UNARY = {
    "negative": jnp.negative,
    "abs": jnp.abs,
    "exp": jnp.exp,
    "log": jnp.log,
    "sqrt": jnp.sqrt,
    "rsqrt": jax.lax.rsqrt,
    "tanh": jnp.tanh,
    "sin": jnp.sin,
    "cos": jnp.cos,
    "logical_not": jnp.logical_not,
}
BINARY = {
    "add": jnp.add,
    "subtract": jnp.subtract,
    "multiply": jnp.multiply,
    "divide": jnp.divide,
    "floor_divide": jnp.floor_divide,
    "mod": jnp.mod,
    "power": jnp.power,
    "maximum": jnp.maximum,
    "minimum": jnp.minimum,
    "equal": jnp.equal,
    "not_equal": jnp.not_equal,
    "less": jnp.less,
    "less_equal": jnp.less_equal,
    "greater": jnp.greater,
    "greater_equal": jnp.greater_equal,
    "logical_and": jnp.logical_and,
    "logical_or": jnp.logical_or,
}


# --------------------------------------------------------------------------- strategies


@st.composite
def related_shape(draw, shape, bare=False):
    """A shape that often broadcasts with ``shape``: per axis the same dim, 1, or another."""
    keep = draw(st.integers(0, len(shape)))
    other = dims(bare=bare)
    tail = [draw(st.sampled_from([d, d, 1]) | other) for d in shape[len(shape) - keep :]]
    head = draw(st.lists(other, max_size=1))
    return tuple(head + tail)


@st.composite
def operand_group(draw, count, dtype=None, bare=False):
    """``count`` operands: related tensors of random dtypes, sometimes a weak scalar."""
    base = draw(shapes(max_rank=3, bare=bare))
    dtype_strategy = dtype if dtype is not None else st.sampled_from(ALL_DTYPES)
    operands = []
    for _ in range(count):
        if draw(st.integers(0, 5)) == 0:
            operands.append(draw(weak_scalars()))
        else:
            operands.append(TensorInfo(draw(related_shape(base, bare)), draw(dtype_strategy)))
    return operands


# --------------------------------------------------------------------------- oracle


@pytest.mark.parametrize("name", sorted(UNARY))
@per_op
@given(shape=shapes(max_rank=4), dtype=st.sampled_from(ALL_DTYPES), env=envs())
def test_unary_oracle(name, shape, dtype, env):
    check_sound(name, [TensorInfo(shape, dtype)], None, UNARY[name], env)


@pytest.mark.parametrize("name", sorted(BINARY))
@per_op
@given(operands=operand_group(2), env=envs())
def test_binary_oracle(name, operands, env):
    check_sound(name, operands, None, BINARY[name], env)
    check_coarsening(name, operands, None)


@given(operands=operand_group(3), env=envs())
def test_where_oracle(operands, env):
    check_sound("where", operands, None, jnp.where, env)
    check_coarsening("where", operands, None)


@given(
    operands=operand_group(3),
    has=st.sampled_from([(True, True), (True, False), (False, True), (False, False)]),
    env=envs(),
)
def test_clip_oracle(operands, has, env):
    x, low, high = operands
    bounds = [b for b, given_ in zip((low, high), has) if given_]

    def jax_clip(x, *bounds):
        it = iter(bounds)
        return jnp.clip(x, next(it) if has[0] else None, next(it) if has[1] else None)

    check_sound("clip", [x, *bounds], ClipAttrs(*has), jax_clip, env)


@given(
    shape=shapes(max_rank=3),
    source=st.sampled_from(ALL_DTYPES),
    target=st.sampled_from(ALL_DTYPES),
    env=envs(),
)
def test_astype_oracle(shape, source, target, env):
    def jax_astype(x):
        return x.astype(dtypes.to_numpy(target))

    d = check_sound("astype", [TensorInfo(shape, source)], AstypeAttrs(target), jax_astype, env)
    assert_precise(d, shape)


# --------------------------------------------------------------------------- precision


@pytest.mark.parametrize("name", sorted(BINARY))
def test_identical_symbolic_shapes_are_precise(name):
    shape = (N, M + 1, 2 * N)
    d = deduce(name, [TensorInfo(shape, "float32"), TensorInfo(shape, "float32")])
    assert_precise(d, shape)
    assert d.checks == ()


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ((N, 1), (1, M), (N, M)),
        ((N, 4), (4,), (N, 4)),
        ((N, 4), (1, 4), (N, 4)),
        ((), (N, M), (N, M)),
        ((3, 1, M), (N, 1), (3, N, M)),
        ((N + 1, 1), (N + 1, 5), (N + 1, 5)),
    ],
)
def test_broadcast_is_precise(a, b, expected):
    d = deduce("add", [TensorInfo(a, "float32"), TensorInfo(b, "float32")])
    assert_precise(d, expected)
    assert d.checks == ()


def test_broadcast_against_a_dim_known_not_one_keeps_it_and_checks():
    d = deduce("multiply", [TensorInfo((N, 4), "float32"), TensorInfo((M, 4), "float32")])
    assert d.info == TensorInfo(ndim=2, dtype="float32")
    assert [c.relation() for c in d.checks] == ["broadcast(n, m)"]
    d = deduce("multiply", [TensorInfo((N,), "float32"), TensorInfo((4,), "float32")])
    assert_precise(d, (4,))
    assert [c.relation() for c in d.checks] == ["broadcast(n, 4)"]
    assert d.checks[0].holds({"n": 1}) and d.checks[0].holds({"n": 4})
    assert not d.checks[0].holds({"n": 3})


def test_three_way_broadcast_checks_every_pair():
    operands = [TensorInfo((N,), "float32"), TensorInfo((M,), "float32"), TensorInfo((4,))]
    d = deduce("where", [TensorInfo((N,), "bool"), *operands[1:]])
    assert_precise(d, (4,))
    relations = {c.relation() for c in d.checks}
    assert relations == {"broadcast(n, m)", "broadcast(n, 4)", "broadcast(m, 4)"}


def test_unknown_rank_and_unknown_dims():
    d = deduce("add", [TensorInfo(dtype="float32"), TensorInfo((N,), "float32")])
    assert d.info == TensorInfo(dtype="float32")
    d = deduce("add", [TensorInfo(ndim=3, dtype="int8"), TensorInfo((N,), "int32")])
    assert d.info == TensorInfo(ndim=3, dtype="int32")
    d = deduce("exp", [TensorInfo(ndim=2, dtype="int64")])
    assert d.info == TensorInfo(ndim=2, dtype="float64")


@pytest.mark.parametrize("dim", SYMBOLIC_DIMS)
def test_unary_keeps_symbolic_shape(dim):
    d = deduce("tanh", [TensorInfo((dim, 3), "float16")])
    assert_precise(d, (dim, 3))
    assert d.info.dtype == "float16"


# --------------------------------------------------------------------------- dtypes


_WEAK = [True, 2, 2.0]


@given(
    a=st.sampled_from(ALL_DTYPES + tuple(_WEAK)),
    b=st.sampled_from(ALL_DTYPES + tuple(_WEAK)),
    name=st.sampled_from(sorted(BINARY)),
)
def test_binary_dtype_rules_match_jax(a, b, name):
    operands = [TensorInfo((2,), x) if isinstance(x, str) else x for x in (a, b)]
    if not any(isinstance(o, TensorInfo) for o in operands):
        operands[0] = TensorInfo((), "int64")
    check_sound(name, operands, None, BINARY[name], {})


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_dtype_rules_exhaustive(name):
    for a, b in itertools.product(ALL_DTYPES + tuple(_WEAK), repeat=2):
        operands = [TensorInfo((2,), x) if isinstance(x, str) else x for x in (a, b)]
        if any(isinstance(o, TensorInfo) for o in operands):
            check_sound(name, operands, None, BINARY[name], {})


def test_weak_scalars_do_not_promote():
    float32 = TensorInfo((N,), "float32")
    int32 = TensorInfo((N,), "int32")
    weak_float = PrimInfo("float64", weak=True)
    weak_int = PrimInfo("int64", weak=True)
    assert get("add").deduce([float32, weak_float])[0].dtype == "float32"
    assert get("add").deduce([int32, weak_int])[0].dtype == "int32"
    assert get("add").deduce([int32, weak_float])[0].dtype == "float64"
    assert get("divide").deduce([int32, weak_int])[0].dtype == "float32"
    assert get("add").deduce([int32, PrimInfo("float64")])[0].dtype == "float64"


# --------------------------------------------------------------------------- numerics


def _domain(name):
    """Input ranges where the op and jax agree (no division by zero, logs of positives)."""
    if name in ("log", "sqrt", "rsqrt"):
        return 0.25, 4.0
    return -3.0, 3.0


@pytest.mark.parametrize("name", sorted(UNARY))
@pytest.mark.parametrize("dtype", dtype_params())
def test_unary_reference_matches_jax(name, dtype):
    rng = np.random.default_rng(0)
    low, high = _domain(name)
    x = random_array(rng, (3, 5), dtype, low=low, high=high)
    try:
        expected = UNARY[name](x)
    except TypeError as error:
        with pytest.raises(TypeError, match=f"{name} does not accept dtype {dtype}"):
            get(name).reference(x)
        assert "does not accept dtype" in str(error)
        return
    assert_close(get(name).reference(x), expected, f"{name}[{dtype}]")


def _binary_inputs(name, dtype, rng):
    x = random_array(rng, (3, 4), dtype)
    y = random_array(rng, (4,), dtype)
    if name in ("divide", "floor_divide", "mod") and not dtypes.is_bool(dtype):
        y = np.where(y == 0, np.ones_like(y), y)
    if name == "power":
        x = random_array(rng, (3, 4), dtype, low=0.5, high=3.0)
        y = random_array(rng, (4,), dtype, low=0.0, high=3.0)
    return x, y


@pytest.mark.parametrize("name", sorted(BINARY))
@pytest.mark.parametrize("dtype", dtype_params())
def test_binary_reference_matches_jax(name, dtype):
    rng = np.random.default_rng(1)
    x, y = _binary_inputs(name, dtype, rng)
    if name in ("divide", "floor_divide", "mod") and dtypes.is_bool(dtype):
        y = np.ones_like(y)
    try:
        expected = BINARY[name](x, y)
    except TypeError:
        with pytest.raises(TypeError, match=f"{name} does not accept dtype"):
            get(name).reference(x, y)
        return
    assert_close(get(name).reference(x, y), expected, f"{name}[{dtype}]")


@pytest.mark.parametrize("name", ["add", "multiply", "divide", "maximum", "less", "power"])
@pytest.mark.parametrize("scalar", [2, 2.5, True])
@pytest.mark.parametrize("dtype", dtype_params(("int8", "float16")))
def test_weak_scalar_reference_matches_jax(name, scalar, dtype):
    x = random_array(np.random.default_rng(2), (4,), dtype, low=0.5, high=3.0)
    assert_close(
        get(name).reference(x, scalar), BINARY[name](x, scalar), f"{name}({dtype}, {scalar!r})"
    )
    assert_close(
        get(name).reference(scalar, x), BINARY[name](scalar, x), f"{name}({scalar!r}, {dtype})"
    )


@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_integer_power_matches_jax(dtype):
    """Negative exponents are compared only where defined: |base| == 1 (jax gives
    platform-dependent values for 2 ** -1 in int64)."""
    base = np.array([2, 1, 3, 1, 0, 5], dtype=dtype)
    exponent = np.array([0, 3, 2, 1, 2, 1], dtype=dtype)
    if dtypes.is_signed(dtype):
        base = np.array([-1, -1, 1, 1, 3, -2, 0], dtype=dtype)
        exponent = np.array([-1, -2, -3, 2, 2, 3, 0], dtype=dtype)
    assert_close(get("power").reference(base, exponent), jnp.power(base, exponent), dtype)


@pytest.mark.parametrize("dtype", ["int32", "float32", "bool"])
def test_integer_ops_with_negative_operands_match_jax(dtype):
    x = np.array([7, -7, 7, -7, 0, 3], dtype=dtype) if dtype != "bool" else np.array([1, 0, 1])
    y = np.array([2, 2, -2, -2, 5, 3], dtype=dtype) if dtype != "bool" else np.array([1, 1, 1])
    x, y = x.astype(dtype), y.astype(dtype)
    for name in ("floor_divide", "mod"):
        assert_close(get(name).reference(x, y), BINARY[name](x, y), f"{name}[{dtype}]")


@pytest.mark.parametrize("dtype", dtype_params(("uint8", "bfloat16")))
def test_where_and_clip_references_match_jax(dtype):
    rng = np.random.default_rng(3)
    condition = rng.random((3, 1)) < 0.5
    x = random_array(rng, (3, 4), dtype)
    y = random_array(rng, (4,), dtype)
    assert_close(get("where").reference(condition, x, y), jnp.where(condition, x, y), "where")
    assert_close(get("where").reference(condition, x, 1.5), jnp.where(condition, x, 1.5))
    both = ClipAttrs(True, True)
    assert_close(get("clip").reference(x, 0, 2, attrs=both), jnp.clip(x, 0, 2), "clip")
    low = ClipAttrs(True, False)
    assert_close(get("clip").reference(x, y, attrs=low), jnp.clip(x, y), "clip min")
    high = ClipAttrs(False, True)
    assert_close(get("clip").reference(x, 1.5, attrs=high), jnp.clip(x, None, 1.5), "clip max")


def test_clip_with_crossed_bounds_takes_max_like_jax():
    x = np.arange(5.0)
    both = ClipAttrs(True, True)
    assert_close(get("clip").reference(x, 3.0, 1.0, attrs=both), jnp.clip(x, 3.0, 1.0))


@pytest.mark.parametrize("source", dtype_params())
@pytest.mark.parametrize("target", dtype_params(("bool", "int8", "float16", "float64")))
def test_astype_reference_matches_jax(source, target):
    x = random_array(np.random.default_rng(4), (6,), source, low=0.0, high=3.0)
    expected = jnp.asarray(x).astype(dtypes.to_numpy(target))
    assert_close(
        get("astype").reference(x, attrs=AstypeAttrs(target)), expected, f"{source}->{target}"
    )


# --------------------------------------------------------------------------- errors


def test_incompatible_broadcast_names_op_shapes_and_axis():
    with pytest.raises(ShapeError, match=r"add: cannot broadcast shapes \(2, 3\), \(4,\): axis 1"):
        deduce_raising("add", [TensorInfo((2, 3)), TensorInfo((4,))])
    with pytest.raises(
        ShapeError, match=r"cannot broadcast shapes \(n \+ 2,\), \(n \+ 3,\).*every value"
    ):
        deduce_raising("subtract", [TensorInfo((N + 2,)), TensorInfo((N + 3,))])


def deduce_raising(name, operands, attrs=None):
    return get(name).deduce(operands, attrs)


@pytest.mark.parametrize(
    ("name", "dtype", "message"),
    [
        (
            "negative",
            "bool",
            "negative does not accept dtype bool; expected an integer or floating",
        ),
        ("rsqrt", "int32", "rsqrt does not accept dtype int32; expected a floating dtype"),
        ("subtract", "bool", "subtract does not accept dtype bool"),
    ],
)
def test_unsupported_dtypes_raise_type_error(name, dtype, message):
    operands = [TensorInfo((2,), dtype)] * (2 if name in BINARY else 1)
    with pytest.raises(TypeError, match=message):
        deduce_raising(name, operands)


def test_arity_and_operand_kind_errors():
    with pytest.raises(TypeError, match="add takes 2 argument"):
        deduce_raising("add", [TensorInfo((2,))])
    with pytest.raises(TypeError, match="exp takes 1 argument"):
        deduce_raising("exp", [TensorInfo((2,)), TensorInfo((2,))])
    from relaxjax.ir import TupleInfo

    with pytest.raises(TypeError, match="add: argument 1 must be a tensor or a scalar"):
        deduce_raising("add", [TensorInfo((2,)), TupleInfo([TensorInfo((2,))])])
    with pytest.raises(TypeError, match="clip takes 2 argument"):
        deduce_raising("clip", [TensorInfo((2,))], ClipAttrs(True, False))


def test_attrs_are_validated():
    with pytest.raises(TypeError, match="takes no attributes"):
        deduce_raising("add", [TensorInfo((2,)), TensorInfo((2,))], AstypeAttrs("int8"))
    with pytest.raises(TypeError, match="expects attributes of type AstypeAttrs"):
        deduce_raising("astype", [TensorInfo((2,))], None)
    with pytest.raises(TypeError, match="unsupported dtype"):
        AstypeAttrs("complex64")
    assert AstypeAttrs(np.float32).dtype == "float32"


@given(a=st.sampled_from(SYMBOLIC_DIMS), b=dims(), env=envs())
def test_checks_are_exactly_numpy_broadcast_compatibility(a, b, env):
    d = deduce("add", [TensorInfo((a,)), TensorInfo((b,))])
    x, y = arith.subs(a, env), arith.subs(b, env)
    compatible = x == y or x == 1 or y == 1
    if d.error is not None:
        assert not compatible
    else:
        assert all(c.holds(env) for c in d.checks) == compatible


# --------------------------------------------------------------------------- lowering


def lowering_data(name):
    """Kernel inputs in each op's domain (as in the numerics tests above)."""

    def make(rng, shape, dtype, position):
        low, high = _domain(name)
        if name == "power":
            low, high = (0.5, 3.0) if position == 0 else (0.0, 3.0)
        values = random_array(rng, shape, dtype, low=low, high=high)
        if name in ("divide", "floor_divide", "mod") and position == 1:
            values = np.where(values == 0, np.ones_like(values), values)
        return values

    return make


@pytest.mark.parametrize("name", sorted(UNARY))
@per_op
@given(shape=shapes(max_rank=3), dtype=st.sampled_from(ALL_DTYPES), env=envs(0, 3))
def test_unary_lowering_matches_reference(name, shape, dtype, env):
    x = TensorInfo(shape, dtype)
    if deduce(name, [x]).error is None:
        check_lowering(name, [x], None, env, data=lowering_data(name))


@pytest.mark.parametrize("name", sorted(BINARY))
@per_op
@given(operands=operand_group(2), env=envs(0, 3))
def test_binary_lowering_matches_reference(name, operands, env):
    if deduce(name, operands).error is None:
        check_lowering(name, operands, None, env, data=lowering_data(name))


@given(operands=operand_group(3), env=envs(0, 3))
def test_where_lowering_matches_reference(operands, env):
    if deduce("where", operands).error is None:
        check_lowering("where", operands, None, env)


@given(
    operands=operand_group(3),
    has=st.sampled_from([(True, True), (True, False), (False, True)]),
    env=envs(0, 3),
)
def test_clip_lowering_matches_reference(operands, has, env):
    x, low, high = operands
    args = [x] + [b for b, given_ in zip((low, high), has) if given_]
    if deduce("clip", args, ClipAttrs(*has)).error is None:
        check_lowering("clip", args, ClipAttrs(*has), env)


@given(
    shape=shapes(max_rank=3),
    source=st.sampled_from(ALL_DTYPES),
    target=st.sampled_from(ALL_DTYPES),
    env=envs(0, 3),
)
def test_astype_lowering_matches_reference(shape, source, target, env):
    def data(rng, shape, dtype, position):
        return random_array(rng, shape, dtype, low=0.0, high=3.0)

    check_lowering("astype", [TensorInfo(shape, source)], AstypeAttrs(target), env, data=data)


def test_kernels_are_shape_generic_and_dedupe():
    for name in ("add", "less", "where"):
        count = get(name).num_inputs
        with_n = [TensorInfo((N, 4), "float32")] * count
        with_m = [TensorInfo((M, 4), "float32")] * count
        kernel = get(name).lower(with_n, None, deduce(name, with_n).info)
        assert kernel == get(name).lower(with_m, None, deduce(name, with_m).info)
        assert [p.shape for p in kernel.params] == [(arith.sym("d0"), 4)] * (count + 1)


def test_lowering_with_coarse_shapes_runs_for_any_broadcast():
    from relaxjax.tir import interpreter

    operands = [TensorInfo(ndim=2, dtype="float32"), TensorInfo((M, 1), "int32")]
    info = deduce("add", operands).info
    assert info == TensorInfo(ndim=2, dtype="float32")
    kernel = get("add").lower(operands, None, info)
    rng = np.random.default_rng(5)
    for x_shape, y_shape in [((3, 4), (3, 1)), ((1, 4), (3, 1)), ((3, 1), (1, 1))]:
        x = random_array(rng, x_shape, "float32")
        y = random_array(rng, y_shape, "int32")
        expected = get("add").reference(x, y)
        out = np.zeros(expected.shape, expected.dtype)
        interpreter.run(kernel, x, y, out)
        assert_close(out, expected, f"{x_shape} + {y_shape}")


def test_lowering_unknown_rank_is_refused():
    from relaxjax.errors import LoweringError

    with pytest.raises(LoweringError, match="unknown rank"):
        get("exp").lower([TensorInfo(dtype="float32")], None, TensorInfo(dtype="float32"))


# --------------------------------------------------------------------------- relaxjax.numpy


@pytest.mark.parametrize("name", ["add", "multiply", "divide", "power", "less", "logical_or"])
@per_op
@given(operands=operand_group(2, bare=True), env=envs())
def test_numpy_wrappers_trace_like_jax(name, operands, env):
    import relaxjax.numpy as rnp

    tensors = [o for o in operands if isinstance(o, TensorInfo)]
    if not tensors:
        return
    positions = [i for i, o in enumerate(operands) if isinstance(o, TensorInfo)]

    def with_scalars(fn):
        def call(*tensor_args):
            args = list(operands)
            for position, value in zip(positions, tensor_args):
                args[position] = value
            return fn(*args)

        return call

    check_eval_shape(with_scalars(getattr(rnp, name)), with_scalars(BINARY[name]), tensors, env)


def test_operators_and_wrappers_print_one_binding_each():
    import relaxjax as relax
    import relaxjax.numpy as rnp

    def f(x, y):
        return rnp.where(x > 0, rnp.clip(x, 0.0), rnp.rsqrt(y)).astype("float16")

    text = str(relax.jit(f).trace(relax.Tensor(("n", 4), "float32"), relax.Tensor((4,), "float32")))
    for line in (
        'Tensor((n, 4), "bool") = greater(x, 0)',
        'Tensor((n, 4), "float32") = clip(x, 0.0, has_min=True, has_max=False)',
        'Tensor((4,), "float32") = rsqrt(y)',
        'Tensor((n, 4), "float32") = where(',
        'Tensor((n, 4), "float16") = astype(',
    ):
        assert line in text, text


def test_numpy_wrappers_evaluate_eagerly_like_jax():
    import relaxjax.numpy as rnp

    x = np.array([[1.5, -2.0, 0.5]], np.float32)
    y = np.array([3, 0, -1], np.int32)
    cases = [
        (rnp.add(x, y), jnp.add(x, y)),
        (rnp.true_divide(y, 2), jnp.true_divide(y, 2)),
        (rnp.remainder(y, 2), jnp.remainder(y, 2)),
        (rnp.absolute(x), jnp.absolute(x)),
        (rnp.where(y > 0, x, 2), jnp.where(y > 0, x, 2)),
        (rnp.clip(y, max=1), jnp.clip(y, max=1)),
        (rnp.clip(x, -1, 1), jnp.clip(x, -1, 1)),
        (rnp.astype(y, np.float16), y.astype(np.float16)),
        (rnp.logical_not(y), jnp.logical_not(y)),
    ]
    for ours, theirs in cases:
        assert_close(np.asarray(ours), theirs)


def test_numpy_wrapper_errors():
    import relaxjax.numpy as rnp

    with pytest.raises(ValueError, match=r"Either both or neither of the x and y arguments"):
        rnp.where(np.ones(3), 1)
    with pytest.raises(ShapeError, match=r"add: cannot broadcast shapes \(2,\), \(3,\)"):
        rnp.add(np.ones(2), np.ones(3))
    with pytest.raises(TypeError, match="negative does not accept dtype bool"):
        rnp.negative(np.ones(2, bool))
    with pytest.raises(NotImplementedError, match="add: the out argument is not supported"):
        rnp.add(np.ones(2), 1.0, out=np.ones(2))
    with pytest.raises(NotImplementedError, match="maximum: the where argument"):
        rnp.maximum(np.ones(2), 1.0, where=np.ones(2, bool))
    with pytest.raises(ValueError, match="size and fill_value arguments cannot be used"):
        rnp.where(np.ones(2, bool), 1, 2, size=2)
    with pytest.raises(TypeError, match="clip: the array argument is required"):
        rnp.clip(min=0)


def test_numpy_wrappers_take_jax_parameters():
    import inspect

    import relaxjax.numpy as rnp

    assert_close(rnp.rsqrt(np.array([4.0]), accuracy=None), jax.lax.rsqrt(np.array([4.0])))
    assert list(inspect.signature(rnp.clip).parameters) == ["arr", "min", "max"]
    for name in ("add", "logical_or", "negative"):
        assert {"out", "where"} <= set(inspect.signature(getattr(rnp, name)).parameters)


def test_every_op_of_these_families_has_a_reference_and_a_lowering():
    from relaxjax.ops import binary, creation, elementwise, nn, unary
    from relaxjax.ops.base import Op

    families = {m.__name__ for m in (unary, binary, elementwise, creation, nn)}
    ours = [op for op in registry().values() if type(op).__module__ in families]
    assert len(ours) == 46
    for op in ours:
        assert type(op).reference is not Op.reference, op
        assert type(op).lower is not Op.lower, op
        assert type(op).__doc__, op
