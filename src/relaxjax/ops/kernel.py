"""Helpers for ``Op.lower``: canonical kernel symbols and broadcast indexing.

A kernel is shape-generic: dims that are static ints stay ints, every other dim of a
buffer becomes a kernel symbol named canonically ``d0, d1, ...`` in order of first
appearance (inputs, then outputs). So ``add`` on ``(n, 4)`` and on ``(m, 4)`` lower to
the same kernel, which the graph level stores once::

    >>> from relaxjax import arith
    >>> from relaxjax.ir import TensorInfo
    >>> dims = KernelDims()
    >>> dims.input_shape(TensorInfo((arith.sym("n"), 4)))
    (d0, 4)

A graph dim that is not a whole input dim but can be written with the kernel's
symbols (``n + m`` when ``n`` and ``m`` are input dims) is written so; otherwise an
output dim gets a fresh symbol (bound from the output buffer's shape at run time).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from relaxjax import arith
from relaxjax.errors import LoweringError
from relaxjax.ir import StructInfo, TensorInfo
from relaxjax.ops.base import Dim, as_tensor_info, broadcast_result
from relaxjax.tir import te
from relaxjax.tir.expr import IndexExpr, PrimExpr, cast, ne
from relaxjax.tir.function import PrimFunc


class KernelDims:
    """Assigns canonical kernel symbols to the graph dims of one kernel's buffers.

    ``reserved`` names (graph symbols the kernel keeps as scalar params) are skipped.
    """

    def __init__(self, reserved: Sequence[str] = ()) -> None:
        self._dims: dict[arith.Expr, Dim] = {}
        self._symbols: dict[str, Dim] = {}
        self._reserved = set(reserved)
        self._count = 0

    def fresh(self) -> arith.Sym:
        """A new canonical symbol ``d<k>``."""
        while True:
            name = f"d{self._count}"
            self._count += 1
            if name not in self._reserved:
                return arith.sym(name)

    def input_shape(self, info: StructInfo, what: str = "operand") -> tuple[Dim, ...]:
        """The kernel shape of an input buffer (a scalar is 0-d)."""
        tensor = as_tensor_info(info)
        if tensor.shape is None:
            return tuple(self.fresh() for _ in range(_rank(tensor, what)))
        return tuple(self._new_dim(d) for d in tensor.shape)

    def output_shape(self, info: StructInfo, what: str = "result") -> tuple[Dim, ...]:
        """The kernel shape of an output buffer: input dims where it has them."""
        tensor = as_tensor_info(info)
        if tensor.shape is None:
            return tuple(self.fresh() for _ in range(_rank(tensor, what)))
        return tuple(self._output_dim(d) for d in tensor.shape)

    def broadcast_shape(self, info: StructInfo, shapes: Sequence[Sequence[Dim]]) -> tuple[Dim, ...]:
        """The output shape of a broadcast over kernel ``shapes``: ``info``'s dims when
        known, else per axis the broadcast of the operands' dims where provable."""
        tensor = as_tensor_info(info)
        if tensor.shape is not None:
            return self.output_shape(tensor)
        ndim = _rank(tensor, "result")
        padded = [(1,) * (ndim - len(s)) + tuple(s) for s in shapes]
        result = []
        for axis in range(ndim):
            dim = broadcast_result([p[axis] for p in padded])
            result.append(self.fresh() if dim is None else dim)
        return tuple(result)

    def resolve(self, dim: Dim) -> Dim | None:
        """``dim`` written with kernel symbols, or None when it cannot be."""
        if isinstance(dim, int):
            return dim
        if dim in self._dims:
            return self._dims[dim]
        free = arith.free_symbols(dim)
        if all(s.name in self._symbols for s in free):
            return arith.subs(dim, {s.name: self._symbols[s.name] for s in free})
        return None

    def value(self, dim: Dim) -> Dim:
        """A graph dim used as a value in the kernel: resolved, or kept as is (its
        symbols become scalar params, named as in the graph; a symbolic upper bound,
        which names other graph symbols, becomes its largest value)."""
        resolved = self.resolve(dim)
        return _kernel_bounds(dim) if resolved is None else resolved

    def _output_dim(self, dim: Dim) -> Dim:
        resolved = self.resolve(dim)
        return self._new_dim(dim) if resolved is None else resolved

    def _new_dim(self, dim: Dim) -> Dim:
        if isinstance(dim, int):
            return dim
        if dim not in self._dims:
            symbol = self.fresh()
            self._dims[dim] = symbol
            if isinstance(dim, arith.Sym):
                self._symbols[dim.name] = symbol
        return self._dims[dim]


