"""Pytrees: nested containers of leaves, flattened and rebuilt with their types.

A function's arguments and results may be structures of tensors. Tracing works on
the flat list of leaves; a :class:`TreeDef` remembers the structure so results
come back in the shape, and with the types, the user returned them::

    >>> leaves, tree = flatten({"a": 1, "b": (2, [3])})
    >>> leaves
    [1, 2, 3]
    >>> unflatten(tree, ["x", "y", "z"])
    {'a': 'x', 'b': ('y', ['z'])}

The nodes are jax's: tuples, lists, dicts (keys in sorted order, so two dicts
with the same keys flatten the same way), ``None`` (an empty node: no leaves),
named tuples (rebuilt as their own class), ``collections.OrderedDict`` (insertion
order) and ``defaultdict``, and classes registered with :func:`register_node`
(``relaxjax.tree_util.register_pytree_node`` / ``register_dataclass``). Classes
registered with ``jax.tree_util`` are nodes too when jax is already imported (this
module never imports it). Other subclasses of tuple, list and dict flatten as their
base container. Everything else is a leaf.
"""

from __future__ import annotations

import collections
import sys
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from dataclasses import dataclass

__all__ = [
    "LEAF",
    "Mismatch",
    "NodeType",
    "TreeDef",
    "flatten",
    "first_mismatch",
    "flatten_up_to",
    "is_node",
    "leaf_paths",
    "register_node",
    "same_structure",
    "unflatten",
]

#: What path labels a node's children get: ``[i]``, ``['key']`` or ``.name``.
LABEL_STYLES = ("index", "key", "attribute")


@dataclass(frozen=True, slots=True)
class NodeType:
    """How a registered class flattens.

    ``flatten(node) -> (children, aux)`` and ``unflatten(aux, children) -> node`` as
    in ``jax.tree_util.register_pytree_node``; ``keys(aux, count)`` names the
    children for error messages and parameter names, in ``style`` (see
    ``LABEL_STYLES``); None numbers them.
    """

    flatten: Callable[[object], tuple[Iterable[object], Hashable]]
    unflatten: Callable[[Hashable, Iterable[object]], object]
    keys: Callable[[Hashable, int], tuple[Hashable, ...]] | None = None
    style: str = "index"

    def __post_init__(self) -> None:
        if self.style not in LABEL_STYLES:
            raise ValueError(f"NodeType.style must be one of {LABEL_STYLES}, got {self.style!r}")


_REGISTRY: dict[type, NodeType] = {}


def register_node(cls: type, node: NodeType) -> None:
    """Make instances of exactly ``cls`` pytree nodes (subclasses are not included, as
    in jax). Registering a class twice, or a built-in node type, is a ``ValueError``."""
    if not isinstance(cls, type):
        raise TypeError(f"a pytree node type must be a class, got {cls!r}")
    if cls in _REGISTRY or cls in _BUILTIN_NODES:
        raise ValueError(f"{_type_name(cls)} is already registered as a pytree node")
    _REGISTRY[cls] = node


@dataclass(frozen=True, slots=True)
class TreeDef:
    """The structure of a pytree without its leaves.

    ``kind`` is ``"leaf"``, ``"none"``, ``"tuple"``, ``"list"``, ``"dict"``,
    ``"namedtuple"``, ``"custom"`` (a registered class) or ``"jax"`` (a class
    registered with ``jax.tree_util``); ``children`` holds one TreeDef per child;
    ``keys`` the dict keys (sorted) or the children's names; ``node_type`` the class
    of a named tuple or registered node; ``aux`` a registered node's auxiliary data
    (static, part of the structure: it must be hashable to key jit's cache).
    """

    kind: str
    children: tuple[TreeDef, ...] = ()
    keys: tuple[Hashable, ...] = ()
    node_type: type | None = None
    aux: Hashable = None

    def __hash__(self) -> int:
        try:
            return hash((self.kind, self.children, self.keys, self.node_type, self.aux))
        except TypeError:
            raise TypeError(
                f"the pytree node {_type_name(self.node_type)} has auxiliary (static) data "
                f"{_short(self.aux)} that is not hashable: compiled programs are keyed by the "
                "structure of their arguments, so static fields must be hashable"
            ) from None

    @property
    def num_leaves(self) -> int:
        """How many leaves a tree of this structure holds."""
        if self.kind == "leaf":
            return 1
        return sum(child.num_leaves for child in self.children)

    def labels(self) -> list[str]:
        """The path label of each child: ``[0]``, ``['w']`` or ``.w``."""
        if self.kind in ("tuple", "list") or not self.keys:
            return [f"[{i}]" for i in range(len(self.children))]
        if self.kind == "namedtuple" or _style(self) == "attribute":
            return [f".{key}" for key in self.keys]
        return [f"[{key!r}]" for key in self.keys]

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
        if self.kind == "tuple":
            return "(" + ", ".join(inner) + ("," if len(inner) == 1 else "") + ")"
        name = _type_name(self.node_type)
        if self.kind == "namedtuple" or (self.keys and _style(self) == "attribute"):
            return f"{name}(" + ", ".join(f"{k}={c}" for k, c in zip(self.keys, inner)) + ")"
        if self.keys:
            return f"{name}(" + ", ".join(f"{k!r}: {c}" for k, c in zip(self.keys, inner)) + ")"
        return f"{name}[{_short(self.aux)}](" + ", ".join(inner) + ")"


