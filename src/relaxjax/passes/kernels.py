"""Kernels as module items: structural identity and names.

Two kernels that differ only by name do the same thing; :func:`kernel_key` is what
the dedup and legalisation passes compare. Names follow the op a kernel implements
(``matmul``), with a numeric suffix only when several *different* kernels share an
op (``add``, ``add_1``) or the plain name is taken by another module item.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Container, Hashable, Sequence

__all__ = ["kernel_key", "kernel_names", "rename_kernel"]


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


def kernel_names(stems: Sequence[str], taken: Container[str] = ()) -> list[str]:
    """A unique name per distinct kernel, given each kernel's stem (its op's name).

    The first kernel of a stem gets the bare stem, later ones ``stem_1``, ``stem_2``...
    Names in ``taken`` (other module items) are skipped.
    """
    used: set[str] = set()
    names = []
    counters: dict[str, int] = {}
    for stem in stems:
        count = counters.get(stem, 0)
        candidate = stem if count == 0 else f"{stem}_{count}"
        while candidate in used or candidate in taken:
            count += 1
            candidate = f"{stem}_{count}"
        counters[stem] = count + 1
        used.add(candidate)
        names.append(candidate)
    return names