def _kernel_bounds(dim: Dim) -> Dim:
    """``dim`` with every symbol bounded by other symbols (``k <= n * 4``) bounded by an
    int instead (or unbounded): a kernel knows no graph symbols but its own."""
    if isinstance(dim, int):
        return dim
    loose = {
        s.name: arith.sym(s.name, s.lower, arith.bounds(s)[1])
        for s in arith.free_symbols(dim)
        if isinstance(s.upper, arith.Expr)
    }
    return arith.subs(dim, loose) if loose else dim


def _rank(info: TensorInfo, what: str) -> int:
    if info.ndim is None:
        raise LoweringError(f"cannot lower with the {what} of unknown rank ({info!r})")
    return info.ndim


def index_dims(indices: Sequence[object]) -> tuple[Dim, ...]:
    """Loop indices (``IndexExpr`` from ``te.compute``) as arith dims."""
    return tuple(i.index_dim if isinstance(i, IndexExpr) else i for i in indices)


def broadcast_indices(
    shape: Sequence[Dim], out_shape: Sequence[Dim], indices: Sequence[object]
) -> tuple[Dim, ...]:
    """The element of a broadcast operand of ``shape`` read at output ``indices``.

    Axes align from the right; a dim proven 1 reads index 0, a dim equal to the output
    dim reads the output index, and any other dim reads ``min(i, dim - 1)``, which is
    right whether the dim turns out to be 1 or the output size (checked at run time).
    """
    out = index_dims(indices)
    offset = len(out_shape) - len(shape)
    result = []
    for axis, dim in enumerate(shape):
        i, wanted = out[offset + axis], out_shape[offset + axis]
        if arith.compare(dim, "==", 1) is True:
            result.append(0)
        elif arith.compare(dim, "==", wanted) is True:
            result.append(i)
        else:
            result.append(arith.min_(i, dim - 1))
    return tuple(result)


def as_bool(value: PrimExpr) -> PrimExpr:
    """``value != 0`` (nonzero is true), or ``value`` itself when it is bool."""
    return value if value.dtype == "bool" else ne(value, 0)


def convert(value: PrimExpr, dtype: str) -> PrimExpr:
    """``value`` converted to ``dtype``; to bool means nonzero."""
    return as_bool(value) if dtype == "bool" else cast(value, dtype)


def placeholders(
    dims: KernelDims, arg_infos: Sequence[StructInfo], names: Sequence[str]
) -> list[te.Tensor]:
    """One input placeholder per operand (scalars as 0-d buffers)."""
    return [
        te.placeholder(dims.input_shape(info, name), as_tensor_info(info).dtype, name)
        for info, name in zip(arg_infos, names)
    ]


def single_input(arg_infos: Sequence[StructInfo]) -> tuple[KernelDims, te.Tensor]:
    """The kernel dims and the placeholder ``x`` of an op's first (only) operand."""
    dims = KernelDims()
    (x,) = placeholders(dims, arg_infos[:1], ("x",))
    return dims, x


def gather_kernel(
    name: str, x: te.Tensor, shape: Sequence[Dim], source: Callable[..., Sequence[Dim]]
) -> PrimFunc:
    """The one-stage kernel ``[x, out]`` with ``out[i] = x[source(i)]`` (a copy)."""
    out = te.compute(shape, lambda *i: x[tuple(source(index_dims(i)))], name=name)
    return te.create_prim_func([x, out], name=name)


def broadcast_kernel(
    name: str,
    arg_infos: Sequence[StructInfo],
    out_info: StructInfo,
    names: Sequence[str],
    scalar: Callable[..., PrimExpr],
) -> PrimFunc:
    """A one-stage kernel ``out[i] = scalar(*operands broadcast to i)``, cast to the
    result's dtype."""
    dims = KernelDims()
    inputs = placeholders(dims, arg_infos, names)
    out_shape = dims.broadcast_shape(out_info, [t.shape for t in inputs])
    dtype = as_tensor_info(out_info).dtype

    def body(*indices: object) -> PrimExpr:
        loads = [t[broadcast_indices(t.shape, out_shape, indices)] for t in inputs]
        return convert(scalar(*loads), dtype)

    out = te.compute(out_shape, body, name=name)
    return te.create_prim_func([*inputs, out], name=name)


__all__ = [
    "KernelDims",
    "as_bool",
    "broadcast_indices",
    "broadcast_kernel",
    "convert",
    "gather_kernel",
    "index_dims",
    "placeholders",
    "single_input",
]
