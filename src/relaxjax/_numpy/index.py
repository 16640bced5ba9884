"""Indexing of traced arrays: ``x[key]`` and jax's functional updates ``x.at[key].set(v)``.

Every index form jax accepts: ints (static or symbolic dims), slices (with static or
symbolic bounds), ``None``, ``...``, integer arrays of any rank (numpy arrays, lists
inside the key tuple, traced values, arrays of other libraries) and boolean masks
(numpy or traced, of any rank; a traced mask gives a data-dependent length, see
:mod:`relaxjax._numpy.mask`), mixed freely. Several array indices broadcast together
(numpy's advanced indexing); their result axes replace the indexed axes when the
advanced indices (arrays, and ints among them) are adjacent in the key, and go to the
front otherwise, as in numpy and jax.

Lowering: a key without arrays or masks is one ``strided_slice`` (plus
``expand_dims`` for ``None``); a single mask is ``take`` of its true positions; every
other key is one ``gather`` (:mod:`relaxjax.ops.gather`). ``x.at[key]`` updates are
one ``scatter`` of the same key.

Out of range (after negative indices count from the end): array indices clamp in
``x[key]`` and ``.get()`` (jax's default; ``mode="fill"`` gives ``fill_value``), and
updates to out-of-range positions are dropped (``mode="clip"`` clamps). A static int
out of range in ``x[key]`` raises ``ShapeError`` as numpy does (jax clamps it).

>>> import relaxjax as relax, numpy as np
>>> relax.eval_shape(lambda x: x[:, [-1], :], relax.Tensor(("b", "t", 8), "float32"))
Tensor((b, 1, 8), "float32")
>>> relax.eval_shape(lambda x, i: x.at[i, 0].add(1.0), relax.Tensor(("n", 4), "float32"),
...                  relax.Tensor((3,), "int32"))
Tensor((n, 4), "float32")
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from relaxjax import arith, dtypes, ops
from relaxjax._numpy.mask import mask_indices, mask_ndim, take_masked
from relaxjax.dlpack import as_numpy
from relaxjax.errors import ShapeError, TraceError
from relaxjax.ir import PrimInfo, StructInfo, TensorInfo
from relaxjax.ops.base import promote_types
from relaxjax.ops.creation import LikeAttrs
from relaxjax.ops.elementwise import AstypeAttrs
from relaxjax.ops.gather import GatherAttrs, ScatterAttrs
from relaxjax.ops.index import StridedSliceAttrs
from relaxjax.ops.join import AxisAttrs
from relaxjax.ops.manipulate import (
    BroadcastToAttrs,
    ExpandDimsAttrs,
    ReshapeAttrs,
    SqueezeAttrs,
)
from relaxjax.trace import Tracer, emit

__all__ = ["getitem"]  # relaxjax.numpy exports it; .at is reached through tracers

Dim = arith.Dim


# --------------------------------------------------------------------------- key entries


@dataclass(frozen=True)
class Entry:
    """One entry of a key: ``kind`` is ``"new"`` (None), ``"ellipsis"``, ``"slice"``,
    ``"int"`` (a static or symbolic int), ``"array"`` (an integer array or tracer) or
    ``"mask"`` (a boolean array, tracer or scalar); ``axis`` is the axis of the
    (expanded) array it indexes, once known."""

    kind: str
    value: object = None
    axis: int = -1

    @property
    def consumed(self) -> int:
        """How many axes of the array the entry indexes."""
        if self.kind in ("new", "ellipsis"):
            return 0
        return mask_ndim(self.value) if self.kind == "mask" else 1


_NON_TUPLE = (
    "Using a non-tuple sequence for multidimensional indexing is not allowed; use "
    "`arr[array(seq)]` instead of `arr[seq]`"
)


def parse_key(key: object) -> list[Entry]:
    """The entries of ``key`` (a tuple, or one entry), checked and converted."""
    if isinstance(key, list):
        raise TypeError(_NON_TUPLE)
    items = key if isinstance(key, tuple) else (key,)
    return [_entry(item) for item in items]


def _entry(item: object) -> Entry:
    if item is None:
        return Entry("new")
    if item is Ellipsis:
        return Entry("ellipsis")
    if isinstance(item, slice):
        return Entry("slice", item)
    if isinstance(item, bool | np.bool_):
        return Entry("mask", np.asarray(bool(item)))
    if isinstance(item, int | np.integer):
        return Entry("int", int(item))
    if isinstance(item, arith.Expr):
        return Entry("int", item)
    if isinstance(item, Tracer):
        return _array_entry(item, item.dtype)
    if isinstance(item, str | bytes):
        raise TypeError(f"string indexing is not supported; got index {item!r}")
    if isinstance(item, range):  # numpy's integer array (jax refuses; numpy code uses it)
        return _array_entry(np.arange(item.start, item.stop, item.step), "int64")
    if isinstance(item, list | tuple):
        item = _sequence(item)
        if isinstance(item, Tracer):
            return _array_entry(item, item.dtype)
    elif not isinstance(item, np.ndarray) and _is_array_like(item):
        item = as_numpy(item)
    if isinstance(item, np.ndarray | np.generic):
        return _array_entry(np.asarray(item), dtypes_name(np.asarray(item).dtype))
    if isinstance(item, float):
        raise TypeError(_BAD_TYPE.format("float64"))
    raise TypeError(
        f"unsupported index {item!r} of type {type(item).__name__}: use ints, slices, None, "
        "..., integer arrays or boolean masks"
    )


_BAD_TYPE = "Indexer must have integer or boolean type, got indexer with type {}"


def dtypes_name(dtype: np.dtype) -> str:
    """A numpy dtype's name as :mod:`relaxjax.dtypes` spells it (numpy's for others)."""
    try:
        return dtypes.canonical(dtype)
    except TypeError:
        return str(dtype)


def _is_array_like(item: object) -> bool:
    return hasattr(item, "__array__") or hasattr(item, "__dlpack__")


def _sequence(items: Sequence[object]) -> object:
    """A list (or tuple) inside the key as an array: jax's ``jnp.asarray(items)``; traced
    elements are stacked."""
    if any(isinstance(i, Tracer | list | tuple) for i in items) and _holds_tracer(items):
        parts = [_sequence(i) if isinstance(i, list | tuple) else i for i in items]
        return emit("stack", parts, AxisAttrs(0))
    array = np.asarray(items)
    if array.size == 0:
        return array.astype(np.int64)  # an empty list indexes nothing, as in jax
    return array


def _holds_tracer(items: object) -> bool:
    if isinstance(items, Tracer):
        return True
    return isinstance(items, list | tuple) and any(_holds_tracer(i) for i in items)


def _array_entry(value: object, dtype: str) -> Entry:
    if dtype == "bool":
        return Entry("mask", value)
    if dtype in dtypes.DTYPES and dtypes.is_integer(dtype):
        return Entry("array", value)
    raise TypeError(_BAD_TYPE.format(dtype))


def expand_ellipsis(entries: list[Entry], ndim: int) -> list[Entry]:
    """``entries`` with whole slices for the axes the ellipsis (or the missing trailing
    entries) stands for; the ellipsis entry stays, indexing nothing."""
    consuming = builtins.sum(e.consumed for e in entries)
    if consuming > ndim:
        raise ShapeError(
            f"too many indices for array: array is {ndim}-dimensional, but {consuming} were indexed"
        )
    ellipses = [i for i, e in enumerate(entries) if e.kind == "ellipsis"]
    if len(ellipses) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    fill = [Entry("slice", slice(None))] * (ndim - consuming)
    if not ellipses:
        return entries + fill
    at = ellipses[0]
    # the ellipsis stays as a marker: even when it stands for no axis, it separates the
    # advanced indices around it (numpy and jax move their axes to the front)
    return entries[: at + 1] + fill + entries[at + 1 :]


def _slice_bound(value: object, what: str) -> Dim | None:
    if value is None:
        return None
    if isinstance(value, Tracer):
        raise TypeError(f"slice {what} must be a static int or a symbolic dim, got a traced value")
    if isinstance(value, bool | np.bool_) or not isinstance(value, int | np.integer | arith.Expr):
        raise TypeError(f"slice {what} must be an int, got {value!r}")
    return arith.as_dim(value)


def _rank(x: object) -> int | None:
    """The rank of an array or index operand (None when a traced value's is unknown)."""
    if isinstance(x, Tracer):
        info = x.info
        return 0 if isinstance(info, PrimInfo) else info.ndim  # type: ignore[union-attr]
    if isinstance(x, bool | int | float | arith.Expr):
        return 0
    return np.ndim(x)


def _advanced_adjacent(entries: Sequence[Entry], kinds: tuple[str, ...]) -> bool:
    positions = [i for i, e in enumerate(entries) if e.kind in kinds]
    return positions == list(range(positions[0], positions[-1] + 1))


# --------------------------------------------------------------------------- the general form


@dataclass(frozen=True)
class Advanced:
    """A key with integer arrays, as one ``gather``/``scatter``: the array to index (``x``
    with a size-1 axis at ``bool_axes`` for each scalar boolean), the index operands, the
    key's attributes and where ``None`` puts new axes in the result."""

    x: object
    bool_axes: tuple[int, ...]
    operands: tuple[object, ...]
    fields: dict
    new_axes: tuple[int, ...]


def advanced(x: object, entries: list[Entry]) -> Advanced:
    """The general form of ``x[entries]`` (the ellipsis already expanded)."""
    shape = list(_shape_of(x))
    resolved: list[Entry] = []
    bool_axes: list[int] = []
    axis = 0
    for entry in entries:
        if entry.kind in ("new", "ellipsis"):
            resolved.append(entry)
            continue
        if entry.kind == "mask":
            mask = entry.value
            if mask_ndim(mask) == 0:  # a scalar bool indexes a new axis of size 1
                bool_axes.append(axis)
                shape.insert(axis, 1)
                mask = _as_vector(mask)
            for index in mask_indices(shape, mask, axis):
                resolved.append(Entry("array", index, axis))
                axis += 1
            continue
        kind = "array" if entry.kind == "int" else entry.kind
        resolved.append(Entry(kind, entry.value, axis))
        axis += 1
    if bool_axes:
        x = emit("expand_dims", (x,), ExpandDimsAttrs(tuple(bool_axes)))
    arrays = [e for e in resolved if e.kind == "array"]
    batch_ndim = builtins.max((_rank(e.value) for e in arrays), default=0)
    adjacent = not arrays or _advanced_adjacent(resolved, ("array",))
    position, new_axes = _layout(resolved, adjacent, batch_ndim)
    slices = [e for e in resolved if e.kind == "slice" and e.value != slice(None)]
    fields = {
        "axes": tuple(e.axis for e in arrays),
        "position": position,
        "slice_axes": tuple(e.axis for e in slices),
        "begin": tuple(_slice_bound(e.value.start, "start") for e in slices),
        "end": tuple(_slice_bound(e.value.stop, "stop") for e in slices),
        "step": tuple(
            1 if e.value.step is None else _slice_bound(e.value.step, "step") for e in slices
        ),
    }
    StridedSliceAttrs(fields["slice_axes"], fields["begin"], fields["end"], fields["step"])
    operands = tuple(e.value for e in arrays)
    return Advanced(x, tuple(bool_axes), operands, fields, new_axes)


def _layout(
    entries: Sequence[Entry], adjacent: bool, batch_ndim: int
) -> tuple[int, tuple[int, ...]]:
    """Where the broadcast index axes go among the kept axes, and the result positions of
    the new axes (numpy: in place of the first advanced index when they are adjacent, in
    front otherwise)."""
    first = next((i for i, e in enumerate(entries) if e.kind == "array"), -1)
    out = 0 if adjacent else batch_ndim
    position = 0
    kept = 0
    new_axes = []
    for i, entry in enumerate(entries):
        if entry.kind == "array":
            if adjacent and i == first:
                position = kept
                out += batch_ndim
        elif entry.kind == "new":
            new_axes.append(out)
            out += 1
        elif entry.kind == "slice":
            kept += 1
            out += 1
    return position, tuple(new_axes)


def _as_vector(mask: object) -> object:
    if isinstance(mask, Tracer):
        return emit("reshape", (mask,), ReshapeAttrs((1,)))
    return np.asarray(mask).reshape(1)


def _shape_of(x: object) -> tuple[Dim, ...]:
    if isinstance(x, Tracer):
        return () if isinstance(x.info, PrimInfo) else x.shape
    return tuple(np.shape(x))


# --------------------------------------------------------------------------- x[key]


def _ndim(x: object) -> int:
    ndim = _rank(x)
    if ndim is None:
        raise TraceError("indexing needs the rank of the array; give it one with relax.match_cast")
    return ndim


def getitem(x, key):
    """``x[key]`` with every index form jax accepts (see the module doc)."""
    entries = expand_ellipsis(parse_key(key), _ndim(x))
    kinds = {e.kind for e in entries}
    if not kinds & {"array", "mask"}:
        return _basic(x, entries)
    masks = [e for e in entries if e.kind == "mask"]
    if (
        "array" not in kinds
        and len(masks) == 1
        and mask_ndim(masks[0].value) > 0
        and _advanced_adjacent(entries, ("mask", "int"))
    ):
        return _masked(x, entries)
    return _gather(advanced(x, entries), GatherAttrs, "clip", None, True)


def _gather(form: Advanced, attrs_type, mode: str, fill: object, wrap: bool):
    attrs = attrs_type(**form.fields, wrap=wrap, mode=mode, fill_value=fill)
    result = emit("gather", (form.x, *form.operands), attrs)
    if form.new_axes:
        result = emit("expand_dims", (result,), ExpandDimsAttrs(form.new_axes))
    return result


def _basic(x, entries: Sequence[Entry]):
    """Ints, slices and ``None``: one ``strided_slice``, then the new axes."""
    axes, begin, end, step, drop, new_axes = [], [], [], [], [], []
    axis = out_position = 0
    for entry in entries:
        if entry.kind == "ellipsis":
            continue
        if entry.kind == "new":
            new_axes.append(out_position)
            out_position += 1
            continue
        if entry.kind == "slice":
            s = entry.value
            if s != slice(None):
                axes.append(axis)
                begin.append(_slice_bound(s.start, "start"))
                end.append(_slice_bound(s.stop, "stop"))
                step.append(1 if s.step is None else _slice_bound(s.step, "step"))
            out_position += 1
        else:
            index = entry.value
            axes.append(axis)
            begin.append(index)
            end.append(None if isinstance(index, int) and index == -1 else index + 1)
            step.append(1)
            drop.append(axis)
        axis += 1
    result = x
    if axes:
        attrs = StridedSliceAttrs(tuple(axes), tuple(begin), tuple(end), tuple(step), tuple(drop))
        result = emit("strided_slice", (x,), attrs)
    if new_axes:
        result = emit("expand_dims", (result,), ExpandDimsAttrs(tuple(new_axes)))
    return result


def _masked(x, entries: Sequence[Entry]):
    """One boolean mask (adjacent ints among it are basic): the slices first, then the
    mask's true positions taken along the axes it covers."""
    at = next(i for i, e in enumerate(entries) if e.kind == "mask")
    mask = entries[at].value
    whole = [Entry("slice", slice(None))] * mask_ndim(mask)
    sliced = _basic(x, [*entries[:at], *whole, *entries[at + 1 :]])
    axis = builtins.sum(1 for e in entries[:at] if e.kind in ("new", "slice"))
    return take_masked(sliced, mask, axis)


# --------------------------------------------------------------------------- x.at[key]


_GATHER_MODES = {None: "clip", "promise_in_bounds": "clip", "clip": "clip", "fill": "fill"}
_GATHER_MODES["drop"] = "fill"
_SCATTER_MODES = {None: "drop", "promise_in_bounds": "drop", "fill": "drop", "drop": "drop"}
_SCATTER_MODES["clip"] = "clip"


def _mode(mode: object, table: dict, what: str) -> str:
    name = getattr(mode, "name", mode)  # jax's GatherScatterMode members
    if isinstance(name, str):
        name = {"CLIP": "clip", "FILL_OR_DROP": "fill", "PROMISE_IN_BOUNDS": None}.get(name, name)
    if name in table:
        return table[name]
    if name == "one_hot":
        raise NotImplementedError(f"{what}: mode 'one_hot' is not supported")
    raise ValueError(f'Unknown gather mode "{mode}"')


def _no_sharding(out_sharding: object) -> None:
    if out_sharding is not None:
        raise NotImplementedError("out_sharding is not supported: relaxjax compiles for one device")


class IndexUpdateHelper:
    """``x.at``: ``x.at[key]`` is an :class:`IndexUpdateRef` (jax's ``_IndexUpdateHelper``)."""

    __slots__ = ("array",)

    def __init__(self, array: object) -> None:
        self.array = array

    def __getitem__(self, key: object) -> IndexUpdateRef:
        return IndexUpdateRef(self.array, key)

    def __repr__(self) -> str:
        return f"IndexUpdateHelper({self.array!r})"


class IndexUpdateRef:
    """``x.at[key]``: functional updates of the elements ``x[key]`` selects, as jax's
    ``_IndexUpdateRef``. Each method returns a new array (in place when ``x`` is dead
    afterwards, once the runtime reuses dead operands' buffers).

    Values are converted as jax converts them: the update is computed in the promoted
    dtype of ``x`` and the values (a Python scalar is weakly typed) and the result
    converted back to ``x``'s dtype; the values are broadcast to the shape of
    ``x[key]`` (one-directionally, as ``broadcast_to``). With repeated indices, ``add``,
    ``subtract``, ``multiply``, ``divide``, ``power``, ``min`` and ``max`` accumulate and
    ``set`` keeps the last value in row-major order of the indices (jax leaves the order
    unspecified). Out-of-range updates are dropped unless ``mode="clip"``.
    ``indices_are_sorted`` and ``unique_indices`` are jax's performance hints.
    """

    __slots__ = ("array", "index")

    def __init__(self, array: object, index: object) -> None:
        self.array = array
        self.index = index

    def __repr__(self) -> str:
        return f"IndexUpdateRef({self.array!r}, {self.index!r})"

    def get(
        self,
        *,
        indices_are_sorted=False,
        unique_indices=False,
        mode=None,
        fill_value=None,
        out_sharding=None,
        wrap_negative_indices=True,
    ):
        """``x[key]``, with jax's ``mode`` (``"clip"``, ``"fill"`` with ``fill_value``,
        ``"promise_in_bounds"``) and ``wrap_negative_indices``."""
        del indices_are_sorted, unique_indices
        _no_sharding(out_sharding)
        mode = _mode(mode, _GATHER_MODES, "get")
        wrap = bool(wrap_negative_indices)
        fill = _static_fill(fill_value) if mode == "fill" else None
        if mode == "clip" and wrap and fill_value is None:
            return getitem(self.array, self.index)
        return _gather(self._form(), GatherAttrs, mode, fill, wrap)

    def set(self, values, **options):
        """``x[key] = values``."""
        return self._scatter("set", values, **options)

    def add(self, values, **options):
        """``x[key] += values``."""
        return self._scatter("add", values, **options)

    def subtract(self, values, **options):
        """``x[key] -= values``."""
        return self._scatter("subtract", values, **options)

    def multiply(self, values, **options):
        """``x[key] *= values``."""
        return self._scatter("multiply", values, **options)

    mul = multiply

    def divide(self, values, **options):
        """``x[key] /= values``: ``x / w``, ``w`` the ones of ``x`` multiplied by the values
        at the key (jax's definition; the result dtype is that of ``x / x``)."""
        return _binary("divide", self.array, self._factors(values, options))

    def power(self, values, **options):
        """``x[key] **= values``: ``x ** w``, ``w`` as in :meth:`divide`."""
        return _binary("power", self.array, self._factors(values, options))

    def min(self, values, **options):
        """``x[key] = minimum(x[key], values)``."""
        return self._scatter("min", values, **options)

    def max(self, values, **options):
        """``x[key] = maximum(x[key], values)``."""
        return self._scatter("max", values, **options)

    def apply(
        self,
        func: Callable[[object], object],
        *,
        indices_are_sorted=False,
        unique_indices=False,
        mode=None,
        wrap_negative_indices=True,
    ):
        """``func`` applied to the elements at the key: ``x.at[key].set(func(x[key]))``.

        jax applies ``func`` once per occurrence of a repeated index; that needs the
        indices to be known unique here: keys without integer arrays, numpy index
        arrays without repeats, or ``unique_indices=True`` (your promise, as in jax).
        """
        form = self._form()
        if not unique_indices and not _unique_positions(form):
            raise NotImplementedError(
                "x.at[key].apply(func) with integer array indices that may repeat: jax applies "
                "func once per occurrence, which is not supported; pass unique_indices=True "
                "if the indices are unique"
            )
        options = {"mode": mode, "wrap_negative_indices": wrap_negative_indices}
        selected = self.get(mode="clip", wrap_negative_indices=wrap_negative_indices)
        return self.set(func(selected), unique_indices=True, **options)

    # -- the scatter ---------------------------------------------------------------------

    def _form(self) -> Advanced:
        x = self.array
        return advanced(x, expand_ellipsis(parse_key(self.index), _ndim(x)))

    def _scatter(
        self,
        reduction: str,
        values: object,
        *,
        indices_are_sorted=False,
        unique_indices=False,
        mode=None,
        out_sharding=None,
        wrap_negative_indices=True,
    ):
        del indices_are_sorted, unique_indices
        _no_sharding(out_sharding)
        return _scatter(
            self.array,
            self._form(),
            reduction,
            values,
            _mode(mode, _SCATTER_MODES, reduction),
            bool(wrap_negative_indices),
        )

    def _factors(self, values: object, options: dict) -> object:
        ones = emit("ones_like", (self.array,), LikeAttrs(None, None))
        return IndexUpdateRef(ones, self.index).multiply(values, **options)


def _binary(op_name: str, a: object, b: object) -> object:
    return emit(op_name, (a, b))


def _static_fill(value: object) -> bool | int | float | None:
    if value is None:
        return None
    if isinstance(value, Tracer):
        raise TypeError("get: fill_value must be a static scalar, got a traced value")
    if np.ndim(value) != 0:
        raise ValueError(f"get: fill_value must be a scalar, got shape {np.shape(value)}")
    item = np.asarray(value).item()
    if not isinstance(item, bool | int | float):
        raise TypeError(f"get: fill_value must be a bool, int or float, got {value!r}")
    return item


def _unique_positions(form: Advanced) -> bool:
    """Whether the key's array positions cannot repeat: no traced index operand and the
    numpy ones (broadcast, wrapped) name each position once."""
    operands = form.operands
    if any(isinstance(o, Tracer) for o in operands):
        return False
    arrays = [np.asarray(o) for o in operands]
    if not arrays or builtins.all(a.ndim == 0 for a in arrays):
        return True
    shape = _shape_of(form.x)
    sizes = [shape[a] for a in form.fields["axes"]]
    if any(not isinstance(s, int) for s in sizes) and any((a < 0).any() for a in arrays):
        return False  # negative indices on a symbolic axis: the positions are unknown
    columns = [
        np.where(b < 0, b + (s if isinstance(s, int) else 0), b).ravel()
        for b, s in zip(np.broadcast_arrays(*arrays), sizes)
    ]
    rows = np.stack(columns, axis=-1)
    return len(np.unique(rows, axis=0)) == len(rows)


def _value_info(value: object) -> StructInfo:
    """The promotion operand of update values: Python scalars (and weak traced scalars)
    are weakly typed, as in jax, so ``x_int32.at[0].set(2**40)`` wraps to int32."""
    if isinstance(value, Tracer):
        return value.info  # weakly typed when computed from Python scalars alone
    if isinstance(value, bool):
        return PrimInfo("bool", weak=True)
    if isinstance(value, int | arith.Expr):
        return PrimInfo("int64", weak=True)
    if isinstance(value, float):
        return PrimInfo("float64", weak=True)
    return TensorInfo(np.shape(value), dtypes.canonical(value.dtype))  # type: ignore[attr-defined]


def _values(values: object, method: str) -> object:
    """Update values as an operand: tracers, Python scalars, symbolic dims or arrays."""
    if isinstance(values, Tracer | bool | int | float | arith.Expr | np.ndarray):
        array = values
    elif isinstance(values, np.generic):
        array = np.asarray(values)
    elif _is_array_like(values):
        array = as_numpy(values)
    else:
        raise TypeError(
            f"x.at[key].{method}: values must be an array or a number, got "
            f"{type(values).__name__} {values!r}"
        )
    if isinstance(array, np.ndarray) and dtypes_name(array.dtype) not in dtypes.DTYPES:
        raise TypeError(
            f"x.at[key].{method}: values of dtype {array.dtype} are not supported "
            f"(supported: {', '.join(dtypes.DTYPES)})"
        )
    return array


def _scatter(x, form: Advanced, reduction: str, values, mode: str, wrap: bool):
    values = _values(values, reduction)
    compute = promote_types("scatter", [_value_info(x), _value_info(values)])
    if _dtype_of(values) != compute:
        values = emit("astype", (values,), AstypeAttrs(compute))
    attrs = ScatterAttrs(**form.fields, wrap=wrap, reduction=reduction, mode=mode)
    target = _indexed_shape(form, attrs)
    full = list(target)
    for axis in form.new_axes:
        full.insert(axis, 1)
    if _shape_of(values) != tuple(full):
        values = emit("broadcast_to", (values,), BroadcastToAttrs(tuple(full)))
    if form.new_axes:
        values = emit("squeeze", (values,), SqueezeAttrs(form.new_axes))
    result = emit("scatter", (form.x, values, *form.operands), attrs)
    if form.bool_axes:
        result = emit("squeeze", (result,), SqueezeAttrs(form.bool_axes))
    return result


def _indexed_shape(form: Advanced, attrs: ScatterAttrs) -> tuple[Dim, ...]:
    """The shape of ``x[key]`` without the new axes (what the scatter's updates have)."""
    infos = [_operand_info(form.x), *(_operand_info(o) for o in form.operands)]
    gather = GatherAttrs(**form.fields, wrap=attrs.wrap)
    info, _ = ops.get("gather").deduce(infos, gather)
    if info.shape is None:
        raise TraceError(
            "x.at[key]: the shape of x[key] is not known while tracing (the index arrays' "
            "shapes do not provably broadcast); give the indices one shape with "
            "relax.match_cast"
        )
    return info.shape


def _operand_info(value: object) -> StructInfo:
    if isinstance(value, Tracer):
        return value.info
    if isinstance(value, bool | int | arith.Expr) or (
        isinstance(value, np.generic) and np.ndim(value) == 0
    ):
        return PrimInfo("int64", weak=True)
    return TensorInfo(np.shape(value), dtypes.canonical(np.asarray(value).dtype))


def _dtype_of(value: object) -> str:
    if isinstance(value, Tracer):
        return value.dtype
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | arith.Expr):
        return "int64"
    if isinstance(value, float):
        return "float64"
    return dtypes.canonical(np.asarray(value).dtype)
