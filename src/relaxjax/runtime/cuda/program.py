"""The executable of a graph function on a GPU (``target="cuda"``).

:func:`build_cuda_executable` compiles the module (:func:`.compile.compile_program`)
for this machine's GPU, builds its host kernels for the CPU, and generates its code
with :class:`CudaProgramWriter`: that of the CPU runtime (:mod:`relaxjax.runtime.program`:
argument checks, shape phase, segments) with the data on the device. Arguments that are
GPU arrays (``__cuda_array_interface__`` or CUDA ``__dlpack__``) are used in place, numpy
arguments are copied in after the checks, constants are uploaded once, results and the
per-call arena are device memory from the caching allocator, kernel launches and
cuBLAS calls (``call_extern`` of ``cublas.matmul*``, :mod:`.gemm`: device pointers and
shapes) are recorded and submitted at the end of the call (directly or through a CUDA
graph per bucket, :mod:`.graphs`), and the outputs are :class:`~.array.DeviceArray` s.
Host kernels and host library calls run on numpy arrays between the explicit copies of
the IR.
"""

from __future__ import annotations

import functools
import time
import warnings
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from relaxjax import backends, dtypes
from relaxjax.backends.cuda import CudaTarget
from relaxjax.errors import DeviceError, LoweringError
from relaxjax.ir import (
    CALL_EXTERN,
    CALL_TIR,
    CALL_TIR_INPLACE,
    Binding,
    Call,
    Function,
    IRModule,
)
from relaxjax.passes.dispatch_cuda import is_device_library
from relaxjax.passes.placement import TO_DEVICE, TO_HOST
from relaxjax.passes.walk import reachable_functions
from relaxjax.runtime.calls import CalleeWriter
from relaxjax.runtime.control import ArrayOps
from relaxjax.runtime.cuda.array import (
    DeviceArray,
    as_device_array,
    copy_device,
    device_empty,
    host_bytes,
    is_gpu_array,
)
from relaxjax.runtime.cuda.compile import CudaProgram, compile_program
from relaxjax.runtime.cuda.device import Device, require_device
from relaxjax.runtime.cuda.gemm import MatmulCall
from relaxjax.runtime.cuda.graphs import GraphPolicy, LaunchGraphs, current_recorder, recording
from relaxjax.runtime.cuda.launcher import KernelLauncher
from relaxjax.runtime.executable import Executable
from relaxjax.runtime.memory import ALIGNMENT, plan_memory
from relaxjax.runtime.profiling import Profile, ProfilingBuild, profile_call
from relaxjax.runtime.program import CalleeCode, KernelHandle, ProgramWriter, _Launch
from relaxjax.runtime.recorder import Recorder
from relaxjax.runtime.values import Storage, Value

__all__ = ["CudaExecutable", "CudaProgramWriter", "build_cuda_executable"]


class CudaExecutable(Executable):
    """An executable whose data lives on a GPU (see the module doc): ``program`` (the
    :class:`CudaProgram`), ``graphs`` (its CUDA graphs and their ``stats``), ``device``."""

    __slots__ = ("device", "graphs", "program", "launchers")

    def profile(self, *args: object) -> Profile:
        """Run once on the flat arguments, timing every launch on the GPU: each kernel is
        launched directly (no CUDA graph) and the device is synchronised around it, so a
        row is the kernel's time on the device plus its launch. The profiling build is
        written on the first call."""
        if self._profiling is None:
            recorder = Recorder()
            recorder.clock = _synchronizing_clock(self.device)
            callees = _write_callees(
                self.program, self._handles, self.launchers, self.device, recorder
            )
            writer = CudaProgramWriter(
                self.function, self._handles, self.launchers, self.device, recorder, callees
            )
            self._profiling = ProfilingBuild(_on_device(writer.write(), self.device), recorder)
        return profile_call(self._profiling, self.function.name, args)


