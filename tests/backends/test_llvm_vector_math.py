"""Code-quality features of the CPU backend: inline vectorisable float32 ``exp`` and ``log``,
floating-point contraction (``contract``), and 512-bit vectors on AVX-512 hosts."""

from __future__ import annotations

import functools
from dataclasses import replace

import numpy as np
import pytest

from relaxjax import arith, dtypes, tir
from relaxjax.backends import build
from relaxjax.backends.llvm import inspect
from relaxjax.backends.llvm.target import function_attributes, host_target
from relaxjax.tir import Buffer, BufferStore, For, PrimFunc
from relaxjax.tir.interpreter import run as reference

N = arith.sym("n")
I = arith.sym("i")
HOST_HAS_AVX512 = host_target().vector_bits == 512
HOST_HAS_FMA = "+fma" in host_target().features.split(",")


def unary_func(name: str, dtype: str = "float32") -> PrimFunc:
    a, c = Buffer("A", (N,), dtype), Buffer("C", (N,), dtype)
    store = BufferStore(c, tir.call(name, a[I]), (I,))
    return PrimFunc(f"{name}_{dtype}", (a, c), For(I, 0, N, "vectorized", store))


def mul_add_func(dtype: str) -> PrimFunc:
    """``D[i] = A[i] * B[i] + C[i]`` (a multiply-add left to contraction)."""
    a, b, c, d = (Buffer(name, (N,), dtype) for name in "ABCD")
    store = BufferStore(d, a[I] * b[I] + c[I], (I,))
    return PrimFunc(f"mul_add_{dtype}", (a, b, c, d), For(I, 0, N, "vectorized", store))


@functools.cache
def exp_kernel():
    return build(unary_func("exp"))


def ulp_distance(got: np.ndarray, expected: np.ndarray) -> np.ndarray:
    """Number of float32 values between ``got`` and ``expected`` (both finite or equal)."""

    def ordered(values: np.ndarray) -> np.ndarray:
        bits = values.astype(np.float32).view(np.int32).astype(np.int64)
        return np.where(bits < 0, -(bits & 0x7FFFFFFF), bits)

    return np.abs(ordered(got) - ordered(expected))


