"""API.md §6: a scheduled kernel can replace the default one inside a jitted program."""

import numpy as np
import pytest

import relaxjax as relax
import relaxjax.nn as rnn
from relaxjax import schedule


@relax.jit
def mlp(
    x: relax.Tensor(("n", 16), "float32"),
    w1: relax.Tensor((16, 24), "float32"),
    w2: relax.Tensor((24, 16), "float32"),
):
    return rnn.gelu(x @ w1) @ w2


def _scheduled_matmul():
    sch = schedule.Schedule(mlp.lower().kernels()["matmul"])
    i, j, _ = sch.get_loops(sch.get_block("matmul"))
    io, ii = sch.split(i, factors=[None, 8])
    sch.reorder(io, j, ii)
    sch.parallel(io)
    return sch.func


def test_lower_holds_one_kernel_per_op_and_trace_the_ops():
    mod = mlp.lower()
    assert sorted(mod.kernels()) == ["gelu", "matmul", "matmul_1"]
    assert "call_tir" in str(mod)
    assert "matmul(x, w1)" in str(mlp.trace())


@pytest.mark.parametrize("n", [0, 3, 8, 29])
def test_scheduled_kernel_runs_in_the_program(n):
    rng = np.random.default_rng(n)
    w1 = rng.standard_normal((16, 24)).astype("float32")
    w2 = rng.standard_normal((24, 16)).astype("float32")
    x = rng.standard_normal((n, 16)).astype("float32")
    fast = mlp.with_kernels({"matmul": _scheduled_matmul()})
    np.testing.assert_allclose(fast(x, w1, w2), mlp(x, w1, w2), rtol=1e-5, atol=1e-5)


def test_scheduled_program_compiles_once_for_every_n():
    fast = mlp.with_kernels({"matmul": _scheduled_matmul()})
    w1, w2 = np.ones((16, 24), "float32"), np.ones((24, 16), "float32")
    for n in (1, 9, 40):
        fast(np.ones((n, 16), "float32"), w1, w2)
    assert fast.cache_size() == 1


def test_a_kernel_with_another_signature_is_refused():
    gelu = mlp.lower().kernels()["gelu"]
    bad = mlp.with_kernels({"matmul": gelu})
    with pytest.raises(schedule.ScheduleError, match="kernel 'matmul' cannot be replaced"):
        bad(np.ones((2, 16), "float32"), np.ones((16, 24), "float32"), np.ones((24, 16), "float32"))
