"""Kernel launches of one call, run directly or through a CUDA graph per bucket.

A cuda executable does not launch kernels while its generated code runs: the launches
of a call are *recorded* (:class:`Recorder`) and submitted when the call's code has
finished (all checks passed, all memory allocated). Submitting:

- the call's **bucket** is each symbol value of its launches (the i64 parameters)
  rounded up to a power of two, with the sequence of kernels launched; a value above
  the policy's ``max_value`` (or a call that had to wait for the device midway, e.g.
  to read a data-dependent size) has no bucket and runs uncaptured (launch by launch);
- the first call in a bucket builds a CUDA graph of its launches, as long as fewer than
  ``max_captures`` graphs exist (later new buckets run uncaptured; ``stats()`` says
  how many);
- a later call in the bucket replays that graph after giving the nodes whose grid or
  parameters differ (other symbol values, other buffers) their new values
  (``cuGraphExecKernelNodeSetParams``): one submission for the whole call, with the
  exact launches of this call, whatever its values within the bucket.

A call may also enqueue library work (cuBLAS GEMMs, :class:`LibraryLaunch`), which is
no kernel node the runtime could build: the graph of such a call is *captured* from
the stream (``cuStreamBeginCapture``: kernels and cuBLAS calls enqueued in order;
cuBLAS is capturable as its workspace is preallocated), on the second call of its
bucket: the first runs uncaptured, so that cuBLAS's one-time setup happens outside a
capture. A capture the driver refuses leaves the bucket uncaptured, with a warning. A
later call in the bucket replays the graph when every launch is the same; otherwise the
call is captured again and the graph updated in place (``cuGraphExecUpdate``;
re-instantiated when cuBLAS chose other kernels, ``stats.reinstantiated``).

:class:`GraphPolicy` configures it (``relax.jit(fn, target="cuda",
cuda_graphs=GraphPolicy(max_value=1 << 14))``; ``cuda_graphs=False`` never captures).
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field

from relaxjax.errors import DeviceError
from relaxjax.runtime.cuda.driver import KernelParams

__all__ = [
    "GraphPolicy",
    "GraphStats",
    "Launch",
    "LibraryLaunch",
    "LaunchGraphs",
    "Recorder",
    "bucket_of",
    "current_recorder",
    "recording",
]


@dataclass(frozen=True, slots=True)
class GraphPolicy:
    """``enabled``: capture at all; ``max_value``: the largest symbol value a bucket
    covers (buckets are powers of two up to it); ``max_captures``: graphs kept per
    executable."""

    enabled: bool = True
    max_value: int = 1 << 16
    max_captures: int = 32

    def __post_init__(self) -> None:
        if self.max_value < 1 or self.max_captures < 0:
            raise ValueError(
                f"GraphPolicy: expected max_value >= 1 and max_captures >= 0, given {self}"
            )


@dataclass(frozen=True, slots=True)
class Launch:
    """One kernel launch: function handle, grid, block, dynamic shared bytes, params,
    and which params are symbol values (the bucket is read from them)."""

    function: object
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shared: int
    params: KernelParams
    symbols: tuple[int, ...] = ()

    def as_tuple(self) -> tuple:
        return (self.function, self.grid, self.block, self.shared, self.params)

    def enqueue(self, driver: object, stream: object) -> None:
        """Launch it on ``stream``."""
        driver.launch(self.function, self.grid, self.block, self.shared, stream, self.params)  # type: ignore[attr-defined]


@dataclass(frozen=True, slots=True)
class LibraryLaunch:
    """Work a library enqueues on the stream (a cuBLAS GEMM): ``library.enqueue(call,
    stream)``. ``call`` holds every parameter (equal calls do the same work); ``symbols``
    are its sizes, part of the bucket as a kernel's symbol values are."""

    library: object
    call: object
    symbols: tuple[int, ...] = ()

    @property
    def function(self) -> object:
        return self.library

    def enqueue(self, driver: object, stream: object) -> None:
        """Enqueue it on ``stream``."""
        self.library.enqueue(self.call, stream)  # type: ignore[attr-defined]


