"""dispatch_cublas: on the GPU, the matmuls cuBLAS takes become call_extern of it,
visible in the IR; the others stay generated kernels."""

from __future__ import annotations

import numpy as np
import pytest

import relaxjax as relax
import relaxjax.numpy as rnp
from relaxjax.backends.cuda import CudaTarget
from relaxjax.ir import CALL_EXTERN, CALL_TIR, Call, ExternDecl, verify
from relaxjax.passes import default_pipeline, dispatch_cublas
from relaxjax.passes.dispatch_cuda import cublas_symbol, cublas_transposes, is_device_library
from relaxjax.runtime import build_executable
from relaxjax.runtime.cuda import compile_program

T = relax.Tensor


def calls(mod):
    return [
        b.value
        for f in mod.graph_functions().values()
        for block in f.body.blocks
        for b in block.bindings
        if isinstance(b.value, Call)
    ]


def externs(mod):
    return [c.args[0].symbol for c in calls(mod) if c.op is CALL_EXTERN]


def lowered(fn, library=True, **specs):
    mod = relax.jit(fn).trace(**specs)
    return default_pipeline("cuda", verify=True, library=library)(mod)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
def test_float_matmuls_become_cublas_calls_with_their_checks(dtype):
    def fn(x, w):
        return rnp.tanh(x @ w)

    mod = lowered(fn, x=T(("n", "k"), dtype), w=T(("j", 16), dtype))
    assert externs(mod) == ["cublas.matmul"]
    (call,) = [c for c in calls(mod) if c.op is CALL_EXTERN]
    assert call.checks  # k == j stays a run-time check on the host
    assert mod.externs() == {"cublas_matmul": ExternDecl("cublas_matmul", "cublas.matmul")}
    text = str(mod)
    assert f'call_extern(extern("cublas.matmul"), (x, w), out_info=Tensor((n, 16), "{dtype}"))' in (
        text
    )
    assert "call_tir(mod.tanh" in text and "matmul" not in [c.args[0].name for c in calls(mod)
                                                           if c.op is CALL_TIR]  # fmt: skip


def test_transposed_operands_are_read_through_the_op_flags():
    def fn(x, w, y):
        return (x @ w.T, rnp.swapaxes(y, 1, 2) @ x.T, w.T @ w)

    mod = lowered(fn, x=T(("n", 8), "float32"), w=T((4, 8), "float32"), y=T((2, 8, 3), "float32"))
    assert sorted(externs(mod)) == [
        "cublas.matmul.transpose_a",
        "cublas.matmul.transpose_ab",
        "cublas.matmul.transpose_b",
    ]
    text = str(mod)
    assert 'extern("cublas.matmul.transpose_b"), (x, w)' in text
    assert 'extern("cublas.matmul.transpose_ab"), (y, x)' in text
    assert 'extern("cublas.matmul.transpose_a"), (w, w)' in text
    assert "transpose" not in [c.args[0].name for c in calls(mod) if c.op is CALL_TIR]


def test_a_transpose_read_elsewhere_stays_a_kernel():
    def fn(x, w):
        wt = w.T
        return x @ wt, wt * 2.0

    mod = lowered(fn, x=T(("n", 8), "float32"), w=T((4, 8), "float32"))
    assert externs(mod) == ["cublas.matmul.transpose_b"]
    assert any("transpose" in c.args[0].name for c in calls(mod) if c.op is CALL_TIR)


def test_a_swap_of_other_axes_is_not_folded():
    def fn(y, w):
        return rnp.transpose(y, (1, 0, 2)) @ w

    mod = lowered(fn, y=T((3, 2, 8), "float32"), w=T((8, 4), "float32"))
    assert externs(mod) == ["cublas.matmul"]
    assert "transpose" in [c.args[0].name for c in calls(mod) if c.op is CALL_TIR]


@pytest.mark.parametrize(
    "a, b, dispatched",
    [
        ((("b", "n", 8), "float32"), ((8, 4), "float32"), True),  # broadcast weights
        ((("n", 8), "float32"), (("b", 8, 4), "float32"), True),  # broadcast lhs
        ((("b", "n", 8), "float32"), (("b", 8, 4), "float32"), True),  # batched
        (((2, 1, "n", 8), "float32"), (((1, 3, 8, 4)), "float32"), False),  # cross broadcast
        (((8,), "float32"), ((8, 4), "float32"), True),  # vector @ matrix
        ((("n", 8), "float32"), ((8,), "float32"), True),  # matrix @ vector
        ((("n", 8), "int32"), ((8, 4), "int32"), False),
        ((("n", 8), "float16"), ((8, 4), "float32"), False),  # mixed: promoted first
    ],
)
def test_which_matmuls_go_to_cublas(a, b, dispatched):
    def fn(x, y):
        return x @ y

    mod = lowered(fn, x=T(*a), y=T(*b))
    assert bool(externs(mod)) == dispatched, str(mod)


def test_library_false_keeps_every_matmul_generated():
    def fn(x, w):
        return x @ w

    mod = lowered(fn, library=False, x=T(("n", 8), "float32"), w=T((8, 4), "float32"))
    assert externs(mod) == []
    assert "dispatch_cublas" in str(default_pipeline("cuda", library=True))
    assert "dispatch_cublas" not in str(default_pipeline("cuda"))


def test_the_compiled_gpu_program_calls_cublas_on_the_device():
    @relax.jit(target="cuda")
    def f(x: T(("n", 8), "float32"), w: T((4, 8), "float32")):
        return rnp.tanh(x @ w.T)

    program = compile_program(f.trace(), CudaTarget("sm_90"), assemble=False)
    text = str(program.module)
    assert 'call_extern(extern("cublas.matmul.transpose_b"), (x, w)' in text
    assert "relaxjax.cuda.to_host" not in text  # cuBLAS reads device memory: no copies
    assert program.host_kernels == ()
    assert "tanh" in f.ptx() and "matmul" not in f.ptx()
    off = relax.jit(f.fn, target="cuda", library=False)
    assert "cublas" not in str(compile_program(off.trace(), assemble=False, library=False).module)
    assert "matmul" in off.ptx()


def test_symbols_round_trip_and_name_device_libraries():
    for flags in [(False, False), (True, False), (False, True), (True, True)]:
        assert cublas_transposes(cublas_symbol(*flags)) == flags
        assert is_device_library(cublas_symbol(*flags))
    assert not is_device_library("numpy.matmul")
    with pytest.raises(ValueError, match="not a cuBLAS matmul symbol"):
        cublas_transposes("cublas.gemv")


def test_dispatch_keeps_a_module_well_formed_and_other_passes_running():
    def fn(x, w):
        return x @ w

    mod = dispatch_cublas(relax.jit(fn).trace(x=T(("n", 8), "float32"), w=T((8, 4), "float32")))
    verify(mod)
    assert externs(mod) == ["cublas.matmul"]


def test_cpu_library_false_generates_matmuls_but_keeps_factorisations():
    def fn(x: T((3, 3), "float64")):
        return rnp.linalg.inv(x @ x.T + 3.0 * rnp.eye(3))

    f = relax.jit(fn, library=False)
    x = np.random.default_rng(0).standard_normal((3, 3))
    np.testing.assert_allclose(np.asarray(f(x)), np.linalg.inv(x @ x.T + 3 * np.eye(3)), 1e-9)
    exe = build_executable(f.trace(), library=False)
    assert "numpy.matmul" not in str(exe.module) and "numpy.linalg.inv" in str(exe.module)
    assert "numpy.matmul" in str(build_executable(f.trace()).module)
