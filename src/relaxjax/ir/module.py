"""The module: graph functions, loop-level kernels and external declarations, by name.

Kernels (``tir.PrimFunc``) are held by duck type: anything with a ``name`` that is not
a graph ``Function`` or an ``ExternDecl`` is a kernel (ir may not import tir). Printing
a kernel delegates to its own ``__str__``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from types import MappingProxyType

from relaxjax.ir.nodes import ExternDecl, Function, GlobalVar

# A kernel is any object with ``.name`` and ``__str__`` (a tir.PrimFunc).
ModuleItem = Function | ExternDecl | object


def is_kernel(item: object) -> bool:
    """Whether a module item is a loop-level kernel (not a graph function or extern)."""
    return not isinstance(item, (Function, ExternDecl)) and hasattr(item, "name")


def _checked_item(name: str, item: object) -> object:
    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(f"module item names must be identifiers, got {name!r}")
    if isinstance(item, Function):
        if item.name != name:
            return Function(item.params, item.body, item.ret_info, name, item.attrs)
        return item
    if isinstance(item, ExternDecl) or is_kernel(item):
        return item
    raise TypeError(
        f"a module holds Functions, ExternDecls and kernels (objects with a name), got {item!r}"
    )


class IRModule:
    """An immutable mapping from names to graph functions, kernels and extern declarations.

    ``==`` is :func:`~relaxjax.ir.structural_equal` (variables matched by position), so
    ``parse_module(str(mod), ops) == mod``.
    """

    __slots__ = ("_items",)

    def __init__(self, functions: Mapping[str, ModuleItem] | None = None) -> None:
        items = {name: _checked_item(name, item) for name, item in (functions or {}).items()}
        object.__setattr__(self, "_items", MappingProxyType(items))

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("IRModule is immutable; use with_function to build a new one")

    def __reduce__(self) -> tuple:
        return (IRModule, (dict(self._items),))

    @property
    def functions(self) -> Mapping[str, ModuleItem]:
        """Every item by name (a read-only view, in insertion order)."""
        return self._items

    def __getitem__(self, name: str) -> ModuleItem:
        try:
            return self._items[name]
        except KeyError:
            known = ", ".join(self._items) or "none"
            raise KeyError(
                f"no function or kernel named {name!r} in the module (has: {known})"
            ) from None

    def __contains__(self, name: object) -> bool:
        return name in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def with_function(self, name: str, item: ModuleItem) -> IRModule:
        """A new module with ``item`` under ``name`` (replacing any item of that name)."""
        items = dict(self._items)
        items[name] = item
        return IRModule(items)

    def without(self, name: str) -> IRModule:
        """A new module without the item ``name``."""
        self[name]  # raises KeyError naming what exists
        return IRModule({k: v for k, v in self._items.items() if k != name})

    def get_global_var(self, name: str) -> GlobalVar:
        """The ``GlobalVar`` referring to item ``name`` (``KeyError`` if there is none)."""
        self[name]
        return GlobalVar(name)

    def graph_functions(self) -> dict[str, Function]:
        """The graph functions by name."""
        return {k: v for k, v in self._items.items() if isinstance(v, Function)}

    def kernels(self) -> dict[str, object]:
        """The loop-level kernels (``tir.PrimFunc``) by name."""
        return {k: v for k, v in self._items.items() if is_kernel(v)}

    def externs(self) -> dict[str, ExternDecl]:
        """The external function declarations by name."""
        return {k: v for k, v in self._items.items() if isinstance(v, ExternDecl)}

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, IRModule):
            return NotImplemented
        from relaxjax.ir.structural import structural_equal  # compares module contents

        return structural_equal(self, other)

    def __hash__(self) -> int:
        return hash(tuple(sorted(self._items)))

    def __str__(self) -> str:
        from relaxjax.ir.printer import module_to_text  # the printer depends on the module

        return module_to_text(self)

    def __repr__(self) -> str:
        return str(self)

    def _repr_html_(self) -> str:
        from relaxjax.ir.printer import module_to_html

        return module_to_html(self)
