"""Elementwise TIR compiled by the LLVM backend against the reference interpreter.

Every binary and unary operator for every dtype where TIR defines it, every cast
between dtypes, selects, lets and data-dependent indices; random data including
signed zeros, infinities and NaN; random symbol values (hypothesis).
"""

from __future__ import annotations

import functools
import warnings

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from relaxjax import arith, dtypes, tir
from relaxjax.backends import build
from relaxjax.tir import Buffer, BufferStore, For, LetStmt, PrimFunc, Var
from relaxjax.tir.interpreter import run as reference

N, M = arith.syms("n m")
I, J = arith.syms("i j")
BINARY_OPS = ("+", "-", "*", "/", "//", "%", "min", "max", "==", "!=", "<", "<=", ">", ">=")
LOGIC_OPS = ("and", "or")


def random_array(dtype: str, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    """Values covering the interesting cases of ``dtype`` (specials for floats)."""
    numpy_dtype = dtypes.to_numpy(dtype)
    size = int(np.prod(shape))
    if dtype == "bool":
        return (rng.random(size) < 0.5).reshape(shape)
    if dtypes.is_floating(dtype):
        values = rng.standard_normal(size) * 8
        specials = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.5, -2.5])
        values[: min(size, len(specials))] = specials[: min(size, len(specials))]
        rng.shuffle(values)
        return values.astype(np.float32).astype(numpy_dtype).reshape(shape)
    info = np.iinfo(numpy_dtype)
    low, high = max(int(info.min), -120), min(int(info.max), 120)
    return rng.integers(low, high, size, endpoint=True).astype(numpy_dtype).reshape(shape)


def assert_same_values(got: np.ndarray, expected: np.ndarray) -> None:
    """Equal dtype, shape and values (NaN matches NaN; -0.0 matches 0.0)."""
    assert got.dtype == expected.dtype and got.shape == expected.shape
    if got.dtype == np.bool_ or dtypes.is_integer(dtypes.canonical(got.dtype)):
        np.testing.assert_array_equal(got, expected)
        return
    wide_got, wide_expected = got.astype(np.float64), expected.astype(np.float64)
    np.testing.assert_array_equal(np.isnan(wide_got), np.isnan(wide_expected))
    mask = ~np.isnan(wide_expected)
    np.testing.assert_array_equal(wide_got[mask], wide_expected[mask])


def _binary_cases() -> list[tuple[str, str]]:
    cases = []
    for dtype in dtypes.DTYPES:
        for op in BINARY_OPS + LOGIC_OPS:
            try:
                tir.binop(op, Buffer("A", (N,), dtype)[I], Buffer("B", (N,), dtype)[I])
            except (TypeError, ValueError):
                continue  # TIR does not define op on dtype
            cases.append((dtype, op))
    return cases


BINARY_CASES = _binary_cases()


def _kernel_name(*parts: str) -> str:
    symbols = {"+": "add", "-": "sub", "*": "mul", "/": "div", "//": "floordiv", "%": "mod"}
    symbols.update({"==": "eq", "!=": "ne", "<": "lt", "<=": "le", ">": "gt", ">=": "ge"})
    return "_".join(symbols.get(p, p) for p in parts)


def binary_func(dtype: str, op: str, rank: int = 1) -> PrimFunc:
    """``C[...] = A[...] op B[...]`` over a symbolic ``(n,)`` or ``(n, m)``."""
    shape, loops = ((N,), (I,)) if rank == 1 else ((N, M), (I, J))
    a, b = Buffer("A", shape, dtype), Buffer("B", shape, dtype)
    value = tir.binop(op, a[loops], b[loops])
    c = Buffer("C", shape, value.dtype)
    body = BufferStore(c, value, loops)
    for var, extent in reversed(list(zip(loops, shape))):
        body = For(var, 0, extent, "serial", body)
    return PrimFunc(_kernel_name("bin", dtype, op, str(rank)), (a, b, c), body)


def all_binary_func(dtype: str) -> PrimFunc:
    """``C_<op>[i] = A[i] op B[i]`` for every op defined on ``dtype``, in one loop."""
    a, b = Buffer("A", (N,), dtype), Buffer("B", (N,), dtype)
    ops = [op for d, op in BINARY_CASES if d == dtype]
    values = [tir.binop(op, a[I], b[I]) for op in ops]
    outputs = tuple(Buffer(_kernel_name("C", op), (N,), v.dtype) for op, v in zip(ops, values))
    stores = [BufferStore(c, v, (I,)) for c, v in zip(outputs, values)]
    body = For(I, 0, N, "serial", tir.seq(*stores))
    return PrimFunc(f"binary_{dtype}", (a, b, *outputs), body, num_outputs=len(outputs))


@functools.cache
def binary_kernels():
    """All binary ops, one kernel per dtype, compiled together as one module."""
    return build([all_binary_func(dtype) for dtype in dtypes.DTYPES])


