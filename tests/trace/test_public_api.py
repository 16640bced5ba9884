"""The top-level names API.md promises, and the tutorial's examples (docs/tutorial.md)."""

import importlib

import numpy as np
import pytest

import relaxjax as relax
import relaxjax.nn as rnn
import relaxjax.numpy as rnp
from relaxjax import arith, errors, ir


def test_public_names_are_the_implementations():
    assert relax.sym is arith.sym and relax.syms is arith.syms
    assert relax.min is arith.min_ and relax.max is arith.max_
    assert relax.prove_equal is arith.prove_equal
    assert relax.Tensor is ir.TensorInfo and relax.IRModule is ir.IRModule
    assert relax.ShapeError is errors.ShapeError and issubclass(relax.ShapeError, ValueError)
    assert relax.TraceError is errors.TraceError
    assert issubclass(relax.InconclusiveShapeError, relax.TraceError)
    assert callable(relax.build) and callable(relax.jit) and callable(relax.eval_shape)
    assert callable(relax.match_cast)
    from relaxjax import schedule, tir

    assert relax.tir is tir and relax.schedule is schedule


def test_tutorial_symbolic_dims():
    n = relax.sym("n")
    b, s = relax.syms("b s")
    e = (n + 1) * 2
    assert str(e) == "n * 2 + 2"
    assert e.subs({"n": 3}) == 8
    assert str(e.subs({n: s})) == "s * 2 + 2"
    assert relax.prove_equal(e, 2 * n + 2) is True
    assert f"{relax.min(n, n + 1)} {relax.max(b, 1)}" == "n max(1, b)"
    assert f"{(n * 8) // 4} {(4 * n + 2) // 2} {(n * 8) % 4}" == "n * 2 n * 2 + 1 0"


def test_tutorial_specs():
    n = relax.sym("n")
    spec = relax.Tensor((n, 4), "float32")
    assert (
        f"{spec} {spec.shape} {spec.ndim} {spec.dtype}"
        == 'Tensor((n, 4), "float32") (n, 4) 2 float32'
    )
    assert str(relax.Tensor(("n", "n*2"), "float16")) == 'Tensor((n, n * 2), "float16")'
    assert str(relax.Tensor(ndim=2, dtype="float32")) == 'Tensor(ndim=2, dtype="float32")'
    assert relax.Tensor(dtype="int64").shape is None


def test_tutorial_eval_shape():
    def scale_rows(x, w):
        return {"y": x @ w, "norm": rnp.sqrt((x * x).sum(axis=-1))}

    out = relax.eval_shape(
        scale_rows, relax.Tensor(("b", "k"), "float32"), relax.Tensor(("k", 3), "float32")
    )
    assert str(out) == "{'norm': Tensor((b,), \"float32\"), 'y': Tensor((b, 3), \"float32\")}"
    out = relax.eval_shape(scale_rows, np.ones((2, 5), np.float32), np.ones((5, 3), np.float32))
    assert str(out) == "{'norm': Tensor((2,), \"float32\"), 'y': Tensor((2, 3), \"float32\")}"
    cases = {
        lambda x: x[1:, ::2]: (
            "(n, m)",
            "float32",
            'Tensor((max(1, n) - 1, (m + 1) // 2), "float32")',
        ),
        lambda x: x.reshape(-1, 4).T: ("(n, 8)", "float32", 'Tensor((4, n * 2), "float32")'),
        lambda x: x / x.shape[0]: ("(n, 4)", "float16", 'Tensor((n, 4), "float16")'),
    }
    for fn, (shape, dtype, expected) in cases.items():
        dims = tuple(d.strip() for d in shape.strip("()").split(","))
        spec = relax.Tensor(tuple(int(d) if d.isdigit() else d for d in dims), dtype)
        assert str(relax.eval_shape(fn, spec)) == expected


def test_tutorial_ir_of_the_mlp():
    @relax.jit
    def mlp(
        x: relax.Tensor(("n", 512), "float32"),
        w1: relax.Tensor((512, 2048), "float32"),
        w2: relax.Tensor((2048, 512), "float32"),
    ):
        return rnn.gelu(x @ w1) @ w2

    assert relax.eval_shape(mlp) == relax.Tensor(("n", 512), "float32")
    lines = str(mlp.trace()).splitlines()
    assert lines[4].split("  #")[0].strip() == (
        'lv1: Tensor((n, 2048), "float32") = gelu(lv0, approximate=True)'
    )


