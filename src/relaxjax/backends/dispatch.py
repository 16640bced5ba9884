"""``build``: the public entry point that picks a backend by target."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..errors import LoweringError
from ..tir.function import PrimFunc
from . import cuda, llvm

__all__ = ["build"]


def build(
    func_or_funcs: PrimFunc | Sequence[PrimFunc] | Mapping[str, PrimFunc],
    target: str | llvm.Target = "llvm",
    fast_math: bool = False,
    contract: bool = True,
) -> llvm.CompiledKernel | dict[str, llvm.CompiledKernel]:
    """Compile loop-level kernels for ``target`` into callable kernels.

    ``target="llvm"`` (default, or an ``llvm.Target``): x86-64 machine code for the
    host CPU, see :func:`relaxjax.backends.llvm.build`. ``target="cuda"`` (or a
    ``cuda.CudaTarget``): PTX and a cubin per module, one ``cuda.CudaKernel`` per kernel
    (its launch plan; running it is ``relaxjax.runtime.cuda``'s), no GPU needed.

    >>> kernel = build(func)                  # doctest: +SKIP
    >>> y = kernel(x)                         # doctest: +SKIP
    """
    if isinstance(target, llvm.Target) or target == "llvm":
        return llvm.build(func_or_funcs, target, fast_math, contract)
    if target == "cuda" or isinstance(target, cuda.CudaTarget):
        resolved = target if isinstance(target, cuda.CudaTarget) else None
        kernels = cuda.build_cuda(func_or_funcs, resolved, fast_math=fast_math).kernels
        if isinstance(func_or_funcs, PrimFunc):
            return kernels[func_or_funcs.name]  # type: ignore[return-value]
        return kernels  # type: ignore[return-value]
    raise LoweringError(f"unknown target {target!r}; expected 'llvm' or 'cuda'")
