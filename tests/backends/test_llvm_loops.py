"""Loops, blocks, reductions, allocations and index math, against the reference interpreter.

Parallel loops are in ``test_llvm_parallel.py`` (they run in child processes).
"""

from __future__ import annotations

import functools
import re

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from relaxjax import arith, dtypes, tir
from relaxjax.backends import build
from relaxjax.backends.llvm.inspect import source
from relaxjax.errors import LoweringError
from relaxjax.tir import (
    Allocate,
    Block,
    BlockRealize,
    Buffer,
    BufferStore,
    For,
    IfThenElse,
    IndexExpr,
    IterVar,
    PrimFunc,
    te,
)
from relaxjax.tir.interpreter import run as reference

N, M, K = arith.syms("n m K")
I, J, J2 = arith.syms("i j jj")


def random(shape, dtype="float32", seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def function_text(ir_text: str, symbol: str) -> str:
    """The text of the LLVM function ``symbol`` (quoted or not) in IR text."""
    match = re.search(rf'define [^@\n]*@"?{re.escape(symbol)}"?\(.*?\n}}', ir_text, re.S)
    assert match, f"no function {symbol} in the IR"
    return match.group(0)


def impl_function(ir_text: str, kernel: str) -> str:
    """A kernel's impl function as emitted (before inlining)."""
    return function_text(ir_text, f"relaxjax_{kernel}.impl")


def optimized_kernel(func: PrimFunc) -> str:
    """The kernel's exported function after O3 (the impl is inlined into it)."""
    return function_text(source(func, "optimized"), f"relaxjax_{func.name}")


# --- reductions through the compute builder (blocks with init) ---------------------------


REDUCERS = {"sum": te.sum, "prod": te.prod, "max": te.max, "min": te.min}


@pytest.mark.parametrize("reducer", sorted(REDUCERS))
@pytest.mark.parametrize("dtype", ["float32", "int32", "bfloat16"])
def test_reduction_over_a_symbolic_axis(reducer, dtype):
    a = te.placeholder((N, K), dtype, "A")
    k = te.reduce_axis(K, "k")
    b = te.compute((N,), lambda i: REDUCERS[reducer](a[i, k], axis=k), name="B")
    func = te.create_prim_func([a, b], name=f"reduce_{reducer}_{dtype}")
    data = (random((6, 9), "float32", 1) * 2).astype(dtypes.to_numpy(dtype))
    got = build(func)(data)
    np.testing.assert_allclose(
        got.astype(np.float64), reference(func, data).astype(np.float64), rtol=1e-6
    )


def test_reduction_over_an_empty_axis_runs_no_block():
    # The init of a block runs inside the reduction loop (TVM semantics): with K == 0
    # the destination is left as it was, in the interpreter and in compiled code.
    a = te.placeholder((N, K), "float32", "A")
    k = te.reduce_axis(K, "k")
    b = te.compute((N,), lambda i: te.max(a[i, k], axis=k), name="B")
    func = te.create_prim_func([a, b], name="empty_max")
    data = np.zeros((3, 0), np.float32)
    got, expected = np.full(3, 5.0, np.float32), np.full(3, 5.0, np.float32)
    build(func)(data, got)
    reference(func, data, expected)
    np.testing.assert_array_equal(got, expected)


def test_argmax_returns_values_and_indices():
    a = te.placeholder((N, K), "float32", "A")
    k = te.reduce_axis(K, "k")
    value, index = te.compute((N,), lambda i: te.argmax((a[i, k], k), axis=k), name="B")
    func = te.create_prim_func([a, value, index], name="argmax_rows")
    data = random((5, 17), seed=2)
    got_value, got_index = build(func)(data)
    np.testing.assert_array_equal(got_index, np.argmax(data, axis=1))
    np.testing.assert_array_equal(got_value, data.max(axis=1))


@given(n=st.integers(0, 12), m=st.integers(0, 12), k=st.integers(1, 12))
def test_matmul_for_random_symbol_values(n, m, k):
    a, b = te.placeholder((N, K), "float32", "A"), te.placeholder((K, M), "float32", "B")
    r = te.reduce_axis(K, "r")
    c = te.compute((N, M), lambda i, j: te.sum(a[i, r] * b[r, j], axis=r), name="C")
    func = te.create_prim_func([a, b, c], name="matmul")
    x, y = random((n, k), seed=n), random((k, m), seed=m)
    got = build(func)(x, y)
    np.testing.assert_allclose(got, reference(func, x, y), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got, x @ y, rtol=1e-5, atol=1e-5)


def test_two_stages_with_an_intermediate_buffer_on_the_heap():
    a = te.placeholder((N, K), "float64", "A")
    k = te.reduce_axis(K, "k")
    b = te.compute((N,), lambda i: te.sum(a[i, k] * 2.0, axis=k), name="B")
    c = te.compute((N,), lambda i: tir.exp(b[i]) + 1.0, name="C")
    func = te.create_prim_func([a, c], name="two_stages")
    data = random((7, 5), "float64", 3)
    np.testing.assert_allclose(build(func)(data), reference(func, data), rtol=1e-13)
    prologue = impl_function(source(func, "ir"), "two_stages").split("body:")[0]
    assert '@"aligned_alloc"' in prologue  # (n,) scratch hoisted to the function's prologue


def test_block_predicate_guards_a_split_loop():
    # for io, ii in (ceil(n / 4), 4): block C with v = io * 4 + ii, predicate v < n
    io, ii, v = arith.syms("io ii v")
    a, c = Buffer("A", (N,), "float32"), Buffer("C", (N,), "float32")
    block = Block("C", (IterVar(v, N),), (), (), None, BufferStore(c, a[v] * 3.0, (v,)))
    realize = BlockRealize((io * 4 + ii,), IndexExpr(io * 4 + ii) < IndexExpr(N), block)
    body = For(io, 0, (N + 3) // 4, "serial", For(ii, 0, 4, "unrolled", realize))
    func = PrimFunc("split_predicate", (a, c), body)
    for n in (0, 1, 4, 9):
        data = random((n,), seed=n)
        out = np.full(n, 7.0, np.float32)
        build(func)(data, out)
        np.testing.assert_array_equal(out, reference(func, data))


# --- loop kinds -------------------------------------------------------------------------


def scale_func(kind: str, extent, name: str) -> PrimFunc:
    a, c = Buffer("A", (N, 16), "float32"), Buffer("C", (N, 16), "float32")
    inner = For(J, 0, extent, kind, BufferStore(c, a[I, J] * 2.0 + 1.0, (I, J)))
    return PrimFunc(name, (a, c), For(I, 0, N, "serial", inner))


def test_vectorized_loop_becomes_vector_code():
    func = scale_func("vectorized", 16, "vectorized16")
    optimized = optimized_kernel(func)
    assert re.search(r"<(8|16) x float>", optimized)
    data = random((3, 16))
    np.testing.assert_array_equal(build(func)(data), reference(func, data))


def test_vectorized_symbolic_loop_carries_the_vectorize_hint():
    a, c = Buffer("A", (N,), "float16"), Buffer("C", (N,), "float16")
    func = PrimFunc(
        "vec_sym", (a, c), For(I, 0, N, "vectorized", BufferStore(c, a[I] * a[I], (I,)))
    )
    assert '!"llvm.loop.vectorize.enable", i1 1' in source(func, "ir")
    assert re.search(r"<\d+ x half>", optimized_kernel(func))
    data = random((1001,), "float16")
    np.testing.assert_array_equal(build(func)(data), reference(func, data))


def test_unrolled_constant_loop_is_emitted_once_per_iteration():
    func = scale_func("unrolled", 16, "unrolled16")
    impl = impl_function(source(func, "ir"), "unrolled16")
    assert impl.count("store float") == 16
    assert "j.header" not in impl
    data = random((2, 16))
    np.testing.assert_array_equal(build(func)(data), reference(func, data))


def test_unrolled_symbolic_loop_carries_the_unroll_hint():
    a, c = Buffer("A", (N,), "int16"), Buffer("C", (N,), "int16")
    func = PrimFunc(
        "unroll_sym", (a, c), For(I, 0, N, "unrolled", BufferStore(c, a[I] + a[I], (I,)))
    )
    assert '!"llvm.loop.unroll.enable"' in source(func, "ir")
    data = np.arange(-50, 50, dtype=np.int16)
    np.testing.assert_array_equal(build(func)(data), data * 2)


def test_loop_with_symbolic_start():
    a, c = Buffer("A", (N,), "float64"), Buffer("C", (N,), "float64")
    s = arith.sym("s")
    body = For(I, s, N - s, "serial", BufferStore(c, a[I] + 1.0, (I,)))
    func = PrimFunc("offset_loop", (a, c), body, scalar_params=(s,))
    data = random((10,), "float64")
    out = np.zeros(10)
    build(func)(data, out, s=3)
    expected = np.zeros(10)
    reference(func, data, expected, s=3)
    np.testing.assert_array_equal(out, expected)


def test_thread_binding_is_refused_on_cpu():
    a, c = Buffer("A", (N,), "float32"), Buffer("C", (N,), "float32")
    body = For(I, 0, N, "thread_binding", BufferStore(c, a[I], (I,)), thread_tag="threadIdx.x")
    func = PrimFunc("gpu_only", (a, c), body)
    with pytest.raises(LoweringError, match=r"gpu_only.*loop i is bound to threadIdx.x"):
        build(func)


def test_block_iterators_without_a_realize_are_refused():
    v = arith.sym("v")
    c = Buffer("C", (4,), "float32")
    block = Block("lonely", (IterVar(v, 4),), (), (), None, BufferStore(c, 1.0, (0,)))
    func = PrimFunc("bare_block", (c,), block)
    with pytest.raises(LoweringError, match="block 'lonely' must be inside a BlockRealize"):
        build(func)


# --- index math -------------------------------------------------------------------------


S, D = arith.Sym("s", lower=None), arith.Sym("d", lower=None)


@functools.cache
def index_math_func() -> PrimFunc:
    a, c = Buffer("A", (N,), "int64"), Buffer("C", (M, 3), "int64")
    first = (I * 7 + S) % N
    second = ((I - S) // D) % N
    third = (I + S) % D + (I - S) // 5 * D
    stores = tir.seq(
        BufferStore(c, a[first], (I, 0)),
        BufferStore(c, a[second], (I, 1)),
        BufferStore(c, IndexExpr(third), (I, 2)),
    )
    return PrimFunc("index_math", (a, c), For(I, 0, M, "serial", stores), scalar_params=(S, D))


@functools.cache
def index_math_kernel():
    return build(index_math_func())


@given(
    n=st.integers(1, 20),
    m=st.integers(0, 20),
    s=st.integers(-60, 60),
    d=st.integers(-7, 7).filter(lambda x: x != 0),
)
def test_symbolic_floordiv_and_mod_follow_python(n, m, s, d):
    func = index_math_func()
    kernel = index_math_kernel()
    data = np.arange(n, dtype=np.int64) * 10
    out = np.zeros((m, 3), np.int64)
    assert kernel(data, out, s=s, d=d) is None  # destination passing
    expected = np.array(
        [
            [data[(i * 7 + s) % n], data[((i - s) // d) % n], (i + s) % d + (i - s) // 5 * d]
            for i in range(m)
        ],
        np.int64,
    ).reshape(m, 3)
    np.testing.assert_array_equal(out, expected)
    np.testing.assert_array_equal(out, reference(func, data, np.zeros((m, 3), np.int64), s=s, d=d))


# --- statements and local buffers -------------------------------------------------------


def test_if_then_else_statement():
    a, c = Buffer("A", (N,), "int32"), Buffer("C", (N,), "int32")
    body = For(
        I,
        0,
        N,
        "serial",
        IfThenElse(
            a[I] % 2 == tir.const(0, "int32"),
            BufferStore(c, a[I] // 2, (I,)),
            BufferStore(c, a[I] * 3 + 1, (I,)),
        ),
    )
    func = PrimFunc("collatz", (a, c), body)
    data = np.arange(-20, 20, dtype=np.int32)
    np.testing.assert_array_equal(build(func)(data), reference(func, data))


def _staged_func(name: str, tmp: Buffer) -> PrimFunc:
    """C[i, :] = reversed(A[i, :] * 2) through the temporary ``tmp`` (one row)."""
    a, c = Buffer("A", (N, M), "float32"), Buffer("C", (N, M), "float32")
    fill = For(J, 0, M, "serial", BufferStore(tmp, a[I, J] * 2.0, (J,)))
    drain = For(J2, 0, M, "serial", BufferStore(c, tmp[M - 1 - J2], (I, J2)))
    body = For(I, 0, N, "serial", Allocate(tmp, tir.seq(fill, drain)))
    return PrimFunc(name, (a, c), body)


def test_allocations_pick_stack_prologue_heap_or_in_place_heap():
    data = random((4, 6), seed=4)
    expected = (data * 2)[:, ::-1]
    stack = _staged_func("on_stack", Buffer("T", (64,), "float32", scope="local"))
    hoisted = _staged_func("on_heap", Buffer("T", (M,), "float32", scope="local"))
    # The size depends on the enclosing loop variable i: allocated where it stands.
    per_row = _staged_func("in_place", Buffer("T", (M + I,), "float32", scope="local"))
    for func in (stack, hoisted, per_row):
        np.testing.assert_array_equal(build(func)(data), expected)
        np.testing.assert_array_equal(reference(func, data), expected)
    ir_text = source([stack, hoisted, per_row], "ir")
    assert "alloca float, i64 64" in impl_function(ir_text, "on_stack")
    prologue, body = impl_function(ir_text, "on_heap").split("body:", 1)
    assert '@"aligned_alloc"' in prologue and '@"aligned_alloc"' not in body
    assert '@"aligned_alloc"(i64 64, ' in prologue  # heap buffers start on cache lines
    prologue, body = impl_function(ir_text, "in_place").split("body:", 1)
    assert '@"aligned_alloc"' in body and '@"free"' in body


def test_a_failed_allocation_raises_memory_error(isolated):
    # In a child: a wrong size computation here would corrupt the heap. Data-dependent
    # positions keep LLVM from eliding the allocation. 2**61 + 1 float64 elements is a
    # byte count that wraps to 8 in 64 bits: it must fail, not allocate 8 bytes.
    isolated("""
        import numpy as np, pytest
        from relaxjax import arith, tir
        from relaxjax.backends import build
        from relaxjax.tir import Allocate, Buffer, BufferStore, PrimFunc
        big = arith.sym("big")
        tmp = Buffer("T", (big,), "float64", scope="local")
        a, w, c = Buffer("A", (1,), "float64"), Buffer("W", (2,), "int64"), Buffer("C", (1,),
                                                                                    "float64")
        body = Allocate(tmp, tir.seq(BufferStore(tmp, a[0], (w[0],)),
                                     BufferStore(c, tmp[w[1]], (0,))))
        kernel = build(PrimFunc("too_big", (a, w, c), body, scalar_params=(big,)))
        positions = np.array([3, 3], np.int64)
        assert kernel(np.array([2.5]), positions, big=4)[0] == 2.5
        for size in (1 << 60, (1 << 61) + 1):
            with pytest.raises(MemoryError, match="kernel too_big could not allocate"):
                kernel(np.array([2.5]), positions, big=size)
    """)


def test_strided_local_buffer():
    a, c = Buffer("A", (N, 4), "float32"), Buffer("C", (N, 4), "float32")
    padded = Buffer("P", (4, 4), "float32", strides=(5, 1), scope="local")
    fill = For(J, 0, 4, "serial", BufferStore(padded, a[I, J], (J, 3 - J)))
    drain = For(J2, 0, 4, "serial", BufferStore(c, padded[J2, 3 - J2] + 1.0, (I, J2)))
    func = PrimFunc(
        "padded", (a, c), For(I, 0, N, "serial", Allocate(padded, tir.seq(fill, drain)))
    )
    data = random((3, 4), seed=6)
    np.testing.assert_array_equal(build(func)(data), data + 1)


def test_size_zero_dimensions_run_no_iterations():
    a = te.placeholder((N, M), "float32", "A")
    b = te.compute((N, M), lambda i, j: a[i, j] + 1.0, name="B")
    func = te.create_prim_func([a, b], name="plus_one")
    for shape in ((0, 5), (5, 0), (0, 0)):
        got = build(func)(np.zeros(shape, np.float32))
        assert got.shape == shape


def test_evaluate_is_a_no_op_and_a_block_scopes_its_buffers():
    a, c = Buffer("A", (N,), "float32"), Buffer("C", (N,), "float32")
    tmp = Buffer("T", (1,), "float32", scope="local")
    v = arith.sym("v")
    step = tir.seq(
        tir.Evaluate(a[v] * 2.0),
        BufferStore(tmp, a[v] + 1.0, (0,)),
        BufferStore(c, tmp[0] * tmp[0], (v,)),
    )
    scoped = Block("scratch", (IterVar(v, N),), (), (), None, step, alloc_buffers=(tmp,))
    realize = BlockRealize((I,), True, scoped)
    func = PrimFunc("block_scope", (a, c), For(I, 0, N, "serial", realize))
    data = random((9,), seed=9)
    np.testing.assert_array_equal(build(func)(data), reference(func, data))
    np.testing.assert_array_equal(build(func)(data), (data + 1) ** 2)
