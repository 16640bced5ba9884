"""The executable of a graph function on a GPU (``target="cuda"``).

Compiling (:func:`compile_program`, no GPU needed; what ``Jitted.ptx`` shows):

1. ``passes.default_pipeline("cuda")`` (legalise, fuse) when the module still calls ops;
2. every kernel the program calls is scheduled for the GPU (:func:`gpu_schedule`: the
   default GPU rules, ``default_schedule(kernel, "cuda")``, when
   ``relaxjax.schedule.rules.gpu`` is installed; else kernels stay as they are and every
   loop nest runs on one GPU thread, with a warning) and lowered for it;
3. a kernel no GPU rule schedules, or the GPU backend cannot take, runs on the host
   instead (a ``UserWarning`` names it and why; :func:`host_kernel`), through
   ``passes.placement.place_on_host``, which makes the copies explicit in the IR;
4. one :func:`~relaxjax.backends.cuda.build_cuda` for the GPU kernels, one
   ``backends.build`` for the host ones.

Running (:func:`build_cuda_executable`, needs a GPU): the generated code of
:class:`CudaProgramWriter` is that of the CPU runtime (:mod:`relaxjax.runtime.program`:
argument checks, shape phase, segments) with the data on the device: arguments that are
GPU arrays (``__cuda_array_interface__`` or CUDA ``__dlpack__``) are used in place, numpy
arguments are copied in after the checks, constants are uploaded once, results and the
per-call arena are device memory from the caching allocator, kernel launches are recorded
and submitted at the end of the call (directly or through a CUDA graph per bucket,
:mod:`.graphs`), and the outputs are :class:`~.array.DeviceArray` s. Host kernels run on
numpy arrays between explicit copies.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.util
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from relaxjax import backends, dtypes
from relaxjax.backends.cuda import CudaModule, CudaTarget, build_cuda
from relaxjax.backends.cuda.codegen import emit_nvvm_module
from relaxjax.errors import LoweringError, ScheduleError
from relaxjax.ir import CALL_EXTERN, CALL_TIR, CALL_TIR_INPLACE, Binding, Call, Function, IRModule
from relaxjax.ops.decompositions import LIBRARY_OPS
from relaxjax.passes import default_pipeline, is_op_call
from relaxjax.passes.dispatch import dispatch_library
from relaxjax.passes.placement import TO_DEVICE, TO_HOST, place_on_host
from relaxjax.passes.walk import called_kernels, reachable_functions
from relaxjax.runtime.cuda.array import as_device_array, device_empty, is_gpu_array
from relaxjax.runtime.cuda.device import Device, require_device
from relaxjax.runtime.cuda.graphs import GraphPolicy, LaunchGraphs, current_recorder, recording
from relaxjax.runtime.cuda.launcher import KernelLauncher
from relaxjax.runtime.executable import Executable, entry_function
from relaxjax.runtime.memory import ALIGNMENT, plan_memory
from relaxjax.runtime.program import KernelHandle, ProgramWriter, _Launch
from relaxjax.runtime.values import Storage, Value
from relaxjax.schedule.rules import default_schedule, is_scheduled
from relaxjax.tir import PrimFunc
from relaxjax.tir.expr import Call as TirCall
from relaxjax.tir.expr import PrimExpr
from relaxjax.tir.functor import StmtMutator
from relaxjax.tir.stmt import For, Stmt

#: TIR intrinsics that synchronise GPU threads (no sequential host meaning of their own).
_GPU_INTRINSICS = frozenset({"syncthreads", "shfl_xor", "shfl_down"})

__all__ = [
    "CudaExecutable",
    "CudaProgram",
    "CudaProgramWriter",
    "build_cuda_executable",
    "compile_program",
    "gpu_schedule",
    "set_gpu_schedule",
]

KernelSchedule = Callable[[PrimFunc], PrimFunc]
_schedule_override: KernelSchedule | None = None


def set_gpu_schedule(schedule: KernelSchedule | None) -> KernelSchedule | None:
    """Use ``schedule`` (a kernel -> kernel function; ``ScheduleError`` or
    ``LoweringError`` when it cannot schedule a kernel for the GPU) as the GPU schedule
    of every cuda program compiled from now on (None: the default); returns the
    previous one."""
    global _schedule_override
    previous, _schedule_override = _schedule_override, schedule
    return previous


def gpu_schedule() -> KernelSchedule | None:
    """The GPU schedule in use (see the module doc); None when there is none."""
    if _schedule_override is not None:
        return _schedule_override
    if importlib.util.find_spec("relaxjax.schedule.rules.gpu") is None:
        return None
    return functools.partial(default_schedule, target="cuda")


@dataclass(frozen=True, slots=True)
class CudaProgram:
    """A module compiled for the GPU: the module as it runs (scheduled, host kernels
    placed), its entry, the GPU module (None when every kernel runs on the host), and
    the names of the host kernels."""

    module: IRModule
    function: Function
    cuda: CudaModule | None
    host_kernels: tuple[str, ...]

    @property
    def ptx(self) -> str:
        """The PTX of the GPU kernels ('' when there are none)."""
        return self.cuda.ptx if self.cuda is not None else ""


def _needs_legalisation(mod: IRModule) -> bool:
    return any(
        is_op_call(binding.value)
        for function in mod.graph_functions().values()
        for block in function.body.blocks
        for binding in block.bindings
    )


def compile_program(
    mod: IRModule,
    target: CudaTarget | None = None,
    entry: str | None = None,
    compiler: str = "auto",
    assemble: bool | str = "auto",
) -> CudaProgram:
    """Compile ``mod`` for the GPU (steps 1-4 of the module doc); no GPU needed."""
    target = target or CudaTarget()
    if _needs_legalisation(mod):
        # Ops that exist only as library calls (LAPACK factorisations) run on the host.
        mod = default_pipeline("cuda")(dispatch_library(mod, LIBRARY_OPS))
    schedule = gpu_schedule()
    if schedule is None:
        warnings.warn(
            "no GPU schedule rules are installed (relaxjax.schedule.rules.gpu): every "
            "kernel's loop nests run on a single GPU thread",
            UserWarning,
            stacklevel=3,
        )
    function = entry_function(mod, entry)
    functions = reachable_functions(mod, function.name)
    if len(functions) > 1:
        raise LoweringError(
            f"function {function.name}: target 'cuda' runs one graph function; it calls "
            f"{', '.join(f.name for f in functions[:-1])} (use relax.jit(..., inline=True) "
            "for the callees)"
        )
    names = list(dict.fromkeys(called_kernels(function)))
    placed, host = {}, []
    for name in names:
        kernel, on_device = _place_kernel(mod[name], name, schedule, target)
        placed[name] = kernel
        if not on_device:
            host.append(name)
    mod = place_on_host(IRModule({**dict(mod.functions), **placed}), host)
    function = entry_function(mod, function.name)
    device_names = [n for n in names if n not in host]
    cuda = None
    if device_names:
        cuda = build_cuda(
            {n: mod[n] for n in device_names}, target, compiler, assemble_cubin=assemble
        )
    return CudaProgram(mod, function, cuda, tuple(host))


def _place_kernel(
    kernel: PrimFunc, name: str, schedule: KernelSchedule | None, target: CudaTarget
) -> tuple[PrimFunc, bool]:
    """The kernel as it runs, and whether on the GPU: scheduled and lowered for it, or
    (when either step refuses, with a warning) made ready for the CPU."""
    try:
        scheduled = schedule(kernel) if schedule is not None else kernel
        emit_nvvm_module({name: scheduled}, target)
        return scheduled, True
    except (ScheduleError, LoweringError) as err:
        warnings.warn(
            f"kernel {name} runs on the host (with copies to and from the GPU): {err.message}",
            UserWarning,
            stacklevel=4,
        )
    return host_kernel(kernel), False


def host_kernel(kernel: PrimFunc) -> PrimFunc:
    """``kernel`` for the CPU: scheduled by the CPU rules when unscheduled; a kernel
    scheduled for the GPU runs its thread loops as serial loops (same meaning), which
    ``LoweringError`` refuses when it synchronises threads (barriers, shuffles)."""
    body = _Unbind(kernel.name).visit_stmt(kernel.body)
    if body is not kernel.body:
        return kernel.with_body(body)
    return kernel if is_scheduled(kernel) else default_schedule(kernel, "llvm")


class _Unbind(StmtMutator):
    """Thread-bound loops as serial ones (refusing GPU intrinsics)."""

    def __init__(self, kernel: str) -> None:
        super().__init__()
        self.kernel = kernel

    def visit_For(self, stmt: For) -> Stmt:
        body = self.visit_stmt(stmt.body)
        if stmt.kind != "thread_binding":
            return stmt if body is stmt.body else dataclasses.replace(stmt, body=body)
        return For(stmt.var, stmt.start, stmt.extent, "serial", body, stmt.annotations)

    def visit_Call(self, expr: TirCall) -> PrimExpr:
        if expr.intrinsic in _GPU_INTRINSICS:
            raise LoweringError(
                f"kernel {self.kernel} cannot run on the host: it synchronises GPU threads "
                f"({expr.intrinsic})"
            )
        return super().visit_Call(expr)


class CudaExecutable(Executable):
    """An executable whose data lives on a GPU (see the module doc): ``program`` (the
    :class:`CudaProgram`), ``graphs`` (its CUDA graphs and their ``stats``), ``device``."""

    __slots__ = ("device", "graphs", "program")


def build_cuda_executable(
    mod: IRModule,
    entry: str | None = None,
    graphs: GraphPolicy | bool = True,
    compiler: str = "auto",
) -> CudaExecutable:
    """Compile ``mod`` for this machine's GPU and make its executable.

    Raises:
        DeviceError: there is no GPU (the message says how to inspect the program anyway).
        LoweringError: the program cannot be compiled.
    """
    device = require_device()
    target = CudaTarget(device.arch)
    program = compile_program(mod, target, entry, compiler, assemble="auto")
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
    writer = CudaProgramWriter(program.function, handles, launchers, device)
    inner = writer.write()
    run = _wrapped(inner, device, launch_graphs)
    executable = CudaExecutable.create(module, program.function, compiled, run)
    executable.device = device
    executable.graphs = launch_graphs
    executable.program = program
    return executable  # type: ignore[return-value]


def _wrapped(
    inner: Callable[..., tuple], device: Device, graphs: LaunchGraphs
) -> Callable[..., tuple]:
    def run(*args: object) -> tuple:
        args = tuple(as_device_array(device, a) if is_gpu_array(a) else a for a in args)
        with recording(device, graphs):
            return inner(*args)

    run.__source__ = inner.__source__  # type: ignore[attr-defined]
    return run


class CudaProgramWriter(ProgramWriter):
    """The generated code of a cuda executable (see the module doc)."""

    def __init__(
        self,
        function: Function,
        kernels: Mapping[str, KernelHandle],
        launchers: Mapping[str, KernelLauncher],
        device: Device,
    ) -> None:
        self.device = device
        self.launchers = dict(launchers)
        self.on_host: set[Storage] = set()
        super().__init__(function, kernels, None)
        self._upload = self.writer.constant(functools.partial(as_device_array, device), "to_device")
        self._device_empty = self.writer.constant(functools.partial(device_empty, device), "dempty")

    # -- arguments, constants, scalars: on the device -------------------------------------------

    def _emit_params(self) -> list[str]:
        params = super()._emit_params()
        for param in self.function.params:
            value = self.values.get(param)
            if isinstance(value, Value):
                self.writer.line(f"{value.ref} = {self._upload}({value.ref})")
        return params

    def _constant(self, array: np.ndarray, info: object) -> Value:
        uploaded = as_device_array(self.device, array)
        name = self.writer.constant(uploaded, "const")
        shape = tuple(str(d) for d in array.shape)
        return Value(info, shape, name, True, self._new_storage("constant"))  # type: ignore[arg-type]

    def _prim_value(self, prim: object, where: str) -> Value:
        value = super()._prim_value(prim, where)  # type: ignore[arg-type]
        if value.storage.kind == "scalar":
            self.writer.line(f"{value.ref} = {self._upload}({value.ref})")
        return value

    # -- where values live --------------------------------------------------------------------

    def _binding(self, binding: object) -> None:
        super()._binding(binding)  # type: ignore[arg-type]
        if not isinstance(binding, Binding) or not isinstance(binding.value, Call):
            return
        call = binding.value
        if call.op is CALL_EXTERN:  # a copy to the host, or a library call (on the host)
            on_host = call.args[0].symbol != TO_DEVICE  # type: ignore[union-attr]
        elif call.op is CALL_TIR or call.op is CALL_TIR_INPLACE:
            on_host = call.args[0].name not in self.launchers  # type: ignore[union-attr]
        else:
            on_host = False
        if on_host:
            value = self.values[binding.var]
            for leaf in value if isinstance(value, tuple) else (value,):
                self.on_host.add(leaf.storage)
                self.host_read.add(leaf.storage)

    def _call_function(self, call: object, binding: object, where: str) -> object:
        raise LoweringError(f"{where}: target 'cuda' does not run calls of graph functions yet")

    def _control(self, call: object, binding: object, where: str) -> object:
        raise LoweringError(f"{where}: target 'cuda' does not run control flow (relaxjax.lax) yet")

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

    # -- launches and copies --------------------------------------------------------------------

    def _device_ref(self, value: Value) -> str:
        current = self.storage_values.get(value.storage, value)
        return f"{current.ref}.ptr" if current.by_object else current.ref

    def _emit_launch(self, launch: _Launch) -> None:
        if launch.kernel in self.launchers:
            call = self.writer.constant(self.launchers[launch.kernel], f"k_{launch.kernel}")
            refs = [self._device_ref(v) for v in launch.buffers]
            self.writer.line(f"{call}({', '.join(refs + launch.symbols)})")
            return
        if launch.kernel in (TO_HOST, TO_DEVICE):
            self._emit_copy(launch)
            return
        super()._emit_launch(launch)

    def _emit_copy(self, launch: _Launch) -> None:
        source, destination = launch.buffers
        if launch.kernel == TO_HOST:
            helper = self.writer.constant(functools.partial(_copy_to_host, self.device), "to_host")
            current = self.storage_values.get(destination.storage, destination)
            self.writer.line(f"{helper}({current.ref}, {self._device_ref(source)})")
        else:
            helper = self.writer.constant(functools.partial(_copy_to_device, self.device), "to_dev")
            current = self.storage_values.get(source.storage, source)
            self.writer.line(f"{helper}({self._device_ref(destination)}, {current.ref})")


def _copy_to_host(device: Device, destination: np.ndarray, source: int) -> None:
    recorder = current_recorder()
    if recorder is not None:
        recorder.flush()  # the kernels writing the source run first
    if destination.nbytes:
        device.driver.copy_to_host(memoryview(destination).cast("B"), source, device.stream)


def _copy_to_device(device: Device, destination: int, source: np.ndarray) -> None:
    recorder = current_recorder()
    if recorder is not None:
        recorder.flush()  # kernels recorded so far may read memory the copy reuses
    host = np.require(source, requirements="C")
    if host.nbytes:
        device.driver.copy_to_device(destination, memoryview(host).cast("B"), device.stream)
