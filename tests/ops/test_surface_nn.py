"""relaxjax.nn's activations and functions and relaxjax.scipy.special against jax
(issue 10): one jitted program per table (symbolic ``n``, sizes 0, 1 and 6, edge values),
eval_shape over dtypes, eager evaluation, the numerically delicate regions, errors."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import jax.scipy.special as jsp
import numpy as np
import pytest

import relaxjax as relax
import relaxjax.nn as rnn
import relaxjax.numpy as rnp
import relaxjax.scipy.special as rsp
from relaxjax.errors import ShapeError

ACTIVATIONS = (
    ("celu", "elu", "hard_sigmoid", "hard_silu", "hard_swish", "hard_tanh", "identity")
    + ("leaky_relu", "log_sigmoid", "mish", "relu6", "selu", "soft_sign", "softplus")
    + ("sparse_plus", "sparse_sigmoid", "squareplus", "tanh", "glu", "standardize")
)
SPECIAL = ("erf", "erfc", "expit", "ndtr", "log_ndtr", "i0", "i0e", "entr", "softmax")
SPECIAL += ("log_softmax",)

#: name -> fn(nn, special, x, p) with x of shape (n, 4) (any floats) and p of shape (n, 4)
#: in (0, 1) (probabilities), both float32.
CASES = {
    **{
        name: (lambda nn, sp, x, p, name=name: getattr(nn, name)(x))
        for name in [
            "celu",
            "elu",
            "hard_sigmoid",
            "hard_silu",
            "hard_swish",
            "hard_tanh",
            "identity",
            "leaky_relu",
            "log_sigmoid",
            "mish",
            "relu6",
            "selu",
            "soft_sign",
            "softplus",
            "sparse_plus",
            "sparse_sigmoid",
            "squareplus",
            "tanh",
            "glu",
            "standardize",
        ]
    },
    "celu(alpha=0.5)": lambda nn, sp, x, p: nn.celu(x, alpha=0.5),
    "elu(alpha=2)": lambda nn, sp, x, p: nn.elu(x, 2.0),
    "leaky_relu(0.2)": lambda nn, sp, x, p: nn.leaky_relu(x, negative_slope=0.2),
    "squareplus(b=1)": lambda nn, sp, x, p: nn.squareplus(x, b=1.0),
    "glu(axis=0)": lambda nn, sp, x, p: nn.glu(jnp_concat(nn, x), axis=0),
    "log1mexp": lambda nn, sp, x, p: nn.log1mexp(p * 40),
    "logsumexp": lambda nn, sp, x, p: nn.logsumexp(x),
    "logsumexp(axis=1)": lambda nn, sp, x, p: nn.logsumexp(x, axis=1),
    "logsumexp(axis=0, keepdims)": lambda nn, sp, x, p: nn.logsumexp(x, axis=0, keepdims=True),
    "logsumexp(b)": lambda nn, sp, x, p: nn.logsumexp(x, axis=-1, b=p - 0.25),
    "logsumexp(return_sign)": lambda nn, sp, x, p: nn.logsumexp(
        x, axis=(0, 1), b=p - 0.5, return_sign=True
    ),
    "logsumexp(where)": lambda nn, sp, x, p: nn.logsumexp(x, axis=1, where=p > 0.3),
    "logmeanexp": lambda nn, sp, x, p: nn.logmeanexp(x, axis=1),
    "logmeanexp(where, keepdims)": lambda nn, sp, x, p: nn.logmeanexp(
        x, axis=0, where=p > 0.5, keepdims=True
    ),
    "standardize(axis=0, stable)": lambda nn, sp, x, p: nn.standardize(
        x, axis=0, algorithm="stable"
    ),
    "standardize(mean, variance)": lambda nn, sp, x, p: nn.standardize(
        x, mean=0.5, variance=p, epsilon=1e-3
    ),
    "standardize(where)": lambda nn, sp, x, p: nn.standardize(p, where=p > 0.2),
    **{
        f"special.{name}": (lambda nn, sp, x, p, name=name: getattr(sp, name)(x))
        for name in [
            "erf",
            "erfc",
            "expit",
            "ndtr",
            "log_ndtr",
            "i0",
            "i0e",
            "entr",
            "softmax",
            "log_softmax",
        ]
    },
    "special.logit": lambda nn, sp, x, p: sp.logit(p),
    "special.logsumexp": lambda nn, sp, x, p: sp.logsumexp(x, axis=0),
    "special.log_ndtr(series_order=5)": lambda nn, sp, x, p: sp.log_ndtr(x * 10, 5),
    **{
        f"special.{name}": (lambda nn, sp, x, p, name=name: getattr(sp, name)(p - 0.2, x))
        for name in ("xlogy", "xlog1py", "rel_entr", "kl_div")
    },
}


def jnp_concat(nn, x):
    """``x`` twice along axis 0 (so glu's axis 0 has an even size)."""
    module = rnp if nn is rnn else jnp
    return module.concatenate([x, x], axis=0)


# Large magnitudes whose squares stay finite in float32: a fused kernel may contract
# ``mean(x*x) - mean(x)**2`` into an fma, which does not overflow where jax's separate
# square does (inf - inf), so standardize would differ only by that contraction.
_EDGES = [-1e18, -1000.0, -100.0, -30.0, -2.0, -1.0, -0.0, 0.0, 1e-30, 0.5, 1.0, 2.0, 30.0]
_EDGES += [100.0, 1000.0, 1e18, np.inf, -np.inf, np.nan, 5.0, -5.0, 0.25, -0.25, 3.0]


def _data(rows: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    count = rows * 4
    x = np.concatenate([_EDGES, rng.uniform(-4, 4, max(count - len(_EDGES), 0))])[:count]
    p = rng.uniform(0.001, 0.999, count)
    return x.reshape(rows, 4).astype(np.float32), p.reshape(rows, 4).astype(np.float32)


def _same(ours, theirs, what: str, rtol: float = 2e-5) -> None:
    ours, theirs = jax.tree_util.tree_leaves(ours), jax.tree_util.tree_leaves(theirs)
    assert len(ours) == len(theirs), what
    for a, b in zip(ours, theirs):
        a, b = np.asarray(a), np.asarray(b)
        assert a.dtype == b.dtype, f"{what}: dtype {a.dtype} vs jax {b.dtype}"
        assert a.shape == b.shape, f"{what}: shape {a.shape} vs jax {b.shape}"
        # jax flushes subnormal results to zero
        tiny = np.finfo(a.dtype).tiny
        a = np.where((b == 0) & (np.abs(a) < tiny), 0, a)
        np.testing.assert_allclose(a, b, rtol=rtol, atol=1e-6, err_msg=what, equal_nan=True)


def _jax(x: np.ndarray, p: np.ndarray) -> dict:
    program = jax.jit(lambda a, b: {n: fn(jax.nn, jsp, a, b) for n, fn in CASES.items()})
    return program(x, p)


def test_values_match_jax_for_every_size():
    spec = relax.Tensor(("n", 4), "float32")

    @relax.jit
    def program(x: spec, p: spec):
        return {name: fn(rnn, rsp, x, p) for name, fn in CASES.items()}

    x, p = _data(6)
    theirs = _jax(x, p)
    for n in (0, 1, 6):
        got = program(x[:n], p[:n])
        expected = theirs if n == 6 else _jax(x[:n], p[:n])
        for name in CASES:
            _same(got[name], expected[name], f"{name} with n={n}")
    assert program.cache_size() == 1


def test_eager_evaluation_matches_jax():
    x, p = _data(2)
    theirs = _jax(x, p)
    for name, fn in CASES.items():
        _same(fn(rnn, rsp, x, p), theirs[name], f"eager {name}")


DTYPES = ["bool", "int8", "int32", "float16", "bfloat16", "float64", "weak-float64"]


@pytest.mark.parametrize("dtype", DTYPES)
def test_dtypes_match_jax(dtype):
    """Result dtypes, weak types and shapes against jax's eval_shape (the float32-only
    ndtr/log_ndtr and the functions jax refuses for a dtype are refused too);
    ``weak-float64`` is ``x_int32 + 2.0``, a weakly typed tensor."""
    refused = {}
    weak = dtype.startswith("weak")
    dtype = "int32" if weak else dtype

    def make(nn, sp, module, x):
        x = module.add(x, 2.0) if weak else x
        results = {}
        for name, fn in CASES.items():
            try:
                results[name] = fn(nn, sp, x, module.abs(x))
            except (TypeError, ValueError, ShapeError) as error:
                refused[(nn.__name__, name)] = error
        return results

    ours = relax.eval_shape(lambda x: make(rnn, rsp, rnp, x), relax.Tensor((4, 4), dtype))
    theirs = jax.eval_shape(
        lambda x: make(jax.nn, jsp, jnp, x), jax.ShapeDtypeStruct((4, 4), dtype)
    )
    for name in CASES:
        if name not in theirs:
            assert name not in ours, f"{name} of {dtype}: jax refuses, we give {ours[name]}"
            continue
        assert name in ours, f"{name} of {dtype}: {refused[('relaxjax.nn', name)]!r}"
        mine = ours[name] if isinstance(ours[name], tuple) else (ours[name],)
        for a, b in zip(mine, jax.tree_util.tree_leaves(theirs[name])):
            assert a.dtype == str(b.dtype), f"{name} of {dtype}: {a.dtype} vs jax {b.dtype}"
            assert a.shape == b.shape, f"{name} of {dtype}: {a.shape} vs jax {b.shape}"
            jax_weak = bool(b.weak_type) and str(b.dtype) != "bool"
            assert a.weak == jax_weak, f"{name} of {dtype} (weak={weak}): weak type {a.weak}"


def test_stable_regions_are_accurate():
    big = np.array([1e4, 1e30, 88.0, 100.0], np.float32)

    @relax.jit
    def program(x: relax.Tensor(("n",), "float32")):
        return (
            rnn.softplus(x),
            rnn.log_sigmoid(-x),
            rnn.log1mexp(x * 1e-30),
            rnn.logsumexp(rnp.stack([x, x]), axis=0),
            rsp.log_ndtr(-x[:3] * 0 - rnp.asarray([40.0, 100.0, 1000.0], rnp.float32)),
            rsp.erfc(x[2:3] * 0.1),
        )

    softplus, log_sigmoid, log1mexp, lse, log_ndtr, erfc = program(big)
    np.testing.assert_array_equal(softplus, big)  # not log(1 + exp(x)), which overflows
    np.testing.assert_array_equal(log_sigmoid, -big)  # -softplus(x), not log(tiny)
    assert np.all(np.isfinite(log1mexp))  # log(-expm1(-x)) near 0, not log(0)
    np.testing.assert_allclose(lse, big + np.float32(np.log(2)), rtol=1e-6)
    # -x**2 / 2 - log(-x) - log(2 pi) / 2 + log(series), not log(ndtr(x)) == log(0)
    expected = [-804.60844201, -5005.52420869, -500007.82669481]  # scipy.special.log_ndtr
    np.testing.assert_allclose(log_ndtr, expected, rtol=1e-6)
    np.testing.assert_allclose(erfc, [math.erfc(8.8)], rtol=1e-5)  # 1.5e-35, not 1 - erf = 0


def test_every_jax_nn_name_is_exported_but_the_left_out_ones():
    left_out = {"initializers", "get_scaled_dot_general_config", "scaled_dot_general"}
    left_out |= {"scaled_matmul"}
    names = {n for n in dir(jax.nn) if not n.startswith("_")}
    assert names - set(rnn.__all__) == left_out
    assert set(rsp.__all__) <= {n for n in dir(jsp) if not n.startswith("_")}


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: rnn.glu(np.ones((2, 3))), ValueError, "divisible by 2, got 3"),
        (lambda: rsp.ndtr(np.ones(2, np.int32)), TypeError, "x.dtype=int32 is not supported"),
        (lambda: rsp.log_ndtr(np.ones(2), series_order=31), ValueError, "<= 30"),
        (lambda: rsp.log_ndtr(np.ones(2), series_order=1.5), TypeError, "Python integer"),
        (lambda: rnn.standardize(np.ones(2), algorithm="exact"), ValueError, "'fast' or"),
        (lambda: rnn.logsumexp(np.ones(2), axis=1), ShapeError, "axis 1 is out of"),
    ],
)
def test_bad_inputs_raise_clear_errors(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_glu_checks_a_symbolic_axis_size_at_run_time():
    @relax.jit
    def program(x: relax.Tensor((2, "n"), "float32")):
        return rnn.glu(x)

    assert program(np.ones((2, 4), np.float32)).shape == (2, 2)
    with pytest.raises(ShapeError):
        program(np.ones((2, 3), np.float32))
