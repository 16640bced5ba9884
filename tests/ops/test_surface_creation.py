"""relaxjax.numpy's creation functions against jax.numpy (issue 10): ``empty empty_like
eye identity tri linspace logspace geomspace meshgrid indices fromfunction frombuffer
fromstring fromiter fromfile``.

Sizes may be symbolic where jax takes static ints: one jitted program per table runs at
several sizes (0 and 1 included) against jax called with the concrete size.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import relaxjax as relax
import relaxjax.numpy as rnp
from relaxjax.errors import ShapeError

#: name -> fn(module, x, n) with x a (n,) float32 array and n its length (a symbolic dim
#: for relaxjax, the int for jax).
CASES = {
    "eye(n)": lambda m, x, n: m.eye(n),
    "eye(n, 3, k=1, int32)": lambda m, x, n: m.eye(n, 3, k=1, dtype=m.int32),
    "eye(3, n, k=-1)": lambda m, x, n: m.eye(3, n, -1),
    "eye(n, k=traced)": lambda m, x, n: m.eye(n, k=m.asarray(2)),
    "identity(n, bool)": lambda m, x, n: m.identity(n, dtype=bool),
    "tri(n)": lambda m, x, n: m.tri(n),
    "tri(n, 4, k=1, bool)": lambda m, x, n: m.tri(n, 4, k=1, dtype=m.bool_),
    "tri(2, n, k=-1, int8)": lambda m, x, n: m.tri(2, n, -1, m.int8),
    "linspace(0, 1, n)": lambda m, x, n: m.linspace(0, 1, n),
    "linspace(x, 2, 5, axis=1)": lambda m, x, n: m.linspace(x, 2.0, 5, axis=-1),
    "linspace(-1, x, n, endpoint=False)": lambda m, x, n: m.linspace(
        -1.0, x[:, None] * np.ones(2, np.float32), n, endpoint=False, axis=1
    ),
    "linspace(0, 10, n, retstep)": lambda m, x, n: m.linspace(0, 10, n, retstep=True),
    "linspace(0, 7, n, endpoint=False, retstep)": lambda m, x, n: m.linspace(
        0.0, 7.0, n, endpoint=False, retstep=True
    ),
    "linspace(0, 10, n, int32)": lambda m, x, n: m.linspace(0, 10, n, dtype=m.int32),
    "linspace(x, x + 1, 1)": lambda m, x, n: m.linspace(x, x + 1, 1),
    "linspace(x, x, 0)": lambda m, x, n: m.linspace(x, x, 0, retstep=True),
    "logspace(0, 2, n)": lambda m, x, n: m.logspace(0, 2, n),
    "logspace(x, 1, 3, base=2)": lambda m, x, n: m.logspace(x, 1.0, 3, base=2.0, axis=1),
    "geomspace(1, 1000, n)": lambda m, x, n: m.geomspace(1, 1000, n),
    "geomspace(-x - 1, -8, 4, axis=1)": lambda m, x, n: m.geomspace(-x - 1, -8.0, 4, axis=1),
    "meshgrid(x, arange(3))": lambda m, x, n: m.meshgrid(x, m.arange(3)),
    "meshgrid(ij, sparse)": lambda m, x, n: m.meshgrid(
        x, m.arange(3.0), x, indexing="ij", sparse=True
    ),
    "meshgrid(ij)": lambda m, x, n: m.meshgrid(x, m.arange(2), indexing="ij"),
    "indices((n, 3))": lambda m, x, n: m.indices((n, 3)),
    "indices((2, n), int32, sparse)": lambda m, x, n: m.indices((2, n), m.int32, sparse=True),
    "empty((n, 2))": lambda m, x, n: m.empty((n, 2)),
    "empty_like(x, int8)": lambda m, x, n: m.empty_like(x, dtype=m.int8),
    "fromfunction": lambda m, x, n: m.fromfunction(lambda i, j: i * 10 + j, (n, 3), dtype=int),
}


def _same(ours, theirs, what: str) -> None:
    ours, theirs = jax.tree_util.tree_leaves(ours), jax.tree_util.tree_leaves(theirs)
    assert len(ours) == len(theirs), what
    for a, b in zip(ours, theirs):
        a, b = np.asarray(a), np.asarray(b)
        assert a.dtype == b.dtype, f"{what}: dtype {a.dtype} vs jax {b.dtype}"
        assert a.shape == b.shape, f"{what}: shape {a.shape} vs jax {b.shape}"
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-12, err_msg=what)


def test_values_match_jax_for_every_size():
    @relax.jit
    def program(x: relax.Tensor(("n",), "float32")):
        n = x.shape[0]
        return {name: fn(rnp, x, n) for name, fn in CASES.items()}

    rng = np.random.default_rng(0)
    for n in (0, 1, 2, 5):
        x = rng.uniform(0.5, 3.0, n).astype(np.float32)
        got, theirs = program(x), _jax(x)
        for name in CASES:
            _same(got[name], theirs[name], f"{name} with n={n}")
    assert program.cache_size() == 1


def _jax(x: np.ndarray) -> dict:
    """jax's results, all from one jitted program (the size is static for jax)."""
    n = len(x)
    return jax.jit(lambda a: {name: fn(jnp, a, n) for name, fn in CASES.items()})(x)


