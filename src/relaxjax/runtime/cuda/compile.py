"""Compiling a graph program for the GPU, without a GPU (what ``Jitted.ptx`` shows).

:func:`compile_program` runs:

1. ``passes.default_pipeline("cuda")`` (legalise, fuse) when the module still calls ops,
   after dispatching the ops that exist only as library calls (LAPACK) to the host;
2. every kernel the program calls is scheduled for the GPU (:func:`gpu_schedule`: the
   default GPU rules, ``default_schedule(kernel, "cuda")``, when
   ``relaxjax.schedule.rules.gpu`` is installed; else kernels stay as they are and every
   loop nest runs on one GPU thread, with a warning) and lowered for it;
3. a kernel no GPU rule schedules, or the GPU backend cannot take, runs on the host
   instead (a ``UserWarning`` names it and why; :func:`host_kernel`), through
   ``passes.placement.place_on_host``, which makes the copies explicit in the IR;
4. one :func:`~relaxjax.backends.cuda.build_cuda` for the GPU kernels (the host ones are
   built by the executable, :mod:`.program`).
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.util
import warnings
from collections.abc import Callable
from dataclasses import dataclass

from relaxjax.backends.cuda import CudaModule, CudaTarget, build_cuda
from relaxjax.backends.cuda.codegen import emit_nvvm_module
from relaxjax.errors import LoweringError, ScheduleError
from relaxjax.ir import Function, IRModule
from relaxjax.ops.decompositions import LIBRARY_OPS
from relaxjax.passes import default_pipeline, is_op_call
from relaxjax.passes.dispatch import dispatch_library
from relaxjax.passes.placement import place_on_host
from relaxjax.passes.walk import called_kernels, reachable_functions
from relaxjax.runtime.executable import entry_function
from relaxjax.schedule.rules import default_schedule, is_scheduled
from relaxjax.tir import PrimFunc
from relaxjax.tir.expr import Call as TirCall
from relaxjax.tir.expr import PrimExpr
from relaxjax.tir.functor import StmtMutator
from relaxjax.tir.stmt import For, Stmt

__all__ = [
    "CudaProgram",
    "KernelSchedule",
    "compile_program",
    "gpu_schedule",
    "host_kernel",
    "set_gpu_schedule",
]

#: TIR intrinsics that synchronise GPU threads (no sequential host meaning of their own).
_GPU_INTRINSICS = frozenset({"syncthreads", "shfl_xor", "shfl_down"})

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
    names = list(dict.fromkeys(k for f in functions for k in called_kernels(f)))
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
