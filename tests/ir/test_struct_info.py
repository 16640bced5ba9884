"""Struct info: construction, text, equality and the lattice laws."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from relaxjax import arith
from relaxjax.ir import (
    ObjectInfo,
    PrimInfo,
    ShapeInfo,
    TensorInfo,
    TupleInfo,
    defining_symbols,
    erase,
    free_symbols,
    is_base_of,
    lca,
    parse_info,
    restrict_symbols,
    subs_info,
)

n, m = arith.sym("n"), arith.sym("m")


def test_tensor_spec_forms_from_the_api():
    spec = TensorInfo((n, 4), "float32")
    assert spec.shape == (n, 4) and spec.ndim == 2 and spec.dtype == "float32"
    assert repr(spec) == 'Tensor((n, 4), "float32")'
    parsed = TensorInfo(("n", "n*2"), "float16")
    assert parsed.shape == (n, n * 2)
    assert repr(parsed) == 'Tensor((n, n * 2), "float16")'
    ranked = TensorInfo(ndim=2, dtype="float32")
    assert (ranked.shape, ranked.ndim) == (None, 2)
    assert repr(ranked) == 'Tensor(ndim=2, dtype="float32")'
    unranked = TensorInfo(dtype="float32")
    assert (unranked.shape, unranked.ndim) == (None, None)
    assert repr(unranked) == 'Tensor(dtype="float32")'
    assert repr(TensorInfo((n,), "bool")) == 'Tensor((n,), "bool")'
    assert repr(TensorInfo((), "int8")) == 'Tensor((), "int8")'


def test_equality_is_structural_and_strings_share_symbols():
    assert TensorInfo((n, 4), "float32") == TensorInfo(("n", 4), np.float32)
    assert hash(TensorInfo((n, 4))) == hash(TensorInfo(("n", 4)))
    assert TensorInfo(((n + 1) * 2,)) == TensorInfo(("2*n + 2",))
    assert TensorInfo((n, 4)) != TensorInfo((m, 4))
    assert TensorInfo((n, 4)) != TensorInfo((n, 4), "float16")
    assert TensorInfo(ndim=2) != TensorInfo((n, 4))
    bounded = arith.sym("n", lower=1, upper=64)
    spec = TensorInfo((bounded, "n*2"), "float32")
    assert spec.shape[1] == bounded * 2
    assert arith.compare(spec.shape[1], ">=", 2) is True  # the string reused the bounded n


def test_numpy_ints_become_ints():
    spec = TensorInfo((np.int64(3), 4))
    assert spec.shape == (3, 4) and all(type(d) is int for d in spec.shape)


@pytest.mark.parametrize(
    "kwargs,error,message",
    [
        ({"shape": (3,), "ndim": 2}, ValueError, "ndim=2 does not match shape (3,) of rank 1"),
        ({"shape": (-1, 4)}, ValueError, "a dimension must be >= 0, got -1"),
        ({"shape": (True, 4)}, TypeError, "got True"),
        ({"shape": (2.5,)}, TypeError, "got 2.5 of type float"),
        ({"shape": 4}, TypeError, "a shape must be a tuple of dims, got 4"),
        ({"shape": "n"}, TypeError, "a shape must be a tuple of dims, got 'n'"),
        ({"ndim": -1}, ValueError, "ndim must be a non-negative int or None, got -1"),
        ({"dtype": "complex64"}, TypeError, "unsupported dtype 'complex64'"),
    ],
)
def test_tensor_info_rejects_bad_specs(kwargs, error, message):
    with pytest.raises(error) as info:
        TensorInfo(**kwargs)
    assert message in str(info.value)


def test_other_infos_and_their_text():
    assert repr(ObjectInfo()) == "Object()"
    assert repr(ShapeInfo((n, 4))) == "Shape((n, 4))"
    assert ShapeInfo((n, 4)).ndim == 2
    assert repr(ShapeInfo(ndim=3)) == "Shape(ndim=3)"
    assert repr(ShapeInfo()) == "Shape()"
    assert repr(PrimInfo("int64", value=n, weak=True)) == 'Prim("int64", value=n, weak=True)'
    assert repr(PrimInfo("float32")) == 'Prim("float32")'
    assert PrimInfo("int32", value=-3).value == -3
    tup = TupleInfo([TensorInfo((n,)), PrimInfo("bool")])
    assert repr(tup) == 'Tuple(Tensor((n,), "float32"), Prim("bool"))'
    with pytest.raises(ValueError, match="only integer scalars carry a value, got value=2"):
        PrimInfo("float32", value=2)
    with pytest.raises(TypeError, match="TupleInfo fields must be StructInfo, got 3"):
        TupleInfo([3])


def test_prim_weak_operand():
    from relaxjax.dtypes import Weak

    assert PrimInfo("float64", weak=True).weak_operand == Weak("float")
    assert PrimInfo("int64", weak=True).weak_operand == Weak("int")
    assert PrimInfo("bool", weak=True).weak_operand == Weak("bool")
    assert PrimInfo("float32").weak_operand == "float32"


def test_is_base_of_three_valued():
    exact = TensorInfo((n, 4))
    assert is_base_of(TensorInfo(ndim=2), exact) is True
    assert is_base_of(TensorInfo(), exact) is True
    assert is_base_of(ObjectInfo(), exact) is True
    assert is_base_of(exact, TensorInfo(ndim=2)) is None  # coarser: depends on run time
    assert is_base_of(exact, ObjectInfo()) is None
    assert is_base_of(exact, TensorInfo((m, 4))) is None  # n == m unknown
    assert is_base_of(exact, TensorInfo((n + 1, 4))) is False
    assert is_base_of(exact, TensorInfo((n, 4), "int32")) is False
    assert is_base_of(exact, TensorInfo(ndim=3)) is False
    assert is_base_of(exact, PrimInfo("float32")) is False
    assert is_base_of(PrimInfo("int64"), PrimInfo("int64", value=n)) is True
    assert is_base_of(PrimInfo("int64", value=n), PrimInfo("int64")) is None
    assert is_base_of(TupleInfo([exact]), TupleInfo([exact, exact])) is False


def test_erase_levels_and_lca():
    info = TupleInfo([TensorInfo((n, 4)), ShapeInfo((n,)), PrimInfo("int64", value=n)])
    assert erase(info) == TupleInfo([TensorInfo(ndim=2), ShapeInfo(ndim=1), PrimInfo("int64")])
    assert erase(info, "ndim") == TupleInfo([TensorInfo(), ShapeInfo(), PrimInfo("int64")])
    assert erase(info, "object") == ObjectInfo()
    with pytest.raises(ValueError, match="erase level must be one of"):
        erase(info, "dims")
    assert lca(TensorInfo((n, 4)), TensorInfo((m, 4))) == TensorInfo(ndim=2)
    assert lca(TensorInfo((n, 4)), TensorInfo((n, 4))) == TensorInfo((n, 4))
    assert lca(TensorInfo((n,)), TensorInfo((n, 4))) == TensorInfo()
    assert lca(TensorInfo((n,)), TensorInfo((n,), "int8")) == ObjectInfo()


def test_symbols_subs_and_restrict():
    info = TupleInfo([TensorInfo((n, n * 2)), PrimInfo("int64", value=m + 1)])
    assert free_symbols(info) == {n, m}
    assert defining_symbols(info) == {n}
    assert subs_info(info, {"n": 3, m: n}) == TupleInfo(
        [TensorInfo((3, 6)), PrimInfo("int64", value=n + 1)]
    )
    assert restrict_symbols(info, [n]) == TupleInfo([TensorInfo((n, n * 2)), PrimInfo("int64")])
    assert restrict_symbols(TensorInfo((n, m)), [n]) == TensorInfo(ndim=2)


def test_parse_info_reads_the_text_back():
    for info in [
        TensorInfo((n, 4), "bfloat16"),
        TensorInfo(ndim=0, dtype="int8"),
        TensorInfo(dtype="bool"),
        TupleInfo([TensorInfo(((n + 1) // 2, arith.min_(n, 4))), ShapeInfo(ndim=2)]),
        TupleInfo([]),
        PrimInfo("int64", value=n * 3 - 1, weak=True),
        ObjectInfo(),
    ]:
        assert parse_info(repr(info)) == info
    with pytest.raises(ValueError, match="expected struct info, got 'Tensr"):
        parse_info("Tensr((n,))")


# -- lattice laws over random infos ----------------------------------------------------

dims = st.sampled_from([0, 1, 4, n, m, n + 1, n * 2])
dtype_names = st.sampled_from(["float32", "int64"])


def _tensor(shape, dtype, level):
    info = TensorInfo(shape, dtype)
    return info if level == 0 else erase(info, ("shape", "ndim", "object")[level - 1])


tensors = st.builds(_tensor, st.lists(dims, max_size=3).map(tuple), dtype_names, st.integers(0, 3))
infos = st.recursive(
    tensors | st.builds(PrimInfo, st.just("int64"), st.none() | dims),
    lambda inner: st.lists(inner, max_size=3).map(TupleInfo),
    max_leaves=5,
)


@given(infos)
def test_law_reflexive_and_top(a):
    assert is_base_of(a, a) is True
    assert is_base_of(ObjectInfo(), a) is True


@given(infos, st.sampled_from(["shape", "ndim", "object"]))
def test_law_erase_is_a_base(a, level):
    assert is_base_of(erase(a, level), a) is True


@given(infos, infos, infos)
def test_law_transitive(a, b, c):
    if is_base_of(a, b) is True and is_base_of(b, c) is True:
        assert is_base_of(a, c) is True


@given(infos, infos)
def test_law_lca_is_a_common_base(a, b):
    common = lca(a, b)
    assert is_base_of(common, a) is True
    assert is_base_of(common, b) is True
    assert lca(a, a) == a


@given(infos, infos)
def test_law_false_means_disjoint(a, b):
    """False means no value is described by both, which is symmetric."""
    assert (is_base_of(a, b) is False) == (is_base_of(b, a) is False)
    if is_base_of(a, b) is False:
        assert a != b


@given(infos)
def test_law_parse_repr_round_trip(a):
    assert parse_info(repr(a)) == a
