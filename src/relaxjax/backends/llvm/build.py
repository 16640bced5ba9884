"""``build``: kernels to callable machine code, through the caches.

Steps for a list of kernels (compiled together as one LLVM module, so one O3
pipeline and one object serve them all):

1. emit and verify the LLVM IR (:mod:`.codegen`);
2. key = hash of that text and the target (:mod:`.cache`);
3. a library with this key already loaded in the process is reused
   (``memory_hits``); else the object is read from the disk cache (``hits``) or
   compiled at O3 (``compiles``) and stored;
4. the object is linked into the process (:mod:`.jit`) and each kernel wrapped
   in a :class:`~.kernel.CompiledKernel`.

:func:`kernel_object` gives the object code behind kernels built together (what a
whole executable's disk artifact stores, :mod:`relaxjax.runtime.artifact`), and
:func:`link_kernels` links such an object again, in a new process, with no codegen.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ...errors import LoweringError
from ...tir.function import PrimFunc
from .cache import cache_key, count, read_entry, write_entry
from .codegen import EmittedModule, emit_module, named_kernels
from .gomp import ensure_libgomp
from .jit import LoadedLibrary, compile_object, load_object
from .kernel import CompiledKernel
from .target import Target, host_target

__all__ = ["KernelObject", "build", "build_kernels", "kernel_object", "link_kernels"]


@dataclass(frozen=True, slots=True)
class KernelObject:
    """The machine code of kernels compiled together, as it can be stored and linked again.

    ``key``: the object cache key (IR text + target identity); ``code``: the ELF object;
    ``symbols``: kernel name -> exported C symbol; ``uses_parallel``: whether the code
    calls libgomp (loaded before linking).
    """

    key: str
    code: bytes
    symbols: Mapping[str, str]
    uses_parallel: bool


@dataclass(frozen=True, slots=True, eq=False)
class _Linked:
    """A linked library with the object it was linked from (kept by every CompiledKernel)."""

    library: LoadedLibrary
    object: KernelObject


_loaded: dict[str, _Linked] = {}
_loaded_lock = threading.Lock()


def build(
    func_or_funcs: PrimFunc | Sequence[PrimFunc] | Mapping[str, PrimFunc],
    target: str | Target = "llvm",
    fast_math: bool = False,
    contract: bool = True,
) -> CompiledKernel | dict[str, CompiledKernel]:
    """Compile kernels to x86-64 machine code and load them into this process.

    Args:
        func_or_funcs: one ``tir.PrimFunc``, or several compiled as one LLVM module:
            a sequence (named by ``PrimFunc.name``, which must be distinct) or a
            mapping name -> PrimFunc (named by its keys).
        target: ``"llvm"`` (the host CPU) or a :class:`Target`.
        fast_math: allow LLVM to reassociate and contract float math (vectorises float
            reductions; results may differ in the last bits). Default: IEEE semantics,
            except for ``contract``.
        contract: let a float32/float64 ``a * b + c`` (or ``- c``, ``c - a * b``) be
            computed as one fused multiply-add, rounding once instead of twice (what BLAS
            and XLA's CPU backend do; never reassociates). A contracted result differs
            from the two-rounding one by less than one ulp of the product. ``False``
            rounds every operation: bit-identical to the reference interpreter.
            float16/bfloat16 always round every operation.

    Returns:
        A :class:`CompiledKernel` for one PrimFunc, else a dict name -> CompiledKernel.

    Raises:
        LoweringError: the target is not a CPU target, or a kernel cannot be lowered.
    """
    resolved = _resolve_target(target)
    kernels = build_kernels(named_kernels(func_or_funcs), resolved, fast_math, contract)
    if isinstance(func_or_funcs, PrimFunc):
        return kernels[func_or_funcs.name]
    return kernels


def _resolve_target(target: str | Target) -> Target:
    if isinstance(target, Target):
        return target
    if target == "llvm":
        return host_target()
    raise LoweringError(f"the llvm backend builds for target 'llvm' or a Target, given {target!r}")


def build_kernels(
    kernels: Mapping[str, PrimFunc],
    target: Target,
    fast_math: bool = False,
    contract: bool = True,
) -> dict[str, CompiledKernel]:
    """Compile ``kernels`` (name -> PrimFunc) together for ``target``; name -> CompiledKernel."""
    if not kernels:
        return {}
    emitted = emit_module(kernels, target, fast_math, contract)
    if emitted.uses_parallel:
        ensure_libgomp()
    key = cache_key(emitted.ir_text, target.cache_identity())
    linked = _load(key, emitted, target)
    return _wrap(kernels, linked)


def kernel_object(kernels: Mapping[str, CompiledKernel]) -> KernelObject:
    """The object code of ``kernels``, all from one :func:`build_kernels` call.

    Raises:
        ValueError: the kernels come from different builds (or none is given).
    """
    linked = {id(kernel.library): kernel.library for kernel in kernels.values()}
    if len(linked) != 1:
        raise ValueError(f"kernels of one build expected, got {len(linked)} builds")
    library = next(iter(linked.values()))
    if not isinstance(library, _Linked):
        raise ValueError("these kernels were not built by backends.llvm.build_kernels")
    return library.object


def link_kernels(
    kernels: Mapping[str, PrimFunc], obj: KernelObject, target: Target
) -> dict[str, CompiledKernel]:
    """Link ``obj`` (from :func:`kernel_object`, possibly of another process) into this
    process and wrap each of ``kernels``, which must be the PrimFuncs it was built from:
    no codegen, no LLVM optimisation. An object already linked here is reused.

    Raises:
        LoweringError: a kernel has no symbol in ``obj``, or linking failed.
    """
    missing = [name for name in kernels if name not in obj.symbols]
    if missing:
        raise LoweringError(f"the kernel object does not hold {', '.join(missing)}")
    if obj.uses_parallel:
        ensure_libgomp()
    with _loaded_lock:
        linked = _loaded.get(obj.key)
        if linked is None:
            library = load_object(obj.code, tuple(obj.symbols.values()), target)
            linked = _loaded[obj.key] = _Linked(library, obj)
        else:
            count(memory_hits=1)
    return _wrap(kernels, linked)


def _wrap(kernels: Mapping[str, PrimFunc], linked: _Linked) -> dict[str, CompiledKernel]:
    symbols = linked.object.symbols
    return {
        name: CompiledKernel(func, symbols[name], linked.library.addresses[symbols[name]], linked)
        for name, func in kernels.items()
    }


def _load(key: str, emitted: EmittedModule, target: Target) -> _Linked:
    with _loaded_lock:
        linked = _loaded.get(key)
        if linked is not None:
            count(memory_hits=1)
            return linked
        symbols = dict(emitted.symbols)
        obj = read_entry(key)
        if obj is None:
            obj = compile_object(emitted.ir_text, target, ", ".join(symbols.values()))
            count(compiles=1)
            write_entry(key, obj)
        library = load_object(obj, tuple(symbols.values()), target)
        code = KernelObject(key, obj, symbols, emitted.uses_parallel)
        linked = _loaded[key] = _Linked(library, code)
        return linked
