"""Kernels as module items: structural identity and renaming.

Two kernels that differ only by name do the same thing; :func:`kernel_key` is what
the dedup and legalisation passes compare.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Hashable

from relaxjax.ir import Function, IRModule

__all__ = ["KernelTable", "kernel_key", "rename_kernel", "rewrite_functions"]


def kernel_key(kernel: object) -> Hashable:
    """What makes two kernels the same kernel: every field but the name."""
    if dataclasses.is_dataclass(kernel):
        values = tuple(
            getattr(kernel, f.name) for f in dataclasses.fields(kernel) if f.name != "name"
        )
        return (type(kernel), values)
    return (type(kernel), id(kernel))  # not a value type: only identical objects are equal


def rename_kernel(kernel: object, name: str) -> object:
    """``kernel`` under ``name`` (through its ``with_name`` when it has one)."""
    if getattr(kernel, "name", None) == name:
        return kernel
    with_name = getattr(kernel, "with_name", None)
    if with_name is not None:
        return with_name(name)
    return dataclasses.replace(kernel, name=name)  # type: ignore[type-var]


class KernelTable:
    """A module's kernels by structure, and names for the new kernels a pass adds: a
    kernel equal to one already there reuses its name; ``new`` holds the added ones."""

    def __init__(self, mod: IRModule) -> None:
        self.mod = mod
        self.names: dict[Hashable, str] = {kernel_key(k): n for n, k in mod.kernels().items()}
        self.taken = set(mod.functions)
        self.new: dict[str, object] = {}

    def add(self, kernel: object, stem: str) -> str:
        """The name of ``kernel`` in the module, ``stem`` (or ``stem_1``, ...) when new."""
        key = kernel_key(kernel)
        if key not in self.names:
            name, count = stem, 0
            while name in self.taken:
                count += 1
                name = f"{stem}_{count}"
            self.taken.add(name)
            self.names[key] = name
            self.new[name] = rename_kernel(kernel, name)
        return self.names[key]


def rewrite_functions(
    mod: IRModule, rewrite: Callable[[Function, KernelTable], Function]
) -> IRModule:
    """``mod`` with each graph function replaced by ``rewrite(function, kernels)`` and the
    kernels the rewrites added to ``kernels`` (a :class:`KernelTable` of ``mod``); ``mod``
    itself when no function changed."""
    kernels = KernelTable(mod)
    items = {}
    changed = False
    for name, item in mod.functions.items():
        new = rewrite(item, kernels) if isinstance(item, Function) else item
        changed = changed or new is not item
        items[name] = new
    if not changed:
        return mod
    items.update(kernels.new)
    return IRModule(items)
