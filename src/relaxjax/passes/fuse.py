"""Op fusion: chains of kernel calls become one kernel that touches each tensor once.

Run after :func:`~relaxjax.passes.legalize`. Within a dataflow block, a ``call_tir``
joins the group of the call that produces one of its operands when that operand has
no other use, the two kernels are both spatial (elementwise, broadcast, injective)
or one of them is a reduction (a norm, a softmax, a row sum) with spatial stages
before or after it — never two reductions, never a matrix product or a kernel the
rules cannot read. ``gelu(layer_norm(x, g, b) * g + b)``::

    lv0 = call_tir(mod.layer_norm, (x, g, b), ...)
    lv1 = call_tir(mod.multiply, (lv0, g), ...)      lv3 = call_tir(
    lv2 = call_tir(mod.add, (lv1, b), ...)      ->       mod.fused_layer_norm_multiply_add_gelu,
    lv3 = call_tir(mod.gelu, (lv2,), ...)                (x, g, b), ...)

The group's kernel is built by :func:`relaxjax.schedule.rules.merge.merge_kernels`,
which inlines the intermediates (each stays a buffer of the kernel when it cannot
be inlined, which is still correct). The fused call keeps every run-time check of
the calls it replaces. Calls whose result shape is only known at run time
(``LegalizedAttrs``) are left alone. Kernels no longer called are dropped.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from relaxjax import arith
from relaxjax.errors import RelaxError
from relaxjax.ir import (
    CALL_TIR,
    Binding,
    Call,
    CallTIRAttrs,
    Constant,
    DataflowBlock,
    Expr,
    Function,
    GlobalVar,
    IRModule,
    PrimInfo,
    PrimValue,
    ShapeExpr,
    TensorInfo,
    Tuple,
    Var,
)
from relaxjax.passes.dce import eliminate_dead_code
from relaxjax.passes.kernels import kernel_key
from relaxjax.passes.legalize import LegalizedAttrs
from relaxjax.passes.walk import called_kernels, rebuild_function, used_vars
from relaxjax.schedule.rules.merge import Stage, merge_kernels
from relaxjax.schedule.rules.patterns import match_matmul, simple_nests
from relaxjax.tir.buffer import Buffer
from relaxjax.tir.function import PrimFunc

__all__ = ["fuse_ops", "kernel_kind"]

#: The longest fused kernel name (the op names of the group, joined).
_MAX_NAME = 60


def kernel_kind(kernel: object) -> str | None:
    """``"spatial"`` or ``"reduction"`` for a kernel fusion can merge, else None."""
    if not isinstance(kernel, PrimFunc) or kernel.num_outputs != 1:
        return None
    nests = simple_nests(kernel)
    if not nests or match_matmul(kernel) is not None:
        return None
    return "reduction" if any(n.is_reduction for n in nests) else "spatial"


@dataclass
class _Call:
    """A fusable ``call_tir`` binding."""

    position: int
    binding: Binding
    kernel: PrimFunc
    kind: str
    operands: tuple[Expr, ...]
    tir_vars: tuple[arith.Dim, ...]


@dataclass
class _Group:
    members: list[_Call] = field(default_factory=list)

    @property
    def output(self) -> Var:
        return self.members[-1].binding.var

    @property
    def has_reduction(self) -> bool:
        return any(m.kind == "reduction" for m in self.members)


def _as_call(position: int, binding: Binding, mod: IRModule) -> _Call | None:
    call = binding.value
    if not isinstance(binding, Binding) or not isinstance(call, Call) or call.op is not CALL_TIR:
        return None
    if isinstance(call.attrs, LegalizedAttrs) or not isinstance(call.info, TensorInfo):
        return None
    if call.info.shape is None or not isinstance(call.args[0], GlobalVar):
        return None
    if not isinstance(call.args[1], Tuple):
        return None
    kernel = mod.functions.get(call.args[0].name)
    kind = kernel_kind(kernel)
    if kind is None:
        return None
    operands = tuple(call.args[1].fields)
    if not all(_is_operand(o) for o in operands):
        return None
    tir_vars: tuple[arith.Dim, ...] = ()
    if len(call.args) > 2:
        if not isinstance(call.args[2], ShapeExpr):
            return None
        tir_vars = tuple(call.args[2].values)
    return _Call(position, binding, kernel, kind, operands, tir_vars)


def _is_operand(expr: Expr) -> bool:
    if isinstance(expr, (Var, Constant)):
        info = expr.info
        return (isinstance(info, TensorInfo) and info.shape is not None) or isinstance(
            info, PrimInfo
        )
    return isinstance(expr, PrimValue)


def _same_shape(a: Expr, b: Expr) -> bool:
    sa, sb = a.info.shape, b.info.shape  # type: ignore[union-attr]
    return len(sa) == len(sb) and all(arith.prove_equal(x, y) for x, y in zip(sa, sb))


def _can_join(group: _Group, call: _Call, producer: _Call) -> bool:
    """A reduction joins spatial stages (its prologue); a spatial stage joins when it
    keeps its producer's shape (an epilogue, or the next link of a chain)."""
    if call.kind == "reduction":
        return not group.has_reduction
    return _same_shape(call.binding.var, producer.binding.var)