LEAF = TreeDef("leaf")
_NONE = TreeDef("none")


def _style(treedef: TreeDef) -> str:
    node = _REGISTRY.get(treedef.node_type) if treedef.kind == "custom" else None  # type: ignore[arg-type]
    return node.style if node is not None else "index"


def _type_name(cls: type | None) -> str:
    return "None" if cls is None else getattr(cls, "__qualname__", repr(cls))


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _sorted_keys(tree: dict) -> list:
    try:
        return sorted(tree)
    except TypeError:  # keys of mixed types: fall back to a stable textual order
        return sorted(tree, key=repr)


def _is_namedtuple(tree: object) -> bool:
    return isinstance(tree, tuple) and isinstance(getattr(type(tree), "_fields", None), tuple)


# --------------------------------------------------------------------------- built-in nodes


def _ordered_dict_node() -> NodeType:
    def flatten_(tree: collections.OrderedDict) -> tuple[list, tuple]:
        return list(tree.values()), tuple(tree)

    def unflatten_(keys: tuple, children: Iterable) -> collections.OrderedDict:
        return collections.OrderedDict(zip(keys, children))

    return NodeType(flatten_, unflatten_, keys=lambda keys, _: keys, style="key")


def _defaultdict_node() -> NodeType:
    def flatten_(tree: collections.defaultdict) -> tuple[list, tuple]:
        keys = tuple(_sorted_keys(tree))
        return [tree[k] for k in keys], (tree.default_factory, keys)

    def unflatten_(aux: tuple, children: Iterable) -> collections.defaultdict:
        factory, keys = aux
        return collections.defaultdict(factory, zip(keys, children))

    return NodeType(flatten_, unflatten_, keys=lambda aux, _: aux[1], style="key")


_BUILTIN_NODES = (tuple, list, dict, type(None))
_REGISTRY[collections.OrderedDict] = _ordered_dict_node()
_REGISTRY[collections.defaultdict] = _defaultdict_node()


# --------------------------------------------------------------------------- flattening


def is_node(tree: object) -> bool:
    """Whether ``tree`` is a pytree node (a container) rather than a leaf."""
    return (
        tree is None
        or isinstance(tree, tuple | list | dict)
        or type(tree) in _REGISTRY
        or _jax_node(tree) is not None
    )


