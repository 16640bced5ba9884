"""``jnp.unique`` as three kernels: a stable sort, a count of distinct values, the results.

``unique(x)`` sorts the elements (``axis=None``) or the slices along ``axis`` of ``x``,
then keeps the first of each run of equal ones. The tracer records::

    lv0: Tensor((n,), "int64") = sort_permutation(x, axis=None)
    lv1: Prim("int64") = unique_count(x, lv0, axis=None, equal_nan=True)
    lv2: Prim("int64", value=k0) = match_cast(lv1, Prim("int64", value=k0))
    lv3: Tuple(...) = unique(x, lv0, size=k0, axis=None, ...)

- ``sort_permutation``: the stable permutation sorting the elements (or slices,
  compared lexicographically in row-major order) ascending, NaN after every number and
  ``-0.0`` equal to ``0.0`` (numpy's and jax's order): the merge sort of
  :mod:`relaxjax.ops.merge_sort` over the positions (``O(n log n)`` comparisons);
- ``unique_count``: the number of runs of equal values in that order (with
  ``equal_nan``, NaNs are one value; without, each NaN is its own), the size that the
  tracer binds to a fresh symbol (``0 <= k <= n``);
- ``unique``: one serial pass writing the requested results of jax's ``unique``: the
  values, ``index`` (the first occurrence of each, as the stable sort gives),
  ``inverse`` (the group of each element, in ``x``'s shape for ``axis=None`` as in jax
  0.10) and ``counts``; with ``size``, truncated or padded as jax pads: values with
  ``fill_value`` (default: the smallest value), indices with the smallest value's index,
  counts with 0.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from relaxjax import arith, dtypes
from relaxjax.ir import Check, PrimInfo, StructInfo, TensorInfo, TupleInfo
from relaxjax.ops.attr_checks import check_dim, check_flag, check_int
from relaxjax.ops.axes import unravel
from relaxjax.ops.base import (
    InferContext,
    Op,
    fail,
    normalize_axis,
    num_elements,
    reference_input,
    register,
    tensor_args,
)
from relaxjax.ops.index import fill_element
from relaxjax.ops.kernel import KernelDims, placeholders
from relaxjax.ops.merge_sort import SCALARS, Lane, MergeSort, order_less
from relaxjax.ops.serial import Scalars, let_index, loop_nest, seq, when
from relaxjax.tir import (
    Allocate,
    Buffer,
    BufferStore,
    For,
    PrimExpr,
    PrimFunc,
    cast,
    eq,
    if_then_else,
    isnan,
    logical_and,
    logical_not,
    ne,
    select,
    te,
)
from relaxjax.tir.expr import as_expr

Dim = arith.Dim
Scalar = bool | int | float

# --------------------------------------------------------------------------- attributes


def _check_axis(owner: str, axis: object) -> None:
    if axis is not None:
        check_int(owner, "axis", axis)


@dataclass(frozen=True, slots=True)
class SortAttrs:
    """Attributes of ``sort_permutation``: the sorted axis (None: the flattened array)."""

    axis: int | None = None

    def __post_init__(self) -> None:
        _check_axis("SortAttrs", self.axis)


@dataclass(frozen=True, slots=True)
class UniqueCountAttrs:
    """Attributes of ``unique_count``: the axis and whether NaNs are one value."""

    axis: int | None = None
    equal_nan: bool = True

    def __post_init__(self) -> None:
        _check_axis("UniqueCountAttrs", self.axis)
        check_flag("UniqueCountAttrs", "equal_nan", self.equal_nan)


@dataclass(frozen=True, slots=True)
class UniqueAttrs:
    """Attributes of ``unique``: the result length ``size`` (an int, or the symbol the
    count was bound to), ``axis``, ``equal_nan``, the padding ``fill_value`` (None: the
    smallest value) and which of ``index``, ``inverse``, ``counts`` to return."""

    size: Dim
    axis: int | None = None
    equal_nan: bool = True
    fill_value: Scalar | None = None
    return_index: bool = False
    return_inverse: bool = False
    return_counts: bool = False

    def __post_init__(self) -> None:
        check_dim("UniqueAttrs", "size", self.size)
        _check_axis("UniqueAttrs", self.axis)
        for name in ("equal_nan", "return_index", "return_inverse", "return_counts"):
            check_flag("UniqueAttrs", name, getattr(self, name))
        if self.fill_value is not None and not isinstance(self.fill_value, (bool, int, float)):
            raise TypeError(
                f"UniqueAttrs.fill_value must be a Python scalar, got {self.fill_value!r}"
            )


# --------------------------------------------------------------------------- slices


@dataclass(frozen=True)
class _Slices:
    """``x`` seen as ``count`` slices: its elements (``axis=None``) or the slices along
    ``axis``. ``element(p, inner)`` is the element ``inner`` of slice ``p``."""

    shape: tuple[Dim, ...]
    axis: int | None

    @property
    def count(self) -> Dim:
        return num_elements(self.shape) if self.axis is None else self.shape[self.axis]

    @property
    def inner_shape(self) -> tuple[Dim, ...]:
        if self.axis is None:
            return ()
        return self.shape[: self.axis] + self.shape[self.axis + 1 :]

    def index(self, p: Dim, inner: Sequence[Dim]) -> tuple[Dim, ...]:
        if self.axis is None:
            return unravel(p, self.shape)
        return tuple(inner[: self.axis]) + (p,) + tuple(inner[self.axis :])


def _slices(op_name: str, x: TensorInfo, axis: int | None) -> _Slices:
    if x.shape is None:
        fail(op_name, f"the shape of the array must be known, got {x!r}")
    if axis is not None:
        if x.ndim == 0:
            fail(op_name, "axis must be None for a 0-d array")
        axis = normalize_axis(op_name, axis, x.ndim)
    return _Slices(tuple(x.shape), axis)


def _order(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    """-1, 0 or 1 (int64) as ``a`` sorts before, with or after ``b``."""
    one = as_expr(1, "int64")
    after = select(order_less(b, a), one, as_expr(0, "int64"))
    return select(order_less(a, b), as_expr(-1, "int64"), after)


def _as_int8(value: PrimExpr) -> PrimExpr:
    """Bools compare as int8 in kernels."""
    return cast(value, "int8") if value.dtype == "bool" else value


def _differs(equal_nan: bool) -> Callable[[PrimExpr, PrimExpr], PrimExpr]:
    """1 (int64) where two elements are different values, else 0 (NaNs are one value
    with ``equal_nan``; without, a NaN differs from everything)."""

    def decide(a: PrimExpr, b: PrimExpr) -> PrimExpr:
        a, b = _as_int8(a), _as_int8(b)
        different = ne(a, b)
        if equal_nan and dtypes.is_floating(a.dtype):
            different = logical_and(different, logical_not(logical_and(isnan(a), isnan(b))))
        return select(different, as_expr(1, "int64"), as_expr(0, "int64"))

    return decide


class _Kernel:
    """The statements of one serial kernel over the slices of ``x`` (see the module doc),
    with its local scalars and fresh names."""

    def __init__(self, x: te.Tensor, slices: _Slices) -> None:
        self.x = x
        self.slices = slices
        self.state = Scalars(dict.fromkeys(("cmp", "group", *SCALARS), "int64"))
        self._counter = itertools.count()

    def name(self, hint: str) -> str:
        """A name used once in the kernel."""
        return f"{hint}_{next(self._counter)}"

    def compare(self, p: Dim, q: Dim, decide: Callable[[PrimExpr, PrimExpr], PrimExpr]):
        """``cmp`` = the first non-zero ``decide(a, b)`` over the element pairs of slices
        ``p`` and ``q`` in row-major order (0 when every pair gives 0)."""
        x, slices, state = self.x, self.slices, self.state
        if not slices.inner_shape:
            return state.set("cmp", decide(x[slices.index(p, ())], x[slices.index(q, ())]))

        def visit(inner: tuple[arith.Sym, ...]) -> object:
            pair = decide(x[slices.index(p, inner)], x[slices.index(q, inner)])
            return when(eq(state.load("cmp"), 0), state.set("cmp", pair))

        return seq(state.set("cmp", 0), loop_nest(slices.inner_shape, self.name("c"), visit))

    def merge_sort(self, perm: Buffer, count: Dim) -> object:
        """``perm`` = the stable permutation sorting the ``count`` slices: the merge sort
        of :mod:`relaxjax.ops.merge_sort` on the positions, comparing the slices they
        name."""
        lane = Lane(
            Buffer("perm_a", (count + 1,), "int64", scope="local"),
            Buffer("perm_b", (count + 1,), "int64", scope="local"),
            lambda position: (position,),
        )

        def before(read, j: PrimExpr, i: PrimExpr):
            def with_slices(p: arith.Sym, q: arith.Sym) -> object:
                return self.compare(p, q, _order)

            prelude = let_index(
                self.name("p"),
                read(0, j),
                lambda p: let_index(self.name("q"), read(0, i), lambda q: with_slices(p, q)),
            )
            return prelude, self.state.load("cmp") < 0

        sorter = MergeSort(count, (lane,), before, self.state, "ms")
        k, t = arith.sym(self.name("k")), arith.sym(self.name("t"))
        body = seq(
            BufferStore(lane.a, as_expr(0, "int64"), (count,)),
            BufferStore(lane.b, as_expr(0, "int64"), (count,)),
            For(k, 0, count, "serial", BufferStore(lane.a, as_expr(k), (k,))),
            sorter.sort(),
            For(t, 0, count, "serial", BufferStore(perm, sorter.result(0, t), (t,))),
        )
        return Allocate(lane.a, Allocate(lane.b, body))

    def starts_group(self, perm, j: arith.Sym, equal_nan: bool, body) -> object:
        """``body(p)`` for sorted position ``j`` holding slice ``p``, with ``cmp != 0`` when
        ``j`` starts a run of equal slices."""
        state = self.state

        def at(p: arith.Sym) -> object:
            previous = let_index(
                self.name("q"), perm[j - 1], lambda q: self.compare(p, q, _differs(equal_nan))
            )
            start = when(eq(as_expr(j), 0), state.set("cmp", 1), previous)
            return seq(start, body(p))

        return let_index(self.name("p"), perm[j], at)

    def finish(self, name: str, buffers: Sequence, body: object, outputs: int) -> PrimFunc:
        return PrimFunc(name, tuple(buffers), self.state.allocate(body), num_outputs=outputs)


# --------------------------------------------------------------------------- ops


def _reference_rows(x: np.ndarray, axis: int | None) -> np.ndarray:
    """``x``'s slices as the rows of a 2-d array (one column for ``axis=None``)."""
    if axis is None:
        return x.reshape(-1, 1)
    moved = np.moveaxis(x, axis, 0)
    return moved.reshape(moved.shape[0], -1)


