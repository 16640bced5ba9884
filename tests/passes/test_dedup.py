"""dedup_kernels: identical kernels under several names are merged, calls redirected."""

import numpy as np
from pass_fakes import SCALE, ScaleAttrs, module, var

from relaxjax import arith
from relaxjax.ir import CALL_TIR, Call, GlobalVar, Tuple, call_tir, verify
from relaxjax.passes import dedup_kernels, legalize
from relaxjax.runtime import build_executable

n = arith.sym("n")


def duplicated():
    kernel = legalize(
        module([var("x", (n,))], lambda bb, x: bb.call(SCALE, [x], ScaleAttrs(2.0)))
    ).kernels()["fake_scale"]
    kernels = {"first": kernel.with_name("first"), "second": kernel.with_name("second")}
    x = var("x", (n,))

    def body(bb, x):
        a = bb.emit(call_tir(GlobalVar("second"), [x], x.info))
        b = bb.emit(call_tir(GlobalVar("first"), [a], x.info))
        return bb.emit(Tuple([a, b]))

    return module([x], body, kernels=kernels)


def test_duplicates_merge_under_the_first_name():
    mod = duplicated()
    merged = dedup_kernels(mod)
    verify(merged)
    assert list(merged.kernels()) == ["first"]
    callees = [
        b.value.args[0].name
        for block in merged["main"].body.blocks
        for b in block.bindings
        if isinstance(b.value, Call) and b.value.op is CALL_TIR
    ]
    assert callees == ["first", "first"]
    first, second = build_executable(merged)(np.ones(3, np.float32))
    np.testing.assert_array_equal(first, [2, 2, 2])
    np.testing.assert_array_equal(second, [4, 4, 4])


def test_distinct_kernels_are_untouched():
    mod = legalize(module([var("x", (n,))], lambda bb, x: bb.call(SCALE, [x], ScaleAttrs(2.0))))
    assert dedup_kernels(mod) is mod