def test_tutorial_head_needs_a_bound():
    def head(x):
        if x.shape[0] > 8:
            return x[:8]
        return x

    with pytest.raises(relax.InconclusiveShapeError, match="cannot decide n > 8"):
        relax.eval_shape(head, relax.Tensor(("n", 4), "float32"))
    bounded = relax.Tensor((relax.sym("n", lower=16), 4), "float32")
    assert relax.eval_shape(head, bounded) == relax.Tensor((8, 4), "float32")


def test_tutorial_calls_between_jitted_functions():
    @relax.jit
    def layer(h, p):
        return rnn.gelu(h @ p["w"] + p["b"]) + h

    @relax.jit
    def model(x: relax.Tensor(("n", 64), "float32"), params):
        for p in params:
            x = layer(x, p)
        return rnn.softmax(x)

    spec = {"w": relax.Tensor((64, 64), "float32"), "b": relax.Tensor((64,), "float32")}
    mod = model.trace(relax.Tensor(("n", 64), "float32"), [spec] * 12)
    assert len(mod.graph_functions()) == 2
    text = relax.ir.module_to_text(mod, locations=False)
    assert 'lv1: Tensor((n, 64), "float32") = mod.layer(lv0, params_1_b, params_1_w)' in text
    assert 'def layer(h: Tensor((n, 64), "float32"), p_b: Tensor((64,)' in text

    @relax.jit
    def pair(x: relax.Tensor(("n", 4), "float32"), y: relax.Tensor(("n", 4), "float32")):
        return x * y

    @relax.jit
    def caller(a: relax.Tensor(("a", 4), "float32"), b: relax.Tensor(("b", 4), "float32")):
        return pair(a, b) + pair(a, a)

    lines = relax.ir.function_to_text(caller.trace()["caller"], locations=False).splitlines()
    assert lines[3:6] == [
        '        lv0: Tensor((a, 4), "float32") = mod.pair(a, b)',
        "        assert b == a, \"pair: argument 'y' axis 0 is n in its signature\"",
        '        lv1: Tensor((a, 4), "float32") = mod.pair(a, a)',
    ]
    with pytest.raises(relax.ShapeError, match=r"requires b == a, got b = 5, a = 3"):
        caller(np.ones((3, 4), np.float32), np.ones((5, 4), np.float32))
    with pytest.raises(relax.ShapeError, match=r"requires a \+ 1 == a, which is false"):
        relax.eval_shape(
            lambda a: pair(a, rnp.concatenate([a, rnp.ones((1, 4), "float32")])),
            relax.Tensor(("a", 4), "float32"),
        )


def test_tutorial_any_spec():
    n = relax.sym("n")
    assert str(relax.eval_shape(lambda x: x * 2, relax.Tensor((2 * n,), "float32"))) == (
        'Tensor((n * 2,), "float32")'
    )

    @relax.jit
    def pairs(x: relax.Tensor((2 * n,), "float32")):
        return x.reshape(n, 2).sum(1)

    np.testing.assert_array_equal(pairs(np.arange(6, dtype=np.float32)), [1.0, 5.0, 9.0])
    assert pairs(np.arange(10, dtype=np.float32)).shape == (5,) and pairs.cache_size() == 1
    with pytest.raises(relax.ShapeError, match="which is not n \\* 2 for any integer n >= 0"):
        pairs(np.arange(7, dtype=np.float32))

    @relax.jit
    def blocks(x: relax.Tensor(("b", "b * h"), "float32")):
        return x.reshape(x.shape[0], x.shape[0], -1).sum(1)

    assert blocks(np.ones((2, 6), np.float32)).shape == (2, 3)

    @relax.jit
    def flat(x: relax.Tensor(("n * m", 3), "float32")):
        return x * 2

    assert str(flat.eval_shape()) == 'Tensor((m * n, 3), "float32")'
    with pytest.raises(relax.ShapeError, match="no argument determines the symbols m, n"):
        flat(np.ones((6, 3), np.float32))