def test_eager_evaluation_matches_jax():
    x = np.array([1.5, 2.0, 2.5], np.float32)
    theirs = _jax(x)
    for name, fn in CASES.items():
        _same(fn(rnp, x, 3), theirs[name], f"eager {name}")


def test_shapes_are_symbolic():
    def f(x, y):
        n, m = x.shape[0], y.shape[0]
        return (
            rnp.eye(n, m),
            rnp.tri(n + 1),
            rnp.linspace(0, 1, 2 * n),
            rnp.linspace(x, 1.0, m, axis=1),
            rnp.indices((n, m)),
            rnp.meshgrid(x, y)[0],
        )

    specs = relax.Tensor(("n",), "float32"), relax.Tensor(("m",), "float32")
    shapes = [str(o.shape) for o in relax.eval_shape(f, *specs)]
    assert shapes == [
        "(n, m)",
        "(n + 1, n + 1)",
        "(n * 2,)",
        "(n, m)",
        "(2, n, m)",
        "(m, n)",
    ]


DTYPES = ["bool", "int8", "uint8", "int32", "int64", "float16", "bfloat16", "float32"]


@pytest.mark.parametrize("dtype", DTYPES)
def test_dtypes_match_jax(dtype):
    """Default dtypes from the bounds' dtypes (linspace, logspace, geomspace) and from
    the dtype argument, against jax's eval_shape."""

    def make(m, x):
        return {
            "linspace": m.linspace(x, 3, 4),
            "linspace retstep": m.linspace(0, x, 3, retstep=True),
            "logspace": m.logspace(x, 2, 3),
            "geomspace": m.geomspace(x, 4.0, 3),
            "eye": m.eye(2, dtype=dtype),
            "tri": m.tri(2, dtype=dtype),
            "identity": m.identity(2, dtype=dtype),
            "indices": m.indices((2,), dtype=dtype) if dtype != "bool" else m.indices((2,)),
            "empty": m.empty((2,), dtype=dtype),
            "empty_like": m.empty_like(x),
            "linspace dtype": m.linspace(0, 5, 3, dtype=dtype),
        }

    ours = relax.eval_shape(lambda x: make(rnp, x), relax.Tensor((2,), dtype))
    theirs = jax.eval_shape(lambda x: make(jnp, x), jax.ShapeDtypeStruct((2,), dtype))
    for name in theirs:
        mine = (
            jax.tree_util.tree_leaves(ours[name]) if isinstance(ours[name], tuple) else [ours[name]]
        )
        for a, b in zip(mine, jax.tree_util.tree_leaves(theirs[name])):
            assert a.dtype == str(b.dtype), f"{name} of {dtype}: {a.dtype} vs jax {b.dtype}"
            assert a.shape == b.shape, f"{name} of {dtype}"
            assert a.weak == (bool(b.weak_type) and a.dtype != "bool"), f"{name} of {dtype}"


