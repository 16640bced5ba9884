"""``gather`` (``x[key]``) and ``scatter`` (``x.at[key].set/add/...``) for keys mixing
slices and integer arrays (numpy's advanced indexing).

Both ops read the key from the same attributes (:class:`IndexFields`):

- ``axes``: the axes of ``x`` indexed by the index operands, one per operand (the
  operands are integer tensors or scalars of any rank, broadcast together to a shape
  ``B``);
- ``slice_axes``/``begin``/``end``/``step``: Python slices of other axes (as in
  ``strided_slice``); the remaining axes are taken whole;
- ``position``: where the ``B`` axes go among the other axes of the result. The
  result of ``gather`` (and the shape ``scatter``'s updates must have) is
  ``rest[:position] + B + rest[position:]``, ``rest`` the sliced and whole axes of
  ``x`` in order. numpy puts ``B`` where the first integer-array index is when the
  advanced indices are adjacent, else in front: the wrapper decides;
- ``wrap``: negative indices count from the end (jax's ``wrap_negative_indices``).

Out-of-range indices (after wrapping) follow ``mode``, as jax's
``GatherScatterMode``:

- gather ``"clip"`` (jax's default for indexing): clamped to ``[0, n - 1]``; ``"fill"``:
  the element is ``fill_value`` (by default NaN, the smallest signed int, the largest
  unsigned int or True, as ``take``);
- scatter ``"drop"`` (jax's default for ``.at[]`` updates): the update is skipped;
  ``"clip"``: clamped.

``scatter(x, updates, *indices)`` returns ``x`` with each element of ``updates``
combined into the element of ``x`` it indexes, in row-major order of ``updates``:
``reduction`` ``"set"`` (so with repeated indices the last update wins: jax leaves the
order unspecified, this is deterministic), ``"add"``, ``"subtract"``, ``"multiply"``,
``"min"`` or ``"max"`` (repeated indices accumulate). The combination is computed in the updates'
dtype and stored converted to ``x``'s dtype, which is how jax computes ``.at[]``
updates (in the promoted dtype of ``x`` and the values, converted back): the wrapper
converts the values to that dtype.

The scatter kernel copies ``x`` to the result, then applies the updates serially;
:meth:`Scatter.lower_inplace` is the same kernel without the copy, for a result
that reuses ``x``'s buffer when ``x`` is dead afterwards.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from relaxjax import arith, dtypes, tir
from relaxjax.ir import Check, StructInfo, TensorInfo
from relaxjax.ops.attr_checks import check_flag, check_int
from relaxjax.ops.axes import normalize_axes
from relaxjax.ops.base import (
    InferContext,
    Op,
    as_tensor_info,
    broadcast_shapes,
    fail,
    info_text,
    num_elements,
    reference_input,
    register,
    require_equal,
)
from relaxjax.ops.index import StridedSliceAttrs, fill_element, slice_extent
from relaxjax.ops.kernel import KernelDims, broadcast_indices, convert, index_dims, placeholders
from relaxjax.ops.serial import let_index, loop_nest, seq, when
from relaxjax.tir import Buffer, BufferStore, PrimExpr, PrimFunc, Stmt, te
from relaxjax.tir.analysis import free_symbols
from relaxjax.tir.expr import as_expr

Dim = arith.Dim

GATHER_MODES = ("clip", "fill")
SCATTER_MODES = ("clip", "drop")
SCATTER_REDUCTIONS = ("set", "add", "subtract", "multiply", "min", "max")


# --------------------------------------------------------------------------- the key


@dataclass(frozen=True, slots=True)
class IndexFields:
    """The key shared by ``gather`` and ``scatter`` (see the module doc)."""

    axes: tuple[int, ...]
    position: int = 0
    slice_axes: tuple[int, ...] = ()
    begin: tuple[Dim | None, ...] = ()
    end: tuple[Dim | None, ...] = ()
    step: tuple[Dim, ...] = ()
    wrap: bool = True

    def __post_init__(self) -> None:
        name = type(self).__name__
        if not isinstance(self.axes, tuple):
            raise TypeError(f"{name}.axes must be a tuple of ints, got {self.axes!r}")
        for axis in self.axes:
            check_int(name, "axes", axis)
        check_int(name, "position", self.position)
        if self.position < 0:
            raise ValueError(f"{name}.position must be >= 0, got {self.position}")
        check_flag(name, "wrap", self.wrap)
        # the slices are validated as strided_slice's
        StridedSliceAttrs(self.slice_axes, self.begin, self.end, self.step)
        if len(set(self.axes)) != len(self.axes) or set(self.axes) & set(self.slice_axes):
            raise ValueError(
                f"{name}: each axis is indexed once, got axes={self.axes} and "
                f"slice_axes={self.slice_axes}"
            )


@dataclass(frozen=True, slots=True)
class GatherAttrs(IndexFields):
    """Attributes of ``gather``: the key, ``mode`` and the ``fill_value`` of ``"fill"``."""

    mode: str = "clip"
    fill_value: bool | int | float | None = None

    def __post_init__(self) -> None:
        IndexFields.__post_init__(self)
        if self.mode not in GATHER_MODES:
            raise ValueError(f"gather: mode must be one of {GATHER_MODES}, got {self.mode!r}")
        value = self.fill_value
        if value is not None and not isinstance(value, (bool, int, float)):
            raise TypeError(
                f"GatherAttrs.fill_value must be a bool, int, float or None, got {value!r}"
            )


@dataclass(frozen=True, slots=True)
class ScatterAttrs(IndexFields):
    """Attributes of ``scatter``: the key, the ``reduction`` and ``mode``."""

    reduction: str = "set"
    mode: str = "drop"

    def __post_init__(self) -> None:
        IndexFields.__post_init__(self)
        if self.reduction not in SCATTER_REDUCTIONS:
            raise ValueError(
                f"scatter: reduction must be one of {SCATTER_REDUCTIONS}, got {self.reduction!r}"
            )
        if self.mode not in SCATTER_MODES:
            raise ValueError(f"scatter: mode must be one of {SCATTER_MODES}, got {self.mode!r}")


@dataclass(frozen=True, slots=True)
class Layout:
    """The key applied to an ``x`` of known rank: which axis each index operand reads,
    each kept axis's slice ``(start, step)`` (None: whole) and the result's axes."""

    ndim: int
    axes: tuple[int, ...]
    kept: tuple[int, ...]  # the other axes of x, in order
    slices: dict[int, tuple[Dim | None, Dim | None, Dim]]
    position: int
    batch_ndim: int

    def kept_extent(self, axis: int, size: Dim) -> tuple[Dim, Dim, Dim]:
        """``(start, step, length)`` of kept ``axis`` of ``size``."""
        if axis not in self.slices:
            return 0, 1, size
        begin, end, step = self.slices[axis]
        start, length = slice_extent(size, begin, end, step)
        return start, step, length

    def result_shape(self, rest: Sequence[Dim], batch: Sequence[Dim]) -> tuple[Dim, ...]:
        return tuple(rest[: self.position]) + tuple(batch) + tuple(rest[self.position :])

    def split(self, index: Sequence[Dim]) -> tuple[tuple[Dim, ...], tuple[Dim, ...]]:
        """A result index as ``(rest index, batch index)``."""
        end = self.position + self.batch_ndim
        return tuple(index[: self.position]) + tuple(index[end:]), tuple(index[self.position : end])


def layout(op_name: str, attrs: IndexFields, ndim: int, batch_ndim: int) -> Layout:
    """The key of ``attrs`` on an array of rank ``ndim`` (``ShapeError`` for axes out of
    range or a position past the result's other axes)."""
    axes = normalize_axes(op_name, attrs.axes, ndim)
    slice_axes = normalize_axes(op_name, attrs.slice_axes, ndim)
    if set(axes) & set(slice_axes):
        fail(op_name, f"axes {axes} and slice_axes {slice_axes} overlap")
    kept = tuple(a for a in range(ndim) if a not in axes)
    if attrs.position > len(kept):
        fail(
            op_name,
            f"position {attrs.position} is past the {len(kept)} axes not indexed by arrays",
        )
    slices = {a: (b, e, s) for a, b, e, s in zip(slice_axes, attrs.begin, attrs.end, attrs.step)}
    return Layout(ndim, axes, kept, slices, attrs.position, batch_ndim)


def _index_infos(op_name: str, args: Sequence[StructInfo], count: int) -> list[TensorInfo]:
    infos = [as_tensor_info(a, op_name, i) for i, a in enumerate(args)]
    if len(infos) != count:
        fail(op_name, f"the key indexes {count} axes with arrays, got {len(infos)} index operands")
    for info in infos:
        if not dtypes.is_integer(info.dtype):
            raise TypeError(
                f"{op_name}: indices must have an integer type, got {info.dtype} "
                "(boolean masks are converted to integer indices first)"
            )
    return infos


def indexed_info(
    op_name: str,
    x: TensorInfo,
    indices: Sequence[TensorInfo],
    attrs: IndexFields,
    ctx: InferContext,
    nonempty_axes: bool,
) -> TensorInfo:
    """The info of ``x[key]``; with ``nonempty_axes``, gathering from an empty indexed axis
    (which has no element to clamp to) is an error."""
    if x.ndim is None or any(i.ndim is None for i in indices):
        return TensorInfo(dtype=x.dtype, weak=x.weak)
    batch_ndim = max((i.ndim for i in indices), default=0)
    lay = layout(op_name, attrs, x.ndim, batch_ndim)
    out_ndim = len(lay.kept) + batch_ndim
    if x.shape is None or any(i.shape is None for i in indices):
        return TensorInfo(dtype=x.dtype, ndim=out_ndim, weak=x.weak)
    batch = broadcast_shapes(ctx, [i.shape for i in indices])
    rest = [lay.kept_extent(a, x.shape[a])[2] for a in lay.kept]
    if nonempty_axes and batch is not None:
        count = num_elements(batch)
        if arith.compare(num_elements(rest), ">", 0) is not True:
            count = count * num_elements(rest)  # a result without elements reads nothing
        for axis in lay.axes:
            message = (
                f"{op_name}: cannot index axis {axis} of {info_text(x)} with "
                f"{info_text(TensorInfo(batch, 'int64'))} indices: the axis is empty"
            )
            ctx.require(Check("le", (arith.min_(count, 1), x.shape[axis]), message))
    if batch is None:
        return TensorInfo(dtype=x.dtype, ndim=out_ndim, weak=x.weak)
    return TensorInfo(lay.result_shape(rest, batch), x.dtype, weak=x.weak)


def kernel_attrs(attrs: IndexFields, dims: KernelDims) -> IndexFields:
    """``attrs`` with the slice bounds written with the kernel's symbols."""

    def value(bound: Dim | None) -> Dim | None:
        return None if bound is None else dims.value(bound)

    return dataclasses.replace(
        attrs,
        begin=tuple(map(value, attrs.begin)),
        end=tuple(map(value, attrs.end)),
        step=tuple(dims.value(s) for s in attrs.step),
    )


# --------------------------------------------------------------------------- references


def _positions(
    x_shape: tuple[int, ...], indices: Sequence[np.ndarray], attrs: IndexFields
) -> tuple[Layout, tuple[int, ...], list[np.ndarray], np.ndarray]:
    """For ``x[key]``: the layout, the result shape, one array of source positions per
    axis of ``x`` (over the result's elements) and whether each element is in range."""
    arrays = [np.asarray(i).astype(np.int64) for i in indices]
    batch = np.broadcast_shapes(*(a.shape for a in arrays)) if arrays else ()
    lay = layout("gather", attrs, len(x_shape), len(batch))
    extents = {a: lay.kept_extent(a, x_shape[a]) for a in lay.kept}
    rest = [extents[a][2] for a in lay.kept]
    shape = lay.result_shape(rest, batch)
    grid = np.indices(shape, dtype=np.int64) if shape else np.zeros((0,), np.int64)
    rest_grid, batch_grid = lay.split(list(grid)) if shape else ((), ())
    positions: list[np.ndarray] = [np.zeros(shape, np.int64) for _ in x_shape]
    valid = np.ones(shape, bool)
    for k, axis in zip(range(len(arrays)), lay.axes):
        raw = np.broadcast_to(arrays[k], batch)[tuple(batch_grid)] if batch_grid else arrays[k]
        raw = np.broadcast_to(raw, shape)
        if attrs.wrap:
            raw = np.where(raw < 0, raw + x_shape[axis], raw)
        valid &= (raw >= 0) & (raw < x_shape[axis])
        positions[axis] = raw
    for j, axis in enumerate(lay.kept):
        start, step, _ = extents[axis]
        positions[axis] = start + rest_grid[j] * step
    return lay, shape, positions, valid


def _clip(positions: list[np.ndarray], lay: Layout, x_shape: tuple[int, ...]) -> list:
    clipped = list(positions)
    for axis in lay.axes:
        clipped[axis] = np.clip(positions[axis], 0, max(x_shape[axis] - 1, 0))
    return clipped


def _quiet_astype(value: np.ndarray, dtype: np.dtype) -> np.ndarray:
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return np.asarray(value).astype(dtype)


# --------------------------------------------------------------------------- gather


@register
class Gather(Op):
    """``x[key]`` for keys of slices and integer arrays (numpy's advanced indexing)."""

    name = "gather"
    Attrs = GatherAttrs
    pattern = "injective"
    num_inputs = None

    def infer(self, args: Sequence[StructInfo], attrs, ctx: InferContext) -> StructInfo:
        if not args:
            raise TypeError("gather takes an array and its index operands")
        x = as_tensor_info(args[0], self.name)
        indices = _index_infos(self.name, args[1:], len(attrs.axes))
        return indexed_info(self.name, x, indices, attrs, ctx, attrs.mode == "clip")

    def reference(self, *arrays: object, attrs=None) -> np.ndarray:
        x = reference_input(arrays[0])
        lay, shape, positions, valid = _positions(x.shape, arrays[1:], attrs)
        if attrs.mode == "fill":
            fill = np.asarray(fill_element(dtypes.canonical(x.dtype), attrs.fill_value))
            if any(x.shape[a] == 0 for a in lay.axes) or 0 in x.shape:
                return np.full(shape, fill, x.dtype)
            safe = [np.where(valid, p, 0) if a in lay.axes else p for a, p in enumerate(positions)]
            return np.where(valid, x[tuple(safe)], fill.astype(x.dtype))
        if 0 in shape:
            return np.zeros(shape, x.dtype)
        return np.asarray(x[tuple(_clip(positions, lay, x.shape))])

    def lower(self, arg_infos: Sequence[StructInfo], attrs, out_info: StructInfo) -> PrimFunc:
        """``out[r, b] = x[source(r, b)]``, the array axes' positions read from the index
        operands (broadcast) and wrapped, clamped or range-checked per ``mode``."""
        dims = KernelDims()
        names = ("x", *(f"i{k}" for k in range(len(arg_infos) - 1)))
        x, *indices = placeholders(dims, arg_infos, names)
        shape = dims.output_shape(out_info)
        attrs = kernel_attrs(attrs, dims)
        lay = layout(self.name, attrs, x.ndim, len(shape) - len(x.shape) + len(attrs.axes))
        batch_shape = lay.split(shape)[1]

        def body(*loops: object) -> PrimExpr:
            rest, batch = lay.split(index_dims(loops))
            positions = _positions_read(lay, attrs, x.shape, indices, batch_shape, batch)
            value = x[_target(lay, x.shape, rest, positions)]
            if attrs.mode == "clip":
                return value
            fill = as_expr(fill_element(x.dtype, attrs.fill_value), x.dtype)
            return tir.if_then_else(_in_range(lay, x.shape, positions), value, fill)

        out = te.compute(shape, body, name=self.name)
        return te.create_prim_func([x, *indices, out], name=self.name)


def _positions_read(
    lay: Layout,
    attrs: IndexFields,
    x_shape: Sequence[Dim],
    indices: Sequence[te.Tensor],
    batch_shape: Sequence[Dim],
    batch: Sequence[Dim],
) -> list[PrimExpr]:
    """The position each index operand gives for batch element ``batch``: wrapped when
    negative (``attrs.wrap``) and clamped in ``"clip"`` mode."""
    positions = []
    for tensor, axis in zip(indices, lay.axes):
        size = as_expr(x_shape[axis])
        raw = convert(tensor[broadcast_indices(tensor.shape, batch_shape, batch)], "int64")
        if attrs.wrap:
            raw = tir.select(raw < 0, raw + size, raw)
        positions.append(tir.min(tir.max(raw, 0), size - 1) if attrs.mode == "clip" else raw)
    return positions


def _in_range(lay: Layout, x_shape: Sequence[Dim], positions: Sequence[object]) -> PrimExpr:
    """Whether every array position is within its axis."""
    checks = [
        (as_expr(p) >= 0) & (as_expr(p) < as_expr(x_shape[a])) for p, a in zip(positions, lay.axes)
    ]
    valid = checks[0] if checks else as_expr(True)
    for check in checks[1:]:
        valid = valid & check
    return valid


def _target(
    lay: Layout, x_shape: Sequence[Dim], rest: Sequence[Dim], positions: Sequence[object]
) -> tuple[object, ...]:
    """The index of ``x`` for the array ``positions`` and the kept axes' ``rest`` index."""
    target: list[object] = [0] * lay.ndim
    for position, axis in zip(positions, lay.axes):
        target[axis] = position
    for j, axis in enumerate(lay.kept):
        start, step, _ = lay.kept_extent(axis, x_shape[axis])
        target[axis] = start + rest[j] * step
    return tuple(target)


# --------------------------------------------------------------------------- scatter


def _combine(reduction: str, dtype: str) -> Callable[[PrimExpr, PrimExpr], PrimExpr]:
    """The kernel's ``old (+) update`` in the compute dtype ``dtype``."""
    boolean = dtypes.is_bool(dtype)
    if reduction == "set":
        return lambda old, new: new
    if reduction == "add":
        return lambda old, new: old + new
    if reduction == "subtract":
        return lambda old, new: old - new
    if reduction == "multiply":
        return lambda old, new: old * new
    if reduction == "min":
        return (lambda old, new: old & new) if boolean else tir.min
    return (lambda old, new: old | new) if boolean else tir.max


def _bind_positions(
    read: Sequence[PrimExpr], bound: list[arith.Sym], body: Callable[[list], Stmt]
) -> Stmt:
    """``body(positions)`` with each position read once into an index symbol ``p<k>``."""
    if len(bound) == len(read):
        return body(bound)
    k = len(bound)
    return let_index(f"p{k}", read[k], lambda p: _bind_positions(read, [*bound, p], body))


_NUMPY_REDUCTIONS = {
    "add": np.add,
    "subtract": np.subtract,
    "multiply": np.multiply,
    "min": np.minimum,
    "max": np.maximum,
}


@register
class Scatter(Op):
    """``x`` with ``updates`` combined in at ``x[key]`` (jax's ``x.at[key].set/add/...``)."""

    name = "scatter"
    Attrs = ScatterAttrs
    pattern = "opaque"
    num_inputs = None
    #: The operand :meth:`lower_inplace` writes into (``passes.inplace_updates``, on the
    #: control-flow branch: a dead ``x`` is updated in place instead of copied).
    inplace_operand = 0

    def infer(self, args: Sequence[StructInfo], attrs, ctx: InferContext) -> StructInfo:
        if len(args) < 2:
            raise TypeError("scatter takes an array, the updates and their index operands")
        x = as_tensor_info(args[0], self.name)
        updates = as_tensor_info(args[1], self.name, 1)
        indices = _index_infos(self.name, args[2:], len(attrs.axes))
        if attrs.reduction in ("add", "subtract", "multiply") and dtypes.is_bool(updates.dtype):
            raise TypeError(f"scatter: {attrs.reduction} does not accept bool values")
        target = indexed_info(self.name, x, indices, attrs, ctx, False)
        if target.ndim is not None and updates.ndim is not None and target.ndim != updates.ndim:
            fail(
                self.name,
                f"the updates {info_text(updates)} must have the shape of the indexed "
                f"part {info_text(target)}",
            )
        if target.shape is not None and updates.shape is not None:
            for axis, (want, got) in enumerate(zip(target.shape, updates.shape)):
                require_equal(
                    ctx,
                    got,
                    want,
                    f"updates axis {axis} is {got}, x[key] {info_text(target)} has {want}",
                )
        return x

    def reference(self, *arrays: object, attrs=None) -> np.ndarray:
        x = reference_input(arrays[0])
        updates = reference_input(arrays[1])
        lay, shape, positions, valid = _positions(x.shape, arrays[2:], attrs)
        out = x.copy()
        if 0 in shape or 0 in x.shape:
            return out
        updates = np.broadcast_to(updates, shape)
        if attrs.mode == "clip":
            positions = _clip(positions, lay, x.shape)
            valid = np.ones(shape, bool)
        flat = np.ravel_multi_index(
            tuple(np.where(valid, p, 0) for p in positions), x.shape
        ).ravel()[valid.ravel()]
        values = updates.ravel()[valid.ravel()]
        if attrs.reduction == "set":
            # the last update of each element wins: keep each position's last occurrence
            _, last_reversed = np.unique(flat[::-1], return_index=True)
            keep = len(flat) - 1 - last_reversed
            out.flat[flat[keep]] = _quiet_astype(values[keep], x.dtype)
            return out
        compute = out.astype(values.dtype)
        _NUMPY_REDUCTIONS[attrs.reduction].at(compute.reshape(-1), flat, values)
        return _quiet_astype(compute, x.dtype)

    def lower(self, arg_infos: Sequence[StructInfo], attrs, out_info: StructInfo) -> PrimFunc:
        """``out = x`` (a serial copy), then :meth:`lower_inplace`'s updates."""
        return self._kernel(arg_infos, attrs, out_info, inplace=False)

    def lower_inplace(
        self, arg_infos: Sequence[StructInfo], attrs, out_info: StructInfo
    ) -> PrimFunc:
        """The kernel ``(updates, *indices, out)`` that applies the updates to ``out``,
        which already holds ``x`` (the result reuses the dead operand's buffer): for each
        element ``u`` of ``updates`` in row-major order, ``out[target(u)] =
        combine(out[target(u)], updates[u])`` (skipped when out of range in ``"drop"``)."""
        return self._kernel(arg_infos, attrs, out_info, inplace=True)

    def _kernel(
        self, arg_infos: Sequence[StructInfo], attrs, out_info: StructInfo, inplace: bool
    ) -> PrimFunc:
        dims = KernelDims()
        names = ("x", "updates", *(f"i{k}" for k in range(len(arg_infos) - 2)))
        x, updates, *indices = placeholders(dims, arg_infos, names)
        out = Buffer("out", dims.output_shape(out_info), x.dtype)
        attrs = kernel_attrs(attrs, dims)
        lay = layout(self.name, attrs, x.ndim, updates.ndim - len(x.shape) + len(attrs.axes))
        batch_shape = lay.split(updates.shape)[1]
        compute = updates.dtype
        combine = _combine(attrs.reduction, compute)

        def update(u: tuple[arith.Sym, ...]) -> Stmt:
            rest, batch = lay.split(u)
            read = _positions_read(lay, attrs, out.shape, indices, batch_shape, batch)

            def store(positions: list[arith.Sym]) -> Stmt:
                target = _target(lay, out.shape, rest, positions)
                old = convert(out[target], compute)
                value = convert(combine(old, updates[u]), out.dtype)
                stmt = BufferStore(out, value, target)
                if attrs.mode == "clip":
                    return stmt
                return when(_in_range(lay, out.shape, positions), stmt)

            return _bind_positions(read, [], store)

        body = loop_nest(updates.shape, "u", update)
        params = (updates.buffer, *(i.buffer for i in indices), out)
        name = f"{self.name}_inplace"
        if not inplace:
            body = seq(loop_nest(x.shape, "c", lambda c: BufferStore(out, x[c], c)), body)
            params = (x.buffer, *params)
            name = self.name
        return PrimFunc(name, params, body, scalar_params=_scalar_params(params, body))


def _scalar_params(params: Sequence[Buffer], body: Stmt) -> tuple[arith.Sym, ...]:
    """The graph symbols a kernel uses that no parameter's shape binds (a slice bound such
    as ``m`` in ``x.at[:m]``): its scalar parameters."""
    bound = {d.name for p in params for d in p.shape if isinstance(d, arith.Sym)}
    free = [s for s in free_symbols(body) if s.name not in bound]
    return tuple(sorted(free, key=lambda s: s.name))


__all__ = [
    "GATHER_MODES",
    "SCATTER_MODES",
    "SCATTER_REDUCTIONS",
    "GatherAttrs",
    "IndexFields",
    "Layout",
    "ScatterAttrs",
    "indexed_info",
    "kernel_attrs",
    "layout",
]