def _groups(calls: Sequence[_Call], uses: Counter) -> list[_Group]:
    """Greedy chains: a call joins the group whose output it alone consumes."""
    open_groups: dict[Var, _Group] = {}
    groups: list[_Group] = []
    for call in calls:
        joined = None
        for operand in call.operands:
            group = open_groups.get(operand) if isinstance(operand, Var) else None
            if group is None or uses[operand] != 1:
                continue
            if _can_join(group, call, group.members[-1]):
                joined = group
                break
        if joined is None:
            joined = _Group()
            groups.append(joined)
        else:
            del open_groups[joined.output]
        joined.members.append(call)
        open_groups[call.binding.var] = joined
    return [g for g in groups if len(g.members) > 1]


def _symbols_of(call: _Call) -> dict[str, arith.Dim]:
    """The call's kernel symbols as graph dims (from operand shapes and tir_vars)."""
    kernel = call.kernel
    infos = [o.info for o in call.operands] + [call.binding.var.info]
    values: dict[str, arith.Dim] = {}
    for source in kernel.symbol_sources():
        if source.scalar is not None:
            values[source.sym.name] = call.tir_vars[source.scalar]
            continue
        info = infos[source.param]
        shape = info.shape if isinstance(info, TensorInfo) else ()
        values[source.sym.name] = shape[source.axis]
    return values


def _input_buffer(operand: Expr, name: str, param: Buffer, symbols: dict) -> Buffer:
    """The fused kernel's buffer for a graph operand: its shape, and the strides the
    member kernel reads it with (a view's, :mod:`relaxjax.passes.strides`) in graph dims."""
    info = operand.info
    if isinstance(info, PrimInfo):
        return Buffer(name, (), info.dtype)
    strides = None
    if param.strides is not None:
        strides = tuple(d if isinstance(d, int) else arith.subs(d, symbols) for d in param.strides)
    return Buffer(name, tuple(info.shape), info.dtype, strides)  # type: ignore[union-attr]


def _unique(name: str, taken: set[str]) -> str:
    candidate, count = name, 0
    while candidate in taken:
        count += 1
        candidate = f"{name}_{count}"
    taken.add(candidate)
    return candidate