@pytest.mark.parametrize(("dtype", "op"), BINARY_CASES)
def test_binary_op_matches_interpreter(dtype, op):
    rng = np.random.default_rng(len(BINARY_CASES) + BINARY_CASES.index((dtype, op)))
    a, b = random_array(dtype, (61,), rng), random_array(dtype, (61,), rng)
    if dtypes.is_integer(dtype) and op in ("//", "%"):
        b[b == 0] = 7  # integer division by zero is undefined in TIR
    position = [o for d, o in BINARY_CASES if d == dtype].index(op)
    func = all_binary_func(dtype)
    got = binary_kernels()[func.name](a, b)[position]
    assert_same_values(got, reference(func, a, b)[position])


def test_every_dtype_has_arithmetic_and_comparisons():
    covered = {dtype for dtype, op in BINARY_CASES if op == "<"}
    assert covered == set(dtypes.DTYPES) - {"bool"}
    assert ("bool", "and") in BINARY_CASES and ("bool", "==") in BINARY_CASES


@functools.cache
def rank2_kernel():
    return build(binary_func("float32", "*", rank=2))


@given(n=st.integers(0, 9), m=st.integers(0, 40), seed=st.integers(0, 2**16))
def test_symbol_values_bind_from_shapes(n, m, seed):
    rng = np.random.default_rng(seed)
    func = binary_func("float32", "*", rank=2)
    a, b = random_array("float32", (n, m), rng), random_array("float32", (n, m), rng)
    got = rank2_kernel()(a, b)
    assert got.shape == (n, m)
    assert_same_values(got, reference(func, a, b))


CAST_PAIRS = [(s, d) for s in dtypes.DTYPES for d in dtypes.DTYPES]


def cast_func(source: str) -> PrimFunc:
    """``C_<dest>[i] = cast(A[i], dest)`` for every dtype ``dest``, in one loop."""
    a = Buffer("A", (N,), source)
    outputs = tuple(Buffer(f"C_{dest}", (N,), dest) for dest in dtypes.DTYPES)
    stores = [BufferStore(c, tir.cast(a[I], c.dtype), (I,)) for c in outputs]
    body = For(I, 0, N, "vectorized", tir.seq(*stores))
    return PrimFunc(f"cast_from_{source}", (a, *outputs), body, num_outputs=len(outputs))


@functools.cache
def cast_kernels():
    return build([cast_func(source) for source in dtypes.DTYPES])


def _in_range_for(dest: str, values: np.ndarray) -> np.ndarray:
    """Float -> integer casts are undefined out of range and for NaN: keep them in range."""
    if not dtypes.is_integer(dest):
        return values
    info = np.iinfo(dtypes.to_numpy(dest))
    wide = values.astype(np.float64)
    wide = np.where(np.isfinite(wide), wide, 1.0)
    return np.clip(wide, max(info.min, -1e6), min(info.max, 1e6)).astype(values.dtype)


@pytest.mark.parametrize(("source", "dest"), CAST_PAIRS)
def test_cast_matches_interpreter(source, dest):
    rng = np.random.default_rng(CAST_PAIRS.index((source, dest)))
    values = random_array(source, (97,), rng)
    if dtypes.is_floating(source):
        values = _in_range_for(dest, values)
    func = cast_func(source)
    position = dtypes.DTYPES.index(dest)
    got = cast_kernels()[func.name](values)[position]
    assert_same_values(got, reference(func, values)[position])


def test_double_to_half_rounds_once_at_every_tie():
    # Halfway points between neighbouring float16 values (and their neighbours) are where
    # rounding through float32 would go wrong; numpy rounds float64 -> float16 directly.
    halves = np.arange(0, 0x7BFF, 7, dtype=np.uint16).view(np.float16)
    upper = np.nextafter(halves, np.float16(np.inf))
    ties = (halves.astype(np.float64) + upper.astype(np.float64)) / 2
    values = np.concatenate([ties, np.nextafter(ties, 0), np.nextafter(ties, np.inf), -ties])
    got = cast_kernels()["cast_from_float64"](values)[dtypes.DTYPES.index("float16")]
    np.testing.assert_array_equal(got.view(np.uint16), values.astype(np.float16).view(np.uint16))


def test_bfloat16_rounds_to_nearest_even_and_keeps_nan():
    bits = np.array([0x3F808000, 0x3F818000, 0x3F80C000, 0x7FC00001, 0xFF800000], np.uint32)
    values = bits.view(np.float32)
    got = cast_kernels()["cast_from_float32"](values)[dtypes.DTYPES.index("bfloat16")]
    expected = values.astype(ml_dtypes.bfloat16)
    np.testing.assert_array_equal(got[:3].view(np.uint16), expected[:3].view(np.uint16))
    assert np.isnan(got[3]) and got[4] == -np.inf


UNARY_CASES = [(d, "-") for d in dtypes.DTYPES if d != "bool"] + [("bool", "not")]


def unary_func(dtype: str, op: str) -> PrimFunc:
    a, c = Buffer("A", (N,), dtype), Buffer("C", (N,), dtype)
    body = For(I, 0, N, "serial", BufferStore(c, tir.unary(op, a[I]), (I,)))
    return PrimFunc(_kernel_name("unary", dtype, "neg" if op == "-" else op), (a, c), body)


