"""Calls between graph functions: matching the callee's signature against the arguments."""

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st
from ir_fakes import OPS, add, relu

from relaxjax import arith
from relaxjax.errors import ShapeError, SourceLocation, VerifyError
from relaxjax.ir import (
    Binding,
    BindingBlock,
    BlockBuilder,
    Call,
    Check,
    Function,
    GlobalVar,
    IRModule,
    PrimInfo,
    SeqExpr,
    TensorInfo,
    TupleInfo,
    Var,
    free_symbols,
    parse_module,
    verify,
)
from relaxjax.ir.calls import match_call, preconditions, signature_symbols

n, m, a, b = arith.syms("n m a b")
HERE = SourceLocation("model.py", 12, "y = layer(x, w)")


def _callee(*params, body_op=relu, name="layer"):
    """``name(params...) = body_op(params...)`` in a fresh builder; returns the builder."""
    bb = BlockBuilder()
    with bb.function(name, list(params)):
        bb.emit_func_output(bb.emit(Call(body_op, list(params))))
    return bb


def _var(name, *shape, dtype="float32"):
    return Var(name, TensorInfo(shape, dtype))


def _call(bb, args, name="layer", location=None):
    """Emit ``name(args)`` inside a new function ``main`` of ``bb``; returns the call."""
    with bb.function("main", list(args)):
        out = bb.emit(Call(GlobalVar(name), list(args)), location=location)
        bb.emit_func_output(out)
    mod = bb.finalize()
    verify(mod)
    assert parse_module(str(mod), OPS) == mod
    return mod["main"].body.blocks[0].bindings[0].value


def test_result_info_substitutes_the_callee_symbols():
    bb = _callee(_var("x", n, 4), _var("y", n, 4), body_op=add)
    match = match_call(bb.get()["layer"], [TensorInfo((a + 1, 4)), TensorInfo((a + 1, 4))])
    assert match.info == TensorInfo((a + 1, 4))
    assert match.checks == () and match.mapping == {"n": a + 1}
    call = _call(bb, [_var("p", a, 4), _var("q", a, 4)])
    assert call.info == TensorInfo((a, 4)) and call.checks == ()


def test_symbols_swap_places_simultaneously():
    bb = _callee(_var("x", n, m), body_op=relu)
    call = _call(bb, [_var("p", m, n)])
    assert call.info == TensorInfo((m, n))


def test_unproven_relation_becomes_a_check_naming_the_signature():
    bb = _callee(_var("x", n, 4), _var("y", n, 4), body_op=add)
    call = _call(bb, [_var("p", a, 4), _var("q", b, 4)])
    assert call.info == TensorInfo((a, 4))
    assert call.checks == (Check("eq", (b, a), "layer: argument 'y' axis 0 is n in its signature"),)


def test_relation_false_for_every_value_raises_at_the_call_site():
    callee = _callee(_var("x", n, 4), _var("y", n, 4), body_op=add).finalize()["layer"]
    with pytest.raises(ShapeError, match=r"requires a \+ 1 == a, which is false") as info:
        match_call(callee, [TensorInfo((a, 4)), TensorInfo((a + 1, 4))], HERE)
    assert info.value.location == HERE
    bb = _callee(_var("x", n, 4), _var("y", n, 4), body_op=add)
    p, q = _var("p", a, 4), _var("q", a, 5)
    with (
        pytest.raises(
            ShapeError,
            match=r"layer: argument 'y' axis 1 is 4 in its signature: requires 5 == 4, which "
            r"is false \(operands",
        ) as info,
        bb.function("main", [p, q]),
    ):
        bb.emit(Call(GlobalVar("layer"), [p, q]), location=HERE)
    assert info.value.location == HERE


def test_static_mismatch_raises():
    bb = _callee(_var("x", n, 4))
    p = _var("p", 3, 5)
    with (
        pytest.raises(ShapeError, match=r"axis 1 is 4 in its signature: requires 5 == 4"),
        bb.function("main", [p]),
    ):
        bb.emit(Call(GlobalVar("layer"), [p]))


