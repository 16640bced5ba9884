"""The GPU runtime's logic on a fake driver (no GPU): the caching allocator, device
arrays and DLPack, launch parameters and grids from symbols, CUDA-graph buckets, whole
executables; and the behaviour without a GPU."""

from __future__ import annotations

import ctypes
import subprocess
import sys

import numpy as np
import pytest
from cuda_helpers import bound_elementwise, needs_libdevice, needs_ptxas, variants
from hypothesis import given
from hypothesis import strategies as st

import relaxjax as relax
import relaxjax.numpy as rnp
from relaxjax.backends.cuda import CudaTarget, build_cuda
from relaxjax.runtime.cuda import (
    CachingAllocator,
    DeviceArray,
    GraphPolicy,
    LaunchGraphs,
    as_device_array,
    build_cuda_executable,
    device_empty,
    dlpack,
    probe,
    size_class,
)
from relaxjax.runtime.cuda.graphs import Launch
from relaxjax.runtime.cuda.launcher import KernelLauncher

# -- allocator ---------------------------------------------------------------------------------


@given(st.integers(0, 1 << 34))
def test_size_classes_cover_the_request_and_waste_little(nbytes):
    size = size_class(nbytes)
    assert size >= max(nbytes, 512)
    if nbytes > 1 << 20:
        assert size - nbytes <= nbytes // 8 + 1
    assert size_class(size) == size  # a class serves itself


def test_size_class_refuses_negative_sizes():
    with pytest.raises(ValueError, match="nbytes >= 0, given -1"):
        size_class(-1)


def test_the_allocator_reuses_released_blocks_of_a_class(fake):
    driver, _ = fake
    allocator = CachingAllocator(driver)
    first = allocator.allocate(1000)
    pointer = first.pointer
    first.release()
    second = allocator.allocate(900)  # same class (1024)
    assert second.pointer == pointer and driver.allocs == 1
    stats = allocator.stats()
    assert (stats.allocations, stats.reuses, stats.live_bytes) == (1, 1, 1024)
    third = allocator.allocate(5000)  # another class: a new block
    assert third.pointer != pointer and driver.allocs == 2
    del second, third  # collected blocks go back too
    assert allocator.stats().cached_bytes == 1024 + 8192 and allocator.trim() == 9216
    assert driver.frees == 2


def test_blocks_released_while_held_come_back_only_at_the_end(fake):
    driver, _ = fake
    allocator = CachingAllocator(driver)
    with allocator.hold():
        block = allocator.allocate(100)
        pointer = block.pointer
        block.release()
        again = allocator.allocate(100)  # the first block is still in use by queued work
        assert again.pointer != pointer
    assert allocator.allocate(100).pointer == pointer


def test_over_the_cache_limit_blocks_go_back_to_the_driver(fake):
    driver, _ = fake
    allocator = CachingAllocator(driver, max_cached_bytes=1024)
    allocator.allocate(2048).release()
    assert driver.frees == 1 and allocator.stats().frees == 1


# -- device arrays -----------------------------------------------------------------------------


def test_numpy_round_trips_through_device_memory(fake):
    _, device = fake
    host = np.arange(12, dtype=np.float32).reshape(3, 4)
    array = as_device_array(device, host)
    assert isinstance(array, DeviceArray) and array.shape == (3, 4) and array.dtype == np.float32
    np.testing.assert_array_equal(np.asarray(array), host)
    copy = array.copy()
    assert copy.ptr != array.ptr
    np.testing.assert_array_equal(np.asarray(copy), host)
    assert int(as_device_array(device, np.int64(7))) == 7


def test_cuda_array_interface_is_version_3_and_zero_copy(fake):
    _, device = fake
    array = device_empty(device, (2, 5), np.float16)
    interface = array.__cuda_array_interface__
    assert interface["shape"] == (2, 5) and interface["typestr"] == "<f2"
    assert interface["data"] == (array.ptr, False) and interface["version"] == 3

    class Foreign:  # another library's GPU array
        __cuda_array_interface__ = interface

    wrapped = as_device_array(device, Foreign())
    assert wrapped.ptr == array.ptr and wrapped.shape == (2, 5)


