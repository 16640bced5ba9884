"""Axis lists and index arithmetic shared by reductions, shape manipulation and
indexing: normalising axis tuples, row-major flat positions, and the index bookkeeping
of a reduction inside a kernel (:class:`ReducedAxes`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from relaxjax import arith
from relaxjax.errors import LoweringError, ShapeError
from relaxjax.ops.base import normalize_axis, num_elements
from relaxjax.tir import te

Dim = arith.Dim


def normalize_axes(op_name: str, axes: Sequence[int], ndim: int) -> tuple[int, ...]:
    """``axes`` in ``[0, ndim)``, in the given order; ``ShapeError`` when out of range or
    repeated (``(0, -2)`` on a matrix names axis 0 twice)."""
    normalised = tuple(normalize_axis(op_name, a, ndim) for a in axes)
    if len(set(normalised)) != len(normalised):
        raise ShapeError(
            f"{op_name}: duplicate value in axis {tuple(axes)} for an array of rank {ndim}"
        )
    return normalised


def reduced_axes(op_name: str, axis: tuple[int, ...] | None, ndim: int) -> tuple[int, ...]:
    """The sorted, non-negative axes a reduction over ``axis`` removes."""
    if axis is None:
        return tuple(range(ndim))
    return tuple(sorted(normalize_axes(op_name, axis, ndim)))


def linear_index(shape: Sequence[Dim], indices: Sequence[object]) -> Dim:
    """The row-major flat position of ``indices`` in ``shape``."""
    flat: Dim = 0
    for dim, index in zip(shape, indices):
        flat = flat * dim + _dim_of(index)
    return flat


def unravel(flat: object, shape: Sequence[Dim]) -> tuple[Dim, ...]:
    """The row-major indices of flat position ``flat`` in ``shape``.

    A shape with a zero dim has no positions, so no index is ever computed: zeros
    then, where the digits would divide by the zero dim.
    """
    if any(arith.compare(dim, "==", 0) is True for dim in shape[1:]):
        return (0,) * len(shape)
    position = _dim_of(flat)
    indices: list[Dim] = []
    for axis in range(len(shape) - 1, -1, -1):
        if axis == 0:
            indices.append(position)
        else:
            indices.append(position % shape[axis])
            position = position // shape[axis]
    return tuple(reversed(indices))


def unravel_loop(flat: object, shape: Sequence[Dim]) -> tuple[Dim, ...]:
    """:func:`unravel` for the variable of a loop over ``prod(shape)`` positions: a dim
    that is statically 0 (the loop never runs) is taken as 1, so no ``% 0`` is built."""
    return unravel(flat, tuple(1 if d == 0 else d for d in shape))


def _dim_of(index: object) -> Dim:
    if isinstance(index, (int, arith.Expr)):
        return index
    dim = getattr(index, "index_dim", None)
    if dim is None:
        raise LoweringError(f"expected an index, got {index!r}")
    return dim


class ReducedAxes:
    """Index bookkeeping for a reduction of ``shape`` over ``axes`` in a kernel: the kept
    axes index the reduced stage, each reduced axis becomes a ``te.reduce_axis``."""

    def __init__(self, shape: Sequence[Dim], axes: Sequence[int]) -> None:
        self.shape = tuple(shape)
        self.axes = tuple(axes)
        self.kept_shape = tuple(d for a, d in enumerate(self.shape) if a not in self.axes)
        self.count = num_elements([self.shape[a] for a in self.axes])

    def kept(self, indices: Sequence[object]) -> tuple[object, ...]:
        """The kept axes' entries of full-rank ``indices``."""
        return tuple(i for a, i in enumerate(indices) if a not in self.axes)

    def full(self, kept: Sequence[object], reduced: Sequence[object]) -> tuple[object, ...]:
        """Full-rank indices from the kept indices and one index per reduced axis."""
        kept_iter, reduced_iter = iter(kept), iter(reduced)
        return tuple(
            next(reduced_iter) if a in self.axes else next(kept_iter)
            for a in range(len(self.shape))
        )

    def reduce(
        self,
        reducer: Callable[..., object],
        value: Callable[[tuple[object, ...]], object],
        name: str,
        index: Callable[[Sequence[object]], object] | None = None,
    ) -> te.Tensor | tuple[te.Tensor, ...]:
        """A stage over the kept axes reducing ``value(full indices)`` over the others
        (with no reduced axis, the stage is ``value`` itself).

        With ``index(reduced iterators)`` the reduction is over ``(value, index)`` pairs
        (argmax/argmin) and the stage's two tensors are returned.
        """
        if not self.axes:
            return te.compute(self.kept_shape, lambda *i: value(i), name=name)
        ks = [te.reduce_axis(self.shape[a], f"k{a}") for a in self.axes]

        def body(*i: object) -> object:
            source = value(self.full(i, ks))
            if index is None:
                return reducer(source, axis=ks)
            return reducer((source, index(ks)), axis=ks)

        return te.compute(self.kept_shape, body, name=name)

    def out_shape(self, keepdims: bool) -> tuple[Dim, ...]:
        """The result shape: the kept dims, with the reduced ones as 1 under keepdims."""
        if not keepdims:
            return self.kept_shape
        return tuple(1 if a in self.axes else d for a, d in enumerate(self.shape))


__all__ = ["ReducedAxes", "linear_index", "normalize_axes", "reduced_axes", "unravel"]
