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


def test_none_is_an_empty_node_and_namedtuples_flatten_as_tuples():
    point = collections.namedtuple("Point", "x y")
    flat, treedef = pytree.flatten((None, point(1, 2)))
    assert flat == [1, 2]
    assert pytree.unflatten(treedef, ["a", "b"]) == (None, ("a", "b"))


def test_is_leaf_stops_descent():
    flat, treedef = pytree.flatten([(1, 2), 3], is_leaf=lambda x: isinstance(x, tuple))
    assert flat == [(1, 2), 3]
    assert treedef == pytree.TreeDef("list", (pytree.LEAF, pytree.LEAF))


def test_unflatten_with_wrong_leaf_count_names_both_counts():
    _, treedef = pytree.flatten((1, 2))
    with pytest.raises(ValueError, match=r"structure \(\*, \*\) holds 2 leaves, got 3"):
        pytree.unflatten(treedef, [1, 2, 3])
