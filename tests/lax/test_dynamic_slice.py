"""lax.dynamic_slice / dynamic_update_slice against jax (clamping, negative starts, symbolic
and traced starts), and the in-place update: a dead intermediate is written in place (the
result shares its memory, the kernel writes only the window), a loop's carry is updated
in place every iteration, and a function's parameter is never modified."""

import jax
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from lax_oracle import Both, assert_same, rand

import relaxjax as relax
import relaxjax.lax as lax
import relaxjax.runtime.executable as executable
from relaxjax.ir import CALL_TIR_INPLACE, Call
from relaxjax.passes import default_pipeline
from relaxjax.runtime import build_executable

NM = relax.Tensor(("n", "m"), "float32")
I64 = relax.Tensor((), "int64")
I32 = relax.Tensor((), "int32")


def _windows(L, m, x: NM, i: I32, j: I32):
    return (
        L.dynamic_slice(x, (i, j), (2, 1)),
        L.dynamic_slice(x, (x.shape[0] - 3, -1), (1, 2)),
        L.dynamic_slice(x, (i, j), (1, 2), allow_negative_indices=False),
        L.dynamic_slice_in_dim(x, j, 2, axis=1),
        L.dynamic_index_in_dim(x, i, keepdims=False),
    )


def _updates(L, m, x: NM, u: relax.Tensor((2, 2), "float32"), i: I32, j: I32):
    return (
        L.dynamic_update_slice(x, u, (i, j)),
        L.dynamic_update_slice(x * 2.0, u, (j, i), allow_negative_indices=(True, False)),
        L.dynamic_update_slice_in_dim(x, u[:1], i, axis=0),
        L.dynamic_update_index_in_dim(x, u[0], j, 0),
    )


@given(st.integers(-9, 9), st.integers(-9, 9), st.sampled_from([(3, 2), (4, 5), (2, 2)]))
def test_windows_clamp_as_jax(i, j, shape):
    both = _BOTH_WINDOWS
    both.check(rand(shape), np.int32(i), np.int32(j))
    assert both.ours.cache_size() == 1


@given(st.integers(-9, 9), st.integers(-9, 9), st.sampled_from([(3, 2), (4, 5), (2, 2)]))
def test_updates_clamp_as_jax(i, j, shape):
    both = _BOTH_UPDATES
    both.check(rand(shape), rand((2, 2), seed=1), np.int32(i), np.int32(j))
    assert both.ours.cache_size() == 1


_BOTH_WINDOWS = Both(_windows)
_BOTH_UPDATES = Both(_updates)


def test_shapes_and_errors():
    out = relax.eval_shape(lambda x: lax.dynamic_slice(x, (0, 1), (2, x.shape[1] - 1)), NM)
    assert repr(out) == 'Tensor((2, m - 1), "float32")'
    with pytest.raises(
        ValueError,
        match=r"length of slice indices must match number of operand "
        r"dimensions \(1 vs 2\)",
    ):
        relax.eval_shape(lambda x: lax.dynamic_slice(x, (0,), (1, 1)), NM)
    with pytest.raises(TypeError, match="start index 1 must be an integer scalar"):
        relax.eval_shape(lambda x: lax.dynamic_slice(x, (0, 1.5), (1, 1)), NM)
    with pytest.raises(
        relax.ShapeError,
        match=r"the slice size \(5\) must fit axis 0 of the "
        r"operand \(3\)",
    ):
        relax.eval_shape(
            lambda x: lax.dynamic_slice(x, (0, 0), (5, 1)), relax.Tensor((3, 2), "float32")
        )
    with pytest.raises(TypeError, match="the update has dtype float64 but the operand float32"):
        relax.eval_shape(lambda x: lax.dynamic_update_slice(x, x.astype("float64"), (0, 0)), NM)

    @relax.jit
    def too_big(x: NM):
        return lax.dynamic_slice(x, (0, 0), (2, 1))

    with pytest.raises(relax.ShapeError, match="must fit axis 0 of the operand"):
        too_big(np.zeros((1, 1), np.float32))


def test_outside_jit():
    x = rand((4, 3))
    assert_same(lax.dynamic_slice(x, (3, -1), (2, 2)), jax.lax.dynamic_slice(x, (3, -1), (2, 2)))
    u = rand((1, 3), seed=2)
    assert_same(lax.dynamic_update_slice(x, u, (9, 0)), jax.lax.dynamic_update_slice(x, u, (9, 0)))


# --------------------------------------------------------------------------- in place


