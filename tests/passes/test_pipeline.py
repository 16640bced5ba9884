"""default_pipeline: the passes relax.jit runs, each leaving a well-formed module."""

import pytest
from pass_fakes import ADD, SCALE, ScaleAttrs, module, var

from relaxjax import arith
from relaxjax.errors import VerifyError
from relaxjax.ir import CALL_TIR, Binding, Call, IRModule, Var
from relaxjax.passes import Pipeline, default_pipeline
from relaxjax.passes.walk import rebuild_function

n = arith.sym("n")


def program():
    x = var("x", (n, 8))

    def body(bb, x):
        bb.call(SCALE, [x], ScaleAttrs(7.0))  # dead
        h = bb.call(ADD, [x, x])
        return bb.call(SCALE, [h], ScaleAttrs(0.5))

    return module([x], body)


def test_default_pipeline_legalises_and_cleans():
    pipeline = default_pipeline("llvm", verify=True)
    assert str(pipeline) == (
        "Pipeline(eliminate_dead_code, fuse_attention, make_views, inplace_updates, legalize, "
        "dedup_kernels, "
        "eliminate_dead_code, fuse_ops, ScheduleKernels)"
    )
    mod = pipeline(program())
    # the dead scale is gone; the add and the live scale fuse into one scheduled kernel
    assert sorted(mod.kernels()) == ["fused_fake_add_fake_scale"]
    assert all("schedule_rule" in dict(k.attrs) for k in mod.kernels().values())
    values = [b.value for block in mod["main"].body.blocks for b in block.bindings]
    assert [v.op is CALL_TIR for v in values if isinstance(v, Call)] == [True]


def test_unknown_target():
    with pytest.raises(ValueError, match="unknown target 'tpu': expected one of llvm, cuda"):
        default_pipeline("tpu")


def test_verify_names_the_pass_that_broke_the_module():
    def break_it(mod: IRModule) -> IRModule:
        """Reads a variable that is never bound."""
        function = mod["main"]
        stray = Var("stray", function.params[0].info)
        block = function.body.blocks[0]
        bindings = list(block.bindings)
        first = bindings[0]
        bindings[0] = Binding(
            first.var, Call(first.value.op, (stray, stray), first.value.attrs, first.value.info)
        )
        return mod.with_function("main", rebuild_function(function, [bindings]))

    x = var("x", (n,))
    mod = module([x], lambda bb, x: bb.call(ADD, [x, x]))
    with pytest.raises(VerifyError, match="^pass break_it produced a malformed module: "):
        Pipeline((break_it,), verify=True)(mod)
    Pipeline((break_it,))(mod)  # without verify, nothing checks


def test_traced_programs_stay_well_formed_through_every_pass():
    import relaxjax as relax
    import relaxjax.nn as rnn

    @relax.jit
    def layer(
        x: relax.Tensor(("n", 8), "float32"),
        w: relax.Tensor((8, 8), "float32"),
        g: relax.Tensor((8,), "float32"),
        b: relax.Tensor((8,), "float32"),
    ):
        for _ in range(3):  # three identical "layers" share their kernels
            x = x + rnn.gelu(rnn.layer_norm(x, g, b) @ w)
        return x

    traced = layer.trace()
    mod = default_pipeline("llvm", verify=True)(traced)
    kernels = mod.kernels()
    # gelu and the residual add fuse; the three identical layers share every kernel
    assert sorted(kernels) == ["fused_gelu_add", "layer_norm", "matmul"]
    assert kernels["matmul"].name == "matmul"
    library = default_pipeline("llvm", verify=True, library=True)(traced)
    assert sorted(library.kernels()) == ["fused_gelu_add", "layer_norm"]
    assert list(library.externs()) == ["numpy_matmul"]
