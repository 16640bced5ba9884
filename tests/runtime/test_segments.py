"""Programs in segments: a size a kernel computes becomes a symbol for what follows.

The programs here are built by hand (no op lowering): a kernel counts the positive
elements of ``x`` into a scalar, ``match_cast`` binds that count as the symbol ``k``,
and later kernels work on ``(k,)`` tensors. The count is only known once its kernel
ran, so the program runs in two segments, each with its own checks, memory and
launches; values of the first segment stay valid in the second.
"""

from __future__ import annotations

import numpy as np
import pytest
import rt_build as rb

from relaxjax import arith, tir
from relaxjax.errors import ShapeError
from relaxjax.ir import BlockBuilder, IRModule, PrimInfo, TensorInfo, Tuple, Var, verify
from relaxjax.runtime import build_executable
from relaxjax.tir import Allocate, Buffer, BufferStore, For, IfThenElse, PrimFunc

n = arith.sym("n")
D0, D1 = arith.syms("d0 d1")
I = arith.sym("i")


def count_positive() -> PrimFunc:
    """``C[()] = sum(X > 0)`` as an int64 scalar, one serial pass."""
    x, c = Buffer("X", (D0,), "float32"), Buffer("C", (), "int64")
    one, zero = tir.const(1, "int64"), tir.const(0, "int64")
    step = BufferStore(c, c[()] + tir.select(x[I] > tir.const(0.0, "float32"), one, zero), ())
    body = tir.seq(BufferStore(c, zero, ()), For(I, 0, D0, "serial", step))
    return PrimFunc("count_positive", (x, c), body)


def keep_positive() -> PrimFunc:
    """``Y`` (of length d1, the count) = the positive elements of ``X`` in order."""
    x, y = Buffer("X", (D0,), "float32"), Buffer("Y", (D1,), "float32")
    pos = Buffer("pos", (1,), "int64", scope="local")
    write = tir.seq(
        BufferStore(y, x[I], (pos[0],)),
        BufferStore(pos, pos[0] + tir.const(1, "int64"), (0,)),
    )
    keep = IfThenElse(tir.logical_and(x[I] > tir.const(0.0, "float32"), pos[0] < D1), write)
    body = Allocate(
        pos, tir.seq(BufferStore(pos, tir.const(0, "int64"), (0,)), For(I, 0, D0, "serial", keep))
    )
    return PrimFunc("keep_positive", (x, y), body)


KERNELS = {
    "count_positive": count_positive(),
    "keep_positive": keep_positive(),
    "double": rb.elementwise("double", 1, lambda a: a * 2.0),
    "add": rb.elementwise("add", 2, lambda a, b: a + b),
}


def positives_module(k: arith.Sym, returned: str = "all") -> IRModule:
    """``t = 2x; k = count(x > 0); y = keep(t); z = 2y; w = t + t`` (t crosses segments)."""
    x = Var("x", TensorInfo((n,), "float32"))
    bb = BlockBuilder(IRModule(KERNELS))
    with bb.function("main", [x]):
        with bb.dataflow():
            t = rb.call(bb, "double", [x], TensorInfo((n,), "float32"))
            count = rb.call(bb, "count_positive", [x], PrimInfo("int64"))
            bound = bb.emit_match_cast(count, PrimInfo("int64", value=k))
            y = rb.call(bb, "keep_positive", [t], TensorInfo((k,), "float32"))
            z = rb.call(bb, "double", [y], TensorInfo((k,), "float32"))
            w = rb.call(bb, "add", [t, t], TensorInfo((n,), "float32"))
            result = {"all": [z, w, bound], "z": [z]}[returned]
            out = bb.emit_output(result[0] if len(result) == 1 else Tuple(result))
        bb.emit_func_output(out)
    return bb.finalize()


@pytest.fixture(scope="module", params=["llvm", "reference"])
def exe(request):
    mod = positives_module(arith.sym("k"))
    verify(mod)
    return build_executable(mod, target=request.param)


