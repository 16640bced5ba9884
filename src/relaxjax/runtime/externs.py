"""External library functions the runtime calls for ``call_extern``, by symbol.

Each is called in destination-passing style with numpy arrays: the inputs, then the
outputs (allocated by the runtime, C-contiguous, to be written in place): BLAS matrix
products (numpy's OpenBLAS driven from the runtime's own threads, :mod:`relaxjax.runtime.gemm`),
and the LAPACK factorisations of :mod:`relaxjax.ops.decompositions` (one symbol
per value of their attributes).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from relaxjax.errors import LoweringError
from relaxjax.ops import get
from relaxjax.ops.decompositions import LIBRARY_OPS, library_symbol
from relaxjax.runtime import gemm
from relaxjax.runtime.blas import share_blas_threads

__all__ = ["EXTERN_FUNCTIONS", "lookup_extern"]


def _copy(source: np.ndarray, out: np.ndarray) -> None:
    """``out = source``: a copy between host and device (``passes.placement``), which on a
    CPU-only executable is a copy between host arrays (the cuda runtime emits its own)."""
    out[...] = source


def _factorization(op_name: str, attrs: object) -> Callable[..., None]:
    """The library call of a factorisation op: its numpy.linalg computation (the op's
    reference, LAPACK) written into the outputs."""
    op = get(op_name)

    def call(*buffers: np.ndarray) -> None:
        inputs = buffers[: op.num_inputs]
        outputs = buffers[op.num_inputs :]
        results = op.reference(*inputs, attrs=attrs)
        results = results if isinstance(results, tuple) else (results,)
        for out, result in zip(outputs, results):
            out[...] = result

    return call


#: symbol -> function(*inputs, *outputs)
EXTERN_FUNCTIONS: dict[str, Callable[..., None]] = {
    "numpy.matmul": gemm.matmul,  # numpy's BLAS, on the runtime's threads
    "relaxjax.cuda.to_host": _copy,
    "relaxjax.cuda.to_device": _copy,
    **{
        library_symbol(name, attrs): _factorization(name, attrs)
        for name, variants in LIBRARY_OPS.items()
        for attrs in variants
    },
}


def lookup_extern(symbol: str, where: str) -> Callable[..., None]:
    """The function for ``symbol``; ``LoweringError`` naming the known ones otherwise.

    Building a program that calls a library first puts numpy's BLAS on the runtime's
    thread budget (:func:`~relaxjax.runtime.blas.share_blas_threads`, once per process)."""
    try:
        function = EXTERN_FUNCTIONS[symbol]
    except KeyError:
        known = ", ".join(sorted(EXTERN_FUNCTIONS))
        raise LoweringError(
            f"{where}: no external function {symbol!r} in the runtime (known: {known})"
        ) from None
    share_blas_threads()
    return function