def _reference_perm(x: np.ndarray, axis: int | None) -> np.ndarray:
    rows = _reference_rows(x, axis)
    if rows.shape[1] == 0:
        return np.arange(rows.shape[0], dtype=np.int64)
    return np.lexsort(rows.T[::-1]).astype(np.int64)


def _reference_starts(x: np.ndarray, perm: np.ndarray, axis: int | None, equal_nan: bool):
    """Per sorted position: whether it starts a run of equal slices."""
    rows = _reference_rows(x, axis)[perm]
    starts = np.ones(len(perm), bool)
    if len(perm) > 1:
        a, b = rows[1:], rows[:-1]
        differs = a != b
        if equal_nan and x.dtype.kind == "f":
            differs &= ~(np.isnan(a) & np.isnan(b))
        starts[1:] = differs.any(axis=1) if rows.shape[1] else False
    return starts


def _axis_of(attrs, ndim: int) -> int | None:
    return None if attrs.axis is None else attrs.axis % ndim


@register
class SortPermutation(Op):
    """The stable permutation sorting the elements (``axis=None``) or the slices along
    ``axis`` of ``x`` ascending (NaN last; slices compared lexicographically)."""

    name = "sort_permutation"
    Attrs = SortAttrs
    pattern = "opaque"
    num_inputs = 1

    def infer(self, args: Sequence[StructInfo], attrs, ctx: InferContext) -> StructInfo:
        (x,) = tensor_args(self.name, args, 1)
        return TensorInfo((_slices(self.name, x, attrs.axis).count,), "int64")

    def reference(self, *arrays: object, attrs=None) -> np.ndarray:
        attrs = SortAttrs() if attrs is None else attrs
        x = reference_input(arrays[0])
        return _reference_perm(x, _axis_of(attrs, x.ndim))

    def lower(self, arg_infos: Sequence[StructInfo], attrs, out_info: StructInfo) -> PrimFunc:
        """A bottom-up merge sort of the positions ``0 .. n - 1`` (stable)."""
        dims = KernelDims()
        (x,) = placeholders(dims, arg_infos[:1], ("x",))
        slices = _Slices(tuple(x.shape), None if attrs.axis is None else attrs.axis % x.ndim)
        perm = te.placeholder((slices.count,), "int64", "perm").buffer
        kernel = _Kernel(x, slices)
        body = kernel.merge_sort(perm, slices.count)
        return kernel.finish(self.name, (x.buffer, perm), body, 1)


