"""The executable on hand-built legalised modules: numerics, shapes, memory, errors."""

import threading

import ml_dtypes
import numpy as np
import pytest
import rt_build as rb
from hypothesis import given
from hypothesis import strategies as st

from relaxjax import arith, ops, tir
from relaxjax.errors import LoweringError, ShapeError
from relaxjax.ir import (
    CALL_TIR,
    Call,
    Check,
    Constant,
    GlobalVar,
    PrimInfo,
    PrimValue,
    Tuple,
    TupleGetItem,
    TupleInfo,
    Var,
    verify,
)
from relaxjax.passes import LegalizedAttrs
from relaxjax.runtime import build_executable
from relaxjax.runtime import program as program_module

n, m, k = arith.syms("n m k")
F32 = "float32"


def add_chain(depth: int):
    """x + y, then + y again ``depth - 1`` times: every intermediate is a temporary."""
    kernel = rb.elementwise("add", 2, lambda a, b: a + b, ndim=2)
    x, y = Var("x", rb.tensor((n, 4))), Var("y", rb.tensor((n, 4)))

    def body(bb, x, y):
        value = x
        for _ in range(depth):
            value = rb.call(bb, "add", [value, y], rb.tensor((n, 4)))
        return value

    return rb.module([x, y], body, {"add": kernel})


@pytest.fixture(scope="module")
def chain_exe():
    mod = add_chain(5)
    verify(mod)
    return build_executable(mod)


