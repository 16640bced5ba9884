"""legalize: op calls become call_tir of shared, shape-generic kernels named after their op."""

import numpy as np
import pytest
from pass_fakes import ADD, AXPY, OPAQUE, SCALE, ScaleAttrs, module, var

from relaxjax import arith
from relaxjax.errors import LoweringError
from relaxjax.ir import (
    CALL_TIR,
    Call,
    CallTIRAttrs,
    GlobalVar,
    IRModule,
    PrimValue,
    ShapeExpr,
    TensorInfo,
    verify,
)
from relaxjax.passes import LegalizedAttrs, legalize
from relaxjax.runtime import build_executable

n, m = arith.syms("n m")


def calls(mod, fname="main"):
    return [
        b.value
        for block in mod[fname].body.blocks
        for b in block.bindings
        if isinstance(b.value, Call)
    ]


def two_layers():
    x, w = var("x", (n, 4)), var("w", (n, 4))

    def body(bb, x, w):
        h = x
        for _ in range(2):  # identical "layers": each an add and a scale
            h = bb.call(ADD, [h, w])
            h = bb.call(SCALE, [h], ScaleAttrs(3.0))
        return h

    return module([x, w], body)


def test_every_op_call_becomes_call_tir_and_kernels_are_shared():
    mod = legalize(two_layers())
    verify(mod)
    assert all(c.op is CALL_TIR for c in calls(mod))
    assert sorted(mod.kernels()) == ["fake_add", "fake_scale"]
    callees = [c.args[0].name for c in calls(mod)]
    assert callees == ["fake_add", "fake_scale", "fake_add", "fake_scale"]
    for call in calls(mod):
        assert type(call.attrs) is CallTIRAttrs and call.attrs.out_info == call.info


def test_kernels_and_graph_print_together():
    text = str(legalize(two_layers()))
    assert "# kernel fake_add" in text and "# kernel fake_scale" in text
    assert "@function\ndef main(" in text
    assert (
        'lv0: Tensor((n, 4), "float32") = call_tir(mod.fake_add, (x, w), '
        'out_info=Tensor((n, 4), "float32"))'
    ) in text


def test_different_kernels_of_one_op_get_suffixes():
    x, y = var("x", (n, 4)), var("y", (n,))
    mod = legalize(
        module(
            [x, y],
            lambda bb, x, y: bb.emit(
                __import__("relaxjax.ir", fromlist=["Tuple"]).Tuple(
                    [
                        bb.call(SCALE, [x], ScaleAttrs(2.0)),
                        bb.call(SCALE, [y], ScaleAttrs(2.0)),
                        bb.call(SCALE, [x], ScaleAttrs(5.0)),
                        bb.call(SCALE, [x], ScaleAttrs(2.0)),
                    ]
                )
            ),
        )
    )
    verify(mod)
    assert sorted(mod.kernels()) == ["fake_scale", "fake_scale_1", "fake_scale_2"]
    assert [c.args[0].name for c in calls(mod)] == [
        "fake_scale",
        "fake_scale_1",
        "fake_scale_2",
        "fake_scale",
    ]
    for name, kernel in mod.kernels().items():
        assert kernel.name == name


def test_a_kernel_name_never_shadows_a_function():
    x = var("x", (n,))
    mod = legalize(
        module([x], lambda bb, x: bb.call(SCALE, [x], ScaleAttrs(2.0)), name="fake_scale")
    )
    verify(mod)
    assert list(mod.kernels()) == ["fake_scale_1"]
    assert "fake_scale" in mod.graph_functions()


def test_checks_are_kept_and_coarse_results_name_their_op():
    x, y = var("x", (n,)), var("y", (m,))
    traced = module([x, y], lambda bb, x, y: bb.call(ADD, [x, y]))
    (op_call,) = calls(traced)
    assert op_call.checks and op_call.info.shape is None
    mod = legalize(traced)
    verify(mod)
    (call,) = calls(mod)
    assert call.checks == op_call.checks
    assert isinstance(call.attrs, LegalizedAttrs)
    assert call.attrs.op_name == "fake_add" and call.attrs.op_attrs == ()
    assert call.attrs.arg_infos == (TensorInfo((n,)), TensorInfo((m,)))
    assert 'op_name="fake_add"' in str(mod)


def test_op_attributes_are_recorded_as_printable_pairs():
    from relaxjax.passes.legalize import op_attrs_items

    assert op_attrs_items(ScaleAttrs(1.5)) == (("factor", 1.5),)
    assert op_attrs_items(None) == ()


def test_scalar_operands_follow_the_kernel_signature():
    x = var("x", (n,))
    mod = legalize(module([x], lambda bb, x: bb.call(AXPY, [x, PrimValue(2.0, "float32")])))
    verify(mod)
    (call,) = calls(mod)
    assert len(call.args[1].fields) == 2  # the 0-d scalar is a kernel input
    exe = build_executable(mod)
    np.testing.assert_allclose(exe(np.arange(3, dtype=np.float32))[0], [1, 3, 5])


def test_missing_lowering_names_the_binding():
    x = var("x", (n,))
    with pytest.raises(LoweringError) as err:
        legalize(module([x], lambda bb, x: bb.call(OPAQUE, [x])))
    assert str(err.value).startswith("function main, binding lv0: op 'fake_opaque' has no lowering")


def test_legalize_is_idempotent_and_keeps_existing_kernels():
    once = legalize(two_layers())
    assert legalize(once) is once
    x, w = var("x", (n, 4)), var("w", (n, 4))
    mixed = module([x, w], lambda bb, x, w: bb.call(ADD, [x, w]), kernels=once.kernels())
    twice = legalize(mixed)
    assert sorted(twice.kernels()) == ["fake_add", "fake_scale"]  # reused, not fake_add_1


def test_kernels_serve_every_value_of_the_symbols():
    exe = build_executable(legalize(two_layers()))
    for rows in (0, 1, 5, 17):
        x = np.random.default_rng(rows).standard_normal((rows, 4)).astype(np.float32)
        w = np.ones((rows, 4), np.float32)
        expected = ((x + w) * 3 + w) * 3
        np.testing.assert_allclose(exe(x, w)[0], expected, rtol=1e-5)


def test_tir_vars_pass_graph_symbols_to_scalar_params():
    from relaxjax import tir

    class Shift(type(SCALE)):
        name = "fake_shift"
        Attrs = None

        def infer(self, args, attrs, ctx):
            return args[0]

        def lower(self, arg_infos, attrs, out_info):
            d0 = arith.Sym("d0")
            a = tir.placeholder((d0,), "float32", "A")
            c = tir.compute((d0,), lambda i: a[i] + tir.Cast("float32", tir.IndexExpr(n)), name="C")
            return tir.create_prim_func([a, c], name="shift", scalar_params=(n,))

    x = var("x", (n,))
    mod = legalize(module([x], lambda bb, x: bb.call(Shift(), [x])))
    verify(mod)
    (call,) = calls(mod)
    assert call.args[2] == ShapeExpr((n,))
    np.testing.assert_array_equal(build_executable(mod)(np.zeros(3, np.float32))[0], [3, 3, 3])


def test_modules_without_op_calls_are_returned_unchanged():
    mod = IRModule({})
    assert legalize(mod) is mod
    x = var("x", (n,))
    traced = module([x], lambda bb, x: x)
    assert legalize(traced) is traced


def test_the_kernel_of_a_call_tir_is_a_global_var():
    (call,) = calls(
        legalize(module([var("x", (n,))], lambda bb, x: bb.call(SCALE, [x], ScaleAttrs(1.0))))
    )
    assert call.args[0] == GlobalVar("fake_scale")
