"""The activation and normalisation wrappers of ``relaxjax.nn``.

Each function records one dedicated op (so the printed graph shows ``gelu(x,
approximate=False)`` rather than its expansion, and fusion sees one kernel).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from relaxjax import arith, dtypes
from relaxjax._numpy.reduction import max as _max
from relaxjax._numpy.reduction import sum as _sum
from relaxjax.ops.base import normalize_axis
from relaxjax.ops.nn import AxesAttrs, GeluAttrs, NormAttrs, OneHotAttrs, normalize_axes
from relaxjax.trace import emit


def _ndim(x: object) -> int | None:
    """The rank of an operand when known (tensors, arrays; 0 for Python scalars)."""
    if isinstance(x, (bool, int, float, arith.Expr)):
        return 0
    return getattr(x, "ndim", None)


def relu(x):
    """``max(x, 0)`` (``jax.nn.relu``)."""
    return emit("relu", (x,))


def sigmoid(x):
    """``1 / (1 + exp(-x))`` (``jax.nn.sigmoid``); floating operands only."""
    return emit("sigmoid", (x,))


def silu(x):
    """``x * sigmoid(x)`` (``jax.nn.silu``); floating operands only."""
    return emit("silu", (x,))


swish = silu


def gelu(x, approximate: bool = True):
    """The Gaussian error linear unit (``jax.nn.gelu``): the tanh approximation by
    default, the exact erf form with ``approximate=False``."""
    return emit("gelu", (x,), GeluAttrs(bool(approximate)))


def _axes_attrs(op_name: str, x: object, axis: object) -> AxesAttrs:
    if axis is None:
        axes = None
    elif isinstance(axis, Sequence):
        axes = tuple(int(a) for a in axis)
    else:
        axes = (int(axis),)
    ndim = _ndim(x)
    if ndim is not None:
        axes = normalize_axes(op_name, axes, ndim)
    return AxesAttrs(axes)


def _axis_argument(axis: object) -> object:
    """``axis`` as the reductions take it (an int, a tuple of ints, or None)."""
    return tuple(int(a) for a in axis) if isinstance(axis, Sequence) else axis


def _masked_softmax(x, axis, where, log: bool):
    """jax's masked (log-)softmax: the max and the sum of exponentials run over the
    selected elements only; masked-out outputs are 0 (``-inf`` for ``log_softmax``),
    and so is a row with nothing selected."""
    axis = _axis_argument(axis)
    peak = _max(x, axis, keepdims=True, initial=-np.inf, where=where)
    safe = emit("where", (where, x, -np.inf))
    shifted = emit("subtract", (safe, peak))
    exps = emit("exp", (shifted,))
    total = _sum(exps, axis, keepdims=True, where=where)
    if log:
        result = emit("subtract", (shifted, emit("log", (total,))))
        return emit("where", (where, result, -np.inf))
    return emit("where", (where, emit("divide", (exps, total)), 0))


def softmax(x, axis=-1, where=None):
    """``exp(x) / sum(exp(x))`` over ``axis`` (an int, a tuple, or None for all axes),
    computed stably (``jax.nn.softmax``). ``where`` (a boolean mask broadcasting
    against ``x``) restricts the normalisation to the selected elements; the others
    give 0, and so does a row with no selected element."""
    if where is not None:
        return _masked_softmax(x, axis, where, log=False)
    return emit("softmax", (x,), _axes_attrs("softmax", x, axis))


def log_softmax(x, axis=-1, where=None):
    """``x - log(sum(exp(x)))`` over ``axis``, computed stably (``jax.nn.log_softmax``).
    ``where`` restricts the normalisation to the selected elements; the others give
    ``-inf``, and so does a row with no selected element."""
    if where is not None:
        return _masked_softmax(x, axis, where, log=True)
    return emit("log_softmax", (x,), _axes_attrs("log_softmax", x, axis))


def one_hot(x, num_classes, *, dtype=None, axis=-1):
    """``x[..., None] == arange(num_classes)`` placed at ``axis`` (``jax.nn.one_hot``).

    ``num_classes`` may be symbolic; the dtype defaults to float64 (jax's float with
    64-bit types enabled).
    """
    if isinstance(num_classes, (np.integer,)):
        num_classes = int(num_classes)
    ndim = _ndim(x)
    axis = int(axis)
    if ndim is not None:
        axis = normalize_axis("one_hot", axis, ndim + 1)
    dtype = dtypes.default_float() if dtype is None else dtype
    return emit("one_hot", (x,), OneHotAttrs(num_classes, dtype, axis))


def layer_norm(x, gamma, beta, eps: float = 1e-5):
    """``(x - mean) / sqrt(var + eps) * gamma + beta`` over the last axis.

    ``gamma`` and ``beta`` must have shape ``x.shape[-1:]``.
    """
    return emit("layer_norm", (x, gamma, beta), NormAttrs(eps))


def rms_norm(x, weight, eps: float = 1e-6):
    """``x / sqrt(mean(x ** 2) + eps) * weight`` over the last axis.

    ``weight`` must have shape ``x.shape[-1:]``.
    """
    return emit("rms_norm", (x, weight), NormAttrs(eps))


__all__ = [
    "gelu",
    "layer_norm",
    "log_softmax",
    "one_hot",
    "relu",
    "rms_norm",
    "sigmoid",
    "silu",
    "softmax",
    "swish",
]
