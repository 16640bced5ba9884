"""BlockBuilder: normalisation, deduction through op.infer, checks, scopes and errors."""

import numpy as np
import pytest
from ir_fakes import OPS, FakeKernel, add, gelu, matmul, opaque, relu, split

from relaxjax import arith
from relaxjax.errors import ShapeError, SourceLocation, TraceError
from relaxjax.ir import (
    Binding,
    BlockBuilder,
    Call,
    Check,
    Constant,
    DataflowBlock,
    DataflowVar,
    ExternDecl,
    ExternFunc,
    Function,
    GlobalVar,
    InferContext,
    MatchCast,
    ObjectInfo,
    PrimInfo,
    PrimValue,
    TensorInfo,
    Tuple,
    TupleGetItem,
    TupleInfo,
    Var,
    call_extern,
    call_tir,
    parse_module,
    structural_equal,
    verify,
)

n, m, k = arith.syms("n m k")


def _tensor(name, *shape, dtype="float32"):
    return Var(name, TensorInfo(shape, dtype))


def test_emit_deduces_info_and_builds_dataflow_blocks():
    x, w = _tensor("x", n, 8), _tensor("w", 8, 16)
    bb = BlockBuilder()
    with bb.function("main", [x, w]):
        with bb.dataflow():
            lv = bb.emit(Call(matmul, [x, w]))
            act = bb.emit(Call(gelu, [lv]))
            gv = bb.emit_output(act)
        bb.emit_func_output(gv)
    mod = bb.finalize()
    func = mod["main"]
    assert isinstance(lv, DataflowVar) and type(gv) is Var
    assert lv.info == TensorInfo((n, 16)) and gv.info == TensorInfo((n, 16))
    (block,) = func.body.blocks
    assert isinstance(block, DataflowBlock) and len(block.bindings) == 3
    assert block.bindings[1].value.attrs == gelu.Attrs()  # defaulted attributes
    assert func.ret_info == TensorInfo((n, 16))
    assert [b.var.name_hint for b in block.bindings] == ["lv0", "lv1", "gv"]
    verify(mod)


def test_nested_calls_are_bound_first():
    x = _tensor("x", n, 4)
    bb = BlockBuilder()
    with bb.function("main", [x]):
        out = bb.emit(Call(relu, [Call(add, [x, Call(relu, [x])])]))
        bb.emit_func_output(out)
    bindings = bb.finalize()["main"].body.blocks[0].bindings
    assert [b.value.op.name for b in bindings] == ["relu", "add", "relu"]
    assert bindings[1].value.args[1] is bindings[0].var
    assert bindings[2].value.args[0] is bindings[1].var


def test_unproven_relation_is_recorded_on_the_call():
    x, y = _tensor("x", n, 4), _tensor("y", m, 4)
    bb = BlockBuilder()
    with bb.function("main", [x, y]):
        lv = bb.emit(Call(add, [x, y]))
        bb.emit_func_output(lv)
    call = bb.finalize()["main"].body.blocks[0].bindings[0].value
    assert call.checks == (Check("broadcast", (n, m), "add: shapes must broadcast"),)
    assert lv.info == TensorInfo(ndim=2)  # coarse: broadcast of n and m is unknown


def test_proven_relation_is_dropped():
    x = _tensor("x", n, 4)
    bb = BlockBuilder()
    with bb.function("main", [x]):
        lv = bb.emit(Call(add, [x, x]))
        bb.emit_func_output(lv)
    call = bb.finalize()["main"].body.blocks[0].bindings[0].value
    assert call.checks == () and call.info == TensorInfo((n, 4))


def test_provably_false_relation_raises_shape_error_naming_op_shapes_relation():
    a, b = _tensor("a", 3, k), _tensor("b", k + 1, 5)
    bb = BlockBuilder()
    location = SourceLocation("model.py", 7, "    y = a @ b")
    with pytest.raises(ShapeError) as info, bb.function("main", [a, b]):
        bb.emit(Call(matmul, [a, b]), location=location)
    assert info.value.message == (
        "matmul: contraction dims must match: requires k == k + 1, which is false for every "
        'value of the symbols (operands: Tensor((3, k), "float32"), Tensor((k + 1, 5), "float32"))'
    )
    assert info.value.location == location
    assert "model.py:7" in str(info.value)


