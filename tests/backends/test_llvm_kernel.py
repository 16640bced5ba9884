"""``CompiledKernel``: the raw ABI, the checked call, and every error a caller can hit."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

from relaxjax import arith, tir
from relaxjax.backends import build
from relaxjax.backends.llvm import KERNEL_CFUNCTYPE, CompiledKernel
from relaxjax.errors import ShapeError
from relaxjax.tir import Buffer, BufferStore, For, PrimFunc

N, M = arith.syms("n m")
I, J = arith.syms("i j")
S = arith.Sym("s", lower=1, upper=8)


def axpy_func() -> PrimFunc:
    """``Y[i, j] = X[i, j] * s + B[j]`` and ``Z[i] = X[i, 0]`` (two outputs, a scalar)."""
    x, b = Buffer("X", (N, M), "float32"), Buffer("B", (M,), "float32")
    y, z = Buffer("Y", (N, M), "float32"), Buffer("Z", (N,), "float32")
    scaled = x[I, J] * tir.cast(tir.IndexExpr(S), "float32") + b[J]
    body = For(
        I,
        0,
        N,
        "serial",
        tir.seq(
            For(J, 0, M, "serial", BufferStore(y, scaled, (I, J))),
            BufferStore(z, x[I, 0], (I,)),
        ),
    )
    return PrimFunc("axpy", (x, b, y, z), body, num_outputs=2, scalar_params=(S,))


@pytest.fixture(scope="module")
def axpy() -> CompiledKernel:
    return build(axpy_func())


def test_kernel_describes_its_abi(axpy):
    assert axpy.symbol == "relaxjax_axpy"
    assert axpy.symbol_names == ("n", "m", "s")
    assert isinstance(axpy.address, int) and axpy.address != 0
    assert "CompiledKernel axpy" in repr(axpy)


def test_inputs_only_returns_the_outputs(axpy):
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    b = np.ones(4, np.float32)
    y, z = axpy(x, b, s=2)
    np.testing.assert_array_equal(y, x * 2 + 1)
    np.testing.assert_array_equal(z, x[:, 0])


def test_destination_passing_writes_in_place(axpy):
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.zeros(3, np.float32)
    y, z = np.empty((2, 3), np.float32), np.empty(2, np.float32)
    assert axpy(x, b, y, z, s=3) is None
    np.testing.assert_array_equal(y, x * 3)
    np.testing.assert_array_equal(z, [0, 3])


def test_non_contiguous_arrays_are_handled(axpy):
    big = np.arange(40, dtype=np.float32).reshape(5, 8)
    x = big[::2, 1::2]  # (3, 4), strided
    b = np.arange(8, dtype=np.float32)[::2]
    y_storage = np.zeros((3, 8), np.float32)
    y = y_storage[:, ::2]  # a strided output: computed into a copy, copied back
    z = np.zeros(3, np.float32)
    axpy(x, b, y, z, s=1)
    np.testing.assert_array_equal(y, x + b)
    assert np.all(y_storage[:, 1::2] == 0)


def test_raw_call_through_the_abi(axpy):
    x = np.full((2, 2), 2.0, np.float32)
    b = np.array([1.0, -1.0], np.float32)
    y, z = np.empty((2, 2), np.float32), np.empty(2, np.float32)
    pointers = (ctypes.c_void_p * 4)(*(a.ctypes.data for a in (x, b, y, z)))
    symbols = (ctypes.c_int64 * 3)(2, 2, 4)
    assert axpy.raw(pointers, symbols) == 0
    np.testing.assert_array_equal(y, [[9, 7], [9, 7]])
    # the address called through any ctypes prototype of the ABI behaves the same
    again = KERNEL_CFUNCTYPE(axpy.address)
    y[...] = 0
    assert again(ctypes.addressof(pointers), ctypes.addressof(symbols)) == 0
    np.testing.assert_array_equal(y, [[9, 7], [9, 7]])


def test_kernel_without_symbols_accepts_a_null_symbol_array():
    a, c = Buffer("A", (4,), "int8"), Buffer("C", (4,), "int8")
    kernel = build(
        PrimFunc("fixed", (a, c), For(I, 0, 4, "serial", BufferStore(c, a[I] * a[I], (I,))))
    )
    assert kernel.symbol_names == ()
    src, dst = np.array([1, -2, 3, 12], np.int8), np.zeros(4, np.int8)
    pointers = (ctypes.c_void_p * 2)(src.ctypes.data, dst.ctypes.data)
    assert kernel.raw(pointers, None) == 0
    np.testing.assert_array_equal(dst, src * src)


def test_bool_and_zero_dim_buffers():
    a, c = Buffer("A", (), "bool"), Buffer("C", (N,), "bool")
    body = For(I, 0, N, "serial", BufferStore(c, tir.logical_not(a[()]), (I,)))
    kernel = build(PrimFunc("broadcast_not", (a, c), body))
    out = np.ones(3, bool)
    kernel(np.array(True), out)
    np.testing.assert_array_equal(out, [False, False, False])


@pytest.mark.parametrize(
    ("arrays", "scalars", "error", "message"),
    [
        (("x", "b"), {}, TypeError, "kernel axpy: missing scalar argument s"),
        (("x", "b"), {"s": 2, "t": 1}, TypeError, r"unexpected scalar argument\(s\) t"),
        (("x", "b"), {"s": 2.5}, TypeError, "scalar s must be an int, given 2.5"),
        (("x", "b"), {"s": 9}, ShapeError, r"symbol s must lie in \[1, 8\], given 9"),
        (("x",), {"s": 1}, TypeError, r"takes its 2 input\(s\) or all 4 parameter\(s\)"),
        (("x64", "b"), {"s": 1}, TypeError, "buffer X expects dtype float32, given float64"),
        (("list", "b"), {"s": 1}, TypeError, "buffer X expects an array of float32, given list"),
        (
            ("x3d", "b"),
            {"s": 1},
            ShapeError,
            r"buffer X expects 2 dimension\(s\) \(n, m\), given an array of shape \(2, 3, 1\)",
        ),
        (
            ("x", "b5"),
            {"s": 1},
            ShapeError,
            r"buffer B axis 0 expects m = 3, given 5 \(array of shape \(5,\)\)",
        ),
    ],
)
def test_bad_calls_raise_naming_the_problem(axpy, arrays, scalars, error, message):
    values = {
        "x": np.zeros((2, 3), np.float32),
        "x64": np.zeros((2, 3), np.float64),
        "x3d": np.zeros((2, 3, 1), np.float32),
        "list": [[0.0]],
        "b": np.zeros(3, np.float32),
        "b5": np.zeros(5, np.float32),
    }
    with pytest.raises(error, match=message):
        axpy(*(values[name] for name in arrays), **scalars)


def test_wrong_output_shape_and_read_only_output(axpy):
    x, b = np.zeros((2, 3), np.float32), np.zeros(3, np.float32)
    with pytest.raises(ShapeError, match=r"buffer Y axis 0 expects n = 2, given 4"):
        axpy(x, b, np.zeros((4, 3), np.float32), np.zeros(2, np.float32), s=1)
    frozen = np.zeros(2, np.float32)
    frozen.flags.writeable = False
    with pytest.raises(ValueError, match="output buffer Z is read-only"):
        axpy(x, b, np.zeros((2, 3), np.float32), frozen, s=1)


def test_symbol_bound_only_by_an_output_needs_all_parameters():
    a, c = Buffer("A", (4,), "float32"), Buffer("C", (N,), "float32")
    kernel = build(PrimFunc("fill", (a, c), For(I, 0, N, "serial", BufferStore(c, a[0], (I,)))))
    with pytest.raises(TypeError, match="symbol n is bound by the shape of output C"):
        kernel(np.ones(4, np.float32))
    out = np.zeros(6, np.float32)
    kernel(np.full(4, 2.0, np.float32), out)
    np.testing.assert_array_equal(out, 2.0)