def exp_reference(x: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        return np.exp(x.astype(np.float64)).astype(np.float32)


def exp_inputs() -> np.ndarray:
    rng = np.random.default_rng(0)
    edges = np.array(
        [
            0.0,
            -0.0,
            1e-45,
            -1e-45,
            1e-30,
            88.72283,
            88.72284,
            88.7228,
            88.5,
            89.0,
            89.5,
            -87.33654,
            -103.27893,
            -103.97208,
            -103.9721,
            -104.0,
            -110.0,
            np.finfo(np.float32).max,
            -np.finfo(np.float32).max,
            np.log(2.0) / 2,
            -np.log(2.0) / 2,
        ],
        np.float32,
    )
    return np.concatenate(
        [
            edges,
            rng.uniform(-110, 95, 2_000_000).astype(np.float32),
            rng.uniform(-1, 1, 1_000_000).astype(np.float32),
            rng.uniform(-104, -87, 500_000).astype(np.float32),  # subnormal results
            rng.uniform(87, 88.8, 500_000).astype(np.float32),  # near overflow
            # every 4096th float32 bit pattern: all exponents, both signs, NaNs
            np.arange(0, 2**32, 4096, dtype=np.uint64).astype(np.uint32).view(np.float32),
        ]
    )


def test_exp_float32_is_within_one_ulp_of_the_correctly_rounded_value():
    x = exp_inputs()
    got = exp_kernel()(x)
    expected = exp_reference(x)
    nan = np.isnan(expected)
    np.testing.assert_array_equal(np.isnan(got), nan)
    special = ~np.isfinite(expected) | (expected == 0)
    np.testing.assert_array_equal(got[special & ~nan], expected[special & ~nan])
    regular = ~special & ~nan
    distance = ulp_distance(got[regular], expected[regular])
    worst = int(np.argmax(distance))
    at, wrong, right = x[regular][worst], got[regular][worst], expected[regular][worst]
    assert distance.max() <= 1, f"exp({at!r}) = {wrong!r}, expected {right!r}"


def test_exp_special_values():
    x = np.array([np.inf, -np.inf, np.nan, -np.nan, 0.0, -0.0, 100.0, -200.0], np.float32)
    got = exp_kernel()(x)
    np.testing.assert_array_equal(got[:2], [np.inf, 0.0])
    assert np.isnan(got[2]) and np.isnan(got[3])
    np.testing.assert_array_equal(got[4:], [1.0, 1.0, np.inf, 0.0])


def test_exp_agrees_with_numpy_float32_and_for_narrow_floats():
    rng = np.random.default_rng(1)
    x = rng.uniform(-20, 20, 4096).astype(np.float32)
    np.testing.assert_allclose(exp_kernel()(x), np.exp(x), rtol=3e-7)
    sigmoid = build(unary_func("sigmoid"))(x)
    np.testing.assert_allclose(sigmoid, 1 / (1 + np.exp(-x.astype(np.float64))), rtol=1e-6)
    half = x.astype(np.float16)
    with np.errstate(over="ignore"):
        expected = np.exp(half)
    np.testing.assert_array_equal(build(unary_func("exp", "float16"))(half), expected)


def test_exp_float32_vectorises_without_calling_libm():
    optimized = inspect.source(unary_func("exp"), "optimized")
    assert "expf" not in optimized and "llvm.exp.f32" not in optimized
    assert "x float>" in optimized
    assert "llvm.exp.f64" in inspect.source(unary_func("exp", "float64"), "ir")


def test_exp_under_fast_math_is_still_accurate():
    x = exp_inputs()[:100_000]
    got = build(unary_func("exp"), fast_math=True)(x)
    expected = exp_reference(x)
    finite = np.isfinite(expected) & (expected != 0)
    assert ulp_distance(got[finite], expected[finite]).max() <= 2


@functools.cache
def log_kernel():
    return build(unary_func("log"))


def test_log_float32_is_within_one_ulp_over_the_whole_positive_range():
    """Against float64 log rounded to float32: 2 million points from the subnormals to
    the largest float32, and around 1 (where log is small)."""
    rng = np.random.default_rng(3)
    x = np.concatenate(
        [
            np.exp(rng.uniform(-103, 88.7, 1_000_000)),
            rng.uniform(0.5, 2.0, 900_000),
            rng.uniform(0.0, 1.2e-38, 100_000),
            [1.0, np.nextafter(1.0, 2.0), np.nextafter(1.0, 0.0), 1e-45, 3.4028235e38],
        ]
    ).astype(np.float32)
    x = x[x > 0]
    got = log_kernel()(x)
    expected = np.log(x.astype(np.float64)).astype(np.float32)
    distance = ulp_distance(got, expected)
    worst = int(np.argmax(distance))
    bound = 1 if HOST_HAS_FMA else 2  # one more rounding per step without FMA
    assert distance.max() <= bound, (
        f"log({x[worst]!r}) = {got[worst]!r}, expected {expected[worst]!r}"
    )


def test_log_special_values():
    x = np.array([0.0, -0.0, -1.0, -np.inf, np.inf, np.nan, 1.0], np.float32)
    got = log_kernel()(x)
    np.testing.assert_array_equal(got[:2], [-np.inf, -np.inf])
    assert np.isnan(got[2]) and np.isnan(got[3]) and np.isnan(got[5])
    assert got[4] == np.inf and got[6] == 0.0


def test_log_float32_vectorises_without_calling_libm():
    optimized = inspect.source(unary_func("log"), "optimized")
    assert "logf" not in optimized and "llvm.log.f32" not in optimized
    assert "x float>" in optimized
    assert "llvm.log.f64" in inspect.source(unary_func("log", "float64"), "ir")


def fused_operands() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Operands where ``a*b`` is not a float32, so fused and unfused results differ."""
    rng = np.random.default_rng(2)
    a = (1 + rng.integers(1, 2**11, 64) * 2.0**-12).astype(np.float32)
    b = (1 + rng.integers(1, 2**11, 64) * 2.0**-12).astype(np.float32)
    c = -np.float32(1.0) * a.astype(np.float32)
    return a, b, c


@pytest.mark.skipif(not HOST_HAS_FMA, reason="contraction needs a host with FMA")
def test_contract_fuses_float32_mul_add_and_rounds_once():
    a, b, c = fused_operands()
    got = build(mul_add_func("float32"))(a, b, c)
    exact = (a.astype(np.float64) * b + c).astype(np.float32)
    twice_rounded = a * b + c
    np.testing.assert_array_equal(got, exact)
    assert np.any(got != twice_rounded)
    assert "vfmadd" in inspect.source(mul_add_func("float32"), "asm")


def test_contract_false_is_bit_identical_to_the_interpreter():
    a, b, c = fused_operands()
    func = mul_add_func("float32")
    got = build(func, contract=False)(a, b, c)
    np.testing.assert_array_equal(got, reference(func, a, b, c))
    np.testing.assert_array_equal(got, a * b + c)
    assert "vfmadd" not in inspect.source(func, "asm", contract=False)
    assert "contract" not in inspect.source(func, "ir", contract=False)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_narrow_floats_are_never_contracted(dtype):
    func = mul_add_func(dtype)
    a, b, c = (x.astype(dtypes.to_numpy(dtype)) for x in fused_operands())
    np.testing.assert_array_equal(build(func)(a, b, c), reference(func, a, b, c))
    assert "contract" not in inspect.source(func, "ir")


def test_float64_contraction_stays_within_an_ulp_of_the_product():
    rng = np.random.default_rng(3)
    a, b, c = (rng.standard_normal(1000) for _ in range(3))
    got = build(mul_add_func("float64"))(a, b, c)
    bound = np.spacing(np.abs(a * b)) + np.spacing(np.abs(a * b + c))
    assert np.all(np.abs(got - (a * b + c)) <= bound)


def test_avx512_hosts_get_512_bit_vectors():
    attributes = function_attributes(host_target())
    assert bool(attributes) == HOST_HAS_AVX512
    portable = replace(host_target(), cpu="x86-64-v3", features="+avx,+avx2,+fma")
    assert function_attributes(portable) == ()
    text = inspect.source(mul_add_func("float32"), "ir")
    for attribute in attributes:
        assert attribute in text
    assert '"prefer-vector-width"' not in inspect.source(mul_add_func("float32"), "ir", portable)
    if HOST_HAS_AVX512:
        assert "zmm" in inspect.source(mul_add_func("float32"), "asm")
        assert "zmm" in inspect.source(unary_func("exp"), "asm")


def test_serial_loops_around_a_vectorized_loop_are_kept_from_the_vectoriser():
    # acc[j] += A[k, j] over k: with fast-math LLVM could vectorise k (a reduction) after
    # unrolling j; the schedule chose j, so k carries vectorize.enable = false.
    k, j = arith.sym("k"), arith.sym("j")
    a, c = Buffer("A", (N, 4), "float32"), Buffer("C", (4,), "float32")
    inner = For(j, 0, 4, "vectorized", BufferStore(c, c[j] + a[k, j], (j,)))
    func = PrimFunc("column_sums", (a, c), For(k, 0, N, "serial", inner))
    text = inspect.source(func, "ir", fast_math=True)
    assert text.count('!"llvm.loop.vectorize.enable", i1 0 }') == 1
    assert text.count('!"llvm.loop.vectorize.enable", i1 1 }') == 1
    plain = PrimFunc("plain", (a, c), For(k, 0, N, "serial", BufferStore(c, a[k, 0], (0,))))
    assert "llvm.loop" not in inspect.source(plain, "ir")
    values = np.random.default_rng(4).standard_normal((50, 4)).astype(np.float32)
    out = np.zeros(4, np.float32)
    build(func, fast_math=True)(values, out)
    np.testing.assert_allclose(out, values.sum(axis=0), rtol=1e-5)