def flatten(tree: object, is_leaf: Callable[[object], bool] | None = None):
    """Return ``(leaves, treedef)`` for a pytree (see the module doc for the nodes).

    Anything that is not a node is a leaf, as is any node for which ``is_leaf``
    returns True.
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
    node = _REGISTRY.get(type(tree))
    if node is not None:
        children, aux = node.flatten(tree)
        children = tuple(_flatten_into(c, leaves, is_leaf) for c in children)
        keys = () if node.keys is None else tuple(node.keys(aux, len(children)))
        return TreeDef("custom", children, keys, type(tree), aux)
    if isinstance(tree, tuple | list):
        children = tuple(_flatten_into(child, leaves, is_leaf) for child in tree)
        if _is_namedtuple(tree):
            return TreeDef("namedtuple", children, type(tree)._fields, type(tree))
        return TreeDef("list" if isinstance(tree, list) else "tuple", children)
    if isinstance(tree, dict):
        keys = _sorted_keys(tree)
        children = tuple(_flatten_into(tree[key], leaves, is_leaf) for key in keys)
        return TreeDef("dict", children, tuple(keys))
    found = _jax_node(tree)
    if found is not None:
        jax_children, jax_treedef = found
        children = tuple(_flatten_into(c, leaves, is_leaf) for c in jax_children)
        return TreeDef("jax", children, (), type(tree), jax_treedef)
    leaves.append(tree)
    return LEAF  # always this object: callers may test ``treedef is LEAF``


def _jax_node(tree: object) -> tuple[list, Hashable] | None:
    """``(children, one-level jax treedef)`` when ``tree`` is a node of a class registered
    with ``jax.tree_util`` (only looked up when jax is already imported), else None."""
    jax = sys.modules.get("jax")
    if jax is None or _never_jax_node(tree):
        return None
    tree_util = getattr(jax, "tree_util", None)
    if tree_util is None:  # jax is being imported right now
        return None
    children, treedef = tree_util.tree_flatten(tree, is_leaf=lambda node: node is not tree)
    if tree_util.treedef_is_leaf(treedef):
        return None
    return children, treedef


def _never_jax_node(tree: object) -> bool:
    """Leaves jax would not flatten either, recognised without asking jax (arrays,
    scalars, strings, specs, tracers: anything with a dtype or an array protocol)."""
    cls = type(tree)
    return (
        cls in (bool, int, float, complex, str, bytes)
        or hasattr(cls, "__array__")
        or hasattr(cls, "__dlpack__")
        or hasattr(tree, "dtype")
        or isinstance(tree, type)
    )


def flatten_up_to(treedef: TreeDef, tree: object, what: str = "tree") -> list:
    """The subtrees of ``tree`` at the leaves of ``treedef`` (a prefix of its structure),
    in flattening order; ``ValueError`` naming the path where the structures differ."""
    subtrees: list = []
    _up_to(treedef, tree, subtrees, "", what)
    return subtrees


def _up_to(treedef: TreeDef, tree: object, out: list, path: str, what: str) -> None:
    if treedef.kind == "leaf":
        out.append(tree)
        return
    children, node = flatten(tree, is_leaf=lambda sub: sub is not tree)
    if (
        node.kind != treedef.kind
        or node.node_type is not treedef.node_type
        or (
            node.keys,
            node.aux,
            len(node.children),
        )
        != (treedef.keys, treedef.aux, len(treedef.children))
    ):
        raise ValueError(
            f"{what}{path or ''}: expected a node of structure {treedef}, got {_short(tree)}"
        )
    for label, child_def, child in zip(treedef.labels(), treedef.children, children):
        _up_to(child_def, child, out, path + label, what)


def same_structure(a: TreeDef, b: TreeDef) -> bool:
    """Whether ``a`` and ``b`` are the same structure up to auxiliary (static) data: the
    same node types, keys and children. (An annotation's spec tree and the argument it
    annotates may differ in their static fields.)"""
    if (a.kind, a.node_type, a.keys, len(a.children)) != (
        b.kind,
        b.node_type,
        b.keys,
        len(b.children),
    ):
        return False
    return all(same_structure(x, y) for x, y in zip(a.children, b.children))


# --------------------------------------------------------------------------- rebuilding


def unflatten(treedef: TreeDef, leaves: Sequence) -> object:
    """Rebuild the structure ``treedef`` from ``leaves`` (in flattening order)."""
    if len(leaves) != treedef.num_leaves:
        raise ValueError(
            f"unflatten: the structure {treedef} holds {treedef.num_leaves} leaves, "
            f"got {len(leaves)}"
        )
    return _build(treedef, iter(leaves))


def _build(treedef: TreeDef, leaves: Iterator) -> object:
    kind = treedef.kind
    if kind == "leaf":
        return next(leaves)
    if kind == "none":
        return None
    children = [_build(child, leaves) for child in treedef.children]
    if kind == "tuple":
        return tuple(children)
    if kind == "list":
        return children
    if kind == "dict":
        return dict(zip(treedef.keys, children))
    if kind == "namedtuple":
        return treedef.node_type(*children)  # type: ignore[misc]
    if kind == "jax":
        return treedef.aux.unflatten(children)  # type: ignore[union-attr]
    return _REGISTRY[treedef.node_type].unflatten(treedef.aux, children)  # type: ignore[index]


def leaf_paths(treedef: TreeDef, prefix: str = "") -> list[str]:
    """Readable paths of the leaves, e.g. ``["[0]", "['w']", ".bias"]``, for messages."""
    if treedef.kind == "leaf":
        return [prefix]
    paths: list[str] = []
    for label, child in zip(treedef.labels(), treedef.children):
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
    length, dicts the same keys; registered nodes are not looked into (None)::

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
    elif isinstance(expected, tuple | list):
        kind = list if isinstance(expected, list) else tuple
        if not isinstance(value, kind) or len(value) != len(expected):  # type: ignore[arg-type]
            return Mismatch(path, expected, value)
        pairs = [(f"[{i}]", e, v) for i, (e, v) in enumerate(zip(expected, value))]  # type: ignore[arg-type]
    else:  # a registered node: the caller reports the difference of the tree definitions
        return None
    for label, child, given in pairs:
        found = first_mismatch(child, given, is_leaf, path + label)
        if found is not None:
            return found
    return None
