"""Jitted functions called while tracing another: graph functions of the caller's module.

Every module built here is also verified and printed/parsed back (tests/trace/conftest.py).
"""

import numpy as np
import pytest

import relaxjax as relax
import relaxjax.nn as rnn
import relaxjax.numpy as rnp
from relaxjax import arith
from relaxjax.errors import ShapeError, TraceError
from relaxjax.ir import Binding, Call, GlobalVar, MatchCast, PrimInfo, TensorInfo

T = relax.Tensor
a, b, n = arith.syms("a b n")


def _line(marker: str) -> int:
    """The line of this file holding ``marker`` (a comment at a call site)."""
    with open(__file__) as source:
        return next(
            i for i, text in enumerate(source, 1) if marker in text and "_line(" not in text
        )


def _calls(function):
    """The call bindings of graph functions in ``function``, in order."""
    return [
        binding
        for block in function.body.blocks
        for binding in block.bindings
        if isinstance(binding, Binding)
        and isinstance(binding.value, Call)
        and isinstance(binding.value.op, GlobalVar)
    ]


@relax.jit
def layer(x: T(("n", 4), "float32"), w: T((4, 4), "float32")):
    return rnp.tanh(x @ w)


@relax.jit
def three_sites(
    x: T(("a", 4), "float32"), y: T((2, 4), "float32"), z: T(("b", 4), "float32"), w: T((4, 4))
):
    return layer(x, w), layer(y, w), layer(rnp.concatenate([z, z[:1] * 0 + 1]), w)


def test_one_callee_three_call_sites_one_function():
    mod = three_sites.trace()
    assert list(mod.graph_functions()) == ["layer", "three_sites"]
    calls = _calls(mod["three_sites"])
    assert [c.value.op.name for c in calls] == ["layer"] * 3
    assert [c.var.info for c in calls] == [
        TensorInfo((a, 4)),
        TensorInfo((2, 4)),
        TensorInfo((b + arith.min_(1, b), 4)),
    ]
    assert all(c.value.checks == () for c in calls)
    assert relax.eval_shape(three_sites) == (T((a, 4)), T((2, 4)), T((b + arith.min_(1, b), 4)))
    assert layer.cache_size() == 0 and three_sites.cache_size() == 0


def test_printed_call_shows_the_deduced_shape():
    text = str(three_sites.trace())
    assert 'lv0: Tensor((a, 4), "float32") = mod.layer(x, w)' in text
    assert 'Tensor((2, 4), "float32") = mod.layer(y, w)' in text
    assert 'def layer(x: Tensor((n, 4), "float32")' in text


@relax.jit
def block(h, p):
    return rnn.gelu(h @ p["w"] + p["b"])


def _weights(count, d=8):
    return [{"w": T((d, d), "float32"), "b": T((d,), "float32")} for _ in range(count)]


def test_unannotated_layer_is_traced_once_for_every_layer_and_caller():
    def stack(x, ps):
        for p in ps:
            x = block(x, p)
        return x

    mod = relax.jit(stack).trace(T(("batch", 8), "float32"), _weights(12))
    assert len(mod.graph_functions()) == 2
    assert len(_calls(mod["stack"])) == 12
    signature = [p.info for p in mod["block"].params]
    assert signature == [
        TensorInfo((arith.sym("batch"), 8)),
        TensorInfo((8,)),
        TensorInfo((8, 8)),
    ]
    again = relax.jit(stack).trace(T(("rows", 8), "float32"), _weights(3))
    assert again["block"] is mod["block"]  # same spec up to the symbol's name: one trace
    static = relax.jit(stack).trace(T((5, 8), "float32"), _weights(1))
    assert static["block"].params[0].info == TensorInfo((5, 8))  # static dims specialise
    wider = relax.jit(stack).trace(T(("rows", 16), "float32"), _weights(1, 16))
    assert wider["block"] is not mod["block"]


