"""Tracer operators, properties and methods: shapes and dtypes against jax.eval_shape."""

import operator

import jax
import numpy as np
import pytest

import relaxjax as relax
import relaxjax.numpy as rnp
from relaxjax import arith
from relaxjax.trace import Tracer

BINARY = [
    operator.add,
    operator.sub,
    operator.mul,
    operator.truediv,
    operator.floordiv,
    operator.mod,
    operator.pow,
    operator.lt,
    operator.le,
    operator.gt,
    operator.ge,
    operator.eq,
    operator.ne,
]
OTHERS = {
    "weak-int": 2,
    "weak-float": 2.5,
    "f16-row": np.ones(4, np.float16),
    "i8-col": np.ones((3, 1), np.int8),
    "f64-scalar": np.float64(1.5),
}


def _jax_spec(info, env):
    shape = tuple(arith.subs(d, env) for d in info.shape)
    return jax.ShapeDtypeStruct(shape, info.dtype)


def assert_matches_jax(fn, *specs, env=None):
    """eval_shape of fn on relax specs == jax.eval_shape of fn on the concrete specs."""
    env = env or {}
    ours = relax.eval_shape(fn, *specs)
    theirs = jax.eval_shape(fn, *(_jax_spec(s, env) for s in specs))
    ours_leaves = jax.tree_util.tree_leaves(ours, is_leaf=lambda x: isinstance(x, relax.Tensor))
    for mine, ref in zip(ours_leaves, jax.tree_util.tree_leaves(theirs), strict=True):
        assert mine.shape is not None, mine
        assert tuple(arith.subs(d, env) for d in mine.shape) == ref.shape, (mine, ref)
        assert mine.dtype == str(ref.dtype), (mine, ref)
    return ours


@pytest.mark.parametrize("op", BINARY, ids=lambda op: op.__name__)
@pytest.mark.parametrize("dtype", ["float32", "int32"])
@pytest.mark.parametrize("other", list(OTHERS.values()), ids=list(OTHERS))
def test_binary_operators_match_jax_both_ways(op, dtype, other):
    spec = relax.Tensor((3, 4), dtype)
    assert_matches_jax(lambda x: op(x, other), spec)
    assert_matches_jax(lambda x: op(other, x), spec)


@pytest.mark.parametrize("op", BINARY, ids=lambda op: op.__name__)
def test_binary_operators_between_tracers_with_symbolic_dims(op):
    n = relax.sym("n")
    out = assert_matches_jax(
        lambda x, y: op(x, y),
        relax.Tensor((n, 4), "float32"),
        relax.Tensor((1, 4), "float32"),
        env={"n": 5},
    )
    assert out.shape == (n, 4)


def test_matmul_and_reflected_matmul_with_a_constant():
    w = np.ones((4, 5), np.float32)
    out = assert_matches_jax(lambda x: x @ w, relax.Tensor(("n", 4), "float32"), env={"n": 3})
    assert str(out) == 'Tensor((n, 5), "float32")'
    out = assert_matches_jax(
        lambda x: np.ones((2, 3), np.float32) @ x, relax.Tensor((3, "n"), "float32"), env={"n": 7}
    )
    assert str(out) == 'Tensor((2, n), "float32")'


@pytest.mark.parametrize(
    "fn",
    [operator.neg, operator.pos, abs, lambda x: 1 - (-x)],
    ids=["neg", "pos", "abs", "rsub-neg"],
)
@pytest.mark.parametrize("dtype", ["float32", "int64"])
def test_unary_operators_match_jax(fn, dtype):
    assert_matches_jax(fn, relax.Tensor((2, 3), dtype))


def test_logical_operators_need_bools():
    spec = relax.Tensor((2, 3), "bool")
    assert_matches_jax(lambda a, b: (a & b) | ~a, spec, spec)
    with pytest.raises(TypeError, match="& is only supported on bool values, got float32"):
        relax.eval_shape(lambda a, b: a & b, spec, relax.Tensor((2, 3), "float32"))
    with pytest.raises(TypeError, match="~ is only supported on bool tensors, got int32"):
        relax.eval_shape(lambda a: ~a, relax.Tensor((2, 3), "int32"))


