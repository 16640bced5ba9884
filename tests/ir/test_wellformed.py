"""verify(mod): one hand-built bad program per rule, with the exact message."""

import pytest
from ir_fakes import FakeKernel, add, matmul, relu

from relaxjax import arith
from relaxjax.errors import VerifyError
from relaxjax.ir import (
    CALL_EXTERN,
    Binding,
    BindingBlock,
    Call,
    CallExternAttrs,
    Check,
    DataflowBlock,
    DataflowVar,
    Function,
    GlobalVar,
    IRModule,
    MatchCast,
    PrimValue,
    SeqExpr,
    TensorInfo,
    Tuple,
    Var,
    call_tir,
    verify,
)

n, m, p = arith.syms("n m p")
T_N = TensorInfo((n, 4))


def _module(params, blocks, body, ret_info=None, extra=None):
    func = Function(params, SeqExpr(blocks, body), ret_info or body.info, "main")
    return IRModule({"main": func, **(extra or {})})


def _fails(mod, message):
    with pytest.raises(VerifyError) as info:
        verify(mod)
    assert str(info.value) == message
    return info.value


def test_a_good_program_passes():
    x = Var("x", T_N)
    lv = DataflowVar("lv", T_N)
    gv = Var("gv", T_N)
    blocks = [DataflowBlock([Binding(lv, Call(relu, [x], None, T_N)), Binding(gv, lv)])]
    verify(_module([x], blocks, gv))


def test_symbol_defined_in_a_binding():
    x = Var("x", T_N)
    lv = Var("lv", TensorInfo((m, 4)))
    mod = _module([x], [BindingBlock([Binding(lv, Call(relu, [x], None, lv.info))])], lv)
    error = _fails(
        mod,
        'symbol-defined: function main, binding lv: Tensor((m, 4), "float32") = relu(x): '
        "symbol m is used but not defined by a parameter or match_cast",
    )
    assert isinstance(error.nodes[0], Binding)