def _inplace_calls(mod):
    return {
        name: [
            b.value
            for blk in f.body.blocks
            for b in blk.bindings
            if isinstance(b.value, Call) and b.value.op is CALL_TIR_INPLACE
        ]
        for name, f in mod.graph_functions().items()
    }


def _kv(
    cache: relax.Tensor(("L", 4), "float32"), rows: relax.Tensor(("n", 4), "float32"), pos: I64
):
    first = lax.dynamic_update_slice(cache, rows[:1], (pos, 0))  # a parameter: copied once

    def body(i, c):
        return lax.dynamic_update_slice(c, rows[i][None] * 2.0, (pos + i, 0))  # in place

    return lax.fori_loop(0, rows.shape[0], body, first)


def test_updates_of_dead_values_are_in_place_in_the_ir():
    mod = default_pipeline(verify=True, library=True)(relax.jit(_kv).trace())
    calls = _inplace_calls(mod)
    assert len(calls["body"]) == 1 and calls["kv"] == []  # the parameter is never updated

    # the second update reads the first's result afterwards: not in place
    @relax.jit
    def live(x: NM, u: relax.Tensor((1, 1), "float32")):
        y = x * 2.0
        z = lax.dynamic_update_slice(y, u, (0, 0))
        return z, y.sum()

    assert _inplace_calls(default_pipeline()(live.trace()))["live"] == []


def test_a_parameter_is_never_modified():
    cache = np.zeros((6, 4), np.float32)
    rows = rand((3, 4))
    out = relax.jit(_kv)(cache, rows, np.int64(1))
    assert (cache == 0).all()
    expected = jax.lax.dynamic_update_slice(cache, rows[:1], (1, 0))
    for i in range(3):
        expected = jax.lax.dynamic_update_slice(expected, rows[i][None] * 2.0, (1 + i, 0))
    np.testing.assert_allclose(out, expected)


@pytest.fixture
def launches(monkeypatch):
    """Every kernel the reference target runs: (name, data pointer of each buffer)."""
    seen = []
    original = executable._interpreted

    def spy(func, *args):
        pointers = [a.__array_interface__["data"][0] for a in args if isinstance(a, np.ndarray)]
        seen.append((func.name, pointers))
        return original(func, *args)

    monkeypatch.setattr(executable, "_interpreted", spy)
    return seen


def test_in_place_result_shares_the_intermediate_buffer(launches):
    @relax.jit
    def f(x: NM, u: relax.Tensor((1, 2), "float32"), i: I64):
        y = x * 2.0
        return lax.dynamic_update_slice(y, u, (i, 0))

    exe = build_executable(default_pipeline(library=False)(f.trace()), target="reference")
    x, u = rand((5, 2)), rand((1, 2), seed=1)
    (out,) = exe(x, u, np.int64(3))
    np.testing.assert_allclose(out, jax.lax.dynamic_update_slice(x * 2, u, (3, 0)))
    (producer, produced), (updater, updated) = launches
    assert producer.startswith("multiply") and updater == "dynamic_update_slice_inplace"
    assert updated[-1] == produced[-1] == out.__array_interface__["data"][0]


def test_loop_updates_its_carry_in_place_every_iteration(launches):
    exe = build_executable(
        default_pipeline(library=False)(relax.jit(_kv).trace()), target="reference"
    )
    cache, rows = np.zeros((8, 4), np.float32), rand((5, 4))
    exe(cache, rows, np.int64(0))
    targets = [p[-1] for name, p in launches if name == "dynamic_update_slice_inplace"]
    assert len(targets) == 5 and len(set(targets)) == 1  # one buffer, written 5 times
    # the parameter's copy (the slice rows[:1] fused into it); no copy of the cache per iteration
    copies = [name for name, _ in launches if name.endswith("dynamic_update_slice")]
    assert len(copies) == 1


def test_scan_writes_outputs_into_the_stacked_result(launches):
    @relax.jit
    def f(xs: NM):
        return lax.scan(lambda c, x: (c + x, x * 2.0), xs[0] * 0.0, xs)

    exe = build_executable(default_pipeline(library=False)(f.trace()), target="reference")
    xs = rand((4, 3))
    carry, ys = exe(xs)
    np.testing.assert_allclose(ys, xs * 2)
    np.testing.assert_allclose(carry, xs.sum(0), rtol=1e-6)
    base = ys.__array_interface__["data"][0]
    writes = [p[-1] for name, p in launches if name.startswith("multiply")][-4:]
    assert writes == [base + t * 3 * 4 for t in range(4)]  # each step writes ys[t] directly
