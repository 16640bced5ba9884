"""Layouts: where the elements of a tensor view sit in the memory of the tensor it reads.

A *view* reads the elements of another tensor, its *base*, without copying them. Its
:class:`Layout` says where: element ``[i0, i1, ...]`` of the view is element
``offset + i0 * strides[0] + i1 * strides[1] + ...`` of the base taken in row-major
(flat) order, as numpy's strides do (in elements, not bytes). Shapes, strides and
offset are dims, so one layout serves every value of the symbols::

    x: (n, 2304)                          the base, row-major: strides (2304, 1)
    x[:, 768:1536]    -> shape (n, 768),      strides (2304, 1),    offset 768
    .reshape(n, 12, 64) -> shape (n, 12, 64), strides (2304, 64, 1), offset 768
    .transpose(1, 0, 2) -> shape (12, n, 64), strides (64, 2304, 1), offset 768

Each method returns the layout of the view that an operation on this view gives, or
None when no strided view of the base can hold the result (a reshape that would have
to move elements). Nothing here guesses: a step is taken only when it holds for every
value of the symbols (proven with :mod:`relaxjax.arith`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from relaxjax import arith
from relaxjax.arith import Dim

__all__ = ["Layout", "row_major"]


def row_major(shape: Sequence[Dim]) -> tuple[Dim, ...]:
    """The strides of a C-contiguous tensor of ``shape`` (in elements)."""
    strides: list[Dim] = []
    step: Dim = 1
    for dim in reversed(tuple(shape)):
        strides.append(step)
        step = step * dim
    return tuple(reversed(strides))


def _is_one(dim: Dim) -> bool:
    return arith.prove_equal(dim, 1)


def _as_dims(values: Sequence[object], what: str) -> tuple[Dim, ...]:
    try:
        return tuple(arith.as_dim(v) for v in values)
    except TypeError as err:
        raise TypeError(f"Layout {what}: {err}") from None


@dataclass(frozen=True, slots=True)
class Layout:
    """``shape``, ``strides`` and ``offset`` of a view, in elements of its base."""

    shape: tuple[Dim, ...]
    strides: tuple[Dim, ...]
    offset: Dim = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "shape", _as_dims(self.shape, "shape"))
        object.__setattr__(self, "strides", _as_dims(self.strides, "strides"))
        object.__setattr__(self, "offset", arith.as_dim(self.offset))
        if len(self.shape) != len(self.strides):
            raise ValueError(
                f"a layout has one stride per axis: shape {self.shape}, strides {self.strides}"
            )

    @classmethod
    def contiguous(cls, shape: Sequence[Dim], offset: Dim = 0) -> Layout:
        """The row-major layout of ``shape`` (the layout of every tensor a call computes)."""
        return cls(tuple(shape), row_major(shape), offset)

    @property
    def ndim(self) -> int:
        """The number of axes."""
        return len(self.shape)

    def is_contiguous(self) -> bool:
        """Whether the view is a row-major run of its base starting at ``offset``: every
        axis not proven to have size 1 has the row-major stride."""
        natural = row_major(self.shape)
        return all(
            _is_one(d) or arith.prove_equal(s, n)
            for d, s, n in zip(self.shape, self.strides, natural)
        )

    # -- the views of a view -----------------------------------------------------------

    def transpose(self, perm: Sequence[int]) -> Layout:
        """Axis ``a`` of the result is axis ``perm[a]`` of this view."""
        return Layout(
            tuple(self.shape[p] for p in perm), tuple(self.strides[p] for p in perm), self.offset
        )

    def expand(self, shape: Sequence[Dim], new_axes: Sequence[int]) -> Layout:
        """Size-1 axes inserted at ``new_axes`` of the result (whose shape is ``shape``);
        each gets the stride that keeps a contiguous view contiguous."""
        new = set(new_axes)
        kept = iter(self.strides)
        result: list[Dim | None] = [None if a in new else next(kept) for a in range(len(shape))]
        following: Dim = 1
        for axis in range(len(shape) - 1, -1, -1):
            if result[axis] is None:
                result[axis] = following
            else:
                following = result[axis] * shape[axis]  # type: ignore[operator]
        return Layout(tuple(shape), tuple(result), self.offset)

    def squeeze(self, axes: Sequence[int]) -> Layout:
        """The axes ``axes`` (each of size 1) removed."""
        drop = set(axes)
        return Layout(
            tuple(d for a, d in enumerate(self.shape) if a not in drop),
            tuple(s for a, s in enumerate(self.strides) if a not in drop),
            self.offset,
        )

    def slice(self, axis: int, start: Dim, length: Dim, step: Dim) -> Layout:
        """Elements ``start, start + step, ...`` (``length`` of them) of ``axis``."""
        shape, strides = list(self.shape), list(self.strides)
        offset = self.offset + start * strides[axis]
        shape[axis], strides[axis] = length, strides[axis] * step
        return Layout(tuple(shape), tuple(strides), offset)

    def broadcast(self, target: Sequence[Dim]) -> Layout | None:
        """Broadcast to ``target`` (leading axes added, size-1 axes repeated, both with
        stride 0); None when an axis might or might not be repeated."""
        lead = len(target) - self.ndim
        if lead < 0:
            return None
        strides: list[Dim] = [0] * lead
        for dim, stride, want in zip(self.shape, self.strides, target[lead:]):
            if arith.prove_equal(dim, want):
                strides.append(stride)
            elif _is_one(dim):
                strides.append(0)
            else:
                return None
        return Layout(tuple(target), tuple(strides), self.offset)

    def reshape(self, shape: Sequence[Dim]) -> Layout | None:
        """The same elements in row-major order with another shape, as a view, or None
        when that needs a copy (numpy's rule: each group of axes whose sizes multiply to
        the same number must be contiguous within itself). Sizes match by exact
        polynomial division, so ``(n, m) -> (n * m,)`` and ``(b, n, 768) -> (b, n, 12,
        64)`` are decided for every value of the symbols."""
        shape = tuple(shape)
        if self.is_contiguous():
            return Layout.contiguous(shape, self.offset)
        old = [(d, s) for d, s in zip(self.shape, self.strides) if not _is_one(d)]
        new_axes = [a for a, d in enumerate(shape) if not _is_one(d)]
        strides: list[Dim | None] = [None] * len(shape)
        i = j = 0
        while i < len(old) and j < len(new_axes):
            groups = _group(old[i:], [shape[a] for a in new_axes[j:]])
            if groups is None:
                return None
            taken_old, taken_new = groups
            block = old[i : i + taken_old]
            for (_, outer), (size, inner) in zip(block, block[1:]):
                if not arith.prove_equal(outer, inner * size):
                    return None
            stride = block[-1][1]
            for a in reversed(new_axes[j : j + taken_new]):
                strides[a] = stride
                stride = stride * shape[a]
            i, j = i + taken_old, j + taken_new
        if i != len(old) or j != len(new_axes):
            return None
        following: Dim = 1
        for axis in range(len(shape) - 1, -1, -1):  # size-1 axes: any stride works
            if strides[axis] is None:
                strides[axis] = following
            following = strides[axis] * shape[axis]  # type: ignore[operator]
        return Layout(shape, tuple(strides), self.offset)  # type: ignore[arg-type]

    def max_offset(self) -> Dim:
        """The offset of the last element (meaningful when the view is not empty)."""
        return self.offset + sum(((d - 1) * s for d, s in zip(self.shape, self.strides)), 0)

    def size(self) -> Dim:
        """The number of elements."""
        return math.prod(self.shape, start=1)


def _group(old: list[tuple[Dim, Dim]], new: list[Dim]) -> tuple[int, int] | None:
    """How many leading old and new axes multiply to the same size (the smallest such
    group), or None when exact division cannot tell."""
    taken_old, taken_new = 1, 1
    size_old, size_new = old[0][0], new[0]
    while not arith.prove_equal(size_old, size_new):
        if taken_new < len(new) and _divides(size_new, size_old):
            size_new = size_new * new[taken_new]
            taken_new += 1
        elif taken_old < len(old) and _divides(size_old, size_new):
            size_old = size_old * old[taken_old][0]
            taken_old += 1
        else:
            return None
    return taken_old, taken_new


def _divides(small: Dim, big: Dim) -> bool:
    """``small`` divides ``big`` as polynomials, and is not equal to it."""
    return arith.exact_div(big, small) is not None and not arith.prove_equal(small, big)
