"""Kernel deduplication: structurally identical kernels are stored once.

Kernels that differ only by name (e.g. after two calls were scheduled the same
way) are merged under the first one's name; every ``call_tir`` of a dropped
duplicate is redirected. Legalisation already dedupes the kernels it creates;
this pass does the same for any module.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping

from relaxjax.ir import ExprMutator, GlobalVar, IRModule
from relaxjax.passes.kernels import kernel_key

__all__ = ["dedup_kernels"]


class _Redirect(ExprMutator):
    """Renames the kernels a module's calls refer to."""

    def __init__(self, renames: Mapping[str, str]) -> None:
        super().__init__()
        self.renames = renames

    def visit_GlobalVar(self, ref: GlobalVar) -> GlobalVar:
        return GlobalVar(self.renames[ref.name]) if ref.name in self.renames else ref


def dedup_kernels(mod: IRModule) -> IRModule:
    """``mod`` with each set of identical kernels replaced by its first member."""
    first_name: dict[Hashable, str] = {}
    renames: dict[str, str] = {}
    for name, kernel in mod.kernels().items():
        key = kernel_key(kernel)
        if key in first_name:
            renames[name] = first_name[key]
        else:
            first_name[key] = name
    if not renames:
        return mod
    redirected = _Redirect(renames).visit(mod)
    return IRModule({k: v for k, v in redirected.functions.items() if k not in renames})