def _ceil_power_of_two(value: int) -> int:
    return 0 if value <= 0 else 1 << (value - 1).bit_length()


def bucket_of(launches: Sequence[Launch | LibraryLaunch], policy: GraphPolicy) -> tuple | None:
    """The bucket of a call's launches, or None (see the module doc)."""
    if not policy.enabled or not launches:
        return None
    values = [v for launch in launches for v in launch.symbols]
    if any(v > policy.max_value for v in values):
        return None
    kernels = tuple(id(launch.function) for launch in launches)
    return kernels, tuple(_ceil_power_of_two(v) for v in values)


@dataclass
class GraphStats:
    """``captures``: graphs built; ``replays``: calls served by a graph; ``updated_nodes``:
    node parameter updates before replays; ``uncaptured``: calls run launch by launch
    (no bucket, over ``max_captures``, or the first call of a bucket with library work);
    ``refused_buckets``: buckets not captured because of ``max_captures`` or because the
    driver refused to capture them; ``reinstantiated``: captured graphs (calls with
    library work) that could not be updated in place and were instantiated again."""

    captures: int = 0
    replays: int = 0
    updated_nodes: int = 0
    uncaptured: int = 0
    reinstantiated: int = 0
    refused_buckets: set = field(default_factory=set)


@dataclass
class _Graph:
    """An instantiated graph: built from kernel ``nodes``, or captured (``nodes`` None)."""

    executable: object
    nodes: list[object] | None
    last: list[Launch | LibraryLaunch]


class LaunchGraphs:
    """The graphs of one executable, by bucket; submits a recorded call."""

    def __init__(self, policy: GraphPolicy) -> None:
        self.policy = policy
        self.stats = GraphStats()
        self._graphs: dict[tuple, _Graph] = {}
        self._warmed: set[tuple] = set()
        self._uncapturable: set[tuple] = set()
        self._lock = threading.Lock()

    def _ready_to_capture(self, bucket: tuple, launches: list) -> bool:
        """Kernels are captured at once; a call with library work runs once uncaptured
        first (cuBLAS loads its kernels and sets them up on its first calls, which must
        not happen inside a capture)."""
        if all(isinstance(launch, Launch) for launch in launches) or bucket in self._warmed:
            return True
        self._warmed.add(bucket)
        return False

    def _new_graph(
        self, driver: object, stream: object, bucket: tuple, launches: list
    ) -> _Graph | None:
        """The bucket's graph, or None (with a warning; the bucket then always runs
        uncaptured) when the driver refuses to capture it."""
        try:
            graph = self._graphs[bucket] = _build(driver, stream, launches)
        except DeviceError as err:
            self._refuse(bucket, err)
            return None
        self.stats.captures += 1
        return graph

    def _refuse(self, bucket: tuple, err: DeviceError) -> None:
        """The driver could not capture or update the bucket's graph: it runs uncaptured."""
        self._uncapturable.add(bucket)
        self.stats.refused_buckets.add(bucket)
        warnings.warn(
            f"a CUDA graph could not be captured, its calls run uncaptured: {err.message}",
            UserWarning,
            stacklevel=5,
        )

    def submit(
        self, device: object, launches: list[Launch | LibraryLaunch], capturable: bool
    ) -> None:
        """Run a call's launches on ``device`` (see the module doc)."""
        driver, stream = device.driver, device.stream  # type: ignore[attr-defined]
        bucket = bucket_of(launches, self.policy) if capturable else None
        with self._lock:
            graph = self._graphs.get(bucket) if bucket is not None else None
            if graph is None and bucket is not None and bucket not in self._uncapturable:
                if len(self._graphs) >= self.policy.max_captures:
                    self.stats.refused_buckets.add(bucket)
                elif self._ready_to_capture(bucket, launches):
                    graph = self._new_graph(driver, stream, bucket, launches)
                    if graph is not None:
                        driver.graph_launch(graph.executable, stream)
                        self.stats.replays += 1
                        return
            if graph is not None:
                try:
                    self._update(driver, stream, graph, launches)
                except DeviceError as err:
                    del self._graphs[bucket]
                    self._refuse(bucket, err)
                else:
                    driver.graph_launch(graph.executable, stream)
                    self.stats.replays += 1
                    return
            self.stats.uncaptured += 1
        for launch in launches:
            launch.enqueue(driver, stream)

    def _update(self, driver: object, stream: object, graph: _Graph, launches: list) -> None:
        """Give ``graph`` this call's launches: node by node, or by a new capture."""
        changed = [i for i, launch in enumerate(launches) if launch != graph.last[i]]
        if not changed:
            return
        self.stats.updated_nodes += len(changed)
        if graph.nodes is not None:
            for position in changed:
                driver.graph_update(
                    graph.executable, graph.nodes[position], launches[position].as_tuple()
                )  # type: ignore[attr-defined]
        else:
            captured = _capture(driver, stream, launches)
            if not driver.graph_exec_update(graph.executable, captured):  # type: ignore[attr-defined]
                graph.executable = driver.graph_instantiate(_capture(driver, stream, launches))  # type: ignore[attr-defined]
                self.stats.reinstantiated += 1
        graph.last[:] = launches

    @property
    def buckets(self) -> tuple:
        """The buckets captured so far."""
        return tuple(self._graphs)