def test_unsupported_operands_raise_type_error():
    with pytest.raises(TypeError, match="unsupported operand"):
        relax.eval_shape(lambda x: x + "a", relax.Tensor((2,), "float32"))
    with pytest.raises(TypeError, match="unsupported operand"):
        relax.eval_shape(lambda x: x @ {"a": 1}, relax.Tensor((2,), "float32"))


def test_shape_ndim_dtype_size_are_static():
    n = relax.sym("n")
    seen = {}

    def f(x):
        seen.update(shape=x.shape, ndim=x.ndim, dtype=x.dtype, size=x.size, tracer=x)
        return x

    relax.eval_shape(f, relax.Tensor((n, 4, 2), "float16"))
    assert seen["shape"] == (n, 4, 2)
    assert isinstance(seen["shape"][1], int)
    assert seen["ndim"] == 3
    assert seen["dtype"] == "float16"
    assert seen["size"] == n * 8
    assert isinstance(seen["tracer"], Tracer)
    assert repr(seen["tracer"]) == 'Tracer(Tensor((n, 4, 2), "float16"))'


def test_symbolic_dims_mix_with_tensors_and_ints():
    n = relax.sym("n")
    spec = relax.Tensor((n, 4), "float32")
    out = assert_matches_jax(lambda x: x / x.shape[0], spec, env={"n": 6})
    assert out == relax.Tensor((n, 4), "float32")
    assert_matches_jax(lambda x: x.shape[0] * x + x.shape[1], spec, env={"n": 6})
    ints = relax.Tensor((n, 4), "int32")
    assert_matches_jax(lambda x: x * (x.shape[0] + 1) - x.shape[0] // 2, ints, env={"n": 6})
    assert relax.eval_shape(lambda x: x.shape[0] < x, ints).dtype == "bool"


def test_shape_arithmetic_feeds_shapes():
    out = relax.eval_shape(
        lambda x: rnp.zeros((x.shape[0] * 2, x.shape[1] + 1), x.dtype),
        relax.Tensor(("n", 4), "float32"),
    )
    assert str(out) == 'Tensor((n * 2, 5), "float32")'


def test_len_and_iteration_over_a_static_first_axis():
    def f(x):
        assert len(x) == 3
        return list(x)

    out = relax.eval_shape(f, relax.Tensor((3, "n"), "float32"))
    assert [str(o) for o in out] == ['Tensor((n,), "float32")'] * 3


def test_len_of_a_symbolic_axis_raises():
    with pytest.raises(relax.TraceError, match=r"len\(\) needs an int, but the first dim is "):
        relax.eval_shape(len, relax.Tensor(("n",), "float32"))
    with pytest.raises(TypeError, match=r"len\(\) of a 0-d tensor"):
        relax.eval_shape(len, relax.Tensor((), "float32"))


def test_unknown_dims_get_fresh_symbols_through_a_match_cast():
    dims = {}

    def f(x, y):
        z = x + y  # (n,) with (m,): only the rank is known
        assert z.info.shape is None
        dims["shape"] = z.shape
        return z.reshape(-1) * 2

    specs = relax.Tensor(("n",), "float32"), relax.Tensor(("m",), "float32")
    out = relax.eval_shape(f, *specs)
    (d,) = dims["shape"]
    assert isinstance(d, arith.Sym)
    # inside the program the dim has a name ...
    assert f'Tensor(({d.name},), "float32")' in str(relax.jit(f).trace(*specs))
    # ... which means nothing to the caller: the result falls back to rank and dtype
    assert out == relax.Tensor(ndim=1, dtype="float32")


def test_unknown_rank_has_no_shape():
    def f(x):
        return x.shape

    with pytest.raises(relax.TraceError, match="the rank of this Tensor.* is not known"):
        relax.eval_shape(f, relax.Tensor(dtype="float32"))


@pytest.mark.parametrize(
    "convert", [bool, int, float, complex, operator.index, np.asarray], ids=lambda f: f.__name__
)
def test_concrete_values_of_tracers_raise_trace_error(convert):
    def f(x):
        return convert(x)

    with pytest.raises(relax.TraceError, match="only known at run time") as info:
        relax.eval_shape(f, relax.Tensor((), "float32"))
    assert info.value.location.lineno == f.__code__.co_firstlineno + 1


def test_tracers_hash_by_identity():
    def f(x):
        y = x * 1
        assert len({x, y, x}) == 2
        return y

    relax.eval_shape(f, relax.Tensor((2,), "float32"))
