"""Errors found while tracing: what they say and which line of the user's code they name."""

import os

import numpy as np
import pytest

import relaxjax as relax
import relaxjax.nn as rnn
import relaxjax.numpy as rnp
from relaxjax.trace import emit
from relaxjax.trace.function import INCONCLUSIVE_ADVICE

THIS_FILE = os.path.abspath(__file__)


def _line_of(fn, offset):
    return fn.__code__.co_firstlineno + offset


def test_python_if_on_an_undecidable_comparison_names_the_comparison_and_the_line():
    def f(x):
        if x.shape[0] > 3:
            return x * 2
        return x

    with pytest.raises(relax.InconclusiveShapeError) as info:
        relax.eval_shape(f, relax.Tensor(("n",), "float32"))
    err = info.value
    assert "cannot decide n > 3 for every value of its symbols" in err.message
    assert INCONCLUSIVE_ADVICE in err.message
    assert "relax.match_cast" in err.message and "lower=1" in err.message
    assert os.path.abspath(err.location.filename) == THIS_FILE
    assert err.location.lineno == _line_of(f, 1)
    assert err.location.line == "if x.shape[0] > 3:"
    assert str(err).endswith(f"at {err.location}")


def test_decidable_comparisons_drive_python_control_flow():
    def f(x):
        if x.shape[0] >= 1:  # n >= 1 holds by the declared bound
            return x * 2
        return x

    out = relax.eval_shape(f, relax.Tensor((relax.sym("n", lower=1),), "float32"))
    assert out.shape[0].name == "n"


def test_bool_of_a_dim_that_may_be_zero_is_inconclusive():
    def f(x):
        return x if x.shape[0] else x * 0

    with pytest.raises(relax.InconclusiveShapeError, match="whether n is non-zero") as info:
        relax.eval_shape(f, relax.Tensor(("n",), "float32"))
    assert info.value.location.lineno == _line_of(f, 1)


def test_bool_of_a_traced_value_names_the_line():
    def f(x):
        y = x + 1
        if y > 0:
            return y
        return -y

    with pytest.raises(relax.TraceError, match="to a Python bool: its value is only known") as info:
        relax.eval_shape(f, relax.Tensor((2,), "float32"))
    assert not isinstance(info.value, relax.InconclusiveShapeError)
    assert info.value.location.lineno == _line_of(f, 2)
    assert "rnp.where" in str(info.value) or "numpy.where" in str(info.value)


def test_shape_error_names_the_op_the_operands_and_the_users_line():
    k = relax.sym("k")

    def f(a, b):
        c = a * 2
        return c @ b

    with pytest.raises(relax.ShapeError) as info:
        relax.eval_shape(f, relax.Tensor((3, k), "float32"), relax.Tensor((k + 1, 5), "float32"))
    err = info.value
    assert "matmul" in err.message
    assert "k + 1" in err.message and "(3, k)" in err.message
    assert os.path.abspath(err.location.filename) == THIS_FILE
    assert err.location.lineno == _line_of(f, 2)
    assert err.location.line == "return c @ b"


def test_shape_error_through_a_wrapper_names_the_users_line():
    def f(x, g, b):
        return rnn.layer_norm(x, g, b)

    with pytest.raises(relax.ShapeError, match="layer_norm") as info:
        relax.eval_shape(
            f,
            relax.Tensor(("n", 4), "float32"),
            relax.Tensor((5,), "float32"),
            relax.Tensor((4,), "float32"),
        )
    assert info.value.location.lineno == _line_of(f, 1)


def test_broadcast_error_is_a_value_error():
    with pytest.raises(ValueError, match=r"add: .*\(3,\).*\(4,\)|\(4,\).*\(3,\)"):
        relax.eval_shape(lambda a, b: a + b, np.ones(3), np.ones(4))


def test_leaked_tracer_used_after_its_trace():
    leaked = []

    def f(x):
        leaked.append(x)
        return x

    relax.eval_shape(f, relax.Tensor((2,), "float32"))
    with pytest.raises(relax.TraceError, match=r"from the trace of f\(\) .* leaked tracer"):
        rnp.exp(leaked[0])
    with pytest.raises(relax.TraceError, match="leaked tracer"):
        relax.eval_shape(lambda y: y + leaked[0], relax.Tensor((2,), "float32"))
    assert leaked[0].shape == (2,)  # static facts stay readable, as in jax


def test_symbol_not_defined_in_the_function():
    stranger = relax.sym("stranger")

    def f(x):
        return x * stranger

    with pytest.raises(relax.TraceError, match=r"symbol stranger .* is not defined in f\(\)"):
        relax.eval_shape(f, relax.Tensor(("n",), "float32"))


def test_conflicting_bounds_for_one_name_name_both():
    def f(x, y):
        return x + y

    with pytest.raises(TypeError) as info:
        relax.eval_shape(
            f,
            relax.Tensor((relax.sym("n", lower=1),), "float32"),
            relax.Tensor((relax.sym("n", upper=8),), "float32"),
        )
    assert str(info.value) == (
        "symbol 'n' is declared with conflicting bounds: sym('n', lower=1) in parameter 'x' "
        "and sym('n', upper=8) in parameter 'y'"
    )


def test_declared_bounds_win_over_undeclared_uses_of_the_name():
    def f(x, y):
        return x, y

    bounded = relax.sym("n", lower=1, upper=64)
    ox, oy = relax.eval_shape(
        f, relax.Tensor(("n + 1",), "float32"), relax.Tensor((bounded,), "float32")
    )
    for out in (ox, oy):
        symbol = next(iter(out.shape[0].symbols))
        assert (symbol.lower, symbol.upper) == (1, 64)


