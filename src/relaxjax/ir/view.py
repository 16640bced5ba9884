"""``call_view``: a tensor that reads the memory of another one, without a copy.

``call_view(x, shape=..., strides=..., offset=...)`` is the tensor whose element
``[i0, i1, ...]`` is element ``offset + i0 * strides[0] + i1 * strides[1] + ...`` of
``x`` taken in row-major (flat) order — numpy's ``as_strided`` on ``x.ravel()``, with
strides and offset in elements and every dim possibly symbolic (TVM's
``R.memory.view``, Inductor's ``ReinterpretView``). Its value is defined by ``x``'s
value alone; the runtime makes it a view of ``x``'s memory, which every value a call
computes holds in row-major order. The pass :mod:`relaxjax.passes.views` turns layout
ops (reshape, transpose, slices, ...) into views::

    lv3: Tensor((1, n, 768), "float32") = call_view(lv2, shape=(1, n, 768),
        strides=(n * 2304, 2304, 1), offset=768)

Rules the well-formedness checker enforces (:func:`relaxjax.ir.verify`):

- the base of a view is not itself a view (views of views are composed into one view
  of the first base, so every view reads memory laid out in row-major order);
- a kernel reads a view operand with the view's strides (the kernel's parameter buffer
  declares them; :func:`param_mismatch`);
- an in-place update never writes a view, nor a buffer a view still reads
  (:class:`relaxjax.ir.inplace.BufferFacts` counts a view's uses as uses of its base).

:class:`ViewFacts` finds, for every variable of a function, the layout of the view it
names (through aliases, ``match_cast``, tuples and their items).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from relaxjax import arith
from relaxjax.arith import Dim
from relaxjax.ir.infer import InferContext
from relaxjax.ir.layout import Layout, row_major
from relaxjax.ir.nodes import (
    AnyBinding,
    Call,
    Expr,
    Function,
    MatchCast,
    Tuple,
    TupleGetItem,
    Var,
)
from relaxjax.ir.struct_info import StructInfo, TensorInfo, as_dims

__all__ = [
    "CALL_VIEW",
    "View",
    "ViewAttrs",
    "ViewFacts",
    "call_view",
    "is_view_call",
    "kernel_symbols",
    "param_mismatch",
]


@dataclass(frozen=True, slots=True)
class ViewAttrs:
    """The layout of a ``call_view``: its shape, strides and offset, in elements of its
    base (strides and offset may be negative, the shape may not)."""

    shape: tuple[Dim, ...]
    strides: tuple[Dim, ...]
    offset: Dim = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "shape", as_dims(self.shape))
        object.__setattr__(self, "strides", tuple(arith.as_dim(s) for s in self.strides))
        object.__setattr__(self, "offset", arith.as_dim(self.offset))
        if len(self.strides) != len(self.shape):
            raise ValueError(
                f"ViewAttrs: {len(self.strides)} strides given for {len(self.shape)} axes"
            )

    @property
    def layout(self) -> Layout:
        """The attributes as a :class:`~relaxjax.ir.layout.Layout`."""
        return Layout(self.shape, self.strides, self.offset)


class CallViewOp:
    """``call_view``: a strided view of a tensor (see the module doc)."""

    name = "call_view"
    Attrs = ViewAttrs

    def infer(self, args: Sequence[StructInfo], attrs: ViewAttrs, ctx: InferContext):
        """A tensor of the view's shape and the base's dtype; a view that reaches outside
        its base for every value of the symbols is refused."""
        if len(args) != 1:
            ctx.fail(f"takes one operand (the base), got {len(args)}")
        (base,) = args
        if not isinstance(base, TensorInfo):
            ctx.fail(f"the base must be a tensor, got a value of {base!r}")
        layout = attrs.layout
        if base.shape is not None and layout.ndim:
            size = _prod(base.shape)
            nonempty = all(arith.compare(d, ">", 0) is True for d in layout.shape)
            last = layout.max_offset()
            if nonempty and arith.compare(last, ">=", size) is True:
                ctx.fail(
                    f"a view of {len(layout.shape)} axes reaching element {last} of a base "
                    f"of {size} elements"
                )
        return TensorInfo(attrs.shape, base.dtype, weak=base.weak)

    def __repr__(self) -> str:
        return "Op(call_view)"

    def __reduce__(self) -> str:
        return "CALL_VIEW"  # unpickles as the singleton


def _prod(dims: Sequence[Dim]) -> Dim:
    total: Dim = 1
    for dim in dims:
        total = total * dim
    return total


CALL_VIEW = CallViewOp()


def call_view(
    base: Expr,
    shape: Sequence[Dim],
    strides: Sequence[Dim] | None = None,
    offset: Dim = 0,
    info: StructInfo | None = None,
) -> Call:
    """A view of ``base`` (row-major ``strides`` when None); ``info`` is filled in by the
    builder when not given."""
    shape = tuple(shape)
    attrs = ViewAttrs(shape, row_major(shape) if strides is None else tuple(strides), offset)
    return Call(CALL_VIEW, (base,), attrs, info)


def is_view_call(expr: object) -> bool:
    """Whether ``expr`` is a ``call_view``."""
    return isinstance(expr, Call) and expr.op is CALL_VIEW


@dataclass(frozen=True, slots=True)
class View:
    """What a variable that names a view reads: ``base`` (a var or constant that is not a
    view) through ``layout``."""

    base: Expr
    layout: Layout

    @property
    def contiguous(self) -> bool:
        """Whether the view is a row-major run of its base's memory."""
        return self.layout.is_contiguous()