def test_tutorial_symbolic_scalars():
    @relax.jit
    def window(x: relax.Tensor(("n", 4), "float32"), m: relax.sym("m", lower=1, upper=64)):
        return x[:m] * 2, rnp.arange(m), m * 2

    assert str(relax.eval_shape(window)) == (
        '(Tensor((min(m, n), 4), "float32"), Tensor((m,), "int64"), Tensor((), "int64", weak=True))'
    )
    x = np.ones((10, 4), np.float32)
    for m in (1, 3, np.int32(8)):
        head, iota, twice = window(x, m)
        assert head.shape == (m, 4) and list(iota) == list(range(m)) and twice == 2 * m
    assert window.cache_size() == 1
    with pytest.raises(relax.ShapeError, match="m = 0 is outside its declared range"):
        window(x, 0)
    with pytest.raises(TypeError, match="expected a Python or numpy integer for m, got float"):
        window(x, 2.0)
    assert relax.eval_shape(window, relax.Tensor(("n", 4), "float32"), 5)[1] == relax.Tensor(
        (5,), "int64"
    )


def test_tutorial_deductions_that_use_the_programs_checks():
    a, b, c, d = (relax.sym(s) for s in "abcd")
    out = relax.eval_shape(
        lambda x: x.reshape(x.shape[2], x.shape[0] * x.shape[1] * x.shape[3], -1),
        relax.Tensor((a, b, c, d), "float32"),
    )
    assert str(out) == 'Tensor((c, a * b * d, 1), "float32")'
    k = relax.sym("k", lower=2)
    out = relax.eval_shape(rnp.squeeze, relax.Tensor((1, k, 3), "float32"))
    assert str(out) == 'Tensor((k, 3), "float32")'
    with pytest.raises(relax.InconclusiveShapeError, match="pass axis="):
        relax.eval_shape(rnp.squeeze, relax.Tensor((1, "n", 3), "float32"))
    weak = relax.eval_shape(lambda x: x + 2.0, relax.Tensor((3,), "int32"))
    assert str(weak) == 'Tensor((3,), "float64", weak=True)'

    @relax.jit
    def f(x, y):
        return (x + 2.0) * y

    assert f(np.ones(3, np.int32), np.ones(3, np.float32)).dtype == np.float32


def test_tutorial_other_libraries_pytrees_and_updates():
    """docs/tutorial.md, section "Arrays from other libraries, pytrees, and .at updates"."""
    import dataclasses
    from typing import NamedTuple

    import jax.numpy as jnp

    assert relax.tree_util is importlib.import_module("relaxjax.tree_util")
    x = jnp.arange(6.0, dtype=jnp.float32).reshape(2, 3)
    y = relax.jit(lambda x: x * 2)(x)
    back = jnp.from_dlpack(y)
    assert type(y).__name__ == "ndarray" and back.unsafe_buffer_pointer() == y.ctypes.data

    @dataclasses.dataclass
    class Linear:
        w: object
        b: object
        act: str = dataclasses.field(default="relu", metadata={"static": True})

    relax.tree_util.register_dataclass(Linear)

    class Out(NamedTuple):
        y: object
        aux: object

    @relax.jit
    def layer(p: Linear(relax.Tensor(("k", "m"), "float32"), relax.Tensor(("m",), "float32")), x):
        y = x @ p.w + p.b
        return Out(rnp.maximum(y, 0) if p.act == "relu" else rnp.tanh(y), None)

    out = layer(
        Linear(np.ones((3, 2), np.float32), np.zeros(2, np.float32)), np.ones((4, 3), np.float32)
    )
    assert (type(out).__name__, out.y.shape, out.aux) == ("Out", (4, 2), None)
    shapes = relax.eval_shape(layer, x=relax.Tensor(("b", "k"), "float32"))
    assert str(shapes) == 'Out(y=Tensor((b, m), "float32"), aux=None)'

    @relax.jit
    def write(
        cache: relax.Tensor((2, "t", 4), "float32"),
        kv: relax.Tensor((2, 4), "float32"),
        pos: relax.Tensor((), "int32"),
    ):
        return cache.at[:, pos].set(kv), cache[:, [-1], :]

    new, last = write(np.zeros((2, 5, 4), np.float32), np.ones((2, 4), np.float32), np.int32(3))
    assert new[:, 3].tolist() == [[1.0] * 4, [1.0] * 4] and last.shape == (2, 1, 4)
    counts = relax.jit(lambda i: rnp.zeros(4, "int32").at[i].add(1))(np.array([0, 2, 2, 7]))
    assert counts.tolist() == [1, 0, 2, 0]
