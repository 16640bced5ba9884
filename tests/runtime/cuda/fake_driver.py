"""A driver without a GPU: host memory behind fake device addresses, launches and graphs
recorded. Kernels do not run; copies do, so data round trips are real. :class:`FakeGemm`
records the cuBLAS calls it is given (in ``driver.launches``, as ``("gemm", Gemm)``)."""

from __future__ import annotations

from relaxjax.runtime.cuda.driver import Driver
from relaxjax.runtime.cuda.gemm import GemmLibrary


class FakeDriver(Driver):
    def __init__(self, capability: tuple[int, int] = (9, 0)) -> None:
        self.capability = capability
        self.memory: dict[int, bytearray] = {}
        self.next_address = 1 << 32
        self.allocs = 0
        self.frees = 0
        self.launches: list[tuple] = []
        self.graph_launches = 0
        self.graphs_built = 0
        self.updates = 0
        self.modules = 0
        self.synchronized: list[object] = []  # streams waited for, in order
        self.memsets: list[tuple[int, int]] = []
        self.captured = 0
        self.exec_updates = 0
        self._capturing: list | None = None

    def device_name(self) -> str:
        return "fake"

    def compute_capability(self) -> tuple[int, int]:
        return self.capability

    def load_module(self, cubin: bytes) -> object:
        self.modules += 1
        return ("module", len(cubin))

    def get_function(self, module: object, name: str) -> object:
        return ("function", name)

    def set_dynamic_shared(self, function: object, nbytes: int) -> None:
        pass

    def mem_alloc(self, nbytes: int) -> int:
        address = self.next_address
        self.next_address += (nbytes + 4095) // 4096 * 4096 + 4096
        self.memory[address] = bytearray(nbytes)
        self.allocs += 1
        return address

    def mem_free(self, pointer: int) -> None:
        del self.memory[pointer]
        self.frees += 1

    def _locate(self, pointer: int, nbytes: int) -> tuple[bytearray, int]:
        for base, data in self.memory.items():
            if base <= pointer and pointer + nbytes <= base + len(data):
                return data, pointer - base
        raise AssertionError(f"access of {nbytes} bytes at {pointer:#x} outside any allocation")

    def copy_to_device(self, pointer: int, host: memoryview, stream: object) -> None:
        data, offset = self._locate(pointer, host.nbytes)
        data[offset : offset + host.nbytes] = host.tobytes()

    def copy_to_host(self, host: memoryview, pointer: int, stream: object) -> None:
        data, offset = self._locate(pointer, host.nbytes)
        host[:] = data[offset : offset + host.nbytes]

    def copy_device(self, destination: int, source: int, nbytes: int, stream: object) -> None:
        src, so = self._locate(source, nbytes)
        dst, do = self._locate(destination, nbytes)
        dst[do : do + nbytes] = src[so : so + nbytes]

    def memset(self, pointer: int, nbytes: int, stream: object) -> None:
        data, offset = self._locate(pointer, nbytes)
        data[offset : offset + nbytes] = bytes(nbytes)
        self.memsets.append((pointer, nbytes))

    def stream(self) -> object:
        return "stream"

    def synchronize(self, stream: object) -> None:
        self.synchronized.append(stream)

    def launch(self, function, grid, block, shared, stream, params) -> None:
        self.record((function, grid, block, shared, params))

    def record(self, item: tuple) -> None:
        """A launch (or library call): into the graph being captured, else ``launches``."""
        (self._capturing if self._capturing is not None else self.launches).append(item)

    def graph_create(self, launches):
        self.graphs_built += 1
        return ("graph", self.graphs_built), [("node", i) for i in range(len(launches))]

    def graph_update(self, graph, node, launch) -> None:
        self.updates += 1

    def graph_launch(self, graph, stream) -> None:
        self.graph_launches += 1

    def graph_capture(self, stream, enqueue):
        self._capturing = []
        try:
            enqueue()
            return self._capturing
        finally:
            self._capturing = None

    def graph_instantiate(self, graph):
        self.captured += 1
        return ("captured", self.captured, tuple(graph))

    def graph_exec_update(self, executable, graph) -> bool:
        self.exec_updates += 1
        return len(executable[2]) == len(graph)


class FakeGemm(GemmLibrary):
    """cuBLAS that records its GEMMs in the fake driver instead of running them."""

    def __init__(self, device) -> None:
        self.driver = device.driver

    def gemm(self, gemm, stream) -> None:
        self.driver.record(("gemm", gemm))
