"""Look at what the backend makes of kernels: LLVM IR before and after O3, assembly.

>>> print(source(func, "ir"))          # doctest: +SKIP  (as emitted, verified)
>>> print(source(func, "optimized"))   # doctest: +SKIP  (after O3: vector types show)
>>> print(source(func, "asm"))         # doctest: +SKIP  (x86-64 assembly)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ...tir.function import PrimFunc
from .codegen import emit_module, named_kernels
from .jit import compile_assembly, optimize
from .target import Target, host_target

__all__ = ["SOURCE_KINDS", "source"]

SOURCE_KINDS = ("ir", "optimized", "asm")


def source(
    funcs: PrimFunc | Sequence[PrimFunc] | Mapping[str, PrimFunc],
    kind: str = "ir",
    target: Target | None = None,
    fast_math: bool = False,
    contract: bool = True,
) -> str:
    """The code generated for ``funcs`` as text: ``kind`` is one of :data:`SOURCE_KINDS`."""
    if kind not in SOURCE_KINDS:
        raise ValueError(f"source kind must be one of {SOURCE_KINDS}, given {kind!r}")
    kernels = named_kernels(funcs)
    target = target or host_target()
    emitted = emit_module(kernels, target, fast_math, contract)
    what = ", ".join(kernels)
    if kind == "ir":
        return emitted.ir_text
    if kind == "optimized":
        return str(optimize(emitted.ir_text, target, what))
    return compile_assembly(emitted.ir_text, target, what)
