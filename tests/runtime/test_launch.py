"""Native trampolines: buffers as numpy objects or addresses, symbols as int64."""

import ctypes

import numpy as np
import pytest

from relaxjax import arith, tir
from relaxjax.backends import build
from relaxjax.runtime import launch
from relaxjax.runtime.launch import Launcher, data_pointer, object_args_supported, trampoline


@pytest.fixture(scope="module")
def saxpy():
    """C = A * 2 + B over (d0,) float64: one symbol, three buffers."""
    d0 = arith.sym("d0")
    a = tir.placeholder((d0,), "float64", "A")
    b = tir.placeholder((d0,), "float64", "B")
    c = tir.compute((d0,), lambda i: a[i] * 2.0 + b[i], name="C")
    return build(tir.create_prim_func([a, b, c], name="saxpy"))


def test_numpy_data_pointer_is_read_natively():
    assert object_args_supported()
    base = np.arange(10, dtype=np.float64)
    for array in (base, base[3:], np.zeros(0), np.float32(1) * np.ones((2, 2))):
        assert data_pointer(array) == array.ctypes.data


@pytest.mark.parametrize("signature", ["ooo", "pop", "ppp", "oop"])
def test_every_signature_calls_the_kernel(saxpy, signature):
    a, b = np.arange(5.0), np.full(5, 10.0)
    out = np.zeros(5)
    buffers = [a, b, out]
    args = [x if kind == "o" else x.ctypes.data for kind, x in zip(signature, buffers)]
    status = Launcher("saxpy", saxpy.address, signature, 1)(*args, 5)
    assert status == 0
    np.testing.assert_array_equal(out, a * 2 + b)


def test_symbols_limit_the_work(saxpy):
    a, b, out = np.ones(6), np.ones(6), np.full(6, -1.0)
    Launcher("saxpy", saxpy.address, "ooo", 1)(a, b, out, 4)
    np.testing.assert_array_equal(out, [3, 3, 3, 3, -1, -1])


def test_trampolines_are_shared_per_signature():
    assert trampoline("oo", 2) is trampoline("oo", 2)
    assert trampoline("oo", 2) is not trampoline("op", 2)


@pytest.mark.parametrize("signature, count", [("", 0), ("ox", 0), ("o", -1)])
def test_bad_signatures(signature, count):
    with pytest.raises(ValueError, match="signature|num_symbols"):
        trampoline(signature, count)


def test_trampoline_ir_reads_the_data_field():
    text = launch._trampoline_ir("t", "op", 1)
    assert f"getelementptr i8, ptr %a0, i64 {launch._DATA_OFFSET}" in text
    assert "inttoptr i64 %a1 to ptr" in text
    assert "store i64 %s0" in text
    assert launch._DATA_OFFSET == object.__basicsize__ == ctypes.sizeof(ctypes.c_void_p) * 2
