"""Indexing: ``take`` (gather along an axis) and ``strided_slice`` (basic slicing).

``strided_slice`` follows Python slice semantics on every sliced axis: negative
bounds count from the end, out-of-range bounds are clamped, steps may be negative.
Bounds may be symbolic; the result length is then an arith expression, exact for
every value of the symbols (``x[::2]`` of ``n`` elements has ``(n + 1) // 2``). Axes
listed in ``drop`` are integer indices: their slice must have length 1 and the axis
is removed, so ``x[i]`` is ``strided_slice(begin=i, end=i + 1, drop=(0,))``.

``take`` follows ``jnp.take``: the result is ``a.shape[:axis] + indices.shape +
a.shape[axis + 1:]``. Out-of-range indices are handled by ``mode``:

- ``"fill"`` (jnp.take's default): negative indices count from the end; others
  out of range give ``fill_value`` converted to the array's dtype as numpy's
  ``astype`` does (as jax does), by default NaN (floats), the smallest value (signed
  ints), the largest (unsigned) or True (bool);
- ``"clip"``: indices are clamped to ``[0, n - 1]``;
- ``"wrap"``: indices are taken modulo ``n``;
- ``"index"`` (``x[indices]``): negative indices count from the end, then indices
  are clamped to ``[0, n - 1]``, as XLA's gather does for jax indexing.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from relaxjax import arith, dtypes, tir
from relaxjax.errors import InconclusiveShapeError, ShapeError
from relaxjax.ir import Check, StructInfo, TensorInfo
from relaxjax.ops.attr_checks import check_int
from relaxjax.ops.axes import normalize_axes
from relaxjax.ops.base import (
    InferContext,
    Op,
    info_text,
    normalize_axis,
    num_elements,
    reference_input,
    register,
    tensor_args,
)
from relaxjax.ops.kernel import (
    KernelDims,
    convert,
    gather_kernel,
    index_dims,
    placeholders,
    single_input,
)
from relaxjax.tir import PrimExpr, PrimFunc, te
from relaxjax.tir.expr import as_expr

Dim = arith.Dim

TAKE_MODES = ("fill", "clip", "wrap", "index")


# --------------------------------------------------------------------------- take


@dataclass(frozen=True, slots=True)
class TakeAttrs:
    """Attributes of ``take``: the gathered axis, the out-of-range ``mode`` and the
    ``fill_value`` of mode ``"fill"`` (None: the dtype's default, see :func:`fill_value`)."""

    axis: int = 0
    mode: str = "fill"
    fill_value: bool | int | float | None = None

    def __post_init__(self) -> None:
        check_int("TakeAttrs", "axis", self.axis)
        if self.mode not in TAKE_MODES:
            raise ValueError(f"take: mode must be one of {TAKE_MODES}, got {self.mode!r}")
        value = self.fill_value
        if value is not None and not isinstance(value, (bool, int, float)):
            raise TypeError(
                f"TakeAttrs.fill_value must be a bool, int, float or None, got {value!r}"
            )


def fill_element(dtype: str, value: bool | int | float | None = None) -> object:
    """The Python value ``take(mode="fill")`` gives for an out-of-range index of an array
    of ``dtype``: ``value`` converted as numpy's ``astype`` does (jax's conversion of a
    static fill value), or the default :func:`fill_value`."""
    if value is None:
        value = fill_value(dtype)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return np.asarray(value).astype(dtypes.to_numpy(dtype)).item()


def fill_value(dtype: str) -> object:
    """What ``take(mode="fill")`` gives by default for an out-of-range index."""
    if dtypes.is_floating(dtype):
        return np.nan
    if dtypes.is_bool(dtype):
        return True
    info = np.iinfo(dtypes.to_numpy(dtype))
    return info.max if dtypes.is_unsigned(dtype) else info.min


@register
class Take(Op):
    """``jnp.take`` along one axis: ``out[..., i, ...] = a[..., indices[i], ...]``."""

    name = "take"
    Attrs = TakeAttrs
    pattern = "injective"
    num_inputs = 2

    def infer(self, args: Sequence[StructInfo], attrs, ctx: InferContext) -> StructInfo:
        a, indices = tensor_args(self.name, args, 2)
        if dtypes.is_floating(indices.dtype):
            raise TypeError(f"take: indices must have an integer type, got {indices.dtype}")
        if a.ndim is None or indices.ndim is None:
            return TensorInfo(dtype=a.dtype, weak=a.weak)
        axis = normalize_axis(self.name, attrs.axis, a.ndim)
        out_ndim = a.ndim - 1 + indices.ndim
        if a.shape is None or indices.shape is None:
            return TensorInfo(dtype=a.dtype, ndim=out_ndim, weak=a.weak)
        size = a.shape[axis]
        count = num_elements(indices.shape)
        message = (
            f"{self.name}: cannot take {info_text(indices)} indices from axis {axis} of "
            f"{info_text(a)}: the axis is empty"
        )
        ctx.require(Check("le", (arith.min_(count, 1), size), message))
        return TensorInfo(
            a.shape[:axis] + indices.shape + a.shape[axis + 1 :], a.dtype, weak=a.weak
        )

    def reference(self, *arrays: object, attrs=None) -> np.ndarray:
        attrs = TakeAttrs() if attrs is None else attrs
        a = reference_input(arrays[0])
        indices = np.asarray(arrays[1]).astype(np.int64)
        axis = normalize_axis(self.name, attrs.axis, a.ndim)
        size = a.shape[axis]
        if indices.size == 0 or size == 0:
            shape = a.shape[:axis] + indices.shape + a.shape[axis + 1 :]
            return np.zeros(shape, a.dtype)
        if attrs.mode == "clip":
            return np.asarray(np.take(a, np.clip(indices, 0, size - 1), axis=axis))
        if attrs.mode == "wrap":
            return np.asarray(np.take(a, indices % size, axis=axis))
        wrapped = np.where(indices < 0, indices + size, indices)
        if attrs.mode == "index":
            return np.asarray(np.take(a, np.clip(wrapped, 0, size - 1), axis=axis))
        valid = (wrapped >= 0) & (wrapped < size)
        gathered = np.take(a, np.where(valid, wrapped, 0), axis=axis)
        mask = valid.reshape((1,) * axis + indices.shape + (1,) * (a.ndim - axis - 1))
        fill = np.asarray(fill_element(dtypes.canonical(a.dtype), attrs.fill_value))
        return np.asarray(np.where(mask, gathered, fill.astype(a.dtype)))

    def lower(self, arg_infos: Sequence[StructInfo], attrs, out_info: StructInfo) -> PrimFunc:
        """``out[p, j, q] = a[p, position(indices[j]), q]``, the position per ``mode``."""
        a, indices = placeholders(KernelDims(), arg_infos[:2], ("a", "indices"))
        axis = normalize_axis(self.name, attrs.axis, a.ndim)
        size = as_expr(a.shape[axis])
        shape = a.shape[:axis] + indices.shape + a.shape[axis + 1 :]
        count = indices.ndim

        def body(*loops: object) -> PrimExpr:
            i = index_dims(loops)
            raw = convert(indices[i[axis : axis + count]], "int64")

            def load(position: PrimExpr) -> PrimExpr:
                return a[i[:axis] + (position,) + i[axis + count :]]

            return _gather(attrs, raw, size, load, a.dtype)

        out = te.compute(shape, body, name=self.name)
        return te.create_prim_func([a, indices, out], name=self.name)


def _gather(attrs: TakeAttrs, raw: PrimExpr, size: PrimExpr, load, dtype: str) -> PrimExpr:
    """The element at index ``raw`` of an axis of ``size`` per the ``take`` mode."""
    mode = attrs.mode
    last = size - 1
    if mode == "clip":
        return load(tir.min(tir.max(raw, 0), last))
    if mode == "wrap":
        return load(raw % size)
    wrapped = tir.select(raw < 0, raw + size, raw)
    if mode == "index":
        return load(tir.min(tir.max(wrapped, 0), last))
    valid = (wrapped >= 0) & (wrapped < size)
    fill = fill_element(dtype, attrs.fill_value)
    return tir.if_then_else(valid, load(wrapped), as_expr(fill, dtype))


# --------------------------------------------------------------------------- strided_slice


def _is_dim(value: object) -> bool:
    return isinstance(value, arith.Expr) or (isinstance(value, int) and not isinstance(value, bool))


def step_sign(step: Dim) -> int:
    """+1 or -1; ``ValueError`` for a zero step, ``InconclusiveShapeError`` when the sign
    of a symbolic step is not provable.

    A symbolic step proven ``>= 0`` (or ``<= 0``) has its sign: 0 is not a valid step
    (Python and jax refuse it), so ``strided_slice`` checks at run time that it is not 0
    (:func:`nonzero_step_check`), and ``x[::x.shape[1]]`` deduces its shape.
    """
    if isinstance(step, int):
        if step == 0:
            raise ValueError("slice step cannot be zero")
        return 1 if step > 0 else -1
    if arith.compare(step, ">=", 0) is True:
        return 1
    if arith.compare(step, "<=", 0) is True:
        return -1
    raise InconclusiveShapeError(f"the sign of the slice step {step} cannot be proven")


def nonzero_step_check(op_name: str, step: Dim, axis: int) -> Check | None:
    """The run-time check that a symbolic step of known sign is not 0 (None when proven)."""
    if isinstance(step, int):
        return None
    relation = (1, step) if step_sign(step) > 0 else (step, -1)
    message = f"{op_name}: slice step {step} of axis {axis} cannot be zero"
    return Check("le", relation, message)


@dataclass(frozen=True, slots=True)
class StridedSliceAttrs:
    """Attributes of ``strided_slice``: per sliced axis its ``begin``/``end`` (a dim or
    None for the default) and nonzero ``step``; ``drop`` lists axes (among ``axes``)
    whose length-1 slice is removed (integer indexing)."""

    axes: tuple[int, ...]
    begin: tuple[Dim | None, ...]
    end: tuple[Dim | None, ...]
    step: tuple[Dim, ...]
    drop: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        fields = (self.axes, self.begin, self.end, self.step, self.drop)
        if not all(isinstance(f, tuple) for f in fields):
            raise TypeError("StridedSliceAttrs fields must be tuples")
        if not len(self.axes) == len(self.begin) == len(self.end) == len(self.step):
            raise ValueError(
                "StridedSliceAttrs: axes, begin, end and step must have the same length, got "
                f"{len(self.axes)}, {len(self.begin)}, {len(self.end)}, {len(self.step)}"
            )
        for axis in self.axes + self.drop:
            if isinstance(axis, bool) or not isinstance(axis, int):
                raise TypeError(f"StridedSliceAttrs axes must be ints, got {axis!r}")
        if len(set(self.axes)) != len(self.axes):
            raise ValueError(f"strided_slice: duplicate axis in {self.axes}")
        if not set(self.drop) <= set(self.axes):
            raise ValueError(f"strided_slice: drop axes {self.drop} must be among {self.axes}")
        for bound in self.begin + self.end:
            if bound is not None and not _is_dim(bound):
                raise TypeError(f"slice bounds must be ints, dims or None, got {bound!r}")
        for step in self.step:
            if not _is_dim(step):
                raise TypeError(f"slice steps must be ints or dims, got {step!r}")
            step_sign(step)


def _wrapped(bound: Dim, size: Dim) -> Dim:
    """``bound + size`` when ``bound`` is negative, else ``bound`` (exact for symbols of
    unknown sign: ``min(max(-bound, 0), 1)`` is 1 exactly when the integer is negative)."""
    sign = arith.compare(bound, ">=", 0)
    if sign is True:
        return bound
    if sign is False:
        return bound + size
    return bound + size * arith.min_(arith.max_(-bound, 0), 1)


def slice_extent(size: Dim, begin: Dim | None, end: Dim | None, step: Dim) -> tuple[Dim, Dim]:
    """``(start, length)`` of ``range(size)[begin:end:step]``: element ``j`` of the slice
    is element ``start + j * step`` of the axis (``start`` is meaningful when
    ``length > 0``).

    With ``b``/``e`` the wrapped bounds, Python clamps them to ``[0, size]`` (to
    ``[-1, size - 1]`` for a negative step) before taking
    ``ceil((stop - start) / step)``; clamping only the side that can matter gives the
    same length and simpler expressions: ``max((min(e, size) - max(b, 0) + step - 1)
    // step, 0)``.
    """
    if step_sign(step) > 0:
        start = 0 if begin is None else arith.max_(_wrapped(begin, size), 0)
        stop = size if end is None else arith.min_(_wrapped(end, size), size)
        return start, arith.max_(arith.floordiv(stop - start + step - 1, step), 0)
    start = size - 1 if begin is None else arith.min_(_wrapped(begin, size), size - 1)
    stop = -1 if end is None else arith.max_(_wrapped(end, size), -1)
    return start, arith.max_(arith.floordiv(start - stop - step - 1, -step), 0)


def _concrete(value: Dim | None, what: str) -> int | None:
    if value is None or isinstance(value, int):
        return value
    raise TypeError(f"strided_slice reference: {what} {value} is symbolic; substitute it first")


@register
class StridedSlice(Op):
    """Basic slicing ``x[b0:e0:s0, ...]`` (Python semantics), with integer indexing."""

    name = "strided_slice"
    Attrs = StridedSliceAttrs
    pattern = "injective"
    num_inputs = 1

    def infer(self, args: Sequence[StructInfo], attrs, ctx: InferContext) -> StructInfo:
        (x,) = tensor_args(self.name, args, 1)
        if x.ndim is None:
            return TensorInfo(dtype=x.dtype, weak=x.weak)
        axes = normalize_axes(self.name, attrs.axes, x.ndim)
        drop = set(normalize_axes(self.name, attrs.drop, x.ndim))
        out_ndim = x.ndim - len(drop)
        if x.shape is None:
            return TensorInfo(dtype=x.dtype, ndim=out_ndim, weak=x.weak)
        shape = list(x.shape)
        for axis, begin, end, step in zip(axes, attrs.begin, attrs.end, attrs.step):
            check = nonzero_step_check(self.name, step, axis)
            if check is not None:
                ctx.require(check)
            _, shape[axis] = slice_extent(x.shape[axis], begin, end, step)
            if axis in drop:
                message = (
                    f"{self.name}: index {begin} is out of bounds for axis {axis} of "
                    f"{info_text(x)} (size {x.shape[axis]})"
                )
                ctx.require(Check("eq", (shape[axis], 1), message))
        return TensorInfo(
            tuple(d for i, d in enumerate(shape) if i not in drop), x.dtype, weak=x.weak
        )

    def lower(self, arg_infos: Sequence[StructInfo], attrs, out_info: StructInfo) -> PrimFunc:
        """``out[i] = x[start + i * step]`` on sliced axes, ``x[start]`` on dropped ones."""
        dims, x = single_input(arg_infos)
        axes = normalize_axes(self.name, attrs.axes, x.ndim)
        drop = set(normalize_axes(self.name, attrs.drop, x.ndim))
        starts: dict[int, Dim] = {}
        steps: dict[int, Dim] = {}
        shape = list(x.shape)
        for axis, begin, end, step in zip(axes, attrs.begin, attrs.end, attrs.step):
            begin, end = (None if b is None else dims.value(b) for b in (begin, end))
            steps[axis] = dims.value(step)
            starts[axis], shape[axis] = slice_extent(x.shape[axis], begin, end, steps[axis])
        out_shape = tuple(d for a, d in enumerate(shape) if a not in drop)

        def source(i: Sequence[Dim]) -> tuple[Dim, ...]:
            kept = iter(i)
            result = []
            for a in range(x.ndim):
                index = 0 if a in drop else next(kept)
                result.append(starts[a] + index * steps[a] if a in starts else index)
            return tuple(result)

        return gather_kernel(self.name, x, out_shape, source)

    def reference(self, *arrays: object, attrs=None) -> np.ndarray:
        x = reference_input(arrays[0])
        index: list[slice] = [slice(None)] * x.ndim
        axes = normalize_axes(self.name, attrs.axes, x.ndim)
        for axis, begin, end, step in zip(axes, attrs.begin, attrs.end, attrs.step):
            index[axis] = slice(
                _concrete(begin, "begin"), _concrete(end, "end"), _concrete(step, "step")
            )
        result = x[tuple(index)]
        drop = normalize_axes(self.name, attrs.drop, x.ndim)
        for axis in drop:
            if result.shape[axis] != 1:
                raise ShapeError(f"{self.name}: index out of bounds for axis {axis}")
        return np.squeeze(result, axis=drop).copy()


__all__ = [
    "TAKE_MODES",
    "StridedSliceAttrs",
    "TakeAttrs",
    "fill_element",
    "fill_value",
    "nonzero_step_check",
    "slice_extent",
    "step_sign",
]
