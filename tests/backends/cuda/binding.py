"""A minimal GPU binding for the codegen tests, until the default GPU rules
(``relaxjax.schedule.rules.gpu``, another helper's) are on main.

Every block directly under the root: its leading spatial loops fused, split by 128 and
bound to ``blockIdx.x`` / ``threadIdx.x``; reduction loops stay serial in each thread.
A nest that cannot be bound (no spatial loop, or a dependence) is left as it is (it runs
as a one-thread launch). Not a schedule rule: no shared memory, no warp reductions.
"""

from __future__ import annotations

from relaxjax import schedule
from relaxjax.errors import ScheduleError
from relaxjax.ir import IRModule
from relaxjax.schedule.rules import RULE_ATTR, is_scheduled
from relaxjax.tir import PrimFunc

THREADS = 128


def bind_kernel(func: PrimFunc) -> PrimFunc:
    """``func`` with each top-level nest's spatial loops bound to blocks and threads."""
    if is_scheduled(func):
        return func
    sch = schedule.Schedule(func)
    try:
        root = sch.get_block("root")
    except ScheduleError:  # a kernel written as plain loops (data-dependent ops)
        return func.with_attrs({**dict(func.attrs), RULE_ATTR: "test_binding"})
    for block in sch.get_child_blocks(root):
        node = sch.get_block_node(block)
        kinds = {iv.var.name: iv.kind for iv in node.iter_vars}
        realize = sch.get_realize(block)
        loops = sch.get_loops(block)
        spatial = []
        for loop in loops:
            name = sch.get_loop_node(loop).var.name
            bound = [iv for iv, v in zip(node.iter_vars, realize.iter_values) if str(v) == name]
            if not bound or kinds[bound[0].var.name] != "spatial":
                break
            spatial.append(loop)
        if not spatial:
            continue
        try:
            fused = sch.fuse(*spatial) if len(spatial) > 1 else spatial[0]
            outer, inner = sch.split(fused, factors=[None, THREADS])
            sch.bind(outer, "blockIdx.x")
            sch.bind(inner, "threadIdx.x")
        except ScheduleError:
            continue
    return sch.func.with_attrs({**dict(sch.func.attrs), RULE_ATTR: "test_binding"})


def bind_module(mod: IRModule) -> IRModule:
    """Every unscheduled kernel of ``mod`` through :func:`bind_kernel`."""
    items = {}
    for name, item in mod.functions.items():
        if isinstance(item, PrimFunc) and not is_scheduled(item):
            item = bind_kernel(item)
        items[name] = item
    return IRModule(items)