@register
class UniqueCount(Op):
    """The number of distinct elements (or slices along ``axis``) of ``x``, given the
    permutation sorting them, as an int64 scalar: the length ``unique`` gives."""

    name = "unique_count"
    Attrs = UniqueCountAttrs
    pattern = "opaque"
    num_inputs = 2

    def infer(self, args: Sequence[StructInfo], attrs, ctx: InferContext) -> StructInfo:
        x, perm = tensor_args(self.name, args, 2)
        _check_perm(self.name, ctx, _slices(self.name, x, attrs.axis), perm)
        return PrimInfo("int64")

    def reference(self, *arrays: object, attrs=None) -> np.ndarray:
        attrs = UniqueCountAttrs() if attrs is None else attrs
        x, perm = reference_input(arrays[0]), np.asarray(arrays[1])
        starts = _reference_starts(x, perm, _axis_of(attrs, x.ndim), attrs.equal_nan)
        return np.asarray(starts.sum(), np.int64)

    def lower(self, arg_infos: Sequence[StructInfo], attrs, out_info: StructInfo) -> PrimFunc:
        """``count = 0; for each sorted position j: count += (j starts a run)``."""
        dims = KernelDims()
        x, perm = placeholders(dims, arg_infos[:2], ("x", "perm"))
        slices = _Slices(tuple(x.shape), None if attrs.axis is None else attrs.axis % x.ndim)
        out = te.placeholder((), "int64", "count").buffer
        kernel = _Kernel(x, slices)
        state = kernel.state
        j = arith.sym(kernel.name("j"))

        def count(p: arith.Sym) -> object:
            return when(ne(state.load("cmp"), 0), state.add("group", 1))

        scan = For(
            j,
            0,
            slices.count,
            "serial",
            kernel.starts_group(perm.buffer, j, attrs.equal_nan, count),
        )
        body = seq(state.set("group", 0), scan, BufferStore(out, state.load("group"), ()))
        return kernel.finish(self.name, (x.buffer, perm.buffer, out), body, 1)


