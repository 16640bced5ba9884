"""``squeeze`` without ``axis=`` on symbolic dims (issue 9, part 6): decided while
tracing, soundly. A dim proven 1 is removed, one proven not 1 is kept (a constant, a
symbol whose bounds exclude 1, ``2 * n``), and a dim that may or may not be 1 raises one
``InconclusiveShapeError`` at the user's line, naming the axis and its size and saying to
pass ``axis=``, for ``rnp.squeeze(x)`` and ``x.squeeze()`` alike."""

from __future__ import annotations

import itertools

import jax.numpy as jnp
import numpy as np
import pytest

import relaxjax as relax
import relaxjax.nn as rnn
import relaxjax.numpy as rnp
from relaxjax import arith
from relaxjax.errors import InconclusiveShapeError, ShapeError
from relaxjax.ir import TensorInfo
from relaxjax.ops.manipulate import size_one_axes

N = arith.sym("n")
K = arith.sym("k", lower=2)
Z = arith.sym("z", lower=0, upper=0)
B = arith.sym("b", lower=1, upper=1)


@pytest.mark.parametrize(
    ("shape", "axes"),
    [
        ((K, 1, 4), (1,)),
        ((N * 2, 1, 4), (1,)),  # 2n is never 1
        ((N + 2, 1, 1), (1, 2)),
        ((Z, 1), (1,)),  # z is 0
        ((B, 3), (0,)),  # b is 1
        ((N * N + 2, 1), (1,)),
        ((2, 3), ()),
        ((), ()),
    ],
)
def test_size_one_axes_are_decided(shape, axes):
    x = TensorInfo(shape, "float32")
    assert size_one_axes("squeeze", x) == axes
    names = sorted({s.name for d in shape for s in arith.free_symbols(d)})
    ranges = {"n": range(4), "k": range(2, 5), "z": [0], "b": [1]}
    for values in itertools.product(*(ranges[name] for name in names)):
        env = dict(zip(names, values))
        concrete = tuple(arith.subs(d, env) for d in shape)
        want = jnp.squeeze(jnp.zeros(concrete)).shape
        got = tuple(arith.subs(d, env) for a, d in enumerate(shape) if a not in axes)
        assert got == want, (shape, env)


@pytest.mark.parametrize(
    ("shape", "named"),
    [
        ((N, 1, 4), "axis 0 has size n"),
        ((4, arith.min_(N, 3)), "axis 1 has size min(3, n)"),
        ((N, 1, arith.sym("m")), "axis 0 has size n, axis 2 has size m"),
    ],
)
def test_undecided_sizes_are_named(shape, named):
    with pytest.raises(InconclusiveShapeError, match=r"pass axis= to name the axes to remove"):
        size_one_axes("squeeze", TensorInfo(shape, "float32"))
    with pytest.raises(InconclusiveShapeError) as caught:
        size_one_axes("squeeze", TensorInfo(shape, "float32"))
    assert named in caught.value.message
    assert "which may or may not be 1" in caught.value.message


def test_unknown_sizes_are_inconclusive():
    with pytest.raises(
        InconclusiveShapeError, match=r"\(ndim=2\) have size 1 .*\(the sizes are unknown\)"
    ):
        size_one_axes("squeeze", TensorInfo(dtype="float32", ndim=2))


@pytest.mark.parametrize("squeeze", [rnp.squeeze, lambda x: x.squeeze()], ids=["rnp", "method"])
def test_tracing_decides_squeeze(squeeze):
    k = relax.sym("k", lower=2)
    spec = relax.Tensor((k, 1, 4, 1), "float32")
    assert relax.eval_shape(squeeze, spec) == relax.Tensor((k, 4), "float32")
    text = str(relax.jit(squeeze).trace(spec))
    assert "axis=(1, 3)" in text


@pytest.mark.parametrize("squeeze", [rnp.squeeze, lambda x: x.squeeze()], ids=["rnp", "method"])
def test_tracing_refuses_an_undecided_squeeze_at_the_users_line(squeeze):
    spec = relax.Tensor(("n", 1, 4), "float32")
    with pytest.raises(InconclusiveShapeError) as caught:
        relax.eval_shape(lambda x: squeeze(x) * 2, spec)
    message = caught.value.message
    assert message.startswith("squeeze: which axes of (n, 1, 4) have size 1 is not known")
    assert "axis 0 has size n" in message and "pass axis=" in message
    assert caught.value.location.filename == __file__


def test_compiled_squeeze_then_layer_norm_and_index():
    """What failed later before (layer_norm, indexing on an unknown rank) now runs."""

    @relax.jit
    def f(
        x: relax.Tensor((relax.sym("k", lower=2), 1, 4), "float32"),
        g: relax.Tensor((4,), "float32"),
    ):
        y = rnn.layer_norm(x.squeeze(), g, g)
        return y[0], rnp.squeeze(y[:, None, :])

    g = np.ones(4, np.float32)
    for rows in (2, 3, 5):
        x = np.arange(rows * 4, dtype=np.float32).reshape(rows, 1, 4)
        first, all_rows = f(x, g)
        mean = x[:, 0].mean(-1, keepdims=True)
        want = (x[:, 0] - mean) / np.sqrt(x[:, 0].var(-1, keepdims=True) + 1e-5) + 1
        np.testing.assert_allclose(np.asarray(all_rows), want, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(np.asarray(first), want[0], rtol=1e-5, atol=1e-5)
    assert f.cache_size() == 1
    with pytest.raises(ShapeError):
        f(np.zeros((1, 1, 4), np.float32), g)  # k >= 2 is checked at the call


def test_an_explicit_axis_still_compiles_for_every_size():
    @relax.jit
    def f(x: relax.Tensor(("n", 1, 4), "float32")):
        return x.squeeze(1)

    for rows in (0, 1, 3):
        x = np.zeros((rows, 1, 4), np.float32)
        assert np.asarray(f(x)).shape == (rows, 4)
    assert f.cache_size() == 1

    @relax.jit
    def g(x: relax.Tensor(("n", 1, 4), "float32")):
        return x.squeeze(0)

    assert np.asarray(g(np.zeros((1, 1, 4), np.float32))).shape == (1, 4)
    with pytest.raises(ShapeError, match=r"cannot squeeze axis 0 of shape \(n, 1, 4\)"):
        g(np.zeros((3, 1, 4), np.float32))


def test_eager_squeeze_of_arrays_is_numpys():
    assert rnp.squeeze(np.zeros((1, 3, 1))).shape == (3,)