def _capture(driver: object, stream: object, launches: Sequence) -> object:
    """A graph captured from the stream while ``launches`` are enqueued (not run)."""

    def enqueue() -> None:
        for launch in launches:
            launch.enqueue(driver, stream)

    return driver.graph_capture(stream, enqueue)  # type: ignore[attr-defined]


def _build(driver: object, stream: object, launches: list) -> _Graph:
    """The graph of a new bucket: of kernel nodes, or captured when a library enqueues
    work (see the module doc)."""
    if all(isinstance(launch, Launch) for launch in launches):
        executable, nodes = driver.graph_create([x.as_tuple() for x in launches])  # type: ignore[attr-defined]
        return _Graph(executable, nodes, list(launches))
    executable = driver.graph_instantiate(_capture(driver, stream, launches))  # type: ignore[attr-defined]
    return _Graph(executable, None, list(launches))


class Recorder:
    """Collects the launches of one call; ``flush()`` runs what was recorded so far
    (the device is about to be read), which makes the call uncapturable."""

    def __init__(self, device: object, graphs: LaunchGraphs) -> None:
        self.device = device
        self.graphs = graphs
        self.launches: list[Launch | LibraryLaunch] = []
        self.capturable = True

    def add(self, launch: Launch | LibraryLaunch) -> None:
        self.launches.append(launch)

    def flush(self) -> None:
        if self.launches:
            self.capturable = False
            self.graphs.submit(self.device, self.launches, False)
            self.launches = []

    def finish(self) -> None:
        """Submit the call's launches (through a graph when it has a bucket)."""
        launches, self.launches = self.launches, []
        if launches:
            self.graphs.submit(self.device, launches, self.capturable)


_state = threading.local()


def current_recorder() -> Recorder | None:
    """The recorder of the call running on this thread, if any."""
    return getattr(_state, "recorder", None)


class recording:  # noqa: N801 - used as a context manager, like a function
    """``with recording(device, graphs):`` records this thread's launches, holds released
    device memory (so no block is reused before the launches that use it are queued),
    then submits the launches."""

    def __init__(self, device: object, graphs: LaunchGraphs) -> None:
        self.recorder = Recorder(device, graphs)
        self._outer: Recorder | None = None

    def __enter__(self) -> Recorder:
        self._outer = current_recorder()
        _state.recorder = self.recorder
        self._held = self.recorder.device.allocator.hold()  # type: ignore[attr-defined]
        self._held.__enter__()
        return self.recorder

    def __exit__(self, *exc: object) -> None:
        _state.recorder = self._outer
        try:
            if exc[0] is None:
                self.recorder.finish()
        finally:
            self._held.__exit__(*exc)
