"""relaxjax.numpy's constants, dtype objects and dtype functions against jax.numpy's
(issue 10): every scalar type jax exposes, the abstract classes, ``finfo``/``iinfo``,
``issubdtype``/``isdtype``/``can_cast``/``promote_types``/``result_type``, and the array
predicates ``ndim shape size isscalar iterable`` with ``ndarray`` and ``copy``."""

from __future__ import annotations

import itertools
import math

import jax.numpy as jnp
import numpy as np
import pytest

import relaxjax as relax
import relaxjax.numpy as rnp
from relaxjax import dtypes

#: Every scalar type jax.numpy exposes (the unsupported ones raise TypeError when used).
SCALAR_TYPES = sorted(
    name
    for name in dir(jnp)
    if type(getattr(jnp, name)).__name__ == "_ScalarMeta" and not name.startswith("_")
)
SUPPORTED = [n for n in SCALAR_TYPES if np.dtype(getattr(jnp, n)).name in dtypes.DTYPES]
UNSUPPORTED = [n for n in SCALAR_TYPES if n not in SUPPORTED]
ABSTRACT = ("generic", "number", "integer", "signedinteger", "unsignedinteger", "inexact") + (
    "floating",
    "complexfloating",
    "flexible",
    "character",
    "object_",
)


def test_constants_are_jax_s():
    for name in ("e", "pi", "inf", "euler_gamma"):
        assert getattr(rnp, name) == getattr(jnp, name), name
    assert math.isnan(rnp.nan) and rnp.newaxis is None is jnp.newaxis
    assert rnp.dtype is jnp.dtype is np.dtype
    assert rnp.ComplexWarning is jnp.ComplexWarning
    assert rnp.iterable is jnp.iterable


def test_every_scalar_type_of_jax_exists_and_equals_its_numpy_type():
    assert SCALAR_TYPES and set(SCALAR_TYPES) <= set(rnp.__all__)
    for name in SCALAR_TYPES:
        ours, theirs = getattr(rnp, name), getattr(jnp, name)
        assert np.dtype(ours) == np.dtype(theirs), name
        assert ours == theirs.dtype.type and hash(ours) == hash(theirs), name
        assert ours == np.dtype(theirs).name and np.dtype(theirs).name == ours, name
        assert ours != "not a dtype" and ours != rnp.bool_ or name in ("bool", "bool_")


def test_supported_scalar_types_make_arrays_as_jax_s_do():
    values = [1.5, -2, True]
    for name in SUPPORTED:
        for value in values:
            try:
                theirs = getattr(jnp, name)(value)
            except OverflowError:  # numpy refuses -2 as a uint8, for jax and for us
                with pytest.raises(OverflowError):
                    getattr(rnp, name)(value)
                continue
            ours = getattr(rnp, name)(value)
            assert ours.dtype == theirs.dtype and ours.shape == theirs.shape == (), name
            assert ours == np.asarray(theirs), (name, value)
        array = np.array([[0.5, -1.5]])
        np.testing.assert_array_equal(getattr(rnp, name)(array), getattr(jnp, name)(array))


def test_scalar_types_work_as_dtypes_inside_a_trace():
    def f(x):
        assert x.dtype == rnp.float32 and rnp.float32 == x.dtype
        assert isinstance(x, rnp.ndarray)
        y = x.astype(rnp.bfloat16) + rnp.zeros(x.shape, rnp.bfloat16)
        return rnp.float16(y), rnp.int_(x), rnp.asarray(x, dtype=rnp.float64)

    outs = relax.eval_shape(f, relax.Tensor(("n", 2), "float32"))
    assert [o.dtype for o in outs] == ["float16", "int64", "float64"]
    assert all(str(o.shape[0]) == "n" for o in outs)
    got = relax.jit(f)(np.array([[1.5, -2.5]], np.float32))
    np.testing.assert_array_equal(got[1], [[1, -2]])


@pytest.mark.parametrize("name", UNSUPPORTED)
def test_unsupported_scalar_types_raise_a_clear_type_error(name):
    kind = getattr(rnp, name)
    with pytest.raises(TypeError, match="unsupported dtype.*supported: bool, int8"):
        kind(1)
    with pytest.raises(TypeError, match="unsupported dtype"):
        rnp.zeros(2, kind)
    with pytest.raises(TypeError, match="unsupported dtype"):
        relax.eval_shape(lambda x: x.astype(kind), relax.Tensor((2,), "float32"))


def test_isinstance_checks():
    assert isinstance(np.float32(1), rnp.float32) and not isinstance(np.float64(1), rnp.float32)
    assert isinstance(np.ones(2), rnp.ndarray)  # relaxjax's concrete arrays are numpy's
    assert not isinstance(1.0, rnp.ndarray) and not isinstance([1.0], rnp.ndarray)
    assert isinstance(rnp.exp(np.ones(2)), rnp.ndarray)
    for name in ABSTRACT:
        assert getattr(rnp, name) is getattr(jnp, name), name


# --------------------------------------------------------------------------- dtype functions

DTYPE_LIKES = [*(getattr(rnp, n) for n in SCALAR_TYPES), *dtypes.DTYPES, float, int, bool]


def _jax_like(value):
    """The same dtype-like for jax: our scalar types are jax's by name."""
    if isinstance(value, type) and type(value).__name__ == "_ScalarMeta":
        return getattr(jnp, value.__name__)
    return value