def test_generalised_specs_keep_the_relations_the_caller_knows():
    @relax.jit
    def add(x, y):
        return x + y

    def traced(*specs):
        mod = relax.jit(lambda *xs: add(*xs)).trace(*specs)
        return mod["add"], _calls(mod["lambda_"])[0]

    same, call = traced(T(("a", 4)), T(("a", 4)))
    assert [p.info for p in same.params] == [TensorInfo((a, 4)), TensorInfo((a, 4))]
    assert call.var.info == TensorInfo((a, 4)) and call.value.checks == ()
    other, call = traced(T(("a", 4)), T(("b", 1)))
    assert [p.info for p in other.params] == [TensorInfo((a, 4)), TensorInfo((b, 1))]
    assert [c.relation() for c in call.value.checks] == ["broadcast(a, b)"]  # add's, hoisted

    @relax.jit
    def pad_one(x):
        return rnp.concatenate([x, rnp.zeros((1, 4), "float32")])

    mod = relax.jit(lambda x: add(x, pad_one(x))).trace(T(("a", 4)))
    assert [p.info for p in mod["add"].params] == [TensorInfo((a, 4)), TensorInfo((a + 1, 4))]
    mod = relax.jit(lambda x: add(pad_one(x), pad_one(x))).trace(T(("k", 4)))
    assert mod["add"] is same  # (k + 1, 4) twice is one fresh symbol twice: the same spec
    assert _calls(mod["lambda_"])[-1].var.info == TensorInfo((arith.sym("k") + 1, 4))
    k = arith.sym("k")
    mod = relax.jit(lambda x: add(pad_one(x), x)).trace(T(("k", 4)))
    assert [p.info for p in mod["add"].params] == [TensorInfo((k + 1, 4)), TensorInfo((k, 4))]
    mod = relax.jit(lambda x: pad_one(pad_one(x))).trace(T(("k", 4)))
    assert [c.value.op.name for c in _calls(mod["lambda_"])] == ["pad_one", "pad_one"]
    assert len(mod.graph_functions()) == 2  # (k, 4) and (k + 1, 4): one spec up to names

    @relax.jit
    def twice(x):
        return x * 2

    mod = relax.jit(lambda x: twice(pad_one(x))).trace(T(("k", 4)))
    assert mod["twice"].params[0].info == TensorInfo((arith.sym("d0"), 4))


def test_an_annotated_symbol_names_the_same_dim_in_unannotated_arguments():
    @relax.jit
    def scale(x: T(("n", 4), "float32"), s):
        return x * s[:, None]

    mod = relax.jit(lambda x, s: scale(x, s)).trace(T(("a", 4)), T(("a",)))
    assert [p.info for p in mod["scale"].params] == [TensorInfo((n, 4)), TensorInfo((n,))]


def test_relation_false_for_every_value_raises_while_tracing_at_the_call_site():
    @relax.jit
    def pair(x: T(("n", 4), "float32"), y: T(("n", 4), "float32")):
        return x - y

    def caller(x: T(("a", 4), "float32")):
        longer = rnp.concatenate([x, rnp.ones((1, 4), "float32")])  # (a + 1, 4)
        return pair(x, longer)  # the false call site

    with pytest.raises(ShapeError) as err:
        relax.jit(caller).trace()
    assert "pair: argument 'y' axis 0 is n in its signature: requires" in err.value.message
    assert "which is false for every value of the symbols" in err.value.message
    assert err.value.location.lineno == _line("# the false call site")


def test_unproven_relation_is_a_check_on_the_call():
    @relax.jit
    def pair(x: T(("n", 4), "float32"), y: T(("n", 4), "float32")):
        return x - y

    mod = relax.jit(lambda x, y: pair(x, y)).trace(T(("a", 4)), T(("b", 4)))
    (call,) = _calls(mod["lambda_"])
    assert [c.relation() for c in call.value.checks] == ["b == a"]
    assert "assert b == a, \"pair: argument 'y' axis 0 is n in its signature\"" in str(mod)


def test_callee_preconditions_move_to_the_call_site():
    @relax.jit
    def add(x: T(("n",), "float32"), y: T(("m",), "float32")):
        return x + y

    assert relax.eval_shape(add) == T(ndim=1, dtype="float32")
    mod = relax.jit(lambda x, y: add(x, y)).trace(T(("a",)), T(("b",)))
    (call,) = _calls(mod["lambda_"])
    assert [(c.relation(), c.message.split(":")[0]) for c in call.value.checks] == [
        ("broadcast(a, b)", "add")
    ]
    with pytest.raises(ShapeError, match=r"add: add: .*requires broadcast\(3, 5\)"):
        relax.jit(lambda x, y: add(x, y)).trace(T((3,)), T((5,)))


def test_dtype_rank_and_structure_errors_name_the_callee():
    bad_dtype = relax.jit(lambda x: layer(x, np.eye(4, dtype=np.float32)))
    with pytest.raises(TypeError, match=r"layer\(\): argument 'x': expected dtype float32, got"):
        bad_dtype.trace(T(("a", 4), "float64"))
    with pytest.raises(ShapeError, match=r"layer\(\): argument 'x': expected rank 2"):
        bad_dtype.trace(T(("a",), "float32"))

    @relax.jit
    def pairwise(xs: (T(("n",)), T(("n",)))):
        return xs[0] * xs[1]

    with pytest.raises(TypeError, match=r"pairwise\(\): argument 'xs' must have the structure"):
        relax.jit(lambda x: pairwise([x, x, x])).trace(T(("a",)))
    with pytest.raises(TypeError, match=r"pairwise\(\) missing a required argument: 'xs'"):
        relax.jit(lambda x: pairwise()).trace(T(("a",)))
    with pytest.raises(
        TypeError, match=r"block\(\): argument 'p'\['k'\]: expected a tensor, .* got str"
    ):
        relax.jit(lambda x: block(x, {"k": "text"})).trace(T(("a",)))


