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
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence

from ...errors import LoweringError
from ...tir.function import PrimFunc
from .cache import cache_key, count, read_entry, write_entry
from .codegen import emit_module, named_kernels
from .gomp import ensure_libgomp
from .jit import LoadedLibrary, compile_object, load_object
from .kernel import CompiledKernel
from .target import Target, host_target

__all__ = ["build", "build_kernels"]

_loaded: dict[str, LoadedLibrary] = {}
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
    library = _load(key, emitted.ir_text, tuple(emitted.symbols.values()), target)
    return {
        name: CompiledKernel(
            func, emitted.symbols[name], library.addresses[emitted.symbols[name]], library
        )
        for name, func in kernels.items()
    }


def _load(key: str, ir_text: str, symbols: tuple[str, ...], target: Target) -> LoadedLibrary:
    with _loaded_lock:
        library = _loaded.get(key)
        if library is not None:
            count(memory_hits=1)
            return library
        obj = read_entry(key)
        if obj is None:
            obj = compile_object(ir_text, target, ", ".join(symbols))
            count(compiles=1)
            write_entry(key, obj)
        library = load_object(obj, symbols, target)
        _loaded[key] = library
        return library
