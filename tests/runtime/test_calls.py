"""Compiled functions that call compiled functions: values against jax, errors, memory."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import rt_build as rb
from test_segments import KERNELS, positives_module

import relaxjax as relax
import relaxjax.nn as rnn
import relaxjax.numpy as rnp
from relaxjax import arith
from relaxjax.errors import ShapeError
from relaxjax.ir import BlockBuilder, Call, GlobalVar, IRModule, TensorInfo, Tuple, Var, verify
from relaxjax.runtime import build_executable

T = relax.Tensor


def _line(marker: str) -> int:
    """The line of this file holding ``marker`` (a comment at a call site)."""
    with open(__file__) as source:
        return next(
            i for i, text in enumerate(source, 1) if marker in text and "_line(" not in text
        )


def _rand(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


def _executable(jitted):
    (exe,) = jitted._executables.values()
    return exe


def _count_launches(exe, monkeypatch) -> list:
    """Record every kernel launch and library call of ``exe`` and of the functions it calls."""
    launched: list = []
    namespaces = [exe.run.__globals__] + [c.run.__globals__ for c in exe.callees]
    for namespace in namespaces:
        for key, value in list(namespace.items()):
            if key.startswith(("_k_", "_extern_")) and callable(value):

                def counted(*args, _f=value, _k=key):
                    launched.append(_k)
                    return _f(*args)

                monkeypatch.setitem(namespace, key, counted)
    return launched


# --------------------------------------------------------------------------- one callee


@relax.jit
def layer(x: T(("n", 4), "float32"), w: T((4, 4), "float32")):
    return rnp.tanh(x @ w) + x


@relax.jit
def three_sites(
    x: T(("a", 4), "float32"), y: T((2, 4), "float32"), z: T(("b", 4), "float32"), w: T((4, 4))
):
    padded = rnp.concatenate([z, rnp.ones((1, 4), "float32")])
    return layer(x, w), layer(y, w), layer(padded, w) * 2


def _jax_layer(x, w):
    return jnp.tanh(x @ w) + x


@jax.jit
def _jax_three_sites(x, y, z, w):
    padded = jnp.concatenate([z, jnp.ones((1, 4), jnp.float32)])
    return _jax_layer(x, w), _jax_layer(y, w), _jax_layer(padded, w) * 2


@pytest.mark.parametrize("rows", [(0, 1), (1, 0), (5, 3)])
def test_one_callee_three_call_sites_match_jax(rows):
    rng = np.random.default_rng(sum(rows))
    args = (_rand(rng, rows[0], 4), _rand(rng, 2, 4), _rand(rng, rows[1], 4), _rand(rng, 4, 4))
    got = three_sites(*args)
    expected = _jax_three_sites(*args)
    for g, e in zip(got, expected):
        assert g.shape == e.shape and g.dtype == np.float32
        np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6)
    assert three_sites.cache_size() == 1 and layer.cache_size() == 0
    exe = _executable(three_sites)
    assert sorted(exe.module.graph_functions()) == ["layer", "three_sites"]
    assert exe.source.count("def run_layer(") == 1


def test_a_call_breaking_the_relation_raises_at_run_time_naming_the_call_site(monkeypatch):
    @relax.jit
    def pair(x: T(("n", 4), "float32"), y: T(("n", 4), "float32")):
        return x * y

    @relax.jit
    def caller(x: T(("a", 4), "float32"), y: T(("b", 4), "float32")):
        first = rnp.exp(x)  # a kernel that comes before the call
        return pair(first, y)  # the unproven call site

    x = np.ones((3, 4), np.float32)
    np.testing.assert_allclose(caller(x, x * 2), np.exp(x) * 2, rtol=1e-6)
    launched = _count_launches(_executable(caller), monkeypatch)
    with pytest.raises(ShapeError) as err:
        caller(x, np.ones((5, 4), np.float32))
    assert err.value.message == (
        "pair: argument 'y' axis 0 is n in its signature: requires b == a, got b = 5, a = 3 "
        "(a bound by argument 'x' axis 0; b bound by argument 'y' axis 0)"
    )
    assert err.value.location.lineno == _line("# the unproven call site")
    assert launched == []  # raised before any kernel ran, the exp included


def test_callee_preconditions_are_checked_before_any_kernel_runs(monkeypatch):
    @relax.jit
    def add(x: T(("n",), "float32"), y: T(("m",), "float32")):
        return (x + y).sum()  # the sum's shape is known, the broadcast is a precondition

    @relax.jit
    def caller(x: T(("a",), "float32"), y: T(("b",), "float32")):
        return add(x * 2, y)

    assert float(caller(np.ones(3, np.float32), np.ones(1, np.float32))) == 9.0
    launched = _count_launches(_executable(caller), monkeypatch)
    with pytest.raises(
        ShapeError, match=r"add: add: .*requires broadcast\(a, b\), got a = 3, b = 2"
    ):
        caller(np.ones(3, np.float32), np.ones(2, np.float32))
    assert launched == []


def test_bad_top_level_inputs_raise_before_any_kernel(monkeypatch):
    rng = np.random.default_rng(1)
    args = [_rand(rng, 3, 4), _rand(rng, 2, 4), _rand(rng, 1, 4), _rand(rng, 4, 4)]
    three_sites(*args)
    launched = _count_launches(_executable(three_sites), monkeypatch)
    with pytest.raises(ShapeError, match=r"argument 'y' axis 0: expected 2, got 3"):
        three_sites(args[0], args[0], args[2], args[3])
    with pytest.raises(TypeError, match=r"argument 'w': expected dtype float32, got float64"):
        three_sites(args[0], args[1], args[2], args[3].astype(np.float64))
    assert launched == []


# --------------------------------------------------------------------------- structure


@relax.jit
def block(h, p):
    return rnn.gelu(h @ p["w"] + p["b"]) + h


def _jax_block(h, p):
    return jax.nn.gelu(h @ p["w"] + p["b"]) + h


@relax.jit
def stack(x: T(("n", 16), "float32"), ps):
    for p in ps:
        x = block(x, p)
    return x


def test_twelve_layer_stack_holds_one_layer_function_and_matches_jax():
    rng = np.random.default_rng(12)
    ps = [{"w": _rand(rng, 16, 16) * 0.1, "b": _rand(rng, 16) * 0.1} for _ in range(12)]

    @jax.jit
    def expected(x, ps):
        for p in ps:
            x = _jax_block(x, p)
        return x

    for rows in (0, 1, 7):
        x = _rand(rng, rows, 16)
        np.testing.assert_allclose(stack(x, ps), expected(x, ps), rtol=1e-4, atol=1e-5)
    assert stack.cache_size() == 1
    exe = _executable(stack)
    assert sorted(exe.module.graph_functions()) == ["block", "stack"]
    assert exe.source.count("def run_block(") == 1
    caller = exe.source.split("def run_stack(")[1]
    assert caller.count("_extern_") == 12  # each layer: one call of run_block, no copy
    assert [c.function.name for c in exe.callees] == ["block"]


@relax.jit(inline=True)
def block_inline(h, p):
    return rnn.gelu(h @ p["w"] + p["b"]) + h


def test_inline_and_calls_give_the_same_values_and_different_modules():
    @relax.jit
    def called(x: T(("n", 16), "float32"), ps):
        for p in ps:
            x = block(x, p)
        return x

    @relax.jit
    def inlined(x: T(("n", 16), "float32"), ps):
        for p in ps:
            x = block_inline(x, p)
        return x

    rng = np.random.default_rng(3)
    ps = [{"w": _rand(rng, 16, 16) * 0.2, "b": _rand(rng, 16)} for _ in range(3)]
    x = _rand(rng, 5, 16)
    np.testing.assert_allclose(called(x, ps), inlined(x, ps), rtol=1e-5, atol=1e-6)
    assert len(_executable(called).module.graph_functions()) == 2
    assert len(_executable(inlined).module.graph_functions()) == 1


def test_nested_calls_pytrees_keywords_and_scalars():
    @relax.jit
    def affine(x, p, *, shift=0.0):
        return x * p["scale"] + shift

    @relax.jit(static_argnames=("axis",))
    def summary(x, p, axis):
        y = affine(x, p, shift=1.5)
        return {"sum": y.sum(axis=axis), "both": (y, affine(y, p))}

    @relax.jit
    def top(x: T(("a", 3), "float32"), scale: T((3,), "float32")):
        out = summary(x, {"scale": scale}, 0)
        return out["both"][1], out["sum"], summary(x * 2, {"scale": scale}, axis=1)["sum"]

    rng = np.random.default_rng(7)
    x, scale = _rand(rng, 4, 3), _rand(rng, 3)
    first, total, rows = top(x, scale)
    y = x * scale + 1.5
    np.testing.assert_allclose(first, y * scale, rtol=1e-6)
    np.testing.assert_allclose(total, y.sum(axis=0), rtol=1e-5)
    np.testing.assert_allclose(rows, (x * 2 * scale + 1.5).sum(axis=1), rtol=1e-5)
    assert sorted(_executable(top).module.graph_functions()) == [
        "affine",
        "affine_1",
        "summary",
        "summary_1",
        "top",
    ]


def test_results_a_callee_does_not_compute_are_copied_into_place():
    @relax.jit
    def passthrough(x, y):
        z = x + 1
        return x, z, z, y.shape[0], 2.5

    @relax.jit
    def caller(x: T(("a",), "float32"), y: T(("b", 2), "float32")):
        first, second, third, count, constant = passthrough(x * 3, y)
        return first, second, third, count, constant, passthrough(x, y)[0]

    x, y = np.arange(3, dtype=np.float32), np.ones((5, 2), np.float32)
    first, second, third, count, constant, again = caller(x, y)
    np.testing.assert_array_equal(first, x * 3)
    np.testing.assert_array_equal(second, x * 3 + 1)
    np.testing.assert_array_equal(third, x * 3 + 1)
    assert not np.shares_memory(second, third)
    assert count.shape == () and int(count) == 5
    assert constant.shape == () and float(constant) == 2.5
    np.testing.assert_array_equal(again, x)
    assert not np.shares_memory(again, x)


def test_symbolic_dims_flow_into_the_callee():
    @relax.jit
    def tile_rows(x, count):
        return rnp.zeros((x.shape[0], 2), "float32") + count

    @relax.jit
    def caller(x: T(("a",), "float32")):
        return tile_rows(x, x.shape[0] + 1)

    np.testing.assert_array_equal(caller(np.ones(4, np.float32)), np.full((4, 2), 5.0))
    np.testing.assert_array_equal(caller(np.ones(0, np.float32)), np.zeros((0, 2)))
    assert caller.cache_size() == 1


def test_a_result_whose_shape_is_known_only_after_the_call():
    @relax.jit
    def add(x: T(("n",), "float32"), y: T(("m",), "float32")):
        return x + y  # rank 1; its length is n or m, known once the call ran

    @relax.jit
    def caller(x: T(("a",), "float32"), y: T(("b",), "float32")):
        s = add(x, y)  # the callee allocates it; a new segment starts after the call
        t = relax.match_cast(s * 2, T(("k",), "float32"))
        return t + rnp.arange(t.shape[0]).astype("float32"), s.sum(), add(s, x)

    call = caller.trace()["caller"].body.blocks[0].bindings[0]
    assert isinstance(call.value.op, relax.ir.GlobalVar) and call.value.op.name == "add"
    assert call.var.info == T(ndim=1, dtype="float32")
    for x, y in [
        (np.arange(3, dtype=np.float32), np.ones(1, np.float32)),
        (np.ones(1, np.float32), np.arange(4, dtype=np.float32)),
    ]:
        s = x + y
        t, total, again = caller(x, y)
        np.testing.assert_array_equal(t, s * 2 + np.arange(len(s)))
        assert float(total) == s.sum()
        np.testing.assert_array_equal(again, s + x)
    assert caller.cache_size() == 1
    with pytest.raises(
        ShapeError, match=r"add: add: .*requires broadcast\(a, b\), got a = 3, b = 2"
    ):
        caller(np.ones(3, np.float32), np.ones(2, np.float32))


def test_callee_temporaries_are_released_between_calls():
    import gc

    from relaxjax.runtime import pool

    @relax.jit
    def heavy(x):
        return (x * 2 + 1) * 3  # temporaries in the callee's arena

    @relax.jit
    def caller(x: T(("n",), "float32")):
        return heavy(x) - 1

    x = np.ones(1 << 19, np.float32)  # 2 MiB: arenas come from the pool
    np.testing.assert_array_equal(caller(x), np.full(x.shape, 8.0))
    held = pool.default_pool.held_bytes
    for _ in range(5):
        caller(x)
    gc.collect()
    assert pool.default_pool.held_bytes == held  # the same blocks are reused: nothing leaks


@pytest.mark.parametrize("target", ["llvm", "reference"])
def test_a_data_dependent_callee_runs_in_its_callers_segments(target):
    """``positives`` (built by hand, tests/runtime/test_segments.py) returns the positive
    elements of its argument, doubled twice: a length only its kernels know. Each call
    allocates its result; the caller names its length with a match_cast and goes on."""
    callee = positives_module(arith.sym("k"), returned="z")
    assert callee["main"].ret_info == TensorInfo(ndim=1, dtype="float32")
    n, j, i = arith.syms("n j i")
    x, y = Var("x", TensorInfo((n,), "float32")), Var("y", TensorInfo((n,), "float32"))
    bb = BlockBuilder(IRModule({**KERNELS, "positives": callee["main"]}))
    with bb.function("main", [x, y]):
        with bb.dataflow():
            first = bb.emit(Call(GlobalVar("positives"), [x]))
            named = bb.emit_match_cast(first, TensorInfo((j,), "float32"))
            doubled = rb.call(bb, "double", [named], TensorInfo((j,), "float32"))
            second = bb.emit(Call(GlobalVar("positives"), [y]))
            again = bb.emit_match_cast(second, TensorInfo((i,), "float32"))
            out = bb.emit_output(Tuple([doubled, again]))
        bb.emit_func_output(out)
    mod = bb.finalize()
    verify(mod)
    exe = build_executable(mod, target=target)
    for values in ([1.0, -2.0, 3.0], [-1.0, -5.0], []):
        a = np.array(values, np.float32)
        got, other = exe(a, -a)
        np.testing.assert_array_equal(got, 8 * a[a > 0])
        np.testing.assert_array_equal(other, 4 * -a[-a > 0])
    assert [c.function.name for c in exe.callees] == ["positives"]
