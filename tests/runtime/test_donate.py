"""relax.jit(..., donate_argnames=...): a donated argument is updated in place and handed
back without a copy (a KV cache written at one position per call)."""

from __future__ import annotations

import numpy as np
import pytest

import relaxjax as relax
import relaxjax.lax as lax


def _write(x: relax.Tensor(("b", "n", 8), "float32"), cache: relax.Tensor(("b", "c", 8), "float32"),
           m: relax.sym("m")):  # fmt: skip
    cache = lax.dynamic_update_slice(cache, x, (0, m, 0))
    return cache[:, : m + x.shape[1]].sum(axis=1), cache


def _reference(x, cache, m):
    cache = cache.copy()
    cache[:, m : m + x.shape[1]] = x
    return cache[:, : m + x.shape[1]].sum(axis=1), cache


def test_donated_cache_is_written_in_place_and_returned_without_copy():
    f = relax.jit(_write, donate_argnames="cache")
    lowered = str(f.lower()).split("@prim_func")[0]
    assert '@function(attrs={"donated": (1,)})' in lowered
    assert "call_tir_inplace(mod.dynamic_update_slice_inplace" in lowered
    rng = np.random.default_rng(0)
    cache = np.zeros((2, 16, 8), np.float32)
    expected = cache.copy()
    m = 0
    for n in (3, 1, 1, 5):
        x = rng.standard_normal((2, n, 8)).astype(np.float32)
        want_sum, expected = _reference(x, expected, m)
        got_sum, new = f(x, cache, m)
        assert np.shares_memory(new, cache)  # the same buffer, every step
        np.testing.assert_allclose(got_sum, want_sum, rtol=1e-6)
        np.testing.assert_array_equal(new, expected)
        cache, m = new, m + n
    assert f.cache_size() == 1


def test_without_donation_the_argument_is_left_alone():
    f = relax.jit(_write)
    assert "call_tir_inplace" not in str(f.lower()).split("@prim_func")[0]
    cache = np.zeros((1, 4, 8), np.float32)
    _, new = f(np.ones((1, 2, 8), np.float32), cache, 1)
    assert not np.shares_memory(new, cache) and cache.sum() == 0 and new.sum() == 16


def test_a_read_only_donated_array_is_copied_not_overwritten():
    f = relax.jit(_write, donate_argnames=("cache",))
    cache = np.zeros((1, 4, 8), np.float32)
    cache.flags.writeable = False
    _, new = f(np.ones((1, 2, 8), np.float32), cache, 0)
    assert cache.sum() == 0 and new.sum() == 16


def test_a_caller_trace_owns_its_values():
    inner = relax.jit(_write, donate_argnames="cache")

    @relax.jit
    def outer(x: relax.Tensor((1, 2, 8), "float32"), cache: relax.Tensor((1, 4, 8), "float32")):
        total, new = inner(x, cache, 1)
        return total, new, cache  # the caller still reads its cache: no donation here

    cache = np.zeros((1, 4, 8), np.float32)
    _, new, same = outer(np.ones((1, 2, 8), np.float32), cache)
    assert new.sum() == 16 and same.sum() == 0 and cache.sum() == 0


def test_donating_an_unknown_parameter_is_refused():
    with pytest.raises(ValueError, match=r"donate_argnames names 'kv', which is not a traced "
                       r"parameter of write \(its parameters: x, cache, m\)"):  # fmt: skip
        relax.jit(_write, donate_argnames=("kv",))


def test_a_donated_array_returned_twice_is_copied_once():
    @relax.jit(donate_argnames="a")
    def twice(a: relax.Tensor(("n",), "float32")):
        return a, a

    a = np.arange(3, dtype=np.float32)
    first, second = twice(a)
    assert first is a and not np.shares_memory(second, a)
    np.testing.assert_array_equal(second, np.arange(3))
