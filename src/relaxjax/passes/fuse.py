"""Op fusion: groups of kernel calls become one kernel that touches each tensor once.

Run after :func:`~relaxjax.passes.legalize`. Within a dataflow block, calls are
grouped by :func:`~relaxjax.passes.fuse_groups.fusion_groups` (Relax's FuseOps, with
the kernels' own loop nests as the analysis): an elementwise chain or DAG, or a *row
kernel* — reductions over the same rows with the elementwise stages before, between
and after them — never a matrix product or a kernel the rules cannot read.
``gelu(layer_norm(x, g, b) * g + b)``::

    lv0 = call_tir(mod.layer_norm, (x, g, b), ...)
    lv1 = call_tir(mod.multiply, (lv0, g), ...)      lv3 = call_tir(
    lv2 = call_tir(mod.add, (lv1, b), ...)      ->       mod.fused_layer_norm_multiply_add_gelu,
    lv3 = call_tir(mod.gelu, (lv2,), ...)                (x, g, b), ...)

and a layer norm written out (``mean``, ``subtract``, ``square``, ``mean``, ``add``,
``rsqrt``, ``multiply``) is one kernel too. The group's kernel is built by
:func:`relaxjax.schedule.rules.merge.merge_kernels` (FuseTIR), which inlines the
intermediates one stage reads; the schedule rules decide for the others (computed
once per row into a row buffer, or recomputed per element). The fused call keeps
every run-time check of the calls it replaces. Calls whose result shape is only
known at run time (``LegalizedAttrs``) are left alone. Kernels no longer called are
dropped.
"""

from __future__ import annotations

from collections import Counter

from relaxjax import arith
from relaxjax.errors import RelaxError
from relaxjax.ir import (
    CALL_TIR,
    Binding,
    Call,
    CallTIRAttrs,
    DataflowBlock,
    Expr,
    GlobalVar,
    IRModule,
    PrimInfo,
    ShapeExpr,
    Tuple,
    Var,
)
from relaxjax.passes.dce import eliminate_dead_code
from relaxjax.passes.fuse_groups import Group, as_fusable, fusion_groups, kernel_kind
from relaxjax.passes.kernels import kernel_key
from relaxjax.passes.walk import called_kernels, rebuild_function, var_uses
from relaxjax.schedule.rules.merge import Stage, merge_kernels
from relaxjax.tir.buffer import Buffer
from relaxjax.tir.function import PrimFunc

__all__ = ["fuse_ops", "kernel_kind"]

#: The longest fused kernel name (the op names of the group, joined).
_MAX_NAME = 60


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


def _fused_call(group: Group, mod: IRModule, names: dict) -> tuple[Binding, PrimFunc, str]:
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
                read_as.append((param, member.symbols()))
            sources.append(("input", index_of[key]))
        stages.append(Stage(member.kernel, member.symbols(), tuple(sources)))
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
    calls = [c for i, b in enumerate(bindings) if (c := as_fusable(i, b, mod)) is not None]
    result = list(bindings)
    for group in fusion_groups(calls, uses):
        try:
            binding, kernel, name = _fused_call(group, mod, names)
        except RelaxError:
            continue  # kernels the merge cannot read stay separate calls
        new_kernels[name] = kernel.with_name(name)
        for member in group.members[:-1]:
            result[member.position] = None
        result[group.members[-1].position] = binding
    return [b for b in result if b is not None]


def fuse_ops(mod: IRModule) -> IRModule:
    """``mod`` with fusable chains of kernel calls merged (see the module doc)."""
    names = {kernel_key(k): n for n, k in mod.kernels().items()}
    new_kernels: dict[str, PrimFunc] = {}
    items: dict[str, object] = dict(mod.functions)
    changed = False
    for fname, function in mod.graph_functions().items():
        uses = var_uses(function)
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