def test_finfo_and_iinfo_match_jax():
    for name in SCALAR_TYPES:
        kind = np.dtype(getattr(jnp, name))
        info = (rnp.finfo, jnp.finfo) if kind.kind == "f" or "float" in name else None
        if kind.kind in "iu":
            info = (rnp.iinfo, jnp.iinfo)
        if info is None:
            continue
        ours, theirs = info[0](getattr(rnp, name)), info[1](getattr(jnp, name))
        fields = ("min", "max", "bits") + (("eps", "tiny") if info[0] is rnp.finfo else ())
        for field in fields:
            assert getattr(ours, field) == getattr(theirs, field), (name, field)
    assert rnp.finfo("bfloat16").eps == jnp.finfo(jnp.bfloat16).eps
    spec = relax.Tensor((2,), "float16")
    relax.eval_shape(lambda x: x * rnp.finfo(x).eps * rnp.finfo(x.dtype).max, spec)
    assert rnp.iinfo("int8").min == -128


def test_issubdtype_matches_jax_for_every_pair():
    kinds = DTYPE_LIKES + [getattr(rnp, n) for n in ABSTRACT]
    for a, b in itertools.product(kinds, repeat=2):
        expected = jnp.issubdtype(_jax_like(a), _jax_like(b))
        assert rnp.issubdtype(a, b) == expected, (a, b)


def test_isdtype_matches_jax():
    kinds = [
        "bool",
        "signed integer",
        "unsigned integer",
        "integral",
        "real floating",
        "complex floating",
        "numeric",
        ("integral", "real floating"),
        rnp.float32,
        (rnp.int8, "bool"),
    ]
    for dtype, kind in itertools.product(DTYPE_LIKES, kinds):
        theirs = jnp.isdtype(
            _jax_like(dtype),
            tuple(map(_jax_like, kind)) if isinstance(kind, tuple) else _jax_like(kind),
        )
        assert rnp.isdtype(dtype, kind) == theirs, (dtype, kind)
    with pytest.raises(ValueError, match="Unrecognized kind='floating'"):
        rnp.isdtype(rnp.float32, "floating")


def test_can_cast_matches_jax():
    for a, b in itertools.product(dtypes.DTYPES, repeat=2):
        for casting in ("no", "safe", "same_kind", "unsafe"):
            theirs = jnp.can_cast(jnp.dtype(a), jnp.dtype(b), casting)
            assert rnp.can_cast(a, getattr(rnp, b if b != "bool" else "bool_"), casting) == theirs


def test_promote_types_and_result_type_match_jax_with_x64():
    for a, b in itertools.product(dtypes.DTYPES, repeat=2):
        assert rnp.promote_types(a, b) == jnp.promote_types(a, b), (a, b)
        assert rnp.promote_types(getattr(rnp, "bool_" if a == "bool" else a), b) == (
            jnp.promote_types(a, b)
        )
    operands = [np.ones(2, np.int32), np.float16(1), 2.0, 3, True, "bfloat16", rnp.uint8]
    for combo in itertools.combinations(operands, 2):
        theirs = jnp.result_type(*(_jax_like(c) for c in combo))
        assert rnp.result_type(*combo) == theirs, combo
    assert rnp.result_type(2.0) == jnp.result_type(2.0) == np.float64
    traced = relax.eval_shape(
        lambda x: rnp.zeros(2, rnp.result_type(x, 2.0)), relax.Tensor((2,), "int32")
    )
    assert traced.dtype == "float64"  # an int array meeting a Python float, as jax
    with pytest.raises(TypeError, match="unsupported dtype"):
        rnp.promote_types(rnp.uint32, rnp.int8)
    with pytest.raises(ValueError, match="at least one"):
        rnp.result_type()


def test_array_predicates_match_jax():
    arrays = [np.zeros((2, 3)), np.float32(1.0), 2.5, np.arange(3), np.zeros(0)]
    for a in arrays:
        assert rnp.ndim(a) == jnp.ndim(a) and rnp.shape(a) == jnp.shape(a), a
        assert rnp.size(a) == jnp.size(a) and rnp.isscalar(a) == jnp.isscalar(a), a
    assert rnp.size(np.zeros((2, 3)), axis=1) == 3 and rnp.size(np.zeros((2, 3)), (0, 1)) == 6
    assert rnp.isscalar("text") == jnp.isscalar("text")
    copied = rnp.copy(np.ones(3))
    assert isinstance(copied, np.ndarray) and copied.dtype == np.float64

    def f(x):
        n = x.shape[0]
        assert rnp.ndim(x) == 2 and rnp.shape(x) == (n, 4) and rnp.size(x) == n * 4
        assert rnp.size(x, axis=-1) == 4 and not rnp.isscalar(x) and rnp.isscalar(x[0, 0])
        assert rnp.copy(x) is x
        return x

    relax.eval_shape(f, relax.Tensor(("n", 4), "float32"))
    with pytest.raises(ValueError, match="axis 2 is out of bounds"):
        rnp.size(np.zeros((2, 3)), axis=2)


def test_jax_example_of_dtype_dispatch_ports_unchanged():
    """A typical jax idiom: pick a constant by dtype."""

    def lowest(x, module):
        return module.where(
            module.issubdtype(x.dtype, module.floating), module.finfo(x.dtype).min, 0
        )

    x = np.array([1.0, 2.0], np.float32)
    assert float(lowest(x, rnp)) == float(lowest(jnp.asarray(x), jnp))
    spec = relax.Tensor(("n",), "float32")
    assert relax.eval_shape(lambda v: lowest(v, rnp) + v, spec).dtype == "float32"
