"""A loop's memory does not grow with its trip count: each iteration's carries replace the
previous ones (freed, or updated in place), and the body's temporaries live in an arena
taken per call from the buffer pool."""

import tracemalloc

import numpy as np
import pytest

import relaxjax as relax
import relaxjax.lax as lax

N = relax.Tensor(("n",), "float32")
I64 = relax.Tensor((), "int64")


def _fori(x, k):
    return lax.fori_loop(0, k, lambda i, c: (c * 0.5 + x) * 2.0 - x, x)


def _while(x, k):
    return lax.while_loop(lambda s: s[0] < k, lambda s: (s[0] + 1, s[1] * 0.5 + x), (0, x))[1]


def _inplace(x, k):
    def body(i, c):
        return lax.dynamic_update_slice(c, x[:8] + 1.0, (i * 8,))

    return lax.fori_loop(0, k, body, x * 1.0)


def _peak(fn, *args) -> int:
    tracemalloc.start()
    try:
        fn(*args)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("body", [_fori, _while, _inplace])
def test_peak_memory_does_not_grow_with_the_trip_count(body):
    def program(x: N, k: I64):
        return body(x, k)

    f = relax.jit(program)
    x = np.ones(1 << 18, np.float32)  # 1 MiB: pooled
    f(x, np.int64(2))  # compile, warm the pool
    few = _peak(f, x, np.int64(4))
    many = _peak(f, x, np.int64(400))
    assert many < few + (1 << 20), (few, many)
    assert f.cache_size() == 1
