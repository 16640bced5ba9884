"""The CUDA driver API, as the few calls the runtime makes.

:class:`Driver` is the interface: the runtime (allocator, arrays, launches, graphs)
talks only to it, so that tests run all of that logic on :class:`FakeDriver`-like
objects without a GPU. :class:`CudaDriver` implements it with ``cuda.bindings.driver``
(cuda-python); every call's status is checked and a failure raises
:class:`~relaxjax.errors.DeviceError` naming the call.

Pointers and handles are plain ints (device addresses) or the bindings' handle
objects; kernel parameters are ``(value, ctypes type)`` pairs.

Without a driver (no GPU, no ``libcuda``), ``cuInit`` *raises* instead of returning an
error code: :func:`probe` catches that and reports why, and ``import relaxjax`` never
touches the driver.
"""

from __future__ import annotations

import abc
import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from relaxjax.errors import DeviceError

__all__ = ["CudaDriver", "Driver", "KernelParams", "Probe", "probe"]

#: A launch's arguments: ``(value, ctypes type)`` per kernel parameter.
KernelParams = tuple[tuple[int, type], ...]


class Driver(abc.ABC):
    """The driver calls the runtime makes (see the module doc); each raises DeviceError.
    :class:`CudaDriver` implements them with cuda-python, the tests with fakes."""

    @abc.abstractmethod
    def device_name(self) -> str: ...

    @abc.abstractmethod
    def compute_capability(self) -> tuple[int, int]: ...

    @abc.abstractmethod
    def load_module(self, image: bytes) -> object:
        """Load a cubin, or NUL-terminated PTX (compiled by the driver's JIT)."""
        ...

    @abc.abstractmethod
    def get_function(self, module: object, name: str) -> object: ...

    @abc.abstractmethod
    def set_dynamic_shared(self, function: object, nbytes: int) -> None: ...

    @abc.abstractmethod
    def mem_alloc(self, nbytes: int) -> int: ...

    @abc.abstractmethod
    def mem_free(self, pointer: int) -> None: ...

    @abc.abstractmethod
    def copy_to_device(self, pointer: int, host: memoryview, stream: object) -> None: ...

    @abc.abstractmethod
    def copy_to_host(self, host: memoryview, pointer: int, stream: object) -> None:
        """Copy into ``host`` and wait for it (the stream is synchronised)."""
        ...

    @abc.abstractmethod
    def copy_device(self, destination: int, source: int, nbytes: int, stream: object) -> None: ...

    @abc.abstractmethod
    def memset(self, pointer: int, nbytes: int, stream: object) -> None:
        """Zero ``nbytes`` at ``pointer``, in order on ``stream``."""
        ...

    @abc.abstractmethod
    def stream(self) -> object: ...

    @abc.abstractmethod
    def synchronize(self, stream: object) -> None:
        """Wait for ``stream``: ours, or a foreign one given as its handle (an int)."""
        ...

    @abc.abstractmethod
    def launch(
        self,
        function: object,
        grid: tuple[int, int, int],
        block: tuple[int, int, int],
        shared: int,
        stream: object,
        params: KernelParams,
    ) -> None: ...

    @abc.abstractmethod
    def graph_create(self, launches: Sequence[tuple]) -> tuple[object, list[object]]:
        """An instantiated graph running ``launches`` ((function, grid, block, shared, params)
        each) in order, and its kernel nodes in that order."""
        ...

    @abc.abstractmethod
    def graph_update(self, graph: object, node: object, launch: tuple) -> None:
        """Give one kernel node of an instantiated graph new grid, block and parameters."""
        ...

    @abc.abstractmethod
    def graph_launch(self, graph: object, stream: object) -> None: ...

    @abc.abstractmethod
    def graph_capture(self, stream: object, enqueue: Callable[[], None]) -> object:
        """The graph of what ``enqueue()`` puts on ``stream`` (captured, not run)."""
        ...

    @abc.abstractmethod
    def graph_instantiate(self, graph: object) -> object:
        """An executable graph of a captured one (which it consumes)."""
        ...

    @abc.abstractmethod
    def graph_exec_update(self, executable: object, graph: object) -> bool:
        """Give an executable graph the parameters of a captured graph of the same shape
        (consumed); False when the two differ in structure (instantiate it instead)."""
        ...


