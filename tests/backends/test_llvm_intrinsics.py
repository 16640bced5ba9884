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
    for name in ("erff", "log1pf", "expm1f", "llvm.log2.f32", "llvm.tanh.f32"):
        assert f'@"{name}"' in text
    # float32 exp and log are inline arithmetic (vector_math): no such function is referenced.
    assert "exp.f32" not in text and '@"expf"' not in text
    assert '@"llvm.log.f32"' not in text and '@"logf"' not in text


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
