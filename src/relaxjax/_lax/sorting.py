"""jax.lax's sorting functions. ``top_k`` is defined with the numpy sorts, whose sort
kernel (a window of a descending, total-order sort) it shares."""

from relaxjax._numpy.sorting import top_k

__all__ = ["top_k"]
