"""Kernels read view operands through strides: the parameter buffer declares them.

After :func:`~relaxjax.passes.legalize`, a kernel's parameters are row-major buffers.
A ``call_tir`` whose operand is a view (:mod:`relaxjax.passes.views`) gets a variant of
its kernel whose buffer for that operand carries the view's strides, written in the
kernel's own symbols (the symbols the kernel binds from its shapes, and new scalar
parameters, passed in the call's ``tir_vars``, for graph symbols it does not know).
Nothing else in the kernel changes: every access computes its address from the
buffer's strides, so the kernel reads the view in place::

    lv8 = call_view(lv2, shape=(12, n, 64), strides=(64, 2304, 1), offset=768)
    lv9 = call_tir(mod.exp, (lv8,), out_info=...)
  becomes
    lv9 = call_tir(mod.exp_strided, (lv8,), out_info=...)

    def exp_strided(x: Buffer((12, d0, 64), "float32", strides=(64, 2304, 1)), ...)

Variants are named ``<kernel>_strided`` (``_strided_1``, ... when several differ) and
stored once (the twelve layers of a model share them). Axes proven to have size 1 keep
their stride (it is never multiplied by anything but 0).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from relaxjax import arith
from relaxjax.arith import Dim
from relaxjax.ir import (
    CALL_TIR,
    CALL_TIR_INPLACE,
    Binding,
    Call,
    Function,
    GlobalVar,
    IRModule,
    ShapeExpr,
    StructInfo,
    Tuple,
    TupleInfo,
    ViewFacts,
    kernel_symbols,
    param_mismatch,
)
from relaxjax.passes.kernels import KernelTable, rewrite_functions
from relaxjax.passes.walk import called_kernels, rebuild_function
from relaxjax.tir.buffer import Buffer
from relaxjax.tir.function import PrimFunc
from relaxjax.tir.functor import StmtMutator, StmtVisitor
from relaxjax.tir.stmt import Block, For, IterVar, LetStmt

__all__ = ["strided_operands", "with_strides"]


class _Names(StmtVisitor):
    """Every symbol name a kernel binds or uses."""

    def __init__(self) -> None:
        self.names: set[str] = set()

    def visit_dim(self, dim: Dim) -> None:
        self.names |= {s.name for s in arith.free_symbols(dim)}

    def visit_For(self, stmt: For) -> None:
        self.names.add(stmt.var.name)
        super().visit_For(stmt)

    def visit_Block(self, stmt: Block) -> None:
        for iv in stmt.iter_vars:
            self.visit_iter_var(iv)
        super().visit_Block(stmt)

    def visit_iter_var(self, iv: IterVar) -> None:
        self.names.add(iv.var.name)

    def visit_LetStmt(self, stmt: LetStmt) -> None:
        self.names.add(getattr(stmt.var, "name", ""))
        super().visit_LetStmt(stmt)


class _Swap(StmtMutator):
    """Buffers replaced by others at every use."""

    def __init__(self, buffers: Mapping[Buffer, Buffer]) -> None:
        self.buffers = buffers

    def visit_buffer(self, buffer: Buffer) -> Buffer:
        return self.buffers.get(buffer, buffer)


def with_strides(
    kernel: PrimFunc, strides: Mapping[int, Sequence[Dim]], extra: Sequence[Dim] = ()
) -> PrimFunc:
    """``kernel`` with parameter ``p``'s buffer declaring ``strides[p]`` (dims over the
    kernel's symbols and ``extra``, new scalar parameters appended to its own)."""
    swaps = {}
    params = list(kernel.params)
    for position, declared in strides.items():
        old = params[position]
        params[position] = Buffer(old.name, old.shape, old.dtype, tuple(declared), old.scope)
        swaps[old] = params[position]
    body = _Swap(swaps).visit_stmt(kernel.body)
    scalars = (*kernel.scalar_params, *extra)
    return PrimFunc(kernel.name, tuple(params), body, kernel.num_outputs, scalars, kernel.attrs)