def build_cuda_executable(
    mod: IRModule,
    entry: str | None = None,
    graphs: GraphPolicy | bool = True,
    compiler: str = "auto",
    library: bool = True,
) -> CudaExecutable:
    """Compile ``mod`` for this machine's GPU and make its executable. With ``library``
    (the default) matmuls run in cuBLAS (``passes.dispatch_cuda``); when cuBLAS cannot
    be loaded or initialised here, a warning says why and they are generated kernels.

    Raises:
        DeviceError: there is no GPU (the message says how to inspect the program anyway).
        LoweringError: the program cannot be compiled.
    """
    device = require_device()
    target = CudaTarget(device.arch)
    if library:
        library = _cublas_usable(device)
    program = compile_program(mod, target, entry, compiler, assemble="auto", library=library)
    policy = graphs if isinstance(graphs, GraphPolicy) else GraphPolicy(enabled=bool(graphs))
    launch_graphs = LaunchGraphs(policy)
    module = program.module
    handles: dict[str, KernelHandle] = {}
    launchers: dict[str, KernelLauncher] = {}
    if program.cuda is not None:
        for name, kernel in program.cuda.kernels.items():
            launchers[name] = KernelLauncher(device, kernel)
            handles[name] = KernelHandle(kernel.func, python=launchers[name])
    compiled: dict[str, object] = {"cuda": program.cuda}
    if program.host_kernels:
        built = backends.build({n: module[n] for n in program.host_kernels}, target="llvm")
        built = built if isinstance(built, Mapping) else {program.host_kernels[0]: built}
        for name, kernel in built.items():
            handles[name] = KernelHandle(kernel.func, int(kernel.address))
            compiled[name] = kernel
    callees = _write_callees(program, handles, launchers, device)
    writer = CudaProgramWriter(program.function, handles, launchers, device, None, callees)
    inner = writer.write()
    run = _wrapped(inner, device, launch_graphs)
    executable = CudaExecutable.create(module, program.function, compiled, run, handles=handles)
    executable.device = device
    executable.graphs = launch_graphs
    executable.launchers = launchers
    executable.program = program
    return executable  # type: ignore[return-value]


def _cublas_usable(device: Device) -> bool:
    """Whether the device's cuBLAS works (made now); else a warning saying why."""
    try:
        device.matmul_library()
    except DeviceError as err:
        warnings.warn(
            f"matmuls run as generated kernels, not in cuBLAS: {err.message}",
            UserWarning,
            stacklevel=4,
        )
        return False
    return True


def _write_callees(
    program: CudaProgram,
    handles: Mapping[str, KernelHandle],
    launchers: Mapping[str, KernelLauncher],
    device: Device,
    recorder: Recorder | None = None,
) -> dict[str, CalleeCode]:
    """The generated code of the graph functions the entry calls (other jitted functions,
    regions of control flow), callees first."""
    callees: dict[str, CalleeCode] = {}
    for function in reachable_functions(program.module, program.function.name)[:-1]:
        writer = CudaCalleeWriter(function, handles, launchers, device, recorder, callees)
        callees[function.name] = CalleeCode(function, writer.write())
    return callees


def _synchronizing_clock(device: Device) -> Callable[[], int]:
    """A nanosecond clock that first waits for the device's stream (profiling)."""
    clock = time.perf_counter_ns

    def synchronized() -> int:
        device.synchronize()
        return clock()

    return synchronized


def _on_device(inner: Callable[..., tuple], device: Device) -> Callable[..., tuple]:
    """``inner`` on GPU arrays used in place, launching directly; returns when done."""

    def run(*args: object) -> tuple:
        args = tuple(as_device_array(device, a) if is_gpu_array(a) else a for a in args)
        outputs = inner(*args)
        device.synchronize()
        return outputs

    return run


def _wrapped(
    inner: Callable[..., tuple], device: Device, graphs: LaunchGraphs
) -> Callable[..., tuple]:
    def run(*args: object) -> tuple:
        args = tuple(as_device_array(device, a) if is_gpu_array(a) else a for a in args)
        with recording(device, graphs):
            return inner(*args)

    run.__source__ = inner.__source__  # type: ignore[attr-defined]
    return run


