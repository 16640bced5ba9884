"""Symbolic scalar parameters: ``m: relax.sym("m")`` takes an integer that binds ``m``.

The traced function sees the dim ``m`` itself, so shapes built from it compile once
for every value; bounds and types are checked at the call, before any kernel runs.
"""

from __future__ import annotations

import numpy as np
import pytest

import relaxjax as relax
import relaxjax.numpy as rnp
from relaxjax.ir import PrimInfo

T = relax.Tensor
M = relax.sym("m")


@relax.jit
def shapes_from_m(x: T(("n", 4), "float32"), m: relax.sym("m")):
    return (
        rnp.zeros((m, 4)),
        x[:m],
        rnp.arange(m),
        rnp.ones((m,)) * x.shape[0],
        m,
        m * 2 + 1,
    )


def test_one_executable_for_every_value():
    x = np.arange(24, dtype=np.float32).reshape(6, 4)
    for m in (0, 1, 3, 6, 9, np.int32(2), np.int64(5), np.uint8(4), np.array(4), np.array(3, "i2")):
        zeros, head, iota, scaled, m_out, m_expr = shapes_from_m(x, m)
        size = int(m)
        np.testing.assert_array_equal(zeros, np.zeros((size, 4)))
        np.testing.assert_array_equal(head, x[:size])
        np.testing.assert_array_equal(iota, np.arange(size))
        np.testing.assert_array_equal(scaled, np.full((size,), 6.0))
        assert m_out.shape == () and m_out.dtype == np.int64 and int(m_out) == size
        assert m_expr.dtype == np.int64 and int(m_expr) == 2 * size + 1
    assert shapes_from_m.cache_size() == 1


def test_keyword_calls_bind_the_symbol_too():
    x = np.ones((5, 4), np.float32)
    assert shapes_from_m(m=2, x=x)[1].shape == (2, 4)
    assert shapes_from_m(x, m=3)[0].shape == (3, 4)
    assert shapes_from_m.cache_size() == 1


def test_the_parameter_is_an_int64_scalar_whose_value_is_the_symbol():
    mod = shapes_from_m.trace()
    assert mod["shapes_from_m"].params[1].info == PrimInfo("int64", value=M)
    assert 'm: Prim("int64", value=m)' in str(mod)


def test_eval_shape_takes_the_symbol_another_symbol_or_an_int():
    out = relax.eval_shape(shapes_from_m)
    assert out[:4] == (
        T(("m", 4), "float64"),
        T(("min(m, n)", 4), "float32"),
        T(("m",), "int64"),
        T(("m",), "float64"),
    )
    assert out[4:] == (T((), "int64", weak=True), T((), "int64", weak=True))
    x = T(("n", 4), "float32")
    assert relax.eval_shape(shapes_from_m, x, relax.sym("m"))[0] == T(("m", 4), "float64")
    assert relax.eval_shape(shapes_from_m, x, relax.sym("k"))[0] == T(("k", 4), "float64")
    assert relax.eval_shape(shapes_from_m, x, 3)[:2] == (
        T((3, 4), "float64"),
        T(("min(3, n)", 4), "float32"),
    )
    with pytest.raises(TypeError) as info:
        relax.eval_shape(shapes_from_m, x, 2.5)
    assert str(info.value) == (
        "shapes_from_m(): argument 'm': the parameter is the symbolic dim m; give a symbol "
        'such as relax.sym("m") or an int, got float 2.5'
    )


def test_an_unannotated_parameter_given_a_symbol_is_a_symbolic_scalar():
    out = relax.eval_shape(lambda x, m: x[:m] * m, T(("n",), "float32"), relax.sym("m"))
    assert out == T(("min(m, n)",), "float32")


@pytest.mark.parametrize(
    ("value", "given"),
    [
        (2.5, "float 2.5"),
        (True, "bool True"),
        (np.True_, "bool of shape () and dtype bool"),
        ("3", "str '3'"),
        (np.array([1, 2]), "ndarray of shape (2,) and dtype int64"),
        (np.float64(2.0), "float64 of shape () and dtype float64"),
        (np.array(2.0), "ndarray of shape () and dtype float64"),
    ],
)
def test_anything_but_an_integer_is_a_type_error(value, given):
    with pytest.raises(TypeError) as info:
        shapes_from_m(np.ones((2, 4), np.float32), value)
    assert str(info.value) == (
        f"argument 'm': expected a Python or numpy integer for m, got {given}"
    )