def test_dlpack_export_honours_the_consumers_device_and_copy_requests(fake):
    _, device = fake
    array = as_device_array(device, np.arange(6, dtype=np.float32))
    with pytest.raises(BufferError, match=r"on device \(2, 0\), asked for \(1, 0\)"):
        array.__dlpack__(dl_device=(1, 0))
    shared = as_device_array(device, _Capsule(array.__dlpack__(max_version=(1, 0))))
    copied = as_device_array(device, _Capsule(array.__dlpack__(copy=True)))
    assert shared.ptr == array.ptr and copied.ptr != array.ptr
    np.testing.assert_array_equal(np.asarray(copied), np.arange(6))


class _Capsule:
    """A producer handing over a capsule made earlier."""

    def __init__(self, capsule):
        self.capsule = capsule

    def __dlpack_device__(self):
        return (2, 0)

    def __dlpack__(self, stream=None):
        return self.capsule


def test_a_foreign_array_on_another_stream_is_waited_for(fake):
    driver, device = fake
    array = device_empty(device, (4,), np.float32)

    class OnItsStream:  # produced on stream 0x1234 (cupy, torch on a side stream)
        __cuda_array_interface__ = {**array.__cuda_array_interface__, "stream": 0x1234}

    class NoStream:  # "stream" absent or None: no synchronisation is needed
        __cuda_array_interface__ = {**array.__cuda_array_interface__, "stream": None}

    as_device_array(device, NoStream())
    assert driver.synchronized == []
    as_device_array(device, OnItsStream())
    assert driver.synchronized == [0x1234]  # the producer's stream, not ours


def test_foreign_strided_gpu_arrays_are_refused(fake):
    _, device = fake

    class Strided:
        __cuda_array_interface__ = {
            "shape": (4, 4), "typestr": "<f4", "data": (1 << 32, False),
            "strides": (4, 16), "version": 3,
        }  # fmt: skip

    with pytest.raises(TypeError, match="only C-contiguous GPU arrays"):
        as_device_array(device, Strided())


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "bool", "int8", "uint8", "float64"])
def test_dlpack_export_and_import_share_memory(fake, dtype):
    _, device = fake
    array = device_empty(device, (3, 2), relax.dtypes.to_numpy(dtype))
    assert array.__dlpack_device__() == (dlpack.KDL_CUDA, 0)
    imported = as_device_array(device, _Producer(array))
    assert imported.ptr == array.ptr and imported.shape == (3, 2)
    assert relax.dtypes.canonical(imported.dtype) == dtype
    live = len(dlpack._live)
    del imported
    assert len(dlpack._live) == live - 1  # the consumer's release ran the deleter


class _Producer:
    """A non-DeviceArray GPU producer (only the DLPack protocol)."""

    def __init__(self, array: DeviceArray) -> None:
        self.array = array

    def __dlpack_device__(self):
        return self.array.__dlpack_device__()

    def __dlpack__(self, stream=None):
        return self.array.__dlpack__(stream=stream)


# -- launches and graphs -----------------------------------------------------------------------


def _launch(values: tuple[int, ...], function="f") -> Launch:
    params = tuple((v, ctypes.c_int64) for v in values)
    return Launch(function, (max(values), 1, 1), (128, 1, 1), 0, params, values)


def test_graphs_capture_once_per_bucket_and_update_changed_nodes(fake):
    driver, device = fake
    graphs = LaunchGraphs(GraphPolicy(max_value=64, max_captures=2))
    graphs.submit(device, [_launch((5,)), _launch((5,), "g")], True)  # bucket 8: capture
    graphs.submit(device, [_launch((7,)), _launch((7,), "g")], True)  # bucket 8: replay
    graphs.submit(device, [_launch((7,)), _launch((7,), "g")], True)  # same values: no update
    assert (driver.graphs_built, driver.graph_launches, driver.updates) == (1, 3, 2)
    graphs.submit(device, [_launch((9,)), _launch((9,), "g")], True)  # bucket 16: capture
    graphs.submit(device, [_launch((33,)), _launch((33,), "g")], True)  # bucket 64: refused
    graphs.submit(device, [_launch((100,)), _launch((100,), "g")], True)  # over max_value
    stats = graphs.stats
    assert (stats.captures, stats.uncaptured, len(stats.refused_buckets)) == (2, 2, 1)
    assert len(driver.launches) == 4 and len(graphs.buckets) == 2


def test_graphs_can_be_disabled(fake):
    driver, device = fake
    graphs = LaunchGraphs(GraphPolicy(enabled=False))
    graphs.submit(device, [_launch((4,))], True)
    assert driver.graphs_built == 0 and len(driver.launches) == 1


