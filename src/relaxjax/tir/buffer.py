"""Buffers: named n-d arrays with symbolic shapes, and regions of them.

A :class:`Buffer` is row-major unless it carries explicit ``strides`` (in
elements). Its shape and strides are dims (``int`` or ``arith.Expr``), so one
kernel serves every value of its symbols. Buffers are value-like: two buffers
with the same name, shape, dtype, strides and scope are equal; a kernel keeps
buffer names unique.

>>> from relaxjax import arith
>>> n = arith.sym("n")
>>> A = Buffer("A", (n, 4), "float32")
>>> A.ndim, A.strides_or_default()
(2, (4, 1))
"""

from __future__ import annotations

import keyword
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from relaxjax import arith, dtypes
from relaxjax.arith import Dim

SCOPES: tuple[str, ...] = ("global", "shared", "local")


def as_dim(value: object, what: str) -> Dim:
    """``value`` as a canonical dim: an int, an ``arith.Expr`` or a string parsed by arith."""
    if isinstance(value, bool):
        raise TypeError(f"{what}: expected an int or symbolic dim, got {value!r}")
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, arith.Expr):
        return value
    if isinstance(value, str):
        return arith.parse_dim(value)
    dim = getattr(value, "index_dim", None)
    if dim is not None:
        return dim
    kind = type(value).__name__
    raise TypeError(f"{what}: expected an int or symbolic dim, got {kind} {value!r}")


def as_dims(values: object, what: str) -> tuple[Dim, ...]:
    """A tuple of dims from a sequence (a lone dim is a 1-tuple)."""
    if isinstance(values, (int, np.integer, arith.Expr, str)):
        values = (values,)
    if not isinstance(values, Sequence):
        raise TypeError(f"{what}: expected a sequence of dims, got {type(values).__name__}")
    return tuple(as_dim(v, f"{what}[{axis}]") for axis, v in enumerate(values))


def check_name(name: object, what: str) -> str:
    """``name`` when it is a usable identifier (printed text must parse back)."""
    if not isinstance(name, str) or not name.isidentifier() or keyword.iskeyword(name):
        raise ValueError(f"{what} name must be a Python identifier, got {name!r}")
    return name


def _check_nonnegative(dims: tuple[Dim, ...], what: str) -> None:
    for axis, dim in enumerate(dims):
        if isinstance(dim, int) and dim < 0:
            raise ValueError(f"{what}: axis {axis} has negative extent {dim}")


@dataclass(frozen=True, slots=True, repr=False)
class Buffer:
    """A named array of ``dtype`` elements with a (symbolic) ``shape``.

    ``strides`` (elements, one per axis) default to row-major; ``scope`` is where it
    lives: ``"global"`` (parameters, heap), ``"shared"`` (GPU block-shared) or
    ``"local"`` (registers / stack temporaries). ``A[i, j]`` builds a load;
    ``A[i, 0:n]`` a :class:`BufferRegion`.
    """

    name: str
    shape: tuple[Dim, ...]
    dtype: str = "float32"
    strides: tuple[Dim, ...] | None = None
    scope: str = "global"

    def __post_init__(self) -> None:
        check_name(self.name, "buffer")
        shape = as_dims(self.shape, f"buffer {self.name} shape")
        _check_nonnegative(shape, f"buffer {self.name} shape")
        object.__setattr__(self, "shape", shape)
        object.__setattr__(self, "dtype", dtypes.canonical(self.dtype))
        if self.strides is not None:
            strides = as_dims(self.strides, f"buffer {self.name} strides")
            if len(strides) != len(shape):
                raise ValueError(
                    f"buffer {self.name}: {len(strides)} strides given for {len(shape)} axes"
                )
            object.__setattr__(self, "strides", strides)
        if self.scope not in SCOPES:
            raise ValueError(
                f"buffer {self.name}: scope must be one of {SCOPES}, got {self.scope!r}"
            )

    @property
    def ndim(self) -> int:
        """The number of axes."""
        return len(self.shape)

    def strides_or_default(self) -> tuple[Dim, ...]:
        """The explicit strides, or the row-major ones (in elements)."""
        if self.strides is not None:
            return self.strides
        strides: list[Dim] = []
        step: Dim = 1
        for dim in reversed(self.shape):
            strides.append(step)
            step = step * dim
        return tuple(reversed(strides))

    def size(self) -> Dim:
        """The number of elements (the product of the shape)."""
        total: Dim = 1
        for dim in self.shape:
            total = total * dim
        return total

    def offset_of(self, indices: Sequence[Dim]) -> Dim:
        """The element offset of ``indices`` from the start of the buffer."""
        self.check_index_count(len(indices))
        offset: Dim = 0
        for index, stride in zip(indices, self.strides_or_default()):
            offset = offset + index * stride
        return offset

    def symbols(self) -> frozenset[arith.Sym]:
        """The symbols that occur in the shape and strides."""
        found: set[arith.Sym] = set()
        for dim in self.shape + (self.strides or ()):
            found |= arith.free_symbols(dim)
        return frozenset(found)

    def check_index_count(self, count: int) -> None:
        """Raise ``ValueError`` naming the buffer unless ``count`` equals its rank."""
        if count != self.ndim:
            raise ValueError(
                f"buffer {self.name} has {self.ndim} dimension(s) {_shape_text(self.shape)}"
                f" but {count} index(es) were given"
            )

    def with_shape(self, shape: Sequence[Dim], strides: Sequence[Dim] | None = None) -> Buffer:
        """A copy with another shape (and strides)."""
        return Buffer(self.name, tuple(shape), self.dtype, strides, self.scope)

    def __getitem__(self, indices: object):
        from relaxjax.tir.expr import BufferLoad

        items = indices if isinstance(indices, tuple) else (indices,)
        if any(isinstance(item, slice) for item in items):
            return BufferRegion.from_slices(self, items)
        return BufferLoad(self, items)

    def __repr__(self) -> str:
        extra = "" if self.strides is None else f", strides={_shape_text(self.strides)}"
        extra += "" if self.scope == "global" else f", scope={self.scope!r}"
        return f"Buffer({self.name}, {_shape_text(self.shape)}, {self.dtype!r}{extra})"


