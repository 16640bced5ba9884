"""Pytrees: nested tuples, lists and dicts of leaves, flattened and rebuilt.

A function's arguments and results may be structures of tensors. Tracing works on
the flat list of leaves; a :class:`TreeDef` remembers the structure so results
come back in the shape the user returned them::

    >>> leaves, tree = flatten({"a": 1, "b": (2, [3])})
    >>> leaves
    [1, 2, 3]
    >>> unflatten(tree, ["x", "y", "z"])
    {'a': 'x', 'b': ('y', ['z'])}

``None`` is an empty node (no leaves), as in jax. Dict keys are kept in sorted
order when flattening, so two dicts with the same keys flatten the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator, Sequence
from dataclasses import dataclass

__all__ = ["TreeDef", "Mismatch", "flatten", "unflatten", "leaf_paths", "first_mismatch", "LEAF"]


@dataclass(frozen=True, slots=True)
class TreeDef:
    """The structure of a pytree without its leaves.

    ``kind`` is ``"leaf"``, ``"none"``, ``"tuple"``, ``"list"`` or ``"dict"``;
    ``keys`` holds the (sorted) dict keys, ``children`` one TreeDef per child.
    """

    kind: str
    children: tuple[TreeDef, ...] = ()
    keys: tuple[Hashable, ...] = ()

    @property
    def num_leaves(self) -> int:
        """How many leaves a tree of this structure holds."""
        if self.kind == "leaf":
            return 1
        return sum(child.num_leaves for child in self.children)

    def __str__(self) -> str:
        if self.kind == "leaf":
            return "*"
        if self.kind == "none":
            return "None"
        inner = [str(child) for child in self.children]
        if self.kind == "dict":
            return "{" + ", ".join(f"{k!r}: {c}" for k, c in zip(self.keys, inner)) + "}"
        if self.kind == "list":
            return "[" + ", ".join(inner) + "]"
        return "(" + ", ".join(inner) + ("," if len(inner) == 1 else "") + ")"


LEAF = TreeDef("leaf")
_NONE = TreeDef("none")


def _sorted_keys(tree: dict) -> list:
    try:
        return sorted(tree)
    except TypeError:  # keys of mixed types: fall back to a stable textual order
        return sorted(tree, key=repr)


def flatten(tree: object, is_leaf: Callable[[object], bool] | None = None):
    """Return ``(leaves, treedef)`` for a nested tuple/list/dict structure.

    Anything that is not a tuple, list, dict or ``None`` is a leaf, as is any node
    for which ``is_leaf`` returns True. Named tuples flatten like tuples and come
    back as plain tuples.
    """
    leaves: list = []
    treedef = _flatten_into(tree, leaves, is_leaf)
    return leaves, treedef


def _flatten_into(tree: object, leaves: list, is_leaf) -> TreeDef:
    if is_leaf is not None and is_leaf(tree):
        leaves.append(tree)
        return LEAF
    if tree is None:
        return _NONE
    if isinstance(tree, tuple | list):
        children = tuple(_flatten_into(child, leaves, is_leaf) for child in tree)
        return TreeDef("list" if isinstance(tree, list) else "tuple", children)
    if isinstance(tree, dict):
        keys = _sorted_keys(tree)
        children = tuple(_flatten_into(tree[key], leaves, is_leaf) for key in keys)
        return TreeDef("dict", children, tuple(keys))
    leaves.append(tree)
    return LEAF  # always this object: callers may test ``treedef is LEAF``


def unflatten(treedef: TreeDef, leaves: Sequence) -> object:
    """Rebuild the structure ``treedef`` from ``leaves`` (in flattening order)."""
    if len(leaves) != treedef.num_leaves:
        raise ValueError(
            f"unflatten: the structure {treedef} holds {treedef.num_leaves} leaves, "
            f"got {len(leaves)}"
        )
    return _build(treedef, iter(leaves))


def _build(treedef: TreeDef, leaves: Iterator) -> object:
    if treedef.kind == "leaf":
        return next(leaves)
    if treedef.kind == "none":
        return None
    children = [_build(child, leaves) for child in treedef.children]
    if treedef.kind == "tuple":
        return tuple(children)
    if treedef.kind == "list":
        return children
    return dict(zip(treedef.keys, children))


def leaf_paths(treedef: TreeDef, prefix: str = "") -> list[str]:
    """Readable paths of the leaves, e.g. ``["[0]", "['w']"]``, for error messages."""
    if treedef.kind == "leaf":
        return [prefix]
    if treedef.kind == "dict":
        labels = [f"[{key!r}]" for key in treedef.keys]
    else:
        labels = [f"[{i}]" for i in range(len(treedef.children))]
    paths: list[str] = []
    for label, child in zip(labels, treedef.children):
        paths.extend(leaf_paths(child, prefix + label))
    return paths


@dataclass(frozen=True, slots=True)
class Mismatch:
    """Where a value's structure first departs from an expected one.

    ``path`` locates the node (``"[1]['w']"``, ``""`` at the root); ``expected`` and
    ``given`` are the two nodes there; for two dicts, ``missing`` holds the expected keys
    the value lacks and ``extra`` the value's keys that are not expected.
    """

    path: str
    expected: object
    given: object
    missing: tuple[Hashable, ...] = ()
    extra: tuple[Hashable, ...] = ()


def first_mismatch(
    expected: object, value: object, is_leaf: Callable[[object], bool], path: str = ""
) -> Mismatch | None:
    """The first place, in flattening order, where ``value`` does not have the structure
    of ``expected`` (a tree whose leaves satisfy ``is_leaf``), or None when it has.

    A leaf of ``expected`` matches any leaf of ``value`` (anything but a tuple, list,
    dict or None); tuples (named tuples too) and lists match their own kind of the same
    length, dicts the same keys::

        >>> first_mismatch((1, [2]), (1, [2, 3]), lambda x: isinstance(x, int))
        Mismatch(path='[1]', expected=[2], given=[2, 3], missing=(), extra=())
    """
    if is_leaf(expected):
        is_node = value is None or isinstance(value, tuple | list | dict)
        return Mismatch(path, expected, value) if is_node else None
    if expected is None:
        return None if value is None else Mismatch(path, expected, value)
    if isinstance(expected, dict):
        if not isinstance(value, dict):
            return Mismatch(path, expected, value)
        missing = tuple(k for k in _sorted_keys(expected) if k not in value)
        extra = tuple(k for k in _sorted_keys(value) if k not in expected)
        if missing or extra:
            return Mismatch(path, expected, value, missing, extra)
        pairs = [(f"[{k!r}]", expected[k], value[k]) for k in _sorted_keys(expected)]
    else:
        kind = list if isinstance(expected, list) else tuple
        if not isinstance(value, kind) or len(value) != len(expected):  # type: ignore[arg-type]
            return Mismatch(path, expected, value)
        pairs = [(f"[{i}]", e, v) for i, (e, v) in enumerate(zip(expected, value))]  # type: ignore[arg-type]
    for label, child, given in pairs:
        found = first_mismatch(child, given, is_leaf, path + label)
        if found is not None:
            return found
    return None