def test_parameters_define_every_symbol_they_mention():
    x = Var("x", TensorInfo((n * 2, m * p + 1)))
    lv = Var("lv", TensorInfo((n * 2, m * p + 1)))
    q = Var("q", PrimValue(n).info)
    blocks = [BindingBlock([Binding(lv, Call(relu, [x], None, lv.info)), Binding(q, PrimValue(n))])]
    verify(_module([x], blocks, lv))
    # a match_cast binds the symbols its dims determine, and no others
    y, cast = Var("y", TensorInfo((4,))), Var("cast", TensorInfo((n * 2, m * n)))
    verify(_module([y], [BindingBlock([MatchCast(cast, y, cast.info)])], cast, TensorInfo(ndim=2)))
    cast = Var("cast", TensorInfo((n * m, n // 2)))
    _fails(
        _module([y], [BindingBlock([MatchCast(cast, y, cast.info)])], cast, TensorInfo(ndim=2)),
        'symbol-defined: function main, binding cast: Tensor((m * n, n // 2), "float32") = '
        'match_cast(y, Tensor((m * n, n // 2), "float32")): '
        "symbol m is used but not defined by a parameter or match_cast",
    )


def test_symbol_defined_by_match_cast_only_after_it():
    x = Var("x", T_N)
    early = Var("early", PrimValue(p).info)
    cast = Var("cast", TensorInfo((p, 4)))
    blocks = [BindingBlock([Binding(early, PrimValue(p)), MatchCast(cast, x, TensorInfo((p, 4)))])]
    _fails(
        _module([x], blocks, cast, TensorInfo(ndim=2)),
        'symbol-defined: function main, binding early: Prim("int64", value=p) = prim(p, "int64"):'
        " symbol p is used but not defined by a parameter or match_cast",
    )
    verify(_module([x], [BindingBlock(blocks[0].bindings[1:])], cast, TensorInfo(ndim=2)))


def test_symbol_defined_in_a_symbolic_bound():
    # k0 <= m * 4: m must be defined before the match_cast that defines k0
    x = Var("x", T_N)
    k0 = arith.sym("k0", upper=m * 4)
    cast = Var("cast", TensorInfo((k0, 4)))
    blocks = [BindingBlock([MatchCast(cast, x, TensorInfo((k0, 4)))])]
    _fails(
        _module([x], blocks, cast, TensorInfo(ndim=2)),
        'symbol-defined: function main, binding cast: Tensor((k0, 4), "float32") = '
        'match_cast(x, Tensor((k0, 4), "float32")): symbol m in the bound k0 <= m * 4 is not '
        "defined by a parameter or an earlier match_cast",
    )
    k1 = arith.sym("k1", upper=n * 4)
    good = Var("good", TensorInfo((k1, 4)))
    verify(
        _module(
            [x],
            [BindingBlock([MatchCast(good, x, TensorInfo((k1, 4)))])],
            good,
            TensorInfo(ndim=2),
        )
    )


def test_symbol_defined_in_ret_info():
    x = Var("x", T_N)
    cast = Var("cast", TensorInfo((p, 4)))
    blocks = [BindingBlock([MatchCast(cast, x, TensorInfo((p, 4)))])]
    _fails(
        _module([x], blocks, cast),
        "symbol-defined: function main, return cast: "
        "symbol p is used but not defined by a parameter (in the return info)",
    )


def test_var_bound_once():
    x = Var("x", T_N)
    lv = Var("lv", T_N)
    call = Call(relu, [x], None, T_N)
    mod = _module([x], [BindingBlock([Binding(lv, call), Binding(lv, call)])], lv)
    _fails(
        mod,
        'var-bound-once: function main, binding lv: Tensor((n, 4), "float32") = relu(x): '
        "var lv is defined twice",
    )


def test_var_bound_once_across_functions():
    x = Var("x", T_N)
    first = Function([x], SeqExpr([], x), T_N, "first")
    second = Function([x], SeqExpr([], x), T_N, "second")
    _fails(
        IRModule({"first": first, "second": second}),
        "var-bound-once: function second, the signature: var x is defined twice",
    )


def test_var_defined_before_use():
    x = Var("x", T_N)
    ghost = Var("ghost", T_N)
    lv = Var("lv", T_N)
    mod = _module([x], [BindingBlock([Binding(lv, Call(add, [x, ghost], None, T_N))])], lv)
    _fails(
        mod,
        'var-defined: function main, binding lv: Tensor((n, 4), "float32") = add(x, ghost): '
        "var ghost is used before it is defined",
    )


def test_dataflow_var_escaping_its_block():
    x = Var("x", T_N)
    lv = DataflowVar("lv", T_N)
    blocks = [DataflowBlock([Binding(lv, Call(relu, [x], None, T_N))])]
    _fails(
        _module([x], blocks, lv),
        "dataflow-scope: function main, return lv: dataflow var lv is used after its block ended",
    )


def test_dataflow_var_in_a_plain_block():
    x = Var("x", T_N)
    lv = DataflowVar("lv", T_N)
    blocks = [BindingBlock([Binding(lv, Call(relu, [x], None, T_N))])]
    _fails(
        _module([x], blocks, x),
        'dataflow-scope: function main, binding lv: Tensor((n, 4), "float32") = relu(x): '
        "a dataflow var is bound outside a dataflow block",
    )


def test_normal_form():
    x = Var("x", T_N)
    lv = Var("lv", T_N)
    nested = Call(relu, [Call(relu, [x], None, T_N)], None, T_N)
    _fails(
        _module([x], [BindingBlock([Binding(lv, nested)])], lv),
        'normal-form: function main, binding lv: Tensor((n, 4), "float32") = relu(relu(x)): '
        "Call relu(x) must be bound to a var before it is used as an operand",
    )


def test_info_consistent_with_rededuction():
    x = Var("x", T_N)
    lv = Var("lv", TensorInfo((n, 5)))
    mod = _module([x], [BindingBlock([Binding(lv, Call(relu, [x], None, lv.info))])], lv)
    _fails(
        mod,
        'info-consistent: function main, binding lv: Tensor((n, 5), "float32") = relu(x): '
        'recorded info Tensor((n, 5), "float32") is not a base of the re-deduced '
        'Tensor((n, 4), "float32")',
    )


def test_info_consistent_coarser_is_fine_but_finer_var_is_not():
    x = Var("x", T_N)
    coarse = Var("coarse", TensorInfo(ndim=2))
    call = Call(relu, [x], None, TensorInfo(ndim=2))
    verify(_module([x], [BindingBlock([Binding(coarse, call)])], coarse))
    fine = Var("fine", T_N)
    _fails(
        _module([x], [BindingBlock([Binding(fine, call)])], fine),
        'info-consistent: function main, binding fine: Tensor((n, 4), "float32") = relu(x): '
        "the var's info Tensor((n, 4), \"float32\") is not a base of its value's "
        'Tensor(ndim=2, dtype="float32")',
    )


def test_info_consistent_missing_check():
    x, y = Var("x", T_N), Var("y", TensorInfo((m, 4)))
    lv = Var("lv", TensorInfo((n, 4)))
    mod = _module([x, y], [BindingBlock([Binding(lv, Call(matmul, [x, y], None, lv.info))])], lv)
    _fails(
        mod,
        'info-consistent: function main, binding lv: Tensor((n, 4), "float32") = matmul(x, y): '
        "the run-time check 4 == m that matmul needs is not recorded on the call",
    )
    check = Check("eq", (4, m), "matmul: contraction dims must match")
    fixed = Call(matmul, [x, y], None, lv.info, [check])
    verify(_module([x, y], [BindingBlock([Binding(lv, fixed)])], lv))


def test_info_consistent_op_rejects_operands():
    x = Var("x", TensorInfo((3, 5)))
    lv = Var("lv", TensorInfo((3, 5)))
    mod = _module([x], [BindingBlock([Binding(lv, Call(matmul, [x, x], None, lv.info))])], lv)
    error = _fails(
        mod,
        'info-consistent: function main, binding lv: Tensor((3, 5), "float32") = matmul(x, x): '
        "matmul rejects its operands: matmul: contraction dims must match: requires 5 == 3, "
        'which is false (operands: Tensor((3, 5), "float32"), Tensor((3, 5), "float32"))',
    )
    assert error.nodes[0].var is lv


def test_info_consistent_missing_info_and_match_cast_and_return():
    x = Var("x", T_N)
    lv = Var("lv", T_N)
    _fails(
        _module([x], [BindingBlock([Binding(lv, Call(relu, [x]))])], lv),
        'info-consistent: function main, binding lv: Tensor((n, 4), "float32") = relu(x): '
        "the call has no info (it was never normalised)",
    )
    cast = Var("cast", TensorInfo((n, 4)))
    _fails(
        _module([x], [BindingBlock([MatchCast(cast, x, TensorInfo(ndim=2))])], cast),
        'info-consistent: function main, binding cast: Tensor((n, 4), "float32") = '
        'match_cast(x, Tensor(ndim=2, dtype="float32")): the var\'s info '
        'Tensor((n, 4), "float32") differs from the cast Tensor(ndim=2, dtype="float32")',
    )
    _fails(
        _module([x], [], x, TensorInfo((n, 5))),
        'info-consistent: function main, return x: declared return info Tensor((n, 5), "float32")'
        ' is not a base of the returned Tensor((n, 4), "float32")',
    )


def test_callee_exists_for_global_calls():
    x = Var("x", T_N)
    lv = Var("lv", T_N)
    mod = _module([x], [BindingBlock([Binding(lv, Call(GlobalVar("nope"), [x], None, T_N))])], lv)
    _fails(
        mod,
        'callee-exists: function main, binding lv: Tensor((n, 4), "float32") = mod.nope(x): '
        "nope is not a graph function of the module",
    )


def test_callee_exists_for_call_tir():
    x = Var("x", T_N)
    lv = Var("lv", T_N)
    call = call_tir(GlobalVar("missing"), [x], T_N)
    mod = _module([x], [BindingBlock([Binding(lv, call)])], lv, extra={"k": FakeKernel("k")})
    _fails(
        mod,
        'callee-exists: function main, binding lv: Tensor((n, 4), "float32") = '
        'call_tir(mod.missing, (x,), out_info=Tensor((n, 4), "float32")): '
        "call_tir of mod.missing, which is not a kernel of the module",
    )
    good = call_tir(GlobalVar("k"), [x], T_N)
    verify(_module([x], [BindingBlock([Binding(lv, good)])], lv, extra={"k": FakeKernel("k")}))


def test_callee_exists_for_call_extern():
    x = Var("x", T_N)
    lv = Var("lv", T_N)
    call = Call(CALL_EXTERN, [GlobalVar("f"), Tuple([x])], CallExternAttrs(T_N), T_N)
    _fails(
        _module([x], [BindingBlock([Binding(lv, call)])], lv),
        'callee-exists: function main, binding lv: Tensor((n, 4), "float32") = '
        'call_extern(mod.f, (x,), out_info=Tensor((n, 4), "float32")): '
        "call_extern must call an ExternFunc",
    )
