"""The argument code solves symbols from sizes (runtime/solve.py), straight-line.

Hand-built modules: the plan (which size solves which symbol, in which order), the
generated code it becomes, the executable of a function whose symbols no argument
determines, and match_cast dims that solve new symbols.
"""

import re

import numpy as np
import pytest
import rt_build as rb

from relaxjax import arith
from relaxjax.errors import ShapeError
from relaxjax.ir import MatchCast, PrimInfo, TensorInfo, Var
from relaxjax.runtime import build_executable
from relaxjax.runtime.solve import plan_solutions, size_facts

n, m, k = arith.syms("n m k")
COPY = rb.elementwise("copy", 1, lambda a: a)


def _copy_of(param: int = 0, out: TensorInfo | None = None):
    def body(bb, *params):
        x = params[param]
        return rb.call(bb, "copy", [x], out or x.info)

    return body


def test_the_plan_solves_in_order_and_leaves_the_rest_as_checks():
    x = Var("x", rb.tensor((n * m, 2 * n + 1)))
    y = Var("y", rb.tensor((m + 1, k // 2)))
    plan = plan_solutions(size_facts([x, y]))
    assert [(s.symbol.name, s.fact.where, s.coeff, s.rest) for s in plan.solutions] == [
        ("n", "argument 'x' axis 1", 2, 1),
        ("m", "argument 'y' axis 0", 1, 1),
    ]
    assert [f.where for f in plan.checks] == ["argument 'x' axis 0", "argument 'y' axis 1"]
    assert plan.undetermined == (k,)


def test_generated_code_solves_then_checks():
    x = Var("x", rb.tensor((2 * n + 1, n * m)))
    exe = build_executable(
        rb.module([x], _copy_of(), {"copy": rb.elementwise("copy", 1, lambda a: a, ndim=2)})
    )
    body = re.sub(r"(_[a-z]+)_\d+", r"\1", exe.source)
    assert "s0 = (d0_0 - 1) // 2\n    if s0 * 2 != d0_0 - 1 or s0 < 0:" in body
    coeff = re.search(r"(c\d+) = s0\n    if c\d+ == 0:\n        raise _undetermined", body)
    assert coeff is not None, body
    c = coeff.group(1)
    assert f"s1 = d0_1 // {c}\n    if s1 * {c} != d0_1 or s1 < 0:" in body
    (out,) = exe(np.ones((7, 6), np.float32))
    assert out.shape == (7, 6)
    with pytest.raises(ShapeError) as info:
        exe(np.ones((7, 5), np.float32))
    assert info.value.message == (
        "argument 'x' axis 1: expected m * n, got 5, which is not m * n for any integer m >= 0 "
        "given n = 3 (n bound by argument 'x' axis 0 (n * 2 + 1))"
    )


def test_a_lower_bound_the_size_implies_is_not_checked():
    x = Var("x", rb.tensor((2 * n,)))
    y = Var("y", rb.tensor((n + 3,)))
    exe = build_executable(rb.module([x, y], _copy_of(), {"copy": COPY}))
    assert "s0 < 0" not in exe.source  # n * 2 >= 0 holds for every size
    exe2 = build_executable(rb.module([y], _copy_of(), {"copy": COPY}))
    assert "s0 < 0" in exe2.source  # n + 3 = 2 would make n negative
    with pytest.raises(ShapeError) as info:
        exe2(np.ones(2, np.float32))
    assert info.value.message == (
        "argument 'y' axis 0: expected n + 3, got 2, which is not n + 3 for any integer n >= 0"
    )


def test_unbounded_and_negative_coefficients():
    q = arith.sym("q", lower=None, upper=5)
    x = Var("x", rb.tensor((10 - q,)))
    exe = build_executable(rb.module([x], _copy_of(), {"copy": COPY}))
    assert exe(np.ones(13, np.float32))[0].shape == (13,)  # q = -3
    with pytest.raises(ShapeError) as info:
        exe(np.ones(4, np.float32))
    assert info.value.message == (
        "argument 'x' axis 0: expected -q + 10, got 4, which is not -q + 10 for any integer q <= 5"
    )


def test_a_scalar_parameter_with_an_expression_value_is_solved():
    s = Var("s", PrimInfo("int64", value=n * 3 - 1))
    x = Var("x", rb.tensor((2 * n,)))
    exe = build_executable(rb.module([s, x], _copy_of(1), {"copy": COPY}))
    assert exe(np.int32(5), np.ones(4, np.float32))[0].shape == (4,)
    with pytest.raises(ShapeError) as info:
        exe(4, np.ones(4, np.float32))
    assert info.value.message == (
        "argument 's': expected n * 3 - 1, got 4, which is not n * 3 - 1 for any integer n >= 0"
    )
    with pytest.raises(ShapeError) as info:
        exe(8, np.ones(4, np.float32))
    assert info.value.message == (
        "argument 'x' axis 0: expected n * 2 = 6 (n = 3 bound by argument 's' (n * 3 - 1)), got 4"
    )


def test_an_executable_no_arguments_can_run_raises_on_every_call():
    x = Var("x", rb.tensor((n * m,)))
    exe = build_executable(rb.module([x], _copy_of(), {"copy": COPY}))
    assert exe.compiled == {}  # nothing was compiled for it
    assert exe.source.startswith("# every call raises:")
    for _ in range(2):
        with pytest.raises(ShapeError) as info:
            exe(np.ones(6, np.float32))
        assert info.value.message.startswith(
            "function main: no argument determines the symbols m, n (used only in "
            "argument 'x' axis 0: m * n)"
        )


def test_match_cast_dims_solve_new_symbols():
    x = Var("x", rb.tensor((n,)))

    def body(bb, x):
        cast = bb.emit_match_cast(x, rb.tensor((3 * k + 1,)))
        return rb.call(bb, "copy", [cast], rb.tensor((3 * k + 1,)))

    mod = rb.module([x], body, {"copy": COPY})
    assert isinstance(mod["main"].body.blocks[0].bindings[0], MatchCast)
    exe = build_executable(mod)
    assert exe(np.ones(7, np.float32))[0].shape == (7,)
    with pytest.raises(ShapeError) as info:
        exe(np.ones(6, np.float32))
    assert info.value.message == (
        "match_cast axis 0: expected k * 3 + 1, got 6, which is not k * 3 + 1 "
        "for any integer k >= 0"
    )