# A value's views: a View (or None) for a tensor, a tuple of those for a tuple.
_Tree = object


class ViewFacts:
    """The view each variable of ``function`` names, if any (aliases followed)."""

    def __init__(self, function: Function) -> None:
        self.views: dict[Var, _Tree] = {}
        for block in function.body.blocks:
            for binding in block.bindings:
                self._bind(binding)

    def view(self, expr: Expr) -> View | None:
        """The view ``expr`` names (a var, or an item of a tuple of views), else None."""
        tree = self.tree(expr)
        return tree if isinstance(tree, View) else None

    def tree(self, expr: Expr) -> _Tree:
        """The views of ``expr``: a View or None for a tensor, a tuple for a tuple."""
        if isinstance(expr, Var):
            return self.views.get(expr)
        if isinstance(expr, Tuple):
            return tuple(self.tree(f) for f in expr.fields)
        if isinstance(expr, TupleGetItem):
            inner = self.tree(expr.tuple_value)
            if isinstance(inner, tuple) and expr.index < len(inner):
                return inner[expr.index]
        return None

    def _bind(self, binding: AnyBinding) -> None:
        value = binding.value
        if is_view_call(value):
            base = value.args[0]  # type: ignore[union-attr]
            self.views[binding.var] = View(base, value.attrs.layout)  # type: ignore[union-attr]
            return
        if isinstance(binding, MatchCast) or isinstance(value, (Var, Tuple, TupleGetItem)):
            tree = self.tree(value)
            if tree is not None:
                self.views[binding.var] = tree


def param_mismatch(
    kernel: object, position: int, operand: Expr, view: View | None, symbols: dict[str, Dim]
) -> str | None:
    """Why the kernel's input buffer ``position`` cannot read ``operand`` (None: it can).

    The buffer's strides (row-major unless declared), with the kernel's symbols replaced
    by the call's dims (``symbols``), must equal the operand's: the view's strides, or
    row-major for any other tensor. Axes proven to have size 1 are not compared.
    """
    buffer = kernel.params[position]  # type: ignore[attr-defined]
    info = operand.info
    if not isinstance(info, TensorInfo) or info.shape is None:
        return None  # a coarse operand: the kernel's shape symbols bind at run time
    declared = buffer.strides
    if view is None and declared is None:
        return None
    strides = view.layout.strides if view is not None else row_major(info.shape)
    wanted = buffer.strides_or_default()
    for axis, (dim, have, want) in enumerate(zip(info.shape, strides, wanted)):
        if arith.prove_equal(dim, 1):
            continue
        want = arith.subs(want, symbols) if not isinstance(want, int) else want
        if not arith.prove_equal(have, want):
            return (
                f"its buffer {buffer.name} has stride {want} on axis {axis}, but the operand "
                f"{'view' if view is not None else 'tensor'} has stride {have}"
            )
    return None


def kernel_symbols(
    kernel: object,
    operands: Sequence[Expr],
    results: Sequence[StructInfo],
    tir_vars: Sequence[Dim],
) -> dict[str, Dim]:
    """The call's dims of the kernel's symbols: from its operands' and results' shapes
    (where the kernel binds them) and its scalar arguments."""
    infos = [o.info for o in operands] + list(results)
    values: dict[str, Dim] = {}
    for source in kernel.symbol_sources():  # type: ignore[attr-defined]
        if source.scalar is not None:
            if source.scalar < len(tir_vars):
                values[source.sym.name] = tir_vars[source.scalar]
            continue
        if source.param >= len(infos):
            continue
        info = infos[source.param]
        if isinstance(info, TensorInfo) and info.shape is not None:
            values[source.sym.name] = info.shape[source.axis]
    return values