def test_concrete_shapes_give_concrete_results_or_errors():
    ctx = InferContext("matmul", [TensorInfo((2, 3)), TensorInfo((4, 5))])
    with pytest.raises(ShapeError, match=r"requires 3 == 4, which is false \(operands"):
        matmul.infer(ctx.arg_infos, None, ctx)
    ctx = InferContext("matmul")
    assert matmul.infer([TensorInfo((2, 3)), TensorInfo((3, 5))], None, ctx) == TensorInfo((2, 5))
    assert ctx.checks == []


def test_infer_context_dedups_and_fails():
    ctx = InferContext("add")
    ctx.require(Check("eq", (n, m), "first"))
    ctx.require(Check("eq", (n, m), "second"))
    assert len(ctx.checks) == 1
    with pytest.raises(ShapeError, match="^add: bad axis$"):
        ctx.fail("bad axis")
    with pytest.raises(ShapeError, match="^add: already prefixed$"):
        ctx.fail("add: already prefixed")


def test_location_recorded_but_not_compared():
    def build(location):
        x = _tensor("x", n)
        bb = BlockBuilder()
        with bb.function("main", [x]):
            lv = bb.emit(Call(relu, [x]), location=location)
            bb.emit_func_output(lv)
        return bb.finalize()

    here, there = SourceLocation("a.py", 3), SourceLocation("b.py", 9)
    first, second = build(here), build(there)
    assert first["main"].body.blocks[0].bindings[0].location == here
    assert structural_equal(first, second) and first == second


def test_match_cast_binds_new_symbols():
    x = Var("x", TensorInfo(dtype="float32"))
    bb = BlockBuilder()
    with bb.function("main", [x]):
        cast = bb.emit_match_cast(x, TensorInfo(("p", 4)))
        assert "p" in bb.symbols
        lv = bb.emit(Call(relu, [cast]))
        bb.emit_func_output(lv)
    mod = bb.finalize()
    binding = mod["main"].body.blocks[0].bindings[0]
    assert isinstance(binding, MatchCast) and binding.info == TensorInfo(("p", 4))
    assert mod["main"].ret_info == TensorInfo(ndim=2)  # p is not a parameter symbol
    verify(mod)


def test_match_cast_binds_symbols_its_dims_solve():
    x = _tensor("x", n, 4)
    bb = BlockBuilder()
    with bb.function("main", [x]):
        cast = bb.emit_match_cast(x, TensorInfo(("p * 2 + 1", "q * p")))
        assert {"p", "q"} <= set(bb.symbols)
        bb.emit_func_output(cast)
    verify(bb.finalize())


def test_match_cast_errors():
    x = _tensor("x", n, 4)
    bb = BlockBuilder()
    with pytest.raises(TraceError) as info, bb.function("main", [x]):
        bb.emit_match_cast(x, TensorInfo(("p * q", "p // 2")))
    assert info.value.message == (
        'match_cast: symbol p in Tensor((p * q, p // 2), "float32") is not defined yet and no '
        "dim determines it, so no value can bind it (a dim determines a symbol when it is the "
        "symbol alone or linear in it, like p * 2 + 1, once its other symbols are known)"
    )
    bb = BlockBuilder()
    with pytest.raises(ShapeError) as info, bb.function("main", [x]):
        bb.emit_match_cast(x, TensorInfo(("p",)))
    assert info.value.message == (
        'match_cast: a value of Tensor((n, 4), "float32") can never match Tensor((p,), "float32")'
    )