def test_kind_dtype_rank_and_arity_errors():
    callee = _callee(_var("x", n, 4)).finalize()["layer"]
    with pytest.raises(TypeError, match=r"layer\(\): argument 'x': expected dtype float32, got"):
        match_call(callee, [TensorInfo((a, 4), "float64")])
    with pytest.raises(ShapeError, match=r"layer\(\): argument 'x': expected rank 2 .* got rank 1"):
        match_call(callee, [TensorInfo((a,))])
    with pytest.raises(TypeError, match=r"argument 'x' must be a tensor .* got Prim"):
        match_call(callee, [PrimInfo("float32")])
    with pytest.raises(TypeError, match=r"layer\(\) takes 1 arguments, got 2"):
        match_call(callee, [TensorInfo((a, 4)), TensorInfo((a, 4))])
    with pytest.raises(TypeError, match="the dims of .* are not known at compile time; match_cast"):
        match_call(callee, [TensorInfo(ndim=2)])
    with pytest.raises(TypeError, match="the rank of .* is not known at compile time"):
        match_call(callee, [TensorInfo(dtype="float32")])


def test_declared_bounds_are_checked_at_the_call():
    bounded = arith.sym("n", lower=2, upper=8)
    callee = _callee(Var("x", TensorInfo((bounded, 4)))).finalize()["layer"]
    match = match_call(callee, [TensorInfo((a, 4))])
    assert [c.relation() for c in match.checks] == ["2 <= a", "a <= 8"]
    assert match_call(callee, [TensorInfo((5, 4))]).checks == ()
    with pytest.raises(ShapeError, match=r"layer: n must be <= 8: requires 9 <= 8"):
        match_call(callee, [TensorInfo((9, 4))])


def test_scalar_parameters_bind_their_symbols():
    size = Var("size", PrimInfo("int64", value=n))
    x = _var("x", n)
    bb = BlockBuilder()
    with bb.function("layer", [size, x]):
        bb.emit_func_output(bb.emit(Call(relu, [x])))
    callee = bb.finalize()["layer"]
    assert signature_symbols(callee) == (n,)
    match = match_call(callee, [PrimInfo("int64", value=a + 1), TensorInfo((b,))])
    assert match.mapping == {"n": a + 1}
    assert [c.relation() for c in match.checks] == ["b == a + 1"]
    with pytest.raises(TypeError, match="names its value, but the value of .* is not known"):
        match_call(callee, [PrimInfo("int64"), TensorInfo((b,))])


