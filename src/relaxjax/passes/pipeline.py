"""Pipelines: a named list of passes run in order, each a pure ``module -> module``.

``default_pipeline(target)`` lowers a traced module to kernels::

    eliminate_dead_code   drop unused bindings before lowering them
    fuse_attention        hand-written causal attention -> the fused dot_product_attention op
    dispatch_library      (llvm, library=True only) matmul -> call_extern of BLAS
    dispatch_cublas       (cuda, library=True only) matmul -> call_extern of cuBLAS
    make_views            (llvm) layout ops that only move elements -> call_view (no copy)
    inplace_updates       an update of a dead, owned operand -> call_tir_inplace
    legalize              every op call -> call_tir of a shape-generic kernel (reading
                          view operands through strides: strided_operands)
    dedup_kernels         identical kernels stored once
    eliminate_dead_code   drop kernels nothing calls any more
    fuse_ops              elementwise DAGs; norms/softmax with prologue and epilogue -> one kernel
    ScheduleKernels       (llvm) every kernel scheduled by the default CPU rules

``relax.jit`` (through ``runtime.build_executable``) runs it with ``library=True``.

``Pipeline(passes, verify=True)`` runs the well-formedness checker after every pass
(tests do), naming the pass whose output is malformed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from relaxjax.errors import VerifyError
from relaxjax.ir import IRModule, verify
from relaxjax.passes.attention import fuse_attention
from relaxjax.passes.dce import eliminate_dead_code
from relaxjax.passes.dedup import dedup_kernels
from relaxjax.passes.dispatch import dispatch_library
from relaxjax.passes.dispatch_cuda import dispatch_cublas
from relaxjax.passes.fuse import fuse_ops
from relaxjax.passes.inplace import inplace_updates
from relaxjax.passes.legalize import legalize
from relaxjax.passes.views import make_views
from relaxjax.schedule.rules import ScheduleKernels

__all__ = ["LOWERING", "Pass", "Pipeline", "TARGETS", "default_pipeline", "lower_pipeline"]

Pass = Callable[[IRModule], IRModule]

#: The targets a pipeline can be built for.
TARGETS = ("llvm", "cuda")


def _pass_name(pass_: Pass) -> str:
    return getattr(pass_, "__name__", type(pass_).__name__)


@dataclass(frozen=True, slots=True)
class Pipeline:
    """Passes run in order; with ``verify``, ``ir.verify`` runs after each one."""

    passes: tuple[Pass, ...]
    verify: bool = False

    def __call__(self, mod: IRModule) -> IRModule:
        if self.verify:
            _verify(mod, "the input")
        for pass_ in self.passes:
            mod = pass_(mod)
            if self.verify:
                _verify(mod, f"pass {_pass_name(pass_)}")
        return mod

    def __str__(self) -> str:
        return "Pipeline(" + ", ".join(_pass_name(p) for p in self.passes) + ")"


def _verify(mod: IRModule, after: str) -> None:
    try:
        verify(mod)
    except VerifyError as err:
        raise VerifyError(f"{after} produced a malformed module: {err.message}") from err


#: One shape-generic kernel per op, stored once: what ``Jitted.lower()`` shows.
LOWERING = (
    eliminate_dead_code,
    make_views,
    inplace_updates,
    legalize,
    dedup_kernels,
    eliminate_dead_code,
)


def lower_pipeline(verify: bool = False) -> Pipeline:
    """Legalisation alone (no library dispatch, fusion or scheduling): ``Jitted.lower()``."""
    return Pipeline(LOWERING, verify)


def default_pipeline(target: str = "llvm", verify: bool = False, library: bool = False) -> Pipeline:
    """The graph passes for ``target`` ("llvm" or "cuda"); with ``library``, calls a tuned
    library does best (float matmul) go to it instead of kernels: BLAS on llvm
    (``dispatch_library``), cuBLAS on cuda (``dispatch_cublas``)."""
    if target not in TARGETS:
        raise ValueError(f"unknown target {target!r}: expected one of {', '.join(TARGETS)}")
    dispatch: tuple[Pass, ...] = ()
    if library:
        dispatch = (dispatch_library,) if target == "llvm" else (dispatch_cublas,)
    lowering = LOWERING[1:]
    if target != "llvm":  # the CUDA runtime does not run call_view yet: layout ops copy
        lowering = tuple(p for p in lowering if p is not make_views)
    passes = (LOWERING[0], fuse_attention, *dispatch, *lowering)
    schedule: tuple[Pass, ...] = (ScheduleKernels(target),) if target == "llvm" else ()
    return Pipeline((*passes, fuse_ops, *schedule), verify)