def test_bounds_are_checked_at_the_call():
    @relax.jit
    def f(x: T(("n",), "float32"), m: relax.sym("m", lower=1, upper=64)):
        return rnp.zeros((m,)) + x.sum()

    assert f(np.ones(3, np.float32), 64).shape == (64,)
    assert relax.eval_shape(f, T(("n",), "float32"), 64) == T((64,), "float64")
    with pytest.raises(relax.ShapeError) as info:
        relax.eval_shape(f, T(("n",), "float32"), 65)
    assert (
        info.value.message == "f(): argument 'm': m = 65 is outside its declared range 1 <= m <= 64"
    )
    for m in (0, 65, -3):
        with pytest.raises(relax.ShapeError) as info:
            f(np.ones(3, np.float32), m)
        assert info.value.message == (
            f"argument 'm': m = {m} is outside its declared range 1 <= m <= 64"
        )
    with pytest.raises(relax.ShapeError) as info:
        shapes_from_m(np.ones((2, 4), np.float32), -1)  # symbols are >= 0 by default
    assert info.value.message == "argument 'm': m = -1 is outside its declared range 0 <= m"
    with pytest.raises(relax.ShapeError) as info:
        shapes_from_m(np.ones((2, 4), np.float32), 2**70)
    assert info.value.message == f"argument 'm': m = {2**70} does not fit in int64"
    assert f.cache_size() == 1


def test_a_symbol_in_a_tensor_annotation_and_a_scalar_must_agree():
    @relax.jit
    def f(x: T(("m", 4), "float32"), m: relax.sym("m")):
        return x.reshape(m, -1) * m

    np.testing.assert_array_equal(f(np.ones((3, 4), np.float32), 3), np.full((3, 4), 3.0))
    with pytest.raises(relax.ShapeError) as info:
        f(np.ones((3, 4), np.float32), 2)
    assert (
        info.value.message == "argument 'm': expected m = 3 (bound by argument 'x' axis 0), got 2"
    )

    @relax.jit
    def g(m: relax.sym("m"), x: T((2 * M + 1,), "float32")):
        return x[m:]

    assert g(np.int64(2), np.ones(5, np.float32)).shape == (3,)
    with pytest.raises(relax.ShapeError) as info:
        g(2, np.ones(4, np.float32))
    assert info.value.message == (
        "argument 'x' axis 0: expected m * 2 + 1 = 5 (m = 2 bound by argument 'm'), got 4"
    )


def test_an_expression_annotation_is_solved_like_a_dim():
    n = relax.sym("n")

    @relax.jit
    def f(x: T((n,), "float32"), k: n + 1):
        return rnp.zeros((k,))

    assert relax.eval_shape(f) == T(("n + 1",), "float64")
    assert f(np.ones(3, np.float32), 4).shape == (4,)
    with pytest.raises(relax.ShapeError) as info:
        f(np.ones(3, np.float32), 3)
    assert info.value.message == (
        "argument 'k': expected n + 1 = 4 (n = 3 bound by argument 'x' axis 0), got 3"
    )

    @relax.jit
    def g(k: 2 * n):
        return rnp.ones((n,))

    assert g(6).shape == (3,)
    with pytest.raises(relax.ShapeError) as info:
        g(5)
    assert info.value.message == (
        "argument 'k': expected n * 2, got 5, which is not n * 2 for any integer n >= 0"
    )


def test_string_annotations_work_as_well():
    namespace: dict = {}
    exec(
        "from __future__ import annotations\n"
        "import relaxjax as relax, relaxjax.numpy as rnp\n"
        "@relax.jit\n"
        "def f(m: relax.sym('m', lower=1)):\n"
        "    return rnp.arange(m) * 2\n",
        namespace,
    )
    f = namespace["f"]
    np.testing.assert_array_equal(f(3), [0, 2, 4])
    np.testing.assert_array_equal(f(np.int16(2)), [0, 2])
    assert f.cache_size() == 1
    with pytest.raises(relax.ShapeError, match="m = 0 is outside its declared range 1 <= m"):
        f(0)


def test_inlined_calls_take_ints_and_dims_but_not_traced_values():
    @relax.jit
    def inner(x: T(("n", 4), "float32"), m: relax.sym("m")):
        return x[:m] * 2

    @relax.jit
    def outer(x: T(("n", 4), "float32")):
        return inner(x, x.shape[0] // 2), inner(x, 1)

    assert relax.eval_shape(outer) == (T(("n // 2", 4), "float32"), T(("min(1, n)", 4), "float32"))
    half, first = outer(np.ones((6, 4), np.float32))
    assert (half.shape, first.shape) == ((3, 4), (1, 4))

    @relax.jit
    def bad(x: T(("n", 4), "float32"), k: T((), "int64")):
        return inner(x, k)

    with pytest.raises(TypeError) as info:
        relax.eval_shape(bad)
    assert str(info.value) == (
        "inner(): argument 'm' is the symbolic dim m: inside a traced function pass an int or "
        "a symbolic dim (such as x.shape[0]), got Tracer; a value computed at run time cannot "
        "be a shape"
    )


def test_reshape_and_arithmetic_on_the_symbol():
    @relax.jit
    def f(x: T(("n",), "float32"), m: relax.sym("m", lower=1)):
        return x.reshape(m, -1), rnp.ones((m * 2, m + 1)), x[: m * 2]

    x = np.arange(12, dtype=np.float32)
    for m in (1, 2, 3, 4, 6):
        a, b, c = f(x, m)
        np.testing.assert_array_equal(a, x.reshape(m, -1))
        assert b.shape == (2 * m, m + 1)
        np.testing.assert_array_equal(c, x[: 2 * m])
    assert f.cache_size() == 1
    with pytest.raises(relax.ShapeError, match="reshape"):
        f(x, 5)