def _check_perm(op_name: str, ctx: InferContext, slices: _Slices, perm: TensorInfo) -> None:
    if perm.dtype != "int64" or perm.ndim not in (None, 1):
        fail(op_name, f"the permutation must be a 1-d int64 tensor, got {perm!r}")
    if perm.shape is not None:
        message = f"{op_name}: the permutation must have one entry per slice"
        ctx.require(Check("eq", (perm.shape[0], slices.count), message))


@register
class Unique(Op):
    """``jnp.unique`` given the sorting permutation: a tuple of the values and the
    requested ``index``, ``inverse`` and ``counts`` (see the module doc)."""

    name = "unique"
    Attrs = UniqueAttrs
    pattern = "opaque"
    num_inputs = 2

    def infer(self, args: Sequence[StructInfo], attrs, ctx: InferContext) -> StructInfo:
        x, perm = tensor_args(self.name, args, 2)
        slices = _slices(self.name, x, attrs.axis)
        _check_perm(self.name, ctx, slices, perm)
        size = attrs.size
        # values keep x's weak type, as jax's gather of them, unless a fill_value (which
        # jax converts to a strong array) pads them
        weak = x.weak and attrs.fill_value is None
        if slices.axis is None:
            values = TensorInfo((size,), x.dtype, weak=weak)
            inverse = TensorInfo(x.shape, "int64")
        else:
            a = slices.axis
            values = TensorInfo(x.shape[:a] + (size,) + x.shape[a + 1 :], x.dtype, weak=weak)
            inverse = TensorInfo((slices.count,), "int64")
        fields = [values]
        if attrs.return_index:
            fields.append(TensorInfo((size,), "int64"))
        if attrs.return_inverse:
            fields.append(inverse)
        if attrs.return_counts:
            fields.append(TensorInfo((size,), "int64"))
        return TupleInfo(tuple(fields))

    def reference(self, *arrays: object, attrs=None) -> tuple:
        x, perm = reference_input(arrays[0]), np.asarray(arrays[1], np.int64)
        axis = _axis_of(attrs, x.ndim)
        starts = _reference_starts(x, perm, axis, attrs.equal_nan)
        count, size = len(perm), int(attrs.size)
        first = perm[starts][:size]
        group = np.cumsum(starts) - 1
        runs = np.diff(np.append(np.flatnonzero(starts), count))[:size]
        pad = size - len(first)
        smallest = perm[0] if count else 0
        rows = np.moveaxis(x, axis, 0) if axis is not None else x.reshape(-1)
        values = rows[first]
        if pad:
            if attrs.fill_value is not None:
                filler = np.full(
                    (pad,) + rows.shape[1:],
                    fill_element(dtypes.canonical(x.dtype), attrs.fill_value),
                    x.dtype,
                )
            elif count:
                filler = np.repeat(rows[smallest : smallest + 1], pad, axis=0)
            else:
                filler = np.zeros((pad,) + rows.shape[1:], x.dtype)
            values = np.concatenate([values, filler])
        if axis is not None:
            values = np.moveaxis(values, 0, axis)
        result = [values.astype(x.dtype)]
        if attrs.return_index:
            result.append(np.concatenate([first, np.full(pad, smallest)]).astype(np.int64))
        if attrs.return_inverse:
            inverse = np.empty(count, np.int64)
            inverse[perm] = group
            result.append(inverse.reshape(x.shape) if axis is None else inverse)
        if attrs.return_counts:
            result.append(np.concatenate([runs, np.zeros(pad, np.int64)]).astype(np.int64))
        return tuple(result)

    def lower(self, arg_infos: Sequence[StructInfo], attrs, out_info: StructInfo) -> PrimFunc:
        """One pass over the sorted positions: a run's first slice is the group's value
        and index, every element gets its group in ``inverse`` and adds to ``counts``;
        then the padding."""
        dims = KernelDims()
        x, perm = placeholders(dims, arg_infos[:2], ("x", "perm"))
        slices = _Slices(tuple(x.shape), None if attrs.axis is None else attrs.axis % x.ndim)
        fields = out_info.fields  # type: ignore[union-attr]
        outs = [
            te.placeholder(dims.output_shape(f), f.dtype, n).buffer
            for f, n in zip(fields, _output_names(attrs))
        ]
        named = dict(zip(_output_names(attrs), outs))
        values = named["values"]
        size = values.shape[0 if slices.axis is None else slices.axis]
        kernel = _Kernel(x, slices)
        state = kernel.state
        group = state.load("group")
        j, t = arith.sym(kernel.name("j")), arith.sym(kernel.name("t"))
        count = slices.count

        def copy_slice(g: Dim, p: Dim | None) -> object:
            """values[group g] = slice p of x (None: the fill value)."""

            def one(inner: tuple[arith.Sym, ...]) -> object:
                if p is None:
                    value = (
                        as_expr(fill_element(x.dtype, attrs.fill_value), x.dtype)
                        if attrs.fill_value is not None
                        else as_expr(0, x.dtype)
                    )
                else:
                    value = x[slices.index(p, inner)]
                where = (
                    (g,)
                    if slices.axis is None
                    else tuple(inner[: slices.axis]) + (g,) + tuple(inner[slices.axis :])
                )
                return BufferStore(values, value, where)

            return loop_nest(slices.inner_shape, kernel.name("v"), one)

        def visit(p: arith.Sym) -> object:
            def new_group(g: arith.Sym) -> object:
                writes = [copy_slice(g, p)]
                if "index" in named:
                    writes.append(BufferStore(named["index"], as_expr(p), (g,)))
                if "counts" in named:
                    writes.append(BufferStore(named["counts"], as_expr(0, "int64"), (g,)))
                return when(as_expr(g) < as_expr(size), seq(*writes))

            steps = [
                when(
                    ne(state.load("cmp"), 0),
                    seq(state.add("group", 1), let_index(kernel.name("g"), group, new_group)),
                )
            ]
            if "counts" in named:
                counts = named["counts"]
                steps.append(
                    when(
                        group < as_expr(size),
                        BufferStore(counts, counts[group] + as_expr(1, "int64"), (group,)),
                    )
                )
            if "inverse" in named:
                where = unravel(p, x.shape) if slices.axis is None else (p,)
                steps.append(BufferStore(named["inverse"], group, tuple(where)))
            return seq(*steps)

        scan = For(
            j, 0, count, "serial", kernel.starts_group(perm.buffer, j, attrs.equal_nan, visit)
        )
        nonempty = arith.compare(count, ">", 0) is True

        def pad_values(tt: Dim) -> object:
            if attrs.fill_value is not None:
                return copy_slice(tt, None)
            smallest = let_index(
                kernel.name("p"), perm.buffer[as_expr(0, "int64")], lambda p: copy_slice(tt, p)
            )
            return (
                smallest if nonempty else when(as_expr(count) > 0, smallest, copy_slice(tt, None))
            )

        pads = [pad_values(t)]
        if "index" in named:
            first = perm.buffer[as_expr(0, "int64")]
            value = (
                first if nonempty else if_then_else(as_expr(count) > 0, first, as_expr(0, "int64"))
            )
            pads.append(BufferStore(named["index"], value, (t,)))
        if "counts" in named:
            pads.append(BufferStore(named["counts"], as_expr(0, "int64"), (t,)))
        padding = For(t, 0, size, "serial", when(as_expr(t) > group, seq(*pads)))
        body = seq(state.set("group", -1), scan, padding)
        return kernel.finish(self.name, (x.buffer, perm.buffer, *outs), body, len(outs))


def _output_names(attrs: UniqueAttrs) -> list[str]:
    names = ["values"]
    names += ["index"] if attrs.return_index else []
    names += ["inverse"] if attrs.return_inverse else []
    names += ["counts"] if attrs.return_counts else []
    return names


__all__ = ["SortAttrs", "UniqueAttrs", "UniqueCountAttrs"]
