"""Any spec: parameter dims that are expressions (``(2*n,)``, ``(n+1, n*2)``, ``("n*m", 3)``).

Tracing needs no values; at call time the arguments' sizes solve the symbols (a dim
linear in one unknown, repeated until nothing changes), then every dim is checked.
Values are compared with numpy/jax; every error message is asserted.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import relaxjax as relax
import relaxjax.nn as rnn
import relaxjax.numpy as rnp
from relaxjax.ir import TensorInfo

T = relax.Tensor
n, m, k = relax.syms("n m k")
RNG = np.random.default_rng(7)


def f32(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def test_eval_shape_accepts_any_spec():
    assert relax.eval_shape(lambda x: x * 2, T((2 * n,), "float32")) == T((2 * n,), "float32")
    out = relax.eval_shape(lambda x: x.sum(1), T((n + 1, n * 2), "float32"))
    assert out == T((n + 1,), "float32")
    assert relax.eval_shape(lambda x: x[:, 0], T(("n*m", 3), "float32")) == T(("m*n",), "float32")
    out = relax.eval_shape(lambda x, y: x[1:] + y, T((n + 1,), "float32"), T((n,), "float32"))
    assert out == T((n,), "float32")


def test_trace_and_lower_declare_every_symbol_the_parameters_mention():
    @relax.jit
    def f(x: T(("n*m", 3), "float32"), y: T(("n // 2",), "float32")):
        return x.sum(0), y * 2

    text = str(f.trace())
    assert 'def f(x: Tensor((m * n, 3), "float32"), y: Tensor((n // 2,), "float32"))' in text
    assert f.lower().kernels()  # legalised, verified by the trace conftest


def test_a_dim_linear_in_a_symbol_solves_it():
    @relax.jit
    def f(x: T((2 * n,), "float32")):
        return x.reshape(n, 2).sum(1)

    for size in (0, 2, 6, 10):
        x = f32(size)
        np.testing.assert_allclose(f(x), x.reshape(-1, 2).sum(1), rtol=1e-6)
    assert f.cache_size() == 1
    with pytest.raises(relax.ShapeError) as info:
        f(f32(7))
    assert info.value.message == (
        "argument 'x' axis 0: expected n * 2, got 7, which is not n * 2 for any integer n >= 0"
    )


def test_a_size_below_the_offset_fits_no_value():
    @relax.jit
    def f(x: T((n + 5,), "float32")):
        return x[5:]

    assert f(f32(5)).shape == (0,)
    with pytest.raises(relax.ShapeError) as info:
        f(f32(3))
    assert info.value.message == (
        "argument 'x' axis 0: expected n + 5, got 3, which is not n + 5 for any integer n >= 0"
    )


def test_solutions_respect_declared_bounds():
    b = relax.sym("b", lower=1, upper=4)

    @relax.jit
    def f(x: T((b * 3 - 1,), "float32")):
        return x * 2

    for size in (2, 5, 11):
        assert f(f32(size)).shape == (size,)
    for size in (14, 0, 1, 3):
        with pytest.raises(relax.ShapeError) as info:
            f(f32(size))
        assert info.value.message == (
            f"argument 'x' axis 0: expected b * 3 - 1, got {size}, which is not b * 3 - 1 "
            "for any integer 1 <= b <= 4"
        )


def test_symbols_shared_across_parameters():
    @relax.jit
    def f(x: T((n + 1,), "float32"), y: T((n,), "float32")):
        return x[1:] + y

    x, y = f32(4), f32(3)
    np.testing.assert_allclose(f(x, y), x[1:] + y)
    assert f(f32(1), f32(0)).shape == (0,)
    with pytest.raises(relax.ShapeError) as info:
        f(f32(4), f32(4))
    assert info.value.message == (
        "argument 'x' axis 0: expected n + 1 = 5 (n = 4 bound by argument 'y' axis 0), got 4"
    )


def test_a_symbol_solved_first_is_checked_where_it_stands_alone():
    @relax.jit
    def f(x: T((2 * n,), "float32"), y: T((n + m,), "float32")):
        return x[: y.shape[0] - m], y

    a, c = f(f32(6), f32(5))
    assert (a.shape, c.shape) == ((3,), (5,))
    with pytest.raises(relax.ShapeError) as info:
        f(f32(6), f32(2))
    assert info.value.message == (
        "argument 'y' axis 0: expected m + n, got 2, which is not m + n for any integer m >= 0 "
        "given n = 3 (n bound by argument 'x' axis 0 (n * 2))"
    )


def test_a_product_is_solved_once_its_other_factor_is_known():
    @relax.jit
    def f(x: T((n, n * m), "float32")):
        return x.reshape(n, n, m).sum(1)

    x = f32(2, 6)
    np.testing.assert_allclose(f(x), x.reshape(2, 2, 3).sum(1), rtol=1e-6)
    with pytest.raises(relax.ShapeError) as info:
        f(f32(2, 7))
    assert info.value.message == (
        "argument 'x' axis 1: expected m * n, got 7, which is not m * n for any integer m >= 0 "
        "given n = 2 (n bound by argument 'x' axis 0)"
    )
    with pytest.raises(relax.ShapeError) as info:
        f(f32(0, 0))  # m * 0 = 0 for every m: nothing says what m is
    assert info.value.message == (
        "argument 'x' axis 1: m * n cannot determine m when n = 0 (bound by argument 'x' "
        "axis 0); give m a dim of its own or make it a symbolic scalar parameter"
    )
    assert f.cache_size() == 1


def test_dims_that_solve_nothing_are_checked_once_their_symbols_are_known():
    @relax.jit
    def f(x: T(("n // 2", "n % 4"), "float32"), y: T((n, relax.min(n, 4)), "float32")):
        return x.sum(), y.sum()

    assert [np.asarray(r).shape for r in f(f32(3, 3), f32(7, 4))] == [(), ()]
    with pytest.raises(relax.ShapeError) as info:
        f(f32(3, 2), f32(7, 4))
    assert info.value.message == (
        "argument 'x' axis 1: expected n % 4 = 3 (n = 7 bound by argument 'y' axis 0), got 2"
    )
    with pytest.raises(relax.ShapeError) as info:
        f(f32(1, 3), f32(3, 4))
    assert info.value.message == (
        "argument 'y' axis 1: expected min(4, n) = 3 (n = 3 bound by argument 'y' axis 0), got 4"
    )


@pytest.mark.parametrize(
    ("spec", "symbols", "first", "used"),
    [
        (("n*m", 3), "symbols m, n", "m", "argument 'x' axis 0: m * n"),
        (("n*n",), "symbol n", "n", "argument 'x' axis 0: n * n"),
        (
            ("n // 2", "n % 4"),
            "symbol n",
            "n",
            "argument 'x' axis 0: n // 2; argument 'x' axis 1: n % 4",
        ),
    ],
)
def test_a_symbol_no_argument_determines_fails_every_call_but_traces(spec, symbols, first, used):
    def f(x):
        return x * 2

    assert relax.eval_shape(f, T(spec, "float32")) == T(spec, "float32")
    f.__annotations__ = {"x": T(spec, "float32")}
    jitted = relax.jit(f)
    jitted.lower()
    message = (
        f"function f: no argument determines the {symbols} (used only in {used}). A size "
        "determines a symbol when its dim is the symbol alone or linear in it (like "
        f"{first} * 2 + 1) once the dim's other symbols are known; products of unknown "
        "symbols, //, %, min and max are not solved. Give each such symbol a parameter axis of "
        f"its own (just {first}), make it a symbolic scalar parameter ({first}: "
        f'relax.sym("{first}")), or declare the axis as one new symbol and relate it to the '
        "others with relax.match_cast inside the function"
    )
    for _ in range(2):  # the same error on every call; nothing was compiled
        with pytest.raises(relax.ShapeError) as info:
            jitted(f32(*(6 if isinstance(d, str) else d for d in spec)))
        assert info.value.message == message
    assert jitted.cache_size() == 1


def test_rank_and_dtype_are_checked_before_solving():
    @relax.jit
    def f(x: T((2 * n, 3), "float32")):
        return x

    with pytest.raises(relax.ShapeError) as info:
        f(f32(4))
    assert info.value.message == (
        "argument 'x': expected rank 2 (shape (n * 2, 3)), got rank 1 (shape (4,))"
    )
    with pytest.raises(TypeError, match="argument 'x': expected dtype float32, got float64"):
        f(np.zeros((4, 3)))
    with pytest.raises(relax.ShapeError) as info:
        f(f32(4, 2))
    assert info.value.message == "argument 'x' axis 1: expected 3, got 2"


def test_kernels_get_the_symbols_they_need():
    """Graph dims that are expressions reach fused kernels, matmuls, concatenations."""

    @relax.jit
    def f(
        x: T((n, 2 * n), "float32"),
        w: T((2 * n, 3), "float32"),
        a: T((n, 4), "float32"),
        b: T((n + 1, 4), "float32"),
    ):
        cat = rnp.concatenate([a, b])
        return x @ w, cat, rnn.softmax(cat * 2.0, axis=0), rnp.cumsum(x, axis=1)

    for size in (0, 1, 3):
        args = f32(size, 2 * size), f32(2 * size, 3), f32(size, 4), f32(size + 1, 4)
        x, w, a, b = args
        cat = np.concatenate([a, b])
        softmax = np.asarray(jax.nn.softmax(jnp.asarray(cat * 2.0), axis=0))
        expected = [x @ w, cat, softmax, np.cumsum(x, 1)]
        for ours, theirs in zip(f(*args), expected):
            np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-5)
    assert f.cache_size() == 1


def test_reshapes_between_expression_dims():
    @relax.jit
    def f(x: T((6 * n,), "float32"), y: T((n, 2 * n), "float32")):
        return x.reshape(n, 2, 3).sum((1, 2)), y.reshape(-1), y.T.reshape(2, n, n)

    x, y = f32(12), f32(2, 4)
    ours = f(x, y)
    np.testing.assert_allclose(ours[0], x.reshape(2, 2, 3).sum((1, 2)), rtol=1e-6)
    np.testing.assert_array_equal(ours[1], y.reshape(-1))
    np.testing.assert_array_equal(ours[2], y.T.reshape(2, 2, 2))


def test_keyword_calls_and_the_fast_path_agree():
    @relax.jit
    def f(x: T((n + 1,), "float32"), y: T((n,), "float32")):
        return x[:-1] * y

    x, y = f32(4), f32(3)
    np.testing.assert_allclose(f(y=y, x=x), f(x, y))
    assert f.cache_size() == 1


def test_match_cast_solves_its_new_symbols_too():
    @relax.jit
    def f(x: T(("k", 3), "float32")):
        y = relax.match_cast(x, T(("2 * h + 1", 3), "float32"))
        return y[: y.shape[0] // 2 + 1]

    assert relax.eval_shape(f) == T(("h + 1", 3), "float32")
    assert f(f32(7, 3)).shape == (4, 3)
    with pytest.raises(relax.ShapeError) as info:
        f(f32(6, 3))
    line = f.__wrapped__.__code__.co_firstlineno + 2
    assert info.value.message == (
        f"match_cast (line {line}) axis 0: expected h * 2 + 1, got 6, which is not h * 2 + 1 "
        "for any integer h >= 0"
    )
    assert info.value.location is not None and info.value.location.lineno == line
    assert relax.match_cast(np.ones((7, 3)), T(("2 * h + 1", 3), "float64")).shape == (7, 3)
    with pytest.raises(relax.ShapeError) as info:
        relax.match_cast(np.ones((6, 3)), T(("2 * h + 1", 3), "float64"))
    assert info.value.message == (
        'match_cast: axis 0 of Tensor((h * 2 + 1, 3), "float64"): expected h * 2 + 1, got 6 '
        "(shape (6, 3)), which fits no value of h within its bounds"
    )


def test_printed_signature_round_trips_with_bounds():
    b = relax.sym("b", lower=1, upper=8)

    @relax.jit
    def f(x: T((b * 2, "n + b"), "float32")):
        return x

    mod = f.trace()  # the trace conftest checks parse(print(mod)) == mod
    assert '@function(bounds={"b": (1, 8)})' in str(mod)
    assert mod["f"].params[0].info == TensorInfo((b * 2, n + b), "float32")
