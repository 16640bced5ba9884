"""relaxjax.tree_util (jax's names and signatures) and pytrees through jit: named tuples,
registered dataclasses and nodes, classes registered with jax, None leaves."""

import collections
import dataclasses
from typing import NamedTuple

import jax
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import relaxjax as relax
import relaxjax.tree_util as tree_util


class Pair(NamedTuple):
    a: object
    b: object


@dataclasses.dataclass(frozen=True)
class Linear:
    w: object
    b: object
    act: str = dataclasses.field(default="relu", metadata={"static": True})


tree_util.register_dataclass(Linear)


class Box:
    """A node registered with explicit functions; ``scale`` is static."""

    def __init__(self, value, scale):
        self.value, self.scale = value, scale


tree_util.register_pytree_node(
    Box, lambda box: ((box.value,), box.scale), lambda s, c: Box(c[0], s)
)


@tree_util.register_pytree_node_class
class Stack:
    def __init__(self, items):
        self.items = list(items)

    def tree_flatten(self):
        return tuple(self.items), None

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(children)


@dataclasses.dataclass
class JaxState:
    """Registered with jax.tree_util only."""

    x: object
    y: object


jax.tree_util.register_dataclass(JaxState, data_fields=["x", "y"], meta_fields=[])


def f32(*shape):
    return np.arange(np.prod(shape), dtype=np.float32).reshape(shape)


# --------------------------------------------------------------------------- tree_util itself

leaves = st.integers(-5, 5)
trees = st.recursive(
    leaves | st.none(),
    lambda children: (
        st.lists(children, max_size=3)
        | st.lists(children, max_size=3).map(tuple)
        | st.tuples(children, children).map(lambda t: Pair(*t))
        | st.dictionaries(st.sampled_from("abc"), children, max_size=3)
        | st.dictionaries(st.sampled_from("abc"), children, max_size=3).map(collections.OrderedDict)
    ),
    max_leaves=10,
)


@given(trees)
def test_leaves_and_rebuilt_trees_match_jax(tree):
    flat, treedef = tree_util.tree_flatten(tree)
    assert flat == jax.tree_util.tree_leaves(tree)
    assert tree_util.tree_leaves(tree) == flat
    rebuilt = tree_util.tree_unflatten(treedef, [v * 10 for v in flat])
    expected = jax.tree_util.tree_map(lambda v: v * 10, tree)
    assert rebuilt == expected and type(rebuilt) is type(expected)
    assert tree_util.tree_map(lambda v: v * 10, tree) == expected


def test_register_dataclass_infers_data_and_static_fields():
    flat, treedef = tree_util.tree_flatten(Linear(1, 2, "tanh"))
    assert flat == [1, 2] and str(treedef) == "Linear(w=*, b=*)"
    assert tree_util.tree_unflatten(treedef, [3, 4]) == Linear(3, 4, "tanh")
    assert tree_util.tree_structure(Linear(1, 2)) != treedef  # the static field differs


def test_register_dataclass_with_explicit_fields_and_drop_fields():
    @dataclasses.dataclass
    class Cache:
        k: object
        v: object
        note: str = dataclasses.field(default="", init=False)

    tree_util.register_dataclass(
        Cache, data_fields=["k", "v"], meta_fields=[], drop_fields=["note"]
    )
    assert tree_util.tree_leaves(Cache(1, 2)) == [1, 2]


def test_register_dataclass_errors():
    @dataclasses.dataclass
    class Odd:
        x: object
        y: object

    with pytest.raises(TypeError, match="data_fields and meta_fields must both be given"):
        tree_util.register_dataclass(Odd, data_fields=["x"])
    with pytest.raises(TypeError, match="required when the class is not a dataclass"):
        tree_util.register_dataclass(Box)
    with pytest.raises(ValueError, match=r"must not overlap, both hold \['x'\]"):
        tree_util.register_dataclass(Odd, data_fields=["x", "y"], meta_fields=["x"])
    with pytest.raises(ValueError, match=r"missing \['y'\], unexpected \['z'\]"):
        tree_util.register_dataclass(Odd, data_fields=["x", "z"], meta_fields=[])
    with pytest.raises(ValueError, match="Linear is already registered as a pytree node"):
        tree_util.register_dataclass(Linear)


def test_custom_nodes_and_node_classes():
    flat, treedef = tree_util.tree_flatten([Box(1, 2.0), Stack([3, None, 4])])
    assert flat == [1, 3, 4]
    box, stack = tree_util.tree_unflatten(treedef, [5, 6, 7])
    assert (box.value, box.scale, stack.items) == (5, 2.0, [6, None, 7])
    assert str(treedef) == "[Box[2.0](*), Stack[None](*, None, *)]"


def test_tree_map_over_several_trees_and_prefixes():
    out = tree_util.tree_map(lambda x, y: x + y, {"a": 1, "b": (2, 3)}, {"a": 10, "b": (20, 30)})
    assert out == {"a": 11, "b": (22, 33)}
    assert tree_util.tree_map(lambda x, y: (x, y), [1, 2], [(7, 8), None]) == [
        (1, (7, 8)),
        (2, None),
    ]
    with pytest.raises(ValueError, match=r"tree_map argument 1\['b'\]: expected a node"):
        tree_util.tree_map(lambda x, y: x, {"a": 1, "b": (2, 3)}, {"a": 1, "b": 2})
    assert tree_util.tree_map(lambda x: x, [(1, 2)], is_leaf=lambda n: isinstance(n, tuple)) == [
        (1, 2)
    ]
    with pytest.raises(TypeError, match="tree_unflatten expects a PyTreeDef, got tuple"):
        tree_util.tree_unflatten((), [])


