"""Graph IR nodes: validation, derived infos, run-time checks."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from ir_fakes import relu

from relaxjax import arith
from relaxjax.errors import SourceLocation
from relaxjax.ir import (
    Binding,
    BindingBlock,
    Call,
    Check,
    Constant,
    DataflowBlock,
    ExternFunc,
    Function,
    GlobalVar,
    ObjectInfo,
    PrimInfo,
    PrimValue,
    SeqExpr,
    ShapeExpr,
    ShapeInfo,
    TensorInfo,
    Tuple,
    TupleGetItem,
    TupleInfo,
    Var,
)

n, m = arith.sym("n"), arith.sym("m")


def test_vars_compare_by_identity():
    a = Var("x", TensorInfo((n,)))
    b = Var("x", TensorInfo((n,)))
    assert a != b and a == a
    assert len({a, b}) == 2
    with pytest.raises(TypeError, match="the info of Var 'x' must be a StructInfo, got 3"):
        Var("x", 3)


def test_constant_info_and_read_only_data():
    data = np.arange(6, dtype=np.int32).reshape(2, 3)
    const = Constant(data)
    assert const.info == TensorInfo((2, 3), "int32")
    with pytest.raises(ValueError):
        const.data[0, 0] = 5
    data[0, 0] = 7  # the caller's array is not frozen
    assert Constant(np.float32(2.0)).info == TensorInfo((), "float32")
    with pytest.raises(TypeError, match="unsupported dtype"):
        Constant(np.zeros(2, np.complex64))


def test_prim_value_dtypes_and_infos():
    assert PrimValue(2).info == PrimInfo("int64", value=2)
    assert PrimValue(2.5, weak=True).info == PrimInfo("float64", weak=True)
    assert PrimValue(True).info == PrimInfo("bool")
    assert PrimValue(n * 2, weak=True).info == PrimInfo("int64", value=n * 2, weak=True)
    assert PrimValue(3, "float32").value == 3.0 and type(PrimValue(3, "float32").value) is float
    assert PrimValue(3.0, "int32").value == 3
    with pytest.raises(ValueError, match="PrimValue 3.5 is not an integer but dtype is int32"):
        PrimValue(3.5, "int32")
    with pytest.raises(TypeError, match="a symbolic PrimValue must have an integer dtype"):
        PrimValue(n, "float32")
    with pytest.raises(TypeError, match="a PrimValue holds an int, float, bool"):
        PrimValue("3")


def test_tuple_shape_and_get_item_infos():
    x = Var("x", TensorInfo((n, 4)))
    tup = Tuple([x, ShapeExpr([n, "m"])])
    assert tup.info == TupleInfo([TensorInfo((n, 4)), ShapeInfo((n, m))])
    assert TupleGetItem(tup, 1).info == ShapeInfo((n, m))
    with pytest.raises(IndexError, match="tuple index 2 out of range for a tuple of 2 fields"):
        TupleGetItem(tup, 2)
    opaque = Var("o", ObjectInfo())
    assert TupleGetItem(opaque, 5).info == ObjectInfo()
    assert GlobalVar("f").info == ObjectInfo() and GlobalVar("f") == GlobalVar("f")
    assert ExternFunc("cblas_sgemm") == ExternFunc("cblas_sgemm")


def test_call_validation():
    x = Var("x", TensorInfo((n,)))
    call = Call(relu, [x])
    assert call.info is None and call.checks == () and call.op_name == "relu"
    assert Call(GlobalVar("f"), [x]).op_name == "f"
    with pytest.raises(TypeError, match="Call.op must be an op"):
        Call("relu", [x])
    with pytest.raises(TypeError, match="Call args must be IR expressions, got 3"):
        Call(relu, [3])
    with pytest.raises(TypeError, match="Call checks must be Check objects"):
        Call(relu, [x], None, TensorInfo((n,)), ["n == m"])


def test_bindings_compare_without_location():
    x = Var("x", TensorInfo((n,)))
    a = Binding(x, PrimValue(1), SourceLocation("a.py", 1))
    b = Binding(x, PrimValue(1), SourceLocation("b.py", 2))
    assert a == b
    assert BindingBlock([a]) != DataflowBlock([a])
    with pytest.raises(TypeError, match="a block holds Binding and MatchCast"):
        BindingBlock([x])


def test_function_attrs_and_params():
    x = Var("x", TensorInfo((n,)))
    func = Function([x], SeqExpr([], x), x.info, "f", {"b": (1, 2), "a": "s"})
    assert func.attrs == (("a", "s"), ("b", (1, 2)))
    assert func.attrs_dict == {"a": "s", "b": (1, 2)}
    with pytest.raises(TypeError, match="function attribute values must be plain data"):
        Function([x], SeqExpr([], x), x.info, "f", {"a": object()})
    with pytest.raises(TypeError, match="a function body must be a SeqExpr"):
        Function([x], x, x.info)


@pytest.mark.parametrize(
    "check,relation,decided",
    [
        (Check("eq", (n, n)), "n == n", True),
        (Check("eq", (n, n + 1)), "n == n + 1", False),
        (Check("eq", (n, m)), "n == m", None),
        (Check("le", (n, n + 1)), "n <= n + 1", True),
        (Check("le", (n + 1, n)), "n + 1 <= n", False),
        (Check("nonneg", (n,)), "n >= 0", True),
        (Check("nonneg", (n - 1,)), "n - 1 >= 0", None),
        (Check("broadcast", (n, 1)), "broadcast(n, 1)", True),
        (Check("broadcast", (3, 4)), "broadcast(3, 4)", False),
        (Check("broadcast", (n, m)), "broadcast(n, m)", None),
        (Check("divides", (4, n * 8)), "divides(4, n * 8)", True),
        (Check("divides", (4, n * 4 + 2)), "divides(4, n * 4 + 2)", False),
        (Check("divides", (0, 0)), "divides(0, 0)", True),
        (Check("divides", (n, m)), "divides(n, m)", None),
    ],
)
def test_check_relation_and_decision(check, relation, decided):
    assert check.relation() == relation
    assert check.decide() is decided


def test_check_validation():
    with pytest.raises(ValueError, match="Check kind must be one of"):
        Check("lt", (1, 2))
    with pytest.raises(ValueError, match="Check 'nonneg' takes 1 dims, got 2"):
        Check("nonneg", (1, 2))
    with pytest.raises(TypeError, match="Check args must be ints or symbolic expressions"):
        Check("eq", (1, "n"))


@given(
    st.sampled_from(["eq", "broadcast", "le", "divides"]),
    st.integers(0, 6),
    st.integers(0, 6),
)
def test_check_holds_matches_its_definition(kind, a, b):
    expected = {
        "eq": a == b,
        "broadcast": a == b or a == 1 or b == 1,
        "le": a <= b,
        "divides": (b == 0) if a == 0 else b % a == 0,
    }[kind]
    check = Check(kind, (n, m))
    assert check.holds({"n": a, "m": b}) is expected
    assert Check(kind, (a, b)).decide() is expected


def test_check_holds_names_a_missing_symbol():
    with pytest.raises(KeyError, match="m"):
        Check("eq", (n, m)).holds({"n": 1})
