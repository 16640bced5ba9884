"""The compute builder: kernels built from index expressions, run against numpy for
several values of their symbols (one kernel serves every value)."""

import sys
from pathlib import Path

import numpy as np
import pytest

from relaxjax import arith, tir
from relaxjax.tir import te
from relaxjax.tir.interpreter import run

sys.path.insert(0, str(Path(__file__).parent))
from tir_kernels import matmul, numpy_softmax, softmax  # noqa: E402

n, m = arith.syms("n m")
RNG = np.random.default_rng(0)


def rand(*shape, dtype="float32"):
    return RNG.standard_normal(shape).astype(dtype)


@pytest.mark.parametrize("size", [0, 1, 5])
def test_elementwise_with_broadcast(size):
    a = te.placeholder((n, m), "float32", "a")
    b = te.placeholder((m,), "float32", "b")
    c = te.compute((n, m), lambda i, j: tir.tanh(a[i, j]) * b[j] + 1.0, name="c")
    f = te.create_prim_func([a, b, c], name="fma_tanh")
    x, y = rand(size, 3), rand(3)
    np.testing.assert_allclose(run(f, x, y), np.tanh(x) * y + 1, rtol=1e-6)


@pytest.mark.parametrize("shape", [(1, 1, 1), (3, 5, 2), (8, 7, 16)])
def test_matmul_with_reduction(shape):
    f = matmul()
    rows, inner, cols = shape
    a, b = rand(rows, inner), rand(inner, cols)
    np.testing.assert_allclose(run(f, a, b), a @ b, rtol=1e-5, atol=1e-6)
    c = np.empty((rows, cols), "float32")
    assert run(f, a, b, c) is c  # destination passing: written in place
    np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-6)


def test_matmul_in_float64_and_int32():
    a, b = rand(4, 3, dtype="float64"), rand(3, 2, dtype="float64")
    np.testing.assert_allclose(run(matmul("float64"), a, b), a @ b, rtol=1e-12)
    ai, bi = (
        RNG.integers(-9, 9, (4, 3)).astype("int32"),
        RNG.integers(-9, 9, (3, 2)).astype("int32"),
    )
    np.testing.assert_array_equal(run(matmul("int32"), ai, bi), ai @ bi)


@pytest.mark.parametrize("rows, cols", [(1, 1), (4, 9), (2, 33)])
def test_softmax_with_intermediate_stages(rows, cols):
    f = softmax()
    root = f.body.block
    assert [b.name for b in root.alloc_buffers] == ["mx", "e", "s"]
    x = rand(rows, cols) * 5
    np.testing.assert_allclose(run(f, x), numpy_softmax(x), rtol=1e-5)


def test_reductions_max_min_prod_and_where():
    x = te.placeholder((n, m), "float32", "x")
    outs = []
    for reducer in (te.max, te.min, te.prod):
        k = te.reduce_axis(m, "k")
        outs.append(
            te.compute((n,), lambda i, k=k, r=reducer: r(x[i, k], axis=k), name=reducer.name)
        )
    k = te.reduce_axis(m, "k")
    positive = te.compute((n,), lambda i: te.sum(x[i, k], axis=k, where=x[i, k] > 0.0), name="pos")
    f = te.create_prim_func([x, *outs, positive], name="reduce4")
    assert f.num_outputs == 4
    data = rand(3, 6)
    got = run(f, data)
    np.testing.assert_allclose(got[0], data.max(1))
    np.testing.assert_allclose(got[1], data.min(1))
    np.testing.assert_allclose(got[2], data.prod(1), rtol=1e-5)
    np.testing.assert_allclose(got[3], np.where(data > 0, data, 0).sum(1), rtol=1e-6)


def test_reduction_over_two_axes():
    x = te.placeholder((n, m, 3), "float64", "x")
    k1, k2 = te.reduce_axis(m, "k1"), te.reduce_axis(3, "k2")
    s = te.compute((n,), lambda i: te.sum(x[i, k1, k2] * 2.0, axis=[k1, k2]), name="s")
    f = te.create_prim_func([x, s])
    block = tir.find_block(f.body, "s").block
    assert [iv.kind for iv in block.iter_vars] == ["spatial", "reduce", "reduce"]
    data = rand(2, 4, 3, dtype="float64")
    np.testing.assert_allclose(run(f, data), 2 * data.sum((1, 2)))


def test_argmax_and_argmin_follow_numpy_with_nans_and_ties():
    x = te.placeholder((n, m), "float32", "x")
    k = te.reduce_axis(m, "k")
    values, index = te.compute((n,), lambda i: te.argmax((x[i, k], k), axis=k), name="am")
    k2 = te.reduce_axis(m, "k")
    _, index_min = te.compute((n,), lambda i: te.argmin((x[i, k2], k2), axis=k2), name="an")
    f = te.create_prim_func([x, index, index_min], name="args")
    assert [b.name for b in f.body.block.alloc_buffers] == ["am_0", "an_0"]
    data = rand(5, 6)
    data[1] = 1.0  # all tied: the first index
    data[2, 4] = np.nan  # NaN wins
    data[3, [1, 3]] = np.nan  # the first NaN
    data[4] = -np.inf
    got_max, got_min = run(f, data)
    assert got_max.dtype == np.int64
    np.testing.assert_array_equal(got_max, np.argmax(data, axis=1))
    np.testing.assert_array_equal(got_min, np.argmin(data, axis=1))


