"""``build_cuda``: kernels to PTX and a cubin, through the caches.

Steps for a set of kernels (compiled together as one module):

1. emit NVVM IR and plan the launches (:mod:`.codegen`, :mod:`.launches`);
2. key = hash of the IR, the target and the toolchain versions
   (:meth:`~.target.CudaTarget.cache_identity`) and the compiler;
3. a module with this key built earlier in the process is reused (``memory_hits``),
   else PTX and cubin are read from the disk cache (``hits``; ``$RELAXJAX_CACHE_DIR/cuda``)
   or compiled (``compiles``) and stored;
4. the result is a :class:`CudaModule`: PTX text, cubin (None when no assembler is
   installed and ``assemble="auto"``), per-entry resources, and a :class:`CudaKernel`
   (its launch plan) per kernel. Loading and launching is the runtime's
   (:mod:`relaxjax.runtime.cuda`).
"""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ...tir.function import PrimFunc
from ..llvm.cache import cache_key, count, read_entry, write_entry
from ..llvm.codegen import named_kernels
from .codegen import emit_nvvm_module
from .compile import (
    EntryResources,
    assemble,
    compile_ptx,
    nvvm_available,
    ptxas_path,
    resolve_compiler,
    toolchain_files,
)
from .launches import KernelPlan
from .target import CudaTarget

__all__ = ["CudaKernel", "CudaModule", "build_cuda", "emit_ptx"]

_NAMESPACE = "cuda"
_built: dict[str, tuple[str, bytes | None, dict[str, EntryResources]]] = {}
_lock = threading.Lock()


@dataclass(frozen=True, slots=True, eq=False)
class CudaKernel:
    """A kernel compiled for the GPU: its PrimFunc, launch plan and module."""

    name: str
    plan: KernelPlan
    module: CudaModule

    @property
    def func(self) -> PrimFunc:
        """The PrimFunc it was compiled from."""
        return self.plan.func

    @property
    def entries(self) -> tuple[str, ...]:
        """The PTX entry of each launch, in launch order."""
        return tuple(launch.entry for launch in self.plan.launches)

    def resources(self) -> dict[str, EntryResources]:
        """ptxas's report for each of the kernel's entries (empty when not assembled)."""
        found = self.module.resources
        return {entry: found[entry] for entry in self.entries if entry in found}

    def __repr__(self) -> str:
        launches = len(self.plan.launches)
        return f"<CudaKernel {self.name}: {launches} launch(es) for {self.module.target.arch}>"


@dataclass(frozen=True, slots=True, eq=False)
class CudaModule:
    """PTX and cubin of a set of kernels, for one target."""

    target: CudaTarget
    compiler: str
    ir_text: str
    ptx: str
    cubin: bytes | None
    resources: dict[str, EntryResources]
    plans: dict[str, KernelPlan]
    key: str

    @property
    def kernels(self) -> dict[str, CudaKernel]:
        """Each kernel by name."""
        return {name: CudaKernel(name, plan, self) for name, plan in self.plans.items()}


def emit_ptx(
    funcs: PrimFunc | Sequence[PrimFunc] | Mapping[str, PrimFunc],
    target: CudaTarget | None = None,
    compiler: str = "auto",
    fast_math: bool = False,
) -> str:
    """The PTX of ``funcs`` (no assembler needed)."""
    return build_cuda(funcs, target, compiler, fast_math, assemble_cubin=False).ptx


def build_cuda(
    funcs: PrimFunc | Sequence[PrimFunc] | Mapping[str, PrimFunc],
    target: CudaTarget | None = None,
    compiler: str = "auto",
    fast_math: bool = False,
    assemble_cubin: bool | str = "auto",
) -> CudaModule:
    """Compile kernels for an NVIDIA GPU (see the module doc).

    Args:
        funcs: one PrimFunc, a sequence (named by ``PrimFunc.name``) or a mapping.
        target: the architecture and limits (default: ``CudaTarget()``, sm_90).
        compiler: ``"auto"``, ``"nvvm"`` or ``"llvmlite"`` (:mod:`.compile`).
        fast_math: fast-math flags on float operations.
        assemble_cubin: ``True`` (a cubin or ``LoweringError``), ``False`` (PTX only),
            ``"auto"`` (a cubin when an assembler is installed).

    Raises:
        LoweringError: a kernel cannot be lowered, compiled or assembled.
    """
    target = target or CudaTarget()
    compiler = resolve_compiler(compiler)
    kernels = named_kernels(funcs)
    emitted = emit_nvvm_module(kernels, target, fast_math)
    identity = f"{target.cache_identity()}|{compiler}|fast={fast_math}|{toolchain_files()}"
    key = cache_key(emitted.ir_text, identity)
    want_cubin = assemble_cubin is True or (assemble_cubin == "auto" and _can_assemble())
    entries = [launch.entry for plan in emitted.plans.values() for launch in plan.launches]
    ptx, cubin, resources = _cached(key, emitted.ir_text, target, compiler, want_cubin, entries)
    return CudaModule(target, compiler, emitted.ir_text, ptx, cubin, resources, emitted.plans, key)


def _can_assemble() -> bool:
    if ptxas_path() is not None:
        return True
    try:
        from cuda.bindings import nvjitlink

        nvjitlink.version()
    except Exception:  # noqa: BLE001
        return False
    return True


def _cached(
    key: str,
    ir_text: str,
    target: CudaTarget,
    compiler: str,
    want_cubin: bool,
    entries: Sequence[str],
) -> tuple[str, bytes | None, dict[str, EntryResources]]:
    with _lock:
        found = _built.get(key)
        if found is not None and (found[1] is not None or not want_cubin):
            count(memory_hits=1)
            return found
        entry = read_entry(key, _NAMESPACE)
        stored = _decode(entry) if entry is not None else None
        if stored is not None and (stored[1] is not None or not want_cubin):
            _built[key] = stored
            return stored
        ptx = stored[0] if stored is not None else compile_ptx(ir_text, target, compiler, entries)
        cubin, resources = assemble(ptx, target) if want_cubin else (None, {})
        count(compiles=1)
        result = (ptx, cubin, resources)
        write_entry(key, _encode(result), _NAMESPACE)
        _built[key] = result
        return result


def _encode(result: tuple[str, bytes | None, dict[str, EntryResources]]) -> bytes:
    ptx, cubin, resources = result
    return json.dumps(
        {
            "ptx": ptx,
            "cubin": None if cubin is None else base64.b64encode(cubin).decode(),
            "resources": {
                name: [r.registers, r.spill_stores, r.spill_loads, r.stack_bytes, r.shared_bytes]
                for name, r in resources.items()
            },
        }
    ).encode()


def _decode(payload: bytes) -> tuple[str, bytes | None, dict[str, EntryResources]] | None:
    try:
        data = json.loads(payload)
        cubin = None if data["cubin"] is None else base64.b64decode(data["cubin"])
        resources = {
            name: EntryResources(name, *values) for name, values in data["resources"].items()
        }
        return data["ptx"], cubin, resources
    except (ValueError, KeyError, TypeError):
        return None


def describe_toolchain() -> str:
    """One line naming the PTX compiler and assembler this process would use."""
    compiler = "nvvm" if nvvm_available() else "llvmlite"
    assembler = ptxas_path() or ("nvJitLink" if _can_assemble() else "none")
    return f"PTX compiler: {compiler}; assembler: {assembler}"