def test_linear_dims_solve_their_symbol_with_a_divisibility_check():
    x = Var("x", TensorInfo((2 * n + 1, 4)))
    body = SeqExpr([], x)
    callee = Function([x], body, x.info, "double")  # built directly: the builder refuses it
    match = match_call(callee, [TensorInfo((a, 4))])
    assert match.mapping == {"n": (a - 1) // 2}
    assert [c.relation() for c in match.checks] == ["divides(2, a - 1)", f"0 <= {(a - 1) // 2}"]
    with pytest.raises(ShapeError, match=r"requires divides\(2, 7\)"):
        match_call(callee, [TensorInfo((8, 4))])
    assert match_call(callee, [TensorInfo((2 * b + 1, 4))]).info == TensorInfo((2 * b + 1, 4))


def test_preconditions_of_the_callee_move_to_the_call():
    bb = _callee(_var("x", n, 4), _var("y", m, 4), body_op=add)
    callee = bb.get()["layer"]
    assert [c.relation() for c in preconditions(callee)] == ["broadcast(n, m)"]
    call = _call(bb, [_var("p", a, 4), _var("q", b, 4)])
    assert [(c.relation(), c.message) for c in call.checks] == [
        ("broadcast(a, b)", "layer: add: shapes must broadcast")
    ]
    with pytest.raises(
        ShapeError,
        match=r"layer: add: shapes must broadcast: requires "
        r"broadcast\(3, 5\)",
    ):
        match_call(callee, [TensorInfo((3, 4)), TensorInfo((5, 4))])
    assert match_call(callee, [TensorInfo((a, 4)), TensorInfo((a, 4))]).checks == ()


def test_nested_calls_carry_preconditions_up_the_chain():
    bb = _callee(_var("x", n, 4), _var("y", m, 4), body_op=add, name="inner")
    x, y = _var("x", n, 4), _var("y", m, 4)
    with bb.function("outer", [x, y]):
        bb.emit_func_output(bb.emit(Call(GlobalVar("inner"), [x, y])))
    call = _call(bb, [_var("p", 3, 4), _var("q", b, 4)], name="outer")
    assert [c.message for c in call.checks] == ["outer: inner: add: shapes must broadcast"]


def test_tuple_parameters_match_field_by_field():
    pair = Var("pair", TupleInfo([TensorInfo((n,)), TensorInfo((n, 2))]))
    callee = Function([pair], SeqExpr([], pair), pair.info, "swap")
    match = match_call(callee, [TupleInfo([TensorInfo((a,)), TensorInfo((b, 2))])])
    assert match.info == TupleInfo([TensorInfo((a,)), TensorInfo((a, 2))])
    assert [c.message for c in match.checks] == [
        "swap: argument 'pair'[1] axis 0 is n in its signature"
    ]
    with pytest.raises(TypeError, match="must be a tuple of 2"):
        match_call(callee, [TupleInfo([TensorInfo((a,))])])


def test_recursion_and_unknown_callees_are_refused():
    x = _var("x", n)
    bb = BlockBuilder()
    with pytest.raises(TypeError, match="it is the function being built"), bb.function("f", [x]):
        bb.emit(Call(GlobalVar("f"), [x]))


def test_verify_rematches_calls():
    bb = _callee(_var("x", n, 4), _var("y", n, 4), body_op=add)
    p, q = _var("p", a, 4), _var("q", b, 4)
    good = _call(bb, [p, q])
    lv = Var("lv", good.info)
    stale = Call(GlobalVar("layer"), [p, q], None, good.info, ())  # the check is missing
    main = Function([p, q], SeqExpr([BindingBlock([Binding(lv, stale)])], lv), lv.info, "main")
    layer = _callee(_var("x", n, 4), _var("y", n, 4), body_op=add).finalize()["layer"]
    with pytest.raises(VerifyError, match="the run-time check b == a that layer needs is not"):
        verify(IRModule({"layer": layer, "main": main}))
    wrong = Call(GlobalVar("layer"), [p, q], None, TensorInfo((b, 4)), good.checks)
    main = Function([p, q], SeqExpr([BindingBlock([Binding(lv, wrong)])], lv), lv.info, "main")
    with pytest.raises(VerifyError, match="recorded info .* is not a base of the re-deduced"):
        verify(IRModule({"layer": layer, "main": main}))


def test_builder_names_callees_apart_from_the_open_function():
    bb = BlockBuilder()
    x = _var("x", n)
    with bb.function("f", [x]):
        inner = _callee(_var("y", m), name="f").finalize()["f"]
        ref = bb.add_func(inner, "f")
        assert ref == GlobalVar("f_1")
        bb.emit_func_output(bb.emit(Call(ref, [x])))
    mod = bb.finalize()
    assert list(mod.graph_functions()) == ["f_1", "f"]
    verify(mod)
    assert mod["f"].body.blocks[0].bindings[0].value.info == TensorInfo((n,))


_DIMS = [n, m, 4, n + 1, 2 * n, 2 * n + 1, n + m, 3 * m + 2]


@given(
    st.lists(st.lists(st.sampled_from(_DIMS), min_size=1, max_size=3), min_size=1, max_size=3),
    st.data(),
)
def test_matching_concrete_shapes_is_sound_and_complete(signature, data):
    """With concrete argument shapes every relation is decided: the match succeeds exactly
    when some values of the callee's symbols give those shapes, and then its mapping does."""
    params = [Var(f"p{i}", TensorInfo(tuple(dims))) for i, dims in enumerate(signature)]
    if not {n, m} >= {s for p in params for s in free_symbols(p.info)}:
        return
    callee = Function(params, SeqExpr([], params[0]), params[0].info, "f")
    if data.draw(st.booleans()):  # shapes some symbol values give, or arbitrary ones
        chosen = {"n": data.draw(st.integers(0, 5)), "m": data.draw(st.integers(0, 3))}
        shapes = [tuple(arith.evaluate(d, chosen) for d in dims) for dims in signature]
    else:
        shapes = [tuple(data.draw(st.integers(0, 9)) for _ in dims) for dims in signature]
    infos = [TensorInfo(shape) for shape in shapes]
    symbols = sorted({s.name for p in params for s in free_symbols(p.info)})
    fits = [
        env
        for values in itertools.product(range(12), repeat=len(symbols))
        if all(
            arith.evaluate(d, (env := dict(zip(symbols, values)))) == size
            for dims, shape in zip(signature, shapes)
            for d, size in zip(dims, shape)
        )
    ]
    try:
        match = match_call(callee, infos)
    except ShapeError:
        assert fits == []
        return
    except TypeError:  # a symbol no dim determines (n + m alone): nothing to check
        return
    assert match.checks == ()  # concrete shapes: every relation is decided
    env = {name: arith.evaluate(value, {}) for name, value in match.mapping.items()}
    assert env in fits
    assert match.info == TensorInfo(shapes[0])
