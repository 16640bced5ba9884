"""``relaxjax.tree_util``: pytrees with ``jax.tree_util``'s names and signatures.

``relax.jit`` flattens arguments and results with these rules, so a class
registered here (or with ``jax.tree_util``, when jax is imported) goes through
``jit``, ``eval_shape`` and calls between jitted functions and comes back as
itself::

    >>> import dataclasses
    >>> import relaxjax.tree_util as tree_util
    >>> @dataclasses.dataclass
    ... class Linear:
    ...     w: object
    ...     b: object
    ...     act: str = dataclasses.field(default="relu", metadata={"static": True})
    >>> _ = tree_util.register_dataclass(Linear)
    >>> tree_util.tree_leaves(Linear(1, 2))
    [1, 2]
    >>> tree_util.tree_map(lambda v: v * 10, Linear(1, 2, "tanh"))
    Linear(w=10, b=20, act='tanh')

Nodes: tuples, lists, dicts (sorted keys), ``None`` (no leaves), named tuples,
``OrderedDict``, ``defaultdict`` and registered classes; see
:mod:`relaxjax.trace.pytree`. Static (meta) fields and auxiliary data are part of
the structure: ``jit`` compiles once per distinct value, so they must be hashable.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Hashable, Iterable, Sequence

from relaxjax.trace import pytree
from relaxjax.trace.pytree import NodeType, TreeDef

__all__ = [
    "PyTreeDef",
    "register_dataclass",
    "register_pytree_node",
    "register_pytree_node_class",
    "tree_flatten",
    "tree_leaves",
    "tree_map",
    "tree_structure",
    "tree_unflatten",
]

#: The structure of a pytree (jax's name for it).
PyTreeDef = TreeDef


def register_pytree_node(
    nodetype: type,
    flatten_func: Callable[[object], tuple[Iterable[object], Hashable]],
    unflatten_func: Callable[[Hashable, Iterable[object]], object],
    flatten_with_keys_func: Callable | None = None,
) -> None:
    """Make instances of ``nodetype`` pytree nodes, as ``jax.tree_util.register_pytree_node``.

    ``flatten_func(node)`` returns ``(children, aux_data)``; ``unflatten_func(aux_data,
    children)`` rebuilds the node. ``aux_data`` is static: it must be hashable and
    comparable, and ``jit`` compiles once per distinct value. ``flatten_with_keys_func``
    is accepted for jax's signature; messages name the children by position (``[0]``).
    """
    del flatten_with_keys_func  # children are named by position
    pytree.register_node(nodetype, NodeType(flatten_func, unflatten_func))


def register_pytree_node_class(cls: type) -> type:
    """Class decorator: register ``cls`` with its ``tree_flatten`` method and its
    ``tree_unflatten(aux_data, children)`` classmethod (``jax.tree_util``'s protocol)."""
    register_pytree_node(cls, lambda node: node.tree_flatten(), cls.tree_unflatten)  # type: ignore[attr-defined]
    return cls


def register_dataclass(
    nodetype: type,
    data_fields: Sequence[str] | None = None,
    meta_fields: Sequence[str] | None = None,
    drop_fields: Sequence[str] = (),
) -> type:
    """Register a dataclass (or any class built from keyword arguments) as a pytree
    node, as ``jax.tree_util.register_dataclass``: ``data_fields`` are children (traced
    values), ``meta_fields`` static (hashable, part of the structure). For a dataclass
    both may be left out: fields with ``metadata={"static": True}`` are meta, the
    others data. Returns ``nodetype``, so it also works as a decorator."""
    if data_fields is None or meta_fields is None:
        if (data_fields is None) != (meta_fields is None):
            raise TypeError(
                "register_dataclass: data_fields and meta_fields must both be given when "
                f"either is, got data_fields={data_fields!r}, meta_fields={meta_fields!r}"
            )
        if not dataclasses.is_dataclass(nodetype):
            raise TypeError(
                "register_dataclass: data_fields and meta_fields are required when the class "
                f"is not a dataclass, got {nodetype!r}"
            )
        fields = dataclasses.fields(nodetype)
        data_fields = [f.name for f in fields if not f.metadata.get("static", False)]
        meta_fields = [f.name for f in fields if f.metadata.get("static", False)]
    data, meta = tuple(data_fields), tuple(meta_fields)
    _check_dataclass_fields(nodetype, data, meta, tuple(drop_fields))

    def flatten(node: object) -> tuple[tuple, tuple]:
        return tuple(getattr(node, name) for name in data), tuple(
            getattr(node, name) for name in meta
        )

    def unflatten(aux: tuple, children: Iterable[object]) -> object:
        return nodetype(**dict(zip(meta, aux)), **dict(zip(data, children)))

    node = NodeType(flatten, unflatten, keys=lambda aux, count: data, style="attribute")
    pytree.register_node(nodetype, node)
    return nodetype


def _check_dataclass_fields(
    nodetype: type, data: tuple[str, ...], meta: tuple[str, ...], drop: tuple[str, ...]
) -> None:
    overlap = sorted(set(data) & set(meta))
    if overlap:
        raise ValueError(
            f"register_dataclass: data_fields and meta_fields must not overlap, both hold {overlap}"
        )
    if not dataclasses.is_dataclass(nodetype):
        return
    init_fields = {f.name for f in dataclasses.fields(nodetype) if f.init} - set(drop)
    given = set(data) | set(meta)
    if given != init_fields:
        missing, unexpected = sorted(init_fields - given), sorted(given - init_fields)
        raise ValueError(
            "register_dataclass: data_fields and meta_fields must name every dataclass field "
            f"with init=True and only those; missing {missing}, unexpected {unexpected} "
            "(add fields to drop_fields to leave them out)"
        )


def tree_flatten(tree: object, is_leaf: Callable[[object], bool] | None = None):
    """``(leaves, treedef)``: the leaves in order and the structure."""
    return pytree.flatten(tree, is_leaf)


def tree_unflatten(treedef: TreeDef, leaves: Iterable[object]) -> object:
    """Rebuild a pytree of structure ``treedef`` from ``leaves``."""
    if not isinstance(treedef, TreeDef):
        raise TypeError(f"tree_unflatten expects a PyTreeDef, got {type(treedef).__name__}")
    return pytree.unflatten(treedef, list(leaves))


def tree_leaves(tree: object, is_leaf: Callable[[object], bool] | None = None) -> list:
    """The leaves of ``tree``, in flattening order."""
    return pytree.flatten(tree, is_leaf)[0]


def tree_structure(tree: object, is_leaf: Callable[[object], bool] | None = None) -> TreeDef:
    """The structure of ``tree``."""
    return pytree.flatten(tree, is_leaf)[1]


def tree_map(
    f: Callable[..., object],
    tree: object,
    *rest: object,
    is_leaf: Callable[[object], bool] | None = None,
) -> object:
    """``f`` applied to each leaf of ``tree`` (and the matching subtrees of ``rest``, which
    must have ``tree``'s structure or have it as a prefix), in ``tree``'s structure."""
    leaves, treedef = pytree.flatten(tree, is_leaf)
    others = [
        pytree.flatten_up_to(treedef, other, f"tree_map argument {i + 1}")
        for i, other in enumerate(rest)
    ]
    return pytree.unflatten(treedef, [f(*args) for args in zip(leaves, *others)])


def __dir__() -> list[str]:
    return list(__all__)
