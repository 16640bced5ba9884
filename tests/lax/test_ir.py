"""Control flow in the graph IR: the printed form, print/parse round trips (kernels
included), verify's rules (regions exist and agree, donation, in-place ownership), and
the passes on modules with branches and loops (verified after every pass)."""

import numpy as np
import pytest

import relaxjax as relax
import relaxjax.lax as lax
import relaxjax.numpy as rnp
from relaxjax import ops
from relaxjax.errors import VerifyError
from relaxjax.ir import (
    BlockBuilder,
    Call,
    Function,
    GlobalVar,
    PrimValue,
    TensorInfo,
    Tuple,
    Var,
    call_tir_inplace,
    is_control_call,
    module_to_text,
    parse_module,
    structural_equal,
    verify,
)
from relaxjax.ops.dynamic_slice import DynamicUpdateSliceAttrs
from relaxjax.ops.elementwise import AstypeAttrs
from relaxjax.passes import default_pipeline, eliminate_dead_code, lower_pipeline
from relaxjax.tir import parse_prim_func

N4 = relax.Tensor(("n", 4), "float32")


@relax.jit
def program(x: N4, k: relax.Tensor((), "int64")):
    def body(i, c):
        c = lax.cond(i % 2 == 0, lambda: rnp.tanh(c * 2.0 + 1.0), lambda: c + x)
        return lax.dynamic_update_slice(c, c[:1] * 0.0, (i, 0))

    y = lax.fori_loop(0, x.shape[0], body, x + 1.0)
    z, ys = lax.scan(lambda c, r: (c + r, c.sum()), x[0], x, reverse=True)
    w = lax.while_loop(lambda s: s[0] < k, lambda s: (s[0] + 1, s[1] * 0.5), (0, z))
    return y, ys, w[1], lax.switch(k, [lambda: y, lambda: x * 3.0])


def _roundtrip(mod) -> None:
    meta: list = []
    text = module_to_text(mod, meta=meta)
    parsed = parse_module(text, ops.registry(), meta=meta, parse_kernel=parse_prim_func)
    assert structural_equal(parsed, mod), text


def test_printed_form():
    text = module_to_text(program.trace(), locations=False)
    assert (
        'fori_loop(prim(0, "int64"), prim(n, "int64"), mod.body, (lv0,), (x,), '
        'out_info=Tuple(Tensor((n, 4), "float32")))' in text
    )
    assert "scan(mod.scan_body, (lv3,), (x,), (), length=n, reverse=True, out_info=" in text
    assert "while_loop(mod.while_cond, mod.while_body, (" in text
    assert "switch(k, (mod.branch0, mod.branch1), (" in text
    assert "switch(lv1, (mod.cond_false, mod.cond_true), (carry, c0), out_info=" in text
    assert (
        '@function(attrs={"donated": (1,)})\ndef body(i: Tensor((), "int64", weak=True), carry: '
        in text
    )


def test_every_pass_verifies_and_round_trips():
    traced = program.trace()
    _roundtrip(traced)
    for pipeline in (lower_pipeline(verify=True), default_pipeline(verify=True, library=True)):
        lowered = pipeline(traced)
        _roundtrip(lowered)
        assert len(lowered.graph_functions()) == len(traced.graph_functions()) == 9


def test_fusion_and_legalisation_stay_inside_regions():
    mod = default_pipeline(verify=True)(program.trace())
    cond_true = mod["cond_true"]
    binding, output = [b for blk in cond_true.body.blocks for b in blk.bindings]
    assert binding.value.args[0].name.startswith("fused_")  # multiply, add, tanh: one kernel
    main = mod["program"]
    controls = [
        b.value.op.name
        for blk in main.body.blocks
        for b in blk.bindings
        if is_control_call(b.value)
    ]
    assert controls == ["fori_loop", "scan", "while_loop", "switch"]


def test_values_on_the_reference_interpreter_match_llvm():
    from relaxjax.runtime import build_executable

    x = np.arange(12, dtype=np.float32).reshape(3, 4) / 10
    reference = build_executable(program.lower(), target="reference")
    for k in (0, 1, 3):
        expected = reference(x, np.int64(k))
        ours = program(x, np.int64(k))
        for a, b in zip(ours, expected):
            np.testing.assert_allclose(a, b, rtol=1e-6)
    assert program.cache_size() == 1


def test_dead_loops_and_their_regions_are_dropped():
    @relax.jit
    def f(x: N4):
        lax.fori_loop(0, 3, lambda i, c: c * 2.0, x)  # unused
        return x + 1.0

    mod = eliminate_dead_code(f.trace())
    assert list(mod.graph_functions()) == ["f"]