def test_graph_policy_is_validated():
    with pytest.raises(ValueError, match="max_value >= 1"):
        GraphPolicy(max_value=0)


@needs_ptxas
def test_launch_grid_and_parameters_come_from_the_symbols(fake):
    driver, device = fake
    module = build_cuda(bound_elementwise(256), CudaTarget("sm_90"), assemble_cubin=True)
    launcher = KernelLauncher(device, module.kernels["ew"])
    assert launcher(1 << 32, 2 << 32, 10) == 0
    function, grid, block, shared, params = driver.launches[-1]
    assert function == ("function", "relaxjax_ew")
    assert grid == (3, 1, 1) and block == (256, 1, 1) and shared == 0  # ceil(640 / 256)
    assert params == ((1 << 32, ctypes.c_void_p), (2 << 32, ctypes.c_void_p), (10, ctypes.c_int64))
    launcher(1 << 32, 2 << 32, 0)  # an empty grid is not launched
    assert len(driver.launches) == 1


@needs_ptxas
def test_an_executable_on_the_fake_device_checks_allocates_and_launches(fake):
    driver, device = fake

    @relax.jit
    def f(x: relax.Tensor(("n", 8), "float32"), y: relax.Tensor(("n", 8), "float32")):
        return rnp.tanh(x * y) + 1.0

    exe = build_cuda_executable(f.trace(), graphs=GraphPolicy(max_value=64))
    x = np.ones((5, 8), np.float32)
    (out,) = exe(x, x)
    assert isinstance(out, DeviceArray) and out.shape == (5, 8) and out.dtype == np.float32
    assert driver.graphs_built == 1 and driver.graph_launches == 1  # bucket n <= 8
    exe(np.ones((6, 8), np.float32), np.ones((6, 8), np.float32))
    assert driver.graphs_built == 1 and driver.graph_launches == 2 and driver.updates >= 1
    before = driver.graph_launches
    with pytest.raises(relax.ShapeError, match="argument 'y' axis 0"):
        exe(x, np.ones((4, 8), np.float32))
    assert driver.graph_launches == before  # nothing ran
    # A device array passes in place: no copy.
    device_x = as_device_array(device, x)
    allocations = device.allocator.stats().allocations
    (out2,) = exe(device_x, device_x)
    assert out2.shape == (5, 8)
    assert device.allocator.stats().allocations <= allocations + 1
    assert "run_f" in exe.source


