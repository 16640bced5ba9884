"""The CPU rule for kernels written as statements that name their loops' kinds.

A kernel whose algorithm is its schedule (the fused attention kernel of
:mod:`relaxjax.ops.flash_attention`: tiles, an online softmax) is built with serial
loops annotated ``cpu_kind = "parallel" | "vectorized" | "unrolled"``; this rule gives
each such loop its kind and drops the annotation. Kernels without the annotation are
left to the other rules (None).
"""

from __future__ import annotations

import dataclasses

from relaxjax.ops.flash_attention import CPU_KIND
from relaxjax.tir.function import PrimFunc
from relaxjax.tir.functor import StmtMutator
from relaxjax.tir.stmt import For, Stmt

__all__ = ["annotated_rule"]

_KINDS = ("parallel", "vectorized", "unrolled", "serial")


class _Apply(StmtMutator):
    def __init__(self):
        self.found = False

    def visit_For(self, stmt: For) -> Stmt:
        node = super().visit_For(stmt)
        annotations = dict(node.annotations)
        kind = annotations.pop(CPU_KIND, None)
        if kind not in _KINDS:
            return node
        self.found = True
        return dataclasses.replace(node, kind=kind, annotations=tuple(annotations.items()))


def annotated_rule(func: PrimFunc, target: object = "llvm") -> PrimFunc | None:
    """``func`` with the annotated loop kinds applied; None when no loop names one."""
    mutator = _Apply()
    body = mutator.visit_stmt(func.body)
    return func.with_body(body) if mutator.found else None
