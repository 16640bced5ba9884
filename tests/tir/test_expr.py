"""TIR value expressions and buffers: construction, folding of index math, validation."""

import math

import pytest

from relaxjax import arith, tir

n, m = arith.syms("n m")
i, j = arith.syms("i j")
A = tir.Buffer("A", (n, 4), "float32")
I64 = tir.Buffer("I", (n,), "int64")


def test_buffer_shapes_accept_strings_and_default_row_major_strides():
    b = tir.Buffer("B", ("n", "n*2", 3), "float16")
    assert b.shape == (n, n * 2, 3)
    assert b.strides_or_default() == (n * 6, 3, 1)
    assert b.size() == n * n * 6
    assert b.offset_of((1, 2, 0)) == n * 6 + 6
    assert b.symbols() == {n}
    assert tir.Buffer("S", (n, 4), strides=(8, 1)).offset_of((i, j)) == i * 8 + j


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        ({"name": "1x", "shape": (4,)}, ValueError, "buffer name must be a Python identifier"),
        ({"name": "B", "shape": (-1,)}, ValueError, "axis 0 has negative extent -1"),
        ({"name": "B", "shape": (2.5,)}, TypeError, "expected an int or symbolic dim"),
        ({"name": "B", "shape": (4,), "dtype": "complex64"}, TypeError, "unsupported dtype"),
        ({"name": "B", "shape": (4,), "strides": (1, 1)}, ValueError, "2 strides given for 1"),
        ({"name": "B", "shape": (4,), "scope": "texture"}, ValueError, "scope must be one of"),
    ],
)
def test_buffer_validation(kwargs, error, message):
    with pytest.raises(error, match=message):
        tir.Buffer(**kwargs)


def test_wrong_number_of_indices_names_the_buffer():
    with pytest.raises(ValueError, match=r"buffer A has 2 dimension\(s\) \(n, 4\) but 1 index"):
        A[i]
    with pytest.raises(ValueError, match="buffer A has 2 dimension"):
        tir.BufferStore(A, tir.const(1.0, "float32"), (i, j, 0))


def test_index_math_folds_into_arith():
    x = tir.IndexExpr(i)
    assert x + 1 == tir.IndexExpr(i + 1)
    assert (x + 1) * 2 == tir.IndexExpr(i * 2 + 2)
    assert 3 - x == tir.IndexExpr(3 - i)
    assert tir.max(x, tir.IndexExpr(j)) == tir.IndexExpr(arith.max_(i, j))
    assert -x == tir.IndexExpr(-i)
    assert x // 2 == tir.IndexExpr(i // 2)
    # indices given as IndexExpr are stored as dims
    assert A[x + 1, 0].indices == (i + 1, 0)


def test_binop_of_two_index_values_is_refused():
    with pytest.raises(ValueError, match="index math .* belongs to arith"):
        tir.BinOp("+", tir.IndexExpr(i), tir.IndexExpr(j))


def test_python_scalars_take_the_other_operands_dtype():
    e = A[i, 0] * 2 + 0.5
    assert e == tir.BinOp(
        "+",
        tir.BinOp("*", A[i, 0], tir.FloatImm(2.0, "float32")),
        tir.FloatImm(0.5, "float32"),
    )
    assert e.dtype == "float32"
    assert (I64[i] + 1).b == tir.IntImm(1, "int64")


def test_mixed_dtypes_are_refused_with_both_named():
    with pytest.raises(TypeError, match=r"different dtypes: float32 \(A\[i, 0\]\) and int64"):
        A[i, 0] + I64[i]
    with pytest.raises(TypeError, match="cannot combine a int64 expression with the float 2.5"):
        tir.IndexExpr(i) * 2.5