@pytest.mark.parametrize(("dtype", "op"), UNARY_CASES)
def test_unary_op_matches_interpreter(dtype, op):
    func = unary_func(dtype, op)
    values = random_array(dtype, (33,), np.random.default_rng(3))
    assert_same_values(build(func)(values), reference(func, values))


def test_negating_a_float_flips_the_sign_of_zero():
    func = unary_func("float32", "-")
    got = build(func)(np.array([0.0, -0.0], np.float32))
    np.testing.assert_array_equal(np.signbit(got), [True, False])


def test_integer_division_by_zero_and_overflow_do_not_trap():
    # Undefined in TIR; the backend must not crash (x86 idiv traps) and gives numpy's values.
    a = np.array([7, -7, np.iinfo(np.int32).min, 5, -9], np.int32)
    b = np.array([0, 0, -1, -1, 4], np.int32)
    ops = [o for d, o in BINARY_CASES if d == "int32"]
    outputs = binary_kernels()["binary_int32"](a, b)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        np.testing.assert_array_equal(outputs[ops.index("//")], np.floor_divide(a, b))
        np.testing.assert_array_equal(outputs[ops.index("%")], np.mod(a, b))


def test_select_evaluates_both_and_if_then_else_only_the_chosen_operand():
    a, c = Buffer("A", (N,), "float32"), Buffer("C", (N,), "float32")
    positive = a[I] > tir.const(0.0, "float32")
    value = tir.select(positive, tir.sqrt(a[I]), -a[I]) + tir.if_then_else(
        positive, a[I], tir.const(1.0, "float32")
    )
    func = PrimFunc("choose", (a, c), For(I, 0, N, "serial", BufferStore(c, value, (I,))))
    values = random_array("float32", (50,), np.random.default_rng(5))
    assert_same_values(build(func)(values), reference(func, values))


def test_if_then_else_guards_an_out_of_bounds_gather(isolated):
    # idx holds far out-of-range positions where mask is false: loading them would fault,
    # so this runs in a child process.
    output = isolated("""
        import numpy as np
        from relaxjax import arith, tir
        from relaxjax.backends import build
        from relaxjax.tir import Buffer, BufferStore, For, PrimFunc
        n, m, i = arith.syms("n m i")
        a, idx = Buffer("A", (n,), "float64"), Buffer("idx", (m,), "int64")
        mask, c = Buffer("mask", (m,), "bool"), Buffer("C", (m,), "float64")
        value = tir.if_then_else(mask[i], a[idx[i]], tir.const(-1.0, "float64"))
        body = For(i, 0, m, "serial", BufferStore(c, value, (i,)))
        kernel = build(PrimFunc("guarded_gather", (a, idx, mask, c), body))
        data = np.arange(10, dtype=np.float64) * 1.5
        positions = np.array([3, 1 << 40, 9, -(1 << 40), 0], np.int64)
        guard = np.array([True, False, True, False, True])
        print(kernel(data, positions, guard).tolist())
    """)
    assert output.strip().splitlines()[-1] == "[4.5, -1.0, 13.5, -1.0, 0.0]"


def test_data_dependent_index_with_narrow_integer_types():
    a = Buffer("A", (N, 3), "float32")
    rows, cols = Buffer("rows", (M,), "uint8"), Buffer("cols", (M,), "int8")
    c = Buffer("C", (M,), "float32")
    body = For(I, 0, M, "serial", BufferStore(c, a[rows[I], cols[I]], (I,)))
    func = PrimFunc("gather2d", (a, rows, cols, c), body)
    data = np.arange(600, dtype=np.float32).reshape(200, 3)
    r = np.array([0, 199, 150, 7], np.uint8)
    k = np.array([2, 0, 1, 2], np.int8)
    assert_same_values(build(func)(data, r, k), reference(func, data, r, k))
    np.testing.assert_array_equal(build(func)(data, r, k), data[r, k])


def test_let_binds_values_and_index_symbols():
    a, c = Buffer("A", (N,), "float16"), Buffer("C", (N,), "float16")
    x, k = Var("x", "float16"), arith.sym("k")
    store = BufferStore(c, x * x + tir.cast(tir.IndexExpr(k), "float16"), (I,))
    body = For(I, 0, N, "serial", LetStmt(x, a[I], LetStmt(k, tir.IndexExpr(I * 2), store)))
    func = PrimFunc("lets", (a, c), body)
    values = random_array("float16", (21,), np.random.default_rng(8))
    assert_same_values(build(func)(values), reference(func, values))


def test_fast_math_stays_close_to_ieee():
    func = binary_func("float32", "/", rank=2)
    rng = np.random.default_rng(11)
    a = rng.standard_normal((4, 64)).astype(np.float32)
    b = rng.uniform(0.5, 2, (4, 64)).astype(np.float32)
    fast = build(func, fast_math=True)
    np.testing.assert_allclose(fast(a, b), a / b, rtol=1e-6)
