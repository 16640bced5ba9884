"""``f.profile(*args)``: one call timed kernel by kernel (runtime/profiling.py, costs.py)."""

from __future__ import annotations

import time

import numpy as np
import pytest

import relaxjax as relax
import relaxjax.lax as rlax
import relaxjax.nn as rnn
import relaxjax.numpy as rnp
from relaxjax import arith
from relaxjax.errors import ShapeError
from relaxjax.runtime import Profile
from relaxjax.runtime.costs import kernel_cost, library_cost
from relaxjax.tir import te

T = relax.Tensor


@relax.jit
def mlp(x: T(("n", 64), "float32"), w1: T((64, 96), "float32"), w2: T((96, 32), "float32")):
    return rnn.gelu(x @ w1) @ w2


@relax.jit
def scaled(x: T(("n", "m"), "float32"), y: T(("n", "m"), "float32")):
    return x * y + x


def _rand(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


def _mlp_args(n: int = 40):
    rng = np.random.default_rng(0)
    return _rand(rng, n, 64), _rand(rng, 64, 96), _rand(rng, 96, 32)


def test_profile_runs_once_and_returns_the_result_with_a_row_per_kernel():
    args = _mlp_args()
    profile = mlp.profile(*args)
    assert isinstance(profile, Profile) and profile.function == "mlp"
    np.testing.assert_allclose(profile.result, mlp(*args), rtol=1e-6)
    matmul = profile["numpy.matmul"]
    assert matmul.kind == "library" and matmul.calls == 2
    assert matmul.flops == 2 * 40 * 96 * 64 + 2 * 40 * 32 * 96
    sizes = (40 * 64 + 64 * 96 + 40 * 96) + (40 * 96 + 96 * 32 + 40 * 32)
    assert matmul.nbytes == 4 * sizes
    kernels = [r for r in profile.rows if r.kind == "kernel"]
    assert kernels and all(r.calls == 1 and r.rule for r in kernels)
    assert profile.rows[-1].kind == "host" and profile.rows[-1].name == "(host)"
    timed = [r.total_ms for r in profile.rows[:-1]]
    assert timed == sorted(timed, reverse=True)


def test_the_rows_add_up_to_the_wall_time_and_shares_to_100_percent():
    profile = mlp.profile(*_mlp_args())
    assert sum(r.total_ms for r in profile) == pytest.approx(profile.wall_ms, rel=1e-9)
    assert profile.total_ms == profile.wall_ms > 0
    assert profile.kernel_ms + profile.host_ms == pytest.approx(profile.wall_ms)
    assert sum(r.percent for r in profile) == pytest.approx(100.0)
    for row in profile:
        if row.nbytes:
            assert row.gb_per_s == pytest.approx(row.nbytes / (row.total_ms * 1e6))


def _heavy():
    rng = np.random.default_rng(1)
    f = relax.jit(lambda x, w1, w2: rnp.tanh(rnp.exp(x @ w1) * 0.5) @ w2)
    args = (_rand(rng, 4096, 64), _rand(rng, 64, 256), _rand(rng, 256, 32))
    f(*args)
    return f, args


def test_kernel_time_is_the_call_time_when_kernels_dominate():
    """The profiler's totals agree with the wall time of the call: the kernels' time
    covers nearly all of a heavy call (the rest is the host row)."""
    f, args = _heavy()
    shares = []
    for _ in range(5):  # the best of a few: the machine may be busy with other work
        profile = f.profile(*args)
        shares.append(profile.kernel_ms / profile.wall_ms)
    assert max(shares) >= 0.9, shares


@pytest.mark.slow
def test_a_profiled_call_takes_as_long_as_a_plain_one():
    """Timing the launches costs nothing measurable: interleaved medians within 10%
    (needs a quiet machine, so it is not in the default run)."""
    f, args = _heavy()
    plain, profiled = [], []
    for _ in range(31):
        start = time.perf_counter()
        f(*args)
        plain.append(time.perf_counter() - start)
        profiled.append(f.profile(*args).wall_ms / 1e3)
    plain, profiled = sorted(plain), sorted(profiled)
    assert profiled[15] <= 1.1 * plain[15] + 2e-4, (plain, profiled)


def test_elementwise_costs_are_exact():
    x = np.ones((7, 9), np.float32)
    profile = scaled.profile(x, x)
    (row,) = [r for r in profile if r.kind == "kernel"]
    assert row.nbytes == 3 * 7 * 9 * 4 and row.flops == 2 * 7 * 9
    assert row.gflop_per_s == pytest.approx(row.flops / (row.total_ms * 1e6))


def test_kernel_cost_counts_tails_and_triangles():
    n = arith.sym("n")
    x = te.placeholder((n, n), "float32", "x")
    y = te.compute((n, n), lambda i, j: x[i, j] * 3.0, name="y")
    func = te.create_prim_func([x, y], name="y")
    from relaxjax.schedule import Schedule
    from relaxjax.schedule.rules import lower_blocks, tighten_loops

    sch = Schedule(func)
    i, j = sch.get_loops(sch.get_block("y"))
    sch.split(j, factors=[None, 16])
    split = tighten_loops(lower_blocks(sch.func))
    for size in (0, 1, 15, 16, 17, 100):
        assert kernel_cost(split, {"n": size}).flops == size * size, size
    k = te.reduce_axis(n, "k")
    c = te.compute((n,), lambda i: te.sum(x[i, k] * x[k, i], axis=k), name="c")
    assert kernel_cost(te.create_prim_func([x, c], name="c"), {"n": 5}).flops == 2 * 25
    assert library_cost("numpy.matmul", [(2, 3), (3, 4), (2, 4)], ["float64"] * 3).flops == 48
    assert library_cost("other", [(2,)], ["int8"]).flops is None


def test_a_shared_kernel_counts_every_launch_of_a_called_function():
    @relax.jit
    def layer(x: T(("n", 16), "float32")):
        return rnp.exp(x) * 0.5

    @relax.jit
    def stack(x: T(("n", 16), "float32")):
        return layer(layer(layer(x)))

    x = np.linspace(-1, 1, 48, dtype=np.float32).reshape(3, 16)
    profile = stack.profile(x)
    np.testing.assert_allclose(profile.result, stack(x), rtol=1e-6)
    kernels = [r for r in profile if r.kind == "kernel"]
    assert sum(r.calls for r in kernels) == 3 and len(kernels) == 1, str(profile)


def test_loop_bodies_are_profiled_per_iteration():
    @relax.jit
    def loop(x: T(("n",), "float32")):
        return rlax.fori_loop(0, 4, lambda i, v: v * 2.0 + 1.0, x)

    x = np.arange(5, dtype=np.float32)
    profile = loop.profile(x)
    np.testing.assert_allclose(profile.result, loop(x))
    assert sum(r.calls for r in profile if r.kind == "kernel") == 4, str(profile)


def test_a_kernel_left_without_parallel_loops_is_marked_with_its_reason():
    total = relax.jit(lambda x: rnp.sum(x))
    profile = total.profile(np.ones(100_000, np.float32))
    (row,) = [r for r in profile if r.kind == "kernel"]
    assert row.fallback and row.note.startswith("not parallel: a reduction to one value")
    text = str(profile)
    assert "reduction !" in text and f"  {row.name}: not parallel: a reduction" in text
    assert profile.fallbacks == (row,)


def test_the_table_prints_and_renders_as_html():
    profile = mlp.profile(*_mlp_args())
    text = str(profile)
    lines = text.splitlines()
    assert lines[0].startswith("mlp: ") and "one call: kernels" in lines[0]
    for column in ("kernel / library call", "calls", "total ms", "% call", "bytes moved"):
        assert column in lines[1]
    assert "GB/s" in lines[1] and "GFLOP/s" in lines[1] and "schedule" in lines[1]
    assert "numpy.matmul (library)" in text and "(host)" in text
    assert repr(profile) == text
    page = profile._repr_html_()
    assert page.count("<tr") == len(profile) + 1 and "numpy.matmul (library)" in page
    assert profile.as_dicts()[0]["name"] == profile.rows[0].name
    with pytest.raises(KeyError, match="no kernel or library call 'nope' in the profile"):
        profile["nope"]


def test_profile_checks_the_arguments_before_running():
    x, w1, w2 = _mlp_args()
    with pytest.raises(ShapeError, match="w1"):
        mlp.profile(x, w1[:3], w2)
    with pytest.raises(TypeError):
        mlp.profile(x.astype(np.float64), w1, w2)


def test_profile_on_the_reference_target():
    f = relax.jit(lambda x: rnp.exp(x) + 1.0, target="reference")
    x = np.linspace(0, 1, 6, dtype=np.float32)
    profile = f.profile(x)
    np.testing.assert_allclose(profile.result, np.exp(x) + 1.0, rtol=1e-6)
    assert [r.kind for r in profile] == ["kernel", "host"]


def test_profile_inside_a_trace_is_refused():
    inner = relax.jit(lambda x: x + 1.0)

    def outer(x):
        inner.profile(x)
        return x

    with pytest.raises(TypeError, match=r"profile\(\) runs the function"):
        relax.jit(outer)(np.ones(3, np.float32))