def test_parameters_declare_every_symbol_they_mention():
    bounded = arith.sym("n", lower=1, upper=8)
    x, y = _tensor("x", bounded * 2), _tensor("y", n + m, k * m)
    bb = BlockBuilder()
    with bb.function("main", [x, y]):
        assert {name: (s.lower, s.upper) for name, s in bb.symbols.items()} == {
            "n": (1, 8),
            "m": (0, None),
            "k": (0, None),
        }
        with bb.dataflow():
            gv = bb.emit_output(bb.emit(Call(relu, [y])))
        bb.emit_func_output(gv)
    mod = bb.finalize()
    verify(mod)
    assert mod["main"].ret_info == TensorInfo((n + m, k * m))
    assert structural_equal(parse_module(str(mod), OPS), mod)


def test_scope_errors():
    bb = BlockBuilder()
    x = _tensor("x", 4)
    with pytest.raises(RuntimeError, match="emit needs an open function"):
        bb.emit(Call(relu, [x]))
    with (
        pytest.raises(RuntimeError, match="function 'f' ended without emit_func_output"),
        bb.function("f", [x]),
    ):
        pass
    with (
        pytest.raises(RuntimeError, match="emit_output is only meaningful inside a dataflow"),
        bb.function("g", [x]),
    ):
        bb.emit_output(x)
    with (
        pytest.raises(RuntimeError, match="end the dataflow block before emit_func_output"),
        bb.function("h", [x]),
        bb.dataflow(),
    ):
        bb.emit_func_output(x)
    with (
        pytest.raises(RuntimeError, match="a function cannot return a dataflow var"),
        bb.function("i", [x]),
    ):
        with bb.dataflow():
            lv = bb.emit(Call(relu, [x]))
        bb.emit_func_output(lv)
    with pytest.raises(TypeError, match="op add takes no attributes"), bb.function("j", [x]):
        bb.emit(Call(add, [x, x], gelu.Attrs()))
    with (
        pytest.raises(TypeError, match="op split needs attributes SplitAttrs"),
        bb.function("k", [x]),
    ):
        bb.emit(Call(split, [x]))


def test_ret_info_declared():
    x = _tensor("x", n, 4)
    bb = BlockBuilder()
    with bb.function("main", [x]):
        bb.emit_func_output(x, TensorInfo(ndim=2))
    assert bb.finalize()["main"].ret_info == TensorInfo(ndim=2)
    bb = BlockBuilder()
    with (
        pytest.raises(ShapeError, match="which can never match the declared"),
        bb.function("main", [x]),
    ):
        bb.emit_func_output(x, TensorInfo(ndim=3))