class _OnDevice(ProgramWriter):
    """What the generated code of a GPU program does differently from the CPU's (the base
    of the entry's writer and of the callee writer, :mod:`relaxjax.runtime.calls`): data
    in device memory, kernels launched through their launchers, explicit copies, and
    control-flow runners that copy and slice device arrays."""

    def __init__(
        self,
        function: Function,
        kernels: Mapping[str, KernelHandle],
        launchers: Mapping[str, KernelLauncher],
        device: Device,
        recorder: Recorder | None = None,
        callees: Mapping[str, CalleeCode] | None = None,
    ) -> None:
        self.device = device
        self.launchers = dict(launchers)
        self.on_host: set[Storage] = set()
        self.control_ops = device_array_ops(device)
        super().__init__(function, kernels, callees, recorder)
        writer = self.writer
        self._upload = writer.constant(functools.partial(as_device_array, self.device), "to_device")
        self._device_empty = writer.constant(functools.partial(device_empty, self.device), "dempty")
        self._device_view = writer.constant(functools.partial(_arena_view, self.device), "dview")

    # -- constants and scalars: on the device ---------------------------------------------------

    def _constant(self, array: np.ndarray, info: object) -> Value:
        uploaded = as_device_array(self.device, array)
        name = self.writer.constant(uploaded, "const")
        shape = tuple(str(d) for d in array.shape)
        return Value(info, shape, name, True, self._new_storage("constant"))

    def _prim_value(self, prim: object, where: str) -> Value:
        value = super()._prim_value(prim, where)
        if value.storage.kind == "scalar":
            self.writer.line(f"{value.ref} = {self._upload}({value.ref})")
        return value

    # -- where values live --------------------------------------------------------------------

    def _binding(self, binding: object) -> None:
        super()._binding(binding)
        if not isinstance(binding, Binding) or not isinstance(binding.value, Call):
            return
        call = binding.value
        if call.op is CALL_EXTERN:  # a copy, a host library call, or cuBLAS (on the device)
            symbol = call.args[0].symbol  # type: ignore[union-attr]
            on_host = symbol != TO_DEVICE and not is_device_library(symbol)
        elif call.op is CALL_TIR or call.op is CALL_TIR_INPLACE:
            on_host = call.args[0].name not in self.launchers
        else:
            on_host = False
        if on_host:
            value = self.values[binding.var]
            for leaf in value if isinstance(value, tuple) else (value,):
                self.on_host.add(leaf.storage)
                self.host_read.add(leaf.storage)

    def _extern_function(self, symbol: str, call: Call, where: str) -> Callable[..., None]:
        if not is_device_library(symbol):
            return super()._extern_function(symbol, call, where)
        return MatmulCall(self.device, symbol, call.info.dtype)  # type: ignore[union-attr]

    def _place(self, value: Value) -> None:
        if value.storage in self.on_host:
            super()._place(value)
            return
        dtype = self.writer.constant(dtypes.to_numpy(value.info.dtype), value.info.dtype)
        self.writer.line(f"{value.ref} = {self._device_empty}({value.shape_code}, {dtype})")

    def _allocate_arena(self, index: int, temps: Sequence[Value], requests: Sequence) -> None:
        suffix = str(index) if index else ""
        arena, base = f"arena{suffix}", f"base{suffix}"
        plan = plan_memory(requests)
        total = self.symbols.code(plan.symbolic_bytes, "the memory plan")
        runtime_offsets: dict[int, str] = {}
        for position, value in enumerate(temps):
            slot = plan.slot_of[position]
            if plan.slot_sizes[slot] is None:
                local = self.writer.fresh("z")
                size = " * ".join([*value.shape, str(dtypes.itemsize(value.info.dtype))])
                self.writer.line(f"{local} = {total}")
                total = f"{local} + ({size} + {ALIGNMENT - 1}) // {ALIGNMENT} * {ALIGNMENT}"
                runtime_offsets[slot] = local
        u8 = self.writer.constant(np.dtype(np.uint8), "u8")
        self.writer.line(f"{arena} = {self._device_empty}(({total} + {ALIGNMENT},), {u8})")
        self.writer.line(f"{base} = ({arena}.ptr + {ALIGNMENT - 1}) & -{ALIGNMENT}")
        for position, value in enumerate(temps):
            slot = plan.slot_of[position]
            offset = runtime_offsets.get(slot) or self.symbols.code(plan.offsets[slot], "offsets")
            self.writer.line(f"{value.ref} = {base} + {offset}")
            self.arena_of[value.storage] = (arena, f"{arena}.ptr")
            self.storage_values[value.storage] = Value(
                value.info, value.shape, value.ref, False, value.storage
            )

    def _array_code(self, value: Value) -> str:
        """Source of the array holding ``value`` as a runner or a called function takes it:
        a DeviceArray (an arena slice viewed as one), or a numpy array on the host."""
        if value.storage in self.on_host:
            return super()._array_code(value)
        if value.view is not None:
            raise LoweringError(f"target 'cuda' has no strided views (value {value.ref})")
        current = self.storage_values.get(value.storage, value)
        if current.by_object:
            return current.ref
        arena, _ = self.arena_of[value.storage]
        dtype = self.writer.constant(dtypes.to_numpy(value.info.dtype), value.info.dtype)
        local = self.writer.fresh("v")
        self.writer.line(
            f"{local} = {self._device_view}({arena}, {current.ref}, {value.shape_code}, {dtype})"
        )
        return local

    # -- launches and copies --------------------------------------------------------------------

    def _device_ref(self, value: Value) -> str:
        current = self.storage_values.get(value.storage, value)
        return f"{current.ref}.ptr" if current.by_object else current.ref

    def _emit_launch(self, launch: _Launch) -> None:
        if launch.kernel in self.launchers:
            call = self.writer.constant(self.launchers[launch.kernel], f"k_{launch.kernel}")
            refs = [self._device_ref(v) for v in launch.buffers]
            timed = self._start_timing(launch)
            self.writer.line(f"{call}({', '.join(refs + launch.symbols)})")
            if timed is not None:
                self._stop_timing(timed, launch.symbols)
            return
        if launch.kernel in (TO_HOST, TO_DEVICE):
            self._emit_copy(launch)
            return
        if is_device_library(launch.kernel):
            self._emit_device_library(launch)
            return
        super()._emit_launch(launch)

    def _emit_device_library(self, launch: _Launch) -> None:
        """``call(*pointers, *shapes)``: a cuBLAS call on device memory."""
        call = self.writer.constant(launch.extern, "cublas")
        refs = [self._device_ref(v) for v in launch.buffers]
        shapes = [v.shape_code for v in launch.buffers]
        timed = self._start_timing(launch)
        self.writer.line(f"{call}({', '.join(refs + shapes)})")
        if timed is not None:
            self._stop_timing(timed, shapes)

    def _emit_copy(self, launch: _Launch) -> None:
        source, destination = launch.buffers
        writer = self.writer
        if launch.kernel == TO_HOST:
            helper = writer.constant(functools.partial(_copy_to_host, self.device), "to_host")
            current = self.storage_values.get(destination.storage, destination)
            writer.line(f"{helper}({current.ref}, {self._device_ref(source)})")
        else:
            helper = writer.constant(functools.partial(_copy_to_device, self.device), "to_dev")
            current = self.storage_values.get(source.storage, source)
            writer.line(f"{helper}({self._device_ref(destination)}, {current.ref})")