def _shape_text(dims: Sequence[Dim]) -> str:
    inner = ", ".join(str(d) for d in dims)
    return f"({inner},)" if len(dims) == 1 else f"({inner})"


@dataclass(frozen=True, slots=True)
class Range:
    """The half-open integer interval ``[start, start + extent)``."""

    start: Dim
    extent: Dim

    def __post_init__(self) -> None:
        object.__setattr__(self, "start", as_dim(self.start, "range start"))
        object.__setattr__(self, "extent", as_dim(self.extent, "range extent"))
        if isinstance(self.extent, int) and self.extent < 0:
            raise ValueError(f"range extent must be >= 0, got {self.extent}")

    @property
    def stop(self) -> Dim:
        """``start + extent``."""
        return self.start + self.extent


@dataclass(frozen=True, slots=True, repr=False)
class BufferRegion:
    """A rectangular part of a buffer: one :class:`Range` per axis."""

    buffer: Buffer
    region: tuple[Range, ...]

    def __post_init__(self) -> None:
        if not isinstance(self.buffer, Buffer):
            raise TypeError(f"BufferRegion needs a Buffer, got {type(self.buffer).__name__}")
        region = tuple(self.region)
        if not all(isinstance(r, Range) for r in region):
            raise TypeError(f"region of {self.buffer.name} must be a tuple of Range")
        self.buffer.check_index_count(len(region))
        object.__setattr__(self, "region", region)

    @staticmethod
    def full(buffer: Buffer) -> BufferRegion:
        """The whole buffer."""
        return BufferRegion(buffer, tuple(Range(0, dim) for dim in buffer.shape))

    @staticmethod
    def point(buffer: Buffer, indices: Sequence[Dim]) -> BufferRegion:
        """The single element at ``indices``."""
        return BufferRegion(buffer, tuple(Range(index, 1) for index in indices))

    @staticmethod
    def from_slices(buffer: Buffer, items: Sequence[object]) -> BufferRegion:
        """``A[i, 0:n]``-style items: a slice ``a:b`` (no step) or a point."""
        ranges = []
        for axis, item in enumerate(items):
            if isinstance(item, slice):
                if item.step is not None:
                    raise ValueError(f"region of {buffer.name}: slices take no step")
                start = 0 if item.start is None else as_dim(item.start, "slice start")
                if item.stop is None:
                    stop = buffer.shape[axis] if axis < buffer.ndim else 0
                else:
                    stop = as_dim(item.stop, "slice stop")
                ranges.append(Range(start, stop - start))
            else:
                ranges.append(Range(as_dim(item, "region index"), 1))
        return BufferRegion(buffer, tuple(ranges))

    def __repr__(self) -> str:
        from relaxjax.tir.printer import region_text

        return region_text(self)
