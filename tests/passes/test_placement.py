"""passes.placement: host kernels and library calls between explicit host/device copies."""

from __future__ import annotations

import numpy as np
import pytest

import relaxjax as relax
import relaxjax.numpy as rnp
from relaxjax.ir import verify
from relaxjax.passes.placement import TO_DEVICE, TO_HOST, host_kernel_calls, place_on_host
from relaxjax.runtime import build_executable


@relax.jit
def chain(x: relax.Tensor(("n", 4), "float32"), y: relax.Tensor(("n", 4), "float32")):
    return rnp.tanh(rnp.exp(x) * y)


def test_a_host_kernel_gets_copies_of_its_operands_and_result():
    mod = chain.lower()
    placed = place_on_host(mod, {"multiply"})
    verify(placed)
    assert host_kernel_calls(mod, {"multiply"}) == 1
    text = str(placed)
    assert text.count(TO_HOST) == 3  # two operands + the declaration
    assert text.count(TO_DEVICE) == 2  # the result + the declaration
    lines = [line.strip() for line in text.splitlines() if "=" in line]
    order = [
        i for i, line in enumerate(lines) if "call_tir(multiply" in line or "to_device" in line
    ]
    assert len(order) == 2 and order[0] < order[1]  # the copy back follows the host call


def test_placement_keeps_the_meaning():
    rng = np.random.default_rng(0)
    x, y = (rng.standard_normal((3, 4)).astype(np.float32) for _ in range(2))
    mod = chain.lower()
    (expected,) = build_executable(mod, "reference")(x, y)
    (placed,) = build_executable(place_on_host(mod, {"exp", "tanh"}), "reference")(x, y)
    np.testing.assert_array_equal(placed, expected)


def test_nothing_to_place_returns_the_module():
    mod = chain.lower()
    assert place_on_host(mod, set()) is mod
    assert place_on_host(mod, {"no_such_kernel"}) is mod


@pytest.mark.parametrize("kernels", [{"exp"}, {"exp", "multiply", "tanh"}])
def test_placed_modules_pass_the_pipeline_verifier(kernels):
    verify(place_on_host(chain.lower(), kernels))


def test_placed_modules_print_and_parse_back():
    from relaxjax.ir import parse_module
    from relaxjax.tir import parse_prim_func

    placed = place_on_host(chain.lower(), {"exp"})
    assert parse_module(str(placed), parse_kernel=parse_prim_func) == placed
