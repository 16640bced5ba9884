"""cuBLAS dispatch through the whole GPU path without a GPU: programs whose matmuls are
``call_extern("cublas.matmul*")`` run on the emulating driver, their GEMMs on the numpy
emulation of cuBLAS (column-major, tests/runtime/cuda/emulator.py), in order with the
emulated kernels and inside captured CUDA graphs; and on the fake driver, the recorded
launch order, graph capture and the fallback when cuBLAS cannot be loaded."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from cuda_helpers import needs_ptxas

sys.path.insert(0, str(Path(__file__).parents[2] / "backends" / "cuda"))

import relaxjax as relax  # noqa: E402
import relaxjax.numpy as rnp  # noqa: E402
from models import NAMES, block_params, gpt_block, jax_block  # noqa: E402
from relaxjax import dtypes  # noqa: E402
from relaxjax.errors import DeviceError  # noqa: E402
from relaxjax.runtime.cuda import GraphPolicy, use_driver  # noqa: E402
from relaxjax.runtime.cuda.gemm import Gemm  # noqa: E402
from relaxjax.runtime.cuda.graphs import Launch, LaunchGraphs, LibraryLaunch  # noqa: E402

T = relax.Tensor
TOLERANCE = {"float32": 1e-5, "float16": 2e-2, "bfloat16": 1e-1}


def _random(rng, shape, dtype):
    return rng.standard_normal(shape).astype(dtypes.to_numpy(dtype))


def _product(a, b):
    return np.matmul(a.astype(np.float64), b.astype(np.float64))


def _check(got, expected, dtype, what):
    tolerance = TOLERANCE[dtype]
    np.testing.assert_allclose(
        np.asarray(got).astype(np.float64), expected, tolerance, tolerance, err_msg=what
    )


@needs_ptxas
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_matmuls_run_in_emulated_cublas(emulated, dtype):
    driver, _ = emulated

    def fn(x: T(("n", 16), dtype), w: T((8, 16), dtype), v: T((8, 3), dtype)):
        return x @ w.T, (x @ w.T) @ v

    f = relax.jit(fn, target="cuda")
    rng = np.random.default_rng(0)
    w, v = _random(rng, (8, 16), dtype), _random(rng, (8, 3), dtype)
    for n in (0, 1, 7, 300):
        x = _random(rng, (n, 16), dtype)
        first, second = f(x, w, v)
        h = _product(x, w.T)
        _check(first, h, dtype, f"x @ w.T, n={n}")
        rounded = np.asarray(first).astype(np.float64)  # the GPU rounds h to dtype too
        _check(second, _product(rounded, v.astype(np.float64)), dtype, f"(x @ w.T) @ v, n={n}")
    assert f.cache_size() == 1
    gemms = [g for name, g in driver.library_calls if name == "gemm"]
    assert gemms and all(g.dtype == dtype for g in gemms)
    assert {(g.transa, g.transb) for g in gemms} == {(True, False), (False, False)}


@needs_ptxas
def test_batched_and_broadcast_matmuls(emulated):
    driver, _ = emulated

    def fn(q: T(("b", "n", 8), "float32"), k: T(("b", "m", 8), "float32"), w: T((8, 5), "float32")):
        scores = q @ rnp.swapaxes(k, 1, 2)  # (b, n, m): strided batch, b transposed
        return scores, q @ w  # a broadcast weight: one GEMM over b * n rows

    f = relax.jit(fn, target="cuda")
    rng = np.random.default_rng(1)
    w = _random(rng, (8, 5), "float32")
    for b, n, m in [(3, 4, 5), (1, 7, 2), (2, 0, 3), (2, 3, 0)]:
        q, k = _random(rng, (b, n, 8), "float32"), _random(rng, (b, m, 8), "float32")
        scores, projected = f(q, k, w)
        _check(scores, _product(q, np.swapaxes(k, 1, 2)), "float32", f"scores {b, n, m}")
        _check(projected, _product(q, w), "float32", f"q @ w {b, n, m}")
    batches = {g.batch for _, g in driver.library_calls}
    assert 3 in batches and 1 in batches  # strided batched, and the folded broadcast


@needs_ptxas
def test_contraction_of_zero_length_writes_zeros(emulated):
    driver, _ = emulated

    def fn(x: T(("n", "k"), "float32"), w: T(("k", 4), "float32")):
        return x @ w

    f = relax.jit(fn, target="cuda")
    for n, k in [(3, 0), (3, 2), (3, 0)]:
        x, w = np.ones((n, k), np.float32), np.ones((k, 4), np.float32)
        np.testing.assert_array_equal(np.asarray(f(x, w)), np.full((n, 4), float(k), np.float32))


@needs_ptxas
def test_cublas_calls_replay_inside_captured_graphs(emulated):
    driver, _ = emulated

    def fn(x: T(("n", 8), "float32"), w: T((8, 8), "float32")):
        return rnp.tanh(x @ w) @ w

    f = relax.jit(fn, target="cuda", cuda_graphs=GraphPolicy(max_value=64, max_captures=4))
    rng = np.random.default_rng(2)
    w = _random(rng, (8, 8), "float32")
    for n in (5, 7, 6, 3, 3, 100, 7, 7):
        x = _random(rng, (n, 8), "float32")
        _check(f(x, w), _product(np.tanh(_product(x, w)), w), "float32", f"n={n}")
    (executable,) = f._executables.values()
    stats = executable.graphs.stats
    # bucket 8: n = 5 runs uncaptured (cuBLAS sets up), 7 is captured, 6 and 7, 7 replay;
    # bucket 4: n = 3 uncaptured, then captured; 100 > 64 uncaptured
    assert stats.captures == 2 and driver.captures == 2
    assert stats.replays == 5 and stats.uncaptured == 3
    assert driver.exec_updates >= 2  # n = 6, then 7: other sizes, updated in place
    assert stats.updated_nodes >= 2 and stats.reinstantiated == 0


@needs_ptxas
def test_library_false_runs_generated_matmuls(emulated):
    driver, _ = emulated

    def fn(x: T(("n", 8), "float32"), w: T((4, 8), "float32")):
        return x @ w.T

    f = relax.jit(fn, target="cuda", library=False)
    x, w = np.ones((3, 8), np.float32), np.arange(32, dtype=np.float32).reshape(4, 8)
    np.testing.assert_allclose(np.asarray(f(x, w)), x @ w.T)
    assert driver.library_calls == []
    (executable,) = f._executables.values()
    assert 'extern("cublas' not in str(executable.program.module)


@needs_ptxas
@pytest.mark.slow
def test_gpt_block_with_cublas_matmuls(emulated):
    driver, _ = emulated
    rng = np.random.default_rng(5)
    block = gpt_block(16, 2, 32)
    params = block_params(16, 32, rng)
    args = [params[name] for name in NAMES]
    for t in (1, 6):
        x = rng.standard_normal((t, 16)).astype(np.float32)
        np.testing.assert_allclose(
            np.asarray(block(x, *args)), np.asarray(jax_block(x, params, 2)), rtol=2e-4, atol=2e-5
        )
    assert len(driver.library_calls) >= 8  # every projection of both calls


# -- the fake driver: order, capture, fallback --------------------------------------------


def test_cublas_launches_are_recorded_in_order_with_the_kernels(fake):
    driver, _ = fake

    def fn(x: T(("n", 8), "float32"), w: T((8, 4), "float32")):
        return rnp.tanh(x @ w) * 2.0

    f = relax.jit(fn, target="cuda", cuda_graphs=False)
    f(np.ones((3, 8), np.float32), np.ones((8, 4), np.float32))
    kinds = ["gemm" if launch[0] == "gemm" else "kernel" for launch in driver.launches]
    assert kinds[0] == "gemm" and "kernel" in kinds[1:]
    gemm = driver.launches[0][1]
    assert (gemm.m, gemm.n, gemm.k, gemm.batch) == (4, 3, 8, 1)


def test_calls_with_cublas_are_captured_not_built_from_nodes(fake):
    driver, _ = fake

    def fn(x: T(("n", 8), "float32"), w: T((8, 4), "float32")):
        return rnp.tanh(x @ w)

    f = relax.jit(fn, target="cuda")
    for n in (3, 3, 4):
        f(np.ones((n, 8), np.float32), np.ones((8, 4), np.float32))
    assert driver.captured == 1 and driver.graphs_built == 0 and driver.graph_launches == 2
    # the first call ran uncaptured (cuBLAS's setup), the others through the graph
    assert [launch[0] for launch in driver.launches][:1] == ["gemm"]
    assert len(driver.launches) == 2


def test_a_capture_the_driver_refuses_leaves_the_bucket_uncaptured(fake):
    driver, _ = fake

    def refuse(stream, enqueue):
        raise DeviceError("CUDA driver call cuStreamEndCapture failed: invalidated")

    driver.graph_capture = refuse

    def fn(x: T(("n", 8), "float32"), w: T((8, 4), "float32")):
        return rnp.tanh(x @ w)

    f = relax.jit(fn, target="cuda")
    f(np.ones((3, 8), np.float32), np.ones((8, 4), np.float32))
    with pytest.warns(UserWarning, match="could not be captured.*invalidated"):
        f(np.ones((3, 8), np.float32), np.ones((8, 4), np.float32))
    f(np.ones((3, 8), np.float32), np.ones((8, 4), np.float32))  # no new attempt
    (executable,) = f._executables.values()
    stats = executable.graphs.stats
    assert stats.uncaptured == 3 and len(stats.refused_buckets) == 1
    assert driver.graph_launches == 0 and len(driver.launches) == 6


def test_without_cublas_matmuls_fall_back_to_generated_kernels_with_a_warning(fake):
    from fake_driver import FakeDriver

    def unavailable(device):
        raise DeviceError("cuBLAS cannot be loaded (not here)")

    use_driver(FakeDriver(), unavailable)

    def fn(x: T(("n", 8), "float32"), w: T((8, 4), "float32")):
        return x @ w

    f = relax.jit(fn, target="cuda")
    with pytest.warns(UserWarning, match=r"matmuls run as generated kernels.*not here"):
        f(np.ones((2, 8), np.float32), np.ones((8, 4), np.float32))
    (executable,) = f._executables.values()
    assert 'extern("cublas' not in str(executable.program.module)


class _Driver:
    """Graph calls only; update refused when asked to (cuBLAS picked other kernels)."""

    def __init__(self, refuse: bool) -> None:
        self.refuse = refuse
        self.log: list = []

    def graph_capture(self, stream, enqueue):
        self.log.append("capture")
        return "graph"

    def graph_instantiate(self, graph):
        self.log.append("instantiate")
        return f"exec{self.log.count('instantiate')}"

    def graph_exec_update(self, executable, graph):
        self.log.append("update")
        return not self.refuse

    def graph_launch(self, graph, stream):
        self.log.append(("launch", graph))


class _Device:
    def __init__(self, driver):
        self.driver, self.stream = driver, "stream"


class _Library:
    def __init__(self, log):
        self.log = log

    def enqueue(self, call, stream):
        self.log.append(("gemm", call.c))


@pytest.mark.parametrize("refuse", [False, True])
def test_a_changed_library_call_updates_or_reinstantiates_the_graph(refuse):
    driver = _Driver(refuse)
    graphs = LaunchGraphs(GraphPolicy())
    kernel = Launch("f", (1, 1, 1), (32, 1, 1), 0, ((7, int),), (3,))
    library = _Library(driver.log)

    def call(pointer):
        gemm = Gemm(False, False, 4, 3, 8, 1, 4, 0, 2, 8, 0, pointer, 4, 0, 1, "float32")
        return [LibraryLaunch(library, gemm, (4, 3, 8, 1)), kernel]

    class Kernels:
        def launch(self, *args):
            driver.log.append("kernel")

    device = _Device(driver)
    driver.launch = Kernels().launch
    graphs.submit(device, call(64), True)  # uncaptured: cuBLAS sets up outside a capture
    graphs.submit(device, call(64), True)  # captured
    graphs.submit(device, call(64), True)  # the same: replayed as it is
    graphs.submit(device, call(128), True)  # another output: captured again
    first = [("gemm", 64), "kernel", "capture", "instantiate", ("launch", "exec1")]
    first += [("launch", "exec1"), "capture"]
    if refuse:
        assert driver.log == [*first, "update", "capture", "instantiate", ("launch", "exec2")]
    else:
        assert driver.log == [*first, "update", ("launch", "exec1")]
    stats = graphs.stats
    assert (stats.captures, stats.replays, stats.updated_nodes, stats.uncaptured) == (1, 3, 1, 1)
    assert stats.reinstantiated == int(refuse)


@needs_ptxas
def test_profile_times_cublas_calls_as_library_rows(emulated):
    def fn(x: T(("n", 8), "float32"), w: T((4, 8), "float32")):
        return rnp.tanh(x @ w.T)

    f = relax.jit(fn, target="cuda")
    x = np.random.default_rng(6).standard_normal((5, 8)).astype(np.float32)
    w = np.random.default_rng(7).standard_normal((4, 8)).astype(np.float32)
    profile = f.profile(x, w)
    np.testing.assert_allclose(np.asarray(profile.result), np.tanh(x @ w.T), 1e-5, 1e-6)
    (library,) = [row for row in profile.rows if row.kind == "library"]
    assert library.name == "cublas.matmul.transpose_b" and library.calls == 1, profile
    assert library.flops == 2 * 5 * 4 * 8


@needs_ptxas
def test_cublas_inside_a_scan_and_a_called_function(emulated):
    import relaxjax.lax as lax

    driver, _ = emulated

    @relax.jit
    def project(h: T((4,), "float32"), w: T((4, 4), "float32")):
        return rnp.tanh(h @ w)

    def fn(xs: T(("t", 4), "float32"), h: T((4,), "float32"), w: T((4, 4), "float32")):
        def body(carry, x_t):
            carry = project(carry + x_t, w)
            return carry, carry @ w.T

        return lax.scan(body, h, xs)

    f = relax.jit(fn, target="cuda")
    rng = np.random.default_rng(11)
    w = (0.5 * rng.standard_normal((4, 4))).astype(np.float32)
    for t in (0, 1, 4):
        xs = rng.standard_normal((t, 4)).astype(np.float32)
        h = rng.standard_normal(4).astype(np.float32)
        carry, ys = f(xs, h, w)
        expected_h, expected_ys = h.astype(np.float64), []
        for x_t in xs:
            expected_h = np.tanh((expected_h + x_t) @ w)
            expected_ys.append(expected_h @ w.T)
        _check(carry, expected_h, "float32", f"carry t={t}")
        _check(ys, np.array(expected_ys).reshape(t, 4), "float32", f"ys t={t}")
    assert {g.transa for _, g in driver.library_calls} == {False, True}