class CudaProgramWriter(_OnDevice):
    """The generated code of a cuda executable (see the module doc)."""

    def _emit_params(self) -> list[str]:
        params = super()._emit_params()
        for param in self.function.params:
            value = self.values.get(param)
            if isinstance(value, Value):
                self.writer.line(f"{value.ref} = {self._upload}({value.ref})")
        return params


class CudaCalleeWriter(_OnDevice, CalleeWriter):
    """The generated function of a graph function that a GPU program calls (another
    jitted function, or a region of control flow), on device arrays: see
    :mod:`relaxjax.runtime.calls`."""

    def _place(self, value: Value) -> None:
        destination = self._destinations.get(value.storage)
        if destination is None:
            super()._place(value)
            return
        dtype = self.writer.constant(dtypes.to_numpy(value.info.dtype), value.info.dtype)
        self.writer.line(f"if {destination} is None:")
        self.writer.line(f"{destination} = {self._device_empty}({value.shape_code}, {dtype})", 2)
        self.writer.line(f"{value.ref} = {destination}")

    def _copyto(self) -> str:
        return self.writer.constant(copy_device, "dcopyto")


def _arena_view(
    device: Device, arena: DeviceArray, pointer: int, shape: tuple[int, ...], dtype: np.dtype
) -> DeviceArray:
    """The arena's slice at ``pointer`` as a DeviceArray (it keeps the arena alive)."""
    return DeviceArray(device, pointer, shape, dtype, arena)


def device_array_ops(device: Device) -> ArrayOps:
    """How control-flow runners copy and slice device arrays (the loop runs on the host,
    the regions' kernels on the GPU)."""

    def index(value: int, dtype: np.dtype) -> DeviceArray:
        recorder = current_recorder()
        if recorder is not None:
            recorder.flush()  # the memory may be a previous step's index, still to be read
        return as_device_array(device, np.array(value, dtype))

    def copyto(destination: DeviceArray, source: DeviceArray) -> None:
        copy_device(destination, source)

    return ArrayOps(
        copy=DeviceArray.copy,  # type: ignore[arg-type]
        copyto=copyto,  # type: ignore[arg-type]
        row=DeviceArray.row,  # type: ignore[arg-type]
        index=index,
        aligned=lambda array: array.ptr % ALIGNMENT == 0,  # type: ignore[attr-defined]
    )


def _copy_to_host(device: Device, destination: np.ndarray, source: int) -> None:
    recorder = current_recorder()
    if recorder is not None:
        recorder.flush()  # the kernels writing the source run first
    if destination.nbytes:
        device.driver.copy_to_host(host_bytes(destination), source, device.stream)


def _copy_to_device(device: Device, destination: int, source: np.ndarray) -> None:
    recorder = current_recorder()
    if recorder is not None:
        recorder.flush()  # kernels recorded so far may read memory the copy reuses
    host = np.require(source, requirements="C")
    if host.nbytes:
        device.driver.copy_to_device(destination, host_bytes(host), device.stream)
