"""``x.at[key]`` updates of dead values are compiled in place (``passes.inplace_updates``
with ``Scatter.lower_inplace``): the KV-cache write in a decoding loop updates its carry's
buffer every iteration, a parameter is never modified, a value read afterwards is copied."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import relaxjax as relax
import relaxjax.lax as lax
from relaxjax.ir import CALL_TIR_INPLACE, Call
from relaxjax.passes import default_pipeline
from relaxjax.runtime import build_executable, executable

T = relax.Tensor


def _inplace(mod):
    """The kernels each graph function calls in place."""
    return {
        name: [
            b.value.args[0].name
            for blk in f.body.blocks
            for b in blk.bindings
            if isinstance(b.value, Call) and b.value.op is CALL_TIR_INPLACE
        ]
        for name, f in mod.graph_functions().items()
    }


@pytest.fixture
def launches(monkeypatch):
    """Every kernel the reference target runs: (name, data pointer of its last buffer)."""
    seen = []
    original = executable._interpreted

    def spy(func, *args):
        arrays = [a for a in args if isinstance(a, np.ndarray)]
        seen.append((func.name, arrays[-1].__array_interface__["data"][0]))
        return original(func, *args)

    monkeypatch.setattr(executable, "_interpreted", spy)
    return seen


def decode(cache: T((2, "t", 4), "float32"), kv: T(("s", 2, 4), "float32"), start: T((), "int32")):
    first = cache.at[:, start].set(kv[0])  # the parameter: a copy, once

    def step(j, c):
        return c.at[:, start + j].set(kv[j] * 2.0)  # the carry: in place

    return lax.fori_loop(1, kv.shape[0], step, first)


def _expected(cache, kv, start):
    out = jnp.asarray(cache).at[:, start].set(kv[0])
    for j in range(1, len(kv)):
        out = out.at[:, start + j].set(kv[j] * 2.0)
    return out


def test_the_kv_cache_write_is_in_place_every_iteration(launches):
    mod = default_pipeline(verify=True, library=False)(relax.jit(decode).trace())
    assert _inplace(mod) == {"decode": [], "step": ["scatter_inplace"]}
    exe = build_executable(mod, target="reference")
    cache = np.zeros((2, 6, 4), np.float32)
    kv = np.arange(32, dtype=np.float32).reshape(4, 2, 4)
    (out,) = exe(cache, kv, np.int32(1))
    np.testing.assert_array_equal(out, _expected(cache, kv, 1))
    assert (cache == 0).all()  # the parameter is never modified
    targets = [pointer for name, pointer in launches if name == "scatter_inplace"]
    assert len(targets) == 3 and len(set(targets)) == 1  # one buffer, written every step
    assert [name for name, _ in launches].count("scatter") == 1  # the parameter's copy


def test_compiled_kv_cache_against_jax():
    f = relax.jit(decode)
    for t, s, start in ((6, 4, 1), (9, 2, 7), (5, 1, 0)):
        cache = np.random.default_rng(t).standard_normal((2, t, 4)).astype(np.float32)
        kv = np.random.default_rng(s).standard_normal((s, 2, 4)).astype(np.float32)
        np.testing.assert_array_equal(f(cache, kv, np.int32(start)), _expected(cache, kv, start))
    assert f.cache_size() == 1


def test_a_dead_intermediate_is_updated_in_its_own_buffer(launches):
    @relax.jit
    def f(x: T(("n", 4), "float32"), i: T((3,), "int32")):
        y = x * 2.0
        return y.at[i, 1:].add(1.0)

    exe = build_executable(default_pipeline(library=False)(f.trace()), target="reference")
    x, i = np.ones((5, 4), np.float32), np.array([1, -1, 1], np.int32)
    (out,) = exe(x, i)
    np.testing.assert_array_equal(out, (jnp.asarray(x) * 2).at[i, 1:].add(1.0))
    kernels = dict(launches)  # the value 1.0 is broadcast by a kernel of its own
    produced, updated = kernels["multiply"], kernels["scatter_inplace"]
    assert produced == updated == out.__array_interface__["data"][0]


def test_a_value_read_after_the_update_is_copied():
    @relax.jit
    def f(x: T(("n", 4), "float32"), i: T((3,), "int32")):
        y = x * 2.0
        return y.at[i].set(0.0), y.sum()

    mod = default_pipeline()(f.trace())
    assert _inplace(mod)["f"] == []
    x, i = np.ones((5, 4), np.float32), np.array([0, 2, 2], np.int32)
    updated, total = f(x, i)
    np.testing.assert_array_equal(updated, (jnp.asarray(x) * 2).at[i].set(0.0))
    assert total == 40.0
    assert jax.__version__