def test_from_data():
    data = np.arange(4, dtype=np.float32).tobytes()
    np.testing.assert_array_equal(
        rnp.frombuffer(data, dtype=rnp.float32), jnp.frombuffer(data, dtype=jnp.float32)
    )
    np.testing.assert_array_equal(
        rnp.frombuffer(data, rnp.int16, count=3, offset=2),
        jnp.frombuffer(data, jnp.int16, count=3, offset=2),
    )
    ours, theirs = rnp.fromstring("1 2 3", sep=" "), jnp.fromstring("1 2 3", sep=" ")
    assert ours.dtype == theirs.dtype and list(ours) == list(theirs)
    for fn in (rnp.fromiter, rnp.fromfile):
        with pytest.raises(NotImplementedError, match="is not implemented because"):
            fn(iter([1, 2]))


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: rnp.eye(-1), ValueError, "negative dimensions are not allowed"),
        (lambda: rnp.eye(2.5), TypeError, "N must be an int or a symbolic dim"),
        (lambda: rnp.eye(2, k=1.5), TypeError, "k must be a Python int"),
        (lambda: rnp.linspace(0, 1, -1), ValueError, "negative dimensions"),
        (lambda: rnp.linspace(0, 1, 3.0), TypeError, "num must be an int"),
        (lambda: rnp.meshgrid(np.ones((2, 2))), ValueError, "must be 1D"),
        (lambda: rnp.meshgrid(np.ones(2), indexing="xz"), ValueError, "'xy' and 'ij'"),
        (lambda: rnp.meshgrid(np.ones(2), copy=False), ValueError, "copy=True"),
        (lambda: rnp.empty(2, 3), TypeError, "with a tuple of dimensions"),
        (lambda: rnp.indices((2, -1)), ValueError, "negative dimensions"),
        (lambda: rnp.geomspace(1, 8, 3, axis=2), ValueError, "axis 2 is out of bounds"),
        (lambda: rnp.linspace(np.ones(2), np.ones(3), 4), ShapeError, "broadcast"),
    ],
)
def test_bad_inputs_raise_clear_errors(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_a_negative_symbolic_size_is_refused_at_run_time():
    @relax.jit
    def program(x: relax.Tensor(("n",), "float32")):
        return rnp.linspace(0, 1, x.shape[0] - 2)

    assert program(np.zeros(5, np.float32)).shape == (3,)
    with pytest.raises(ShapeError, match="linspace: the number of samples must be >= 0"):
        program(np.zeros(1, np.float32))


def test_array_and_asarray_take_jax_s_keywords():
    data = [[1, 2], [3, 4]]
    for kwargs in ({}, {"dtype": rnp.float16}, {"copy": False}, {"ndmin": 3}, {"order": "K"}):
        theirs = jnp.array(
            data, **{k: (jnp.float16 if k == "dtype" else v) for k, v in kwargs.items()}
        )
        _same(rnp.array(data, **kwargs), theirs, f"array {kwargs}")
    for kwargs in ({}, {"dtype": "int8"}, {"copy": True}, {"order": None}):
        _same(rnp.asarray(data, **kwargs), jnp.asarray(data, **kwargs), f"asarray {kwargs}")
    spec = relax.Tensor(("n",), "float32")
    assert str(relax.eval_shape(lambda x: rnp.array(x, ndmin=2), spec).shape) == "(1, n)"
    with pytest.raises(NotImplementedError, match="order='K'"):
        rnp.array(data, order="F")