def _fused_call(group: _Group, mod: IRModule, names: dict) -> tuple[Binding, PrimFunc, str]:
    """The binding replacing ``group``, its kernel and the kernel's name."""
    inputs: list[Expr] = []
    param_names: list[str] = []
    read_as: list[tuple[Buffer, dict]] = []  # the first member param reading each input
    index_of: dict[int, int] = {}
    produced = {m.binding.var: i for i, m in enumerate(group.members)}
    stages = []
    taken: set[str] = set()
    for member in group.members:
        sources = []
        for operand, param in zip(member.operands, member.kernel.inputs):
            if isinstance(operand, Var) and operand in produced:
                sources.append(("stage", produced[operand]))
                continue
            key = id(operand)
            if key not in index_of:
                index_of[key] = len(inputs)
                inputs.append(operand)
                # Named after the kernels' own params (not the graph's variables), so
                # the fused kernels of identical layers are identical and stored once.
                param_names.append(_unique(param.name, taken))
                read_as.append((param, _symbols_of(member)))
            sources.append(("input", index_of[key]))
        stages.append(Stage(member.kernel, _symbols_of(member), tuple(sources)))
    buffers = [_input_buffer(o, name, *how) for o, name, how in zip(inputs, param_names, read_as)]
    stem = "fused_" + "_".join(m.kernel.name for m in group.members)
    kernel, scalars = merge_kernels(stem[:_MAX_NAME], buffers, stages)
    name = _kernel_name(kernel, stem[:_MAX_NAME], mod, names)
    last = group.members[-1]
    info = last.binding.value.info
    operands: tuple[Expr, ...] = (GlobalVar(name), Tuple(inputs))
    if scalars:
        operands += (ShapeExpr(scalars),)
    checks = tuple(c for m in group.members for c in m.binding.value.checks)
    unique_checks = tuple(dict.fromkeys(checks))
    call = Call(CALL_TIR, operands, CallTIRAttrs(info), info, unique_checks)
    return Binding(last.binding.var, call, last.binding.location), kernel, name


def _kernel_name(kernel: PrimFunc, stem: str, mod: IRModule, names: dict) -> str:
    key = kernel_key(kernel)
    if key in names:
        return names[key]
    name, count = stem, 0
    while name in mod.functions or name in names.values():
        count += 1
        name = f"{stem}_{count}"
    names[key] = name
    return name


def _fuse_block(bindings, mod: IRModule, uses: Counter, names: dict, new_kernels: dict):
    calls = [c for i, b in enumerate(bindings) if (c := _as_call(i, b, mod)) is not None]
    result = list(bindings)
    for group in _groups(calls, uses):
        try:
            binding, kernel, name = _fused_call(group, mod, names)
        except RelaxError:
            continue  # kernels the merge cannot read stay separate calls
        new_kernels[name] = kernel.with_name(name)
        for member in group.members[:-1]:
            result[member.position] = None
        result[group.members[-1].position] = binding
    return [b for b in result if b is not None]


def _uses(function: Function) -> Counter:
    counts: Counter = Counter()
    for block in function.body.blocks:
        for binding in block.bindings:
            counts.update(used_vars(binding.value))
    counts.update(used_vars(function.body.body))
    return counts


def fuse_ops(mod: IRModule) -> IRModule:
    """``mod`` with fusable chains of kernel calls merged (see the module doc)."""
    names = {kernel_key(k): n for n, k in mod.kernels().items()}
    new_kernels: dict[str, PrimFunc] = {}
    items: dict[str, object] = dict(mod.functions)
    changed = False
    for fname, function in mod.graph_functions().items():
        uses = _uses(function)
        blocks = []
        for block in function.body.blocks:
            if isinstance(block, DataflowBlock):
                blocks.append(_fuse_block(block.bindings, mod, uses, names, new_kernels))
            else:
                blocks.append(list(block.bindings))
        if any(len(n) != len(b.bindings) for n, b in zip(blocks, function.body.blocks)):
            items[fname] = rebuild_function(function, blocks)
            changed = True
    if not changed:
        return mod
    items.update(new_kernels)
    return _drop_orphans(mod, eliminate_dead_code(IRModule(items)))


def _drop_orphans(before: IRModule, after: IRModule) -> IRModule:
    """``after`` without the kernels ``before`` called and ``after`` no longer calls."""

    def called(mod: IRModule) -> set[str]:
        return {name for f in mod.graph_functions().values() for name in called_kernels(f)}

    orphans = called(before) - called(after)
    if not orphans & set(after.functions):
        return after
    return IRModule({n: item for n, item in after.functions.items() if n not in orphans})