def test_classes_registered_with_jax_are_nodes():
    flat, treedef = tree_util.tree_flatten(JaxState(1, (2, None)))
    assert flat == [1, 2]
    assert tree_util.tree_unflatten(treedef, [3, 4]) == JaxState(3, (4, None))


def test_public_names_are_the_module_all():
    public = {n for n in dir(tree_util) if not n.startswith("_")}
    assert set(tree_util.__all__) <= public
    assert tree_util.PyTreeDef is relax.trace.pytree.TreeDef


# --------------------------------------------------------------------------- through jit


def test_named_tuples_and_none_keep_their_types_as_arguments_and_results():
    @relax.jit
    def f(p, x, nothing):
        assert nothing is None
        return Pair(x @ p.a + p.b, None), {"n": nothing}

    w, b, x = f32(3, 2), f32(2), f32(4, 3)
    out, extra = f(Pair(w, b), x, None)
    assert type(out) is Pair and out.b is None and extra == {"n": None}
    np.testing.assert_allclose(out.a, x @ w + b)
    shapes = relax.eval_shape(f, Pair(w, b), x, None)
    assert type(shapes[0]) is Pair and str(shapes[0].a) == 'Tensor((4, 2), "float32")'


def test_annotated_dataclass_of_specs_binds_symbols_and_keeps_static_fields():
    @relax.jit
    def layer(lin: Linear(relax.Tensor(("k", "m"), "float32"), relax.Tensor(("m",), "float32")), x):
        y = x @ lin.w + lin.b
        return Linear(y, y * 2, lin.act)

    w, b, x = f32(3, 2), f32(2), f32(4, 3)
    out = layer(Linear(w, b, "tanh"), x)
    assert out.act == "tanh" and type(out) is Linear
    np.testing.assert_allclose(out.b, (x @ w + b) * 2)
    layer(Linear(f32(3, 5), f32(5), "tanh"), x)  # another m: same executable
    assert layer.cache_size() == 1
    layer(Linear(w, b, "relu"), x)  # another static field: another executable, as in jax
    assert layer.cache_size() == 2
    shapes = relax.eval_shape(layer, x=relax.Tensor(("n", "k"), "float32"))
    assert str(shapes) == (
        'Linear(w=Tensor((n, m), "float32"), b=Tensor((n, m), "float32"), act=\'relu\')'
    )
    with pytest.raises(
        TypeError, match=r"argument 'lin' must have the structure Linear\(w=\*, b=\*\) "
    ):
        layer((w, b), x)


def test_leaf_parameter_names_follow_attribute_paths():
    mod = relax.jit(lambda lin: lin.w + lin.b).trace(Linear(f32(2), f32(2)))
    assert 'lin_w: Tensor((2,), "float32"), lin_b: Tensor((2,), "float32")' in str(mod)


def test_unhashable_static_fields_are_named():
    @relax.jit
    def f(box):
        return box.value * 2

    with pytest.raises(TypeError, match=r"pytree node Box has auxiliary \(static\) data \[1\]"):
        f(Box(f32(2), [1]))
    np.testing.assert_allclose(f(Box(f32(2), 3)), f32(2) * 2)


def test_registered_nodes_through_calls_between_jitted_functions():
    @relax.jit
    def inner(s):
        return Stack([s.items[0] + s.items[1], None])

    @relax.jit
    def outer(x, y):
        return inner(Stack([x, y])).items[0] * 3, inner(Stack([y, x]))

    x, y = f32(3), f32(3) + 1
    first, second = outer(x, y)
    np.testing.assert_allclose(first, (x + y) * 3)
    assert type(second) is Stack and second.items[1] is None
    assert len(outer.trace(x, y).graph_functions()) == 2  # inner is one function


def test_classes_registered_with_jax_go_through_jit():
    @relax.jit
    def f(state):
        return JaxState(state.y * 2, state.x)

    out = f(JaxState(f32(2), f32(3)))
    assert type(out) is JaxState
    np.testing.assert_allclose(out.x, f32(3) * 2)
    assert str(relax.eval_shape(f, JaxState(f32(2), f32(3))).y) == 'Tensor((2,), "float32")'


def test_none_in_an_annotation_is_an_empty_node():
    @relax.jit
    def f(t: (relax.Tensor(("n",), "float32"), None), s=None):
        return t[0] * 2, None, s

    out = f((f32(3), None))
    assert out[1] is None and out[2] is None
    with pytest.raises(TypeError) as info:
        f((f32(3), f32(3)))
    assert str(info.value) == (
        "f(): argument 't'[1]: expected None (as annotated), "
        "got ndarray of shape (3,) and dtype float32"
    )


@pytest.mark.parametrize("module", [tree_util, relax.trace.pytree], ids=lambda m: m.__name__)
def test_docstring_examples(module):
    import doctest

    failures, tried = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert tried > 0 and failures == 0


def test_loop_carries_keep_their_types():
    import relaxjax.lax as lax

    @relax.jit
    def f(x, y):
        out = lax.fori_loop(0, 3, lambda i, c: Pair(c.a + 1.0, c.b * 2.0), Pair(x, y))
        carry, _ = lax.scan(lambda c, t: (Linear(c.w + t, c.b, c.act), t), Linear(x, y, "x"), x)
        return out, carry

    out, carry = f(f32(2), f32(2) + 1)
    assert type(out) is Pair and type(carry) is Linear and carry.act == "x"
    np.testing.assert_allclose(out.a, f32(2) + 3)
    np.testing.assert_allclose(carry.w, f32(2) + f32(2).sum())
