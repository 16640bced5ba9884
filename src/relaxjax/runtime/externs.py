"""External library functions the runtime calls for ``call_extern``, by symbol.

Each is called in destination-passing style with numpy arrays: the inputs, then the
outputs (allocated by the runtime, C-contiguous, to be written in place).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from relaxjax.errors import LoweringError

__all__ = ["EXTERN_FUNCTIONS", "lookup_extern"]


def _numpy_matmul(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
    """``out = a @ b`` through numpy's BLAS (jnp.matmul semantics)."""
    np.matmul(a, b, out=out)


def _copy(source: np.ndarray, out: np.ndarray) -> None:
    """``out = source``: a copy between host and device (``passes.placement``), which on a
    CPU-only executable is a copy between host arrays (the cuda runtime emits its own)."""
    out[...] = source


#: symbol -> function(*inputs, *outputs)
EXTERN_FUNCTIONS: dict[str, Callable[..., None]] = {
    "numpy.matmul": _numpy_matmul,
    "relaxjax.cuda.to_host": _copy,
    "relaxjax.cuda.to_device": _copy,
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
