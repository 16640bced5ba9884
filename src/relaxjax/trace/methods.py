"""The numpy-style methods of traced values, each the ``relaxjax.numpy`` function of its name.

``x.reshape(n, -1)`` is ``rnp.reshape(x, (n, -1))``, ``x.sum(axis=0)`` is
``rnp.sum(x, axis=0)``, ``x[key]`` is numpy (jax) indexing and ``x.at[key]`` jax's
functional updates. The wrappers are built
on :func:`relaxjax.trace.emit`, so they are imported when first used.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from relaxjax.trace.tracer import Tracer

__all__ = ["ArrayMethods"]


def _rnp():
    """The public array-op wrappers; imported on use, since they are built on :func:`emit`."""
    import relaxjax.numpy as rnp

    return rnp


class ArrayMethods:
    """Mixed into :class:`~relaxjax.trace.Tracer`: the array methods of jax arrays."""

    __slots__ = ()

    def __getitem__(self, key: object) -> Tracer:
        from relaxjax._numpy.index import getitem  # the wrappers sit on top of emit

        return getitem(self, key)

    @property
    def at(self) -> object:
        """jax's functional updates: ``x.at[key].set(v)``, ``.add``, ``.subtract``,
        ``.multiply``, ``.divide``, ``.power``, ``.min``, ``.max``, ``.apply`` and ``.get``
        (see :class:`relaxjax._numpy.index.IndexUpdateRef`)."""
        from relaxjax._numpy.index import IndexUpdateHelper

        return IndexUpdateHelper(self)

    @property
    def T(self) -> Tracer:  # noqa: N802 - numpy's name
        """The transpose (all axes reversed)."""
        return _rnp().transpose(self)

    def transpose(self, *axes: int | Sequence[int]) -> Tracer:
        """``x.transpose()``, ``x.transpose(1, 0)`` or ``x.transpose((1, 0))``."""
        if len(axes) == 1 and not isinstance(axes[0], int):
            axes = tuple(axes[0])  # type: ignore[arg-type]
        return _rnp().transpose(self, tuple(axes) if axes else None)

    def reshape(self, *shape: object) -> Tracer:
        """``x.reshape(n, -1)`` or ``x.reshape((n, -1))``; dims may be symbolic."""
        if len(shape) == 1 and isinstance(shape[0], tuple | list):
            shape = tuple(shape[0])
        return _rnp().reshape(self, shape)

    def astype(self, dtype: object) -> Tracer:
        """This value converted to ``dtype``."""
        return _rnp().astype(self, dtype)

    def swapaxes(self, axis1: int, axis2: int) -> Tracer:
        """``relaxjax.numpy.swapaxes(x, axis1, axis2)``."""
        return _rnp().swapaxes(self, axis1, axis2)

    def squeeze(self, axis: int | Sequence[int] | None = None) -> Tracer:
        """``relaxjax.numpy.squeeze(x, axis)``."""
        return _rnp().squeeze(self, axis)

    def sum(self, *args: object, **kwargs: object) -> Tracer:
        """``relaxjax.numpy.sum(x, ...)``."""
        return _rnp().sum(self, *args, **kwargs)

    def mean(self, *args: object, **kwargs: object) -> Tracer:
        """``relaxjax.numpy.mean(x, ...)``."""
        return _rnp().mean(self, *args, **kwargs)

    def max(self, *args: object, **kwargs: object) -> Tracer:
        """``relaxjax.numpy.max(x, ...)``."""
        return _rnp().max(self, *args, **kwargs)

    def min(self, *args: object, **kwargs: object) -> Tracer:
        """``relaxjax.numpy.min(x, ...)``."""
        return _rnp().min(self, *args, **kwargs)

    def prod(self, *args: object, **kwargs: object) -> Tracer:
        """``relaxjax.numpy.prod(x, ...)``."""
        return _rnp().prod(self, *args, **kwargs)

    def var(self, *args: object, **kwargs: object) -> Tracer:
        """``relaxjax.numpy.var(x, ...)``."""
        return _rnp().var(self, *args, **kwargs)

    def argmax(self, *args: object, **kwargs: object) -> Tracer:
        """``relaxjax.numpy.argmax(x, ...)``."""
        return _rnp().argmax(self, *args, **kwargs)

    def argmin(self, *args: object, **kwargs: object) -> Tracer:
        """``relaxjax.numpy.argmin(x, ...)``."""
        return _rnp().argmin(self, *args, **kwargs)

    def cumsum(self, *args: object, **kwargs: object) -> Tracer:
        """``relaxjax.numpy.cumsum(x, ...)``."""
        return _rnp().cumsum(self, *args, **kwargs)

    def cumprod(self, *args: object, **kwargs: object) -> Tracer:
        """``relaxjax.numpy.cumprod(x, ...)``."""
        return _rnp().cumprod(self, *args, **kwargs)

    def all(self, *args: object, **kwargs: object) -> Tracer:
        """``relaxjax.numpy.all(x, ...)``."""
        return _rnp().all(self, *args, **kwargs)

    def any(self, *args: object, **kwargs: object) -> Tracer:
        """``relaxjax.numpy.any(x, ...)``."""
        return _rnp().any(self, *args, **kwargs)

    def ptp(self, *args: object, **kwargs: object) -> Tracer:
        """``relaxjax.numpy.ptp(x, ...)``."""
        return _rnp().ptp(self, *args, **kwargs)

    def std(self, *args: object, **kwargs: object) -> Tracer:
        """``relaxjax.numpy.std(x, ...)``."""
        return _rnp().std(self, *args, **kwargs)

    def sort(self, *args: object, **kwargs: object) -> Tracer:
        """``relaxjax.numpy.sort(x, ...)`` (a sorted copy: values are immutable)."""
        return _rnp().sort(self, *args, **kwargs)

    def argsort(self, *args: object, **kwargs: object) -> Tracer:
        """``relaxjax.numpy.argsort(x, ...)``."""
        return _rnp().argsort(self, *args, **kwargs)

    def argpartition(self, *args: object, **kwargs: object) -> Tracer:
        """``relaxjax.numpy.argpartition(x, kth, ...)``."""
        return _rnp().argpartition(self, *args, **kwargs)

    def searchsorted(self, *args: object, **kwargs: object) -> Tracer:
        """``relaxjax.numpy.searchsorted(x, v, ...)``."""
        return _rnp().searchsorted(self, *args, **kwargs)

    def clip(self, *args: object, **kwargs: object) -> Tracer:
        """``relaxjax.numpy.clip(x, ...)``."""
        return _rnp().clip(self, *args, **kwargs)

    def nonzero(self, *, size: object = None, fill_value: object = None) -> tuple:
        """``relaxjax.numpy.nonzero(x, size=..., fill_value=...)``."""
        return _rnp().nonzero(self, size=size, fill_value=fill_value)

    def compress(self, condition: object, axis: int | None = None, **kwargs: object) -> Tracer:
        """``relaxjax.numpy.compress(condition, x, axis, ...)``."""
        return _rnp().compress(condition, self, axis, **kwargs)