@pytest.mark.parametrize(
    "values",
    [
        [1.0, -2.0, 3.0, 0.0, 5.0],
        [-1.0, -2.0],  # nothing kept: k = 0
        [4.0, 2.0, 1.0],  # everything kept: k = n
        [],
    ],
)
def test_values_across_segments(exe, values):
    x = np.array(values, np.float32)
    z, w, count = exe(x)
    kept = 2 * x[x > 0]
    np.testing.assert_array_equal(z, 2 * kept)
    np.testing.assert_array_equal(w, 4 * x)  # t (segment 1) read again in segment 2
    assert count.shape == () and int(count) == len(kept)


def test_one_executable_many_sizes(exe):
    rng = np.random.default_rng(0)
    for size in (0, 1, 7, 100, 1000):
        x = rng.standard_normal(size).astype(np.float32)
        z, w, _ = exe(x)
        np.testing.assert_array_equal(z, 4 * x[x > 0])
        np.testing.assert_array_equal(w, 4 * x)


def test_source_has_two_segments():
    source = build_executable(positives_module(arith.sym("k"))).source
    # the count is read after the first segment's launches, then the second segment's
    # memory is planned with k known
    read = source.index("= int(")
    assert "count_positive" in source[:read] and "keep_positive" in source[read:]
    assert "arena1 = " in source and "arena = " in source[:read]


def test_one_segment_programs_keep_their_code():
    x = Var("x", TensorInfo((n,), "float32"))
    mod = rb.module(
        [x],
        lambda bb, x: rb.call(
            bb, "double", [rb.call(bb, "double", [x], rb.tensor((n,)))], rb.tensor((n,))
        ),
        {"double": KERNELS["double"]},
    )
    source = build_executable(mod).source
    assert "arena1" not in source and "int(" not in source


def test_bounds_of_the_bound_symbol_are_checked():
    exe = build_executable(positives_module(arith.sym("k", lower=1, upper=3)))
    z, _, _ = exe(np.array([1.0, -1.0, 2.0], np.float32))
    np.testing.assert_array_equal(z, [4.0, 8.0])
    with pytest.raises(ShapeError, match=r"k = 0 is outside its declared range 1 <= k <= 3"):
        exe(np.array([-1.0], np.float32))
    with pytest.raises(ShapeError, match=r"k = 4 is outside its declared range 1 <= k <= 3"):
        exe(np.ones(4, np.float32))


def test_temporaries_of_the_first_segment_survive_the_second():
    # t is a temporary of segment 1 read in segment 2: its slot is never reused in
    # segment 1 (w would read garbage), and segment 2's arena is separate
    exe = build_executable(positives_module(arith.sym("k"), returned="z"))
    x = np.array([3.0, -1.0, 2.0, 5.0], np.float32)
    (z,) = exe(x)
    np.testing.assert_array_equal(z, [12.0, 8.0, 20.0])


def test_a_symbolic_bound_is_computed_from_earlier_symbols():
    exe = build_executable(positives_module(arith.sym("k", upper=n // 2)))
    z, _, _ = exe(np.array([1.0, -1.0, -2.0, 3.0], np.float32))
    np.testing.assert_array_equal(z, [4.0, 12.0])
    with pytest.raises(
        ShapeError, match=r"k = 3 is outside its declared range 0 <= k <= n // 2 = 2"
    ):
        exe(np.array([1.0, 2.0, 3.0, -1.0], np.float32))


def test_parameters_with_symbolic_bounds():
    k = arith.sym("k", upper=n)
    x, y = Var("x", TensorInfo((n,), "float32")), Var("y", TensorInfo((k,), "float32"))
    mod = rb.module([x, y], lambda bb, x, y: rb.call(bb, "double", [y], rb.tensor((k,))), KERNELS)
    exe = build_executable(mod)
    (out,) = exe(np.ones(3, np.float32), np.ones(2, np.float32))
    np.testing.assert_array_equal(out, [2.0, 2.0])
    with pytest.raises(
        ShapeError,
        match=r"argument 'y' axis 0: k = 4 is outside its declared range 0 <= k <= n = 3",
    ):
        exe(np.ones(3, np.float32), np.ones(4, np.float32))