def test_a_coarse_argument_gets_its_dims_named_before_the_call():
    @relax.jit
    def double(x: T(("n",), "float32")):
        return x * 2

    mod = relax.jit(lambda x, y: double(x + y)).trace(T(("a",)), T(("b",)))
    bindings = mod["lambda_"].body.blocks[0].bindings
    assert isinstance(bindings[1], MatchCast)
    (call,) = _calls(mod["lambda_"])
    assert call.var.info == bindings[1].info  # the fresh dims the match_cast named


def test_pytree_arguments_and_outputs_keywords_statics_and_scalars():
    @relax.jit(static_argnames=("axis",))
    def stats(data, axis, *, scale=1.0):
        total = data["x"].sum(axis=axis) * scale
        return {"total": total, "pair": (total + data["y"], data["y"])}

    def caller(x: T(("a", 3), "float32"), y: T((3,), "float32")):
        first = stats({"x": x, "y": y}, 0, scale=2.0)
        second = stats({"x": x, "y": y}, 0, scale=3.0)  # Python floats: one trace
        third = stats({"x": x * 1, "y": y}, axis=0)  # the default scale: another trace
        return first, second["pair"][0], third["total"]

    mod = relax.jit(caller).trace()
    assert sorted(mod.graph_functions()) == ["caller", "stats", "stats_1"]
    out = relax.eval_shape(caller)
    assert out[0] == {"total": T((3,)), "pair": (T((3,)), T((3,)))}
    assert out[1] == T((3,)) and out[2] == T((3,))
    scale = mod["stats"].params[-1]
    assert scale.info == PrimInfo("float64", weak=True)
    with pytest.raises(TypeError, match="static argument 'axis' got a traced value"):
        relax.jit(lambda x: stats({"x": x, "y": x}, x)).trace(T((3,)))


def test_symbolic_dims_and_annotated_scalars_pass_as_scalars():
    @relax.jit
    def fill(x, count):
        return x * count

    mod = relax.jit(lambda x: fill(x, x.shape[0])).trace(T(("a",), "float32"))
    count = mod["fill"].params[1]
    assert count.info == PrimInfo("int64", value=arith.sym("a"), weak=True)

    @relax.jit
    def typed(x: T(("n",), "float32"), k: relax.ir.PrimInfo("int32")):
        return x * k

    mod = relax.jit(lambda x: typed(x, 3)).trace(T(("a",), "float32"))
    (call,) = _calls(mod["lambda_"])
    assert call.value.args[1].info == PrimInfo("int32", value=3)
    with pytest.raises(TypeError, match=r"typed\(\): argument 'k': expected .* got Python float"):
        relax.jit(lambda x: typed(x, 2.5)).trace(T(("a",), "float32"))


def test_nested_calls_share_the_inner_function():
    @relax.jit
    def inner(x):
        return x + 1

    @relax.jit
    def middle(x):
        return inner(x) * inner(x * 2)

    mod = relax.jit(lambda x: middle(x) - inner(x)).trace(T(("a", 2)))
    assert sorted(mod.graph_functions()) == ["inner", "lambda_", "middle"]
    assert [c.value.op.name for c in _calls(mod["middle"])] == ["inner", "inner"]
    assert [c.value.op.name for c in _calls(mod["lambda_"])] == ["middle", "inner"]


def test_recursion_with_the_same_specs_is_refused_naming_the_chain():
    @relax.jit
    def forever(x):
        return forever(x[1:])  # the recursive call

    with pytest.raises(TraceError, match=r"forever\(\) calls itself \(forever\(\) -> forever\(\)"):
        forever.trace(T(("a",)))

    @relax.jit(static_argnames=("depth",))
    def halve(x, depth):
        return x if depth == 0 else halve(x * 0.5, depth - 1)

    mod = halve.trace(T(("a",)), 3)
    assert len(mod.graph_functions()) == 4  # one per depth: recursion ends at trace time


def test_a_caller_value_closed_over_by_the_callee_is_refused():
    def caller(x: T(("a",), "float32")):
        @relax.jit
        def uses_x(y):
            return y + x

        return uses_x(x)

    with pytest.raises(TraceError, match=r"was used inside uses_x\(\), which is compiled as a"):
        relax.jit(caller).trace()


def test_inline_traces_the_body_into_the_caller():
    inline = relax.jit(layer.fn, inline=True)
    mod = relax.jit(lambda x, w: inline(x, w) + 1).trace(T(("a", 4)), T((4, 4)))
    assert list(mod.graph_functions()) == ["lambda_"]
    called = relax.jit(lambda x, w: layer(x, w) + 1).trace(T(("a", 4)), T((4, 4)))
    assert list(called.graph_functions()) == ["layer", "lambda_"]
