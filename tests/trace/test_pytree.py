"""Pytrees: flatten/unflatten laws, dict key order, paths and errors."""

import collections

import pytest
from hypothesis import given
from hypothesis import strategies as st

from relaxjax.trace import pytree

leaves = st.integers(-5, 5) | st.floats(allow_nan=False) | st.text(max_size=3)
trees = st.recursive(
    leaves | st.none(),
    lambda children: (
        st.lists(children, max_size=3)
        | st.lists(children, max_size=3).map(tuple)
        | st.dictionaries(st.text(max_size=2), children, max_size=3)
    ),
    max_leaves=12,
)


@given(trees)
def test_unflatten_inverts_flatten(tree):
    flat, treedef = pytree.flatten(tree)
    assert pytree.unflatten(treedef, flat) == tree
    assert treedef.num_leaves == len(flat)
    assert len(pytree.leaf_paths(treedef)) == len(flat)


@given(trees)
def test_flatten_is_deterministic_in_structure(tree):
    assert pytree.flatten(tree)[1] == pytree.flatten(tree)[1]


def test_dict_leaves_follow_sorted_keys():
    flat, treedef = pytree.flatten({"b": 2, "a": (1, [3])})
    assert flat == [1, 3, 2]
    assert pytree.leaf_paths(treedef) == ["['a'][0]", "['a'][1][0]", "['b']"]
    assert str(treedef) == "{'a': (*, [*]), 'b': *}"


def test_none_is_an_empty_node_and_namedtuples_keep_their_class():
    point = collections.namedtuple("Point", "x y")
    flat, treedef = pytree.flatten((None, point(1, 2)))
    assert flat == [1, 2]
    rebuilt = pytree.unflatten(treedef, ["a", "b"])
    assert rebuilt == (None, point("a", "b")) and type(rebuilt[1]) is point
    assert str(treedef) == "(None, Point(x=*, y=*))"
    assert pytree.leaf_paths(treedef) == ["[1].x", "[1].y"]


def test_ordered_and_default_dicts_keep_their_type_and_order():
    ordered = collections.OrderedDict([("b", 1), ("a", 2)])
    flat, treedef = pytree.flatten(ordered)
    assert flat == [1, 2]  # insertion order, as jax
    rebuilt = pytree.unflatten(treedef, [3, 4])
    assert type(rebuilt) is collections.OrderedDict and list(rebuilt.items()) == [
        ("b", 3),
        ("a", 4),
    ]
    default = collections.defaultdict(list, {"b": 1, "a": 2})
    flat, treedef = pytree.flatten(default)
    assert flat == [2, 1]
    rebuilt = pytree.unflatten(treedef, [5, 6])
    assert type(rebuilt) is collections.defaultdict and rebuilt.default_factory is list
    assert dict(rebuilt) == {"a": 5, "b": 6}
    assert pytree.leaf_paths(treedef) == ["['a']", "['b']"]


def test_other_container_subclasses_flatten_as_their_base():
    class Row(list):
        pass

    flat, treedef = pytree.flatten(Row([1, 2]))
    assert flat == [1, 2] and treedef == pytree.flatten([1, 2])[1]


def test_same_structure_ignores_auxiliary_data_only():
    a = pytree.TreeDef("custom", (pytree.LEAF,), ("w",), dict, ("relu",))
    b = pytree.TreeDef("custom", (pytree.LEAF,), ("w",), dict, ("tanh",))
    assert a != b and pytree.same_structure(a, b)
    assert not pytree.same_structure(a, pytree.TreeDef("custom", (), ("w",), dict, ("relu",)))
    assert not pytree.same_structure(pytree.flatten((1,))[1], pytree.flatten([1])[1])


def test_unhashable_auxiliary_data_is_named_when_hashed():
    treedef = pytree.TreeDef("custom", (), (), dict, ["not", "hashable"])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"pytree node dict has auxiliary \(static\) data "):
        hash(treedef)


def test_registering_a_builtin_or_twice_is_refused():
    node = pytree.NodeType(lambda x: ((), None), lambda aux, children: None)
    with pytest.raises(ValueError, match="tuple is already registered as a pytree node"):
        pytree.register_node(tuple, node)
    with pytest.raises(TypeError, match="a pytree node type must be a class, got 3"):
        pytree.register_node(3, node)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="NodeType.style must be one of"):
        pytree.NodeType(lambda x: ((), None), lambda aux, children: None, style="dot")


def test_flatten_up_to_takes_subtrees_at_the_prefix_leaves():
    _, treedef = pytree.flatten([1, (2, 3)])
    assert pytree.flatten_up_to(treedef, [[9], ({"a": 1}, None)]) == [[9], {"a": 1}, None]
    with pytest.raises(
        ValueError, match=r"tree\[1\]: expected a node of structure \(\*, \*\), got 5"
    ):
        pytree.flatten_up_to(treedef, [1, 5])


def test_is_leaf_stops_descent():
    flat, treedef = pytree.flatten([(1, 2), 3], is_leaf=lambda x: isinstance(x, tuple))
    assert flat == [(1, 2), 3]
    assert treedef == pytree.TreeDef("list", (pytree.LEAF, pytree.LEAF))


def test_unflatten_with_wrong_leaf_count_names_both_counts():
    _, treedef = pytree.flatten((1, 2))
    with pytest.raises(ValueError, match=r"structure \(\*, \*\) holds 2 leaves, got 3"):
        pytree.unflatten(treedef, [1, 2, 3])


def _is_int(x):
    return isinstance(x, int)


@given(trees)
def test_a_tree_matches_its_own_structure(tree):
    flat, treedef = pytree.flatten(tree)
    marked = pytree.unflatten(treedef, list(range(len(flat))))
    assert pytree.first_mismatch(marked, tree, _is_int) is None


@pytest.mark.parametrize(
    "expected, value, mismatch",
    [
        (1, None, pytree.Mismatch("", 1, None)),
        (1, [1, 2], pytree.Mismatch("", 1, [1, 2])),
        ((1, [2]), (1, [2, 3]), pytree.Mismatch("[1]", [2], [2, 3])),
        ((1, 2), [1, 2], pytree.Mismatch("", (1, 2), [1, 2])),
        ([1], (1,), pytree.Mismatch("", [1], (1,))),
        (None, 1, pytree.Mismatch("", None, 1)),
        ({"a": 1, "b": 2}, {"a": 1}, pytree.Mismatch("", {"a": 1, "b": 2}, {"a": 1}, ("b",))),
        ({"a": 1}, {"a": 1, "c": 3}, pytree.Mismatch("", {"a": 1}, {"a": 1, "c": 3}, (), ("c",))),
        ({"a": (1, 2)}, {"a": (1, None)}, pytree.Mismatch("['a'][1]", 2, None)),
        ({"a": 1}, 5, pytree.Mismatch("", {"a": 1}, 5)),
    ],
)
def test_first_mismatch_locates_the_first_difference(expected, value, mismatch):
    assert pytree.first_mismatch(expected, value, _is_int) == mismatch


def test_first_mismatch_accepts_named_tuples_as_tuples():
    point = collections.namedtuple("Point", "x y")
    assert pytree.first_mismatch((1, 2), point(3, 4), _is_int) is None
