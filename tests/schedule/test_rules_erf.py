"""The vectorised float32 ``erf`` (schedule/rules/erf.py): its documented error bound,
edge values, saturation, and that compiled kernels use it."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import erf as erf64

import relaxjax as relax
import relaxjax.nn as rnn
from relaxjax import arith, tir
from relaxjax.schedule.rules import CpuParams, default_schedule
from relaxjax.tir import te

N = arith.sym("n")
F32 = np.float32


def _erf_kernel():
    x = te.placeholder((N,), "float32", "x")
    y = te.compute((N,), lambda i: tir.erf(x[i]), name="y")
    return te.create_prim_func([x, y], name="erf32")


def _ulps(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Distance in float32 ulps (on the ordered integer line of float32 bit patterns)."""

    def ordered(v):
        bits = v.astype(F32).view(np.int32).astype(np.int64)
        return np.where(bits < 0, -(bits & 0x7FFFFFFF), bits)

    return np.abs(ordered(a) - ordered(b))


@pytest.fixture(scope="module")
def compiled():
    scheduled = default_schedule(_erf_kernel())
    kernel = relax.build(scheduled)

    def run(values):
        values = np.ascontiguousarray(values, F32)
        out = np.empty_like(values)
        kernel(values, out)
        return out

    return scheduled, run


def test_erf_is_replaced_by_vectorised_arithmetic(compiled):
    scheduled, _ = compiled
    text = str(scheduled)
    assert " erf(" not in text and " in vectorized(" in text, text


def test_erf_error_is_at_most_7_ulp_over_a_million_points_and_the_edges(compiled):
    _, run = compiled
    rng = np.random.default_rng(0)
    count = 350_000
    sign = rng.choice([-1.0, 1.0], count)
    values = np.concatenate(
        [
            rng.uniform(-5, 5, count),
            rng.standard_normal(count),
            np.exp(rng.uniform(np.log(1e-39), np.log(7.0), count)) * sign,
            [0.0, 1e-45, -1e-45, 1.2e-38, 3.9, 3.92, 3.99, 4.0, 4.01, 10.0, 1e30, -1e30],
        ]
    ).astype(F32)
    got = run(values)
    expected = erf64(values.astype(np.float64)).astype(F32)
    worst = _ulps(got, expected)
    assert worst.max() <= 7, (values[worst.argmax()], got[worst.argmax()])
    assert np.mean(worst <= 1) > 0.85


def test_erf_edge_values(compiled):
    _, run = compiled
    values = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 4.0, -4.0, -1e5, 1e-40], F32)
    got = run(values)
    assert got[0] == 0 and not np.signbit(got[0]) and got[1] == 0 and np.signbit(got[1])
    assert list(got[2:4]) == [1.0, -1.0] and np.isnan(got[4])
    assert list(got[5:8]) == [1.0, -1.0, -1.0]  # saturated exactly: 1 + erf(x) == 0
    assert got[8] == pytest.approx(2 / np.sqrt(np.pi) * 1e-40, rel=1e-3)


def test_exact_gelu_of_a_large_negative_input_is_minus_zero_as_in_jax():
    gelu = relax.jit(lambda x: rnn.gelu(x, approximate=False))
    got = np.asarray(gelu(np.array([-1e5, -30.0, -6.0, 0.0, 3.0], F32)))
    assert list(got[:3]) == [0.0, 0.0, 0.0] and np.all(np.signbit(got[:3]))
    expected = [0.0, 3 * 0.5 * (1 + erf64(3 / np.sqrt(2)))]
    np.testing.assert_allclose(got[3:], expected, rtol=1e-6)


def test_erf_of_other_dtypes_is_left_to_the_math_library():
    assert CpuParams().fast_erf
    x = te.placeholder((N,), "float64", "x")
    y = te.compute((N,), lambda i: tir.erf(x[i]), name="y")
    assert "erf(x[" in str(default_schedule(te.create_prim_func([x, y], name="erf64")))