@dataclass(frozen=True, slots=True)
class Probe:
    """Whether a GPU can be used here, and why not."""

    available: bool
    reason: str
    device_count: int = 0


@functools.cache
def probe() -> Probe:
    """Look for a CUDA driver and device once per process (never raises)."""
    try:
        from cuda.bindings import driver
    except ImportError as err:
        return Probe(False, f"cuda-python is not installed ({err})")
    try:
        (status,) = driver.cuInit(0)
    except Exception as err:  # noqa: BLE001 - without libcuda, cuInit raises
        return Probe(False, f"no CUDA driver on this machine ({err})")
    if status != driver.CUresult.CUDA_SUCCESS:
        return Probe(False, f"cuInit failed: {_error_name(status)}")
    status, count = driver.cuDeviceGetCount()
    if status != driver.CUresult.CUDA_SUCCESS or count == 0:
        return Probe(False, "the CUDA driver reports no GPU")
    return Probe(True, "ok", count)


def _error_name(status: object) -> str:
    try:
        from cuda.bindings import driver

        _, name = driver.cuGetErrorName(status)
        return name.decode() if isinstance(name, bytes) else str(name)
    except Exception:  # noqa: BLE001
        return str(status)


class CudaDriver(Driver):
    """The real driver, on device ``ordinal``'s primary context."""

    def __init__(self, ordinal: int = 0) -> None:
        found = probe()
        if not found.available:
            raise DeviceError(f"target 'cuda' needs an NVIDIA GPU: {found.reason}")
        from cuda.bindings import driver

        self._driver = driver
        self.ordinal = ordinal
        self.device = self._call("cuDeviceGet", ordinal)
        self.context = self._call("cuDevicePrimaryCtxRetain", self.device)
        self._call("cuCtxSetCurrent", self.context)

    def _call(self, name: str, *args: object) -> object:
        result = getattr(self._driver, name)(*args)
        status, values = result[0], result[1:]
        if status != self._driver.CUresult.CUDA_SUCCESS:
            raise DeviceError(f"CUDA driver call {name} failed: {_error_name(status)}")
        if not values:
            return None
        return values[0] if len(values) == 1 else values

    def _current(self) -> None:
        self._call("cuCtxSetCurrent", self.context)

    def device_name(self) -> str:
        raw = self._call("cuDeviceGetName", 256, self.device)
        return raw.split(b"\0", 1)[0].decode()  # type: ignore[union-attr]

    def compute_capability(self) -> tuple[int, int]:
        attribute = self._driver.CUdevice_attribute
        major = self._call(
            "cuDeviceGetAttribute",
            attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
            self.device,
        )
        minor = self._call(
            "cuDeviceGetAttribute",
            attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
            self.device,
        )
        return int(major), int(minor)  # type: ignore[arg-type]

    def load_module(self, image: bytes) -> object:
        self._current()
        return self._call("cuModuleLoadData", image)

    def get_function(self, module: object, name: str) -> object:
        return self._call("cuModuleGetFunction", module, name.encode())

    def set_dynamic_shared(self, function: object, nbytes: int) -> None:
        attribute = self._driver.CUfunction_attribute
        self._call(
            "cuFuncSetAttribute",
            function,
            attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
            nbytes,
        )

    def mem_alloc(self, nbytes: int) -> int:
        self._current()
        return int(self._call("cuMemAlloc", max(nbytes, 1)))  # type: ignore[arg-type]

    def mem_free(self, pointer: int) -> None:
        self._call("cuMemFree", pointer)

    def copy_to_device(self, pointer: int, host: memoryview, stream: object) -> None:
        if host.nbytes:
            self._call("cuMemcpyHtoDAsync", pointer, _address(host), host.nbytes, stream)
            # The host buffer may be released when this returns: wait for the copy.
            self.synchronize(stream)

    def copy_to_host(self, host: memoryview, pointer: int, stream: object) -> None:
        if host.nbytes:
            self._call("cuMemcpyDtoHAsync", _address(host), pointer, host.nbytes, stream)
        self.synchronize(stream)

    def copy_device(self, destination: int, source: int, nbytes: int, stream: object) -> None:
        if nbytes:
            self._call("cuMemcpyDtoDAsync", destination, source, nbytes, stream)

    def memset(self, pointer: int, nbytes: int, stream: object) -> None:
        if nbytes:
            self._call("cuMemsetD8Async", pointer, 0, nbytes, stream)

    def stream(self) -> object:
        self._current()
        return self._call("cuStreamCreate", 0)

    def synchronize(self, stream: object) -> None:
        if isinstance(stream, int):  # a foreign stream named by its handle (CAI, DLPack)
            stream = self._driver.CUstream(stream)
        self._call("cuStreamSynchronize", stream)

    def launch(
        self,
        function: object,
        grid: tuple[int, int, int],
        block: tuple[int, int, int],
        shared: int,
        stream: object,
        params: KernelParams,
    ) -> None:
        values = tuple(v for v, _ in params)
        types = tuple(t for _, t in params)
        self._call("cuLaunchKernel", function, *grid, *block, shared, stream, (values, types), 0)

    def _node_params(self, launch: tuple) -> object:
        function, grid, block, shared, params = launch
        node = self._driver.CUDA_KERNEL_NODE_PARAMS()
        node.func = function
        node.gridDimX, node.gridDimY, node.gridDimZ = grid
        node.blockDimX, node.blockDimY, node.blockDimZ = block
        node.sharedMemBytes = shared
        node.kernelParams = (tuple(v for v, _ in params), tuple(t for _, t in params))
        return node

    def graph_create(self, launches: Sequence[tuple]) -> tuple[object, list[object]]:
        graph = self._call("cuGraphCreate", 0)
        nodes: list[object] = []
        for launch in launches:
            dependencies = nodes[-1:]
            node = self._call(
                "cuGraphAddKernelNode",
                graph,
                dependencies,
                len(dependencies),
                self._node_params(launch),
            )
            nodes.append(node)
        executable = self._call("cuGraphInstantiate", graph, 0)
        return executable, nodes

    def graph_update(self, graph: object, node: object, launch: tuple) -> None:
        self._call("cuGraphExecKernelNodeSetParams", graph, node, self._node_params(launch))

    def graph_launch(self, graph: object, stream: object) -> None:
        self._call("cuGraphLaunch", graph, stream)

    def graph_capture(self, stream: object, enqueue: Callable[[], None]) -> object:
        mode = self._driver.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL
        self._current()
        self._call("cuStreamBeginCapture", stream, mode)
        try:
            enqueue()
        except BaseException:
            status, graph = self._driver.cuStreamEndCapture(stream)
            if status == self._driver.CUresult.CUDA_SUCCESS and graph is not None:
                self._driver.cuGraphDestroy(graph)
            raise
        return self._call("cuStreamEndCapture", stream)

    def graph_instantiate(self, graph: object) -> object:
        try:
            return self._call("cuGraphInstantiate", graph, 0)
        finally:
            self._driver.cuGraphDestroy(graph)

    def graph_exec_update(self, executable: object, graph: object) -> bool:
        try:
            status, _ = self._driver.cuGraphExecUpdate(executable, graph)
        finally:
            self._driver.cuGraphDestroy(graph)
        return status == self._driver.CUresult.CUDA_SUCCESS


def _address(host: memoryview) -> int:
    """The address of a host buffer (read-only ones too: constants are)."""
    import numpy as np

    return int(np.frombuffer(host, dtype=np.uint8).ctypes.data)