def test_tuples_prims_and_get_items():
    x = _tensor("x", n, 3)
    bb = BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            parts = bb.emit(Call(split, [x], split.Attrs(4)))
            first = bb.emit(TupleGetItem(parts, 0))
            scaled = bb.emit(Call(add, [first, PrimValue(2.0, weak=True)]))
            gv = bb.emit_output(Tuple([scaled, first]))
        bb.emit_func_output(gv)
    mod = bb.finalize()
    part = TensorInfo((n // 4, 3))
    assert parts.info == TupleInfo([part] * 4)
    assert mod["main"].body.blocks[0].bindings[0].value.checks == (
        Check("divides", (4, n), "split: sections must divide the axis"),
    )
    assert scaled.info == TensorInfo((n // 4, 3), "float32")  # weak float keeps float32
    assert gv.info == TupleInfo([part, part])
    verify(mod)


def test_call_of_a_graph_function_substitutes_symbols():
    bb = BlockBuilder()
    x = _tensor("x", n, 4)
    with bb.function("inner", [x]):
        bb.emit_func_output(bb.emit(Call(relu, [x])))
    y = _tensor("y", 7, 4)
    with bb.function("main", [y]):
        out = bb.emit(Call(GlobalVar("inner"), [y]))
        bb.emit_func_output(out)
    assert out.info == TensorInfo((7, 4))
    verify(bb.finalize())
    bb2 = BlockBuilder()
    with (
        pytest.raises(TypeError, match="cannot call 'nothing': it is not a graph function"),
        bb2.function("f", [y]),
    ):
        bb2.emit(Call(GlobalVar("nothing"), [y]))


def test_call_tir_and_call_extern():
    x = _tensor("x", n, 4)
    bb = BlockBuilder()
    kernel = bb.add_func(FakeKernel("relu_kernel"), "relu_kernel")
    again = bb.add_func(FakeKernel("relu_kernel"), "other_name")  # an equal kernel is reused
    assert kernel == again == GlobalVar("relu_kernel")
    other = bb.add_func(FakeKernel("relu_kernel", "different"), "relu_kernel")
    assert other == GlobalVar("relu_kernel_1")
    bb.add_func(ExternDecl("sgemm", "cblas_sgemm", "openblas"), "sgemm")
    with bb.function("main", [x]):
        with bb.dataflow():
            lv = bb.emit(call_tir(kernel, [x], TensorInfo((n, 4))))
            ext = bb.emit(call_extern(ExternFunc("cblas_sgemm"), [lv], TensorInfo((n, 4))))
            gv = bb.emit_output(ext)
        bb.emit_func_output(gv)
    mod = bb.finalize()
    assert set(mod.kernels()) == {"relu_kernel", "relu_kernel_1"}
    assert set(mod.externs()) == {"sgemm"} and set(mod.graph_functions()) == {"main"}
    verify(mod)
    assert lv.info == TensorInfo((n, 4))
    with pytest.raises(TypeError, match="call_tir calls a kernel named by a GlobalVar"):
        call_tir("relu_kernel", [x], TensorInfo((n, 4)))
    with pytest.raises(TypeError, match="call_extern calls an ExternFunc"):
        call_extern(GlobalVar("sgemm"), [x], TensorInfo((n, 4)))


def test_call_tir_infer_rejects_bad_operands():
    bb = BlockBuilder()
    x = _tensor("x", 4)
    from relaxjax.ir import CALL_TIR, CallTIRAttrs

    with (
        pytest.raises(ShapeError, match="call_tir: the arguments must be a tuple"),
        bb.function("main", [x]),
    ):
        bb.emit(Call(CALL_TIR, [GlobalVar("k"), x], CallTIRAttrs(x.info)))


def test_constants_and_opaque_results():
    x = _tensor("x", 2, 2)
    bb = BlockBuilder()
    with bb.function("main", [x]):
        lv = bb.emit(Call(add, [x, Constant(np.ones((2, 2), np.float64))]))
        obj = bb.emit(Call(opaque, [lv]))
        bb.emit_func_output(obj)
    assert lv.info == TensorInfo((2, 2), "float64")
    assert obj.info == ObjectInfo()
    assert bb.finalize()["main"].ret_info == ObjectInfo()


def test_symbol_info_of_prim_parameter():
    size = Var("size", PrimInfo("int64", value=n))
    x = _tensor("x", n)
    bb = BlockBuilder()
    with bb.function("main", [size, x]):
        bb.emit_func_output(x)
    verify(bb.finalize())


def test_existing_module_and_round_trip():
    x = _tensor("x", n)
    bb = BlockBuilder()
    with bb.function("a", [x]):
        bb.emit_func_output(bb.emit(Call(relu, [x])))
    first = bb.finalize()
    bb2 = BlockBuilder(first)
    with (
        pytest.raises(ValueError, match="the module already has an item named 'a'"),
        bb2.function("a", [x]),
    ):
        pass
    y = _tensor("y", n)
    with bb2.function("b", [y]):
        bb2.emit_func_output(bb2.emit(Call(GlobalVar("a"), [y])))
    mod = bb2.finalize()
    assert set(mod) == {"a", "b"}
    assert parse_module(str(mod), OPS) == mod
    assert isinstance(mod["a"], Function)
    binding = mod["b"].body.blocks[0].bindings[0]
    assert isinstance(binding, Binding) and binding.value.info == TensorInfo((n,))