@given(st.integers(0, 40), st.integers(0, 2**31))
def test_chain_matches_numpy_for_every_n(chain_exe, rows, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((rows, 4)).astype(np.float32)
    y = rng.standard_normal((rows, 4)).astype(np.float32)
    (out,) = chain_exe(x, y)
    expected = x.copy()
    for _ in range(5):
        expected = expected + y
    assert out.shape == (rows, 4) and out.dtype == np.float32
    np.testing.assert_allclose(out, expected, rtol=1e-6, atol=1e-6)


def test_temporaries_share_arena_slots(chain_exe):
    # 4 temporaries in a chain need only 2 slots: t0 -> t1 -> t2 (reuses t0's slot) ...
    source = chain_exe.source
    assert source.count("= base + ") == 4
    offsets = {line.split("= base + ")[1] for line in source.splitlines() if "= base + " in line}
    assert len(offsets) == 2


def test_outputs_are_fresh_arrays(chain_exe):
    x = np.ones((3, 4), np.float32)
    (a,) = chain_exe(x, x)
    (b,) = chain_exe(x, x)
    assert a is not b and not np.shares_memory(a, b)
    assert isinstance(a, np.ndarray) and a.flags.c_contiguous and a.flags.writeable
    assert a.ctypes.data % 64 == 0 and not np.shares_memory(a, x)  # aligned for DLPack


# -- argument errors: each raised before any kernel runs, with its message -------------


@pytest.fixture(scope="module")
def pair_exe():
    kernel = rb.elementwise("add", 2, lambda a, b: a + b, ndim=2)
    x, y = Var("x", rb.tensor((n, 4))), Var("y", rb.tensor((n, 4)))
    mod = rb.module(
        [x, y], lambda bb, x, y: rb.call(bb, "add", [x, y], rb.tensor((n, 4))), {"add": kernel}
    )
    return build_executable(mod)


def test_error_symbol_relation(pair_exe):
    x, y = np.ones((3, 4), np.float32), np.ones((5, 4), np.float32)
    with pytest.raises(ShapeError) as err:
        pair_exe(x, y)
    assert str(err.value) == (
        "argument 'y' axis 0: expected n = 3 (bound by argument 'x' axis 0), got 5"
    )
    assert isinstance(err.value, ValueError)


def test_error_static_dim(pair_exe):
    with pytest.raises(ShapeError, match=r"^argument 'x' axis 1: expected 4, got 5$"):
        pair_exe(np.ones((3, 5), np.float32), np.ones((3, 4), np.float32))


def test_error_rank(pair_exe):
    with pytest.raises(ShapeError) as err:
        pair_exe(np.ones((3, 4), np.float32), np.ones((3, 4, 1), np.float32))
    assert str(err.value) == (
        "argument 'y': expected rank 2 (shape (n, 4)), got rank 3 (shape (3, 4, 1))"
    )


def test_error_dtype(pair_exe):
    with pytest.raises(TypeError, match=r"^argument 'x': expected dtype float32, got float64$"):
        pair_exe(np.ones((3, 4)), np.ones((3, 4), np.float32))


@pytest.mark.parametrize(
    "bad, shown",
    [
        ([[1.0] * 4], "list [[1.0, 1.0, 1.0, 1.0]]"),
        ("abc", "str 'abc'"),
        (None, "None"),
        ({"a": 1}, "dict {'a': 1}"),
        (
            list(range(30)),
            "list [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19...",
        ),
    ],
)
def test_error_not_an_array(pair_exe, bad, shown):
    with pytest.raises(TypeError) as err:
        pair_exe(np.ones((1, 4), np.float32), bad)
    assert str(err.value) == (
        f"argument 'y': expected an array of shape (n, 4) and dtype float32, got {shown}"
    )


def test_error_python_float_for_a_tensor_has_wrong_rank(pair_exe):
    with pytest.raises(ShapeError, match="argument 'x': expected rank 2"):
        pair_exe(1.0, np.ones((1, 4), np.float32))


def test_error_composite_dim():
    kernel = rb.elementwise("neg", 1, lambda a: -a, ndim=1)
    x, y = Var("x", rb.tensor((n,))), Var("y", rb.tensor((n * 2 + 1,)))
    mod = rb.module(
        [x, y], lambda bb, x, y: rb.call(bb, "neg", [y], rb.tensor((n * 2 + 1,))), {"neg": kernel}
    )
    exe = build_executable(mod)
    (out,) = exe(np.ones(3, np.float32), np.arange(7, dtype=np.float32))
    np.testing.assert_array_equal(out, -np.arange(7, dtype=np.float32))
    with pytest.raises(ShapeError) as err:
        exe(np.ones(3, np.float32), np.ones(6, np.float32))
    assert str(err.value) == (
        "argument 'y' axis 0: expected n * 2 + 1 = 7 (n = 3 bound by argument 'x' axis 0), got 6"
    )


def test_error_declared_bounds():
    bounded = arith.sym("b", lower=2, upper=8)
    kernel = rb.elementwise("neg", 1, lambda a: -a, ndim=1)
    x = Var("x", rb.tensor((bounded,)))
    mod = rb.module(
        [x], lambda bb, x: rb.call(bb, "neg", [x], rb.tensor((bounded,))), {"neg": kernel}
    )
    exe = build_executable(mod)
    assert exe(np.ones(2, np.float32))[0].shape == (2,)
    for size in (1, 9):
        with pytest.raises(ShapeError) as err:
            exe(np.ones(size, np.float32))
        assert str(err.value) == (
            f"argument 'x' axis 0: b = {size} is outside its declared range 2 <= b <= 8"
        )


def test_errors_come_before_any_kernel_runs():
    """With a bad ``y``, not even the kernel that only reads the good ``x`` is launched."""
    d0 = rb.dims(1)[0]
    a = tir.placeholder((d0,), F32, "A")
    c = tir.compute((d0,), lambda i: a[i] * 2.0, name="C")
    double = tir.create_prim_func([a, c], name="double")
    x, y = Var("x", rb.tensor((n,))), Var("y", rb.tensor((n,)))

    def body(bb, x, y):
        return Tuple(
            [
                rb.call(bb, "double", [x], rb.tensor((n,))),
                rb.call(bb, "double", [y], rb.tensor((n,))),
            ]
        )

    exe = build_executable(rb.module([x, y], body, {"double": double}))
    first, second = exe(np.ones(2, np.float32), np.full(2, 3, np.float32))
    np.testing.assert_array_equal(first, [2, 2])
    np.testing.assert_array_equal(second, [6, 6])
    calls = []
    original = exe.run.__globals__  # the generated function's namespace
    for key, value in list(original.items()):
        if key.startswith("_k_"):
            original[key] = lambda *args, _v=value: calls.append(args) or _v(*args)
    with pytest.raises(ShapeError):
        exe(np.ones(2, np.float32), np.ones(3, np.float32))
    assert calls == []
    exe(np.ones(2, np.float32), np.ones(2, np.float32))
    assert len(calls) == 2


# -- inputs the kernels must never misread ------------------------------------------------


def test_non_contiguous_misaligned_and_byte_swapped_inputs(pair_exe):
    rng = np.random.default_rng(0)
    big = rng.standard_normal((6, 8)).astype(np.float32)
    strided = big[::2, ::2]
    raw = np.zeros(3 * 4 * 4 + 1, np.uint8)[1:]
    misaligned = raw.view(np.float32).reshape(3, 4)
    misaligned[...] = rng.standard_normal((3, 4))
    assert not misaligned.flags.aligned and not strided.flags.c_contiguous
    swapped = misaligned.astype(">f4")
    transposed = np.asfortranarray(misaligned)
    for a in (strided, misaligned, swapped, transposed):
        for b in (strided, misaligned, swapped, transposed):
            (out,) = pair_exe(a, b)
            np.testing.assert_array_equal(out, a.astype(np.float32) + b.astype(np.float32))


def test_read_only_and_foreign_arrays(pair_exe):
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    x.flags.writeable = False
    (out,) = pair_exe(x, x)
    np.testing.assert_array_equal(out, 2 * x)

    class ArrayLike:
        def __array__(self, dtype=None, copy=None):
            return np.ones((2, 4), np.float32)

    (out,) = pair_exe(ArrayLike(), x)
    np.testing.assert_array_equal(out, x + 1)


def test_size_zero_dims(pair_exe):
    (out,) = pair_exe(np.ones((0, 4), np.float32), np.ones((0, 4), np.float32))
    assert out.shape == (0, 4)


def test_risky_layouts_in_a_subprocess():
    """Zero-size, misaligned, strided and huge-stride inputs: a crash fails this test."""
    result = rb.run_isolated(
        """
        import sys
        sys.path.insert(0, "tests/runtime")
        import numpy as np, rt_build as rb
        from relaxjax import arith
        from relaxjax.ir import Var
        from relaxjax.runtime import build_executable
        n = arith.sym("n")
        kernel = rb.elementwise("add", 2, lambda a, b: a + b, ndim=2)
        x, y = Var("x", rb.tensor((n, 4))), Var("y", rb.tensor((n, 4)))
        exe = build_executable(rb.module(
            [x, y], lambda bb, x, y: rb.call(bb, "add", [x, y], rb.tensor((n, 4))),
            {"add": kernel}))
        cases = [
            np.zeros((0, 4), np.float32),
            np.zeros(4 * 4 * 1000 + 3, np.uint8)[3:].view(np.float32).reshape(1000, 4),
            np.ones((4000, 8), np.float32)[::4, ::2],
            np.broadcast_to(np.ones(4, np.float32), (1000, 4)),
        ]
        for a in cases:
            (out,) = exe(a, a)
            assert out.shape == a.shape, (out.shape, a.shape)
            np.testing.assert_array_equal(out, a + a)
        print("ok")
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


# -- scalars, dtypes, structures ----------------------------------------------------------


def test_python_scalar_for_a_scalar_param():
    d0 = rb.dims(1)[0]
    xs = tir.placeholder((d0,), F32, "X")
    s = tir.placeholder((), F32, "S")
    ys = tir.compute((d0,), lambda i: xs[i] * s[()], name="Y")
    scale = tir.create_prim_func([xs, s, ys], name="scale")
    x, c = Var("x", rb.tensor((n,))), Var("c", PrimInfo(F32))
    exe = build_executable(
        rb.module(
            [x, c], lambda bb, x, c: rb.call(bb, "scale", [x, c], rb.tensor((n,))), {"scale": scale}
        )
    )
    x_np = np.arange(3, dtype=np.float32)
    for scalar in (2.5, 2, np.float32(2.5), np.array(2.5, np.float32)):
        (out,) = exe(x_np, scalar)
        np.testing.assert_array_equal(out, x_np * np.float32(scalar))
    with pytest.raises(TypeError, match="argument 'c': expected a scalar of dtype float32, got"):
        exe(x_np, np.ones(2, np.float32))
    with pytest.raises(TypeError, match="argument 'c': expected dtype float32, got float64"):
        exe(x_np, np.float64(1.0))


def test_scalar_param_binds_a_symbol():
    d0 = rb.dims(1)[0]
    iota = tir.create_prim_func(
        [tir.compute((d0,), lambda i: tir.Cast("int64", i), name="I")], name="iota"
    )
    count = Var("count", PrimInfo("int64", k))
    exe = build_executable(
        rb.module(
            [count], lambda bb, c: rb.call(bb, "iota", [], rb.tensor((k,), "int64")), {"iota": iota}
        )
    )
    for size in (0, 1, 5):
        (out,) = exe(size)
        np.testing.assert_array_equal(out, np.arange(size))
    with pytest.raises(ShapeError, match=r"argument 'count': k = -1 is outside its declared"):
        exe(-1)
    with pytest.raises(TypeError, match="argument 'count'"):
        exe(1.5)


def test_bfloat16_outputs_are_ml_dtypes_arrays():
    kernel = rb.elementwise("add", 2, lambda a, b: a + b, ndim=1, dtype="bfloat16")
    x = Var("x", rb.tensor((n,), "bfloat16"))
    exe = build_executable(
        rb.module(
            [x],
            lambda bb, x: rb.call(bb, "add", [x, x], rb.tensor((n,), "bfloat16")),
            {"add": kernel},
        )
    )
    data = np.array([1.5, -2.0, 3.25], ml_dtypes.bfloat16)
    (out,) = exe(data)
    assert out.dtype == np.dtype(ml_dtypes.bfloat16)
    np.testing.assert_array_equal(out.astype(np.float32), [3.0, -4.0, 6.5])


def test_tuple_outputs_constants_and_returned_params():
    d0 = rb.dims(1)[0]
    a = tir.placeholder((d0,), F32, "A")
    lo = tir.compute((d0,), lambda i: a[i] - 1.0, name="Lo")
    hi = tir.compute((d0,), lambda i: a[i] + 1.0, name="Hi")
    both = tir.create_prim_func([a, lo, hi], name="both")
    add = rb.elementwise("add", 2, lambda p, q: p + q, ndim=1)
    x = Var("x", rb.tensor((3,)))
    const = Constant(np.array([10, 20, 30], np.float32))

    def body(bb, x):
        pair = rb.call(bb, "both", [x], TupleInfo([rb.tensor((3,)), rb.tensor((3,))]))
        high = bb.emit(TupleGetItem(pair, 1))
        shifted = rb.call(bb, "add", [high, const], rb.tensor((3,)))
        return Tuple([shifted, bb.emit(TupleGetItem(pair, 0)), x, const])

    exe = build_executable(rb.module([x], body, {"both": both, "add": add}))
    data = np.array([1, 2, 3], np.float32)
    shifted, low, same, constant = exe(data)
    np.testing.assert_array_equal(shifted, [12, 23, 34])
    np.testing.assert_array_equal(low, [0, 1, 2])
    np.testing.assert_array_equal(same, data)
    assert same is not data  # a returned argument is a copy, as in jax
    constant[0] = -1
    np.testing.assert_array_equal(exe(data)[3], [10, 20, 30])


def test_symbolic_prim_value_operand():
    d0 = rb.dims(1)[0]
    xs = tir.placeholder((d0,), F32, "X")
    s = tir.placeholder((), "int64", "S")
    ys = tir.compute((d0,), lambda i: xs[i] * tir.Cast(F32, s[()]), name="Y")
    scale = tir.create_prim_func([xs, s, ys], name="scale")
    x = Var("x", rb.tensor((n,)))
    exe = build_executable(
        rb.module(
            [x],
            lambda bb, x: rb.call(bb, "scale", [x, PrimValue(n * 2, "int64")], rb.tensor((n,))),
            {"scale": scale},
        )
    )
    (out,) = exe(np.ones(4, np.float32))
    np.testing.assert_array_equal(out, np.full(4, 8, np.float32))


# -- run-time shape checks, match_cast, coarse shapes ----------------------------------------


def test_recorded_checks_run_before_kernels():
    add = rb.elementwise("add", 2, lambda a, b: a + b, ndim=1)
    x, y = Var("x", rb.tensor((n,))), Var("y", rb.tensor((m,)))
    check = Check("eq", (n, m), "add: operand sizes must match")

    def body(bb, x, y):
        value = Call(
            CALL_TIR,
            (GlobalVar("add"), Tuple([x, y])),
            LegalizedAttrs(rb.tensor((n,))),
            rb.tensor((n,)),
            (check,),
        )
        return bb.emit(value)

    exe = build_executable(rb.module([x, y], body, {"add": add}))
    np.testing.assert_array_equal(exe(np.ones(2, np.float32), np.ones(2, np.float32))[0], [2, 2])
    with pytest.raises(ShapeError) as err:
        exe(np.ones(2, np.float32), np.ones(3, np.float32))
    assert str(err.value) == (
        "add: operand sizes must match: requires n == m, got n = 2, m = 3 "
        "(m bound by argument 'y' axis 0; n bound by argument 'x' axis 0)"
    )


def test_match_cast_binds_and_checks():
    add = rb.elementwise("add", 2, lambda a, b: a + b, ndim=1)
    x, y = Var("x", rb.tensor((n,))), Var("y", rb.tensor((m,)))

    def body(bb, x, y):
        same = bb.emit_match_cast(y, rb.tensor((n,)))
        pair = bb.emit_match_cast(x, rb.tensor((k,)))
        return rb.call(bb, "add", [pair, same], rb.tensor((k,)))

    exe = build_executable(rb.module([x, y], body, {"add": add}))
    np.testing.assert_array_equal(exe(np.ones(2, np.float32), np.ones(2, np.float32))[0], [2, 2])
    with pytest.raises(ShapeError) as err:
        exe(np.ones(2, np.float32), np.ones(3, np.float32))
    assert str(err.value) == (
        "match_cast axis 0: expected n = 2 (bound by argument 'x' axis 0), got 3"
    )


def coarse_broadcast_module():
    """``x + y`` for x: (n,), y: (m,): the result's dim is only known at run time."""
    add = ops.get("add")
    infos = [rb.tensor((n,)), rb.tensor((m,))]
    out_info, checks = add.deduce(infos)
    assert out_info.shape is None and out_info.ndim == 1 and checks
    x, y = Var("x", infos[0]), Var("y", infos[1])
    attrs = LegalizedAttrs(out_info, "add", (), tuple(infos))

    def body(bb, x, y):
        return bb.emit(Call(CALL_TIR, (GlobalVar("badd"), Tuple([x, y])), attrs, out_info, checks))

    return rb.module([x, y], body, {"badd": rb.broadcast_add_1d()})


@pytest.mark.parametrize("sizes", [(3, 3), (3, 1), (1, 4), (1, 1), (0, 1), (1, 0), (0, 0)])
def test_coarse_shapes_computed_by_the_op_rule(sizes):
    exe = build_executable(coarse_broadcast_module())
    x = np.arange(sizes[0], dtype=np.float32)
    y = np.arange(sizes[1], dtype=np.float32) * 10
    (out,) = exe(x, y)
    np.testing.assert_array_equal(out, x + y)


def test_coarse_shape_errors_name_the_op():
    exe = build_executable(coarse_broadcast_module())
    with pytest.raises(ShapeError, match=r"^add: cannot broadcast shapes"):
        exe(np.ones(3, np.float32), np.ones(4, np.float32))


def test_coarse_shape_without_op_is_a_lowering_error():
    add = ops.get("add")
    out_info, checks = add.deduce([rb.tensor((n,)), rb.tensor((m,))])
    x, y = Var("x", rb.tensor((n,))), Var("y", rb.tensor((m,)))

    def body(bb, x, y):
        return rb.call(bb, "badd", [x, y], out_info)

    with pytest.raises(LoweringError, match="only known at run time"):
        build_executable(rb.module([x, y], body, {"badd": rb.broadcast_add_1d()}))


# -- concurrency and the pointer fallback -----------------------------------------------------


def test_concurrent_calls_with_different_shapes(chain_exe):
    failures = []

    def work(rows: int) -> None:
        x = np.full((rows, 4), rows, np.float32)
        for _ in range(50):
            (out,) = chain_exe(x, x)
            if out.shape != (rows, 4) or not np.all(out == 6 * rows):
                failures.append(rows)

    threads = [threading.Thread(target=work, args=(r,)) for r in (1, 7, 33, 100)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []


def test_pointer_fallback_when_objects_cannot_be_passed(monkeypatch):
    monkeypatch.setattr(program_module, "object_args_supported", lambda: False)
    exe = build_executable(add_chain(2))
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    np.testing.assert_array_equal(exe(x, x)[0], 3 * x)
    assert "_data_pointer" in exe.source.split("status =")[1]


def test_reference_target_runs_kernels_in_the_interpreter(chain_exe):
    reference = build_executable(add_chain(5), target="reference")
    assert reference.compiled == {} and "_extern_" in reference.source
    x = np.random.default_rng(1).standard_normal((3, 4)).astype(np.float32)
    np.testing.assert_array_equal(reference(x, x)[0], chain_exe(x, x)[0])


def test_unknown_target():
    with pytest.raises(LoweringError, match="supports target\\(s\\) llvm, reference, got 'tpu'"):
        build_executable(add_chain(1), target="tpu")


def test_match_cast_checks_declared_bounds():
    bounded = arith.sym("c", lower=2)
    neg = rb.elementwise("neg", 1, lambda a: -a, ndim=1)
    x = Var("x", rb.tensor((n,)))

    def body(bb, x):
        cast = bb.emit_match_cast(x, rb.tensor((bounded,)))
        return rb.call(bb, "neg", [cast], rb.tensor((bounded,)))

    exe = build_executable(rb.module([x], body, {"neg": neg}))
    np.testing.assert_array_equal(exe(np.ones(2, np.float32))[0], [-1, -1])
    with pytest.raises(ShapeError) as err:
        exe(np.ones(1, np.float32))
    assert str(err.value) == ("match_cast axis 0: c = 1 is outside its declared range 2 <= c")