def test_custom_comm_reducer_over_a_pair():
    # (sum, sum of squares) in one pass
    def combine(acc, new):
        return (acc[0] + new[0], acc[1] + new[1])

    def identity(types):
        return (tir.const(0, types[0]), tir.const(0, types[1]))

    moments = te.comm_reducer(combine, identity, name="moments")
    x = te.placeholder((n, m), "float64", "x")
    k = te.reduce_axis(m, "k")
    s1, s2 = te.compute((n,), lambda i: moments((x[i, k], x[i, k] * x[i, k]), axis=k), name="mom")
    f = te.create_prim_func([x, s1, s2])
    data = rand(3, 5, dtype="float64")
    got1, got2 = run(f, data)
    np.testing.assert_allclose(got1, data.sum(1))
    np.testing.assert_allclose(got2, (data**2).sum(1))


def test_multi_output_compute_and_index_values():
    a = te.placeholder((n,), "int32", "a")
    lo, hi = te.compute((n,), lambda i: (tir.min(a[i], 0), tir.cast(i, "int32") + a[i]), name="p")
    f = te.create_prim_func([a, lo, hi])
    data = np.array([-3, 4, 0, 7], "int32")
    got_lo, got_hi = run(f, data)
    np.testing.assert_array_equal(got_lo, np.minimum(data, 0))
    np.testing.assert_array_equal(got_hi, np.arange(4) + data)


def test_symbol_only_in_an_expression_becomes_a_scalar_param():
    a = te.placeholder((n * 2,), "float32", "a")
    b = te.compute((n * 2,), lambda i: a[i] + tir.cast(i // 2, "float32"), name="b")
    f = te.create_prim_func([a, b])
    assert f.scalar_params == (n,)
    data = rand(6)
    np.testing.assert_allclose(run(f, data, n=3), data + np.arange(6) // 2)


def test_gather_with_data_dependent_indices():
    table = te.placeholder((m, 3), "float32", "table")
    ids = te.placeholder((n,), "int32", "ids")
    out = te.compute((n, 3), lambda i, j: table[ids[i], j], name="out")
    f = te.create_prim_func([table, ids, out], name="take")
    t, idx = rand(5, 3), np.array([4, 0, 0, 2], "int32")
    np.testing.assert_array_equal(run(f, t, idx), t[idx])
    with pytest.raises(IndexError, match=r"kernel take: load table\[ids\[v_i\], v_j\] axis 0"):
        run(f, t, np.array([5], "int32"))


def test_zero_dim_tensors():
    a = te.placeholder((), "float32", "a")
    b = te.compute((), lambda: a[()] * 3.0, name="b")
    f = te.create_prim_func([a, b])
    assert "b[()] = a[()] * float32(3.0)" in str(f)
    np.testing.assert_allclose(run(f, np.array(2.0, "float32")), 6.0)


def test_names_are_made_unique():
    a = te.placeholder((n,), "float32", "n_")
    b = te.compute((n,), lambda n_: a[n_] + 1.0, name="b")
    c = te.compute((n,), lambda i: b[i] * 2.0, name="b")
    f = te.create_prim_func([a, c])
    assert [p.name for p in f.params] == ["n_", "b"]
    assert [x.name for x in f.body.block.alloc_buffers] == ["b_1"]
    assert tir.parse_prim_func(str(f)) == f


@pytest.mark.parametrize(
    "build, message",
    [
        (
            lambda a, c: te.create_prim_func([c, a]),
            "placeholders come first, then computed outputs; placeholder a follows",
        ),
        (lambda a, c: te.create_prim_func([c]), "placeholder a is read but is not among"),
        (lambda a, c: te.create_prim_func([a, a, c]), "a tensor is listed twice"),
        (lambda a, c: te.create_prim_func([a, "c"]), "expected Tensors"),
        (
            lambda a, c: te.compute((n,), lambda i: te.sum(a[i], axis=te.reduce_axis(n)) * 2.0),
            "a reduction must be the whole body",
        ),
        (lambda a, c: te.compute((n,), lambda i: 1.5), "needs a dtype"),
        (
            lambda a, c: te.compute((n,), lambda i: a[te.reduce_axis(n, "r")]),
            "compute compute: uses axis r of another stage or a reduce axis it does not reduce",
        ),
        (
            lambda a, c: te.compute((n,), lambda i: te.sum(a[i], axis=i)),
            "axis must be reduce_axis",
        ),
        (
            lambda a, c: te.compute(
                (n,), lambda i: te.sum(tir.Buffer("Q", (n,))[i], axis=te.reduce_axis(2))
            ),
            "reads buffer Q, which is not a tensor of the compute builder",
        ),
    ],
)
def test_builder_errors(build, message):
    a = te.placeholder((n,), "float32", "a")
    c = te.compute((n,), lambda i: a[i] + 1.0, name="c")
    with pytest.raises((TypeError, ValueError), match=message):
        build(a, c)