@pytest.mark.parametrize(
    "build, message",
    [
        (lambda: I64[i] / I64[i], "'/' needs floating operands, got int64"),
        (lambda: tir.const(True) + tir.const(False), "not defined on bool operands"),
        (lambda: A[i, 0] & A[i, 0], "'and' needs bool operands, got float32"),
        (lambda: tir.exp(I64[i]), "exp needs float arguments, got int64"),
        (lambda: tir.call("exp", A[i, 0], A[i, 0]), "exp takes 1 argument"),
        (lambda: tir.call("gamma", A[i, 0]), "unknown intrinsic 'gamma'"),
        (lambda: tir.call("popcount", A[i, 0]), "popcount needs integer arguments, got float32"),
        (lambda: tir.select(A[i, 0], A[i, 0], A[i, 0]), "condition of select must be bool"),
        (lambda: tir.BinOp("**", A[i, 0], A[i, 0]), "unknown binary op '\\*\\*'"),
        (lambda: A[A[i, 0], 0], "index 0 of buffer A must be an integer, got float32"),
        (lambda: tir.IntImm(300, "int8"), "300 does not fit int8"),
        (lambda: tir.IntImm(1, "float32"), "IntImm needs an integer or bool dtype"),
        (lambda: tir.const(1.5), "needs a dtype"),
        (lambda: tir.const(1.5, "int32"), "cannot make a int32 constant from the float 1.5"),
        (lambda: tir.IndexExpr(i, "int32"), "IndexExpr is always int64"),
    ],
)
def test_expression_errors(build, message):
    with pytest.raises((TypeError, ValueError), match=message):
        build()


def test_comparisons_build_nodes_and_have_no_truth_value():
    c = A[i, 0] < 1.0
    assert isinstance(c, tir.BinOp) and c.dtype == "bool"
    assert tir.eq(tir.IndexExpr(i), 3) == tir.BinOp("==", tir.IndexExpr(i), tir.IndexExpr(3))
    with pytest.raises(TypeError, match="has no Python truth value"):
        bool(c)


def test_float_constants_round_to_dtype_and_compare_by_bits():
    assert tir.const(0.1, "float32").value == float.fromhex("0x1.99999ap-4")
    assert tir.const(1 + 2**-8, "bfloat16").value == 1.0  # a tie: to even
    assert tir.const(1 + 3 * 2**-8, "bfloat16").value == 1 + 2**-6
    assert tir.const(math.nan, "float32") == tir.const(math.nan, "float32")
    assert tir.const(0.0, "float32") != tir.const(-0.0, "float32")
    assert tir.const(1.0, "float32") != tir.const(1.0, "float64")
    assert hash(tir.const(math.nan, "float16")) == hash(tir.const(math.nan, "float16"))


def test_cast_skips_same_dtype_and_min_max_values():
    assert tir.cast(A[i, 0], "float32") == A[i, 0]
    assert tir.cast(A[i, 0], "bfloat16") == tir.Cast("bfloat16", A[i, 0])
    assert tir.min_value("float16") == tir.FloatImm(-math.inf, "float16")
    assert tir.max_value("int8") == tir.IntImm(127, "int8")
    assert tir.min_value("uint8") == tir.IntImm(0, "uint8")


def test_intrinsic_result_dtypes():
    x = A[i, 0]
    assert tir.isnan(x).dtype == "bool"
    assert tir.fma(x, x, 1.0).dtype == "float32"
    assert tir.abs(I64[i]).dtype == "int64"
    assert tir.if_then_else(x > 0.0, x, 0.0).dtype == "float32"
    assert set(tir.INTRINSICS) >= {"exp", "log", "tanh", "erf", "sqrt", "rsqrt", "pow", "sigmoid"}


def test_regions_from_slices():
    region = A[i, 0:2]
    assert isinstance(region, tir.BufferRegion)
    assert region.region == (tir.Range(i, 1), tir.Range(0, 2))
    assert repr(region) == "A[i, 0:2]"
    assert tir.BufferRegion.full(A).region == (tir.Range(0, n), tir.Range(0, 4))
    with pytest.raises(ValueError, match="slices take no step"):
        A[0:n:2, 0]


def test_expression_repr_is_printed_text():
    x = tir.Var("x", "float32")
    e = tir.select(x > 0.0, tir.exp(-x), A[i + 1, 0] * (x + 1.0))
    assert repr(e) == "select(x > float32(0.0), exp(-x), A[i + 1, 0] * (x + float32(1.0)))"
    assert repr(tir.cast(I64[i], "float16")) == 'cast(I[i], "float16")'
    assert repr(~(x < 1.0) & tir.const(True)) == "not x < float32(1.0) and True"