# --------------------------------------------------------------------------- verify


def _replace(mod, name, **fields):
    function = mod[name]
    params = fields.get("params", function.params)
    new = Function(
        params,
        fields.get("body", function.body),
        fields.get("ret_info", function.ret_info),
        function.name,
        fields.get("attrs", function.attrs_dict),
    )
    return mod.with_function(name, new)


def test_verify_rejects_a_missing_region():
    mod = program.trace()
    broken = mod.without("scan_body")
    with pytest.raises(VerifyError, match="callee-exists: .*scan_body is not a graph function"):
        verify(broken)


def test_verify_rejects_a_body_whose_carry_changes(roundtrip_every_module):
    @relax.jit
    def f(x: N4):
        return lax.fori_loop(0, 2, lambda i, c: c * 2.0, x)

    mod = f.trace()
    bb = BlockBuilder()  # a body returning the carry as float64
    i = Var("i", TensorInfo((), "int64"))
    c = Var("c", TensorInfo(("n", 4), "float32"))
    with bb.function("fori_body", [i, c], attrs={"donated": (1,)}):
        cast = bb.emit(Call(ops.get("astype"), [c], AstypeAttrs("float64")))
        bb.emit_func_output(Tuple([cast]))
    wrong = bb.finalize()["fori_body"]
    roundtrip_every_module.clear()  # a lone loop body
    with pytest.raises(
        VerifyError,
        match="control-consistent: .*fori_loop: carry 0 has dtype "
        "float32 but the region returns float64",
    ):
        verify(mod.with_function("fori_body", wrong))


def test_verify_rejects_donation_outside_loop_bodies():
    mod = program.trace()
    # a branch may not overwrite its operands
    with pytest.raises(
        VerifyError, match=r"control-consistent: .*branch0 donates parameters \[0\]"
    ):
        verify(_replace(mod, "branch0", attrs={"donated": (0,)}))
    # a loop body may donate its carries only, not what it closes over (x)
    with pytest.raises(
        VerifyError,
        match=r"body donates parameters \[1, 2\], but fori_loop "
        r"owns only \[1\]",
    ):
        verify(_replace(mod, "body", attrs={"donated": (1, 2)}))


def test_verify_rejects_a_direct_call_of_a_loop_body(roundtrip_every_module):
    bb = BlockBuilder()
    c = Var("c", TensorInfo(("n",), "float32"))
    with bb.function("body", [c], attrs={"donated": (0,)}):
        bb.emit_func_output(c)
    x = Var("x", TensorInfo(("n",), "float32"))
    with bb.function("main", [x]):
        y = bb.emit(Call(GlobalVar("body"), [x]))
        bb.emit_func_output(y)
    mod = bb.finalize()
    roundtrip_every_module.clear()  # malformed on purpose
    with pytest.raises(VerifyError, match="only a loop calls it"):
        verify(mod)


def _inplace_module(return_old: bool, target_param: bool):
    op = ops.get("dynamic_update_slice")
    attrs = DynamicUpdateSliceAttrs((True, True))
    x = Var("x", TensorInfo(("n", 4), "float32"))
    u = Var("u", TensorInfo((1, 4), "float32"))
    starts = [PrimValue(0), PrimValue(0)]
    infos = (x.info, u.info, starts[0].info, starts[1].info)
    kernel = op.lower_inplace(infos, attrs, x.info)
    bb = BlockBuilder()
    with bb.function("main", [x, u]):
        ref = bb.add_func(kernel, "dus_inplace")
        old = x if target_param else bb.emit(Call(ops.get("add"), [x, x]))
        new = bb.emit(call_tir_inplace(ref, [u, *starts], [old], x.info))
        bb.emit_func_output(Tuple([new, old]) if return_old else new)
    return bb.finalize()


def test_verify_checks_in_place_updates(roundtrip_every_module):
    verify(_inplace_module(return_old=False, target_param=False))
    with pytest.raises(
        VerifyError,
        match=r"inplace-owned: .*cannot update lv0 in place: it is "
        r"read after the update",
    ):
        verify(_inplace_module(return_old=True, target_param=False))
    with pytest.raises(
        VerifyError,
        match=r"cannot update x in place: its buffer is parameter x, "
        r"which the function does not own",
    ):
        verify(_inplace_module(return_old=False, target_param=True))
    _roundtrip(_inplace_module(return_old=False, target_param=False))
    roundtrip_every_module.clear()  # two of them are malformed on purpose


def test_modules_with_control_flow_pickle():
    import pickle

    for mod in (program.trace(), default_pipeline()(program.trace())):
        assert structural_equal(pickle.loads(pickle.dumps(mod)), mod)