class _Translation:
    """Graph dims written in a kernel's symbols; graph symbols the kernel does not bind
    become new scalar parameters."""

    def __init__(self, kernel: PrimFunc, symbols: Mapping[str, Dim]) -> None:
        self.known: dict[str, arith.Sym] = {}
        for name, dim in symbols.items():
            if isinstance(dim, arith.Sym) and dim.name not in self.known:
                self.known[dim.name] = arith.sym(name)
        names = _Names()
        names.visit_stmt(kernel.body)
        self.taken = names.names | {s.name for s in kernel.symbols()}
        self.taken |= {p.name for p in kernel.params}
        self.extra: list[arith.Sym] = []  # new scalar params
        self.values: list[Dim] = []  # their graph values

    def dim(self, dim: Dim) -> Dim:
        if isinstance(dim, int):
            return dim
        mapping: dict[str, Dim] = {}
        for symbol in sorted(arith.free_symbols(dim), key=lambda s: s.name):
            if symbol.name not in self.known:
                self.known[symbol.name] = self._new_scalar(symbol)
            mapping[symbol.name] = self.known[symbol.name]
        return arith.subs(dim, mapping)

    def _new_scalar(self, symbol: arith.Sym) -> arith.Sym:
        name, count = symbol.name, 0
        while name in self.taken:
            count += 1
            name = f"{symbol.name}_{count}"
        self.taken.add(name)
        new = arith.sym(name)
        self.extra.append(new)
        self.values.append(symbol)
        return new


def _leaves(info: StructInfo | None) -> list[StructInfo]:
    if isinstance(info, TupleInfo):
        return [leaf for field in info.fields for leaf in _leaves(field)]
    return [] if info is None else [info]


def _strided_call(call: Call, views: ViewFacts, kernels: KernelTable) -> Call | None:
    """The call reading its view operands through strides, or None when it already does."""
    ref = call.args[0]
    kernel = kernels.mod.functions.get(ref.name) if isinstance(ref, GlobalVar) else None
    if not isinstance(kernel, PrimFunc) or not isinstance(call.args[1], Tuple):
        return None
    inputs = list(call.args[1].fields)
    scalar_position = 2 if call.op is CALL_TIR else 3
    has_scalars = len(call.args) > scalar_position
    scalar_arg = call.args[scalar_position] if has_scalars else None
    tir_vars = list(scalar_arg.values) if isinstance(scalar_arg, ShapeExpr) else []
    results = [] if call.op is CALL_TIR_INPLACE else _leaves(call.info)
    if len(inputs) > len(kernel.inputs):
        return None
    symbols = kernel_symbols(kernel, inputs, results, tir_vars)
    translation = _Translation(kernel, symbols)
    strides: dict[int, tuple[Dim, ...]] = {}
    for position, operand in enumerate(inputs):
        view = views.view(operand)
        if view is None or param_mismatch(kernel, position, operand, view, symbols) is None:
            continue
        own = kernel.params[position].strides_or_default()
        shape = operand.info.shape  # type: ignore[union-attr]
        strides[position] = tuple(
            mine if arith.prove_equal(dim, 1) else translation.dim(stride)
            for dim, stride, mine in zip(shape, view.layout.strides, own)
        )
    if not strides:
        return None
    variant = with_strides(kernel, strides, translation.extra)
    stem = kernel.name if kernel.name.endswith("_strided") else f"{kernel.name}_strided"
    name = kernels.add(variant, stem)
    args = list(call.args)
    args[0] = GlobalVar(name)
    if translation.values or has_scalars:
        values = (*tir_vars, *translation.values)
        if has_scalars:
            args[scalar_position] = ShapeExpr(values)
        else:
            args.append(ShapeExpr(values))
    return Call(call.op, tuple(args), call.attrs, call.info, call.checks)


def _function(function: Function, kernels: KernelTable) -> Function:
    views = ViewFacts(function)
    blocks = []
    changed = False
    for block in function.body.blocks:
        bindings = []
        for binding in block.bindings:
            value = binding.value
            if isinstance(value, Call) and (value.op is CALL_TIR or value.op is CALL_TIR_INPLACE):
                new = _strided_call(value, views, kernels)
                if new is not None:
                    binding = Binding(binding.var, new, binding.location)
                    changed = True
            bindings.append(binding)
        blocks.append(bindings)
    return rebuild_function(function, blocks) if changed else function


def strided_operands(mod: IRModule) -> IRModule:
    """``mod`` with every kernel call reading its view operands through strides (see
    the module doc); kernels it leaves without callers are dropped."""
    after = rewrite_functions(mod, _function)
    if after is mod:
        return mod
    before = _called(mod)
    orphans = before - _called(after)
    return IRModule({n: item for n, item in after.functions.items() if n not in orphans})


def _called(mod: IRModule) -> set[str]:
    return {name for f in mod.graph_functions().values() for name in called_kernels(f)}
