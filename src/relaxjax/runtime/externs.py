"""External library functions the runtime calls for ``call_extern``, by symbol.

Each is called in destination-passing style with numpy arrays: the inputs, then the
outputs (allocated by the runtime, C-contiguous, to be written in place): BLAS matrix
products, and the LAPACK factorisations of :mod:`relaxjax.ops.decompositions` (one symbol
per value of their attributes).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from relaxjax.errors import LoweringError
from relaxjax.ops import get
from relaxjax.ops.decompositions import LIBRARY_OPS, library_symbol

__all__ = ["EXTERN_FUNCTIONS", "lookup_extern"]


def _numpy_matmul(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
    """``out = a @ b`` through numpy's BLAS (jnp.matmul semantics)."""
    np.matmul(a, b, out=out)


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
    "numpy.matmul": _numpy_matmul,
    "relaxjax.cuda.to_host": _copy,
    "relaxjax.cuda.to_device": _copy,
    **{
        library_symbol(name, attrs): _factorization(name, attrs)
        for name, variants in LIBRARY_OPS.items()
        for attrs in variants
    },
}


def lookup_extern(symbol: str, where: str) -> Callable[..., None]:
    """The function for ``symbol``; ``LoweringError`` naming the known ones otherwise."""
    try:
        return EXTERN_FUNCTIONS[symbol]
    except KeyError:
        known = ", ".join(sorted(EXTERN_FUNCTIONS))
        raise LoweringError(
            f"{where}: no external function {symbol!r} in the runtime (known: {known})"
        ) from None
