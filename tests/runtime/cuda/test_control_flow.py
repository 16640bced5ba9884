"""Control flow (relaxjax.lax) and calls between jitted functions on the GPU target: the
loop runs on the host, its regions' kernels on the device (here the emulated GPU of
tests/runtime/cuda/emulator.py), with carries, xs rows and ys rows as device arrays."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from cuda_helpers import needs_ptxas

import relaxjax as relax
import relaxjax.lax as lax
import relaxjax.numpy as rnp

pytestmark = needs_ptxas


def _close(ours: object, theirs: object) -> None:
    np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("width", [3, 4])  # rows of 12 bytes are unaligned, of 16 aligned
@pytest.mark.parametrize("reverse", [False, True])
def test_scan_on_the_gpu_matches_jax(emulated, width, reverse):
    def step(numpy):
        def body(carry, x_t):
            carry = numpy.tanh(carry + x_t)
            return carry, carry * 2.0

        return body

    @relax.jit(target="cuda")
    def f(xs: relax.Tensor(("t", width), "float32"), h: relax.Tensor((width,), "float32")):
        return lax.scan(step(rnp), h, xs, reverse=reverse)

    rng = np.random.default_rng(width)
    for t in (0, 1, 5):
        xs = rng.standard_normal((t, width)).astype(np.float32)
        h = rng.standard_normal(width).astype(np.float32)
        carry, ys = f(xs, h)
        theirs = jax.lax.scan(step(jnp), h, xs, reverse=reverse)
        _close(carry, theirs[0])
        _close(ys, theirs[1])
    assert f.cache_size() == 1


def test_fori_while_and_switch_on_the_gpu_match_jax(emulated):
    @relax.jit(target="cuda")
    def f(x: relax.Tensor(("n",), "float32"), k: relax.Tensor((), "int32")):
        a = lax.fori_loop(0, 4, lambda i, v: v * 2.0 + i.astype("float32"), x)
        b = lax.while_loop(lambda v: rnp.sum(v) < 100.0, lambda v: v * 2.0 + 1.0, x)
        c = lax.switch(k, [lambda v: v + 1.0, lambda v: v * 3.0, lambda v: -v], x)
        return a, b, c

    def reference(x, k):
        a = jax.lax.fori_loop(0, 4, lambda i, v: v * 2.0 + i.astype("float32"), x)
        b = jax.lax.while_loop(lambda v: jnp.sum(v) < 100.0, lambda v: v * 2.0 + 1.0, x)
        c = jax.lax.switch(k, [lambda v: v + 1.0, lambda v: v * 3.0, lambda v: -v], x)
        return a, b, c

    rng = np.random.default_rng(1)
    for n, k in ((1, 0), (6, 1), (7, 2), (3, -4), (5, 9)):  # out-of-range indices clamp
        x = rng.random(n).astype(np.float32)
        for ours, theirs in zip(f(x, np.int32(k)), reference(x, np.int32(k))):
            _close(ours, theirs)
    assert f.cache_size() == 1


@relax.jit
def _inner(a: relax.Tensor(("n",), "float32"), s: relax.Tensor((), "float32")):
    return rnp.exp(a) * s + 1.0


def test_calls_between_jitted_functions_on_the_gpu(emulated):
    @relax.jit(target="cuda")
    def outer(a: relax.Tensor(("n",), "float32")):
        return _inner(a, 2.0) * _inner(a[::-1], 0.5)

    text = str(outer.lower())
    assert text.count("def inner(") == 1, text  # one callee, called twice
    for n in (0, 1, 9):
        a = np.linspace(-1, 1, n, dtype=np.float32)
        _close(outer(a), (np.exp(a) * 2 + 1) * (np.exp(a[::-1]) * 0.5 + 1))
    assert outer.cache_size() == 1


def test_profile_of_a_gpu_loop_counts_every_launch(emulated):
    @relax.jit(target="cuda")
    def f(x: relax.Tensor(("n",), "float32")):
        return lax.fori_loop(0, 3, lambda i, v: rnp.tanh(v) * 2.0, x)

    x = np.linspace(-1, 1, 8, dtype=np.float32)
    profile = f.profile(x)
    expected = x
    for _ in range(3):
        expected = np.tanh(expected) * 2.0
    _close(profile.result, expected)
    kernels = [row for row in profile.rows if row.kind == "kernel"]
    assert sum(row.calls for row in kernels) == 3 * len(kernels) >= 3, profile