def test_eager_shape_errors_name_the_line():
    a, b = np.ones((2, 3), np.float32), np.ones((4, 5), np.float32)
    with pytest.raises(relax.ShapeError, match="matmul") as info:
        emit("matmul", (a, b))
    assert os.path.abspath(info.value.location.filename) == THIS_FILE


def test_eager_use_of_a_symbolic_dim_is_a_type_error():
    with pytest.raises(
        TypeError, match="add: argument 1 is the symbolic dim n, which has no value"
    ):
        rnp.add(np.ones(2), relax.sym("n"))


def test_emit_rejects_unknown_ops_and_operands():
    with pytest.raises(KeyError, match="no op named 'no_such_op'"):
        emit("no_such_op", ())

    def f(x):
        return emit("add", (x, "a"))

    with pytest.raises(TypeError, match="add: argument 1 must be a tensor, an array, a Python"):
        relax.eval_shape(f, relax.Tensor((2,), "float32"))


# -- arguments without the structure of their annotation --------------------------------

_T = relax.Tensor
_ARRAY = np.ones(2, np.float32)


@relax.jit
def one(x: _T(("n", 4), "float32")):
    return x


@relax.jit
def pair(p: (_T(("n",), "float32"), _T(("n",), "float32"))):
    return p[0]


_PARAMS_SPEC = {"w": _T((4, 3), "float32"), "b": _T((3,), "float32")}


@relax.jit
def named(params: _PARAMS_SPEC, xs: [_T(("n",), "float32")]):
    return params["w"]


_TENSOR = 'annotated Tensor((n, 4), "float32")'
_PAIR = 'annotated (Tensor((n,), "float32"), Tensor((n,), "float32"))'
_PARAMS = "annotated {'b': Tensor((3,), \"float32\"), 'w': Tensor((4, 3), \"float32\")}"
_TWO = {"w": _ARRAY, "b": _ARRAY}


@pytest.mark.parametrize(
    "fn, args, message",
    [
        (
            one,
            ([[1.0, 2.0], [3.0, 4.0]],),
            f"one(): argument 'x': expected an array ({_TENSOR}), got list "
            "[[1.0, 2.0], [3.0, 4.0]]",
        ),
        (one, (None,), f"one(): argument 'x': expected an array ({_TENSOR}), got None"),
        (
            one,
            ((_ARRAY, _ARRAY),),
            f"one(): argument 'x': expected an array ({_TENSOR}), got tuple "
            "(array(shape=(2,), dtype=float32), array(shape=(2,), dtype=float32))",
        ),
        (
            one,
            ({"a": 1},),
            f"one(): argument 'x': expected an array ({_TENSOR}), got dict {{'a': 1}}",
        ),
        (
            one,
            ([list(range(40))],),
            f"one(): argument 'x': expected an array ({_TENSOR}), got list "
            "[[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 1...",
        ),
        (
            pair,
            (_ARRAY,),
            f"pair(): argument 'p': expected a tuple of 2 ({_PAIR}), got ndarray of shape (2,) and "
            "dtype float32",
        ),
        (pair, (None,), f"pair(): argument 'p': expected a tuple of 2 ({_PAIR}), got None"),
        (
            pair,
            ((_ARRAY,) * 3,),
            f"pair(): argument 'p': expected a tuple of 2 ({_PAIR}), got a tuple of 3",
        ),
        (
            pair,
            ([_ARRAY, _ARRAY],),
            f"pair(): argument 'p': expected a tuple of 2 ({_PAIR}), got list "
            "[array(shape=(2,), dtype=float32), array(shape=(2,), dtype=float32)]",
        ),
        (
            pair,
            ((_ARRAY, None),),
            "pair(): argument 'p'[1]: expected an array (annotated Tensor((n,), \"float32\")), "
            "got None",
        ),
        (
            named,
            ({"w": _ARRAY}, [_ARRAY]),
            f"named(): argument 'params': expected a dict with keys 'b', 'w' ({_PARAMS}), "
            "got a dict without key 'b'",
        ),
        (
            named,
            ({**_TWO, "c": 1, "d": 2}, [_ARRAY]),
            f"named(): argument 'params': expected a dict with keys 'b', 'w' ({_PARAMS}), "
            "got a dict with the extra keys 'c', 'd'",
        ),
        (
            named,
            (_TWO, []),
            "named(): argument 'xs': expected a list of 1 (annotated [Tensor((n,), \"float32\")]), "
            "got a list of 0",
        ),
        (
            named,
            (_TWO, (_ARRAY,)),
            "named(): argument 'xs': expected a list of 1 (annotated [Tensor((n,), \"float32\")]), "
            "got tuple (array(shape=(2,), dtype=float32),)",
        ),
    ],
)
def test_an_argument_without_the_structure_of_its_annotation_says_what_was_expected_and_given(
    fn, args, message
):
    with pytest.raises(TypeError) as info:
        fn(*args)
    assert str(info.value) == message


def test_a_non_array_leaf_of_an_annotated_argument_names_the_argument():
    with pytest.raises(TypeError) as info:
        one("text")
    assert str(info.value) == (
        "argument 'x': expected an array of shape (n, 4) and dtype float32, got str 'text'"
    )