def test_import_relaxjax_does_not_touch_the_driver():
    code = (
        "import relaxjax, relaxjax.runtime.cuda.driver as d\n"
        "assert d.probe.cache_info().currsize == 0\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.skipif(probe().available, reason="a GPU is present")
def test_calling_a_cuda_function_without_a_gpu_raises_device_error():
    from relaxjax.runtime.cuda import reset_device

    reset_device()

    @relax.jit(target="cuda")
    def f(x: relax.Tensor(("n",), "float32")):
        return x + 1.0

    with pytest.raises(
        relax.DeviceError, match="cannot run a function compiled with target='cuda'"
    ):
        f(np.ones(3, np.float32))
    assert isinstance(relax.DeviceError("x"), RuntimeError)
    assert ".entry" in f.ptx()  # compiling still works


def test_a_misaligned_foreign_array_is_copied_to_an_aligned_buffer(fake):
    _, device = fake
    base = as_device_array(device, np.arange(8, dtype=np.float32))

    class View:  # elements 1..4 of another library's array: 4 bytes past a boundary
        __cuda_array_interface__ = {
            "shape": (4,), "typestr": "<f4", "data": (base.ptr + 4, False), "version": 3,
        }  # fmt: skip

    array = as_device_array(device, View())
    assert array.ptr % 16 == 0 and array.ptr != base.ptr + 4
    np.testing.assert_array_equal(np.asarray(array), [1, 2, 3, 4])


@needs_ptxas
def test_the_launcher_runs_the_variant_whose_condition_holds(fake):
    driver, device = fake
    module = build_cuda(variants(), CudaTarget("sm_90"), assemble_cubin=True)
    launcher = KernelLauncher(device, module.kernels["v"])
    launcher(1 << 32, 2 << 32, 5)
    launcher(1 << 32, 2 << 32, 300)
    (_, grid_a, block_a, _, _), (_, grid_b, block_b, _, _) = driver.launches
    assert (grid_a, block_a) == ((1, 1, 1), (8, 1, 1))
    assert (grid_b, block_b) == ((3, 1, 1), (128, 1, 1))


def _refusing(name: str):
    """A GPU schedule (the test binding) that refuses kernel ``name``."""
    from binding import bind_kernel

    from relaxjax.errors import ScheduleError

    def schedule(func):
        if func.name == name:
            raise ScheduleError(f"no GPU rule for {name} (test)")
        return bind_kernel(func)

    return schedule


@needs_ptxas
def test_a_heterogeneous_program_runs_host_kernels_between_copies(fake):
    from relaxjax.runtime.cuda import set_gpu_schedule

    driver, device = fake

    @relax.jit
    def f(x: relax.Tensor(("n", 8), "float32")):
        return rnp.tanh(rnp.exp(x) * 2.0)

    previous = set_gpu_schedule(_refusing("exp"))
    try:
        with pytest.warns(UserWarning, match="kernel exp runs on the host .* no GPU rule for exp"):
            exe = build_cuda_executable(f.lower())
    finally:
        set_gpu_schedule(previous)
    assert exe.program.host_kernels == ("exp",)
    assert "relaxjax.cuda.to_host" in str(exe.module)
    x = np.random.default_rng(0).standard_normal((3, 8)).astype(np.float32)
    (y,) = exe(x)
    assert isinstance(y, DeviceArray) and y.shape == (3, 8)
    # exp ran on the host and its result was copied to the device, where multiply reads it:
    expected = np.exp(x).ravel()
    found = [
        np.frombuffer(bytes(memory), np.float32)[: expected.size]
        for memory in driver.memory.values()
        if len(memory) >= expected.nbytes
    ]
    assert any(np.allclose(values, expected, rtol=1e-6) for values in found)
    # the copies ran before the recorded launches, which form one graph
    assert exe.graphs.stats.captures == 1


def test_host_kernels_run_thread_loops_serially():
    from relaxjax.runtime.cuda import host_kernel

    kernel = host_kernel(bound_elementwise(64))
    assert "thread_binding" not in str(kernel)
    x = np.random.default_rng(0).standard_normal((3, 64)).astype(np.float32)
    from relaxjax.tir import interpreter

    np.testing.assert_allclose(
        interpreter.run(kernel, x), np.exp(x) * 2 + np.maximum(x, 0.5), rtol=1e-6
    )


@needs_ptxas
def test_library_calls_run_on_the_host_between_copies(fake):
    import relaxjax.numpy.linalg as rla

    driver, _ = fake

    @relax.jit
    def f(x: relax.Tensor(("n", "n"), "float32")):
        return rla.inv(x) * 2.0

    exe = build_cuda_executable(f.trace())
    text = str(exe.module)
    assert "numpy.linalg.inv" in text and "relaxjax.cuda.to_device" in text
    x = np.array([[2.0, 0.0], [0.0, 4.0]], np.float32)
    (y,) = exe(x)
    assert y.shape == (2, 2)
    found = [np.frombuffer(bytes(m), np.float32)[:4] for m in driver.memory.values()]
    assert any(np.allclose(values, [0.5, 0, 0, 0.25]) for values in found if values.size == 4)


@needs_libdevice
def test_without_an_assembler_the_driver_gets_the_ptx(fake, monkeypatch):
    driver, device = fake
    module = build_cuda(bound_elementwise(64), CudaTarget("sm_90"), assemble_cubin=False)
    assert module.cubin is None
    loaded = []
    monkeypatch.setattr(driver, "load_module", lambda image: loaded.append(image) or "module")
    KernelLauncher(device, module.kernels["ew"])
    (image,) = loaded
    assert image.endswith(b"\0") and b".entry relaxjax_ew" in image


@needs_ptxas
def test_jit_target_cuda_runs_one_executable_for_every_n(fake):
    driver, _ = fake

    @relax.jit(target="cuda", cuda_graphs=False)
    def f(x: relax.Tensor(("n", 4), "float32")):
        return rnp.exp(x) + 1.0

    for n in (1, 5, 33):
        y = f(np.ones((n, 4), np.float32))
        assert isinstance(y, DeviceArray) and y.shape == (n, 4)
    assert f.cache_size() == 1 and driver.graphs_built == 0 and len(driver.launches) == 3
    with pytest.raises(relax.ShapeError, match="argument 'x' axis 1: expected 4, got 3"):
        f(np.ones((2, 3), np.float32))
