"""Kernels and checks shared by the schedule tests.

``assert_equivalent`` runs two kernels on the same random inputs (several symbol
values, including ones not divisible by split factors and 0) with the reference
interpreter; ``assert_replays`` prints a schedule's trace, executes it on a fresh
schedule and compares the results structurally.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from relaxjax import arith, schedule, tir
from relaxjax.tir import te
from relaxjax.tir.interpreter import run

N, M, K = arith.syms("n m K")

# Symbol values used by the equivalence checks: small, odd, zero, not multiples of 4/8/32.
SIZES: tuple[dict[str, int], ...] = (
    {"n": 0, "m": 3, "K": 2},
    {"n": 1, "m": 1, "K": 1},
    {"n": 5, "m": 7, "K": 3},
    {"n": 9, "m": 4, "K": 0},
    {"n": 33, "m": 10, "K": 9},
    {"n": 4, "m": 0, "K": 5},
)


def elementwise(dtype: str = "float32") -> tir.PrimFunc:
    """``B[i, j] = A[i, j] * 2 + 1`` over ``(n, m)``."""
    a = te.placeholder((N, M), dtype, "A")
    b = te.compute((N, M), lambda i, j: a[i, j] * 2.0 + 1.0, name="B")
    return te.create_prim_func([a, b], name="elementwise")


def rowsum() -> tir.PrimFunc:
    """``S[i] = sum_k A[i, k]``."""
    a = te.placeholder((N, M), "float32", "A")
    k = te.reduce_axis(M, "k")
    s = te.compute((N,), lambda i: te.sum(a[i, k], axis=k), name="S")
    return te.create_prim_func([a, s], name="rowsum")


def rowmax() -> tir.PrimFunc:
    """``S[i] = max_k A[i, k]``."""
    a = te.placeholder((N, M), "float32", "A")
    k = te.reduce_axis(M, "k")
    s = te.compute((N,), lambda i: te.max(a[i, k], axis=k), name="S")
    return te.create_prim_func([a, s], name="rowmax")


def matmul() -> tir.PrimFunc:
    """``C[i, j] = sum_k A[i, k] * B[k, j]``."""
    a = te.placeholder((N, K), "float32", "A")
    b = te.placeholder((K, M), "float32", "B")
    k = te.reduce_axis(K, "k")
    c = te.compute((N, M), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), name="C")
    return te.create_prim_func([a, b, c], name="matmul")


def two_stage() -> tir.PrimFunc:
    """``B = A + 1`` (an intermediate) then ``C = B * 2`` over ``(n, m)``."""
    a = te.placeholder((N, M), "float32", "A")
    b = te.compute((N, M), lambda i, j: a[i, j] + 1.0, name="B")
    c = te.compute((N, M), lambda i, j: b[i, j] * 2.0, name="C")
    return te.create_prim_func([a, c], name="two_stage")


def sum_then_scale() -> tir.PrimFunc:
    """``S[i] = sum_k A[i, k]`` (an intermediate) then ``Y[i, j] = A[i, j] / S[i]``."""
    a = te.placeholder((N, M), "float32", "A")
    k = te.reduce_axis(M, "k")
    s = te.compute((N,), lambda i: te.sum(a[i, k], axis=k), name="S")
    y = te.compute((N, M), lambda i, j: a[i, j] / s[i], name="Y")
    return te.create_prim_func([a, y], name="sum_then_scale")


def stencil() -> tir.PrimFunc:
    """``B[i] = A[i] * 3`` (intermediate) then ``C[i] = B[i] + B[i + 1]`` over ``(n,)``."""
    a = te.placeholder((N + 1,), "float32", "A")
    b = te.compute((N + 1,), lambda i: a[i] * 3.0, name="B")
    c = te.compute((N,), lambda i: b[i] + b[i + 1], name="C")
    return te.create_prim_func([a, c], name="stencil")


def softmax() -> tir.PrimFunc:
    """Row softmax in four stages (max, exp, sum, divide)."""
    x = te.placeholder((N, M), "float32", "x")
    k1 = te.reduce_axis(M, "k")
    mx = te.compute((N,), lambda i: te.max(x[i, k1], axis=k1), name="mx")
    e = te.compute((N, M), lambda i, j: tir.exp(x[i, j] - mx[i]), name="e")
    k2 = te.reduce_axis(M, "k")
    s = te.compute((N,), lambda i: te.sum(e[i, k2], axis=k2), name="s")
    y = te.compute((N, M), lambda i, j: e[i, j] / s[i], name="y")
    return te.create_prim_func([x, y], name="softmax")


def random_inputs(func: tir.PrimFunc, env: Mapping[str, int], seed: int = 0) -> list[np.ndarray]:
    """Random arrays for the inputs of ``func`` with its symbols set by ``env``."""
    rng = np.random.default_rng(seed)
    arrays = []
    for param in func.inputs:
        shape = tuple(arith.evaluate(d, env) for d in param.shape)
        if param.dtype.startswith("float"):
            arrays.append(rng.standard_normal(shape).astype(param.dtype))
        else:
            arrays.append(rng.integers(-50, 50, shape).astype(param.dtype))
    return arrays


def outputs_of(func: tir.PrimFunc, arrays: Sequence[np.ndarray], env) -> tuple[np.ndarray, ...]:
    """The interpreter's outputs as a tuple (scalar params taken from ``env``)."""
    num_inputs = len(func.inputs)
    scalars = {
        source.sym.name: env[source.sym.name]
        for source in func.symbol_sources()
        if source.scalar is not None or source.param >= num_inputs
    }
    result = run(func, *arrays, **scalars)
    return result if isinstance(result, tuple) else (result,)


def assert_equivalent(
    before: tir.PrimFunc,
    after: tir.PrimFunc,
    sizes: Sequence[Mapping[str, int]] = SIZES,
    rtol: float = 1e-5,
) -> None:
    """``after`` computes what ``before`` computes, for every symbol values in ``sizes``."""
    names = {s.name for s in before.symbols()}
    for seed, env in enumerate(sizes):
        env = {k: v for k, v in env.items() if k in names}
        arrays = random_inputs(before, env, seed)
        expected = outputs_of(before, arrays, env)
        got = outputs_of(after, arrays, env)
        for want, have in zip(expected, got):
            # NaN in the original's output marks an element it never writes (outputs are
            # NaN-filled; e.g. a sum over an empty axis never runs its init): a schedule
            # may define it (decompose_reduction does).
            have = np.where(np.isnan(want), want, have) if want.dtype.kind == "f" else have
            np.testing.assert_allclose(have, want, rtol=rtol, atol=rtol, err_msg=str(env))


def replay(sch: schedule.Schedule, func: tir.PrimFunc) -> schedule.Schedule:
    """Executes the printed trace of ``sch`` on a fresh schedule of ``func``."""
    fresh = schedule.Schedule(func)
    exec(str(sch.trace), {"sch": fresh})
    return fresh


def assert_replays(sch: schedule.Schedule) -> None:
    """The printed trace replays to the same kernel, and so does ``trace.apply``."""
    assert replay(sch, sch.original).func == sch.func
    assert sch.trace.apply(schedule.Schedule(sch.original)).func == sch.func
    assert tir.parse_prim_func(str(sch.func)) == sch.func
