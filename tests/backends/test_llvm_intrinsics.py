"""Every TIR math intrinsic, for every float dtype, compiled and compared with the interpreter.

Building a kernel that calls each intrinsic also proves that every LLVM intrinsic
and libm function it lowers to resolves when the JIT links the object.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest

from relaxjax import arith, dtypes, tir
from relaxjax.backends import build
from relaxjax.backends.llvm import intrinsics as llvm_intrinsics
from relaxjax.tir import INTRINSICS, Buffer, BufferStore, For, PrimFunc
from relaxjax.tir.interpreter import run as reference

N = arith.sym("n")
I = arith.sym("i")
FLOATS = ("float16", "bfloat16", "float32", "float64")
EXACT = {"floor", "ceil", "trunc", "round", "abs", "isnan", "isinf", "isfinite"}
FLOAT_INTRINSICS = sorted(name for name, spec in INTRINSICS.items() if spec.operands == "float")
ULPS = {"float16": 2.0**-10, "bfloat16": 2.0**-7, "float32": 2.0**-23, "float64": 2.0**-52}


def intrinsic_func(dtype: str) -> PrimFunc:
    """``C_<name>[i] = name(A[i], B[i], D[i] ...)`` for every float intrinsic."""
    a, b, d = (Buffer(name, (N,), dtype) for name in ("A", "B", "D"))
    stores, outputs = [], []
    for name in FLOAT_INTRINSICS + ["abs"]:
        args = (a[I], b[I], d[I])[: INTRINSICS[name].arity]
        value = tir.call(name, *args)
        out = Buffer(f"C_{name}", (N,), value.dtype)
        outputs.append(out)
        stores.append(BufferStore(out, value, (I,)))
    body = For(I, 0, N, "serial", tir.seq(*stores))
    return PrimFunc(f"intrinsics_{dtype}", (a, b, d, *outputs), body, num_outputs=len(outputs))


@functools.cache
def intrinsic_kernels():
    return build([intrinsic_func(dtype) for dtype in FLOATS])


def operands(dtype: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(FLOATS.index(dtype))
    a = np.concatenate(
        [
            rng.uniform(-3, 3, 200),
            rng.uniform(-1, 1, 60),
            rng.standard_normal(40) * 30,
            [0.0, -0.0, 0.5, -0.5, 1.5, 2.5, -2.5, np.inf, -np.inf, np.nan, 1e-30, 88.0],
        ]
    )
    b = np.concatenate([rng.uniform(-2, 2, len(a) - 12), [2, 3, -1, 0.5, 0, 1, 2, 2, 2, 1, 2, 2]])
    d = rng.standard_normal(len(a))
    numpy_dtype = dtypes.to_numpy(dtype)
    return tuple(x.astype(np.float32).astype(numpy_dtype) for x in (a, b, d))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", FLOAT_INTRINSICS)
def test_intrinsic_matches_interpreter(name, dtype):
    func = intrinsic_func(dtype)
    position = (FLOAT_INTRINSICS + ["abs"]).index(name)
    arrays = operands(dtype)
    got = intrinsic_kernels()[func.name](*arrays)[position]
    expected = reference(func, *arrays)[position]
    assert got.dtype == expected.dtype
    if expected.dtype == np.bool_:
        np.testing.assert_array_equal(got, expected)
        return
    wide_got, wide_expected = got.astype(np.float64), expected.astype(np.float64)
    np.testing.assert_array_equal(np.isnan(wide_got), np.isnan(wide_expected))
    finite = np.isfinite(wide_expected)
    np.testing.assert_array_equal(wide_got[~finite], wide_expected[~finite])
    tolerance = 0.0 if name in EXACT else 4 * ULPS[dtype]
    np.testing.assert_allclose(
        wide_got[finite], wide_expected[finite], rtol=tolerance, atol=tolerance
    )


@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "int64", "uint8"])
def test_integer_abs_wraps_like_numpy(dtype):
    a, c = Buffer("A", (N,), dtype), Buffer("C", (N,), dtype)
    func = PrimFunc(
        f"abs_{dtype}", (a, c), For(I, 0, N, "vectorized", BufferStore(c, tir.abs(a[I]), (I,)))
    )
    info = np.iinfo(dtypes.to_numpy(dtype))
    values = np.array([info.min, info.min + 1, info.max // 2, 0, 1, info.max])
    values = np.concatenate([values, -values[2:]] if info.min else [values]).astype(info.dtype)
    got = build(func)(values)
    np.testing.assert_array_equal(got, reference(func, values))
    np.testing.assert_array_equal(got, np.abs(values))


def test_backend_knows_every_tir_intrinsic():
    names = set(INTRINSICS)
    supported = llvm_intrinsics.FLOAT_FUNCTIONS | llvm_intrinsics.PREDICATES
    assert names <= supported | llvm_intrinsics.INTEGER_FUNCTIONS
    assert {n for n, s in INTRINSICS.items() if s.operands == "float"} <= supported


def test_libm_functions_without_an_llvm_intrinsic_are_called_by_name():
    text = __import__("relaxjax.backends.llvm.inspect", fromlist=["source"]).source(
        intrinsic_func("float32"), "ir"
    )
    for name in ("erff", "erfcf", "log1pf", "expm1f", "asinhf", "cbrtf", "hypotf"):
        assert f'@"{name}"' in text
    for name in ("llvm.log.f32", "llvm.tanh.f32", "llvm.copysign.f32", "llvm.ldexp.f32.i32"):
        assert f'@"{name}"' in text
    # float32 exp is inline arithmetic (vector_math), so no exp function is referenced.
    assert '@"llvm.exp.f32"' not in text and '@"expf"' not in text


def test_fma_rounds_once_for_float32():
    # a * b + c with a*b not representable in float32: a fused result differs from the
    # twice-rounded one in the last bit; the reference rounds once (through float64).
    func = intrinsic_func("float32")
    position = (FLOAT_INTRINSICS + ["abs"]).index("fma")
    a = np.array([1 + 2**-12], np.float32)
    b = np.array([1 + 2**-12], np.float32)
    c = np.array([-1.0], np.float32)
    got = intrinsic_kernels()[func.name](a, b, c)[position]
    exact = np.float64(a[0]) * np.float64(b[0]) + np.float64(c[0])
    assert got[0] == np.float32(exact)
    assert got[0] != np.float32(a[0] * b[0]) + c[0]


INTEGERS = ("bool", "int8", "int16", "int32", "int64", "uint8")
BIT_INTRINSICS = sorted(name for name, spec in INTRINSICS.items() if spec.operands == "integer")


def bit_func(dtype: str) -> PrimFunc:
    """``C_<name>[i] = name(A[i], B[i])`` for every integer intrinsic."""
    a, b = Buffer("A", (N,), dtype), Buffer("B", (N,), dtype)
    stores, outputs = [], []
    for name in BIT_INTRINSICS:
        value = tir.call(name, *(a[I], b[I])[: INTRINSICS[name].arity])
        out = Buffer(f"C_{name}", (N,), value.dtype)
        outputs.append(out)
        stores.append(BufferStore(out, value, (I,)))
    body = For(I, 0, N, "vectorized", tir.seq(*stores))
    return PrimFunc(f"bits_{dtype}", (a, b, *outputs), body, num_outputs=len(outputs))


def _bit_expected(name: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """XLA's semantics, written independently of the interpreter."""
    bits = a.dtype.itemsize * 8
    if a.dtype == np.bool_:
        table = {"bitwise_and": a & b, "bitwise_or": a | b, "bitwise_xor": a ^ b}
        table |= {"bitwise_not": ~a, "popcount": a, "shift_left": a & ~b}
        return table.get(name, a & ~b)  # shift_right: a shifted by 0 or out of range
    wide = [int(v) for v in a], [int(v) for v in b]
    out = []
    for x, y in zip(*wide):
        if name == "bitwise_and":
            r = x & y
        elif name == "bitwise_or":
            r = x | y
        elif name == "bitwise_xor":
            r = x ^ y
        elif name == "bitwise_not":
            r = ~x
        elif name == "popcount":
            r = bin(x % (1 << bits)).count("1")
        elif name == "shift_left":
            r = x << y if 0 <= y < bits else 0
        else:
            r = x >> y if 0 <= y < bits else (-1 if x < 0 else 0)
        out.append(r % (1 << bits))
    return np.array(out, dtype=np.uint64).astype(a.dtype)


