"""dispatch_library: float matmuls become call_extern of numpy's BLAS, visible in the IR."""

import numpy as np
import pytest
from pass_fakes import SCALE, ScaleAttrs, module, var

from relaxjax import arith, ops
from relaxjax.ir import CALL_EXTERN, Call, ExternDecl, ExternFunc, verify
from relaxjax.passes import default_pipeline, dispatch_library, legalize
from relaxjax.runtime import build_executable

n, m = arith.syms("n m")
MATMUL = ops.get("matmul")


def values(mod):
    return [b.value for block in mod["main"].body.blocks for b in block.bindings]


def mlp():
    x, w1, w2 = var("x", (n, 8)), var("w1", (8, 16)), var("w2", (16, 4))

    def body(bb, x, w1, w2):
        h = bb.call(MATMUL, [x, w1])  # a temporary: the library writes into the arena
        h = bb.call(SCALE, [h], ScaleAttrs(0.5))
        return bb.call(MATMUL, [h, w2])

    return module([x, w1, w2], body)


def test_float_matmuls_become_library_calls():
    mod = dispatch_library(mlp())
    verify(mod)
    calls = [v for v in values(mod) if isinstance(v, Call)]
    assert [c.op is CALL_EXTERN for c in calls] == [True, False, True]
    assert calls[0].args[0] == ExternFunc("numpy.matmul")
    assert mod.externs() == {"numpy_matmul": ExternDecl("numpy_matmul", "numpy.matmul")}
    assert 'call_extern(extern("numpy.matmul"), (x, w1)' in str(mod)


@pytest.mark.parametrize("rows", [0, 1, 7])
def test_library_calls_run_with_temporaries(rows):
    rng = np.random.default_rng(rows)
    x = rng.standard_normal((rows, 8)).astype(np.float32)
    w1 = rng.standard_normal((8, 16)).astype(np.float32)
    w2 = rng.standard_normal((16, 4)).astype(np.float32)
    exe = build_executable(mlp())  # library=True by default
    assert "_extern_" in exe.source and "arena_address)" in exe.source
    np.testing.assert_allclose(exe(x, w1, w2)[0], (x @ w1) * 0.5 @ w2, rtol=1e-5, atol=1e-5)


def test_the_default_pipeline_keeps_kernels_unless_asked():
    plain = default_pipeline("llvm")
    assert "dispatch_library" not in str(plain)
    assert "dispatch_library" in str(default_pipeline("llvm", library=True))
    assert "dispatch_library" not in str(default_pipeline("cuda", library=True))


@pytest.mark.parametrize(
    "a, b",
    [
        (("int32", (n, 8)), ("int32", (8, 4))),  # integers: no BLAS
        (("float32", (n, 8)), ("float64", (8, 4))),  # mixed dtypes
        (("float16", (n, 8)), ("float16", (8, 4))),
    ],
)
def test_other_matmuls_stay_op_calls(a, b):
    x, w = var("x", a[1], a[0]), var("w", b[1], b[0])
    mod = module([x, w], lambda bb, x, w: bb.call(MATMUL, [x, w]))
    assert dispatch_library(mod) is mod


def test_unproven_relations_stay_checked():
    x, y = var("x", (n, 8)), var("y", (m, 4))
    traced = module([x, y], lambda bb, x, y: bb.call(MATMUL, [x, y]))
    (call,) = [v for v in values(traced) if isinstance(v, Call)]
    assert call.checks  # 8 == m is checked at run time
    mod = dispatch_library(traced)
    (extern,) = [v for v in values(mod) if isinstance(v, Call)]
    assert extern.op is CALL_EXTERN and extern.checks == call.checks
    exe = build_executable(mod)
    with pytest.raises(ValueError, match="contraction dims must match"):
        exe(np.ones((2, 8), np.float32), np.ones((5, 4), np.float32))
    assert legalize(mod).kernels() == {}  # nothing left to lower


def test_coarse_results_stay_op_calls():
    x, y = var("x", (n, 2, 3)), var("y", (m, 3, 4))  # batch dims n and m may broadcast
    mod = module([x, y], lambda bb, x, y: bb.call(MATMUL, [x, y]))
    (call,) = [v for v in values(mod) if isinstance(v, Call)]
    assert call.info.shape is None
    assert dispatch_library(mod) is mod
