"""dtypes: canonical names, numpy conversion, predicates, and promotion checked against jax."""

import itertools

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from relaxjax import dtypes
from relaxjax.dtypes import DTYPES, Weak

jax.config.update("jax_enable_x64", True)

WEAK_SCALARS = {"bool": True, "int": 2, "float": 2.0}


def _jax_result(operands):
    """What jax.numpy gives for ``a + b`` over our operands: (dtype name, weak flag)."""
    specs = []
    for operand in operands:
        if isinstance(operand, Weak):
            specs.append(WEAK_SCALARS[operand.kind])
        else:
            specs.append(jax.ShapeDtypeStruct((), jnp.dtype(operand)))
    out = jax.eval_shape(lambda *xs: _sum(xs), *specs)
    return np.dtype(out.dtype).name, bool(out.weak_type)


def _sum(xs):
    total = xs[0]
    for x in xs[1:]:
        total = total + x
    return total


@pytest.mark.parametrize("a,b", list(itertools.product(DTYPES, DTYPES)))
def test_promote_matches_jax_for_every_pair(a, b):
    assert dtypes.promote(a, b) == np.dtype(jnp.promote_types(a, b)).name


ALL_OPERANDS = list(DTYPES) + [Weak(k) for k in dtypes.WEAK_KINDS]


@pytest.mark.parametrize("a,b", list(itertools.product(ALL_OPERANDS, ALL_OPERANDS)))
def test_result_type_with_weak_scalars_matches_jax_eval_shape(a, b):
    expected_dtype, expected_weak = _jax_result([a, b])
    assert dtypes.result_type_weak(a, b) == (expected_dtype, expected_weak)
    assert dtypes.result_type(a, b) == expected_dtype


@given(st.lists(st.sampled_from(ALL_OPERANDS), min_size=1, max_size=4))
def test_result_type_of_many_operands_matches_jnp_result_type(operands):
    jax_args = [WEAK_SCALARS[o.kind] if isinstance(o, Weak) else jnp.dtype(o) for o in operands]
    expected = np.dtype(jnp.result_type(*jax_args)).name
    assert dtypes.result_type(*operands) == expected


def test_examples_from_the_contract():
    assert dtypes.result_type("float32", Weak("float")) == "float32"
    assert dtypes.result_type("int32", Weak("int")) == "int32"
    assert dtypes.result_type("int32", Weak("float")) == "float64"
    assert dtypes.result_type(Weak("float")) == "float64"
    assert dtypes.result_type(Weak("int")) == "int64"
    assert dtypes.default_float() == np.dtype(jnp.asarray(1.0).dtype).name
    assert dtypes.default_int() == np.dtype(jnp.asarray(1).dtype).name


@given(st.sampled_from(DTYPES), st.sampled_from(DTYPES), st.sampled_from(DTYPES))
def test_promote_is_commutative_and_associative(a, b, c):
    assert dtypes.promote(a, b) == dtypes.promote(b, a)
    assert dtypes.promote(dtypes.promote(a, b), c) == dtypes.promote(a, dtypes.promote(b, c))
    assert dtypes.promote(a, a) == a


@pytest.mark.parametrize("name", DTYPES)
def test_canonical_accepts_numpy_jax_and_names(name):
    np_dtype = dtypes.to_numpy(name)
    assert dtypes.canonical(name) == name
    assert dtypes.canonical(np_dtype) == name
    assert dtypes.canonical(np_dtype.type) == name
    assert dtypes.canonical(jnp.dtype(name)) == name
    assert dtypes.canonical(getattr(jnp, "bool_" if name == "bool" else name)) == name


def test_canonical_python_types_and_aliases():
    assert dtypes.canonical(float) == "float64"
    assert dtypes.canonical(int) == "int64"
    assert dtypes.canonical(bool) == "bool"
    assert dtypes.canonical("f4") == "float32"
    assert dtypes.canonical(ml_dtypes.bfloat16) == "bfloat16"


def test_canonical_accepts_torch_dtypes_without_importing_torch():
    torch = pytest.importorskip("torch")
    for name in DTYPES:
        assert dtypes.canonical(getattr(torch, name)) == name
    with pytest.raises(
        TypeError, match=r"unsupported dtype torch.complex64 \(complex64\); supported"
    ):
        dtypes.canonical(torch.complex64)

    class Fake:  # a lookalike from another module is not taken for torch's
        def __str__(self):
            return "torch.float32"

    with pytest.raises(TypeError, match="unsupported dtype"):
        dtypes.canonical(Fake())


@pytest.mark.parametrize(
    "bad,shown",
    [
        ("complex64", "'complex64' (complex64)"),
        (np.uint32, "(uint32)"),
        ("nonsense", "'nonsense'"),
        (None, "got None"),
        (3, "got 3"),
    ],
)
def test_canonical_rejects_unsupported_with_a_message(bad, shown):
    with pytest.raises(TypeError) as info:
        dtypes.canonical(bad)
    assert shown in str(info.value)
    assert "float32" in str(info.value)


def test_to_numpy_and_itemsize():
    assert dtypes.to_numpy("bfloat16") == np.dtype(ml_dtypes.bfloat16)
    assert dtypes.to_numpy("float16") == np.dtype(np.float16)
    sizes = {name: dtypes.itemsize(name) for name in DTYPES}
    assert sizes == {name: jnp.dtype(name).itemsize for name in DTYPES}


@pytest.mark.parametrize("name", DTYPES)
def test_predicates_match_jnp(name):
    jd = jnp.dtype(name)
    assert dtypes.is_floating(name) == bool(jnp.issubdtype(jd, jnp.floating))
    assert dtypes.is_integer(name) == bool(jnp.issubdtype(jd, jnp.integer))
    assert dtypes.is_unsigned(name) == bool(jnp.issubdtype(jd, jnp.unsignedinteger))
    assert dtypes.is_signed(name) == bool(
        jnp.issubdtype(jd, jnp.signedinteger) or jnp.issubdtype(jd, jnp.floating)
    )
    assert dtypes.is_bool(name) == (jd == jnp.bool_)


def test_weak_of_and_bad_kind():
    assert dtypes.weak_of(True) == Weak("bool")
    assert dtypes.weak_of(3) == Weak("int")
    assert dtypes.weak_of(3.5) == Weak("float")
    assert Weak("float").dtype == "float64"
    with pytest.raises(TypeError, match="got str"):
        dtypes.weak_of("3")
    with pytest.raises(ValueError, match="Weak kind must be one of"):
        Weak("complex")
    with pytest.raises(TypeError, match="at least one operand"):
        dtypes.result_type()
