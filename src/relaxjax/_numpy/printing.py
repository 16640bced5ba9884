"""Printing helpers of ``relaxjax.numpy``, as jax.numpy's: numpy's print options and
``array_repr``/``array_str`` of concrete arrays (relaxjax's concrete arrays are numpy's).

A traced value has no value while tracing: formatting one raises ``TypeError``, as jax
raises for a tracer.
"""

from __future__ import annotations

import numpy as np

from relaxjax.trace import Tracer

__all__ = ["array_repr", "array_str", "get_printoptions", "printoptions", "set_printoptions"]


def printoptions(*args, **kwargs):
    """A context manager setting numpy's print options (``jnp.printoptions``)."""
    return np.printoptions(*args, **kwargs)


def get_printoptions() -> dict:
    """numpy's current print options (``jnp.get_printoptions``)."""
    return np.get_printoptions()


def set_printoptions(*args, **kwargs) -> None:
    """Set numpy's print options (``jnp.set_printoptions``)."""
    return np.set_printoptions(*args, **kwargs)


def _concrete(name: str, arr: object) -> object:
    if isinstance(arr, Tracer):
        raise TypeError(
            f"{name}: a traced value has no value while tracing ({arr.info!r}); format the "
            "result of the jitted function instead"
        )
    return arr


def array_repr(arr, max_line_width=None, precision=None, suppress_small=None):
    """The repr of a concrete array (``jnp.array_repr``, numpy's)."""
    return np.array_repr(_concrete("array_repr", arr), max_line_width, precision, suppress_small)


def array_str(a, max_line_width=None, precision=None, suppress_small=None):
    """The str of a concrete array (``jnp.array_str``, numpy's)."""
    return np.array_str(_concrete("array_str", a), max_line_width, precision, suppress_small)