@pytest.mark.parametrize("dtype", INTEGERS)
def test_bit_intrinsics_match_xla_semantics(dtype):
    func = bit_func(dtype)
    if dtype == "bool":
        a = np.array([True, True, False, False])
        b = np.array([True, False, True, False])
    else:
        info = np.iinfo(dtypes.to_numpy(dtype))
        bits = info.bits
        values = [info.min, info.max, 0, 1, 5, info.max // 3, info.min // 2 if info.min else 7]
        amounts = [0, 1, bits - 1, bits, bits + 3, -1 if info.min else 255, 2]
        a = np.array([x for x in values for _ in amounts], dtype=dtype)
        b = np.array(amounts * len(values), dtype=dtype)
    got = build(func)(a, b)
    interpreted = reference(func, a, b)
    for position, name in enumerate(BIT_INTRINSICS):
        want = _bit_expected(name, a, b)
        np.testing.assert_array_equal(got[position], want, err_msg=f"{name} {dtype} (llvm)")
        np.testing.assert_array_equal(interpreted[position], want, err_msg=f"{name} {dtype}")


def test_nextafter_steps_in_the_operand_dtype():
    """float16 and bfloat16 step to their own neighbours, not float32's; zero, equal
    operands, infinities and NaN follow C's nextafter."""
    position = (FLOAT_INTRINSICS + ["abs"]).index("nextafter")
    for dtype in FLOATS:
        kind = dtypes.to_numpy(dtype)
        x = np.array([1.0, 1.0, 0.0, -0.0, 0.0, 2.0, np.inf, -np.inf, np.nan, 1.0, -3.0], kind)
        y = np.array([2.0, 0.0, 1.0, -1.0, -0.0, 2.0, 0.0, 0.0, 1.0, np.nan, -np.inf], kind)
        d = np.zeros_like(x)
        got = intrinsic_kernels()[f"intrinsics_{dtype}"](x, y, d)[position]
        want = np.where(x == y, y, np.nextafter(x, y))  # C's y (numpy's float16 gives x)
        assert got.dtype == kind
        np.testing.assert_array_equal(got.view(f"u{kind.itemsize}"), want.view(f"u{kind.itemsize}"))
